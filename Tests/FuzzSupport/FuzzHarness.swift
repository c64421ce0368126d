import CMemoryProbe
import CodecHEIF
import CodecJPEG
import CodecPNG
import CodecWebP
import Dispatch
import Foundation
import PipelineCore
import PipelineTestSupport
import Synchronization

/// Serves `fuzz://case/N` from memory: the bytes the harness put there.
final class FuzzLoader: DataLoading {
    private let inputs = Mutex<[String: Data]>([:])

    var schemes: Set<String> { ["fuzz"] }

    func put(_ data: Data, for url: URL) { inputs.withLock { $0[url.absoluteString] = data } }
    func remove(_ url: URL) { _ = inputs.withLock { $0.removeValue(forKey: url.absoluteString) } }

    func load(_ request: DataLoadRequest) async throws -> DataLoadResult {
        guard let data = inputs.withLock({ $0[request.url.absoluteString] }) else {
            throw ImagePipelineError.fileUnreadable(path: request.url.absoluteString, reason: "no such fuzz input")
        }
        return .data(data, ResponseMetadata())
    }
}

/// What one request of a case came to.
public enum FuzzOutcome: Sendable, CustomStringConvertible {
    /// A picture of this size.
    case decoded(PixelSize)
    /// An error, with its description.
    case failed(String)
    /// No answer before the deadline.
    case timedOut

    /// `decoded 64×48`, `failed: …`, `timed out`.
    public var description: String {
        switch self {
        case .decoded(let size): return "decoded \(size.width)×\(size.height)"
        case .failed(let message): return "failed: \(message)"
        case .timedOut: return "timed out"
        }
    }
}

/// The result of one case: what each request did, what went wrong, and the memory it took.
public struct FuzzReport: Sendable {
    /// The thumbnail request.
    public var thumbnail: FuzzOutcome
    /// The original-size request.
    public var original: FuzzOutcome
    /// Every check that failed, one line each; empty for a good case.
    public var problems: [String]
    /// Whether a request missed its deadline (its decode may still be running: the harness
    /// has started a new pipeline).
    public var hung: Bool
    /// The process's peak resident memory (`VmHWM`) after the case, in bytes.
    public var peakBytes: Int?
    /// The process's resident memory (`VmRSS`) after the case, in bytes.
    public var residentBytes: Int?
    /// Wall-clock seconds.
    public var seconds: Double
}

/// Runs mutated inputs through a real ``ImagePipeline`` with every decoder, the way an app
/// would: a thumbnail request and an original-size request per case, each raced against a
/// deadline, with the process's memory read after each case.
public final class FuzzHarness: Sendable {
    /// How the harness runs and judges a case.
    public struct Settings: Sendable {
        /// The pipeline's `maxPixelCount`.
        public var pixelLimit: Int
        /// Seconds a request may take before it counts as a hang.
        public var deadline: Double
        /// A case fails when the process's peak or current resident memory exceeds this (bytes).
        public var memoryLimit: Int
        /// Reset the kernel's peak-RSS mark before each case (only in a process of its own:
        /// it disturbs peak measurements of other code in the process).
        public var resetsPeak: Bool

        /// Creates settings.
        public init(pixelLimit: Int = 100_000_000, deadline: Double = 10, memoryLimit: Int = 1 << 30, resetsPeak: Bool = false) {
            self.pixelLimit = pixelLimit
            self.deadline = deadline
            self.memoryLimit = memoryLimit
            self.resetsPeak = resetsPeak
        }
    }

    /// The settings.
    public let settings: Settings
    private let loader = FuzzLoader()
    private let pipeline: Mutex<ImagePipeline>
    private let counter = Atomic<Int>(0)

    /// A harness with a fresh pipeline. It makes glibc serve every block over 128 KiB from mmap
    /// and hand it back when freed (process-wide; the memory tests do the same), so the
    /// resident memory measures what is alive, not what a dozen malloc arenas kept.
    public init(settings: Settings = Settings()) {
        _ = memory_probe_fix_mmap_threshold(128 * 1024)
        self.settings = settings
        pipeline = Mutex(Self.freshPipeline(loader: loader, settings: settings))
    }

    /// Every decoder this package ships; the HEIF decoder takes AVIF too when libheif can.
    public static var decoders: DecoderRegistry {
        DecoderRegistry().registering(JPEGDecoder()).registering(PNGDecoder()).registering(WebPDecoder()).registering(HEIFDecoder())
    }

    /// The harness's pipeline: every decoder, one decode per core, and neither a memory cache nor
    /// a negative cache, so that every case runs the decoders afresh.
    private static func freshPipeline(loader: FuzzLoader, settings: Settings) -> ImagePipeline {
        makePipeline(
            loader: loader, decoders: decoders, memoryCache: MemoryCache(costLimit: 0),
            maxConcurrentDecodes: ProcessInfo.processInfo.activeProcessorCount, maxPixelCount: settings.pixelLimit,
            negativeCacheLifetime: 0)
    }

    /// Runs `bytes` as a thumbnail request (a size and content mode that follow from `variant`)
    /// and an original-size request, and checks both.
    public func run(_ bytes: [UInt8], variant: UInt64 = 0) async -> FuzzReport {
        let started = DispatchTime.now()
        if settings.resetsPeak { _ = ResidentMemory.resetPeak() }
        let peakBefore = ResidentMemory.peak() ?? 0
        let n = counter.add(1, ordering: .relaxed).newValue
        let url = URL(string: "fuzz://case/\(n)") ?? URL(fileURLWithPath: "/")
        loader.put(Data(bytes), for: url)
        defer { loader.remove(url) }

        let sizes = [(96, 96), (64, 48), (17, 130), (200, 3)]
        let (w, h) = sizes[Int(variant % UInt64(sizes.count))]
        let mode: ContentMode = (variant >> 8) & 1 == 0 ? .fit : .fill
        var problems: [String] = []
        var hung = false

        let thumbnailRequest = ImageRequest(url: url, width: w, height: h, contentMode: mode)
        let thumbnail = await outcome(of: thumbnailRequest, label: "thumbnail \(w)×\(h) \(mode)", problems: &problems, hung: &hung) { response in
            var found: [String] = []
            let size = response.bitmap.size
            if size.width > w || size.height > h { found.append("is \(size.width)×\(size.height), larger than the \(w)×\(h) asked for") }
            found += Self.premultipliedProblems(response.bitmap)
            return found
        }
        var original = FuzzOutcome.timedOut
        if !hung {
            original = await outcome(of: ImageRequest(url: url), label: "original", problems: &problems, hung: &hung) { response in
                response.bitmap.size == response.originalSize ? []
                    : ["is \(response.bitmap.size), but its original size is \(response.originalSize)"]
            }
        }
        let peak = ResidentMemory.peak()
        let resident = Self.residentBytes()
        // The peak is the process's: it counts only when it rose during this case (in a test
        // process, other tests may share the blame: `ImageFuzz --case` measures alone).
        if let peak, peak > settings.memoryLimit, peak > peakBefore {
            problems.append("peak resident memory rose to \(peak >> 20) MiB, over the \(settings.memoryLimit >> 20) MiB limit")
        }
        if let resident, resident > settings.memoryLimit {
            problems.append("resident memory after the case \(resident >> 20) MiB is over the \(settings.memoryLimit >> 20) MiB limit")
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        return FuzzReport(thumbnail: thumbnail, original: original, problems: problems, hung: hung,
                          peakBytes: peak, residentBytes: resident, seconds: seconds)
    }

    private func outcome(of request: ImageRequest, label: String, problems: inout [String], hung: inout Bool,
                         check: (ImageResponse) -> [String]) async -> FuzzOutcome {
        let pipeline = self.pipeline.withLock { $0 }
        switch await Self.race(deadline: settings.deadline, { try await pipeline.image(for: request) }) {
        case .timedOut:
            problems.append("\(label): no answer within \(settings.deadline) s")
            hung = true
            // The stuck decode keeps its worker thread; later cases get a new pipeline.
            self.pipeline.withLock { $0 = Self.freshPipeline(loader: loader, settings: settings) }
            return .timedOut
        case .finished(.success(let response)):
            let size = response.bitmap
            if !size.size.isValid || size.bytes.count < size.bytesPerRow * size.height || size.bytesPerRow < size.width * 4 {
                problems.append("\(label): inconsistent bitmap \(size.width)×\(size.height), \(size.bytesPerRow) bytes a row, \(size.bytes.count) bytes")
                return .decoded(response.bitmap.size)
            }
            problems += check(response).map { "\(label): \($0)" }
            return .decoded(response.bitmap.size)
        case .finished(.failure(let error)):
            let message = String(describing: error)
            if error is CancellationError {
                problems.append("\(label): cancelled, though nothing cancelled it")
            } else if message.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
                problems.append("\(label): an error with an empty description (\(type(of: error)))")
            }
            return .failed(message)
        }
    }

    /// Premultiplied RGBA: no colour byte above its alpha (checked on small bitmaps only).
    static func premultipliedProblems(_ bitmap: Bitmap) -> [String] {
        guard bitmap.width * bitmap.height <= 1 << 16 else { return [] }
        for y in 0..<bitmap.height {
            for x in 0..<bitmap.width {
                let p = bitmap.pixel(x: x, y: y)
                if p.r > p.a || p.g > p.a || p.b > p.a {
                    return ["pixel (\(x), \(y)) = \(p) is not premultiplied"]
                }
            }
        }
        return []
    }

    /// `VmRSS` from `/proc/self/status`, in bytes.
    public static func residentBytes() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }.map { $0 * 1024 }
        }
        return nil
    }

    // MARK: - The watchdog

    /// How a race against a deadline ended.
    public enum Race<Value: Sendable>: Sendable {
        /// The operation finished first, with this result.
        case finished(Result<Value, any Error>)
        /// The deadline came first; the operation was cancelled.
        case timedOut
    }

    /// The two sides of a race: a continuation resumed once, by whichever comes first, and the
    /// work, dropped as soon as it has finished (a cancelled timer stays queued until its
    /// deadline, and must not keep a finished decode's bitmap alive until then).
    private final class RaceState<Value: Sendable>: Sendable {
        private let continuation: Mutex<CheckedContinuation<Race<Value>, Never>?>
        private let work = Mutex<Task<Value, any Error>?>(nil)

        init(_ continuation: CheckedContinuation<Race<Value>, Never>) { self.continuation = Mutex(continuation) }

        func start(_ task: Task<Value, any Error>) { work.withLock { $0 = task } }

        /// The continuation, for the first caller only.
        func claim() -> CheckedContinuation<Race<Value>, Never>? {
            continuation.withLock { c in defer { c = nil }; return c }
        }

        /// The work, forgotten here.
        func takeWork() -> Task<Value, any Error>? { work.withLock { w in defer { w = nil }; return w } }
    }

    /// Runs `operation`, answering `.timedOut` (and cancelling it) if it has not finished after
    /// `deadline` seconds. The answer is a continuation resumed by the work or by a timer on a
    /// dispatch queue, whichever is first: a finished operation returns at once, and a stuck
    /// one (a decoder in an endless loop) cannot hold the caller.
    public static func race<Value: Sendable>(deadline: Double, _ operation: @escaping @Sendable () async throws -> Value) async -> Race<Value> {
        await withCheckedContinuation { continuation in
            let state = RaceState(continuation)
            let work = Task { try await operation() }
            state.start(work)
            let timer = DispatchWorkItem {
                guard let continuation = state.claim() else { return }
                state.takeWork()?.cancel()
                continuation.resume(returning: .timedOut)
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + deadline, execute: timer)
            Task {
                let result = await work.result
                timer.cancel()
                _ = state.takeWork()
                state.claim()?.resume(returning: .finished(result))
            }
        }
    }
}
