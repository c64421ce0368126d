#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the pipeline tells its host, for hit rates, byte counts and time to first pixel.
/// Delivered synchronously on whatever thread the pipeline is on (`started`, `memoryHit` and a
/// request's end on its caller's, the rest on the actor's), so from several threads at once;
/// each request's own events come in order. Keep the handler cheap.
public enum ImagePipelineEvent: Sendable {
    /// `image(for:)` was called.
    case started(ImageRequest)
    /// Answered from the memory cache.
    case memoryHit(ImageRequest)
    /// The disk cache had the fetch URL; `fresh` says whether it could be used unchecked.
    case diskHit(URL, fresh: Bool)
    /// A loader delivered `bytes` bytes for the fetch URL.
    case loaded(URL, bytes: Int)
    /// A stale disk entry was checked with the origin; `modified` when new bytes came back.
    case revalidated(URL, modified: Bool)
    /// A decode (and resample) finished, taking `seconds` on the decode pool.
    case decoded(ImageKey, seconds: TimeInterval)
    /// A preview of a download still arriving was decoded (``ImagePipeline/PreviewPolicy``),
    /// from `steps` refinement steps, taking `seconds` on the decode pool: what previews cost.
    /// Sent from the decode pool, off the pipeline actor.
    case previewDecoded(ImageKey, steps: Int, seconds: TimeInterval)
    /// A key's processors (``ImageRequest/processors``) ran, taking `seconds` on the decode pool.
    case processed(ImageKey, seconds: TimeInterval)
    /// A request with processors was answered by its rendition on disk (no original decode).
    case renditionHit(ImageKey)
    /// A processed result was stored on disk as a rendition of `bytes` encoded bytes.
    case renditionStored(ImageKey, bytes: Int)
    /// The request was answered, `seconds` after it started.
    case completed(ImageRequest, source: ImageSource, seconds: TimeInterval)
    /// The caller cancelled.
    case cancelled(ImageRequest)
    /// The request failed.
    case failed(ImageRequest, any Error)
    /// Memory pressure (``ImagePipeline/trimMemory(for:policy:)``) freed `freedBytes` of the
    /// memory cache and cancelled `cancelledPrefetches` prefetches.
    case memoryTrimmed(MemoryPressureLevel, freedBytes: Int, cancelledPrefetches: Int)
}
