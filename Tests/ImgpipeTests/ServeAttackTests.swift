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
            child = try ExternalTool.Child(Imgpipe.binary.path, ["serve", "--bind", "127.0.0.1:0", "--local-root", Imgpipe.samples.path,
                                                                  "--no-disk-cache", "--quiet"] + arguments)
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
            var slowest = 0.0, asked = 0
            while renders.current < 3 {
                let health = try await Self.curl("\(base)/health")
                #expect(health.status == "200")
                slowest = max(slowest, health.seconds)
                asked += 1
            }
            try await group.waitForAll()
            #expect(asked >= 2)
            #expect(slowest < 2, "/health took \(slowest) s while enlarged animations rendered")
        }
    }
}
