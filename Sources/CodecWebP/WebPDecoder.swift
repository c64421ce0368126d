import CWebP
import ColorManagement
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Decodes WebP with libwebp: lossy (VP8), lossless (VP8L), alpha (ALPH), and the first frame
/// of an animation; output RGBA8 premultiplied (`MODE_rgbA`) or, when
/// `DecodeOptions.pixelFormat` asks for straight alpha at full size, libwebp's
/// straight values exactly (`MODE_RGBA`, what `dwebp -pam` writes), written by libwebp straight
/// into the `Bitmap`'s bytes (external memory: no intermediate copy). A smaller
/// target is always scaled premultiplied and made straight once at the end.
///
/// Register it with `DecoderRegistry.registering(_:)`:
/// `DecoderRegistry().registering(WebPDecoder())`.
///
/// A still picture asked for at a smaller size is scaled by libwebp while it decodes
/// (`use_scaling`), so a lossy thumbnail never holds the full-size bitmap (lossless decoding
/// keeps libwebp's own full-size ARGB buffer regardless). Lossy pictures with alpha, which
/// libwebp would scale with straight (not premultiplied) colour, fringing the edges, are
/// decoded whole and resampled. An animation's first frame is shown on a transparent canvas
/// of the animation's size (what `WebPAnimDecoder` shows first): a frame that covers the canvas
/// is scaled like a still; a smaller one is decoded alone and the canvas rows stream through
/// the resampler, so a thumbnail never holds the canvas (a 64×64 frame on a 9999×9999 canvas
/// costs the frame and one row, not 400 MB). An `ICCP` profile is converted to sRGB (see
/// `ColorManagement`); EXIF orientation is not applied.
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
        private let profile: ColorProfile?
        let info: ImageInfo

        init(bytes: UnsafeBufferPointer<UInt8>) throws {
            self.bytes = bytes
            features = try WebPInput.features(bytes)
            var info = try WebPInput.info(bytes, features: features)
            profile = try WebPInput.iccProfile(bytes).map { try ColorManagement.profile(iccData: $0, limits: .default) }
            info.colorProfile = profile?.info
            self.info = info
        }

        /// By the bitstream: lossless keeps the whole picture as ARGB inside libwebp (4 bytes a
        /// pixel) besides the output; lossy decodes to the output through a few macroblock rows.
        /// Lossy alpha adds a full alpha plane (1 byte a pixel) and, while the losslessly
        /// compressed alpha is decoded, libwebp's ARGB buffer for it (4 more), and needs the
        /// whole picture when it is shrunk (see ``still(_:features:size:output:)``); an
        /// animation's first frame counts as a canvas-size picture.
        /// Plus what building the colour profile's transform takes.
        func estimatedPeakMemory(_ options: DecodeOptions) -> Int {
            ColorProfile.estimate(pixelMemory(options), convertingWith: profile, options: options)
        }

        /// The bitmaps and libwebp's buffers, by how the file is coded.
        private func pixelMemory(_ options: DecodeOptions) -> Int {
            var output = info.size
            if let target = options.targetSize, target.isValid,
               target.width < info.size.width || target.height < info.size.height {
                output = PixelSize(width: min(target.width, info.size.width), height: min(target.height, info.size.height))
            }
            let full = info.size.pixelCount * 4, out = output.pixelCount * 4
            let rows = info.size.width * 128  // macroblock row caches, rescaler rows
            if features.has_animation != 0 { return full + (output == info.size ? 0 : out) + rows }
            if features.format == 2 { return full + out + rows }
            let alpha = features.has_alpha != 0
            let alphaPlanes = alpha ? info.size.pixelCount * 5 : 0
            if alpha, output != info.size { return full + alphaPlanes + out + rows }
            return out + alphaPlanes + rows
        }

        func decode(_ options: DecodeOptions) throws -> DecodedImage {
            let bytes = bytes, features = features, info = info
            var output = info.size
            if let target = options.targetSize, target.isValid,
               target.width < info.size.width || target.height < info.size.height {
                output = PixelSize(width: min(target.width, info.size.width), height: min(target.height, info.size.height))
            }
            let format = options.pixelFormat
            let bitmap = features.has_animation != 0
                ? try WebPDecoder.firstFrame(bytes, canvas: info.size, output: output, format: format,
                                             filter: options.resamplingFilter)
                : try WebPDecoder.still(bytes, features: features, size: info.size, output: output, format: format,
                                        filter: options.resamplingFilter)
            var decoded = DecodedImage(bitmap: consume bitmap, info: info)
            // On the output rows (already scaled by libwebp or resampled for a thumbnail).
            decoded.applyColorProfile(profile, options: options, pictureIsGray: false)
            return decoded
        }
    }

    /// A still bitstream at `output` (≤ `size`): scaled by libwebp while decoding, except lossy
    /// with alpha, which libwebp scales with straight colour (colour hidden under transparent
    /// pixels bleeds into the edges): that is decoded whole and resampled premultiplied, like
    /// every other codec. The result is in `format`: straight at full size is libwebp's
    /// `MODE_RGBA` output itself; a scaled picture is made straight after scaling.
    static func still(_ bytes: UnsafeBufferPointer<UInt8>, features: WebPBitstreamFeatures, size: PixelSize,
                              output: PixelSize, format: PixelFormat, filter: ResamplingFilter = .default) throws -> Bitmap {
        if output != size, features.has_alpha != 0, features.format != 2 {
            var whole = Bitmap(zeroed: size)
            try WebPInput.decode(bytes, into: &whole, at: (0, 0), size: size, scaled: false)
            return Resampler.resample(whole, to: output, filter: filter).converted(to: format)
        }
        var bitmap = Bitmap(zeroed: output, pixelFormat: output == size ? format : .rgba8Premultiplied)
        try WebPInput.decode(bytes, into: &bitmap, at: (0, 0), size: output, scaled: output != size)
        return bitmap.converted(to: format)
    }

    /// Frame 1 of an animation on a transparent canvas, at `output` (≤ `canvas`): over
    /// transparent black, both blend methods give the frame's own pixels.
    ///
    /// The canvas bitmap exists only when it is the output. A frame that covers the canvas is
    /// the picture, decoded like a still (scaled by libwebp while decoding). A smaller frame is
    /// decoded alone and the canvas's rows — transparent but where the frame lies — stream
    /// through a ``PipelineCore/RowResampler``: memory is the frame, one canvas row and the
    /// output (a 64×64 frame on a 9999×9999 canvas no longer costs a 400 MB bitmap), and the
    /// result is exactly the canvas's resampling.
    static func firstFrame(_ bytes: UnsafeBufferPointer<UInt8>, canvas: PixelSize, output: PixelSize,
                           format: PixelFormat, filter: ResamplingFilter = .default) throws -> Bitmap {
        let (x, y, frame, fragment) = try WebPInput.Demuxer(bytes).firstFrame()
        guard frame.isValid, x >= 0, y >= 0, x + frame.width <= canvas.width, y + frame.height <= canvas.height else {
            throw ImagePipelineError.corruptData(format: .webp, message: "the first frame (\(frame) at \(x),\(y)) is outside the \(canvas) canvas")
        }
        let features = try WebPInput.features(fragment)
        guard Int(features.width) == frame.width, Int(features.height) == frame.height else {
            throw ImagePipelineError.corruptData(format: .webp, message: "the first frame's bitstream is \(features.width)×\(features.height), its header says \(frame)")
        }
        if output == canvas {
            var bitmap = Bitmap(zeroed: canvas, pixelFormat: format)
            try WebPInput.decode(fragment, into: &bitmap, at: (x, y), size: frame, scaled: false)
            return bitmap
        }
        if frame == canvas {
            return try still(fragment, features: features, size: frame, output: output, format: format, filter: filter)
        }
        var pixels = Bitmap(zeroed: frame)
        try WebPInput.decode(fragment, into: &pixels, at: (0, 0), size: frame, scaled: false)
        return placed(pixels, at: (x, y), on: canvas, resampledTo: output, filter: filter).converted(to: format)
    }

    /// `frame` at `origin` on a transparent `canvas`, resampled to `output` one canvas row at a time.
    private static func placed(_ frame: Bitmap, at origin: (x: Int, y: Int), on canvas: PixelSize, resampledTo output: PixelSize,
                               filter: ResamplingFilter) -> Bitmap {
        var resampler = RowResampler(sourceSize: canvas, outputSize: output, filter: filter)
        let rowBytes = canvas.width * 4
        let transparent = [UInt8](repeating: 0, count: rowBytes)
        var row = transparent  // zero outside the frame's columns, always
        frame.withUnsafeBytes { source in
            for canvasY in 0..<canvas.height {
                let frameY = canvasY - origin.y
                guard frameY >= 0, frameY < frame.height, resampler.nextRowIsNeeded else {
                    transparent.withUnsafeBufferPointer { resampler.push(row: $0) }
                    continue
                }
                row.withUnsafeMutableBufferPointer { target in
                    guard let to = target.baseAddress, let from = source.baseAddress else { return }
                    (to + origin.x * 4).update(from: from + frameY * frame.bytesPerRow, count: frame.width * 4)
                }
                row.withUnsafeBufferPointer { resampler.push(row: $0) }
            }
        }
        return resampler.finish()
    }
}
