import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Wraps an origin loader so that, across every pipeline sharing one ``RedisCache``, one
/// origin fetch happens per URL at a time.
///
/// Before an unconditional load it takes a short lease (`SET <prefix>l:<url> <token> NX PX`).
/// The holder fetches from the origin; the pipeline stores the bytes in the shared tier once
/// they decoded, which gives the lease back (bytes that do not decode are never published, and
/// give it back too). The pipeline's data cache must therefore write to the same tier: a
/// ``TieredDataCache`` with this ``RedisCache`` as its shared level (otherwise the lease just
/// runs out after ``leaseDuration``). The others poll the shared tier until the entry appears
/// (answering with it, as if the origin had sent it) or the lease is gone or ``leaseDuration``
/// passed, and then fetch themselves. Conditional loads (revalidations) go straight to the origin. When Redis cannot
/// answer, every caller fetches itself: the tier never fails a request.
public struct SharedTierLoader: DataLoading {
    /// The origin loader.
    public let base: any DataLoading
    /// The shared tier the lease and the result live in.
    public let tier: RedisCache
    /// How long a lease lasts, and the longest another pipeline waits for its result. Default 5 s.
    public let leaseDuration: Duration
    /// How often a waiting pipeline asks for the result. Default 10 ms.
    public let pollInterval: Duration

    /// Creates the wrapper.
    public init(base: any DataLoading, tier: RedisCache, leaseDuration: Duration = .seconds(5),
                pollInterval: Duration = .milliseconds(10)) {
        self.base = base
        self.tier = tier
        self.leaseDuration = leaseDuration
        self.pollInterval = pollInterval
    }

    /// The base loader's schemes.
    public var schemes: Set<String> { base.schemes }

    /// The base loader's answer: a URL it refuses is refused here too.
    public func checkAllowed(_ url: URL) throws { try base.checkAllowed(url) }

    /// Loads through the lease as described on the type.
    public func load(_ request: DataLoadRequest) async throws -> DataLoadResult {
        // A URL the base refuses never takes a lease nor gets another pipeline's answer.
        try base.checkAllowed(request.url)
        guard request.validator == nil else { return try await base.load(request) }
        let url = request.cacheURL ?? request.url  // the pipeline's cache identity (a cache key), else the URL
        let token = UUID().uuidString
        if await tier.acquireLease(for: url, token: token, duration: leaseDuration) {
            // The previous holder may have published and released between the caller's cache
            // lookup and this lease: look once more before going to the origin.
            if let entry = await tier.cachedData(for: url) {
                await tier.releaseLease(for: url, token: token)
                return .data(entry.data, Self.metadata(entry))
            }
            return try await fetchAndPublish(request, token: token)
        }
        let deadline = ContinuousClock.now.advanced(by: leaseDuration)
        while ContinuousClock.now < deadline {
            try await Task.sleep(for: pollInterval)
            let (entry, leased) = await tier.entryAndLease(for: url)  // one round trip
            if let entry {
                return .data(entry.data, Self.metadata(entry))
            }
            guard leased else {
                // Released: the holder either published between the look above and this check
                // (look once more) or gave up (fetch ourselves).
                if let entry = await tier.cachedData(for: url) { return .data(entry.data, Self.metadata(entry)) }
                break
            }
        }
        return try await fetchAndPublish(request, token: nil)
    }

    /// Fetches from the origin. The lease (when `token` holds one) stays taken after a
    /// successful load: the pipeline stores the bytes in the shared tier only once they decoded
    /// (``TieredDataCache`` writes to Redis, which gives the lease back), or abandons them
    /// (which gives it back too). A failed load or a `no-store` answer gives it back at once.
    private func fetchAndPublish(_ request: DataLoadRequest, token: String?) async throws -> DataLoadResult {
        let url = request.cacheURL ?? request.url
        let result: DataLoadResult
        do {
            result = try await base.load(request)
        } catch {
            if let token { await tier.releaseLease(for: url, token: token) }
            throw error
        }
        if let token, case .data(_, let metadata) = result, metadata.noStore {
            await tier.releaseLease(for: url, token: token)
        }
        return result
    }

    /// The metadata an origin response with this entry's validators and freshness would carry.
    static func metadata(_ entry: CachedData) -> ResponseMetadata {
        ResponseMetadata(etag: entry.info.etag, lastModified: entry.info.lastModified,
                         contentLength: Int64(entry.data.count),
                         freshFor: entry.info.freshUntil.map { $0.timeIntervalSinceNow }, origin: .network)
    }
}
