import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Which output formats a response may have: the one the URL names, or those the client's
/// `Accept` allows, chosen once the source's format is known.
public struct OutputChoice: Sendable, Hashable {
    /// The format the URL names (extension, `f:`), or `nil` to negotiate.
    public var explicit: ImageFormat?
    /// With no explicit format: formats the client accepts that we may pick (AVIF, WebP, JPEG XL),
    /// as the server's `autoAVIF`/`autoWebP`/`autoJXL` allow.
    public var accepted: Set<ImageFormat>

    /// Creates a choice.
    public init(explicit: ImageFormat?, accepted: Set<ImageFormat>) {
        self.explicit = explicit
        self.accepted = accepted
    }
}

/// A finished picture, ready to send.
public struct RenderedImage: Sendable {
    /// The encoded bytes.
    public var data: Data
    /// Their format.
    public var format: ImageFormat
    /// The source's validator (its `ETag`, else `Last-Modified`), or `nil`: what the response's
    /// own `ETag` is derived from, with the options.
    public var sourceValidator: String?
    /// Seconds spent getting the source's bytes and header (from a cache or its origin): the
    /// `downloading` span of the metrics; the rest of the render is `processing`.
    public var downloadSeconds: Double = 0
}

/// Turns a source and its ``RenderOptions`` into encoded bytes through the pipeline, as
/// imgproxy would.
///
/// 1. The source's header (``PipelineCore/ImagePipeline/info(for:)``: the bytes loaded once,
///    no pixels decoded) gives its format, size, alpha and frame count: `max_src_resolution`
///    and `max_animation_frames` are checked there (422), and the geometry is planned from the
///    size (``RenderPlan``).
/// 2. The pixels come from one pipeline request, decoded small where the codec can (JPEG's
///    shrink-on-load): a plain fit or fill is the pipeline's own (its smart crop for `g:sm`);
///    anything else (`crop:`, `force`, a fill whose window has offsets or that imgproxy sizes
///    differently) decodes the whole source at the one scale the result needs and cuts and
///    resizes it in a processor. `trim:` is the exception: the border is only known from the
///    full-size pixels, so a trimmed source is decoded at full size.
/// 3. Processors after the geometry, in imgproxy's order: blur, sharpen, the colour adjustments
///    (`adjust`, `brightness`, `contrast`, `saturation`), extend, padding, flatten
///    (`background:`, or white for a format without alpha), watermark.
/// 4. The encode (``OutputNegotiation``) on a pool of its own threads; an animation stays
///    animated where the format can, every frame through the same processors, one at a time as
///    the pipeline's ``PipelineCore/ImageAnimation`` decodes them, each processed and encoded on
///    the same pool, so its memory is a few canvases whatever the frame count.
struct Renderer: Sendable {
    let pipeline: ImagePipeline
    let encoders: EncoderRegistry
    /// The picture of `wm:`, or `nil` (then `wm:` answers 400).
    let watermark: Bitmap?
    /// The watermark's name in the cache keys (a digest of its pixels, made once).
    let watermarkID: String?
    let negotiation: OutputNegotiation
    /// Where still pictures are encoded: threads of their own, never Swift's cooperative ones
    /// (an AVIF encode takes tens of milliseconds), one per core.
    let encodePool: WorkerPool

    init(pipeline: ImagePipeline, encoders: EncoderRegistry, watermark: Bitmap? = nil) {
        self.pipeline = pipeline
        self.encoders = encoders
        self.watermark = watermark
        watermarkID = watermark.map { "imgserver.watermark." + ImageProcessor.overlay($0).identifier }
        negotiation = OutputNegotiation(encoders: encoders)
        encodePool = WorkerPool(maxConcurrent: ProcessInfo.processInfo.activeProcessorCount, name: "ImageServer.encode", idleTimeout: 1)
    }

    func render(_ options: RenderOptions, source: URL, choice: OutputChoice) async throws(ServerError) -> RenderedImage {
        do {
            return try await make(options, source: source, choice: choice)
        } catch let error as ServerError {
            throw error
        } catch let error as EncodingError {
            throw ServerError(.internalError, "cannot encode the picture of \(MessageText.url(source)): \(Self.encodingReason(error))")
        } catch {
            throw Self.serverError(error, source: source)
        }
    }

    // MARK: The steps

    private func make(_ options: RenderOptions, source: URL, choice: OutputChoice) async throws -> RenderedImage {
        try Self.checkBuilt(options, watermark: watermark)
        var request = ImageRequest(url: source, decoding: .strict)
        request.processing.appliesOrientation = options.autoRotate
        // `rot:` and `fl:` are folded into the decoder's orientation step: the picture is turned
        // once, and the geometry below is planned on the turned picture, as imgproxy's
        // `calcScale` sees the rotated size.
        request.processing.transform = options.transform
        request.processing.convertsToSRGB = options.stripColorProfile
        request.processing.pixelFormat = .rgba8Straight
        if let trim = options.trim { request.processing.trim = Trim(threshold: trim.threshold, background: trim.color) }

        let loading = ContinuousClock.now
        let info = try await pipeline.info(for: request)
        let downloadSeconds = ImageServer.seconds(since: loading)
        let upright = options.orientedSize(of: info)
        let frameLimit = options.maxAnimationFrames
        if let frameLimit, frameLimit > 1, info.frameCount > frameLimit {
            throw ServerError(.unprocessable, "source has \(info.frameCount) frames, over max_animation_frames \(frameLimit): \(MessageText.url(source))")
        }
        // An animation is written as one where the format can, unless `maf:1` asks for a still
        // or `trim:` (each frame would trim differently) is given.
        let wantsAnimation = info.frameCount > 1 && frameLimit != 1 && options.trim == nil
        let hasAlpha = info.hasAlpha && options.background == nil
        let format = try negotiation.format(for: choice, source: info.format, hasAlpha: hasAlpha, animates: wantsAnimation)
        let animates = wantsAnimation && negotiation.animatable.contains(format)
        // Every frame counts when every frame is processed.
        let framesUsed = animates ? info.frameCount : 1
        if let megapixels = options.maxSourceResolution,
           Double(upright.width) * Double(upright.height) * Double(framesUsed) > megapixels * 1_000_000 {
            throw ServerError(.unprocessable, "source is \(upright.width)×\(upright.height)"
                              + (framesUsed > 1 ? " × \(framesUsed) frames" : "")
                              + ", over max_src_resolution \(megapixels) megapixels: \(MessageText.url(source))")
        }

        let plan = RenderPlan(source: upright, options: options, isVector: info.isVector)
        try checkResultSize(plan, source: source)
        Self.configureGeometry(&request, plan: plan, options: options)
        let post = postProcessors(options, plan: plan, format: format, trimmed: options.trim != nil)
        request.processors += post.map { $0 as any ImageProcessing }

        let validator = await sourceValidator(for: request)
        if animates, let animated = try await renderAnimation(request, post: post, options: options, format: format, plan: plan, source: source) {
            return RenderedImage(data: animated, format: format, sourceValidator: validator, downloadSeconds: downloadSeconds)
        }
        let response = try await pipeline.image(for: request)
        let encodeOptions = OutputNegotiation.encodeOptions(format, options: options,
                                                            iccProfile: options.stripColorProfile ? nil : response.iccProfile)
        let encoder = try encoders.requireEncoder(for: format), bitmap = response.bitmap
        let data = try await encodePool.run(priority: PriorityHandle(.visible)) { try encoder.encode(bitmap, options: encodeOptions) }
        return RenderedImage(data: data, format: format, sourceValidator: validator, downloadSeconds: downloadSeconds)
    }

    /// A result (or the scaled picture it is cut from) over the pipeline's pixel limit: 422
    /// before anything is decoded (`enlarge` with a huge box, a large `extend` or padding).
    private func checkResultSize(_ plan: RenderPlan, source: URL) throws(ServerError) {
        let limit = pipeline.configuration.maxPixelCount
        for size in [plan.scaledSize, plan.outputSize] where size.width > limit / max(1, size.height) {
            throw ServerError(.unprocessable, "the result would be \(size.width)×\(size.height), over the limit of \(limit) pixels: "
                              + MessageText.url(source))
        }
    }

    /// Options whose value this renderer cannot honour: 400, naming them.
    static func checkBuilt(_ options: RenderOptions, watermark: Bitmap?) throws(ServerError) {
        if options.watermark != nil, watermark == nil {
            throw ServerError(.badRequest, "watermark: no watermark picture is configured on this server")
        }
        if let trim = options.trim, trim.equalHorizontal || trim.equalVertical {
            throw ServerError(.badRequest, "trim: equal_hor and equal_ver are not built")
        }
    }

    /// The request's size, mode and geometry processor for `plan`: the pipeline's own fit or
    /// fill when it makes exactly the plan's picture, else a decode of the whole source at the
    /// scale the plan needs and ``geometryProcessor(_:trimmed:)`` to cut and resize it. A
    /// trimmed source is decoded at full size (its size is known only after the trim).
    static func configureGeometry(_ request: inout ImageRequest, plan: RenderPlan, options: RenderOptions) {
        if options.trim != nil {
            request.targetSize = .original
            request.processors = [geometryProcessor(plan, options: options, trimmed: true)]
            return
        }
        let source = plan.source
        let wholeSource = plan.region == PixelRect(source)
        if wholeSource {
            // The pipeline's fit: the scaled size is the whole picture.
            if plan.resultCrop == nil {
                let upscales = plan.scaledSize.width > source.width || plan.scaledSize.height > source.height
                let fit = ResizePlan(source: source, target: .pixels(plan.scaledSize), contentMode: .fit, allowsUpscaling: upscales)
                if fit.outputSize == plan.scaledSize {
                    request.targetSize = .pixels(plan.scaledSize)
                    request.contentMode = .fit
                    request.processing.allowsUpscaling = upscales
                    return
                }
            } else if let window = plan.resultCrop, plan.resultCropIsSmart || options.gravity.offsetX == 0 && options.gravity.offsetY == 0 {
                // The pipeline's fill: the same cover scale and window (its smart crop for `sm`).
                let cropped = plan.croppedSize
                let upscales = plan.scaledSize.width > source.width || plan.scaledSize.height > source.height
                let fill = ResizePlan(source: source, target: .pixels(cropped), contentMode: .fill, anchor: options.gravity.anchor,
                                      allowsUpscaling: upscales)
                let scale = Double(plan.scaledSize.width) / Double(source.width)
                if fill.outputSize == cropped, abs(fill.crop.width * scale - window.width) < 1, abs(fill.crop.height * scale - window.height) < 1 {
                    request.targetSize = .pixels(cropped)
                    request.contentMode = .fill
                    request.cropAnchor = options.gravity.anchor
                    request.processing.allowsUpscaling = upscales
                    return
                }
            }
        }
        // The whole source at the larger of the two scales (the region is cut from it), but never
        // above its own size: an enlargement is resampled from the source's pixels by the
        // processor. Decoding the whole source at an enlarging scale made a picture far larger
        // than the result (`rs:force:16384:1/el:1` of 480×320 decoded 16384×10923, 700 MB and
        // seconds of work; `c:100:100/rs:fit:2000:2000/el:1`, 9600×6400) beyond the pixel limit.
        let scale = min(1, max(Double(plan.scaledSize.width) / plan.region.width, Double(plan.scaledSize.height) / plan.region.height))
        let box = PixelSize(width: max(1, RenderPlan.integer(Double(source.width) * scale)),
                            height: max(1, RenderPlan.integer(Double(source.height) * scale)))
        request.targetSize = .pixels(box)
        request.contentMode = .fit
        request.processors = [geometryProcessor(plan, options: options, trimmed: false)]
    }

    /// Cuts the plan's region from the decoded picture (which may be the source at any scale),
    /// scales it to the plan's size (a plain crop when the decode already has that scale) and
    /// crops the result window. With `trimmed`, the plan is made again for the picture that
    /// arrives (the trimmed source at full size).
    static func geometryProcessor(_ plan: RenderPlan, options: RenderOptions, trimmed: Bool) -> ImageProcessor {
        let region = plan.region, window = plan.resultCrop
        let id = trimmed ? "imgserver.geometry(trimmed,\(RenderPlan.identifier(options)))"
            : "imgserver.geometry(\(region.x),\(region.y),\(region.width),\(region.height)→\(plan.scaledSize.width)x\(plan.scaledSize.height)"
            + (window.map { ",\($0.x),\($0.y),\($0.width),\($0.height)" } ?? "") + ")"
        return .process(id: id) { bitmap in
            let plan = trimmed ? RenderPlan(source: bitmap.size, options: options) : plan
            let kx = Double(bitmap.width) / Double(plan.source.width), ky = Double(bitmap.height) / Double(plan.source.height)
            let rect = PixelRect(x: plan.region.x * kx, y: plan.region.y * ky, width: plan.region.width * kx, height: plan.region.height * ky)
            var result: Bitmap
            if abs(rect.width - Double(plan.scaledSize.width)) < 1, abs(rect.height - Double(plan.scaledSize.height)) < 1 {
                let whole = PixelRect(x: rect.x.rounded(), y: rect.y.rounded(), width: Double(plan.scaledSize.width),
                                      height: Double(plan.scaledSize.height))
                result = try ImageProcessor.crop(whole).process(bitmap)
            } else {
                result = Resampler.resample(bitmap, crop: rect, to: plan.scaledSize, filter: .default)
            }
            if let window = plan.resultCrop { result = try ImageProcessor.crop(window).process(result) }
            return result
        }
    }

    /// The processors after the geometry, in imgproxy's order: the filters (blur, sharpen, then
    /// the colour adjustments, in one pass: the offset, contrast, saturation), extend, padding,
    /// flatten, watermark. The adjustments come before the extension and padding, so the mean
    /// grey of `contrast` is the picture's own and padding keeps its colour. Extension and
    /// padding are transparent; the flatten that follows (given a `background:`, or for a format
    /// without alpha, onto white as imgproxy's default background) colours them.
    func postProcessors(_ options: RenderOptions, plan: RenderPlan, format: ImageFormat, trimmed: Bool) -> [ImageProcessor] {
        var list: [ImageProcessor] = []
        if let sigma = options.blur, sigma > 0 { list.append(.gaussianBlur(radius: sigma)) }
        if let sigma = options.sharpen, sigma > 0 { list.append(.sharpen(sigma: sigma)) }
        let adjustment = ColorAdjustment(brightnessOffset: options.brightness, contrast: options.contrast, saturation: options.saturation)
        if !adjustment.isIdentity { list.append(.colorAdjustment(adjustment)) }
        if let extended = plan.extended, !trimmed {
            let inner = plan.croppedSize
            list.append(.padded(to: extended.canvas, background: .clear,
                                gravity: Self.placement(x: extended.x, y: extended.y, inner: inner, outer: extended.canvas)))
        } else if let gravity = options.extend, trimmed {
            list.append(.process(id: "imgserver.extend(\(RenderPlan.identifier(options)))") { bitmap in
                let box = PixelSize(width: max(RenderPlan.scaled(options.width, options.dpr), bitmap.width),
                                    height: max(RenderPlan.scaled(options.height, options.dpr), bitmap.height))
                guard box != bitmap.size else { return bitmap }
                let (x, y) = RenderPlan.position(outer: box, inner: bitmap.size, gravity: gravity, dpr: options.dpr)
                return try ImageProcessor.padded(to: box, background: .clear,
                                                 gravity: Self.placement(x: x, y: y, inner: bitmap.size, outer: box)).process(bitmap)
            })
        }
        if let padding = plan.padding {
            let sides = (padding.left + padding.right, padding.top + padding.bottom)
            list.append(.process(id: "imgserver.padding(\(padding.top),\(padding.right),\(padding.bottom),\(padding.left))") { bitmap in
                let box = PixelSize(width: bitmap.width + sides.0, height: bitmap.height + sides.1)
                return try ImageProcessor.padded(to: box, background: .clear,
                                                 gravity: Self.placement(x: padding.left, y: padding.top, inner: bitmap.size, outer: box))
                    .process(bitmap)
            })
        }
        if let background = options.background {
            list.append(.flattened(onto: background))
        } else if !OutputNegotiation.keepsAlpha(format) {
            list.append(.flattened(onto: .white))
        }
        if let placement = options.watermark, let watermark {
            let offset = (x: RenderPlan.integer(placement.position.offsetX * plan.dprScale),
                          y: RenderPlan.integer(placement.position.offsetY * plan.dprScale))
            list.append(.overlay(watermark, id: watermarkID, gravity: placement.position.anchor, offset: offset, opacity: placement.opacity,
                                 relativeSize: placement.scale > 0 ? placement.scale : nil))
        }
        return list
    }

    /// The anchor that puts a picture of `inner` at (`x`, `y`) in `outer` (``ImageProcessor/padded(to:background:gravity:)``
    /// places at the anchor's fraction of the free space).
    static func placement(x: Int, y: Int, inner: PixelSize, outer: PixelSize) -> CropAnchor {
        let freeX = outer.width - inner.width, freeY = outer.height - inner.height
        return .focalPoint(x: freeX > 0 ? Double(x) / Double(freeX) : 0, y: freeY > 0 ? Double(y) / Double(freeY) : 0)
    }

    /// The animation written in `format`, every frame through the request's processors, or `nil`
    /// when the source turns out to hold one frame.
    private func renderAnimation(_ request: ImageRequest, post: [ImageProcessor], options: RenderOptions, format: ImageFormat,
                                 plan: RenderPlan, source: URL) async throws -> Data? {
        guard let encoder = encoders.animationEncoder(for: format) else { return nil }
        // Premultiplied frames: the processors work on those; the encoder makes each straight once.
        // The pipeline steps through the frames in this task (on one of Swift's few cooperative
        // threads), so it only decodes them, at their own size; the geometry is the processor's,
        // run with the encode on the encode pool's threads. Scaled in the pipeline, two enlarged
        // animations held those threads for seconds a frame and every other request stalled
        // (`/health` answered 504).
        var premultiplied = request
        premultiplied.processing.pixelFormat = .rgba8Premultiplied
        premultiplied.targetSize = .original
        premultiplied.processing.allowsUpscaling = false
        let processors = [Self.geometryProcessor(plan, options: options, trimmed: false)] + post
        premultiplied.processors = processors.map { $0 as any ImageProcessing }
        let animation = try await pipeline.animation(for: premultiplied)
        let frames = animation.info.frameCount
        guard frames > 1 else { return nil }
        if let limit = options.maxAnimationFrames, limit > 1, frames > limit {
            throw ServerError(.unprocessable, "source has \(frames) frames, over max_animation_frames \(limit): \(MessageText.url(source))")
        }
        // The output's frames are bounded as the source's are: an enlarged or extended canvas
        // times the frame count within the pipeline's animation pixel limit.
        let limit = pipeline.configuration.maxAnimationPixelCount
        if plan.outputSize.width * plan.outputSize.height > limit / frames {
            throw ServerError(.unprocessable, "the animation would be \(plan.outputSize.width)×\(plan.outputSize.height) × \(frames) frames, "
                              + "over the limit of \(limit) pixels: \(MessageText.url(source))")
        }
        let encodeOptions = OutputNegotiation.encodeOptions(format, options: options, iccProfile: nil)
        // Each frame's processors and encode, and the finish, run on the encode pool's threads.
        let loopCount = animation.info.loopCount
        let writer = AnimationWriter()
        for try await frame in animation.frames() {
            let bitmap = frame.bitmap, milliseconds = frame.displayMilliseconds
            try await encodePool.run(priority: PriorityHandle(.visible)) {
                var processed = bitmap
                for processor in processors { processed = try processor.process(processed) }
                let session = try writer.session ?? encoder.makeAnimationSession(size: processed.size, loopCount: loopCount, options: encodeOptions)
                writer.session = session
                try session.add(processed, durationMilliseconds: milliseconds)
            }
        }
        guard writer.session != nil else { return nil }
        return try await encodePool.run(priority: PriorityHandle(.visible)) { try writer.session?.finish() }
    }

    /// The source's validator from the disk cache's entry (its `ETag`, else `Last-Modified`),
    /// or `nil` (no disk cache, a scheme it does not keep, no validator).
    private func sourceValidator(for request: ImageRequest) async -> String? {
        guard let cache = pipeline.configuration.diskCache,
              let digest = await cache.cachedDigest(for: pipeline.cacheURL(for: request))
        else { return nil }
        return digest.info.etag ?? digest.info.lastModified
    }

    // MARK: Errors

    /// The status and one-line message of a pipeline failure: by its kind, naming the source
    /// (escaped, bounded) and never quoting its bytes.
    static func serverError(_ error: any Error, source: URL) -> ServerError {
        let url = MessageText.url(source)
        if isTruncation(error) {
            // Told apart from other damage: the usual cause is an upload or copy cut short.
            return ServerError(.unprocessable, "source is truncated (its data ends before the picture does): \(url)")
        }
        switch ImagePipelineError.Kind(error) {
        case .notFound: return ServerError(.notFound, "source not found: \(url)")
        case .refused: return ServerError(.forbidden, "source refused: \(url)")
        case .overLimit: return ServerError(.unprocessable, "source is over a limit (\(limitName(error))): \(url)")
        case .notAPicture: return ServerError(.unprocessable, "source is not a picture this server decodes, or is damaged: \(url)")
        case .timedOut, .notCached: return ServerError(.timeout, "source timed out: \(url)")
        case .unavailable: return ServerError(.badGateway, "source failed to load: \(url)")
        case .overloaded: return ServerError(.unavailable, "too busy to process the source now: \(url)")
        case .cancelled: return ServerError(.timeout, "the request was cancelled: \(url)")
        case .failed: return ServerError(.internalError, "cannot process the picture of \(url)")
        }
    }

    /// Whether `error` is (or wraps) a decoder's ``PipelineCore/ImagePipelineError/truncatedData(format:message:)``.
    static func isTruncation(_ error: any Error) -> Bool {
        guard let pipelineError = error as? ImagePipelineError else { return false }
        if case .truncatedData = pipelineError.underlyingError as? ImagePipelineError { return true }
        return false
    }

    /// Which limit `error` is over, as a few words of ours (pixels, bytes, frames), never its text.
    static func limitName(_ error: any Error) -> String {
        var current: any Error = error
        for _ in 0..<4 {
            guard let pipelineError = current as? ImagePipelineError else { break }
            switch pipelineError {
            case .tooManyPixels: return "pixels"
            case .tooLarge: return "bytes"
            case .overLimit(let limit, limit: _, actual: _):
                return limit == .animationFrames ? "frames" : limit == .animationPixels ? "animation pixels" : limit.rawValue
            case .loadingFailed(_, let inner), .decodingFailed(_, let inner), .processingFailed(_, let inner): current = inner
            default: return "size"
            }
        }
        return "size"
    }

    /// An encoder's failure in a few words of ours.
    static func encodingReason(_ error: EncodingError) -> String {
        MessageText.escaped(String(describing: error))
    }
}

/// The animation session ``Renderer`` writes frames into from the encode pool's threads: used
/// by one step at a time (each is awaited before the next starts), so never at once.
private final class AnimationWriter: @unchecked Sendable {
    var session: (any AnimationEncodingSession)?
}
