import CMemoryProbe
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing

/// The shared test corpus, `../shared/corpus` beside the package root (found from this file's
/// path, so it works from any working directory). Tests that need it are disabled, with this
/// message, when it is absent.
public enum Corpus {
    /// `../shared/corpus` beside the package root.
    public static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // PipelineTestSupport
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // package root
        .deletingLastPathComponent()
        .appendingPathComponent("shared/corpus")

    /// A folder of the corpus.
    public static func folder(_ name: String) -> URL { root.appendingPathComponent(name) }

    /// Whether the corpus folder `name` exists.
    public static func has(_ name: String) -> Bool { FileManager.default.fileExists(atPath: folder(name).path) }

    /// The message for a suite disabled because folder `name` is absent.
    public static func missing(_ name: String) -> Comment {
        "corpus folder \(folder(name).path) is absent: skipped (see ../shared/corpus/README.md)"
    }

    /// The bytes of `file` in corpus folder `folder`.
    public static func data(_ folder: String, _ file: String) throws -> Data {
        try Data(contentsOf: Self.folder(folder).appendingPathComponent(file))
    }
}

/// A seeded SplitMix64 generator: the same byte flips on every run.
public struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    /// A generator that starts from `seed`.
    public init(seed: UInt64) { state = seed }
    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The peak resident memory of this process since the last ``resetPeak()``, in bytes (Linux).
public enum ResidentMemory {
    /// Resets the kernel's high-water mark (`/proc/self/clear_refs` ← 5); false if not possible.
    public static func resetPeak() -> Bool {
        guard let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return false }
        defer { try? handle.close() }
        return (try? handle.write(contentsOf: Data("5".utf8))) != nil
    }

    /// Runs `body` while holding a process-wide file lock, so that the memory tests of the
    /// codec test targets (one process, run in parallel) never measure each other, nor a
    /// fuzzing case (which takes the lock around each case).
    ///
    /// Waiting for the lock never blocks a thread of the cooperative pool (it tries without
    /// blocking and suspends between tries): with two cores, two memory tests blocked in
    /// `flock` would stall every other suite, the fuzzing pass's deadlines included.
    public static func exclusively<R>(isolation: isolated (any Actor)? = #isolation,
                                      _ body: () throws -> R) async throws -> R {
        let fd = try await lockMemoryTests()
        defer { unlockMemoryTests(fd) }
        return try body()
    }

    /// ``exclusively(isolation:_:)`` for an asynchronous body.
    public static func exclusively<R>(isolation: isolated (any Actor)? = #isolation,
                                      _ body: () async throws -> R) async throws -> R {
        let fd = try await lockMemoryTests()
        defer { unlockMemoryTests(fd) }
        return try await body()
    }

    /// Takes the memory tests' lock, waiting for it in `flock` on a thread of its own (never
    /// on a cooperative thread); the descriptor (or -1 when the lock file cannot be opened: the
    /// tests then run unguarded).
    private static func lockMemoryTests() async throws -> Int32 {
        let fd = open("/tmp/imagepipeline-codec-memory-tests.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return fd }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread {
                while flock(fd, LOCK_EX) != 0 && errno == EINTR {}
                continuation.resume()
            }.start()
        }
        return fd
    }

    private static func unlockMemoryTests(_ fd: Int32) {
        if fd >= 0 { _ = flock(fd, LOCK_UN); close(fd) }
    }

    /// How much `body` raised the process's peak resident memory, in bytes, over `attempts`
    /// runs (7 by default: on a starved machine other suites allocate in the same process): the least (`largest: false`; tests running in parallel can only add to an upper
    /// bound) or the largest (for a lower bound, which memory another test frees during the
    /// window can hide). Large blocks are made to always come from (and go back to) mmap, so
    /// reused heap does not hide growth.
    public static func peakGrowth(attempts: Int = 7, largest: Bool = false, _ body: () throws -> Void) throws -> Int? {
        _ = memory_probe_fix_mmap_threshold(128 * 1024)
        var result: Int?
        for _ in 0..<attempts {
            guard resetPeak(), let before = peak() else { return nil }
            try body()
            guard let after = peak() else { return nil }
            result = largest ? max(result ?? 0, after - before) : min(result ?? Int.max, after - before)
        }
        return result
    }

    /// ``peakGrowth(attempts:largest:_:)`` for an asynchronous body.
    public static func peakGrowth(attempts: Int = 7, largest: Bool = false, _ body: () async throws -> Void) async throws -> Int? {
        _ = memory_probe_fix_mmap_threshold(128 * 1024)
        var result: Int?
        for _ in 0..<attempts {
            guard resetPeak(), let before = peak() else { return nil }
            try await body()
            guard let after = peak() else { return nil }
            result = largest ? max(result ?? 0, after - before) : min(result ?? Int.max, after - before)
        }
        return result
    }

    /// `VmHWM` from `/proc/self/status`, in bytes.
    public static func peak() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let digits = line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
            return digits.map { $0 * 1024 }
        }
        return nil
    }
}
