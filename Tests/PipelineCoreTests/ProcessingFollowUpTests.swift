import Foundation
@testable import PipelineCore
import PipelineTestSupport
import Synchronization
import Testing

/// What ran on the decode pool, in order: `decode W` and `process W` by picture width.
private final class PoolLog: Sendable {
    private let entries = Mutex<[String]>([])
    func append(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}

/// Decodes ``FakeImage`` data (through a ``CountingDecoder``), logging each decode; the first one
/// waits at `gate` until the test opens it, so the others queue behind it.
private final class GatedDecoder: ImageDecoding {
    let log: PoolLog
    let gate = DispatchSemaphore(value: 0)
    private let first = Mutex(true)
    private let held = Mutex(false)
    /// The first decode is waiting at the gate.
    var gateIsHeld: Bool { held.withLock { $0 } }
    private let base = CountingDecoder()
    init(log: PoolLog) { self.log = log }
    var signatures: [ImageSignature] { base.signatures }
    func withSession<R>(for data: Data, _ body: (any ImageDecodingSession) throws -> R) throws -> R {
        if first.withLock({ isFirst in defer { isFirst = false }; return isFirst }) {
            held.withLock { $0 = true }
            _ = gate.wait(timeout: .now() + 120)  // a safety net for a broken test, not a pause
        }
        let info = try base.readFakeInfo(data)
        log.append("decode \(info.size.width)")
        return try base.withSession(for: data, body)
    }
}

/// Logs each run with the picture's width.
private struct LoggingProcessor: ImageProcessing {
    let log: PoolLog
    var identifier: String { "logging" }
    func process(_ bitmap: Bitmap) throws -> Bitmap {
        log.append("process \(bitmap.width)")
        return bitmap
    }
}

@Suite struct ProcessingFollowUpTests {
    /// Three processed pictures asked for at once on one decode thread: each one's processors run
    /// straight after its own decode, in the same job, not after every decode queued beside it.
    @Test func aProcessedPictureFollowsItsOwnDecode() async throws {
        let log = PoolLog()
        let decoder = GatedDecoder(log: log)
        let loader = HeldLoader.immediate()
        let pipeline = makePipeline(loader: loader, decoders: DecoderRegistry([decoder]), maxConcurrentDecodes: 1)
        let processor = ImageProcessor(LoggingProcessor(log: log))
        let requests = [40, 41, 42].map { ImageRequest(url: testURL($0, $0, $0), processors: [processor]) }
        try await withThrowingTaskGroup(of: Int.self) { group in
            for request in requests { group.addTask { try await pipeline.image(for: request).bitmap.width } }
            // The first decode holds the only thread until the two others wait in the queue.
            #expect(await eventually { pipeline.decoder.pool.queuedCount == 2 })
            decoder.gate.signal()
            var widths: [Int] = []
            for try await width in group { widths.append(width) }
            #expect(Set(widths) == [40, 41, 42])
        }
        let entries = log.all
        #expect(entries.count == 6)
        // Pairs: each decode is followed at once by its own processing.
        for pair in stride(from: 0, to: entries.count - 1, by: 2) {
            let width = entries[pair].split(separator: " ").last ?? ""
            #expect(entries[pair] == "decode \(width)" && entries[pair + 1] == "process \(width)", "\(entries)")
        }
    }

    /// A processed request that joins a decode whose job has already started gets its
    /// processors run in a job of their own, once.
    @Test func aRequestJoiningAStartedDecodeIsProcessedOnItsOwn() async throws {
        let log = PoolLog()
        let decoder = GatedDecoder(log: log)
        let pipeline = makePipeline(loader: HeldLoader.immediate(), decoders: DecoderRegistry([decoder]), maxConcurrentDecodes: 1)
        let url = testURL(40, 40, 7)
        let plain = ImageRequest(url: url)
        let processed = ImageRequest(url: url, processors: [ImageProcessor(LoggingProcessor(log: log))])
        async let plainResponse = pipeline.image(for: plain)
        // The plain decode's job is running (it holds the gate) before the processed request joins.
        #expect(await eventually { decoder.gateIsHeld })
        async let processedResponse = pipeline.image(for: processed)
        #expect(await pipeline.waitForWaiters(1, for: processed))
        #expect(await eventually { pipeline.waiterCount(for: plain) == 2 })  // the caller and the processing work
        decoder.gate.signal()
        let (a, b) = try await (plainResponse, processedResponse)
        #expect(a.bitmap.width == 40 && b.bitmap.width == 40)
        #expect(log.all == ["decode 40", "process 40"])
    }

    /// Three plain decodes on one thread, the first held: the second and third wait in the
    /// queue. Then a processed request of the second picture, at `priority`, joins its queued
    /// decode. The pool's order says whether the decode's job ran its processors.
    private func joinQueuedDecode(processedAt priority: ImagePriority) async throws -> [String] {
        let log = PoolLog()
        let decoder = GatedDecoder(log: log)
        let pipeline = makePipeline(loader: HeldLoader.immediate(), decoders: DecoderRegistry([decoder]), maxConcurrentDecodes: 1)
        let plain = [40, 41, 42].map { ImageRequest(url: testURL($0, $0, $0)) }
        let processed = ImageRequest(url: testURL(41, 41, 41), priority: priority, processors: [LoggingProcessor(log: log)])
        try await withThrowingTaskGroup(of: Void.self) { group in
            // One after another, so the pool has them in this order: the first holds the only
            // thread, the second and third wait in the queue.
            for (n, request) in plain.enumerated() {
                group.addTask { _ = try await pipeline.image(for: request) }
                #expect(await eventually { n == 0 ? decoder.gateIsHeld : pipeline.decoder.pool.queuedCount == n })
            }
            group.addTask { _ = try await pipeline.image(for: processed) }
            #expect(await eventually { pipeline.waiterCount(for: plain[1]) == 2 })  // its caller and the processing work
            decoder.gate.signal()
            try await group.waitForAll()
        }
        return log.all
    }

    /// A processed request that joins a decode still waiting in the queue is run by that
    /// decode's job, ahead of the decode queued after it.
    @Test func aRequestJoiningAQueuedDecodeIsProcessedInItsJob() async throws {
        let order = try await joinQueuedDecode(processedAt: .visible)
        #expect(order == ["decode 40", "decode 41", "process 41", "decode 42"], "\(order)")
    }

    /// A prefetch's processors do not delay a visible picture of the same decode: they run in a
    /// job of their own, at prefetch priority, after the visible decode queued behind.
    @Test func aPrefetchsProcessorsWaitForTheirOwnJob() async throws {
        let order = try await joinQueuedDecode(processedAt: .prefetch)
        #expect(order == ["decode 40", "decode 41", "decode 42", "process 41"], "\(order)")
    }
}
