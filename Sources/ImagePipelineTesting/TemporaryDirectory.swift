import Foundation

/// A fresh, empty directory under the system's temporary directory, for the files a test makes
/// (a disk cache, pictures to load). ``withTemporaryDirectory(prefix:isolation:_:)`` removes it
/// on every path; a test that must outlive a scope calls ``remove()`` itself.
public struct TemporaryDirectory: Sendable {
    /// The directory.
    public let url: URL

    /// Creates `<temporary directory>/<prefix>-<UUID>`.
    public init(prefix: String = "ImagePipelineTests") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// Removes the directory and everything in it (nothing happens if it is already gone).
    public func remove() { try? FileManager.default.removeItem(at: url) }

    /// The names of the files and directories in it, in no particular order.
    public var names: [String] { (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? [] }
}

/// Runs `body` with a fresh ``TemporaryDirectory`` and removes the directory afterwards, whether
/// `body` returns or throws.
///
/// ```swift
/// try await withTemporaryDirectory { directory in
///     let cache = try DiskCache(directory: directory, sizeLimit: 16 << 20)
///     …
/// }
/// ```
public func withTemporaryDirectory<T>(prefix: String = "ImagePipelineTests", isolation: isolated (any Actor)? = #isolation,
                                      _ body: (URL) async throws -> T) async throws -> T {
    let directory = try TemporaryDirectory(prefix: prefix)
    defer { directory.remove() }
    return try await body(directory.url)
}
