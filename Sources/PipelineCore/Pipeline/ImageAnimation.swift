import Foundation

/// An animation opened by ``ImagePipeline/animation(for:)``: its header, and its frames decoded
/// lazily, composited and scaled to the request's size.
///
/// It holds the compressed bytes only. Each ``frames()`` sequence decodes from the start, one
/// frame per iteration step, in the iterating task; its memory is the codec's few canvases and
/// one output frame, whatever the frame count. Nothing of it goes into the memory cache (which
/// keeps the first frame as the still picture, when `image(for:)` asks).
public struct ImageAnimation: Sendable {
    /// The container format.
    public let format: ImageFormat
    /// Canvas size, frame count, loop count, total stored duration.
    public let info: AnimationInfo
    /// How each frame is scaled and cropped: the request's target size and content mode
    /// applied to the canvas.
    public let plan: ResizePlan
    /// The URL the bytes came from (the fetch URL), for errors.
    public let url: URL
    private let data: Data
    private let decoder: any AnimatedImageDecoding
    private let maxPixelCount: Int
    private let filter: ResamplingFilter

    init(format: ImageFormat, info: AnimationInfo, plan: ResizePlan, url: URL, data: Data, decoder: any AnimatedImageDecoding,
         maxPixelCount: Int, filter: ResamplingFilter = .default) {
        self.filter = filter
        self.format = format
        self.url = url
        self.info = info
        self.plan = plan
        self.data = data
        self.decoder = decoder
        self.maxPixelCount = maxPixelCount
    }

    /// The frames in order, at ``ResizePlan/outputSize``, decoded one per step. Ends after the
    /// last frame; for damaged data, after the frames before it, throws the codec's typed error
    /// wrapped with the URL (``ImagePipelineError/decodingFailed(_:underlying:)``).
    public func frames() -> AsyncThrowingStream<AnimationFrame, any Error> {
        let cursor = FrameCursor(data: data, decoder: decoder, maxPixelCount: maxPixelCount, plan: plan, filter: filter)
        let url = url
        return AsyncThrowingStream(unfolding: {
            do {
                return try cursor.next()
            } catch let error where !(error is CancellationError) {
                throw ImagePipelineError.wrap(error, decoding: url)
            }
        })
    }
}

/// The state of one ``ImageAnimation/frames()`` sequence: the codec's frame decoder, opened at
/// the first step. Steps of one sequence come one at a time; the lock only makes that explicit.
private final class FrameCursor: @unchecked Sendable {
    private let lock = NSLock()
    private let data: Data
    private let decoder: any AnimatedImageDecoding
    private let maxPixelCount: Int
    private let plan: ResizePlan
    private let filter: ResamplingFilter
    private var frames: (any AnimationFrameDecoding)?

    init(data: Data, decoder: any AnimatedImageDecoding, maxPixelCount: Int, plan: ResizePlan, filter: ResamplingFilter) {
        self.filter = filter
        self.data = data
        self.decoder = decoder
        self.maxPixelCount = maxPixelCount
        self.plan = plan
    }

    func next() throws -> AnimationFrame? {
        try Task.checkCancellation()
        lock.lock()
        defer { lock.unlock() }
        if frames == nil {
            frames = try decoder.makeAnimationDecoder(for: data, options: DecodeOptions(maxPixelCount: maxPixelCount))
        }
        guard var frame = try frames?.nextFrame(size: nil) else {
            frames = nil  // frees the codec's canvases at once
            return nil
        }
        if frame.bitmap.size != plan.outputSize || plan.crop != PixelRect(plan.sourceSize) {
            frame.bitmap = Resampler.resample(frame.bitmap, plan: plan, filter: filter)
        }
        return frame
    }
}
