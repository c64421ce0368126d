@testable import CacheRedis
import Foundation
import PipelineCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Whole deadlines on Redis commands")
struct CommandDeadlineTests {
    /// A server that trickles its reply a byte every 10 ms (each `recv` returns at once, the
    /// 100,000-byte reply would take 1,000 s) fails the command at its 100 ms deadline, counts a
    /// timeout and opens the breaker. Under the old per-`recv` timeout a 2,000-byte reply took
    /// 20 s (102 s in the hostile reproduction) with no failure counted. The bound is loose
    /// (60 s: a full test run on 2 cores starves the cooperative pool for seconds) and still
    /// far below what the trickle takes.
    @Test func aTricklingServerFailsTheCommandAtItsDeadlineAndOpensTheBreaker() async throws {
        let server = try TricklingRedis(interval: .milliseconds(10), replyLength: 100_000)
        defer { server.stop() }
        let tier = try RedisCache(configuration: .init(port: server.port, timeout: .milliseconds(100), breakerThreshold: 1,
                                                       breakerCooldown: .seconds(600), authentication: .secret(testSecret)))
        let url = URL(string: "http://127.0.0.1:1/trickled.timg")!
        let clock = ContinuousClock()
        let start = clock.now
        #expect(await tier.cachedData(for: url) == nil)
        let elapsed = clock.now - start
        print("CacheRedisTests: a trickling Redis failed a 100 ms command after \(elapsed)")
        #expect(elapsed < .seconds(60), "\(elapsed)")
        #expect(tier.statistics.timeouts == 1 && tier.statistics.failures == 1)
        // The breaker is open: the next operations do not touch the server.
        #expect(await tier.cachedData(for: [url, URL(string: "http://127.0.0.1:1/other.timg")!]).isEmpty)
        #expect(tier.statistics.skipped == 1 && tier.statistics.failures == 1)
    }

    /// A pipeline of several commands (a batch read) shares one deadline: it does not get one
    /// per reply.
    @Test func aPipelineOfReadsSharesOneDeadline() async throws {
        // Each reply ("+A\r\n") takes 40 ms, within a 100 ms deadline; eight take 320 ms.
        let server = try TricklingRedis(interval: .milliseconds(10), replyLength: 1)
        defer { server.stop() }
        let tier = try RedisCache(configuration: .init(port: server.port, timeout: .milliseconds(100), breakerThreshold: 100,
                                                       authentication: .secret(testSecret)))
        let urls = (0..<8).map { URL(string: "http://127.0.0.1:1/batch\($0).timg")! }
        let clock = ContinuousClock()
        let start = clock.now
        #expect(await tier.cachedData(for: urls).isEmpty)
        let elapsed = clock.now - start
        #expect(elapsed < .seconds(60), "\(elapsed)")
        #expect(tier.statistics.timeouts == 1 && tier.statistics.pipelines == 1)
    }

    /// A connect that the server never completes (its accept queue is full: the kernel drops
    /// the SYN, and the client would retry for two minutes) fails at the connect deadline, as a
    /// timeout the tier counts toward the breaker.
    @Test func aConnectThatNeverCompletesFailsAtItsDeadline() async throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        let port = try #require(RedisServer.bindToLoopback(listener))
        try #require(listen(listener, 0) == 0)
        // One connection fills a backlog of 0; nothing ever accepts it.
        let filler = try RedisConnection(host: "127.0.0.1", port: port, timeout: .seconds(5))
        defer { withExtendedLifetime(filler) {} }
        let clock = ContinuousClock()
        let start = clock.now
        #expect(throws: RedisFailure.self) { _ = try RedisConnection(host: "127.0.0.1", port: port, timeout: .milliseconds(100)) }
        let tier = try RedisCache(configuration: .init(port: port, timeout: .milliseconds(100), breakerThreshold: 1,
                                                       breakerCooldown: .seconds(600), authentication: .secret(testSecret)))
        #expect(await tier.cachedData(for: URL(string: "http://127.0.0.1:1/unreachable.timg")!) == nil)
        let elapsed = clock.now - start
        #expect(elapsed < .seconds(60), "\(elapsed)")  // the kernel retries a SYN for about 127 s
        #expect(tier.statistics.timeouts == 1 && tier.statistics.failures == 1)
        #expect(await tier.cachedData(for: URL(string: "http://127.0.0.1:1/unreachable.timg")!) == nil)
        #expect(tier.statistics.skipped == 1)
    }

    /// A connection whose command timed out is dropped (its replies are out of step), never
    /// handed to the next command; a healthy connection keeps working.
    @Test func aTimedOutConnectionIsNeverReused() async throws {
        let server = try TricklingRedis(interval: .milliseconds(10))
        defer { server.stop() }
        let connection = try RedisConnection(host: "127.0.0.1", port: server.port, timeout: .milliseconds(100))
        #expect(throws: RedisFailure.self) { _ = try connection.command([arg("PING")]) }
        #expect(connection.isBroken)
        #expect(throws: RedisFailure.self) { _ = try connection.command([arg("PING")]) }
    }
}
