import Foundation
import PipelineTestSupport
import Testing

/// Runs the built `imgpipe` binary as a user would, capturing its exit status and output.
struct Imgpipe {
    typealias Result = ExternalTool.Outcome

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardizedFileURL
    static let samples = root.appendingPathComponent("Samples")

    /// The binary beside the test bundle (the same build), else `.build/debug/imgpipe`.
    static let binary: URL = {
        let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("imgpipe")
        if FileManager.default.isExecutableFile(atPath: besideTests.path) { return besideTests }
        return root.appendingPathComponent(".build/debug/imgpipe")
    }()

    /// Runs `imgpipe arguments…` with `stdin` as its input, in `directory`; with a `timeout`, a
    /// run that takes longer is killed (and so ends by a signal).
    ///
    /// The blocking part (pipes, waiting for exit) runs on a thread of its own: on a 2-core
    /// machine Swift's cooperative pool has 2 threads, and tests that block them starve every
    /// other test running in parallel.
    ///
    /// `executable` runs instead of imgpipe (a script of the repository), with `environment`
    /// added to this process's.
    static func run(_ arguments: [String], stdin: String = "", in directory: URL? = nil,
                    timeout: TimeInterval? = nil, executable: URL = binary,
                    environment: [String: String] = [:]) async throws -> Result {
        try await ExternalTool.run(executable.path, arguments, input: Data(stdin.utf8), environment: environment, directory: directory,
                                   timeout: timeout)
    }
}

/// The width and height in a PAM file's header.
func pamSize(_ url: URL) throws -> [Int] {
    let data = try Data(contentsOf: url)
    let header = String(decoding: data.prefix(200), as: UTF8.self)
    func field(_ name: String) -> Int {
        header.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int($0.dropFirst(name.count + 1)) } ?? -1
    }
    return [field("WIDTH"), field("HEIGHT")]
}

/// The pixels after a PAM header.
func pamPixels(_ url: URL) throws -> [UInt8] {
    let data = try Data(contentsOf: url)
    let end = try #require(data.range(of: Data("ENDHDR\n".utf8)), "\(url.lastPathComponent) is not a PAM")
    return [UInt8](data[end.upperBound...])
}

/// A Python `http.server` serving `directory` on 127.0.0.1 with an ephemeral port; with
/// `requestLog`, one line per request (`"GET /x HTTP/1.1" 304 -`) appended to that file.
final class StaticServer {
    let port: Int
    private let child: ExternalTool.Child

    init(directory: URL, requestLog: URL? = nil) throws {
        // The server exits when this process closes its stdin (even if the test crashes).
        let script = """
        import http.server, functools, sys, threading
        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, format, *args):
                if len(sys.argv) > 2:
                    with open(sys.argv[2], "a") as log:
                        log.write(format % args + "\\n")
        handler = functools.partial(Handler, directory=sys.argv[1])
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        print(server.server_address[1], flush=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        sys.stdin.read()
        """
        child = try ExternalTool.Child("/usr/bin/env", ["python3", "-c", script, directory.path] + (requestLog.map { [$0.path] } ?? []))
        guard let port = try child.firstLine().flatMap({ Int($0) }) else { throw CocoaError(.fileReadUnknown) }
        self.port = port
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)/\(path)" }

    func stop() { child.stop() }
}

/// `scripts/cdn-fixture.py` over `Samples/` on 127.0.0.1 with an ephemeral port (originals only:
/// no imgpipe to make sizes), writing its request counts to `counts`.
final class CDNFixture {
    let origin: String
    private let child: ExternalTool.Child

    init(counts: URL) throws {
        // --stdin: it exits when this process closes its stdin (even if the test crashes).
        child = try ExternalTool.Child("/usr/bin/env", ["python3", Imgpipe.root.appendingPathComponent("scripts/cdn-fixture.py").path,
                                                        "--root", Imgpipe.samples.path, "--counts", counts.path, "--stdin"])
        guard let line = try child.firstLine(), line.hasPrefix("PORT "), let port = Int(line.dropFirst(5)) else {
            throw CocoaError(.fileReadUnknown)
        }
        origin = "http://127.0.0.1:\(port)"
    }

    func stop() { child.stop() }
}

extension Imgpipe {
    /// Runs `imgpipe arguments…` (output discarded) and returns its exit status and peak resident
    /// memory in bytes.
    ///
    /// The peak is read by a small python parent (`RUSAGE_CHILDREN` after it reaped imgpipe),
    /// not by `wait4` here: `posix_spawn` starts a child in the test process's own address space
    /// (`CLONE_VM`), and Linux carries that address space's high-water mark into the child's
    /// `ru_maxrss` across `exec`, so a child of a 260 MB test process would report 260 MB
    /// whatever it used. python's own mark, which its child inherits the same way, is ~10 MB.
    static func peakMemory(_ arguments: [String]) async throws -> (status: Int32, peak: Int) {
        let script = """
            import resource, subprocess, sys
            run = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            print(run.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
            """
        let result = try await ExternalTool.run("/usr/bin/env", ["python3", "-c", script, binary.path] + arguments)
        let fields = result.stdout.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        guard result.status == 0, fields.count == 2 else { throw POSIXError(.EIO) }
        return (Int32(fields[0]), fields[1] * 1024)
    }
}
