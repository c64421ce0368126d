import CProcessSpawn
import Foundation
import ProcessSpawn
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A reference tool run to completion (Pillow through Debian's python, `vips`, ImageMagick,
/// libjpeg's and libheif's tools, imgpipe itself): its exit status and output. The one place the
/// tests start a process (``ChildProcess``, by `posix_spawn`); ``Child`` is the same for a child that keeps running (a server, a
/// writer to kill). The waiting happens on a thread of its own, never on one of Swift's
/// cooperative threads: on a 2-core machine a test blocking one of those starves every other
/// test of the run.
public enum ExternalTool {
    /// What a tool did: exit status, and what it wrote.
    public struct Outcome: Sendable {
        /// The exit status (the signal's number when ``terminatedBySignal``).
        public var status: Int32
        /// The tool was ended by a signal (its own crash, or the timeout's `SIGKILL`).
        public var terminatedBySignal: Bool
        /// The bytes written to stdout.
        public var output: Data
        /// The bytes written to stderr.
        public var errors: Data

        /// stdout as text.
        public var stdout: String { String(decoding: output, as: UTF8.self) }
        /// stderr as text.
        public var stderr: String { String(decoding: errors, as: UTF8.self) }
    }

    /// Whether `path` is an executable file.
    public static func exists(_ path: String) -> Bool { FileManager.default.isExecutableFile(atPath: path) }

    /// Runs `path` with `arguments` and waits for it without holding a cooperative thread
    /// (see ``runBlocking(_:_:input:environment:directory:timeout:)``).
    public static func run(_ path: String, _ arguments: [String], input: Data = Data(), environment: [String: String] = [:],
                           directory: URL? = nil, timeout: TimeInterval? = nil) async throws -> Outcome {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result {
                    try runBlocking(path, arguments, input: input, environment: environment, directory: directory, timeout: timeout)
                })
            }.start()
        }
    }

    /// Runs `path` with `arguments`, blocking the calling thread: `input` on its stdin (written
    /// from a thread of its own, then closed), `environment` added to this process's, in
    /// `directory` if given, killed (`SIGKILL`: a child Foundation starts from a test thread can
    /// inherit a mask that blocks `SIGTERM`) after `timeout` seconds if given. stdout comes
    /// through a pipe; stderr goes to a temporary file, so a chatty tool cannot fill a second
    /// pipe and stall while stdout is read.
    public static func runBlocking(_ path: String, _ arguments: [String], input: Data = Data(), environment: [String: String] = [:],
                                   directory: URL? = nil, timeout: TimeInterval? = nil) throws -> Outcome {
        let errorFile = FileManager.default.temporaryDirectory.appendingPathComponent("tool-\(UUID().uuidString).err")
        let errors = open(errorFile.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard errors >= 0 else { throw SpawnError(path: errorFile.path, code: errno) }
        defer {
            close(errors)
            try? FileManager.default.removeItem(at: errorFile)
        }
        let stdin = try PipeEnds(), stdout = try PipeEnds()
        let child: ChildProcess
        do {
            child = try ChildProcess(path, arguments, environment: environment, directory: directory, stdin: stdin.read,
                                     stdout: stdout.write, stderr: errors)
        } catch {
            stdin.closeBoth()
            stdout.closeBoth()
            throw error
        }
        close(stdin.read)
        close(stdout.write)
        if let timeout {
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { child.kill(SIGKILL) }
        }
        let writer = FileHandle(fileDescriptor: stdin.write, closeOnDealloc: true)
        Thread {
            try? writer.write(contentsOf: input)
            try? writer.close()
        }.start()
        let reader = FileHandle(fileDescriptor: stdout.read, closeOnDealloc: true)
        let output = reader.readDataToEndOfFile()
        try? reader.close()
        child.waitUntilExit()
        return Outcome(status: child.terminationStatus, terminatedBySignal: child.terminationReason == .uncaughtSignal,
                       output: output, errors: (try? Data(contentsOf: errorFile)) ?? Data())
    }

    /// A tool that could not be started: `path` and the errno value.
    public struct SpawnError: Error, CustomStringConvertible {
        public var path: String
        public var code: Int32
        public var description: String { "could not start \(path): \(String(cString: strerror(code)))" }
    }

    /// A pipe's two descriptors, close-on-exec (the child gets its end by `dup2`, which clears it).
    struct PipeEnds {
        let read: Int32
        let write: Int32

        init() throws {
            var ends: [Int32] = [-1, -1]
            guard process_pipe(&ends) == 0 else { throw SpawnError(path: "pipe", code: errno) }
            read = ends[0]
            write = ends[1]
        }

        func closeBoth() {
            close(read)
            close(write)
        }
    }

    /// A child started by `posix_spawn` (`process_spawn`), never by Foundation's `Process`: its
    /// `run()` on Linux reads past glibc's buffer while it lists `/proc/self/fd`
    /// (swift-corelibs-foundation #5472), and crashed a full test run that had a thousand
    /// descriptors open. Every descriptor but 0, 1 and 2 is closed in the child. The members
    /// are `Process`'s names, so a test reads it as it read a `Process`.
    public final class ChildProcess: Sendable {
        /// The child's pid.
        public let processIdentifier: Int32
        /// The wait status once the child was reaped. Only this object reaps it, under this
        /// lock, so while it is `nil` the pid is still the child's (alive or a zombie).
        private let ended = Mutex<Int32?>(nil)

        /// Starts `path` with `arguments`, `environment` added to this process's, in `directory`
        /// if given, its stdin, stdout and stderr on the given descriptors (the caller closes its
        /// copies).
        init(_ path: String, _ arguments: [String], environment: [String: String], directory: URL?, stdin: Int32, stdout: Int32,
             stderr: Int32) throws {
            let variables = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
            do {
                processIdentifier = try spawnProcess(path, arguments, environment: variables, directory: directory?.path, stdin: stdin,
                                                     stdout: stdout, stderr: stderr)
            } catch {
                throw SpawnError(path: path, code: error.code)
            }
        }

        /// Whether the child still runs (a child that ended is reaped here).
        public var isRunning: Bool { reaped() == nil }

        /// Waits for the child to end.
        public func waitUntilExit() {
            guard reaped() == nil else { return }
            // Waits without reaping, outside the lock, so several threads may wait at once.
            var info = siginfo_t()
            while waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOWAIT) == -1, errno == EINTR {}
            _ = reaped()
        }

        /// Sends `signal` while the child has not been reaped (its pid cannot belong to another
        /// process then).
        public func kill(_ signal: Int32) {
            ended.withLock { ended in
                if ended == nil { _ = Glibc.kill(processIdentifier, signal) }
            }
        }

        /// The exit status, or the signal's number when ``terminationReason`` is `.uncaughtSignal`
        /// (call after ``waitUntilExit()``).
        public var terminationStatus: Int32 {
            let status = reaped() ?? 0
            return status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
        }

        /// How the child ended (call after ``waitUntilExit()``).
        public var terminationReason: Process.TerminationReason {
            let signal = (reaped() ?? 0) & 0x7f
            return signal != 0 && signal != 0x7f ? .uncaughtSignal : .exit
        }

        /// The wait status, reaping the child if it ended; `nil` while it runs. A child someone
        /// else reaped (`ECHILD`) reads as exit status 255.
        private func reaped() -> Int32? {
            ended.withLock { ended in
                if let ended { return ended }
                var status: Int32 = 0
                let result = waitpid(processIdentifier, &status, WNOHANG)
                if result == processIdentifier {
                    ended = status
                } else if result == -1, errno == ECHILD {
                    ended = 255 << 8
                }
                return ended
            }
        }
    }

    /// A child that keeps running while the test talks to it: a local server that prints its
    /// port and exits when its stdin closes, a writer the test kills. stdin is a pipe this
    /// object holds open (closed by ``stop()``, or when the test process dies); stdout is a pipe
    /// read with ``firstLine()`` or ``lines()``, or discarded; stderr is discarded.
    public final class Child: @unchecked Sendable {  // the file handles are used from one test at a time
        /// The child itself (its pid, whether it runs, how it ended).
        public let process: ChildProcess
        private let input: FileHandle
        private let output: FileHandle?

        /// Starts `path` with `arguments`; with `readsOutput` false, its stdout is discarded.
        public init(_ path: String, _ arguments: [String], readsOutput: Bool = true) throws {
            let stdin = try PipeEnds()
            let stdout = readsOutput ? try PipeEnds() : nil
            let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
            defer { close(null) }
            do {
                process = try ChildProcess(path, arguments, environment: [:], directory: nil, stdin: stdin.read,
                                           stdout: stdout?.write ?? null, stderr: null)
            } catch {
                stdin.closeBoth()
                stdout?.closeBoth()
                throw error
            }
            close(stdin.read)
            if let stdout { close(stdout.write) }
            input = FileHandle(fileDescriptor: stdin.write, closeOnDealloc: true)
            output = stdout.map { FileHandle(fileDescriptor: $0.read, closeOnDealloc: true) }
        }

        /// The pipe to the child's stdin, to write to.
        public var standardInput: FileHandle { input }

        /// The next line the child writes, without its newline (blocks until it is written);
        /// `nil` when stdout ended first, or is discarded.
        public func firstLine() throws -> String? {
            guard let output else { return nil }
            var line = Data()
            while let byte = try output.read(upToCount: 1), !byte.isEmpty {
                if byte == Data("\n".utf8) { return String(decoding: line, as: UTF8.self) }
                line += byte
            }
            return nil
        }

        /// Waits, on a thread of its own, for the child to write `count` more lines; `false` when
        /// its stdout ended first (it exited or was killed), or is discarded.
        public func lines(_ count: Int) async throws -> Bool {
            try await withCheckedThrowingContinuation { continuation in
                Thread {
                    continuation.resume(with: Result {
                        for _ in 0..<count where try self.firstLine() == nil { return false }
                        return true
                    })
                }.start()
            }
        }

        /// Reads and drops, on a thread of its own, whatever the child writes to stdout from now
        /// on, so that a chatty child never blocks on a full pipe.
        public func discardRemainingOutput() {
            guard let reader = output else { return }
            Thread { while !reader.availableData.isEmpty {} }.start()
        }

        /// Closes the child's stdin, reads what it writes to stdout until it ends, and waits for
        /// it: a filter fed through ``standardInput``.
        public func finish() -> Data {
            try? input.close()
            let data = output?.readDataToEndOfFile() ?? Data()
            process.waitUntilExit()
            return data
        }

        /// Closes the child's stdin (a server of ours exits then) and waits for it to end.
        public func stop() {
            try? input.close()
            process.waitUntilExit()
        }

        /// Sends `signal` and waits for the child to end.
        public func kill(_ signal: Int32 = SIGKILL) {
            process.kill(signal)
            process.waitUntilExit()
        }
    }
}
