import Foundation
import LoaderFile
import PipelineCore
import PipelineTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("FileDataLoader")
struct FileDataLoaderTests {
    private func testImage(size: Int) -> Data {
        var data = Data("TIMG".utf8) + Data([0, 4, 0, 3, 10, 20, 30, 255])
        data.append(Data(repeating: 7, count: max(0, size - data.count)))
        return data
    }

    @Test func readsTheFileWithItsModificationDateAsValidator() async throws {
        try await withTemporaryDirectory(prefix: "LoaderFileTests") { folder in
            let file = folder.appendingPathComponent("a.timg")
            try testImage(size: 5000).write(to: file)
            let modified = Date(timeIntervalSince1970: 1_600_000_000)
            try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: file.path)
            guard case .data(let data, let metadata) = try await FileDataLoader().load(DataLoadRequest(url: file)) else {
                Issue.record("not data"); return
            }
            #expect(data == testImage(size: 5000))
            // An opaque validator from the modification time and size, not an invented HTTP date.
            #expect(metadata.lastModified == nil)
            #expect(metadata.etag == "\"\(String(1_600_000_000, radix: 16)).0-\(String(5000, radix: 16))\"")
            #expect(metadata.contentLength == 5000)
        }
    }

    @Test func decodesThroughThePipeline() async throws {
        try await withTemporaryDirectory(prefix: "LoaderFileTests") { folder in
            let file = folder.appendingPathComponent("b.timg")
            try testImage(size: 100).write(to: file)
            let response = try await makePipeline(loader: FileDataLoader(), decoders: DecoderRegistry([TestImageDecoder()]), negativeCacheLifetime: 0).image(for: ImageRequest(url: file))
            #expect(response.bitmap.size == PixelSize(width: 4, height: 3))
        }
    }

    @Test func missingFilesAndDirectoriesAreUnreadable() async throws {
        try await withTemporaryDirectory(prefix: "LoaderFileTests") { folder in
            let loader = FileDataLoader()
            let missing = folder.appendingPathComponent("missing.timg")
            let error = await #expect(throws: ImagePipelineError.self) { _ = try await loader.load(DataLoadRequest(url: missing)) }
            #expect(error == .notFound(missing))
            let directory = await #expect(throws: ImagePipelineError.self) { _ = try await loader.load(DataLoadRequest(url: folder)) }
            #expect(directory == .fileUnreadable(path: folder.path, reason: "is a directory"))
        }
    }

    @Test(.disabled(if: getuid() == 0, "root reads files whatever their mode"))
    func unreadableFileIsPermissionDenied() async throws {
        try await withTemporaryDirectory(prefix: "LoaderFileTests") { folder in
            let file = folder.appendingPathComponent("secret.timg")
            try testImage(size: 100).write(to: file)
            chmod(file.path, 0)
            let error = await #expect(throws: ImagePipelineError.self) { _ = try await FileDataLoader().load(DataLoadRequest(url: file)) }
            #expect(error == .fileUnreadable(path: file.path, reason: "permission denied"))
        }
    }

    /// Regression: `open` on a FIFO blocks until a writer comes, so `imgpipe info some.fifo`
    /// (or a sheet with one among its sources) hung forever. It must fail at once instead.
    @Test func fifoIsNotARegularFileAndDoesNotBlock() async throws {
        try await withTemporaryDirectory(prefix: "LoaderFileTests") { folder in
            let fifo = folder.appendingPathComponent("pipe.timg")
            #expect(mkfifo(fifo.path, 0o600) == 0)
            // Should the read block, it fails at the deadline (``hangDeadline``: a prompt answer
            // never waits for it, a starved machine does not fail it); then this test becomes the
            // FIFO's writer, so that the blocked open returns and the run goes on.
            do {
                _ = try await withDeadline { try await FileDataLoader().load(DataLoadRequest(url: fifo)) }
                Issue.record("a FIFO was loaded")
            } catch is Hung {
                let descriptor = open(fifo.path, O_WRONLY | O_NONBLOCK)
                if descriptor >= 0 { close(descriptor) }
                Issue.record("the read waited for a writer")
            } catch {
                #expect(error as? ImagePipelineError == .fileUnreadable(path: fifo.path, reason: "not a regular file"))
            }
        }
    }

    @Test func fileOverTheLimitIsTooLarge() async throws {
        try await withTemporaryDirectory(prefix: "LoaderFileTests") { folder in
            let file = folder.appendingPathComponent("big.timg")
            try testImage(size: 10_001).write(to: file)
            let error = await #expect(throws: ImagePipelineError.self) { _ = try await FileDataLoader(maxBodyBytes: 10_000).load(DataLoadRequest(url: file)) }
            #expect(error == .tooLarge(limit: 10_000, actual: 10_001))
        }
    }

    @Test func cancellationStopsTheReadBetweenChunks() async throws {
        try await withTemporaryDirectory(prefix: "LoaderFileTests") { folder in
            let file = folder.appendingPathComponent("chunks.timg")
            try testImage(size: 1_000_000).write(to: file)
            let chunks = Counter()
            let holder = TaskHolder()
            let loader = FileDataLoader(chunkSize: 1000)
            let task = Task {
                try await loader.load(DataLoadRequest(url: file) { _, _ in
                    chunks.increment()
                    if chunks.current == 3 { holder.cancel() }
                })
            }
            holder.set(task)
            await #expect(throws: CancellationError.self) { _ = try await task.value }
            #expect(chunks.current < 10)
        }
    }
}

/// Lets a progress callback cancel the task it belongs to.
final class TaskHolder: Sendable {
    private let task = Mutex<Task<DataLoadResult, any Error>?>(nil)
    private let cancelled = Mutex(false)

    func set(_ task: Task<DataLoadResult, any Error>) {
        let early = cancelled.withLock { $0 }
        self.task.withLock { $0 = task }
        if early { task.cancel() }
    }

    func cancel() {
        cancelled.withLock { $0 = true }
        task.withLock { $0 }?.cancel()
    }
}
