import CacheDisk
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// A loader answering every URL at once with fake data (by the URL's path, whatever the query)
/// that is fresh for ten minutes, so disk hits need no revalidation.
private func freshLoader() -> HeldLoader {
    HeldLoader(schemes: ["https"]) { .success(.data(HeldLoader.fakeData(for: $0.url), ResponseMetadata(freshFor: 600, origin: .network))) }
}

/// A pipeline over `loader`, width buckets and a disk cache at `directory`, with `cacheKey`.
private func makeKeyedPipeline(_ loader: HeldLoader, directory: URL,
                               cacheKey: (@Sendable (URL) -> String?)? = nil) throws -> ImagePipeline {
    var configuration = ImagePipeline.Configuration(
        decoders: DecoderRegistry([CountingDecoder()]), loaders: LoaderRegistry([loader]),
        urlBuilder: WidthBucketURLBuilder(), memoryCache: MemoryCache(costLimit: 64 << 20),
        diskCache: try DiskCache(directory: directory, sizeLimit: 16 << 20))
    configuration.cacheKey = cacheKey
    return ImagePipeline(configuration: configuration)
}

/// `https://cdn.example/64x48/5?token=<token>`: a signed URL whose token rotates.
private func signedURL(_ token: String, picture: Int = 5) -> URL {
    URL(string: "https://cdn.example/64x48/\(picture)?token=\(token)")!  // test literal
}

@Suite("ImageTask: priority and cancellation through the handle", .timeLimit(.minutes(2)))
struct ImageTaskHandleTests {
    /// A running task's priority moves the work in flight: the loader's handle follows it up
    /// and down (`setPriority` returns once applied), and so does the property setter.
    @Test func changingThePriorityOfARunningTaskReachesTheLoader() async throws {
        let loader = HeldLoader()
        let pipeline = makePipeline(loader: loader)
        let url = testURL(32, 32, 3)
        let request = ImageRequest(url: url, priority: .prefetch)
        let task = pipeline.imageTask(for: request)
        try #require(await loader.waitUntil { $0.heldURLs == [url] })
        let handle = try #require(loader.requests.first?.priority)
        #expect(handle.current == .prefetch)

        await task.setPriority(.visible)
        #expect(handle.current == .visible)
        #expect(pipeline.inFlightPriority(for: request) == .visible)
        await task.setPriority(.prefetch)
        #expect(handle.current == .prefetch)

        task.priority = .visible
        #expect(task.priority == .visible)
        try #require(await eventually { handle.current == .visible })

        loader.releaseWithFakeData(url)
        #expect(firstPixel(try await task.response) == colorBytes(3))
    }

    /// Two handles on one load: cancelling one ends it with `CancellationError` at once, and the
    /// other still gets its picture from the one load, which was never cancelled.
    @Test func cancellingOneTaskKeepsTheLoadAnotherNeeds() async throws {
        let loader = HeldLoader()
        let pipeline = makePipeline(loader: loader)
        let url = testURL(16, 16, 4)
        let request = ImageRequest(url: url)
        let first = pipeline.imageTask(for: request)
        let second = pipeline.imageTask(for: request)
        try #require(await eventually { pipeline.waiterCount(for: request) == 2 })
        first.cancel()
        #expect(first.isCancelled)
        await #expect(throws: CancellationError.self) { _ = try await first.response }
        #expect(pipeline.waiterCount(for: request) == 1)
        try #require(await loader.waitUntil { $0.loadCount(url) == 1 })
        #expect(loader.releaseWithFakeData(url) == 1)
        #expect(firstPixel(try await second.response) == colorBytes(4))
        #expect(loader.loadCount(url) == 1 && loader.cancelCount(url) == 0)
    }
}

@Suite("Custom cache keys: a rotating token hits the same entries", .timeLimit(.minutes(2)))
struct CacheKeyTests {
    /// With the token dropped from the identity: a second token hits memory; a new pipeline on
    /// the same disk cache with a third token hits disk; the loads used the real URLs.
    @Test func aRotatingTokenHitsMemoryThenDiskWithAConfiguredKey() async throws {
        try await withTemporaryDirectory(prefix: "AppAPITests") { directory in
            let loader = freshLoader()
            let ignoreToken = ImagePipeline.Configuration.ignoringQueryItems(["token"])
            let pipeline = try makeKeyedPipeline(loader, directory: directory, cacheKey: ignoreToken)
            let first = try await pipeline.image(for: ImageRequest(url: signedURL("a"), width: 100, height: 100))
            #expect(first.source == .network)
            #expect(first.fetchURL == URL(string: "https://cdn.example/64x48/5?token=a&w=160"))
            #expect(loader.loadOrder == [URL(string: "https://cdn.example/64x48/5?token=a&w=160")!])
            // The loader learns the identity too (a shared tier leases and publishes by it).
            #expect(loader.requests.first?.cacheURL == URL(string: "https://cdn.example/64x48/5?w=160"))
            #expect(pipeline.cacheURL(for: ImageRequest(url: signedURL("b"), width: 100, height: 100))
                    == URL(string: "https://cdn.example/64x48/5?w=160"))

            let second = try await pipeline.image(for: ImageRequest(url: signedURL("b"), width: 100, height: 100))
            #expect(second.source == .memory)
            #expect(second.fetchURL == URL(string: "https://cdn.example/64x48/5?token=b&w=160"))
            #expect(second.downloadedBytes == 0)
            #expect(loader.totalLoads == 1)

            let restarted = try makeKeyedPipeline(loader, directory: directory, cacheKey: ignoreToken)
            let third = try await restarted.image(for: ImageRequest(url: signedURL("c"), width: 100, height: 100))
            #expect(third.source == .disk)
            #expect(third.downloadedBytes == 0 && !third.isStale)
            #expect(loader.totalLoads == 1)
            // Another width bucket is another entry (and another download).
            let wide = try await restarted.image(for: ImageRequest(url: signedURL("c"), width: 600, height: 600))
            #expect(wide.source == .network)
            #expect(loader.totalLoads == 2)
        }
    }

    /// The query-item filter keeps everything but the named items, in order.
    @Test func ignoringQueryItemsDropsOnlyTheNamedItems() {
        let map = ImagePipeline.Configuration.ignoringQueryItems(["token", "exp"])
        let cases: [(String, String?)] = [
            ("https://a.example/p.jpg?token=1&w=320", "https://a.example/p.jpg?w=320"),
            ("https://a.example/p.jpg?w=320&token=1&exp=2&q=3", "https://a.example/p.jpg?w=320&q=3"),
            ("https://a.example/p.jpg?token=1", "https://a.example/p.jpg"),
            ("https://a.example/p.jpg?token&w=1#frag", "https://a.example/p.jpg?w=1#frag"),
            ("https://a.example/p.jpg?tokens=1&w=320", nil),
            ("https://a.example/p.jpg", nil),
            ("https://a.example/p.jpg#x?token=1", nil),
        ]
        for (input, expected) in cases {
            #expect(map(URL(string: input)!) == expected, "\(input)")
        }
    }

    /// Without a key each token is a picture of its own, in memory and on disk.
    @Test func withoutAKeyATokenIsANewEntry() async throws {
        try await withTemporaryDirectory(prefix: "AppAPITests") { directory in
            let loader = freshLoader()
            let pipeline = try makeKeyedPipeline(loader, directory: directory)
            _ = try await pipeline.image(for: ImageRequest(url: signedURL("a"), width: 100, height: 100))
            let second = try await pipeline.image(for: ImageRequest(url: signedURL("b"), width: 100, height: 100))
            #expect(second.source == .network)
            let restarted = try makeKeyedPipeline(loader, directory: directory)
            let third = try await restarted.image(for: ImageRequest(url: signedURL("c"), width: 100, height: 100))
            #expect(third.source == .network)
            #expect(loader.totalLoads == 3)
        }
    }

    /// The request-level key does the same, keeps width buckets apart, and joins two tokens'
    /// downloads in flight into one (made with the first URL).
    @Test func aRequestLevelKeyHitsMemoryAndDiskAndJoinsDownloads() async throws {
        try await withTemporaryDirectory(prefix: "AppAPITests") { directory in
            let held = HeldLoader(schemes: ["https"])
            let pipeline = try makeKeyedPipeline(held, directory: directory)
            func request(_ token: String, width: Int = 100) -> ImageRequest {
                var request = ImageRequest(url: signedURL(token), width: width, height: width)
                request.cacheKey = "photo 5"
                return request
            }
            #expect(pipeline.cacheURL(for: request("a")) == URL(string: "imgpipe-key:photo%205?w=160"))
            #expect(pipeline.cacheURL(for: request("a", width: 600)) == URL(string: "imgpipe-key:photo%205?w=640"))
            var original = request("a")
            original.targetSize = .original
            #expect(pipeline.cacheURL(for: original) == URL(string: "imgpipe-key:photo%205"))

            let first = Task { try await pipeline.image(for: request("a")) }
            let second = Task { try await pipeline.image(for: request("b")) }
            try #require(await eventually { pipeline.waiterCount(for: request("a")) == 2 })
            let fetched = URL(string: "https://cdn.example/64x48/5?token=a&w=160")!
            #expect(await held.waitUntil { !$0.heldURLs.isEmpty })
            #expect(held.heldURLs == [fetched])
            held.release(fetched, with: .success(.data(HeldLoader.fakeData(for: fetched), ResponseMetadata(freshFor: 600, origin: .network))))
            #expect(try await first.value.source == .network)
            #expect(try await second.value.bitmap == first.value.bitmap)
            #expect(try await pipeline.image(for: request("c")).source == .memory)
            #expect(held.totalLoads == 1)

            let restarted = try makeKeyedPipeline(held, directory: directory)
            #expect(try await restarted.image(for: request("d")).source == .disk)
            #expect(held.totalLoads == 1)
        }
    }
}

@Suite("One-call removal from memory and disk", .timeLimit(.minutes(2)))
struct RemovalTests {
    /// Two sizes (two width buckets) and a processed entry of one picture, plus another picture:
    /// removal takes every entry of the picture from memory and both buckets from disk, and
    /// leaves the other picture alone; the next request loads again.
    @Test func removeCachedImageRemovesEverySizeFromMemoryAndDisk() async throws {
        try await withTemporaryDirectory(prefix: "AppAPITests") { directory in
            let loader = freshLoader()
            let pipeline = try makeKeyedPipeline(loader, directory: directory)
            let small = ImageRequest(url: signedURL("x"), width: 100, height: 100)
            let wide = ImageRequest(url: signedURL("x"), width: 600, height: 600)
            let round = ImageRequest(url: signedURL("x"), width: 100, height: 100, processors: [.circle])
            let other = ImageRequest(url: signedURL("x", picture: 6), width: 100, height: 100)
            for request in [small, wide, round, other] { _ = try await pipeline.image(for: request) }
            let disk = try #require(pipeline.configuration.diskCache)
            #expect(await disk.cachedData(for: pipeline.cacheURL(for: small)) != nil)
            #expect(await disk.cachedData(for: pipeline.cacheURL(for: wide)) != nil)

            await pipeline.removeCachedImage(for: small)
            for request in [small, wide, round] { #expect(pipeline.cachedImage(for: request) == nil) }
            #expect(pipeline.cachedImage(for: other) != nil)
            #expect(await disk.cachedData(for: pipeline.cacheURL(for: small)) == nil)
            #expect(await disk.cachedData(for: pipeline.cacheURL(for: wide)) == nil)
            #expect(await disk.cachedData(for: pipeline.cacheURL(for: other)) != nil)
            #expect(try await pipeline.image(for: small).source == .network)
        }
    }

    /// `allSizes: false` removes only the request's own memory entry (and its disk entry);
    /// `removeAll()` empties both levels.
    @Test func removingOneSizeAndRemovingAll() async throws {
        try await withTemporaryDirectory(prefix: "AppAPITests") { directory in
            let loader = freshLoader()
            let pipeline = try makeKeyedPipeline(loader, directory: directory)
            let small = ImageRequest(url: signedURL("x"), width: 100, height: 100)
            let wide = ImageRequest(url: signedURL("x"), width: 600, height: 600)
            for request in [small, wide] { _ = try await pipeline.image(for: request) }
            await pipeline.removeCachedImage(for: small, allSizes: false)
            #expect(pipeline.cachedImage(for: small) == nil)
            #expect(pipeline.cachedImage(for: wide) != nil)
            let disk = try #require(pipeline.configuration.diskCache as? DiskCache)
            #expect(await disk.cachedData(for: pipeline.cacheURL(for: small)) == nil)
            #expect(await disk.cachedData(for: pipeline.cacheURL(for: wide)) != nil)

            await pipeline.removeAll()
            #expect(pipeline.memoryCache.count == 0)
            #expect(await disk.cachedData(for: pipeline.cacheURL(for: wide)) == nil)
            #expect(await disk.entryCount == 0)
        }
    }
}

@Suite("Responses say where they came from; values print short", .timeLimit(.minutes(1)))
struct ResponseBasicsAndDescriptionTests {
    /// A stale disk entry served while the background check runs is marked stale.
    @Test func aStaleAnswerIsMarkedWhileItRevalidates() async throws {
        let loader = HeldLoader.immediate()
        let disk = InMemoryDataCache()
        let url = testURL(8, 8, 2, scheme: "https")
        disk.seed(HeldLoader.fakeData(for: url), info: CacheEntryInfo(etag: "\"v1\""), for: url)
        let pipeline = makePipeline(loader: loader, diskCache: disk)
        let response = try await pipeline.image(for: ImageRequest(url: url))
        #expect(response.source == .disk && response.isStale && response.downloadedBytes == 0)
        await pipeline.waitForBackgroundWork()
        let fresh = try await pipeline.image(for: ImageRequest(url: url, cachePolicy: .reloadIgnoringCaches))
        #expect(fresh.source == .network && !fresh.isStale)
        #expect(fresh.downloadedBytes == HeldLoader.fakeData(for: url).count)
    }

    /// A 1000×1000 bitmap used to print four million numbers; now every value is a line.
    @Test func descriptionsAreShort() async throws {
        let bitmap = Bitmap(zeroed: PixelSize(width: 1000, height: 1000))
        #expect(bitmap.description == "Bitmap(1000×1000, rgba8Premultiplied, 4,000,000 bytes)")
        #expect(bitmap.debugDescription.count < 120)
        #expect(String(describing: bitmap).count < 100)

        let loader = HeldLoader.immediate()
        let pipeline = makePipeline(loader: loader)
        var request = ImageRequest(url: testURL(640, 480, 1, scheme: "https"), width: 256, height: 256,
                                   contentMode: .fill, processors: [.circle])
        request.headers = ["Authorization": "Bearer secret"]
        let response = try await pipeline.image(for: request)
        let key = pipeline.key(for: request)
        for text in [response.description, request.description, key.description] {
            #expect(text.count < 200, "\(text.count) characters: \(text)")
        }
        for text in [response.debugDescription, request.debugDescription, key.debugDescription] {
            #expect(text.count < 400, "\(text.count) characters: \(text)")
        }
        #expect(!request.debugDescription.contains("secret"))
        #expect(response.description.contains("256×256 from network"))
        print(response, request, key, separator: "\n")

        var long = ImageRequest(url: URL(string: "https://cdn.example/" + String(repeating: "a", count: 5000))!)
        long.cacheKey = String(repeating: "k", count: 5000)
        #expect(long.description.count < 250)
    }
}

/// A loader that reports `steps` progress values from the loading task before answering, as a
/// real loader does from its own thread.
private struct ChattyLoader: DataLoading {
    let steps: Int
    let schemes: Set<String> = ["test"]

    func load(_ request: DataLoadRequest) async throws -> DataLoadResult {
        let data = HeldLoader.fakeData(for: request.url)
        for step in 1...steps {
            request.progress?(Int64(step), Int64(steps))
            if step % 50 == 0 { await Task.yield() }
        }
        return .data(data, ResponseMetadata())
    }
}

// 0.1 s alone, 6.5 s beside the other suites, over 60 s once in a CI run on a starved 2-core
// machine: the limit catches a deadlock, not slowness.
@Suite("ImageTask progress under churn", .timeLimit(.minutes(5)))
struct ImageTaskChurnTests {
    /// Forty tasks on four pictures while the loaders report 2,000 values each; half the tasks
    /// are cancelled at once, some consumers stop reading early. No deadlock, every consumer's
    /// values rise, every task that was not cancelled ends with its picture and the total.
    @Test func manyTasksJoiningAndLeavingWhileProgressFlows() async throws {
        let pipeline = ImagePipeline(configuration: .init(decoders: DecoderRegistry([CountingDecoder()]),
                                                          loaders: LoaderRegistry([ChattyLoader(steps: 2000)])))
        let tasks = (0..<40).map { pipeline.imageTask(for: ImageRequest(url: testURL(8, 8, $0 % 4))) }
        for (index, task) in tasks.enumerated() where index % 2 == 1 { task.cancel() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, task) in tasks.enumerated() {
                group.addTask {
                    var last: Int64 = 0
                    var count = 0
                    for await value in task.progress {
                        #expect(value.completed >= last && value.total == 2000)
                        last = value.completed
                        count += 1
                        if index % 4 == 2 && count == 3 { break }  // stops reading early
                    }
                    if index % 2 == 1 {
                        await #expect(throws: CancellationError.self) { _ = try await task.response }
                    } else {
                        let response = try await task.response
                        #expect(firstPixel(response) == colorBytes(index % 4))
                        if index % 4 == 0 { #expect(task.currentProgress?.completed ?? 2000 == 2000) }
                    }
                }
            }
            try await group.waitForAll()
        }

        // A request with processors: the progress comes through the processing, the decode it
        // joins and the download.
        let processed = pipeline.imageTask(for: ImageRequest(url: testURL(8, 8, 9), processors: [.grayscale]))
        var values: [ImageTask.Progress] = []
        for await value in processed.progress { values.append(value) }
        #expect(values.last == ImageTask.Progress(completed: 2000, total: 2000))
        #expect(try await processed.response.downloadedBytes == HeldLoader.fakeData(for: testURL(8, 8, 9)).count)
    }
}
