import Foundation

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
}

/// One frame of an animation, composited onto the full canvas (and scaled, if asked).
public struct AnimationFrame: Sendable {
    /// 0 for the first frame.
    public var index: Int
    /// The composited canvas, premultiplied RGBA8 (``Bitmap/straightened()`` for straight alpha).
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
    /// A frame decoder over `data`, which it keeps. Frames bigger than
    /// `options.maxPixelCount` are refused before any pixel buffer exists.
    func makeAnimationDecoder(for data: Data, options: DecodeOptions) throws -> any AnimationFrameDecoding
}
