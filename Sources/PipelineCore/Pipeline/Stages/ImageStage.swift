import Foundation

/// The image stage, the top one (Nuke's `TaskLoadImage`): a key's picture, processed and at
/// its size, one work per key however many callers wait. It owns what is cached of pictures:
/// the memory insert (only of results whose bytes were not replaced meanwhile,
/// ``ReplacementLedger``), the renditions (``RenditionCache``) and the remembered processor
/// failures. Its stream: the download's progress and previews (partial pictures, through the
/// key's processors). Knows only the decode stage below it.
///
/// A work reads, in order: the memory cache (a work that started after another finished is
/// answered from memory, not done twice), its stored rendition when the request's
/// ``DiskCachePolicy`` makes one, then the decode of its key. A key with processors asks for
/// the unprocessed picture (from memory, else the decode it shares with every other processor
/// list of the picture, which runs the processors in its own job when it can) and keeps both.
final class ImageStage: Sendable {
    typealias Subscription = StageSubscription<ImageResponse, Void>

    /// Image works in flight, by key.
    let works: StageTable<ImageKey, ImageResponse, ImageResponse, Void>
    /// Remembered processor failures, by key (``RememberedFailures/processing``): processors
    /// are deterministic (equal identifiers, equal pixels), so a failure repeats for the key
    /// unless the error says it is temporary.
    let failures: NegativeCache<ImageKey>
    /// The stage below.
    let decoding: DecodeStage
    let renditions: RenditionCache
    let memoryCache: MemoryCache<ImageKey, ImageContainer>
    let ledger: ReplacementLedger
    private let configuration: ImagePipeline.Configuration

    init(tableID: Int, failures: NegativeCache<ImageKey>, decoding: DecodeStage, renditions: RenditionCache,
         ledger: ReplacementLedger, configuration: ImagePipeline.Configuration) {
        works = StageTable(id: tableID)
        self.failures = failures
        self.decoding = decoding
        self.renditions = renditions
        self.ledger = ledger
        self.memoryCache = configuration.memoryCache
        self.configuration = configuration
    }

    /// The picture for `resolved`: joins its key's work or starts one, and waits as
    /// `subscription` says, as the subscriber `waiterID`; `joined` as in
    /// ``StageTable/value(for:cachePolicy:subscription:waiterID:dependent:joined:perform:)``.
    func response(for resolved: ResolvedRequest, _ subscription: Subscription, waiterID: UInt64,
                  joined: @escaping (WaiterToken, Bool) -> ImagePriority?) async throws -> ImageResponse {
        try await works.value(for: resolved.key, cachePolicy: resolved.request.cachePolicy, subscription: subscription,
                              waiterID: waiterID, joined: joined) { [self] work in
            try await perform(resolved, work: work)
        }
    }

    /// A work's task: a memory hit, else one of the paths below, each a function of its own.
    ///
    /// Why apart: the frame of an async function holds every local of its body for as long as
    /// it runs, and a task keeps the largest frames it ever held, so a work waiting for its
    /// decode (each of many thousand requests to slow hosts) holds only the locals of the path
    /// it takes.
    private func perform(_ resolved: ResolvedRequest, work: StageWork<ImageResponse>) async throws -> ImageResponse {
        try Task.checkCancellation()
        if resolved.readsCaches, let container = memoryCache.value(for: resolved.key) {
            return ImageResponse(container: container, source: .memory)
        }
        let policy = resolved.request.diskCachePolicy ?? configuration.diskCachePolicy
        let made = Made(store: nil, storesOriginal: policy.storesOriginal(for: resolved.key))
        if policy.makesRendition(for: resolved.key) { return try await withRendition(resolved, made, work: work) }
        if resolved.key.processors.isEmpty { return try await decoded(resolved, made, work: work) }
        return try await processed(resolved, made, generation: ledger.current, work: work)
    }

    /// A key without processors: its decode, kept.
    @inline(never)
    private func decoded(_ resolved: ResolvedRequest, _ made: Made, work: StageWork<ImageResponse>) async throws -> ImageResponse {
        let decoded = try await decoding.picture(for: resolved, decodeSubscription(work, made, followUp: nil), dependent: work)
        return await keep(decoded.response, made, madeFrom: decoded.generation, for: resolved.key, priority: work.priority)
    }

    /// A key with processors: the unprocessed picture from memory, else from the decode it
    /// shares (whose job runs the processors when it can); both kept.
    @inline(never)
    private func processed(_ resolved: ResolvedRequest, _ made: Made, generation: UInt64,
                           work: StageWork<ImageResponse>) async throws -> ImageResponse {
        let key = resolved.key, base = resolved.unprocessed
        if resolved.readsCaches, let container = memoryCache.value(for: base.key) {
            let input = ImageResponse(container: container, source: .processedFromMemory)
            return try await process(input, made, followed: nil, generation: generation, for: resolved, work: work)
        }
        // Bytes that did not decode for this base are remembered: no new download for them.
        if resolved.readsCaches, let error = decoding.failures.error(for: base.key, now: configuration.now()) { throw error }
        let decoded = try await decoding.picture(for: base, decodeSubscription(work, made, followUp: FollowUp(key: key)),
                                                 dependent: work)
        keep(decoded.response, for: base.key, madeFrom: decoded.generation)
        return try await process(decoded.response, made, followed: decoded.job.processed[key], generation: generation,
                                 for: resolved, work: work)
    }

    /// A work that makes a rendition: its stored rendition answers, or a standalone one's new
    /// bytes are decoded, or the work goes the plain way and stores its result.
    @inline(never)
    private func withRendition(_ resolved: ResolvedRequest, _ made: Made, work: StageWork<ImageResponse>) async throws -> ImageResponse {
        let generation = ledger.current
        let lookup = try await renditions.lookUp(resolved, priority: work.priority)
        if let (answer, read) = lookup.answer {
            keep(answer, for: resolved.key, madeFrom: read)
            return answer
        }
        let made = Made(store: lookup.store, storesOriginal: made.storesOriginal)
        if let (loaded, _) = lookup.renewed { return try await renewed(loaded, from: lookup, made, for: resolved, work: work) }
        if resolved.key.processors.isEmpty { return try await decoded(resolved, made, work: work) }
        return try await processed(resolved, made, generation: generation, work: work)
    }

    /// What a work makes besides its picture: its rendition (where it is kept, if it makes
    /// one) and the original (when its policy keeps originals).
    private struct Made {
        let store: RenditionStore?
        let storesOriginal: Bool
    }

    /// A work's subscription to its decode: its priority, whether it keeps the original, the
    /// processors the decode's job may run for it; progress forwarded, and previews (through
    /// the key's processors, throttled) as its own partial values.
    private func decodeSubscription(_ work: StageWork<ImageResponse>, _ made: Made,
                                    followUp: FollowUp?) -> DecodeStage.Subscription {
        var forwardPreview: (@Sendable (ImageResponse) -> Void)? = configuration.previewPolicy == nil ? nil : work.partial
        if let followUp, let policy = configuration.previewPolicy {
            let previews = PreviewThrottle(policy: policy, priority: work.priority, send: work.partial)
            let decoder = decoding.decoder, key = followUp.key
            forwardPreview = { preview in
                previews.offer(bytes: nil) { steps in
                    guard let (processed, _) = try? await decoder.process(preview, with: key.processors,
                                                                         pixelFormat: key.processing.pixelFormat,
                                                                         priority: work.priority)
                    else { return nil }
                    return (processed, steps + 1)
                }
            }
        }
        let previews = forwardPreview
        return DecodeStage.Subscription(priority: work.priority.current,
                                        demand: DecodeDemand(storesOriginal: made.storesOriginal, followUp: followUp),
                                        events: { work.forward($0, partial: previews) },
                                        wantsPartials: previews != nil)
    }

    /// A standalone rendition's revalidation brought new bytes: they are decoded here (a
    /// stale rendition answering if they do not decode), then processed.
    ///
    /// Never inlined, as the other paths (``perform(_:work:)``).
    @inline(never)
    private func renewed(_ loaded: LoadedData, from lookup: RenditionCache.Lookup, _ made: Made, for resolved: ResolvedRequest,
                         work: StageWork<ImageResponse>) async throws -> ImageResponse {
        let key = resolved.key
        let input = key.processors.isEmpty ? resolved : resolved.unprocessed
        let decoded: DecodedPicture
        do {
            decoded = try await decoding.decode(loaded, for: input, priority: work.priority, storesOriginal: { made.storesOriginal },
                                                remembersFailure: false)
        } catch let error as ImagePipelineError {
            guard let answer = await renditions.fallBack(from: lookup, after: error, key: key, priority: work.priority)
            else { throw error }
            return answer
        }
        // New bytes replace those the rendition (and any decoded copy) was made from.
        ledger.replace(resolved.cacheURL)
        guard !key.processors.isEmpty else {
            return await keep(decoded.response, made, madeFrom: nil, for: key, priority: work.priority)
        }
        // Read after this work's own replacement: a purge from now on still keeps the
        // processed result out of memory and off the disk.
        return try await process(decoded.response, made, followed: nil, generation: ledger.current, for: resolved, work: work)
    }

    /// The processors run on `input` (or their outcome taken from the decode job that ran
    /// them, `followed`), a failure remembered, the result kept in memory and as a rendition.
    @inline(never)
    private func process(_ input: ImageResponse, _ made: Made, followed: Result<ProcessedPixels, any Error>?,
                         generation: UInt64, for resolved: ResolvedRequest,
                         work: StageWork<ImageResponse>) async throws -> ImageResponse {
        let key = resolved.key
        var (response, seconds) = (input, 0.0)
        do {
            if let followed {
                let pixels = try followed.get()
                (response.bitmap, seconds) = (pixels.bitmap, pixels.seconds)
            } else {
                (response, seconds) = try await decoding.decoder.process(input, with: key.processors,
                                                                         pixelFormat: key.processing.pixelFormat,
                                                                         priority: work.priority)
            }
        } catch let error where !(error is CancellationError) {
            let wrapped = ImagePipelineError.wrap(error, processing: resolved.fetchURL)
            if (error as? any PipelineFailure)?.isPermanent ?? true, let until = configuration.failureLifetime() {
                failures.insert(wrapped, until: until, for: key)
            }
            throw wrapped
        }
        failures.removeValue(for: key)
        configuration.emit(.processed(key, seconds: seconds))
        return await keep(response, made, madeFrom: generation, for: key, priority: work.priority)
    }

    /// Keeps `response` in memory under `key` and, when it was kept and the work makes one, as
    /// its rendition; returns it.
    private func keep(_ response: ImageResponse, _ made: Made, madeFrom generation: UInt64?, for key: ImageKey,
                      priority: PriorityHandle) async -> ImageResponse {
        if keep(response, for: key, madeFrom: generation), let store = made.store {
            // Bytes fresh from the origin are the newest; from here on a purge still stops the rendition.
            await renditions.store(response, in: store, key: key, priority: priority, madeFrom: generation ?? ledger.current,
                                   standalone: !made.storesOriginal)
        }
        return response
    }

    /// Puts `response`'s picture in the memory cache under `key` unless the bytes it was made
    /// from (read at `generation`, ``ReplacementLedger``) were replaced since; `true` when it
    /// did. The cost counts what the entry holds besides pixels (its URL, strings and
    /// overhead: ``MemoryCost/of(_:for:)``), so the cache's budget bounds the memory for tiny
    /// pictures with long URLs too.
    @discardableResult
    func keep(_ response: ImageResponse, for key: ImageKey, madeFrom generation: UInt64?) -> Bool {
        guard ledger.isCurrent(key.cacheURL, since: generation) else { return false }
        memoryCache.insert(response.container, for: key, cost: MemoryCost.of(response.container, for: key))
        return true
    }

    /// The placeholder hash of `resolved`'s picture, without loading or decoding it: from the
    /// memory cache, else from its disk entries (``RenditionCache/placeholder(for:)``).
    func placeholder(for resolved: ResolvedRequest) async -> ThumbHash? {
        if let hash = memoryCache.value(for: resolved.key)?.placeholder { return hash }
        return await renditions.placeholder(for: resolved)
    }
}
