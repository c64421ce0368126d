import CacheDisk

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where the standard pipeline keeps its disk cache of compressed bytes
/// (``PipelineCore/ImagePipeline/standard(diskCache:connectionPolicy:localSources:)``).
///
/// There is no default: an app wants the user's cache directory, a server its own state
/// directory or none at all, and a server must not fill a home directory by accident. The cache
/// has `DiskCache`'s default limits; for others (a size, `maxUnusedAge` for entries not used for
/// a week, as Kingfisher's and SDWebImage's default), set the configuration's `diskCache` to a
/// `DiskCache` made with them.
///
/// ```swift
/// let app = try ImagePipeline.standard(diskCache: .named("MyApp"))              // ~/.cache/MyApp
/// let job = try ImagePipeline.standard(diskCache: .directory(URL(fileURLWithPath: "/var/cache/thumbs")))
/// let tool = try ImagePipeline.standard(diskCache: .none)                       // memory only
/// ```
public enum DiskCacheLocation: Hashable, Sendable {
    /// A folder named `name` in the user's cache directory: `$XDG_CACHE_HOME/<name>` when that
    /// variable is an absolute path, else `~/.cache/<name>` (`DiskCache(name:)`). For apps.
    case named(String)
    /// `url`, created if missing; it should hold nothing else (`DiskCache(directory:)`). For
    /// servers (a state or cache directory of the service) and temporary runs.
    case directory(URL)
    /// No disk cache: pictures are kept in memory only, and every launch downloads again.
    case none

    /// The cache this location names, with `DiskCache`'s default limits; `nil` for ``none``.
    /// - Throws: the disk cache's error when its directory cannot be created or used.
    func makeDiskCache() throws -> DiskCache? {
        switch self {
        case .named(let name): try DiskCache(name: name)
        case .directory(let url): try DiskCache(directory: url)
        case .none: nil
        }
    }
}
