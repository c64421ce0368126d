import Foundation
import PipelineTestSupport
import Synchronization
import Testing

/// `imgpipe serve` attacked through its port, each finding kept as a regression test.
@Suite("imgpipe serve under attack")
struct ServeAttackTests {
    /// `imgpipe serve` on an ephemeral loopback port serving `Samples/` as `local:///`.
    private final class Server {
        let child: ExternalTool.Child
        let base: String

        init(_ arguments: [String]) throws {
            // A request deadline no starved test machine reaches, unless `arguments` give their own.
            let fixed = ["serve", "--bind", "127.0.0.1:0", "--local-root", Imgpipe.samples.path, "--no-disk-cache", "--quiet",
                         "--request-timeout", "120", "--timeout", "120"]
            child = try ExternalTool.Child(Imgpipe.binary.path, fixed + arguments)
            guard let line = try child.firstLine(), let range = line.range(of: "http://") else { throw CocoaError(.fileReadUnknown) }
            base = String(line[range.lowerBound...].prefix { $0 != " " })
        }

        func stop() { child.kill(SIGTERM) }
    }

    private static func curl(_ url: String) async throws -> (status: String, seconds: Double) {
        let outcome = try await ExternalTool.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-m", "30", "-w", "%{http_code} %{time_total}", url])
        let fields = outcome.stdout.split(separator: " ")
        return (fields.first.map(String.init) ?? "", fields.count > 1 ? Double(fields[1]) ?? 99 : 99)
    }

    /// Three enlarged animations once held Swift's cooperative threads (two on two cores) for
    /// their whole render: `/health` and every other request waited, answered 504 by the
    /// transport's deadline.
    @Test func enlargedAnimationsLeaveHealthAnswered() async throws {
        let server = try Server(["--request-timeout", "4", "--workers", "4"])
        defer { server.stop() }
        let base = server.base, renders = Counter()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<3 {
                group.addTask {
                    _ = try await Self.curl("\(base)/insecure/rs:fit:\(3000 + index):3000/el:1/plain/local:///orbit.gif@gif")
                    renders.increment()
                }
            }
            var asked = 0
            while renders.current < 3 {
                let health = try await Self.curl("\(base)/health")
                #expect(health.status == "200")
                asked += 1
            }
            try await group.waitForAll()
            // Blocked, /health answered 504 at the transport's deadline (the request timeout + 1 s):
            // its 200s are the signal, not how fast they came.
            #expect(asked >= 2)
        }
    }

    /// An allowed origin that redirects to another host once fetched it: the allow-list was
    /// checked on the URL asked for only.
    @Test func aRedirectLeavesNoAllowedSourceForAnotherHost() async throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("serve-attack-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        let target = try StaticServer(directory: Imgpipe.samples, requestLog: log)
        defer { target.stop() }
        // Answers every request with a redirect to the same path on argv[1]; exits when stdin closes.
        let script = """
        import http.server, sys, threading
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(302)
                self.send_header("Location", sys.argv[1] + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()
            def log_message(self, *args): pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        print(server.server_address[1], flush=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        sys.stdin.read()
        """
        let redirector = try ExternalTool.Child("/usr/bin/env", ["python3", "-c", script, "http://localhost:\(target.port)"])
        defer { redirector.stop() }
        let port = try #require(try redirector.firstLine().flatMap { Int($0) })
        let server = try Server(["--allow-loopback-sources", "true", "--allowed-source", "http://127.0.0.1:\(port)/",
                                 "--allowed-source", "http://127.0.0.1:\(target.port)/"])
        defer { server.stop() }
        let answer = try await Self.curl("\(server.base)/insecure/rs:fit:10:10/plain/http://127.0.0.1:\(port)/aurora.png")
        #expect(answer.status == "403")
        #expect((try? String(contentsOf: log, encoding: .utf8)) ?? "" == "", "the redirect's target was fetched")
        // The allowed sources themselves are still served.
        #expect(try await Self.curl("\(server.base)/insecure/rs:fit:10:10/plain/http://127.0.0.1:\(target.port)/aurora.png").status == "200")
    }
}
