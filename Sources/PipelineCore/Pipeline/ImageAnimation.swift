import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An animation opened by ``ImagePipeline/animation(for:)``: its header, and its frames decoded
/// lazily, composited and scaled to the request's size, in the request's
/// ``ProcessingOptions/pixelFormat``.
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
    /// The frames' pixel format: the request's ``ProcessingOptions/pixelFormat`` (premultiplied
    /// unless straight was asked; a scaled frame is computed premultiplied and made straight once).
    public let pixelFormat: PixelFormat
    private let data: Data
    private let decoder: any AnimatedImageDecoding
    /// The limits (pixels, frames, frame pixels) and the resampling filter.
    private let options: DecodeOptions
    private let admission: DecodeAdmission?
    private let priority: ImagePriority

    init(format: ImageFormat, info: AnimationInfo, plan: ResizePlan, url: URL, pixelFormat: PixelFormat = .rgba8Premultiplied,
         data: Data, decoder: any AnimatedImageDecoding, options: DecodeOptions, admission: DecodeAdmission?, priority: ImagePriority) {
        self.format = format
        self.url = url
        self.pixelFormat = pixelFormat
        self.info = info
        self.plan = plan
        self.data = data
        self.decoder = decoder
        self.options = options
        self.admission = admission
        self.priority = priority
    }

    /// The frames in order, at ``ResizePlan/outputSize`` and in ``pixelFormat``, decoded one per step. Ends after the
    /// last frame; for damaged data, after the frames before it, throws the codec's typed error
    /// wrapped with the URL (``ImagePipelineError/decodingFailed(_:underlying:)``).
    ///
    /// The first step waits, as a still decode does, until the sequence's memory fits the
    /// pipeline's decode budget (``ImagePipeline/Configuration/decodeMemoryBudget``): the
    /// codec's canvases (``AnimatedImageDecoding/estimatedAnimationMemory(_:)``) and the scaled
    /// frame. The sequence holds that reservation until it ends, fails, or is dropped, so a
    /// caller iterating a large animation should not wait inside the loop for other decodes
    /// that need the budget. A frame past ``ImagePipeline/Configuration/maxAnimationFrameCount``
    /// (or ``ImagePipeline/Configuration/maxAnimationPixelCount``) is never delivered, whatever
    /// the header said: the step throws ``ImagePipelineError/overLimit(_:limit:actual:)``.
    public func frames() -> AsyncThrowingStream<AnimationFrame, any Error> {
        let cursor = FrameCursor(data: data, decoder: decoder, info: info, options: options, plan: plan,
                                 pixelFormat: pixelFormat, admission: admission, priority: priority)
        let url = url
        return AsyncThrowingStream(unfolding: {
            do {
                return try await cursor.next()
            } catch let error where !(error is CancellationError) {
                throw ImagePipelineError.wrap(error, decoding: url)
            }
        })
    }
}

/// The state of one ``ImageAnimation/frames()`` sequence: the decode memory it reserved and the
/// codec's frame decoder, both taken at the first step and given back after the last one, at
/// the first error, or when the sequence is dropped. Steps of one sequence come one at a time;
/// the mutex only makes that explicit.
private final class FrameCursor: Sendable {
    private struct State {
        var frames: (any AnimationFrameDecoding)?
        var delivered = 0
        var reserved = 0
        var finished = false
    }

    private let data: Data
    private let decoder: any AnimatedImageDecoding
    private let info: AnimationInfo
    private let options: DecodeOptions
    private let plan: ResizePlan
    private let pixelFormat: PixelFormat
    private let admission: DecodeAdmission?
    private let priority: PriorityHandle
    private let state = Mutex(State())

    init(data: Data, decoder: any AnimatedImageDecoding, info: AnimationInfo, options: DecodeOptions, plan: ResizePlan,
         pixelFormat: PixelFormat, admission: DecodeAdmission?, priority: ImagePriority) {
        self.data = data
        self.decoder = decoder
        self.info = info
        self.options = options
        self.plan = plan
        self.pixelFormat = pixelFormat
        self.admission = admission
        self.priority = PriorityHandle(priority)
    }

    deinit {
        let reserved = state.withLock { $0.reserved }
        if reserved > 0 { admission?.release(reserved) }
    }

    /// Whether frames are scaled or cropped to the plan (the scaled frame is memory of its own).
    private var resamples: Bool { options.transform.uprightSize(of: info.canvasSize) != plan.outputSize || plan.crop != PixelRect(plan.sourceSize) }

    /// What the sequence reserves: the codec's canvases and the scaled frame, admitted as a
    /// still decode's parts are (``DecodeAdmission/cost(_:)``).
    private func reservation(in admission: DecodeAdmission) -> Int {
        let (output, overflow) = plan.outputSize.pixelCount.multipliedReportingOverflow(by: 4)
        return admission.cost(decoder.estimatedAnimationMemory(info), resamples ? (overflow ? .max : output) : 0)
    }

    func next() async throws -> AnimationFrame? {
        try Task.checkCancellation()
        if let admission, state.withLock({ !$0.finished && $0.reserved == 0 }) {
            let bytes = reservation(in: admission)
            try await admission.acquire(bytes, priority: priority)
            state.withLock { $0.reserved = bytes }
        }
        do {
            let frame = try state.withLock { current throws -> AnimationFrame? in try step(&current) }
            if frame == nil { finish() }
            return frame
        } catch {
            finish()
            throw error
        }
    }

    /// Frees the codec's canvases and gives back the reservation at once.
    private func finish() {
        let reserved = state.withLock { current -> Int in
            let reserved = current.reserved
            current = State(finished: true)
            return reserved
        }
        if reserved > 0 { admission?.release(reserved) }
    }

    private func step(_ state: inout State) throws -> AnimationFrame? {
        guard !state.finished else { return nil }
        if state.frames == nil {
            // Frames delivered at canvas size come in the asked format from the codec itself, so
            // a straight frame keeps the colour of pixels whose alpha is low (a premultiplied
            // 8-bit canvas made straight loses it: up to 127 levels where alpha < 16); frames to
            // be scaled come premultiplied, as the resampler takes them.
            var frameOptions = options
            frameOptions.pixelFormat = resamples ? .rgba8Premultiplied : pixelFormat
            state.frames = try decoder.makeAnimationDecoder(for: data, options: frameOptions)
        }
        guard var frame = try state.frames?.nextFrame(size: nil) else { return nil }
        // The header was checked; this holds the limits for a decoder that delivers more frames
        // than it announced (the first frame past them is decoded, never delivered).
        try options.checkAnimationLimits(canvas: info.canvasSize, frameCount: state.delivered + 1)
        state.delivered += 1
        // The requested turn (``ProcessingOptions/transform``); animated formats carry no
        // orientation of their own.
        if options.transform != .up { frame.bitmap = frame.bitmap.oriented(options.transform) }
        if frame.bitmap.size != plan.outputSize || plan.crop != PixelRect(plan.sourceSize) {
            frame.bitmap = Resampler.resample(frame.bitmap, plan: plan, filter: options.resamplingFilter)
        }
        if frame.bitmap.pixelFormat != pixelFormat { frame.bitmap = frame.bitmap.converted(to: pixelFormat) }
        return frame
    }
}
