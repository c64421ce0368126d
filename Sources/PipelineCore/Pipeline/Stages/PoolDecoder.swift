#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The decode pool's jobs: one decoding session per picture on the bounded decode pool,
/// straight to the size the key asks for, admitted by its estimated memory
/// (``ImagePipeline/Configuration/decodeMemoryBudget``); processors, previews and rendition
/// encodes. Every stage that decodes (originals, renditions, the check of revalidated bytes)
/// goes through here; no job runs on a caller's thread.
struct PoolDecoder: Sendable {
    let pool: WorkerPool
    let decoders: DecoderRegistry
    /// The configured limits, which every decode's options carry.
    let limits: Limits
    let clock: @Sendable () -> Date
    /// Admits decodes by their estimated memory; `nil` without a budget.
    let admission: DecodeAdmission?
    /// ``ImagePipeline/Configuration/makesPlaceholders``.
    let makesPlaceholders: Bool

    init(configuration: ImagePipeline.Configuration) {
        pool = WorkerPool(maxConcurrent: configuration.maxConcurrentDecodes, name: "ImagePipeline.decode")
        decoders = configuration.decoders
        limits = configuration.limits
        clock = configuration.now
        admission = configuration.decodeMemoryBudget.map { DecodeAdmission(budget: $0) }
        makesPlaceholders = configuration.makesPlaceholders
    }

    /// Decodes `data` at `priority` in one pool job, then runs in the same job the follow-ups
    /// `followUps` lists when the job has decoded ("decode, then these processors": a
    /// processed picture follows its own decode at once instead of queueing behind every
    /// decode not yet started). With `origin` (the bytes' info), the response's
    /// `renditionOrigin` is set, its tag computed on the pool too (a CRC-32 of the bytes: not
    /// on an actor). The response gets a placeholder hash when the configuration makes them,
    /// unless `placeholder` is `false` (a rendition's decode: its entry keeps the original's).
    func decode(_ data: Data, source: ImageSource, key: ImageKey, priority: PriorityHandle,
                origin: CacheEntryInfo? = nil, placeholder: Bool = true,
                then followUps: @escaping @Sendable () -> [FollowUp] = { [] }) async throws -> DecodeJobResult {
        let decoders = decoders, limits = limits, clock = clock, admission = admission
        let hashes = placeholder && makesPlaceholders
        /// One decode job: the decode, then the follow-ups when it decoded.
        @Sendable func job(reserved: Int?) throws -> DecodeOutcome {
            let start = clock()
            let outcome = try Self.decode(data, source: source, key: key, decoders: decoders, limits: limits,
                                          admission: admission, reserved: reserved, placeholder: hashes)
                .timed(since: start, clock: clock).tagged(data, origin)
            guard case .decoded(var result) = outcome else { return outcome }
            for followUp in followUps() {
                result.processed[followUp.key] = Result {
                    try Self.process(result.response.bitmap, with: followUp.key.processors,
                                     pixelFormat: followUp.key.processing.pixelFormat, clock: clock)
                }
            }
            return .decoded(result)
        }
        let first = try await pool.run(priority: priority) { try job(reserved: nil) }
        guard case .needsMemory(let bytes) = first, let admission else { return try first.result() }
        // Over the decode memory budget: wait (suspended, in priority order) for running decodes
        // to finish, then decode holding the reservation.
        try await admission.acquire(bytes, priority: priority)
        defer { admission.release(bytes) }
        return try await pool.run(priority: priority) { try job(reserved: bytes) }.result()
    }

    /// Whether `data` decodes whole (a small decode at prefetch priority, failing on a
    /// truncation): the check new bytes pass before they replace a stored copy nobody is
    /// waiting for.
    func decodes(_ data: Data) async -> Bool {
        let decoders = decoders
        let options = DecodeOptions(targetSize: PixelSize(width: 64, height: 64), strictness: .failsOnTruncation, limits: limits)
        let decoded: Bool? = try? await pool.run(priority: PriorityHandle(.prefetch)) {
            _ = try decoders.requireDecoder(for: data).decode(data, options: options)
            return true
        }
        return decoded == true
    }

    /// A preview of `partial`, the first bytes of a picture still downloading, decoded at
    /// `key`'s size, when its decoder is ``ProgressiveDecoding`` and the preview shows more
    /// than `steps` refinement steps; with the steps it shows. A preview never waits for decode
    /// memory: when the budget has no room now there is none. `nil` too when it does not decode.
    /// A decoded preview is reported as ``ImagePipelineEvent/previewDecoded(_:steps:seconds:)``.
    func preview(of partial: Data, key: ImageKey, after steps: Int, priority: PriorityHandle,
                 events: (@Sendable (ImagePipelineEvent) -> Void)?) async -> (ImageResponse, Int)? {
        let decoders = decoders, limits = limits, admission = admission, clock = clock
        let made: (ImageResponse, Int)?? = try? await pool.run(priority: priority) {
            let start = clock()
            // A preview's buffers, freed, stay in this thread's malloc arena unless given back:
            // each preview on another pool thread would keep its own copy beside the final's.
            defer { FreedMemory.returnToSystem() }
            guard let decoder = decoders.decoder(for: partial) as? any ProgressiveDecoding,
                  let preview = decoder.preview(of: partial), preview.steps > steps,
                  case .decoded(let result) = try Self.decode(preview.data, source: .network, key: key, decoders: decoders,
                                                          limits: limits, admission: admission, reserved: nil,
                                                          placeholder: false)
            else { return nil }
            var response = result.response
            events?(.previewDecoded(key, steps: preview.steps, seconds: clock().timeIntervalSince(start)))
            response.isPreview = true
            return (response, preview.steps)
        }
        return made ?? nil
    }

    /// Runs `processors` in order on `input`'s pixels (premultiplied, as processors expect), the
    /// result in `pixelFormat`; returns it and the seconds it took.
    func process(_ input: ImageResponse, with processors: [ImageProcessor], pixelFormat: PixelFormat,
                 priority: PriorityHandle) async throws -> (ImageResponse, TimeInterval) {
        let clock = clock
        return try await pool.run(priority: priority) {
            let pixels = try Self.process(input.bitmap, with: processors, pixelFormat: pixelFormat, clock: clock)
            var processed = input
            processed.bitmap = pixels.bitmap
            return (processed, pixels.seconds)
        }
    }

    /// `processors` in order on `bitmap` made premultiplied, the result in `pixelFormat`, timed.
    /// Runs on the decode pool.
    static func process(_ bitmap: Bitmap, with processors: [ImageProcessor], pixelFormat: PixelFormat,
                        clock: @Sendable () -> Date) throws -> ProcessedPixels {
        let start = clock()
        var bitmap = bitmap.premultiplied()
        for processor in processors { bitmap = try processor.process(bitmap) }
        return ProcessedPixels(bitmap: bitmap.converted(to: pixelFormat), seconds: clock().timeIntervalSince(start))
    }

    /// Encodes `bitmap` with `encoder` (a rendition), on the pool.
    func encode(_ bitmap: Bitmap, with encoder: any RenditionEncoding, priority: PriorityHandle) async throws -> Data {
        try await pool.run(priority: priority) { try encoder.encode(bitmap) }
    }

    /// What one decode job did: decoded, or found that its estimated memory does not fit the
    /// decode budget now.
    enum DecodeOutcome: Sendable {
        case decoded(DecodeJobResult)
        case needsMemory(Int)

        func timed(since start: Date, clock: @Sendable () -> Date) -> DecodeOutcome {
            guard case .decoded(var result) = self else { return self }
            result.seconds = clock().timeIntervalSince(start)
            return .decoded(result)
        }

        /// With `info`, the decoded response made from `data` records them as its rendition origin.
        func tagged(_ data: Data, _ info: CacheEntryInfo?) -> DecodeOutcome {
            guard let info, case .decoded(var result) = self else { return self }
            result.response.renditionOrigin = RenditionOrigin(tag: RenditionRecord.tag(of: data), info: info)
            return .decoded(result)
        }

        func result() throws -> DecodeJobResult {
            guard case .decoded(let result) = self else {
                // Only a decode without a reservation reports this, and it is never returned here.
                throw ImagePipelineError.corruptData(format: nil, message: "the decode was not admitted")
            }
            return result
        }
    }

    /// Decodes `data` to the size `key` asks for: one decoding session, whose header gives the
    /// plan (pixel limit, fit/fill, the decoder's target), then pixels. Runs on the decode pool.
    ///
    /// With `admission`, the session's memory estimate (plus the resampled result) must fit
    /// the decode budget: a decode holding a `reserved` admission goes ahead, another takes
    /// the memory if it fits now or returns ``DecodeOutcome/needsMemory(_:)`` to wait for it.
    /// With `placeholder`, the response gets the placeholder hash of the decoded picture, whole
    /// and upright (before the crop of a fill).
    static func decode(_ data: Data, source: ImageSource, key: ImageKey, decoders: DecoderRegistry,
                       limits: Limits, admission: DecodeAdmission?, reserved: Int?, placeholder: Bool) throws -> DecodeOutcome {
        let decoder = try decoders.requireDecoder(for: data)
        return try decoder.withSession(for: data) { session -> DecodeOutcome in
            let info = session.info
            var options = DecodeOptions(appliesOrientation: key.processing.appliesOrientation,
                                        strictness: key.processing.decodingStrictness, limits: limits,
                                        convertsToSRGB: key.processing.convertsToSRGB,
                                        resamplingFilter: key.processing.resamplingFilter)
            options.transform = key.processing.transform
            // A vector picture's limit is checked against the size it renders at, in `decodeChecked`.
            if !info.isVector { try options.checkPixelLimit(info) }
            // The picture as the file's orientation and the requested turn leave it: the plan's
            // target, crop and anchor are computed on it.
            let upright = options.orientedSize(of: info)
            var plan = ResizePlan(source: upright, target: key.targetSize, contentMode: key.contentMode,
                                  anchor: key.cropAnchor, allowsUpscaling: key.processing.allowsUpscaling,
                                  rendersAtAnySize: info.isVector)
            // Straight pixels from the decoder only when nothing resamples them: resampling
            // works on premultiplied ones, and the result is made straight once, at the end.
            // A vector decoder draws `scaledSize` itself: only a crop after it resamples. A trim
            // looks for its border in the whole picture, so a raster one decodes at full size.
            let wanted = key.processing.pixelFormat, trim = key.processing.trim
            let drawn = info.isVector ? plan.scaledSize : upright
            let resamples = trim != nil || plan.scaledSize != drawn || plan.outputSize != drawn
                || plan.crop != PixelRect(upright)
            options.pixelFormat = resamples ? .rgba8Premultiplied : wanted
            options.targetSize = plan.scaledSize == upright || (trim != nil && !info.isVector) ? nil : plan.scaledSize
            options.cutsAfterScaling = plan.crop != PixelRect(upright)
            var admitted = 0
            if let admission, reserved == nil {
                // The resampler's output, unless the decoder's full-size bitmap is the answer,
                // and a trimmed copy.
                // A transform turns the decoder's bitmap into a copy of it (`decodeChecked`).
                let turned = options.transform == .up ? 0 : (options.targetSize ?? drawn).pixelCount * 4
                let bytes = session.estimatedPeakMemory(options) + (resamples ? plan.outputSize.pixelCount * 4 : 0)
                    + (trim != nil ? drawn.pixelCount * 4 : 0) + turned
                guard admission.tryAcquire(bytes) else { return .needsMemory(bytes) }
                admitted = bytes
            }
            defer { if admitted > 0 { admission?.release(admitted) } }
            let decoded = try session.decodeChecked(options)
            var picture = decoded.bitmap
            if let box = trim?.box(in: picture) {
                picture = try picture.cropped(box)
                plan = ResizePlan(source: picture.size, target: key.targetSize, contentMode: key.contentMode,
                                  anchor: key.cropAnchor, allowsUpscaling: key.processing.allowsUpscaling)
            }
            plan = try plan.anchored(key.cropAnchor, in: picture)
            let bitmap = picture.size == plan.outputSize && plan.crop == PixelRect(plan.sourceSize)
                ? picture
                : Resampler.resample(picture.premultiplied(), plan: plan, filter: key.processing.resamplingFilter)
            // Source pixels per output pixel (the crop's, so a fill counts its scale, not its cut).
            // A vector picture is drawn at its size: nothing was averaged away.
            var result = bitmap
            if let sharpening = key.processing.sharpening, !info.isVector,
               sharpening.applies(toReduction: min(plan.crop.width / Double(plan.outputSize.width),
                                                   plan.crop.height / Double(plan.outputSize.height))) {
                result = try sharpening.processor.process(bitmap)
            }
            var response = ImageResponse(bitmap: result.converted(to: wanted), source: source, originalSize: upright,
                                         format: info.format)
            response.issues = decoded.issues
            response.iccProfile = decoded.iccProfile
            if placeholder {
                // The whole picture: the resampled one unless a fill cropped it (then the decoder's).
                response.placeholder = ThumbHash(bitmap: plan.crop == PixelRect(upright) ? bitmap : decoded.bitmap)
            }
            return .decoded(DecodeJobResult(response: response))
        }
    }
}

/// A processed key whose processors a decode job runs after it decoded: the job description's
/// "then these processors".
struct FollowUp: Sendable {
    /// The processed key: its processors and pixel format.
    let key: ImageKey
}

/// What one decode job made: the picture, the seconds the decode took, and the outcome of
/// each follow-up it ran, by processed key.
struct DecodeJobResult: Sendable {
    var response: ImageResponse
    var seconds: TimeInterval = 0
    var processed: [ImageKey: Result<ProcessedPixels, any Error>] = [:]
}

/// Pixels a list of processors made, and the seconds it took.
struct ProcessedPixels: Sendable {
    let bitmap: Bitmap
    let seconds: TimeInterval
}
