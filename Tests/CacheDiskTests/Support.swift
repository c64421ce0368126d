import CacheDisk
import Foundation
import PipelineCore
import PipelineTestSupport
import Synchronization

extension TemporaryDirectory {
    /// The path of `url`'s entry file in this directory.
    func entryPath(_ key: URL) -> String { url.appendingPathComponent(DiskCache.fileName(for: key)).path }
}

/// A test cache with a small cap and no mtime persistence delay unless asked.
func makeCache(_ directory: TemporaryDirectory, sizeLimit: Int = 64 << 20, trimRatio: Double = 0.8,
               accessPersistInterval: TimeInterval = 600, maxUnusedAge: TimeInterval? = nil,
               fileName: @escaping @Sendable (URL) -> String = DiskCache.fileName(for:)) throws -> DiskCache {
    try DiskCache(directory: directory.url, sizeLimit: sizeLimit, syncsWrites: false, trimRatio: trimRatio,
                  accessPersistInterval: accessPersistInterval, maxUnusedAge: maxUnusedAge, fileName: fileName)
}

/// A pipeline over the test fakes and a real disk cache (the shared ``makePipeline`` with the
/// configuration's own negative-cache lifetime, which these tests rely on).
func makePipeline(loader: HeldLoader, diskCache: DiskCache, clock: TestClock) -> ImagePipeline {
    makePipeline(loader: loader, diskCache: diskCache, negativeCacheLifetime: 10, clock: clock)
}

/// `test://host/WxH/N`: FakeImage bytes of that size and colour N via `HeldLoader.fakeData`.
func testURL(_ width: Int = 32, _ height: Int = 32, _ n: Int = 0) -> URL {
    URL(string: "test://host/\(width)x\(height)/\(n)")!
}

/// `stat` of `path`: inode, size and mtime, to show a file was not rewritten.
struct FileIdentity: Equatable {
    var inode: UInt64
    var size: Int64
    var modified: Int
    var modifiedNanoseconds: Int

    init?(_ path: String) {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        inode = UInt64(status.st_ino)
        size = Int64(status.st_size)
        modified = status.st_mtim.tv_sec
        modifiedNanoseconds = status.st_mtim.tv_nsec
    }
}

/// Metadata for a response fresh for `maxAge` seconds, with an ETag.
func metadata(maxAge: TimeInterval?, etag: String? = nil) -> ResponseMetadata {
    ResponseMetadata(etag: etag, freshFor: maxAge, origin: .network)  // an HTTP origin's answer
}

/// The helper executable built beside the test bundle.
func helperExecutable(_ name: String) -> URL? {
    let candidates = [
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
        Bundle.main.bundleURL.deletingLastPathComponent(),
        Bundle.main.bundleURL,
    ]
    return candidates.map { $0.appendingPathComponent(name) }
        .first { FileManager.default.isExecutableFile(atPath: $0.path) }
}

/// How long one cache call may take before it counts as hung: generous for a starved 2-core
/// machine. A prompt answer never waits for it (see ``withDeadline(_:_:)``).
let hangDeadline: TimeInterval = 120

/// The error ``withDeadline(_:_:)`` throws when the operation has not answered in time.
struct Hung: Error, CustomStringConvertible {
    let seconds: TimeInterval
    var description: String { "no answer within \(seconds) s: the call hangs" }
}

/// Runs `operation` in a task of its own and returns its result, or throws ``Hung`` once
/// `seconds` have passed. The deadline is a Dispatch timer racing the operation, not a sleeping
/// task: a prompt answer returns at once, and a hung operation is left behind (blocked where it
/// is), so a hang fails the test instead of stalling the run.
func withDeadline<T: Sendable>(_ seconds: TimeInterval = hangDeadline,
                               _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
    let slot = ContinuationSlot<T>()
    return try await withCheckedThrowingContinuation { continuation in
        slot.set(continuation)
        Task {
            do { slot.resume(with: .success(try await operation())) } catch { slot.resume(with: .failure(error)) }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { slot.resume(with: .failure(Hung(seconds: seconds))) }
    }
}

/// A continuation resumed once, by whichever side comes first.
final class ContinuationSlot<T: Sendable>: Sendable {
    private let continuation = Mutex<CheckedContinuation<T, any Error>?>(nil)

    func set(_ continuation: CheckedContinuation<T, any Error>) { self.continuation.withLock { $0 = continuation } }

    func resume(with result: Result<T, any Error>) { continuation.withLock { $0.take() }?.resume(with: result) }
}
