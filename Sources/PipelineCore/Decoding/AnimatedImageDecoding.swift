#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What an animation's header tells: canvas, frames, loops.
public struct AnimationInfo: Hashable, Sendable {
    /// The canvas every frame is composited onto.
    public var canvasSize: PixelSize
    /// Frames in the file, as counted from its structure (a damaged file may deliver fewer).
    public var frameCount: Int
    /// How many times to play: 0 forever, `nil` when the file says nothing (play once).
    public var loopCount: Int?
    /// The stored delays summed, in milliseconds, if the file stores any.
    public var totalDurationMilliseconds: Int?

    /// Creates an animation info value.
    public init(canvasSize: PixelSize, frameCount: Int, loopCount: Int? = nil, totalDurationMilliseconds: Int? = nil) {
        self.canvasSize = canvasSize
        self.frameCount = frameCount
        self.loopCount = loopCount
        self.totalDurationMilliseconds = totalDurationMilliseconds
    }

    /// The bytes of `count` RGBA8 canvases, saturating instead of overflowing: the unit of
    /// ``AnimatedImageDecoding/estimatedAnimationMemory(_:)``.
    public func canvasBytes(_ count: Int) -> Int {
        let (bytes, overflow) = canvasSize.pixelCount.multipliedReportingOverflow(by: 4 * count)
        return overflow ? .max : bytes
    }
}

/// One frame of an animation, composited onto the full canvas (and scaled, if asked).
public struct AnimationFrame: Sendable {
    /// 0 for the first frame.
    public var index: Int
    /// The composited canvas, RGBA8: at canvas size in the ``DecodeOptions/pixelFormat`` the
    /// frame decoder was made with (straight frames composited straight, as the format's own
    /// decoder shows them), scaled frames premultiplied.
    public var bitmap: Bitmap
    /// The delay as stored in the file, in milliseconds; `nil` when the file gives none.
    public var delayMilliseconds: Int?

    /// Creates a frame.
    public init(index: Int, bitmap: Bitmap, delayMilliseconds: Int?) {
        self.index = index
        self.bitmap = bitmap
        self.delayMilliseconds = delayMilliseconds
    }

    /// How long browsers show the frame: the stored delay, except that none, 0 or 10 ms
    /// become 100 ms.
    public var displayMilliseconds: Int {
        guard let delay = delayMilliseconds, delay > 10 else { return 100 }
        return delay
    }
}

/// Decodes an animation's frames in order, one at a time, holding a few canvases at most. An
/// object owns its codec's resources and frees them when released.
public protocol AnimationFrameDecoding: AnyObject {
    /// The canvas, frame count, loop count.
    var animationInfo: AnimationInfo { get }
    /// The next frame composited, scaled to `size` when given (else the canvas size), or `nil`
    /// after the last. Throws a typed error for damaged data; the frames before it stand.
    func nextFrame(size: PixelSize?) throws -> AnimationFrame?
}

/// A decoder that can also give every frame of an animation. Optional: the core asks a
/// decoder for it with `as? AnimatedImageDecoding` and names no format.
public protocol AnimatedImageDecoding: ImageDecoding {
    /// A frame decoder over `data`, which it keeps. Frames at canvas size come in
    /// `options.pixelFormat` (a decoder that ignores it gives premultiplied frames, which the
    /// pipeline converts); scaled ones premultiplied. A canvas bigger than
    /// `options.maxPixelCount`, and an animation over `options.maxAnimationFrameCount` or
    /// `options.maxAnimationPixelCount` (``DecodeOptions/checkAnimationLimits(canvas:frameCount:exact:)``),
    /// are refused from the header or container, before any pixel buffer exists or any frame
    /// is decoded. A format whose frames must be walked to be counted stops the walk at one
    /// more than ``DecodeOptions/animationFramesAllowed(on:)``, so a refusal costs no more
    /// than the frames allowed.
    func makeAnimationDecoder(for data: Data, options: DecodeOptions) throws -> any AnimationFrameDecoding

    /// An estimate of the most memory, in bytes, a frame decoder of an animation with `info`
    /// holds at once while its frames are read at canvas size: its canvas, any copy of an
    /// earlier canvas it keeps (GIF's "restore to previous" disposal, libwebp's disposed frame)
    /// and the frame it hands out. The pipeline reserves it in the decode memory budget
    /// (``ImagePipeline/Configuration/decodeMemoryBudget``) for the life of a frame sequence
    /// (``ImageAnimation/frames()``), so many animations at once wait as big stills do.
    ///
    /// Default: three RGBA8 canvases (the canvas, the previous one kept, the frame handed out).
    func estimatedAnimationMemory(_ info: AnimationInfo) -> Int
}

extension AnimatedImageDecoding {
    /// Three RGBA8 canvases (see the requirement).
    public func estimatedAnimationMemory(_ info: AnimationInfo) -> Int { info.canvasBytes(3) }
}
