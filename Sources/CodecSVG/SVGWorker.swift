import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where and how ``SVGDecoder`` runs librsvg in a worker process, and the limits the worker
/// runs under (``SVGDecoder/Isolation/worker(_:)``).
///
/// librsvg 2.54 can abort its process (a Rust panic on a large `feConvolveMatrix`), draw for
/// hours without a way to stop it (`feTurbulence` of 10⁸ octaves) and allocate gigabytes
/// parsing or decoding a nested `data:` picture through gdk-pixbuf, outside the pipeline's
/// budget. No input check can prove a document safe from all of that, so the parse and the
/// drawing run in a child process started with `posix_spawn` (never `fork` without `exec`, never
/// Foundation's `Process`): the document goes in on its stdin, the bitmap comes back on its
/// stdout after a small header that is checked against the size asked for. The child limits its
/// own data segment (`RLIMIT_DATA`) and CPU time (`RLIMIT_CPU`) before it reads the document,
/// and dies with this process (`PR_SET_PDEATHSIG`); this process kills it (`SIGKILL`) when
/// ``timeLimit`` passes or the decode's caller cancels (`DecodeCancellation`).
/// Every failure is an ``SVGWorkerError``.
public struct SVGWorker: Sendable, Hashable {
    /// The worker executable: a program whose `main` calls ``serve()`` when started with
    /// ``arguments`` (the package's `svg-worker` product, or `imgpipe` itself with its hidden
    /// `__svg-worker` command).
    public var executable: String
    /// The arguments it is started with.
    public var arguments: [String]
    /// The longest one worker may live, from its start to its last answer (parse, then drawing),
    /// in seconds of wall-clock time; its CPU time is limited to the same (rounded up) plus one
    /// second. Default 10.
    public var timeLimit: Double
    /// The memory the worker may allocate for parsing, in bytes, on top of what it holds when it
    /// starts (its runtime and the libraries) and the document's own bytes; a drawing adds the
    /// decode's estimate (`ImageDecodingSession.estimatedPeakMemory(_:)`, what the pipeline's
    /// decode budget admitted). Default 256 MiB: the corpus's documents parse in a few MB, a
    /// million-element SVGZ took 1.77 GB.
    public var memoryLimit: Int

    /// The default ``timeLimit``, 10 s.
    public static let defaultTimeLimit = 10.0
    /// The default ``memoryLimit``, 256 MiB.
    public static let defaultMemoryLimit = 256 << 20
    /// The argument `imgpipe` takes to be a worker.
    public static let imgpipeCommand = "__svg-worker"

    /// A worker running `executable` with `arguments`, under the given limits.
    public init(executable: String, arguments: [String] = [], timeLimit: Double = SVGWorker.defaultTimeLimit,
                memoryLimit: Int = SVGWorker.defaultMemoryLimit) {
        self.executable = executable
        self.arguments = arguments
        self.timeLimit = timeLimit
        self.memoryLimit = memoryLimit
    }

    /// This process's own executable started with `arguments` (Linux: `/proc/self/exe`), for a
    /// program that calls ``serve()`` when it sees them; `nil` where the path is not known.
    public static func currentExecutable(arguments: [String], timeLimit: Double = SVGWorker.defaultTimeLimit,
                                         memoryLimit: Int = SVGWorker.defaultMemoryLimit) -> SVGWorker? {
        #if os(Linux)
        let path = "/proc/self/exe"
        #elseif canImport(Darwin)
        var size: UInt32 = 0
        _ = _NSGetExecutablePath(nil, &size)
        var buffer = [CChar](repeating: 0, count: Int(size) + 1)
        guard _NSGetExecutablePath(&buffer, &size) == 0 else { return nil }
        let path = String(cString: buffer)
        #else
        return nil
        #endif
        return SVGWorker(executable: path, arguments: arguments, timeLimit: timeLimit, memoryLimit: memoryLimit)
    }

    /// The worker's side: reads one document from stdin, answers with its size, then draws it if
    /// asked, and returns the exit status. Call it from the worker executable's `main` (and
    /// nothing else before it that reads stdin or writes stdout).
    public static func serve() -> Int32 { SVGWorkerServer.run() }
}

/// Why the SVG worker process gave no answer. The pipeline wraps it with the URL
/// (`ImagePipelineError.decodingFailed(_:underlying:)`); none is permanent, so none is
/// remembered as a negative cache entry.
public enum SVGWorkerError: PipelineFailure, Hashable, Sendable, CustomStringConvertible {
    /// The worker died of signal `signal` (librsvg aborted, or crashed).
    case crashed(signal: Int32)
    /// The worker exited with `status` without an answer.
    case exited(status: Int32)
    /// The worker ran out of its memory limit, `limit` bytes over its start.
    case outOfMemory(limit: Int)
    /// The worker passed its time limit of `seconds` and was killed.
    case timedOut(seconds: Double)
    /// The worker executable could not be started: `reason`.
    case couldNotStart(executable: String, reason: String)
    /// The worker's answer broke the protocol: `detail`.
    case badAnswer(String)

    /// `false`: the document may be fine on a less loaded machine or with other limits.
    public var isPermanent: Bool { false }

    /// Out of memory is over a limit, a timeout a timeout, a crash not a picture.
    public var failureKind: ImagePipelineError.Kind? {
        switch self {
        case .outOfMemory: return .overLimit
        case .timedOut: return .timedOut
        case .crashed, .exited, .badAnswer: return .notAPicture
        case .couldNotStart: return nil
        }
    }

    /// One line naming what happened to the worker.
    public var description: String {
        switch self {
        case .crashed(let signal):
            let names: [Int32: String] = [SIGABRT: "SIGABRT", SIGSEGV: "SIGSEGV", SIGBUS: "SIGBUS", SIGILL: "SIGILL",
                                          SIGTRAP: "SIGTRAP", SIGKILL: "SIGKILL", SIGFPE: "SIGFPE"]
            return "the SVG worker crashed with signal \(signal)\(names[signal].map { " (\($0))" } ?? "")"
        case .exited(let status): return "the SVG worker exited with status \(status) without an answer"
        case .outOfMemory(let limit): return "the SVG worker ran out of its memory limit (\(limit >> 20) MiB)"
        case .timedOut(let seconds): return "the SVG worker passed its time limit (\(seconds) s) and was killed"
        case .couldNotStart(let executable, let reason): return "could not start the SVG worker \(executable): \(reason)"
        case .badAnswer(let detail): return "the SVG worker's answer is malformed: \(detail)"
        }
    }
}
