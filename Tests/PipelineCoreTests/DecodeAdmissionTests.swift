import Foundation
import PipelineCore
import PipelineTestSupport
import Synchronization
import Testing

/// Serves `mem:///<estimate in KiB>/<id>` as "GATE" data naming both.
private struct GateLoader: DataLoading {
    var schemes: Set<String> { ["mem"] }
    func load(_ request: DataLoadRequest) async throws -> DataLoadResult {
        .data(Data(("GATE" + request.url.path).utf8), ResponseMetadata())
    }
}

/// A decoder whose sessions estimate what the data says and whose decodes block (on the
/// decode pool's thread) until the test opens their gate: the test sees which decodes the
/// pipeline let start.
private final class GatedDecoder: ImageDecoding {
    private struct State {
        var running: Set<Int> = []
        var started: [Int] = []
        var open: Set<Int> = []
        var openAll = false
        var peakRunning = 0
    }
    private let state = Mutex(State())
    private let condition = NSCondition()

    var signatures: [ImageSignature] { [.magic(Array("GATE".utf8), format: "gate")] }

    func withSession<R>(for data: Data, _ body: (any ImageDecodingSession) throws -> R) throws -> R {
        let parts = String(decoding: data.dropFirst(4), as: UTF8.self).split(separator: "/").compactMap { Int($0) }
        guard parts.count == 2 else { throw ImagePipelineError.corruptData(format: "gate", message: "bad gate data") }
        return try body(Session(decoder: self, kibibytes: parts[0], id: parts[1]))
    }

    private struct Session: ImageDecodingSession {
        let decoder: GatedDecoder
        let kibibytes: Int
        let id: Int
        var info: ImageInfo { ImageInfo(format: "gate", size: PixelSize(width: 1, height: 1)) }
        func estimatedPeakMemory(_ options: DecodeOptions) -> Int { kibibytes << 10 }
        func decode(_ options: DecodeOptions) throws -> DecodedImage {
            decoder.run(id)
            return DecodedImage(bitmap: Bitmap(zeroed: PixelSize(width: 1, height: 1)), info: info)
        }
    }

    private func run(_ id: Int) {
        state.withLock {
            $0.running.insert(id)
            $0.started.append(id)
            $0.peakRunning = max($0.peakRunning, $0.running.count)
        }
        condition.lock()
        while !state.withLock({ $0.openAll || $0.open.contains(id) }) { condition.wait() }
        condition.unlock()
        state.withLock { _ = $0.running.remove(id) }
    }

    func open(_ ids: some Sequence<Int>) {
        state.withLock { $0.open.formUnion(ids) }
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    /// Opens every gate, now and later: a failed test never leaves a pool thread waiting.
    func openAll() {
        state.withLock { $0.openAll = true }
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    var running: Set<Int> { state.withLock { $0.running } }
    var started: [Int] { state.withLock { $0.started } }
    var peakRunning: Int { state.withLock { $0.peakRunning } }
}

private func gatedPipeline(_ decoder: GatedDecoder, budget: Int?) -> ImagePipeline {
    var configuration = ImagePipeline.Configuration(
        decoders: DecoderRegistry([decoder]), loaders: LoaderRegistry([GateLoader()]),
        memoryCache: MemoryCache(costLimit: 1 << 20), maxConcurrentDecodes: 8, negativeCacheLifetime: 0)
    configuration.decodeMemoryBudget = budget
    return ImagePipeline(configuration: configuration)
}

private func gateURL(kibibytes: Int, id: Int) -> URL {
    URL(string: "mem:///\(kibibytes)/\(id)")!
}

@Suite("Decode admission by memory")
struct DecodeAdmissionTests {
    @Test func decodesStartOnlyWhileTheirEstimatesFitTheBudget() async throws {
        let decoder = GatedDecoder()
        defer { decoder.openAll() }
        // 10 MiB for decodes of 4 MiB each: two at a time, though the pool has 8 threads.
        let pipeline = gatedPipeline(decoder, budget: 10 << 20)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for id in 0..<6 {
                group.addTask { _ = try await pipeline.image(for: ImageRequest(url: gateURL(kibibytes: 4096, id: id))) }
            }
            var finished: Set<Int> = []
            while finished.count < 6 {
                let expected = min(2, 6 - finished.count)
                try #require(await eventually(timeout: 300) { decoder.running.count == expected && pipeline.decodeMemory.waitingDecodes == 6 - finished.count - expected })
                #expect(decoder.running.count == expected)
                let next = decoder.running
                finished.formUnion(next)
                decoder.open(next)
            }
            try await group.waitForAll()
        }
        #expect(decoder.peakRunning == 2)
        let usage = pipeline.decodeMemory
        #expect(usage.bytesInUse == 0)
        #expect(usage.peakBytesInUse <= 10 << 20 && usage.peakBytesInUse >= 8 << 20)
    }

    @Test func withoutABudgetOnlyTheThreadCountLimits() async throws {
        let decoder = GatedDecoder()
        defer { decoder.openAll() }
        let pipeline = gatedPipeline(decoder, budget: nil)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for id in 0..<4 {
                group.addTask { _ = try await pipeline.image(for: ImageRequest(url: gateURL(kibibytes: 4096, id: id))) }
            }
            try #require(await eventually(timeout: 300) { decoder.running.count == 4 })
            decoder.open(0..<4)
            try await group.waitForAll()
        }
        #expect(pipeline.decodeMemory.budget == nil)
    }

    @Test func aVisibleDecodeGoesBeforePrefetchesThatWaitedLonger() async throws {
        let decoder = GatedDecoder()
        defer { decoder.openAll() }
        let pipeline = gatedPipeline(decoder, budget: 4 << 20)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { _ = try await pipeline.image(for: ImageRequest(url: gateURL(kibibytes: 4096, id: 0))) }
            try #require(await eventually(timeout: 300) { decoder.running == [0] })
            for id in 1...3 {
                group.addTask {
                    _ = try await pipeline.image(for: ImageRequest(url: gateURL(kibibytes: 4096, id: id), priority: .prefetch))
                }
            }
            try #require(await eventually(timeout: 300) { pipeline.decodeMemory.waitingDecodes == 3 })
            group.addTask { _ = try await pipeline.image(for: ImageRequest(url: gateURL(kibibytes: 4096, id: 4))) }
            try #require(await eventually(timeout: 300) { pipeline.decodeMemory.waitingDecodes == 4 })
            decoder.open([0])
            try #require(await eventually(timeout: 300) { decoder.running == [4] })
            decoder.open(1...4)
            try await group.waitForAll()
        }
        #expect(decoder.started.first == 0 && decoder.started.dropFirst().first == 4)
        #expect(decoder.peakRunning == 1)
    }

    @Test func aDecodeLargerThanTheBudgetRunsAloneAndACancelledWaiterLeavesTheLine() async throws {
        let decoder = GatedDecoder()
        defer { decoder.openAll() }
        let pipeline = gatedPipeline(decoder, budget: 1 << 20)
        let big = Task { try await pipeline.image(for: ImageRequest(url: gateURL(kibibytes: 8192, id: 0))) }
        try #require(await eventually(timeout: 300) { decoder.running == [0] })
        let cancelled = Task { try await pipeline.image(for: ImageRequest(url: gateURL(kibibytes: 512, id: 1))) }
        let small = Task { try await pipeline.image(for: ImageRequest(url: gateURL(kibibytes: 512, id: 2))) }
        try #require(await eventually(timeout: 300) { pipeline.decodeMemory.waitingDecodes == 2 })
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { _ = try await cancelled.value }
        try #require(await eventually(timeout: 300) { pipeline.decodeMemory.waitingDecodes == 1 })
        decoder.open([0, 2])
        _ = try await big.value
        _ = try await small.value
        #expect(!decoder.started.contains(1))
        #expect(pipeline.decodeMemory.bytesInUse == 0)
    }

    @Test func theDefaultBudgetIsAQuarterOfTheContainersMemoryWithinBounds() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("cgroup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try Data("536870912\n".utf8).write(to: root.appendingPathComponent("memory.max"))
        let pod = ImagePipeline.Configuration.defaultDecodeMemoryBudget(cgroupRoot: root.path, physicalMemory: 64 << 30)
        #expect(pod == 128 << 20)
        try Data("max\n".utf8).write(to: root.appendingPathComponent("memory.max"))
        #expect(ImagePipeline.Configuration.defaultDecodeMemoryBudget(cgroupRoot: root.path, physicalMemory: 64 << 30) == 1 << 30)
        #expect(ImagePipeline.Configuration.defaultDecodeMemoryBudget(cgroupRoot: root.path, physicalMemory: 128 << 20) == 64 << 20)
    }
}
