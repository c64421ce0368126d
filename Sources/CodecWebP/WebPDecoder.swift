import CWebP
import Foundation
import PipelineCore

/// Decodes WebP with libwebp: lossy (VP8), lossless (VP8L), alpha (ALPH), and the first frame
/// of an animation; output RGBA8 premultiplied, written by libwebp straight into the
/// ``PipelineCore/Bitmap``'s bytes (`MODE_rgbA`, external memory: no intermediate copy).
///
/// Register it with ``PipelineCore/DecoderRegistry/registering(_:)``:
/// `DecoderRegistry().registering(WebPDecoder())`.
///
/// A still picture asked for at a smaller size is scaled by libwebp while it decodes
/// (`use_scaling`), so a lossy thumbnail never holds the full-size bitmap (lossless decoding
/// keeps libwebp's own full-size ARGB buffer regardless). Lossy pictures with alpha, which
/// libwebp would scale with straight (not premultiplied) colour, fringing the edges, are
/// decoded whole and resampled. An animation's first frame
/// is drawn on a transparent canvas of the animation's size (what `WebPAnimDecoder` shows
/// first) and then resampled. ICC profiles and EXIF orientation are not applied.
public struct WebPDecoder: ImageDecoding {
    /// Creates a WebP decoder. It holds no state; one value serves every thread.
    public init() {}

    /// WebP: `RIFF....WEBP`.
    public var signatures: [ImageSignature] { [.riff(form: "WEBP", format: .webp)] }

    /// Reads the RIFF header (`WebPGetFeatures`) and, for an animation, counts its frames with
    /// `WebPDemux`, once. The session decodes to the target exactly when it is smaller (clamped
    /// to the picture's size in each dimension; never upscaled), else at full size. WebP has no
    /// orientation applied.
    public func withSession<R>(for data: Data, _ body: (any ImageDecodingSession) throws -> R) throws -> R {
        try data.withUnsafeBytes { raw in
            let session = try Session(bytes: try WebPInput.bytes(raw))
            return try body(session)
        }
    }

    /// One WebP file, its features read.
    final class Session: ImageDecodingSession {
        private let bytes: UnsafeBufferPointer<UInt8>
        private let features: WebPBitstreamFeatures
        let info: ImageInfo

        init(bytes: UnsafeBufferPointer<UInt8>) throws {
            self.bytes = bytes
            features = try WebPInput.features(bytes)
            info = try WebPInput.info(bytes, features: features)
        }

        func decode(_ options: DecodeOptions) throws -> DecodedImage {
            let bytes = bytes, features = features, info = info
            var output = info.size
            if let target = options.targetSize, target.isValid,
               target.width < info.size.width || target.height < info.size.height {
                output = PixelSize(width: min(target.width, info.size.width), height: min(target.height, info.size.height))
            }
            let bitmap: Bitmap
            if features.has_animation != 0 {
                let canvas = try WebPDecoder.firstFrame(bytes, canvas: info.size)
                bitmap = output == info.size ? canvas : Resampler.resample(canvas, to: output)
            } else if output != info.size, features.has_alpha != 0, features.format != 2 {
                // Lossy with alpha: libwebp scales colour and alpha apart (straight), so colour
                // hidden under transparent pixels bleeds into the edges. Decode whole, resample
                // premultiplied like every other codec.
                var still = Bitmap(zeroed: info.size)
                try WebPInput.decode(bytes, into: &still, at: (0, 0), size: info.size, scaled: false)
                bitmap = Resampler.resample(still, to: output)
            } else {
                var still = Bitmap(zeroed: output)
                try WebPInput.decode(bytes, into: &still, at: (0, 0), size: output, scaled: output != info.size)
                bitmap = still
            }
            return DecodedImage(bitmap: bitmap, info: info)
        }
    }

    /// Frame 1 of an animation on a transparent canvas: over transparent black, both blend
    /// methods give the frame's own pixels, so it is decoded straight into its canvas region.
    static func firstFrame(_ bytes: UnsafeBufferPointer<UInt8>, canvas: PixelSize) throws -> Bitmap {
        let (x, y, frame, fragment) = try WebPInput.Demuxer(bytes).firstFrame()
        guard frame.isValid, x >= 0, y >= 0, x + frame.width <= canvas.width, y + frame.height <= canvas.height else {
            throw ImagePipelineError.corruptData(format: .webp, message: "the first frame (\(frame) at \(x),\(y)) is outside the \(canvas) canvas")
        }
        let features = try WebPInput.features(fragment)
        guard Int(features.width) == frame.width, Int(features.height) == frame.height else {
            throw ImagePipelineError.corruptData(format: .webp, message: "the first frame's bitstream is \(features.width)×\(features.height), its header says \(frame)")
        }
        var bitmap = Bitmap(zeroed: canvas)
        try WebPInput.decode(fragment, into: &bitmap, at: (x, y), size: frame, scaled: false)
        return bitmap
    }
}
