#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The image stage, the top one (Nuke's `TaskLoadImage`): a key's picture, processed and at
/// its size, one work per key however many callers wait. It owns what is cached of pictures:
/// the memory insert (only of results whose bytes were not replaced meanwhile,
/// ``ReplacementLedger``), the renditions (``RenditionCache``) and the remembered processor
/// failures. Its stream: the download's progress and previews (partial pictures, through the
/// key's processors). Below it: the decode stage, which decodes a work's bytes in the work's
/// own task.
///
/// A work reads, in order: the memory cache (a work that started after another finished is
/// answered from memory, not done twice), its stored rendition when the request's
/// ``DiskCachePolicy`` makes one, then its bytes, decoded. A key with processors subscribes to
/// the work of its unprocessed key (which every processor list of the picture shares, as Nuke's
/// processed `TaskLoadImage` depends on the unprocessed one), asking its decode job to run the
/// processors straight after decoding (``ImageDemand/followUp``).
final class ImageStage: Sendable {
    typealias Subscription = StageSubscription<ImageResponse, ImageDemand>

    /// Image works in flight, by key.
    let works: StageTable<ImageKey, DecodedPicture, ImageResponse, ImageDemand>
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
            try await perform(resolved, asBase: false, work: work)
        }.response
    }

    /// A work's task: a memory hit, else one of the paths below, each a function of its own.
    /// `asBase`: the unprocessed work a processed one started, which makes no rendition of its
    /// own and keeps the original as its subscribers ask.
    ///
    /// Why apart: the frame of an async function holds every local of its body for as long as
    /// it runs, and a task keeps the largest frames it ever held, so a work waiting for its
    /// bytes (each of many thousand requests to slow hosts) holds only the locals of the path
    /// it takes.
    private func perform(_ resolved: ResolvedRequest, asBase: Bool, work: StageWork<ImageResponse>) async throws -> DecodedPicture {
        try Task.checkCancellation()
        if resolved.readsCaches, let container = memoryCache.value(for: resolved.key) {
            return DecodedPicture(ImageResponse(container: container, source: .memory))
        }
        let policy = resolved.diskCachePolicy(in: configuration)
        let storesOriginal = policy.storesOriginal(for: resolved.key)
        if !asBase, policy.makesRendition(for: resolved.key) {
            return try await withRendition(resolved, storesOriginal: storesOriginal, work: work)
        }
        if resolved.key.processors.isEmpty { return try await decoded(resolved, store: nil, work: work) }
        return try await processed(resolved, store: nil, storesOriginal: storesOriginal, generation: ledger.current, work: work)
    }

    /// A key without processors: its bytes decoded (with the follow-ups its subscribers ask
    /// for), kept.
    @inline(never)
    private func decoded(_ resolved: ResolvedRequest, store: RenditionStore?, work: StageWork<ImageResponse>) async throws -> DecodedPicture {
        let works = works
        let storesOriginal: @Sendable () -> Bool = { works.demands(of: work).contains { $0.demand.storesOriginal } }
        // The follow-ups of the subscribers at the job's priority when it runs: a prefetch's
        // processors do not delay the picture a visible subscriber of the same work waits for.
        let followUps: @Sendable () -> [FollowUp] = {
            let current = work.priority.current
            return works.demands(of: work).filter { $0.priority >= current }.compactMap(\.demand.followUp)
        }
        let decoded = try await decoding.picture(for: resolved, work: work, storesOriginal: storesOriginal, followUps: followUps)
        _ = await keep(decoded.response, store: store, standalone: !storesOriginal(), madeFrom: decoded.generation,
                       for: resolved.key, priority: work.priority)
        return decoded
    }

    /// A key with processors: the unprocessed picture from memory, else from the work of the
    /// unprocessed key (whose job runs the processors when it can), then processed and kept.
    @inline(never)
    private func processed(_ resolved: ResolvedRequest, store: RenditionStore?, storesOriginal: Bool, generation: UInt64,
                           work: StageWork<ImageResponse>) async throws -> DecodedPicture {
        let key = resolved.key, base = resolved.unprocessed
        if resolved.readsCaches, let container = memoryCache.value(for: base.key) {
            let input = ImageResponse(container: container, source: .processedFromMemory)
            return try await process(input, store: store, standalone: !storesOriginal, followed: nil, generation: generation,
                                     for: resolved, work: work)
        }
        // Bytes that did not decode for this base are remembered: no new download for them.
        if resolved.readsCaches, let error = decoding.failures.error(for: base.key, now: configuration.now()) { throw error }
        let subscription = Subscription(priority: work.priority.current,
                                        demand: ImageDemand(storesOriginal: storesOriginal, followUp: FollowUp(key: key)),
                                        events: { work.forward($0, partial: self.processedPreviews(for: key, work: work)) },
                                        wantsPartials: configuration.previewPolicy != nil)
        let picture = try await works.value(for: base.key, cachePolicy: base.request.cachePolicy, subscription: subscription,
                                            dependent: work) { [self] baseWork in
            try await perform(base, asBase: true, work: baseWork)
        }
        return try await process(picture.response, store: store, standalone: !storesOriginal,
                                 followed: picture.job.processed[key], generation: generation, for: resolved, work: work)
    }

    /// Where the previews of the unprocessed work go for a processed one: through its
    /// processors, one at a time (``PreviewThrottle``), as its own partial values; `nil`
    /// without previews.
    private func processedPreviews(for key: ImageKey, work: StageWork<ImageResponse>) -> (@Sendable (ImageResponse) -> Void)? {
        guard let policy = configuration.previewPolicy else { return nil }
        let previews = PreviewThrottle(policy: policy, priority: work.priority, send: work.partial)
        let decoder = decoding.decoder
        return { preview in
            previews.offer(bytes: nil) { steps in
                guard let (processed, _) = try? await decoder.process(preview, with: key.processors,
                                                                     pixelFormat: key.processing.pixelFormat,
                                                                     priority: work.priority)
                else { return nil }
                return (processed, steps + 1)
            }
        }
    }

    /// A work that makes a rendition: its stored rendition answers, or a standalone one's new
    /// bytes are decoded, or the work goes the plain way and stores its result.
    @inline(never)
    private func withRendition(_ resolved: ResolvedRequest, storesOriginal: Bool,
                               work: StageWork<ImageResponse>) async throws -> DecodedPicture {
        let generation = ledger.current
        let lookup = try await renditions.lookUp(resolved, priority: work.priority)
        if let (answer, read) = lookup.answer {
            keep(answer, for: resolved.key, madeFrom: read)
            return DecodedPicture(answer)
        }
        if let (loaded, _) = lookup.renewed {
            return try await renewed(loaded, from: lookup, storesOriginal: storesOriginal, for: resolved, work: work)
        }
        if resolved.key.processors.isEmpty { return try await decoded(resolved, store: lookup.store, work: work) }
        return try await processed(resolved, store: lookup.store, storesOriginal: storesOriginal, generation: generation, work: work)
    }

    /// A standalone rendition's revalidation brought new bytes: they are decoded here (a
    /// stale rendition answering if they do not decode), then processed.
    ///
    /// Never inlined, as the other paths (``perform(_:work:)``).
    @inline(never)
    private func renewed(_ loaded: LoadedData, from lookup: RenditionCache.Lookup, storesOriginal: Bool,
                         for resolved: ResolvedRequest, work: StageWork<ImageResponse>) async throws -> DecodedPicture {
        let key = resolved.key
        let input = key.processors.isEmpty ? resolved : resolved.unprocessed
        let decoded: DecodedPicture
        do {
            decoded = try await decoding.decode(loaded, for: input, priority: work.priority, storesOriginal: { storesOriginal },
                                                remembersFailure: false)
        } catch let error as ImagePipelineError {
            guard let answer = await renditions.fallBack(from: lookup, after: error, key: key, priority: work.priority)
            else { throw error }
            return DecodedPicture(answer)
        }
        // New bytes replace those the rendition (and any decoded copy) was made from.
        ledger.replace(resolved.cacheURL)
        guard !key.processors.isEmpty else {
            return DecodedPicture(await keep(decoded.response, store: lookup.store, standalone: !storesOriginal, madeFrom: nil,
                                             for: key, priority: work.priority))
        }
        // Read after this work's own replacement: a purge from now on still keeps the
        // processed result out of memory and off the disk.
        return try await process(decoded.response, store: lookup.store, standalone: !storesOriginal, followed: nil,
                                 generation: ledger.current, for: resolved, work: work)
    }

    /// The processors run on `input` (or their outcome taken from the decode job that ran
    /// them, `followed`), a failure remembered, the result kept in memory and as a rendition.
    @inline(never)
    private func process(_ input: ImageResponse, store: RenditionStore?, standalone: Bool,
                         followed: Result<ProcessedPixels, any Error>?,
                         generation: UInt64, for resolved: ResolvedRequest,
                         work: StageWork<ImageResponse>) async throws -> DecodedPicture {
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
        return DecodedPicture(await keep(response, store: store, standalone: standalone, madeFrom: generation, for: key,
                                         priority: work.priority))
    }

    /// Keeps `response` in memory under `key` and, when it was kept and the work makes one, as
    /// its rendition (`store`; `standalone` when the work keeps no original); returns it.
    private func keep(_ response: ImageResponse, store: RenditionStore?, standalone: Bool, madeFrom generation: UInt64?,
                      for key: ImageKey, priority: PriorityHandle) async -> ImageResponse {
        if keep(response, for: key, madeFrom: generation), let store {
            // Bytes fresh from the origin are the newest; from here on a purge still stops the rendition.
            await renditions.store(response, in: store, key: key, priority: priority, madeFrom: generation ?? ledger.current,
                                   standalone: standalone)
        }
        return response
    }

    /// Puts `response`'s picture in the memory cache under `key` unless it is not complete
    /// (``ImageContainer/isComplete``) or the bytes it was made from (read at `generation`,
    /// ``ReplacementLedger``) were replaced since; `true` when it did. The cost counts what the entry holds besides pixels (its URL, strings and
    /// overhead: ``MemoryCost/of(_:for:)``), so the cache's budget bounds the memory for tiny
    /// pictures with long URLs too.
    @discardableResult
    func keep(_ response: ImageResponse, for key: ImageKey, madeFrom generation: UInt64?) -> Bool {
        // A truncated picture (a lenient request's) answers its callers only: neither the memory
        // cache nor a rendition keeps it as if it were the whole picture.
        guard response.isComplete, ledger.isCurrent(key.cacheURL, since: generation) else { return false }
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

/// What a subscriber asks of an image work beyond its picture.
struct ImageDemand: Sendable {
    /// Keep the loaded bytes as the original on disk once they decode (``DiskCachePolicy``).
    var storesOriginal: Bool
    /// Processors for the work's decode job to run straight after decoding (a processed work
    /// subscribed to its unprocessed one).
    var followUp: FollowUp?
}
