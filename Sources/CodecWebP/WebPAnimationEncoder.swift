import CWebP
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension WebPEncoder: AnimationEncoding {
    /// An animated WebP through libwebp's `WebPAnimEncoder` (libwebpmux), lossy or lossless as
    /// `options` say (the still encoder's settings for every frame), which stores each frame as
    /// the smallest rectangle that changed and blends or replaces it, whichever is smaller
    /// (its frame-difference optimisation, as `gif2webp` does). `options.iccProfile` is
    /// embedded. `loopCount` `nil` plays once.
    /// - Throws: `EncodingError` for options out of range or a side over 16383 pixels.
    public func makeAnimationSession(size: PixelSize, loopCount: Int?, options: EncodeOptions) throws -> any AnimationEncodingSession {
        guard size.isValid, size.width <= Int(WEBP_MAX_DIMENSION), size.height <= Int(WEBP_MAX_DIMENSION) else {
            throw EncodingError.unsupported(format: .webp, message: "an animation of \(size.width)×\(size.height) (WebP's sides are 1–16383)")
        }
        return try WebPAnimationSession(size: size, loopCount: loopCount, config: configuration(options),
                                        icc: EncodeOptions.checkedICCProfile(options.iccProfile, format: .webp))
    }
}

/// One animated WebP being written: the `WebPAnimEncoder`, freed when the session ends.
final class WebPAnimationSession: AnimationEncodingSession {
    private let size: PixelSize
    private var config: WebPConfig
    private let icc: Data?
    private var encoder: OpaquePointer?
    private var timestamp = 0
    private var frames = 0

    init(size: PixelSize, loopCount: Int?, config: WebPConfig, icc: Data?) throws {
        self.size = size
        self.config = config
        self.icc = icc
        var options = WebPAnimEncoderOptions()
        guard WebPAnimEncoderOptionsInit(&options) != 0 else {
            throw EncodingError.failed(format: .webp, message: "libwebpmux does not match the headers it was built with")
        }
        options.anim_params.loop_count = Int32(clamping: loopCount ?? 1)
        options.allow_mixed = 0
        guard let made = WebPAnimEncoderNew(Int32(size.width), Int32(size.height), &options) else {
            throw EncodingError.failed(format: .webp, message: "WebPAnimEncoderNew failed (out of memory?)")
        }
        encoder = made
    }

    deinit { if let encoder { WebPAnimEncoderDelete(encoder) } }

    func add(_ frame: Bitmap, durationMilliseconds: Int) throws {
        guard let encoder else { throw EncodingError.failed(format: .webp, message: "the animation is finished") }
        guard frame.size == size else {
            throw EncodingError.failed(format: .webp, message: "a \(frame.size) frame in a \(size) animation")
        }
        var picture = WebPPicture()
        guard WebPPictureInit(&picture) != 0 else {
            throw EncodingError.failed(format: .webp, message: "libwebp does not match the headers it was built with")
        }
        defer { WebPPictureFree(&picture) }
        picture.use_argb = 1  // the animation encoder compares frames in ARGB
        picture.width = Int32(size.width)
        picture.height = Int32(size.height)
        let straight = frame.unpremultipliedBytes()
        let imported = straight.withUnsafeBufferPointer { WebPPictureImportRGBA(&picture, $0.baseAddress, Int32(size.width * 4)) }
        guard imported != 0, WebPAnimEncoderAdd(encoder, &picture, Int32(clamping: timestamp), &config) != 0 else {
            throw EncodingError.failed(format: .webp, message: Self.error(encoder, fallback: "frame \(frames) could not be encoded"))
        }
        timestamp += max(0, durationMilliseconds)
        frames += 1
    }

    func finish() throws -> Data {
        guard let encoder, frames > 0 else {
            throw EncodingError.failed(format: .webp, message: frames == 0 ? "an animation needs a frame" : "the animation is finished")
        }
        defer {
            WebPAnimEncoderDelete(encoder)
            self.encoder = nil
        }
        var assembled = WebPData()
        defer { WebPDataClear(&assembled) }
        // The end timestamp gives the last frame its duration.
        guard WebPAnimEncoderAdd(encoder, nil, Int32(clamping: timestamp), nil) != 0,
              WebPAnimEncoderAssemble(encoder, &assembled) != 0, let bytes = assembled.bytes else {
            throw EncodingError.failed(format: .webp, message: Self.error(encoder, fallback: "the animation could not be assembled"))
        }
        let file = Data(bytes: bytes, count: assembled.size)
        return try icc.map { try WebPEncoder.embedding($0, in: file) } ?? file
    }

    private static func error(_ encoder: OpaquePointer, fallback: String) -> String {
        guard let text = WebPAnimEncoderGetError(encoder) else { return fallback }
        let message = String(cString: text)
        return message.isEmpty ? fallback : "libwebp: \(message)"
    }
}
