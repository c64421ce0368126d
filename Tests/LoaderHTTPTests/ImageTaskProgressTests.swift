import Foundation
import LoaderFile
import LoaderHTTP
import PipelineCore
import PipelineTestSupport
import Testing

/// Reads `iterator` until a value of `completed` bytes arrives; returns every value read (the
/// sequence keeps only the newest, so intermediate values may be skipped, never the last one
/// before the body pauses). `nil` when the sequence ends first.
private func read(_ iterator: inout AsyncStream<ImageTask.Progress>.Iterator, until completed: Int64) async
    -> [ImageTask.Progress]? {
    var seen: [ImageTask.Progress] = []
    while let value = await iterator.next() {
        seen.append(value)
        if value.completed == completed { return seen }
    }
    return nil
}

/// Checks that `values` rise monotonically within 0...total.
private func isMonotonic(_ values: [ImageTask.Progress], total: Int64) -> Bool {
    zip(values, values.dropFirst()).allSatisfy { $0.completed <= $1.completed }
        && values.allSatisfy { $0.completed >= 0 && $0.completed <= total && $0.total == total }
}

@Suite("ImageTask: progress from real loaders reaches the caller", .timeLimit(.minutes(2)))
struct ImageTaskProgressTests {
    /// The fixture server sends a 5,000-byte body in five pieces, each only after the test saw
    /// the previous one arrive (`/steps`): the caller sees several values between 0 and the
    /// total, rising, the last equal to the total, and the response counts the bytes.
    @Test func progressOverHTTPReachesTheCaller() async throws {
        try await withFixtureServer { server in
            let pipeline = makePipeline(loader: heldBodyLoader(), decoders: fixtureDecoders, negativeCacheLifetime: 0)
            let url = server.url("/steps/progress?chunks=5&chunk=1000")
            let task = pipeline.imageTask(for: ImageRequest(url: url))
            var values: [ImageTask.Progress] = []
            var released = 1
            for await value in task.progress {
                values.append(value)
                if value.completed == Int64(released * 1000), released < 5 {
                    try await server.release("progress.\(released)")
                    released += 1
                }
            }
            let response = try await task.response
            print("progress values over HTTP: \(values.map(\.completed))")
            #expect(values.count >= 5, "\(values)")
            #expect(isMonotonic(values, total: 5000), "\(values)")
            #expect(values.last == ImageTask.Progress(completed: 5000, total: 5000))
            #expect(values.contains { $0.completed > 0 && $0.completed < 5000 })
            #expect(task.currentProgress?.completed == 5000)
            #expect(response.source == .network)
            #expect(response.downloadedBytes == 5000)
            #expect(response.fetchURL == url)
            #expect(try await server.hits("/steps/progress") == 1)
        }
    }

    /// Two tasks joined on one download both see its progress; cancelling one keeps the
    /// other's load (one request, no disconnect); a third that joins late sees the latest value
    /// first and follows from there.
    @Test func coalescedTasksEachSeeProgressAndCancellingOneKeepsTheOthersLoad() async throws {
        try await withFixtureServer { server in
            let pipeline = makePipeline(loader: heldBodyLoader(), decoders: fixtureDecoders, negativeCacheLifetime: 0)
            let request = ImageRequest(url: server.url("/steps/shared?chunks=4&chunk=1000"))
            let first = pipeline.imageTask(for: request)
            let second = pipeline.imageTask(for: request)
            var firstValues = first.progress.makeAsyncIterator()
            var secondValues = second.progress.makeAsyncIterator()
            #expect(await read(&firstValues, until: 1000) != nil)
            #expect(await read(&secondValues, until: 1000) != nil)
            #expect(pipeline.waiterCount(for: request) == 2)

            first.cancel()
            await #expect(throws: CancellationError.self) { _ = try await first.response }
            #expect(await firstValues.next() == nil)  // its progress ends with it

            try await server.release("shared.1")
            #expect(await read(&secondValues, until: 2000) != nil)
            let late = pipeline.imageTask(for: request)
            var lateValues = late.progress.makeAsyncIterator()
            let lateFirst = await lateValues.next()
            #expect(lateFirst == ImageTask.Progress(completed: 2000, total: 4000))

            try await server.release("shared.2")
            try await server.release("shared.3")
            let rest = try #require(await read(&secondValues, until: 4000))
            #expect(isMonotonic(rest, total: 4000))
            #expect(try #require(await read(&lateValues, until: 4000)).last?.completed == 4000)
            let response = try await second.response
            #expect(response.bitmap.size == PixelSize(width: 4, height: 3))
            #expect(response.downloadedBytes == 4000)
            #expect(try await late.response.downloadedBytes == 4000)
            #expect(try await server.hits("/steps/shared") == 1)
            #expect(try await server.stats().disconnects["/steps/shared"] == nil)
        }
    }

    /// A file read in chunks reports progress to the task too; the last value is the file's size.
    @Test func progressOfAFileLoadReachesTheCaller() async throws {
        let temporary = try TemporaryDirectory(prefix: "ImageTask")
        defer { temporary.remove() }
        let directory = temporary.url
        var bytes = Data("TIMG".utf8) + Data([0, 4, 0, 3, 10, 20, 30, 255])
        bytes.append(Data(count: 40_000 - bytes.count))
        let file = directory.appendingPathComponent("picture.timg")
        try bytes.write(to: file)

        let pipeline = makePipeline(loader: FileDataLoader(chunkSize: 4096), decoders: fixtureDecoders, negativeCacheLifetime: 0)
        let task = pipeline.imageTask(for: ImageRequest(url: file))
        var values: [ImageTask.Progress] = []
        for await value in task.progress { values.append(value) }
        let response = try await task.response
        #expect(!values.isEmpty)
        #expect(isMonotonic(values, total: 40_000), "\(values)")
        #expect(values.last == ImageTask.Progress(completed: 40_000, total: 40_000))
        #expect(response.downloadedBytes == 40_000)
        #expect(response.source == .local)

        // A memory hit: no progress at all, no bytes downloaded.
        let again = pipeline.imageTask(for: ImageRequest(url: file))
        var hitValues: [ImageTask.Progress] = []
        for await value in again.progress { hitValues.append(value) }
        #expect(hitValues.isEmpty)
        let hit = try await again.response
        #expect(hit.source == .memory && hit.downloadedBytes == 0)
    }
}
