#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Writes an animation, one frame at a time, in one format (animated WebP, GIF): the
/// animated side of an encoder. Codec modules that can (`WebPEncoder`, `GIFEncoder`) conform
/// besides ``ImageEncoding``, and ``EncoderRegistry/animationEncoder(for:)`` finds them.
///
/// Frames go in as they are decoded (``ImageAnimation/frames()``), so a long animation never
/// needs all its frames in memory: a session holds what its format needs to compare a frame
/// with the one before and the bytes written so far.
public protocol AnimationEncoding: ImageEncoding {
    /// Starts an animation whose frames are all `size`, played `loopCount` times (0 forever,
    /// `nil` once, as ``AnimationInfo/loopCount`` reads a file).
    /// - Throws: ``EncodingError`` for options or a size the format cannot take.
    func makeAnimationSession(size: PixelSize, loopCount: Int?, options: EncodeOptions) throws -> any AnimationEncodingSession
}

/// One animation being written (``AnimationEncoding/makeAnimationSession(size:loopCount:options:)``):
/// frames in order, then ``finish()``. Used by one task at a time; every C resource it holds
/// is freed by ``finish()`` or when it is dropped.
public protocol AnimationEncodingSession: AnyObject {
    /// Adds `frame` (the session's size, either pixel format), shown for `durationMilliseconds`.
    /// - Throws: ``EncodingError``.
    func add(_ frame: Bitmap, durationMilliseconds: Int) throws
    /// The encoded file, after at least one frame.
    /// - Throws: ``EncodingError``.
    func finish() throws -> Data
}

extension AnimationEncodingSession {
    /// Adds every frame of `animation` as it decodes, with the durations browsers show
    /// (``AnimationFrame/displayMilliseconds``), and returns the file.
    /// - Throws: what the frames or the encoder throw.
    public func encode(_ animation: ImageAnimation) async throws -> Data {
        for try await frame in animation.frames() {
            try add(frame.bitmap, durationMilliseconds: frame.displayMilliseconds)
        }
        return try finish()
    }
}

extension AnimationEncoding {
    /// Writes every frame of `animation` through `processors` (in order, on the frames as
    /// decoded: premultiplied unless the request asked for straight), one frame at a time as it
    /// decodes, with the durations browsers show and the animation's loop count; the session
    /// takes the size of the first processed frame. `nil` when the animation has no frame.
    /// Memory stays a few canvases however many frames there are.
    /// - Throws: what the frames, the processors or the encoder (``EncodingError``) throw.
    public func encode(_ animation: ImageAnimation, processors: [ImageProcessor] = [],
                       options: EncodeOptions = EncodeOptions()) async throws -> (data: Data, frameCount: Int)? {
        var session: (any AnimationEncodingSession)?
        var count = 0
        for try await frame in animation.frames() {
            var bitmap = frame.bitmap
            for processor in processors { bitmap = try processor.process(bitmap) }
            let current = try session ?? makeAnimationSession(size: bitmap.size, loopCount: animation.info.loopCount, options: options)
            session = current
            try current.add(bitmap, durationMilliseconds: frame.displayMilliseconds)
            count += 1
        }
        guard let session else { return nil }
        return (try session.finish(), count)
    }
}

extension EncoderRegistry {
    /// The newest encoder for `format` when it writes animations, or `nil`.
    public func animationEncoder(for format: ImageFormat) -> (any AnimationEncoding)? {
        encoder(for: format) as? any AnimationEncoding
    }
}
