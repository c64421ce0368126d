#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How long downloaded bytes stay fresh in the disk cache, that is, served without asking the
/// origin again: what the origin says (the default), or a lifetime of the app's own for origins
/// whose headers it does not trust or want. Set on ``ImagePipeline/Configuration/freshnessPolicy``
/// and per request (``ImageRequest/freshnessPolicy``).
///
/// Applied when bytes arrive, a download or a 304 alike, and recorded in the entry's
/// ``CacheEntryInfo/freshUntil``: an entry stored under another policy keeps its lifetime until
/// it is next revalidated. A download shared by several requests takes the policy of the
/// request that started it. A `no-store` response is never stored, under every policy: the
/// policy says how long a stored copy is fresh, never whether one may be kept.
///
/// Nuke's `DataCache` ignores HTTP altogether (as ``fixed(_:)``), Kingfisher's disk cache keeps
/// a picture for 7 days and SDWebImage's for one week, whatever the headers.
public enum FreshnessPolicy: Hashable, Sendable {
    /// The lifetime the loader reports (``ResponseMetadata/freshFor``): for HTTP, `max-age` or
    /// `Expires`, else the heuristic for origins that send only `Last-Modified`; no lifetime
    /// (stale at once, revalidated) when the response gives none. The default.
    case http
    /// At least this many seconds, or the loader's lifetime when that is longer: for origins
    /// that send too short a lifetime, or none. Overrides `no-cache` and `max-age=0` too.
    case minimum(TimeInterval)
    /// Exactly this many seconds from arrival, whatever the loader reports (`no-cache` and
    /// `max-age` included): HTTP's lifetimes ignored, as Kingfisher and SDWebImage do.
    case fixed(TimeInterval)

    /// The lifetime in seconds recorded for bytes described by `metadata`, `nil` for none.
    func lifetime(of metadata: ResponseMetadata) -> TimeInterval? {
        switch self {
        case .http: return metadata.freshFor
        case .minimum(let floor): return max(metadata.freshFor ?? floor, floor)
        case .fixed(let lifetime): return lifetime
        }
    }
}

extension ResolvedRequest {
    /// The policy for bytes this request brings: its own, else the configuration's.
    func freshnessPolicy(in configuration: ImagePipeline.Configuration) -> FreshnessPolicy {
        request.freshnessPolicy ?? configuration.freshnessPolicy
    }
}
