#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The decoding stage: an image work's bytes (``FetchStage``) decoded and resampled to its
/// unprocessed key's size on the decode pool (``PoolDecoder``), in the image work's own task
/// (the image stage's table is what shares one decode among every caller and processor list of
/// a key). "Decode, then these processors" is one job: the follow-ups the work's subscribers ask
/// for. Previews of the arriving body are sent as the work's partial values, throttled here
/// (``PreviewThrottle``). Knows only the fetch stage below it.
///
/// Bytes a loader returned reach the disk cache only here, once they decoded: a broken body
/// (a truncated or mislabelled answer from a CDN edge) is never stored, nor bytes that decode
/// to a truncated picture (``ImageContainer/isComplete``) however lenient the request. When new bytes from a
/// revalidation do not decode, the stale copy they were to replace answers instead. They are
/// stored as the original when a subscriber keeps originals or they replace a stored
/// original. A permanent decode failure (undecodable bytes) is remembered for this key only.
final class DecodeStage: Sendable {
    /// Remembered permanent decode failures, by key (``RememberedFailures/decodes``).
    let failures: NegativeCache<ImageKey>
    /// The stage below.
    let fetch: FetchStage
    let decoder: PoolDecoder
    private let configuration: ImagePipeline.Configuration
    private let ledger: ReplacementLedger

    init(failures: NegativeCache<ImageKey>, fetch: FetchStage, decoder: PoolDecoder, ledger: ReplacementLedger,
         configuration: ImagePipeline.Configuration) {
        self.failures = failures
        self.fetch = fetch
        self.decoder = decoder
        self.ledger = ledger
        self.configuration = configuration
    }

    /// The picture of the image work `work` (`resolved`'s key, without processors): its bytes,
    /// with previews of them as they arrive, then decoded with `followUps`' processors in the
    /// same job. `storesOriginal` is asked once they decoded.
    func picture(for resolved: ResolvedRequest, work: StageWork<ImageResponse>, storesOriginal: @escaping @Sendable () -> Bool,
                 followUps: @escaping @Sendable () -> [FollowUp]) async throws -> DecodedPicture {
        try Task.checkCancellation()
        let loaded = try await bytes(for: resolved, work: work)
        try Task.checkCancellation()
        return try await decode(loaded, for: resolved, priority: work.priority, storesOriginal: storesOriginal,
                                followUps: followUps)
    }

    /// The work's bytes from the fetch stage, with previews of the body as it arrives. Never
    /// inlined: a work waiting for its bytes holds only this frame's few locals.
    @inline(never)
    private func bytes(for resolved: ResolvedRequest, work: StageWork<ImageResponse>) async throws -> LoadedData {
        let previews = configuration.previewPolicy.map { PreviewThrottle(policy: $0, priority: work.priority, send: work.partial) }
        // The bytes are all here (or did not come): no preview after this, so none after the final.
        defer { previews?.finish() }
        let bodyGrew = previews.map { previews in
            { @Sendable (body: ArrivingBody) in self.offerPreview(of: body, to: previews, for: resolved.key, work: work) }
        }
        return try await fetch.data(for: resolved, FetchStage.Subscription(
            priority: work.priority.current, demand: (), events: { work.forward($0, partial: bodyGrew) },
            wantsPartials: previews != nil), dependent: work)
    }

    /// A preview of the body that has arrived, when the throttle lets one be made.
    private func offerPreview(of body: ArrivingBody, to previews: PreviewThrottle, for key: ImageKey,
                              work: StageWork<ImageResponse>) {
        let decoder = decoder, events = configuration.eventHandler
        previews.offer(bytes: body.count) { steps in
            await decoder.preview(of: body.bytes, key: key, after: steps, priority: work.priority, events: events)
        }
    }

    /// `loaded` decoded for `resolved`'s key (with `followUps`' processors run in the same
    /// job): stored on disk once they decode (when `storesOriginal` says so, or they replace a
    /// stored copy), a permanent failure remembered unless `remembersFailure` is `false`, a
    /// stale copy answering for new bytes that do not decode. Also the decode of a standalone
    /// rendition's new bytes, which no other work shares (``ImageStage``).
    ///
    /// Never inlined into the work's task: an async function's frame holds every local of its
    /// body, inlined callees' included, for as long as it runs, and the task keeps the largest
    /// frames it ever held. Kept apart, a decode waiting for its bytes (each of many thousand
    /// requests to slow hosts, or queued in the loader) holds the few values above it, not the
    /// tens of kilobytes this part's frame takes.
    @inline(never)
    func decode(_ loaded: LoadedData, for resolved: ResolvedRequest, priority: PriorityHandle,
                storesOriginal: @Sendable () -> Bool, remembersFailure: Bool = true,
                followUps: @escaping @Sendable () -> [FollowUp] = { [] }) async throws -> DecodedPicture {
        let key = resolved.key
        var generation = loaded.generation
        var result: DecodeJobResult
        let origin = configuration.renditionEncoder != nil && configuration.diskCache != nil ? loaded.info : nil
        do {
            // Stored bytes whose entry has a placeholder keep it: no hash is made again.
            let stored = loaded.info?.placeholder
            result = try await decoder.decode(loaded.data, source: loaded.source, key: key, priority: priority, origin: origin,
                                              placeholder: stored == nil, then: followUps)
            result.response.placeholder = result.response.placeholder ?? stored
            if !result.response.isComplete {
                // A lenient decode of bytes that end early: the caller sees what they hold, but
                // they are not a complete answer, so no cache keeps them.
                await discard(loaded, at: resolved.cacheURL)
            } else if let store = loaded.pendingStore, store.replacesStoredBytes || storesOriginal() {
                // Decoded: these bytes are a complete answer and may be kept.
                if store.replacesStoredBytes { ledger.replace(resolved.cacheURL) }
                await store.storeOnce(placeholder: result.response.placeholder)
            }
        } catch let error where !(error is CancellationError) {
            let wrapped = ImagePipelineError.wrap(error, decoding: resolved.fetchURL)
            if case .truncatedData? = wrapped.underlyingError as? ImagePipelineError {
                await discard(loaded, at: resolved.cacheURL)
            } else if let store = loaded.pendingStore {
                await store.abandon()
            }
            guard let stale = loaded.staleFallback else {
                if remembersFailure, wrapped.isPermanent, let until = configuration.failureLifetime() {
                    failures.insert(wrapped, until: until, for: key)
                }
                throw wrapped
            }
            // New bytes from a revalidation that do not decode: keep serving the stored copy.
            do {
                result = try await decoder.decode(stale.data, source: .disk, key: key, priority: priority)
            } catch let error where !(error is CancellationError) {
                throw ImagePipelineError.wrap(error, decoding: resolved.fetchURL)
            }
            generation = stale.generation
            result.response.issues.append(.warning("the revalidated bytes did not decode (\(wrapped)); the stored copy was used"))
        }
        failures.removeValue(for: key)
        configuration.emit(.decoded(key, seconds: result.seconds))
        result.response.downloadedBytes = loaded.downloadedBytes
        result.response.isStale = loaded.isStale
        return DecodedPicture(job: result, generation: generation)
    }

    /// Bytes that end before their picture does are never kept: not stored from `loaded`, and
    /// a copy already in the disk cache (read from it, or kept by a header read of the same
    /// download, ``info(for:)``) is removed, from the shared tier too.
    private func discard(_ loaded: LoadedData, at url: URL) async {
        if let store = loaded.pendingStore { await store.abandon() }
        await configuration.diskCache?.removeData(for: url)
    }

    /// The animation for `resolved`: its bytes from the fetch stage (joining a download in
    /// flight), the header read on the decode pool by a decoder that adopts
    /// ``AnimatedImageDecoding``; frames are decoded when iterated. The bytes reach the disk
    /// cache once the header read.
    func animation(for resolved: ResolvedRequest) async throws -> ImageAnimation {
        let request = resolved.request, key = resolved.key
        let options = {
            var options = configuration.decodeOptions(resamplingFilter: key.processing.resamplingFilter)
            options.transform = key.processing.transform
            return options
        }()
        let decoders = configuration.decoders
        let ((format, animated, info), data) = try await header(of: resolved) { data in
            try Self.readAnimationHeader(data, decoders: decoders, options: options)
        }
        // One window for every frame: a smart anchor is centred (``CropAnchor`` says so).
        // Frames are turned by the transform before they are scaled (``ImageAnimation``).
        let plan = ResizePlan(source: options.transform.uprightSize(of: info.canvasSize), target: key.targetSize, contentMode: key.contentMode,
                              anchor: key.cropAnchor, allowsUpscaling: key.processing.allowsUpscaling)
        return ImageAnimation(format: format, info: info, plan: plan, url: resolved.fetchURL, pixelFormat: key.processing.pixelFormat,
                              data: data, decoder: animated, options: options, admission: decoder.admission, priority: request.priority)
    }

    /// What the header of `resolved`'s picture says (format, stored size, orientation, alpha,
    /// frame count), without decoding its pixels: its bytes from the fetch stage (joining a
    /// download in flight), the header parsed on the decode pool. The bytes reach the disk
    /// cache once the header read, as for an animation.
    func info(for resolved: ResolvedRequest) async throws -> ImageInfo {
        let decoders = configuration.decoders
        return try await header(of: resolved) { data in
            try decoders.requireDecoder(for: data).withSession(for: data) { $0.info }
        }.header
    }

    /// `resolved`'s bytes from the fetch stage (joining a download in flight) and what `read`
    /// makes of their header, its errors wrapped with the URL; the bytes reach the disk cache
    /// once it succeeded.
    ///
    /// The header read runs on the decode pool: a codec may walk a hostile container for
    /// seconds. It takes one of the pool's ``ImagePipeline/Configuration/maxConcurrentDecodes``
    /// slots while it runs, as a decode does, but no decode memory (an animation's canvases are
    /// admitted by ``ImageAnimation/frames()`` when they are decoded).
    private func header<Header: Sendable>(of resolved: ResolvedRequest,
                                          _ read: @escaping @Sendable (Data) throws -> Header) async throws -> (header: Header, data: Data) {
        let priority = resolved.request.priority
        let loaded = try await fetch.data(for: resolved, FetchStage.Subscription(priority: priority, demand: ()))
        let header: Header
        do {
            let data = loaded.data
            header = try await decoder.pool.run(priority: PriorityHandle(priority)) { try read(data) }
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw ImagePipelineError.wrap(error, decoding: resolved.fetchURL)
        }
        await loaded.pendingStore?.storeOnce()
        return (header, loaded.data)
    }

    /// The animation header of `data` from the decoder `decoders` choose, checked against
    /// `options`' limits. Blocks (the codec parses its container): runs on the decode pool.
    private static func readAnimationHeader(
        _ data: Data, decoders: DecoderRegistry, options: DecodeOptions
    ) throws -> (ImageFormat, any AnimatedImageDecoding, AnimationInfo) {
        let decoder = try decoders.requireDecoder(for: data)
        let format = decoders.format(of: data) ?? ImageFormat("unknown", mimeType: nil, fileExtension: nil)
        guard let animated = decoder as? any AnimatedImageDecoding else {
            throw ImagePipelineError.unsupported(format: format, message: "its decoder gives still pictures only")
        }
        let info = try animated.makeAnimationDecoder(for: data, options: options).animationInfo
        // The codec checked its header; checked again here for one that does not.
        try options.checkPixelLimit(ImageInfo(format: format, size: info.canvasSize))
        try options.checkAnimationLimits(canvas: info.canvasSize, frameCount: info.frameCount)
        try options.checkAnimationCanvases(info, bytes: animated.estimatedAnimationMemory(info))
        return (format, animated, info)
    }
}

/// What an image work hands its subscribers: the picture, what its decode job's follow-ups
/// made (for the processed works subscribed to it), and when the bytes it was decoded from
/// were read.
struct DecodedPicture: Sendable {
    /// The decode job's result: the picture and the follow-ups' outcomes.
    var job: DecodeJobResult
    /// The ledger's count when these stored bytes were read (``ReplacementLedger``), `nil` for
    /// bytes fresh from the origin.
    var generation: UInt64?

    init(job: DecodeJobResult, generation: UInt64?) {
        self.job = job
        self.generation = generation
    }

    /// A picture made without a decode job here (from memory, a rendition, processors).
    init(_ response: ImageResponse) {
        self.init(job: DecodeJobResult(response: response), generation: nil)
    }

    var response: ImageResponse { job.response }
}
