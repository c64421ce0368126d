#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The permanent failures the pipeline remembers (``Configuration/negativeCacheLifetime``), by
/// kind, each written by the stage that meets it: downloads by the URL fetched (`FetchStage`),
/// decodes and processors by key (`DecodeStage`, `ImageStage`). Sendable, so a request
/// is answered from them at the door, off the actor, as from the memory cache.
struct RememberedFailures: Sendable {
    /// Download failures (a 404), by the URL fetched: a request with a fresh signature deserves
    /// a try.
    let downloads: NegativeCache<URL>
    /// Decode failures, by key: whether bytes decode can depend on the key's options (strict
    /// decoding), but not on its token.
    let decodes: NegativeCache<ImageKey>
    /// Processor failures, by (processed) key: processors are deterministic.
    let processing: NegativeCache<ImageKey>

    init(_ configuration: ImagePipeline.Configuration) {
        downloads = NegativeCache(configuration)
        decodes = NegativeCache(configuration)
        processing = NegativeCache(configuration)
    }

    /// The failure remembered for `resolved` that holds at `now`, if any.
    func error(for resolved: ResolvedRequest, now: Date) -> ImagePipelineError? {
        downloads.error(for: resolved.fetchURL, now: now)
            ?? decodes.error(for: resolved.key, now: now) ?? processing.error(for: resolved.key, now: now)
    }

    /// How many failures are remembered, of every kind.
    var count: Int { downloads.count + decodes.count + processing.count }

    /// The bytes they are counted at, of every kind.
    var bytes: Int { downloads.bytes + decodes.bytes + processing.bytes }

    /// Forgets every failure.
    func removeAll() {
        downloads.removeAll()
        decodes.removeAll()
        processing.removeAll()
    }
}
