#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the pipeline's caches count for what they hold, in bytes: pixels are not the only
/// memory an entry takes. A 1×1 picture whose URL is 60 KB holds 60 KB; counted by its pixels
/// alone (4 bytes), 20,000 of them held 1.2 GB in a 64 MiB cache. The memory cache
/// (``ImagePipeline/memoryCache``) and the remembered failures
/// (``ImagePipeline/Configuration/negativeCacheByteLimit``) count with these, so their budgets
/// bound the memory.
///
/// ``MemoryCache`` stays generic: its callers give each entry its cost, computed here.
enum MemoryCost {
    /// What a memory-cache entry holds besides its strings and pixels, in bytes: the cache's
    /// node, index slot and expiry record, the response's and key's fixed fields, the bitmap's
    /// and URL's heap headers, what malloc rounds up and the slack of the cache's growing
    /// tables. Measured from the resident memory a pipeline gains keeping 20,000 1×1 pictures
    /// with short URLs, less their pixel and URL bytes: about 1,180 bytes an entry
    /// (`MEASURE_MEMORY_COST=1 swift test --filter perEntryOverhead`); 1,280 with a little room.
    static let responseEntryOverhead = 1280

    /// What a remembered failure holds besides its key's and error's strings, in bytes: the
    /// entry, its index slot, expiry record and key digest, the boxed underlying error.
    /// Measured as ``responseEntryOverhead`` was, over 20,000 404s: about 1,090 bytes.
    static let failureEntryOverhead = 1152

    /// The cost of keeping `container` under `key`: its pixels, the key's URL and processor
    /// identifiers, warnings and tags, and ``responseEntryOverhead``.
    static func of(_ container: ImageContainer, for key: ImageKey) -> Int {
        var bytes = responseEntryOverhead + container.bitmap.cost + of(key.cacheURL) + identifiers(of: key)
        bytes += container.issues.reduce(0) { $0 + $1.message.utf8.count }
        if let origin = container.renditionOrigin {
            bytes += origin.tag.utf8.count + (origin.info.etag?.utf8.count ?? 0) + (origin.info.lastModified?.utf8.count ?? 0)
        }
        return bytes
    }

    /// The bytes of `key`'s processor identifiers (UTF-8).
    static func identifiers(of key: ImageKey) -> Int { key.processors.reduce(0) { $0 + $1.identifier.utf8.count } }

    /// The bytes of `url`'s text (UTF-8).
    static func of(_ url: URL) -> Int { url.absoluteString.utf8.count }

    /// An estimate of what `error` holds: its URLs, messages and leading bytes, and an error of
    /// another type inside it by the length of its description (what it carries is not visible
    /// otherwise). Without ``failureEntryOverhead``.
    static func of(_ error: any Error) -> Int {
        guard let error = error as? ImagePipelineError else { return String(describing: error).utf8.count }
        switch error {
        case .noLoader(let scheme): return scheme.utf8.count
        case .noDecoder(_, let leadingBytes): return leadingBytes.count
        case .notFound(let url, _): return of(url)
        case .unsupported(_, let message), .corruptData(_, let message), .truncatedData(_, let message), .timeout(let message):
            return message.utf8.count
        case .fileUnreadable(let path, let reason): return path.utf8.count + reason.utf8.count
        case .libraryUnavailable(let missing): return missing.description.utf8.count
        case .overloaded(let url, let limit, let detail): return of(url) + limit.rawValue.utf8.count + detail.utf8.count
        case .loadingFailed(let url, let underlying), .decodingFailed(let url, let underlying),
             .processingFailed(let url, let underlying):
            return of(url) + of(underlying)
        case .truncated, .tooLarge, .tooManyPixels, .overLimit, .notCached, .unexpectedNotModified: return 0
        }
    }
}
