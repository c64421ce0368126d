import Foundation
import ImagePipelineKit
import PipelineCore
import PipelineTestSupport
import Synchronization
import Testing

@testable import ImageServer

/// A latch a test opens once: waiters resume when it opens (or at once if it already has).
private final class Latch: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }
}

@Suite("ImageServer parts")
struct ServerPartsTests {
    @Test func theGateRunsWorkersAtOnceQueuesUpToItsLimitAndRefusesTheRest() async throws {
        let gate = RequestGate(workers: 2, queueSize: 1)
        let release = Latch()
        let started = Counter()
        let running = (0..<3).map { _ in
            Task {
                try await gate.run {
                    started.increment()
                    await release.wait()
                }
            }
        }
        #expect(await eventually { gate.load == (2, 1) })
        #expect(started.current == 2)
        do {
            try await gate.run {}
            Issue.record("a fourth request was admitted with 2 workers busy and the queue full")
        } catch let error as ServerError {
            #expect(error.kind == .tooManyRequests)
        }
        release.open()
        for task in running { try await task.value }
        #expect(started.current == 3)
        #expect(gate.load == (0, 0))
    }

    @Test func aCancelledWaiterLeavesTheLine() async throws {
        let gate = RequestGate(workers: 1, queueSize: 1)
        let release = Latch()
        let holder = Task { try await gate.run { await release.wait() } }
        #expect(await eventually { gate.load.running == 1 })
        let waiter = Task { try await gate.run {} }
        #expect(await eventually { gate.load.waiting == 1 })
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(gate.load.waiting == 0)
        // The line has room again.
        let next = Task { try await gate.run { 7 } }
        #expect(await eventually { gate.load.waiting == 1 })
        release.open()
        try await holder.value
        #expect(try await next.value == 7)
    }

    @Test func identicalRequestsInFlightShareOneWorkAndTheLastToLeaveCancelsIt() async throws {
        let flights = SingleFlight<Int>()
        let runs = Counter()
        let release = Latch()
        let work: @Sendable () async throws -> Int = {
            runs.increment()
            await release.wait()
            try Task.checkCancellation()
            return 42
        }
        let first = Task { try await flights.value(for: "a", work) }
        let second = Task { try await flights.value(for: "a", work) }
        #expect(await eventually { runs.current == 1 })
        // One waiter leaving does not stop the work the other still needs.
        first.cancel()
        await #expect(throws: CancellationError.self) { try await first.value }
        release.open()
        #expect(try await second.value == 42)
        #expect(runs.current == 1)

        // Alone, a cancelled waiter cancels the work.
        let blocked = Latch()
        let began = Latch()
        let observed = Latch()
        let lone = Task {
            try await flights.value(for: "b") {
                await withTaskCancellationHandler {
                    began.open()
                    await blocked.wait()
                } onCancel: {
                    observed.open()
                }
                return 1
            }
        }
        await began.wait()
        lone.cancel()
        await observed.wait()
        await #expect(throws: CancellationError.self) { try await lone.value }
        blocked.open()
    }

    @Test func acceptNamesWhatTheClientTakesAndZeroWeightsRefuse() {
        let chromium = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"
        #expect(ImageServer.acceptedTypes(chromium).isSuperset(of: ["image/avif", "image/webp"]))
        #expect(!ImageServer.acceptedTypes("image/webp;q=0, image/png").contains("image/webp"))
        #expect(ImageServer.acceptedTypes("image/webp; q=0.5").contains("image/webp"))
        #expect(ImageServer.acceptedTypes("IMAGE/AVIF").contains("image/avif"))
        #expect(ImageServer.acceptedTypes("").isEmpty)
    }

    /// `ImageFormat("jxl")` has no MIME type in the core: the choice once never offered JPEG XL.
    @Test func acceptPicksTheAutomaticFormatsTheServerEncodes() throws {
        var configuration = ImageServer.Configuration(pipeline: makePipeline(loader: HeldLoader.immediate()), encoders: .standard)
        configuration.autoJXL = true
        let server = ImageServer(configuration: configuration)
        let all = server.outputChoice(options: RenderOptions(), accept: "image/jxl,image/avif,image/webp,*/*")
        #expect(all.explicit == nil)
        #expect(all.accepted.contains(OutputNegotiation.jxl) && all.accepted.contains(.webp))
        #expect(all.accepted.contains(.avif) == (EncoderRegistry.standard.encoder(for: .avif) != nil))
        #expect(server.outputChoice(options: RenderOptions(), accept: "image/webp").accepted == [.webp])
        var named = RenderOptions()
        named.format = .png
        #expect(server.outputChoice(options: named, accept: "image/jxl") == OutputChoice(explicit: .png, accepted: []))
    }

    @Test func ifNoneMatchComparesWeaklyAndTakesLists() {
        let etag = "\"abc\""
        #expect(ImageServer.matches("\"abc\"", etag: etag))
        #expect(ImageServer.matches("W/\"abc\"", etag: etag))
        #expect(ImageServer.matches("\"x\", \"abc\"", etag: etag))
        #expect(ImageServer.matches("*", etag: etag))
        #expect(!ImageServer.matches("\"abcd\"", etag: etag))
    }

    @Test func fileNamesAreSafeInAQuotedHeader() throws {
        let source = try #require(URL(string: "https://example.com/photos/sunset.jpg"))
        #expect(ImageServer.fileName(nil, source: source, format: .webp) == "sunset.webp")
        #expect(ImageServer.fileName("a\"b\r\nc", source: source, format: .png) == "a_b__c.png")
        #expect(ImageServer.fileName("", source: source, format: .jpeg) == "image.jpg")
    }

    @Test func requestIDsAreTheClientsShortTokenOrNew() {
        #expect(ImageServer.requestID("abc-123") == "abc-123")
        let made = ImageServer.requestID("bad id\n")
        #expect(made != "bad id\n" && !made.isEmpty && made.allSatisfy(\.isHexDigit))
        #expect(ImageServer.requestID(String(repeating: "a", count: 65)).count <= 32)
    }

    @Test func metricsAreInPrometheusTextFormat() {
        let metrics = ServerMetrics()
        metrics.requestStarted()
        metrics.requestFinished(status: 200, seconds: 0.02, error: nil)
        metrics.requestStarted()
        metrics.requestFinished(status: 404, seconds: 0.001, error: .notFound)
        metrics.span("queue", seconds: 0.003)
        metrics.hit("result_memory")
        let text = metrics.prometheusText()
        #expect(text.contains("requests_total 2\n"))
        #expect(text.contains("status_codes_total{status=\"404\"} 1\n"))
        #expect(text.contains("errors_total{type=\"not_found\"} 1\n"))
        #expect(text.contains("request_duration_seconds_bucket{le=\"0.025\"} 2\n"))
        #expect(text.contains("request_duration_seconds_bucket{le=\"0.01\"} 1\n"))
        #expect(text.contains("request_span_duration_seconds_count{span=\"queue\"} 1\n"))
        #expect(text.contains("cache_hits_total{tier=\"result_memory\"} 1\n"))
        #expect(text.contains("requests_in_progress 0\n"))
        let resident = text.split(separator: "\n").first { $0.hasPrefix("process_resident_memory_bytes ") }
        #expect((resident.flatMap { Int($0.split(separator: " ")[1]) } ?? 0) > 1 << 20)
    }
}
