#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// A request resolved once, at the pipeline's door: the URL that is downloaded and the
/// identity the caches know it by, named apart, and the memory key. Every stage below takes
/// this value; none runs the URL builder again.
struct ResolvedRequest: Sendable {
    /// What the caller asked for.
    let request: ImageRequest
    /// The URL downloaded (the URL builder's pick, e.g. a CDN width bucket): what loaders get
    /// and errors name, and what the not-found memory is kept by.
    let fetchURL: URL
    /// The fetch URL's identity in the caches (``CacheIdentity``): the disk entry, the
    /// download table and the memory key are keyed by it.
    let cacheURL: URL
    /// The memory key.
    let key: ImageKey

    /// `asked` resolved by `configuration`; with a `resolver` (a pipeline whose resolution is a
    /// function of the request alone), taken from or kept in `asked`'s `ResolutionMemo`.
    init(_ asked: ImageRequest, configuration: ImagePipeline.Configuration, resolver: ResolutionMemo.Resolver?) {
        var request = asked
        // A stricter configuration makes the request as strict before its key is made, so the key
        // (and every stage) sees the strictness that applies. Only when it changes something:
        // a change gives the copy a memo of its own.
        if configuration.decodingStrictness > request.processing.decodingStrictness {
            request.processing.decodingStrictness = configuration.decodingStrictness
        }
        self.request = request
        if let resolver, let known = asked.resolutionMemo.entry(for: resolver) {
            fetchURL = known.fetchURL
            cacheURL = known.key.cacheURL
            key = known.key
            return
        }
        fetchURL = configuration.urlBuilder.fetchURL(for: request)
        cacheURL = CacheIdentity.url(for: request, fetchURL: fetchURL, configuration: configuration)
        key = ImageKey(request: request, cacheURL: cacheURL)
        if let resolver { asked.resolutionMemo.store(.init(resolver: resolver, fetchURL: fetchURL, key: key)) }
    }

    private init(request: ImageRequest, fetchURL: URL, cacheURL: URL, key: ImageKey) {
        self.request = request
        self.fetchURL = fetchURL
        self.cacheURL = cacheURL
        self.key = key
    }

    /// The unprocessed decode a processed request shares with every other processor list of
    /// its picture: no processors, premultiplied pixels (processors work on those; a straight
    /// request makes its processed result straight once). Same fetch URL and identity.
    var unprocessed: ResolvedRequest {
        var request = request
        request.processors = []
        request.processing.pixelFormat = .rgba8Premultiplied
        var key = key.unprocessed
        key.processing.pixelFormat = .rgba8Premultiplied
        return ResolvedRequest(request: request, fetchURL: fetchURL, cacheURL: cacheURL, key: key)
    }

    /// Whether the request may answer from the caches (every policy but `reloadIgnoringCaches`).
    var readsCaches: Bool { request.cachePolicy != .reloadIgnoringCaches }

    /// What the disk cache keeps for the request: its own policy, else the configuration's.
    func diskCachePolicy(in configuration: ImagePipeline.Configuration) -> DiskCachePolicy {
        request.diskCachePolicy ?? configuration.diskCachePolicy
    }

    /// Whether the request may not load (`returnCacheDataDontLoad`).
    var cacheOnly: Bool { request.cachePolicy == .returnCacheDataDontLoad }

    /// A loader's `DataLoadRequest` for the fetch URL: the cache identity goes along only when
    /// it differs (a signed URL's loader keys its own coordination by it).
    func loadRequest(priority: PriorityHandle, validator: CacheValidator? = nil,
                     progress: (@Sendable (Int64, Int64?) -> Void)? = nil,
                     didReceiveData: (@Sendable (Data, Int64) -> Void)? = nil) -> DataLoadRequest {
        DataLoadRequest(url: fetchURL, priority: priority, validator: validator, headers: request.headers,
                        progress: progress, cacheURL: cacheURL == fetchURL ? nil : cacheURL,
                        didReceiveData: didReceiveData)
    }
}

/// A request value's resolution by a pipeline (its fetch URL and memory key), kept with the
/// value: a cell asks ``ImagePipeline/cachedImage(for:)`` and then ``ImagePipeline/image(for:)``
/// with one request, a grid asks again for every cell scrolled back into view, and building the
/// fetch URL (the width bucket's query item, then parsing the text as a URL) costs several times
/// the memory cache's own hit. Nuke keeps a request's image id in its request's storage for the
/// same reason.
///
/// Copies of a request share one memo until one of them changes: every stored property of
/// ``ImageRequest`` resets it when set, which gives the changed value a memo of its own (or
/// empties the memo when the value was its only holder), so an entry always describes the value
/// that reaches it. A memo holds the entry of the last pipeline that resolved the value, marked
/// with that pipeline's `Resolver`. Only a pipeline whose resolution is a function of the
/// request alone has one (`resolver(for:)`).
///
/// Compared and hashed as nothing: ``ImageRequest``'s synthesised `Hashable` stays that of the
/// properties it is derived from.
struct ResolutionMemo: Hashable, Sendable {
    /// One pipeline's mark on the entries it made. An entry holds it, so its identity is not
    /// reused by a later pipeline while the entry lives.
    final class Resolver: Sendable {}

    /// A resolution: the fetch URL and the memory key (whose ``ImageKey/cacheURL`` is the cache
    /// identity). A class, so reading it out of the lock is one retain: a struct holding URLs
    /// is copied through Foundation's resilient value witnesses, several times the cost.
    final class Entry: Sendable {
        let resolver: Resolver
        let fetchURL: URL
        let key: ImageKey

        init(resolver: Resolver, fetchURL: URL, key: ImageKey) {
            self.resolver = resolver
            self.fetchURL = fetchURL
            self.key = key
        }
    }

    /// The storage copies share; the lock is for a UI thread and the pipeline's callers resolving
    /// copies of one value at once.
    private final class Storage: Sendable {
        let entry = Mutex<Entry?>(nil)
    }

    private var storage = Storage()

    /// The mark for a pipeline built from `configuration` when its resolution depends on the
    /// request alone: its URL builder is one of this module's value types, and there is no
    /// ``ImagePipeline/Configuration/cacheKey`` closure (documented to run on every lookup).
    /// `nil` otherwise: a custom builder may answer differently from one call to the next.
    static func resolver(for configuration: ImagePipeline.Configuration) -> Resolver? {
        let builder = configuration.urlBuilder
        guard configuration.cacheKey == nil, builder is WidthBucketURLBuilder || builder is IdentityURLBuilder else {
            return nil
        }
        return Resolver()
    }

    /// The entry `resolver`'s pipeline made for this value, if it is the one kept.
    func entry(for resolver: Resolver) -> Entry? {
        storage.entry.withLock { entry in entry?.resolver === resolver ? entry : nil }
    }

    /// Keeps `entry`, in place of any other pipeline's.
    func store(_ entry: Entry) {
        storage.entry.withLock { $0 = entry }
    }

    /// Forgets the entry, for a value that changed: its copies keep theirs.
    mutating func reset() {
        if isKnownUniquelyReferenced(&storage) {
            storage.entry.withLock { $0 = nil }
        } else {
            storage = Storage()
        }
    }

    static func == (lhs: ResolutionMemo, rhs: ResolutionMemo) -> Bool { true }

    func hash(into hasher: inout Hasher) {}
}
