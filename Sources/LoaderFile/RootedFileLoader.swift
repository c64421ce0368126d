import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Loads `local:///path` URLs from one folder and nothing outside it: imgproxy's
/// `IMGPROXY_LOCAL_FILESYSTEM_ROOT`, for an image server whose sources are its own files.
///
/// `local:///photos/a.jpg` reads `<root>/photos/a.jpg`. Refused, before any file is opened,
/// with ``RootedFileLoader/Refusal`` (kind `ImagePipelineError.Kind.refused`):
/// a `..` or `.` component, an encoded separator (`%2F`, `%5C`), a NUL or other control
/// character, a host (`local://host/…`), and a path whose resolved location (symbolic links
/// followed) lies outside the root. A missing file is `ImagePipelineError.notFound(_:status:)`
/// naming the `local:` URL, never the server's own path. Reads as ``FileDataLoader`` does
/// (chunked, cancellable, on its own threads, bounded), with the same validator.
///
/// A symbolic link inside the root that points inside it is followed; one that points out is
/// refused. The check and the open are two steps, so someone who can write into the root while
/// the server runs could race them: the root must be writable only by its owner.
public struct RootedFileLoader: DataLoading {
    /// Why a path was refused. The message names the `local:` URL, escaped.
    public struct Refusal: PipelineFailure, CustomStringConvertible, Sendable {
        /// The URL as asked, escaped and bounded for messages.
        public let url: String
        /// Why.
        public let reason: String

        public var isPermanent: Bool { true }
        public var failureKind: ImagePipelineError.Kind? { .refused }
        public var description: String { "\(url): \(reason)" }
    }

    /// The folder served, resolved (symbolic links followed) when the loader was made.
    public let root: String
    /// The scheme it answers, `local` by default.
    public let scheme: String
    private let reader: FileDataLoader

    /// `[scheme]`.
    public var schemes: Set<String> { [scheme] }

    /// A loader for `scheme:///…` below `root`.
    /// - Throws: `ImagePipelineError.fileUnreadable(path:reason:)` when `root` is not an existing folder.
    public init(root: URL, scheme: String = "local", maxBodyBytes: Int64 = 50_000_000) throws {
        guard let resolved = realpath(root.path, nil) else {
            throw ImagePipelineError.fileUnreadable(path: root.path, reason: "cannot serve it: \(String(cString: strerror(errno)))")
        }
        defer { free(resolved) }
        let path = String(cString: resolved)
        var status = stat()
        guard stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR else {
            throw ImagePipelineError.fileUnreadable(path: root.path, reason: "cannot serve it: not a folder")
        }
        self.root = path
        self.scheme = scheme.lowercased()
        reader = FileDataLoader(maxBodyBytes: maxBodyBytes)
    }

    /// The file `url` names below the root, checked (``Refusal`` otherwise).
    public func resolvedPath(for url: URL) throws -> String {
        let shown = MessageText.escaped(url.absoluteString, limit: MessageText.urlLimit)
        func refuse(_ reason: String) -> Refusal { Refusal(url: shown, reason: reason) }
        guard url.scheme?.lowercased() == scheme else { throw refuse("not a \(scheme): URL") }
        guard (url.host ?? "").isEmpty, url.user == nil, url.port == nil else {
            throw refuse("a \(scheme): URL names no host (\(scheme):///path)")
        }
        let encoded = url.path(percentEncoded: true)
        guard encoded.hasPrefix("/") else { throw refuse("the path must start at the served folder's top (\(scheme):///path)") }
        var components: [String] = []
        for piece in encoded.split(separator: "/", omittingEmptySubsequences: true) {
            guard let name = String(piece).removingPercentEscapes else { throw refuse("a malformed percent escape") }
            guard name != ".", name != "..", !name.contains("/"), !name.contains("\\"),
                  !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
            else { throw refuse("only plain names below the served folder are allowed (no '.', '..', separators or control characters)") }
            components.append(name)
        }
        guard !components.isEmpty else { throw refuse("names the served folder itself, not a file") }
        let joined = root + "/" + components.joined(separator: "/")
        guard let real = realpath(joined, nil) else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { throw ImagePipelineError.notFound(url) }
            throw refuse("cannot be read (\(String(cString: strerror(code))))")
        }
        defer { free(real) }
        let resolved = String(cString: real)
        guard resolved.hasPrefix(root == "/" ? "/" : root + "/") else { throw refuse("leads outside the served folder") }
        return resolved
    }

    /// Reads the file `request.url` names below the root.
    /// - Throws: ``Refusal``, `ImagePipelineError.notFound(_:status:)`, or what ``FileDataLoader`` throws.
    public func load(_ request: DataLoadRequest) async throws -> DataLoadResult {
        let path = try resolvedPath(for: request.url)
        var local = request
        local.url = URL(fileURLWithPath: path)
        do {
            return try await reader.load(local)
        } catch ImagePipelineError.notFound {
            throw ImagePipelineError.notFound(request.url)
        } catch ImagePipelineError.fileUnreadable(_, let reason) {
            throw Refusal(url: MessageText.escaped(request.url.absoluteString, limit: MessageText.urlLimit), reason: reason)
        }
    }
}
