import CacheDisk
import CodecPNG
import Foundation
import LoaderHTTP
import PipelineCore
import PipelineTestSupport

/// The fixture server's formats: its test format (``TestImageDecoder``) and PNG.
let fixtureDecoders = DecoderRegistry([TestImageDecoder(), PNGDecoder()])

/// An `HTTPDataLoader` for tests that hold a body between its pieces (`/steps`) until they have
/// seen what the last piece did: a starved machine may take many seconds to get there, which
/// the low-speed limit (256 bytes/s over 10 s) and the 30 s idle time would count as a stalled
/// transfer, and retry. No low-speed limit; idle and total times of 150 s.
func heldBodyLoader() -> HTTPDataLoader {
    HTTPDataLoader(configuration: HTTPDataLoader.Configuration(idleTimeout: 150, lowSpeedLimit: 0, totalTimeout: 150))
}

/// The `ImagePipelineError` `body` throws, or `nil` when it succeeds or throws something else.
func pipelineError(_ body: () async throws -> Void) async -> LoadFailure? {
    do {
        try await body()
        return nil
    } catch let error as ImagePipelineError {
        switch error.underlyingError {
        case let http as HTTPError: return .http(http)
        case let core as ImagePipelineError: return .core(core)
        case let other: return .other(String(describing: other))
        }
    } catch let error as HTTPError {
        return .http(error)
    } catch {
        return .other(String(describing: error))
    }
}

/// What a load failed with, as the loader threw it (the pipeline's URL wrapper taken off).
enum LoadFailure: Equatable, Sendable, CustomStringConvertible {
    /// One of the core's shared errors (not found, truncated, too large, timeout).
    case core(ImagePipelineError)
    /// The HTTP loader's own.
    case http(HTTPError)
    /// Anything else.
    case other(String)

    var description: String {
        switch self {
        case .core(let error): return "core: \(error)"
        case .http(let error): return "http: \(error)"
        case .other(let text): return "other: \(text)"
        }
    }
}

/// Runs `body` with a real ``PipelineCore/DiskCache`` in a fresh temporary directory, removed
/// afterwards; `body` also gets the directory, to look at the files themselves.
func withDiskCache<T>(_ body: (DiskCache, URL) async throws -> T) async throws -> T {
    try await withTemporaryDirectory(prefix: "LoaderHTTPTests-disk") { directory in
        let disk = try DiskCache(directory: directory, sizeLimit: 16 << 20)
        let result = await Result { try await body(disk, directory) }
        await disk.waitForMaintenance()
        return try result.get()
    }
}

extension Result where Failure == any Error {
    /// The result of `body`, its error included.
    init(_ body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}

/// The names of the entry files in a disk cache directory (in its 256 folders; its index and temporary files left out).
func entryFiles(in directory: URL) -> [String] {
    let folders = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.utf8.count == 2 }
    return folders.flatMap { folder in
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent(folder).path)) ?? [])
            .filter { !$0.hasPrefix(".") }
    }
}
