import Foundation
@testable import MemoryPressureLinux
import PipelineCore
import PipelineTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A source whose triggers are pipes: regular files never raise `POLLPRI`, and real PSI cannot
/// be provoked on a shared machine, so the test makes a "trigger" fire by writing a byte.
final class PipeSource: MemoryPressureSource {
    let triggers: [MemoryPressureTrigger] = [.warning, .critical]
    /// Read ends (handed to the watcher, which closes them) and write ends (closed in `deinit`).
    let readEnds: [Int32], writeEnds: [Int32]

    init() throws {
        var reads: [Int32] = [], writes: [Int32] = []
        for _ in 0..<2 {
            var ends: [Int32] = [-1, -1]
            guard pipe(&ends) == 0 else { throw POSIXError(.EMFILE) }
            _ = fcntl(ends[0], F_SETFL, O_NONBLOCK)
            reads.append(ends[0])
            writes.append(ends[1])
        }
        readEnds = reads
        writeEnds = writes
    }

    func openTriggers() throws(MemoryPressureUnavailable) -> (path: String, descriptors: [MemoryPressureDescriptor]) {
        ("pipes", zip(readEnds, triggers).map { MemoryPressureDescriptor(fd: $0, trigger: $1, events: Int16(POLLIN)) })
    }

    func averages() -> MemoryPressureAverages? { nil }

    /// Makes the trigger of `level` ready.
    func fire(_ level: MemoryPressureLevel) {
        var byte: UInt8 = 1
        _ = write(writeEnds[level == .warning ? 0 : 1], &byte, 1)
    }

    deinit { for fd in writeEnds { close(fd) } }
}

/// Levels a watcher reported, awaited one by one.
final class LevelStream: Sendable {
    let stream: AsyncStream<MemoryPressureLevel>
    let continuation: AsyncStream<MemoryPressureLevel>.Continuation

    init() { (stream, continuation) = AsyncStream.makeStream() }

    var handler: @Sendable (MemoryPressureLevel) -> Void { { self.continuation.yield($0) } }

    func next() async -> MemoryPressureLevel? {
        var iterator = stream.makeAsyncIterator()
        return await iterator.next()
    }
}

/// How many of this process's descriptors are open on `target` (a `pipe:[inode]` or a path),
/// read from /proc/self/fd.
func openDescriptorCount(on target: String) -> Int {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return entries.count { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == target }
}

/// `pipe:[inode]`, as /proc/self/fd names a pipe's ends (both ends share the inode).
func pipeName(_ fd: Int32) -> String {
    var info = stat()
    return fstat(fd, &info) == 0 ? "pipe:[\(info.st_ino)]" : "closed"
}

/// A temporary directory standing in for a cgroup; files are replaced atomically, so a
/// watcher reading one never sees half a rewrite.
final class FakePressureCgroup {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("fake-psi-cgroup-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func write(_ name: String, _ text: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path).appendingPathComponent(name), options: .atomic)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

@Suite("Memory pressure watcher", .serialized, .timeLimit(.minutes(1)))
struct MemoryPressureWatcherTests {
    @Test func triggersAreWrittenAsPSIReadsThem() {
        #expect(MemoryPressureTrigger.warning.line == "some 150000 1000000")
        #expect(MemoryPressureTrigger.critical.line == "full 500000 1000000")
        #expect(MemoryPressureTrigger.warning.percent == 15)
        // Unprivileged (Linux 6.5+ without CAP_SYS_RESOURCE), windows must be multiples of 2 s.
        #expect(MemoryPressureTrigger.warning.unprivileged.line == "some 300000 2000000")
        let long = MemoryPressureTrigger(level: .warning, stall: .some, threshold: .milliseconds(700), window: .seconds(4))
        #expect(long.unprivileged == long)
        let odd = MemoryPressureTrigger(level: .warning, stall: .some, threshold: .milliseconds(100), window: .seconds(3))
        #expect(odd.unprivileged.line == "some 133333 4000000")
    }

    @Test func averagesAreParsedAndClassified() throws {
        let text = "some avg10=20.50 avg60=3.00 avg300=0.10 total=123\nfull avg10=4.00 avg60=1.00 avg300=0.00 total=45\n"
        let averages = try #require(MemoryPressureAverages(parsing: text))
        #expect(averages == MemoryPressureAverages(some: 20.5, full: 4))
        #expect(averages.level(for: [.warning, .critical]) == .warning)
        #expect(MemoryPressureAverages(some: 60, full: 55).level(for: [.warning, .critical]) == .critical)
        #expect(MemoryPressureAverages(some: 14.9, full: 0).level(for: [.warning, .critical]) == nil)
        #expect(MemoryPressureAverages(parsing: "garbage") == nil)
        #expect(MemoryPressureAverages(parsing: "some avg10=nan total=1") == nil)
    }

    @Test func aPressureEventTrimsThePipelineAtItsLevelWithThePolicy() async throws {
        // What a trim sheds is `trimMemory`'s (PipelineCoreTests' "Memory pressure" suite); this
        // checks the watcher's wiring: each level fired reaches the pipeline, with the policy.
        let events = EventRecorder()
        let trims = AsyncStream<Void>.makeStream()
        let recorder = events.handler
        var configuration = ImagePipeline.Configuration(
            decoders: DecoderRegistry([CountingDecoder()]), loaders: LoaderRegistry([HeldLoader()]))
        configuration.eventHandler = { event in
            recorder(event)
            if case .memoryTrimmed = event { trims.continuation.yield() }
        }
        let pipeline = ImagePipeline(configuration: configuration)

        let source = try PipeSource()
        let watcher = try pipeline.watchMemoryPressure(source: source, policy: MemoryPressurePolicy(cancelsPrefetches: false))
        #expect(watcher.mode == .triggers(path: "pipes", [.warning, .critical]))
        var trimmed = trims.stream.makeAsyncIterator()
        source.fire(.warning)
        _ = await trimmed.next()
        source.fire(.critical)
        _ = await trimmed.next()
        let reported = events.all.compactMap { event -> MemoryPressureLevel? in
            if case .memoryTrimmed(let level, _, _) = event { level } else { nil }
        }
        #expect(reported == [.warning, .critical])
        watcher.stop()
    }

    @Test func stopEndsTheThreadAndClosesEveryDescriptor() throws {
        let source = try PipeSource()
        let reports = Mutex(0)
        let watcher = try MemoryPressureWatcher.start(source: source) { _ in reports.withLock { $0 += 1 } }
        let triggerPipes = source.readEnds.map(pipeName)
        let stopPipe = pipeName(watcher.core.stopRead)
        #expect(stopPipe != "closed")
        // Each trigger pipe: the watcher's read end and the test's write end; the stop pipe: both ends.
        #expect(triggerPipes.map(openDescriptorCount) == [2, 2])
        #expect(openDescriptorCount(on: stopPipe) == 2)
        #expect(watcher.isRunning)

        watcher.stop()
        #expect(!watcher.isRunning)
        #expect(triggerPipes.map(openDescriptorCount) == [1, 1])  // only the test's write ends
        #expect(openDescriptorCount(on: stopPipe) == 0)
        watcher.stop()  // again: nothing happens
        #expect(reports.withLock { $0 } == 0)
    }

    @Test func stopFromTheHandlerDoesNotWaitForItself() async throws {
        let source = try PipeSource()
        let box = Mutex<MemoryPressureWatcher?>(nil)
        let levels = LevelStream()
        let watcher = try MemoryPressureWatcher.start(source: source) { level in
            box.withLock { $0 }?.stop()
            levels.handler(level)
        }
        box.withLock { $0 = watcher }
        source.fire(.critical)
        #expect(await levels.next() == .critical)
        watcher.stop()  // waits for the thread, which stopped itself
        #expect(!watcher.isRunning)
        box.withLock { $0 = nil }
    }

    @Test func withoutPSITheReasonIsTyped() throws {
        let empty = try FakePressureCgroup()
        let source = PSIMemoryPressureSource(cgroupRoot: empty.path, systemPath: "/nonexistent/pressure/memory")
        #expect(throws: MemoryPressureUnavailable.notFound(paths: source.paths)) {
            _ = try MemoryPressureWatcher.start(source: source) { _ in }
        }
        #expect(source.averages() == nil)
    }

    @Test func aPressureFileThatCannotBeOpenedGivesItsErrno() throws {
        let cgroup = try FakePressureCgroup()
        let source = PSIMemoryPressureSource(cgroupRoot: cgroup.path, systemPath: "/nonexistent/pressure/memory")
        try FileManager.default.createDirectory(atPath: source.paths[0], withIntermediateDirectories: false)
        // Nothing to poll either (a directory has no averages): the reason comes back.
        #expect(throws: MemoryPressureUnavailable.cannotOpen(path: source.paths[0], errno: EISDIR)) {
            _ = try MemoryPressureWatcher.start(source: source) { _ in }
        }
        try FileManager.default.removeItem(atPath: source.paths[0])
        try cgroup.write("memory.pressure", "")  // size 0 like a kernel file, but reads nothing
        #expect(throws: MemoryPressureUnavailable.notAPressureFile(path: source.paths[0])) {
            _ = try MemoryPressureWatcher.start(source: source) { _ in }
        }
    }

    @Test func aFakePressureFileIsNoTriggerButItsAveragesArePolled() async throws {
        let cgroup = try FakePressureCgroup()
        let quiet = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
        try cgroup.write("memory.pressure", quiet)
        let source = PSIMemoryPressureSource(cgroupRoot: cgroup.path, systemPath: "/nonexistent/pressure/memory")
        let file = source.paths[0]
        // A regular file takes a trigger's text but never raises POLLPRI: refused, not trusted.
        #expect(throws: MemoryPressureUnavailable.notAPressureFile(path: file)) {
            _ = try MemoryPressureWatcher.start(source: source, fallbackInterval: nil) { _ in }
        }
        #expect(try String(contentsOfFile: file, encoding: .utf8) == quiet)

        let levels = LevelStream()
        let watcher = try MemoryPressureWatcher.start(source: source, fallbackInterval: .milliseconds(5),
                                                      handler: levels.handler)
        #expect(watcher.mode == .polling(interval: .milliseconds(5), reason: .notAPressureFile(path: file)))
        try cgroup.write("memory.pressure", "some avg10=20.00 avg60=1.00 avg300=0.00 total=9\nfull avg10=1.00 avg60=0.00 avg300=0.00 total=1\n")
        #expect(await levels.next() == .warning)
        try cgroup.write("memory.pressure", "some avg10=80.00 avg60=1.00 avg300=0.00 total=9\nfull avg10=60.00 avg60=0.00 avg300=0.00 total=1\n")
        var level = await levels.next()
        while level == .warning { level = await levels.next() }  // readings before the rewrite
        #expect(level == .critical)
        watcher.stop()
        #expect(!watcher.isRunning)
    }

    @Test func theRealPSISourceOpensOnThisMachine() throws {
        let system = "/proc/pressure/memory"
        guard access(system, W_OK) == 0 else {
            print("MemoryPressureTests: skipped, \(system) is absent or not writable here")
            return
        }
        let source = PSIMemoryPressureSource()
        let watcher: MemoryPressureWatcher
        do {
            watcher = try MemoryPressureWatcher.start(source: source, fallbackInterval: nil) { _ in }
        } catch {
            print("MemoryPressureTests: skipped, PSI triggers are refused here: \(error)")
            return
        }
        guard case .triggers(let path, let triggers) = watcher.mode else {
            Issue.record("not on triggers: \(watcher.mode)")
            return
        }
        #expect(source.paths.contains(path))
        #expect(triggers.map(\.level) == [.warning, .critical])
        print("MemoryPressureTests: PSI triggers on \(path): \(triggers.map(\.line))")
        #expect(openDescriptorCount(on: path) == 2)
        watcher.stop()
        #expect(openDescriptorCount(on: path) == 0)
    }
}
