#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the disk cache keeps for a request: the original bytes, the request's processed and
/// resized result encoded (its "rendition"), or both (Nuke's `DataCachePolicy`).
///
/// A rendition is tagged with its original bytes' length and CRC-32. While the original is on
/// disk, the rendition answers only for those bytes, and the original's freshness decides (its
/// revalidation bringing new bytes stops the renditions made from the old ones answering).
/// Without the original on disk (``renditions``, ``automatic``), the rendition carries the
/// original's validators (`ETag`, `Last-Modified`) and freshness and stands alone: fresh, it
/// answers; stale, it is revalidated with a conditional request of its own before it answers
/// (whatever the request's ``RevalidationPolicy``): a 304 refreshes it; new bytes are decoded
/// and processed and replace it only once they decode (when they do not, or the origin cannot
/// be reached, the stored rendition answers). A download shared with a request whose policy
/// keeps originals still stores the original.
public enum DiskCachePolicy: Hashable, Sendable {
    /// Only the original bytes, keyed by fetch URL (as before processors existed). The default.
    case originals
    /// The original bytes, and for a request with processors also the processed result
    /// ("rendition"), encoded by ``ImagePipeline/Configuration/renditionEncoder``. A memory
    /// miss then decodes the small rendition instead of decoding and processing the original.
    case originalsAndRenditions
    /// Renditions only (Nuke's `storeEncodedImages`): every request stores its result encoded,
    /// a plain full-size request too (its decoded picture re-encoded, which costs a full-size
    /// encode: prefer ``automatic``), and the original bytes are not kept.
    case renditions
    /// A rendition for a request with processors or a target size, the original bytes for a
    /// plain request (original size, no processors). Nuke's `automatic`.
    case automatic

    /// Whether a request with `key` stores its rendition and looks it up.
    func makesRendition(for key: ImageKey) -> Bool {
        switch self {
        case .originals: false
        case .originalsAndRenditions: !key.processors.isEmpty
        case .renditions: true
        case .automatic: !key.processors.isEmpty || key.targetSize != .original
        }
    }

    /// Whether a request with `key` keeps loaded original bytes on disk.
    func storesOriginal(for key: ImageKey) -> Bool {
        switch self {
        case .originals, .originalsAndRenditions: true
        case .renditions: false
        case .automatic: !makesRendition(for: key)
        }
    }
}
