import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// `test://HOST/8x8/N`: hosts of one length, so every distinct request costs the same.
private func url(_ host: String, _ n: Int) -> URL { URL(string: "test://\(host)/8x8/\(n)")! }

/// A pipeline over `loader` whose requests in flight may hold `budget` bytes.
private func pipeline(_ loader: HeldLoader, budget: Int?) -> ImagePipeline {
    var configuration = ImagePipeline.Configuration(decoders: DecoderRegistry([CountingDecoder()]),
                                                    loaders: LoaderRegistry([loader]))
    configuration.requestMemoryBudget = budget
    return ImagePipeline(configuration: configuration)
}

/// What one distinct request and one caller joining it are counted at (equal for every URL
/// of `url(_:_:)`), read from a pipeline without a budget.
private func costs() async throws -> (distinct: Int, joiner: Int) {
    let loader = HeldLoader()
    let pipeline = pipeline(loader, budget: nil)
    let request = ImageRequest(url: url("probe", 0))
    let first = Task { try await pipeline.image(for: request) }
    try #require(await loader.waitUntil { $0.totalLoads == 1 })
    let distinct = pipeline.requestsInFlight.bytes
    let second = Task { try await pipeline.image(for: request) }
    try #require(await eventually { pipeline.waiterCount(for: request) == 2 })
    let joiner = pipeline.requestsInFlight.bytes - distinct
    loader.releaseWithFakeData(request.url)
    _ = try await (first.value, second.value)
    return (distinct, joiner)
}

/// A task asking `pipeline` for `url`, once the loader holds its load (one after another, so
/// "the newest" is known).
private func started(_ url: URL, on pipeline: ImagePipeline, _ loader: HeldLoader,
                     priority: ImagePriority = .visible) async throws -> Task<ImageResponse, any Error> {
    let loads = loader.loadCount(url)
    let task = Task { try await pipeline.image(for: ImageRequest(url: url, priority: priority)) }
    try #require(await loader.waitUntil { $0.loadCount(url) == loads + 1 })
    return task
}

/// Nothing is counted in flight any more.
private func isIdle(_ pipeline: ImagePipeline) -> Bool {
    let inFlight = pipeline.requestsInFlight
    return inFlight.count == 0 && inFlight.bytes == 0
}

/// The `overloaded` error `task` failed with, if it did.
private func overload(of task: Task<ImageResponse, any Error>) async -> (limit: Limit, detail: String, url: URL)? {
    guard case .failure(ImagePipelineError.overloaded(let url, let limit, let detail)) = await task.result else { return nil }
    return (limit, detail, url)
}

@Suite("Requests in flight are bounded by the memory they hold", .timeLimit(.minutes(2)))
struct RequestAdmissionTests {
    /// A request starting work is counted at its tasks' cost, a caller joining it at a fraction;
    /// both are uncounted when they end, however they end.
    @Test func aJoiningCallerCostsAFractionAndEveryEndUncounts() async throws {
        let (distinct, joiner) = try await costs()
        #expect(distinct > 60_000 && distinct < 70_000, "\(distinct) bytes for a request starting work")
        #expect(joiner > 16_000 && joiner * 2 < distinct, "\(joiner) bytes for a joining caller")

        let loader = HeldLoader()
        let pipeline = pipeline(loader, budget: nil)
        let tasks = (0..<6).map { n in Task { try await pipeline.image(for: ImageRequest(url: url("hosta", n / 3))) } }
        try #require(await eventually { await (0..<2).asyncAllSatisfy { pipeline.waiterCount(for: ImageRequest(url: url("hosta", $0))) == 3 } })
        #expect(pipeline.requestsInFlight.bytes == 2 * distinct + 4 * joiner)
        tasks[0].cancel()  // a starter leaves; its work goes on for the two joiners, and stays counted
        try #require(await eventually { pipeline.requestsInFlight.count == 5 })
        #expect(pipeline.requestsInFlight.bytes == 2 * distinct + 3 * joiner)
        #expect(pipeline.waiterCount(for: ImageRequest(url: url("hosta", 0))) == 2)
        try #require(await loader.waitUntil { $0.heldURLs.count == 2 })
        for n in 0..<2 { loader.releaseWithFakeData(url("hosta", n)) }
        for task in tasks.dropFirst() { _ = try await task.value }
        #expect(isIdle(pipeline))
    }

    /// A plain request joining the base decode of a processed one joins work no counted caller
    /// started; once the processed caller leaves, that work runs for the plain one alone, so
    /// the plain one carries the work's cost from the start.
    @Test func joiningWorkNoCountedCallerHoldsCarriesTheWorksCost() async throws {
        let (distinct, _) = try await costs()
        let loader = HeldLoader()
        let pipeline = pipeline(loader, budget: nil)
        let processed = Task { try await pipeline.image(for: ImageRequest(url: url("hosta", 0), processors: [.grayscale])) }
        try #require(await loader.waitUntil { $0.loadCount(url("hosta", 0)) == 1 })
        let plain = Task { try await pipeline.image(for: ImageRequest(url: url("hosta", 0))) }
        try #require(await eventually { pipeline.waiterCount(for: ImageRequest(url: url("hosta", 0))) == 2 })
        #expect(pipeline.requestsInFlight.bytes == 2 * distinct)
        processed.cancel()
        try #require(await eventually { pipeline.requestsInFlight.count == 1 })
        #expect(pipeline.requestsInFlight.bytes == distinct)
        loader.releaseWithFakeData(url("hosta", 0))
        _ = try await plain.value
        #expect(isIdle(pipeline))
    }

    /// Three requests fill the budget: a fourth of the same host fails at once as overloaded,
    /// naming its URL, and its loader is never asked; a memory hit still answers; once one of
    /// the three is answered, the fourth gets in.
    @Test func overTheBudgetARequestFailsAtOnceWithoutALoad() async throws {
        let (distinct, _) = try await costs()
        let loader = HeldLoader()
        let pipeline = pipeline(loader, budget: 3 * distinct)
        let cached = try await started(url("hosta", 9), on: pipeline, loader)
        loader.releaseWithFakeData(url("hosta", 9))
        _ = try await cached.value
        var held: [Task<ImageResponse, any Error>] = []
        for n in 0..<3 { held.append(try await started(url("hosta", n), on: pipeline, loader)) }

        let refused = Task { try await pipeline.image(for: ImageRequest(url: url("hosta", 3))) }
        let overload = try #require(await overload(of: refused))
        #expect(overload.limit == .requestsInFlight && overload.url == url("hosta", 3))
        #expect(overload.detail.contains("requestMemoryBudget"), "\(overload.detail)")
        let message = String(describing: try #require(await refused.result.failure))
        #expect(message.contains("test://hosta/8x8/3") && message.contains("overloaded (requests in flight)"), "\(message)")
        #expect(loader.loadCount(url("hosta", 3)) == 0)
        #expect(pipeline.requestsInFlight.count == 3)
        // Transient: not remembered as a failure. A memory hit is not in flight.
        #expect(pipeline.rememberedFailureCount == 0)
        #expect(try await pipeline.image(for: ImageRequest(url: url("hosta", 9))).source == .memory)

        loader.releaseWithFakeData(url("hosta", 0))
        _ = try await held[0].value
        let retried = try await started(url("hosta", 3), on: pipeline, loader)
        for n in 1..<4 { loader.releaseWithFakeData(url("hosta", n)) }
        for task in held + [retried] { _ = try await task.value }
        #expect(isIdle(pipeline))
    }

    /// A visible request finding the budget full pushes out the newest prefetch, which fails
    /// as overloaded and whose download is cancelled; a prefetch finding it full is refused
    /// and pushes out nothing.
    @Test func aVisibleRequestPushesOutTheNewestPrefetch() async throws {
        let (distinct, _) = try await costs()
        let loader = HeldLoader()
        let pipeline = pipeline(loader, budget: 3 * distinct)
        let visible = try await started(url("hosta", 0), on: pipeline, loader)
        var prefetches: [Task<ImageResponse, any Error>] = []
        for n in 1..<3 { prefetches.append(try await started(url("hosta", n), on: pipeline, loader, priority: .prefetch)) }

        let lateFetch = Task { try await pipeline.image(for: ImageRequest(url: url("hosta", 4), priority: .prefetch)) }
        #expect(await overload(of: lateFetch)?.limit == .requestsInFlight)
        #expect(pipeline.requestsInFlight.count == 3)

        let second = Task { try await pipeline.image(for: ImageRequest(url: url("hosta", 3))) }
        let pushed = try #require(await overload(of: prefetches[1]))
        #expect(pushed.limit == .requestsInFlight && pushed.url == url("hosta", 2))
        #expect(pushed.detail.hasPrefix("pushed out by a visible request"), "\(pushed.detail)")
        #expect(await loader.waitUntil { $0.cancelCount(url("hosta", 2)) == 1 && $0.loadCount(url("hosta", 3)) == 1 })
        for n in [0, 1, 3] { loader.releaseWithFakeData(url("hosta", n)) }
        _ = try await (visible.value, prefetches[0].value, second.value)
    }

    /// The newest prefetch is the only waiter of the work a visible newcomer joins: pushing it
    /// out would cancel that work, so the prefetch before it goes instead, and the newcomer
    /// shares the download in flight.
    @Test func aPushOutNeverTakesTheWorkTheNewcomerJoins() async throws {
        let (distinct, joiner) = try await costs()
        let loader = HeldLoader()
        let pipeline = pipeline(loader, budget: 3 * distinct + joiner / 2)
        let visible = try await started(url("hosta", 0), on: pipeline, loader)
        let older = try await started(url("hosta", 1), on: pipeline, loader, priority: .prefetch)
        let newest = try await started(url("hosta", 2), on: pipeline, loader, priority: .prefetch)

        let joining = Task { try await pipeline.image(for: ImageRequest(url: url("hosta", 2))) }
        #expect(await overload(of: older)?.detail.hasPrefix("pushed out by a visible request") == true)
        try #require(await eventually { pipeline.waiterCount(for: ImageRequest(url: url("hosta", 2))) == 2 })
        #expect(loader.loadCount(url("hosta", 2)) == 1 && loader.cancelCount(url("hosta", 2)) == 0)
        for n in [0, 2] { loader.releaseWithFakeData(url("hosta", n)) }
        _ = try await (visible.value, newest.value, joining.value)
        #expect(isIdle(pipeline))
    }

    /// An ``ImageTask`` started as a prefetch and raised to visible (scrolled into view) is no
    /// longer pushed out as a prefetch; one lowered to prefetch is.
    @Test func aTasksPriorityNowDecidesWhetherItIsPushedOutAsAPrefetch() async throws {
        let (distinct, _) = try await costs()
        let loader = HeldLoader()
        let pipeline = pipeline(loader, budget: 2 * distinct)
        let raised = pipeline.imageTask(for: ImageRequest(url: url("hosta", 0), priority: .prefetch))
        try #require(await loader.waitUntil { $0.loadCount(url("hosta", 0)) == 1 })
        await raised.setPriority(.visible)
        let lowered = pipeline.imageTask(for: ImageRequest(url: url("hosta", 1)))
        try #require(await loader.waitUntil { $0.loadCount(url("hosta", 1)) == 1 })
        await lowered.setPriority(.prefetch)

        let newcomer = Task { try await pipeline.image(for: ImageRequest(url: url("hosta", 2))) }
        try #require(await loader.waitUntil { $0.loadCount(url("hosta", 2)) == 1 })
        await #expect(throws: ImagePipelineError.self) { try await lowered.response }
        // The raised one is now the only visible caller of its host before the newcomer: a
        // second newcomer of the same host finds no prefetch to push out and is refused.
        let refused = Task { try await pipeline.image(for: ImageRequest(url: url("hosta", 3))) }
        #expect(await overload(of: refused)?.limit == .requestsInFlight)
        for n in [0, 2] { loader.releaseWithFakeData(url("hosta", n)) }
        _ = try await (raised.response, newcomer.value)
        #expect(isIdle(pipeline))
    }

    /// Four requests each to two slow hosts fill the budget. A healthy host's first request
    /// pushes out the newest of a slow host's, its second the other's; its third would leave
    /// it holding more than a slow host, and is refused. A slow host's own new request is
    /// refused: its host already holds the most.
    @Test func aFloodToSlowHostsCannotKeepAHealthyHostOut() async throws {
        let (distinct, _) = try await costs()
        let loader = HeldLoader()
        let pipeline = pipeline(loader, budget: 8 * distinct)
        var slow: [Task<ImageResponse, any Error>] = []
        for host in ["slowa", "slowb"] { for n in 0..<4 { slow.append(try await started(url(host, n), on: pipeline, loader)) } }
        #expect(await overload(of: Task { try await pipeline.image(for: ImageRequest(url: url("slowa", 5))) }) != nil)

        let first = try await started(url("quick", 0), on: pipeline, loader)
        let second = try await started(url("quick", 1), on: pipeline, loader)
        let third = Task { try await pipeline.image(for: ImageRequest(url: url("quick", 2))) }
        #expect(await overload(of: third)?.limit == .requestsInFlight)

        // The newest of each slow host went, and its download with it.
        for index in [3, 7] {
            let pushed = try #require(await overload(of: slow[index]))
            #expect(pushed.detail.hasPrefix("pushed out for a host whose requests hold less"), "\(pushed.detail)")
            #expect(await loader.waitUntil { $0.cancelCount(pushed.url) == 1 })
        }
        for n in 0..<2 { loader.releaseWithFakeData(url("quick", n)) }
        _ = try await (first.value, second.value)
        for host in ["slowa", "slowb"] { for n in 0..<3 { loader.releaseWithFakeData(url(host, n)) } }
        for index in [0, 1, 2, 4, 5, 6] { _ = try await slow[index].value }
        #expect(isIdle(pipeline))
    }

    /// The newest request of the longest host is a caller joining work another caller waits
    /// for: pushing it out frees only its own cost, so the next newest goes too, and the shared
    /// work goes on for the caller left.
    @Test func pushingOutAJoiningCallerKeepsTheWorkForTheOthers() async throws {
        let (distinct, joiner) = try await costs()
        let loader = HeldLoader()
        let pipeline = pipeline(loader, budget: 3 * distinct + joiner)
        var slow: [Task<ImageResponse, any Error>] = []
        for n in 0..<3 { slow.append(try await started(url("slowa", n), on: pipeline, loader)) }
        slow.append(Task { try await pipeline.image(for: ImageRequest(url: url("slowa", 0))) })
        try #require(await eventually { pipeline.waiterCount(for: ImageRequest(url: url("slowa", 0))) == 2 })

        let healthy = try await started(url("quick", 0), on: pipeline, loader)
        #expect(await overload(of: slow[3])?.url == url("slowa", 0))
        #expect(await overload(of: slow[2])?.url == url("slowa", 2))
        #expect(loader.cancelCount(url("slowa", 0)) == 0)
        for n in 0..<2 { loader.releaseWithFakeData(url("slowa", n)) }
        loader.releaseWithFakeData(url("quick", 0))
        _ = try await (slow[0].value, slow[1].value, healthy.value)
        #expect(isIdle(pipeline))
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

extension Sequence {
    fileprivate func asyncAllSatisfy(_ predicate: (Element) async -> Bool) async -> Bool {
        for element in self where await !predicate(element) { return false }
        return true
    }
}
