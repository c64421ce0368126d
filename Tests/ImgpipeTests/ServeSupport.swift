import Foundation
import ImagePipelineKit
import PipelineCore
import PipelineTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `imgpipe serve` as a test starts it: on 127.0.0.1 with an ephemeral port, its environment
/// given (`IMGPIPE_…`), a disk cache in a fresh temporary folder unless the environment names
/// one. It is ready once it printed its "listening" line; the access-log lines it prints after
/// are kept for ``waitForLog(_:)``. ``stop()`` sends SIGTERM and waits for it to exit.
final class ServeProcess: Sendable {
    /// `http://127.0.0.1:<port>`.
    let base: String
    /// `http://127.0.0.1:<port>` of `/metrics`, when `IMGPIPE_PROMETHEUS_BIND` was given.
    let metricsBase: String?
    private let child: ExternalTool.Child
    private let log: LineLog
    private let cacheFolder: URL

    /// Runs `body` with a server started with `environment` and stops it afterwards on every
    /// path; a server that does not exit 0 on SIGTERM fails the test.
    static func with<T>(_ environment: [String: String] = [:], _ body: (ServeProcess) async throws -> T) async throws -> T {
        let server = try await ServeProcess.start(environment)
        do {
            let result = try await body(server)
            let end = await server.stop()
            #expect(end.status == 0 && !end.bySignal, "imgpipe serve ended with \(end)")
            return result
        } catch {
            _ = await server.stop()
            throw error
        }
    }

    /// Starts a server and waits (on a thread of its own, at most a minute) for its
    /// "listening" line.
    static func start(_ environment: [String: String] = [:]) async throws -> ServeProcess {
        try await withDeadline(60) {
            try await withCheckedThrowingContinuation { continuation in
                Thread { continuation.resume(with: Result { try ServeProcess(environment: environment) }) }.start()
            }
        }
    }

    private init(environment: [String: String]) throws {
        cacheFolder = FileManager.default.temporaryDirectory.appendingPathComponent("serve-\(UUID().uuidString)")
        // A request deadline and an origin timeout no starved test machine reaches (tests hold
        // their origin's answers until every request has arrived); the timeout test sets its own.
        var settings = ["IMGPIPE_CACHE_DIR": cacheFolder.path, "IMGPIPE_TIMEOUT": "120", "IMGPIPE_DOWNLOAD_TIMEOUT": "120"]
        settings.merge(environment) { _, given in given }
        // Through env(1): Child has no environment of its own; env execs imgpipe, so the pid is imgpipe's.
        let assignments = settings.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        child = try ExternalTool.Child("/usr/bin/env", assignments + [Imgpipe.binary.path, "serve", "--bind", "127.0.0.1:0"])
        let line = try child.firstLine() ?? ""
        guard let port = Self.port(in: line, after: "listening on http://127.0.0.1:") else {
            child.kill()
            throw ServeError.didNotStart(line)
        }
        base = "http://127.0.0.1:\(port)"
        metricsBase = Self.port(in: line, after: "metrics on http://127.0.0.1:").map { "http://127.0.0.1:\($0)" }
        log = LineLog()
        let (child, log) = (child, log)
        Thread {
            while let line = try? child.firstLine() { log.append(line) }
            log.end()
        }.start()
    }

    /// The digits after `marker` in `line`.
    private static func port(in line: String, after marker: String) -> Int? {
        guard let range = line.range(of: marker) else { return nil }
        return Int(line[range.upperBound...].prefix { $0.isNumber })
    }

    /// `base` + `path`.
    func url(_ path: String) -> String { base + path }

    /// The lines printed since the "listening" line.
    var lines: [String] { log.all }

    /// Waits (at most a minute) until the printed lines satisfy `enough`; `false` when the
    /// server's output ended or the minute passed first.
    func waitForLog(_ enough: @escaping @Sendable ([String]) -> Bool) async -> Bool {
        await log.wait(until: enough)
    }

    /// The text of `/metrics` (needs `IMGPIPE_PROMETHEUS_BIND`).
    func metrics() async throws -> String {
        guard let metricsBase else { throw ServeError.noMetrics }
        return String(decoding: try await Curl.get(metricsBase + "/metrics").body, as: UTF8.self)
    }

    /// Asks `/metrics` until the sample `name` is at least `value`: each ask waits for an HTTP
    /// answer, there is no sleep; `false` after a minute.
    func awaitMetric(_ name: String, atLeast value: Double) async throws -> Bool {
        let limit = Date().addingTimeInterval(60)
        while Date() < limit {
            if (Serve.metric(name, in: try await metrics()) ?? 0) >= value { return true }
        }
        return false
    }

    /// The process id, to signal it.
    var pid: pid_t { child.process.processIdentifier }

    /// Sends `signal` (SIGTERM; `nil`: none, the test sent it) and waits, on a thread of its
    /// own, for the server to exit (SIGKILL after a minute); returns how it ended. Removes its
    /// disk cache folder.
    func stop(sending signal: Int32? = SIGTERM) async -> (status: Int32, bySignal: Bool) {
        let (process, folder) = (child.process, cacheFolder)
        return await withCheckedContinuation { continuation in
            Thread {
                if process.isRunning {
                    let pid = process.processIdentifier
                    if let signal { kill(pid, signal) }
                    DispatchQueue.global().asyncAfter(deadline: .now() + 60) { if process.isRunning { kill(pid, SIGKILL) } }
                }
                process.waitUntilExit()
                try? FileManager.default.removeItem(at: folder)
                continuation.resume(returning: (process.terminationStatus, process.terminationReason == .uncaughtSignal))
            }.start()
        }
    }

    enum ServeError: Error, CustomStringConvertible {
        case didNotStart(String), noMetrics
        var description: String {
            switch self {
            case .didNotStart(let line): "imgpipe serve did not print its listening line; it printed '\(line)'"
            case .noMetrics: "the server was started without IMGPIPE_PROMETHEUS_BIND"
            }
        }
    }
}

/// Lines a child prints, kept for the test to wait on.
final class LineLog: @unchecked Sendable {  // `lines` and `ended` are read and written only under `condition`
    private let condition = NSCondition()
    private var lines: [String] = []
    private var ended = false

    func append(_ line: String) {
        condition.withLock {
            lines.append(line)
            condition.broadcast()
        }
    }

    func end() {
        condition.withLock {
            ended = true
            condition.broadcast()
        }
    }

    var all: [String] { condition.withLock { lines } }

    /// Blocks a thread of its own until `enough(lines)`, the output ends, or a minute passes.
    func wait(until enough: @escaping @Sendable ([String]) -> Bool) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread {
                let limit = Date().addingTimeInterval(60)
                self.condition.lock()
                while !enough(self.lines), !self.ended, self.condition.wait(until: limit) {}
                let met = enough(self.lines)
                self.condition.unlock()
                continuation.resume(returning: met)
            }.start()
        }
    }
}

/// One answer curl received: status, headers (names lower-case), body.
struct HTTPAnswer: Sendable {
    var status: Int
    var headers: [String: String]
    var body: Data

    subscript(header name: String) -> String? { headers[name.lowercased()] }
}

/// Debian's curl as the HTTP client: a real client, independent of the server's code.
/// `--noproxy '*'` keeps every request on loopback whatever the environment says; `--path-as-is`
/// sends `/../` as written. Every run is bounded (`--max-time`, and a kill after that).
enum Curl {
    static let path = "/usr/bin/curl"
    static var exists: Bool { ExternalTool.exists(path) }
    static let common = ["-sS", "--noproxy", "*", "--path-as-is", "--max-time", "60"]

    /// `GET url` with `headers`.
    static func get(_ url: String, headers: [String: String] = [:]) async throws -> HTTPAnswer {
        let run = try await ExternalTool.run(path, common + ["-i"] + options(headers) + [url], timeout: 90)
        guard run.status == 0, let split = run.output.range(of: Data("\r\n\r\n".utf8)) else { throw CurlError.failed(run.stderr) }
        let head = String(decoding: run.output[..<split.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        guard let statusLine = head.first, let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") else {
            throw CurlError.failed("no status line")
        }
        var fields: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return HTTPAnswer(status: status, headers: fields, body: Data(run.output[split.upperBound...]))
    }

    /// curl's `-H` options for `headers`.
    private static func options(_ headers: [String: String]) -> [String] {
        headers.sorted { $0.key < $1.key }.flatMap { ["-H", "\($0.key): \($0.value)"] }
    }

    /// One outcome of ``parallel(_:headers:)``.
    struct Outcome: Sendable, Equatable {
        var status: Int
        var bytes: Int
        var retryAfter: String
    }

    /// `GET` of every URL at once, each on a connection of its own (`--parallel`); the
    /// outcomes in the order they finished.
    static func parallel(_ urls: [String], headers: [String: String] = [:]) async throws -> [Outcome] {
        let arguments = common + options(headers) + ["-Z", "--parallel-immediate", "--parallel-max", String(urls.count),
                                           "-w", "%{http_code} %{size_download} %header{retry-after}\\n"]
            + urls.flatMap { ["-o", "/dev/null", $0] }
        let run = try await ExternalTool.run(path, arguments, timeout: 90)
        guard run.status == 0 else { throw CurlError.failed(run.stderr) }
        return run.stdout.split(separator: "\n").map { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            return Outcome(status: Int(fields.first ?? "") ?? 0, bytes: fields.count > 1 ? Int(fields[1]) ?? -1 : -1,
                           retryAfter: fields.count > 2 ? String(fields[2]) : "")
        }
    }

    enum CurlError: Error, CustomStringConvertible {
        case failed(String)
        var description: String {
            switch self {
            case .failed(let reason): "curl failed: \(reason)"
            }
        }
    }
}

enum Serve {
    /// `/insecure/<options>/plain/<source, percent-encoded>[@ext]`: an unsigned URL.
    static func path(_ options: String, _ source: String, format: String? = nil) -> String {
        "/insecure/\(options)/plain/\(source.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" + (format.map { "@" + $0 } ?? "")
    }

    /// The format and size a picture's header names (the kit's decoders).
    static func info(_ data: Data) throws -> ImageInfo {
        try DecoderRegistry.standard.requireDecoder(for: data).withSession(for: data) { $0.info }
    }

    /// The value of the Prometheus sample `name` (with its labels, e.g.
    /// `status_codes_total{status="200"}`) in `text`; `nil` when absent.
    static func metric(_ name: String, in text: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.dropFirst(name.count + 1))
        }
        return nil
    }

    /// A fresh folder in the temporary directory.
    static func folder(_ prefix: String) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }
}
