import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A reference tool run to completion (Pillow through Debian's python, `vips`, ImageMagick,
/// libjpeg's and libheif's tools, imgpipe itself): its exit status and output. The one place the
/// tests start a `Process`; ``Child`` is the same for a child that keeps running (a server, a
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
        _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errorFile) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        }
        if let directory { process.currentDirectoryURL = directory }
        let stdin = Pipe(), out = Pipe()
        process.standardInput = stdin
        process.standardOutput = out
        process.standardError = try FileHandle(forWritingTo: errorFile)
        try process.run()
        if let timeout {
            let pid = process.processIdentifier
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { [process] in
                if process.isRunning && process.processIdentifier == pid { kill(pid, SIGKILL) }
            }
        }
        Thread {
            try? stdin.fileHandleForWriting.write(contentsOf: input)
            try? stdin.fileHandleForWriting.close()
        }.start()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let errors = (try? Data(contentsOf: errorFile)) ?? Data()
        return Outcome(status: process.terminationStatus, terminatedBySignal: process.terminationReason == .uncaughtSignal,
                       output: output, errors: errors)
    }

    /// A child that keeps running while the test talks to it: a local server that prints its
    /// port and exits when its stdin closes, a writer the test kills. stdin is a pipe this
    /// object holds open (closed by ``stop()``, or when the test process dies); stdout is a pipe
    /// read with ``firstLine()`` or ``lines()``, or discarded; stderr is discarded.
    public final class Child: @unchecked Sendable {  // the Process and pipes are used from one test at a time
        /// The child itself (its pid, whether it runs, how it ended).
        public let process = Process()
        private let input = Pipe()
        private let output: Pipe?

        /// Starts `path` with `arguments`; with `readsOutput` false, its stdout is discarded.
        public init(_ path: String, _ arguments: [String], readsOutput: Bool = true) throws {
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = arguments
            process.standardInput = input
            output = readsOutput ? Pipe() : nil
            process.standardOutput = output ?? FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
        }

        /// The pipe to the child's stdin, to write to.
        public var standardInput: FileHandle { input.fileHandleForWriting }

        /// The next line the child writes, without its newline (blocks until it is written);
        /// `nil` when stdout ended first, or is discarded.
        public func firstLine() throws -> String? {
            guard let output else { return nil }
            var line = Data()
            while let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty {
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
            guard let reader = output?.fileHandleForReading else { return }
            Thread { while !reader.availableData.isEmpty {} }.start()
        }

        /// Closes the child's stdin, reads what it writes to stdout until it ends, and waits for
        /// it: a filter fed through ``standardInput``.
        public func finish() -> Data {
            try? input.fileHandleForWriting.close()
            let data = output?.fileHandleForReading.readDataToEndOfFile() ?? Data()
            process.waitUntilExit()
            return data
        }

        /// Closes the child's stdin (a server of ours exits then) and waits for it to end.
        public func stop() {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }

        /// Sends `signal` and waits for the child to end.
        public func kill(_ signal: Int32 = SIGKILL) {
            if process.isRunning { Glibc.kill(process.processIdentifier, signal) }
            process.waitUntilExit()
        }
    }
}
