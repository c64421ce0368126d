import CacheDisk
import Foundation
import LoaderHTTP
import PipelineCore
import PipelineTestSupport
import Testing

/// Issue 23: against an origin that sends only `Last-Modified` (and `Date`), as Python's
/// `http.server` does, every disk entry was stale at once, so every launch revalidated every
/// picture. With the heuristic lifetime (a tenth of the time since `Last-Modified`) a second
/// launch makes no request for pictures that have not changed for a while.
@Suite("A second launch against an origin that sends only Last-Modified", .timeLimit(.minutes(2)))
struct SecondLaunchFreshnessTests {
    static let count = 8

    /// One "launch": a new pipeline (new memory cache, new `DiskCache` instance on `directory`)
    /// loads `/lastmodified/p0…` (each picture last modified `age` seconds before the server
    /// first served it) and finishes its background work. Returns each response's source.
    static func launch(_ server: FixtureServer, directory: URL, age: Int, clock: TestClock? = nil,
                       revalidation: RevalidationPolicy = .staleWhileRevalidate) async throws -> [ImageSource] {
        let disk = try DiskCache(directory: directory, sizeLimit: 16 << 20)
        let pipeline = makePipeline(loader: HTTPDataLoader(), decoders: fixtureDecoders, diskCache: disk,
                                    negativeCacheLifetime: 0, clock: clock)
        var sources: [ImageSource] = []
        for index in 0..<count {
            let url = server.url("/lastmodified/p\(index)?age=\(age)")
            sources.append(try await pipeline.image(for: ImageRequest(url: url, revalidation: revalidation)).source)
        }
        await pipeline.waitForBackgroundWork()
        await disk.waitForMaintenance()
        return sources
    }

    /// The requests the server received for `/lastmodified/…`, and how many were 304s.
    static func requests(_ server: FixtureServer) async throws -> [Int] {
        let stats = try await server.stats()
        let paths = (0..<count).map { "/lastmodified/p\($0)" }
        return [paths.reduce(0) { $0 + (stats.hits[$1] ?? 0) },
                paths.reduce(0) { $0 + (stats.statuses[$1] ?? []).filter { $0 == 304 }.count }]
    }

    @Test func aSecondLaunchMakesNoRequestForPicturesUnchangedForAMonth() async throws {
        try await withFixtureServer { server in
            try await withTemporaryDirectory(prefix: "LoaderHTTPTests-launch") { (directory: URL) async throws in
                let month = 30 * 86_400
                #expect(try await Self.launch(server, directory: directory, age: month) == Array(repeating: .network, count: Self.count))
                #expect(try await Self.requests(server) == [Self.count, 0])
                // Unchanged for 30 days: fresh for 3 days. The second launch asks nothing.
                #expect(try await Self.launch(server, directory: directory, age: month) == Array(repeating: .disk, count: Self.count))
                #expect(try await Self.requests(server) == [Self.count, 0])
            }
        }
    }

    @Test func picturesChangedASecondAgoAreRevalidatedOnTheNextLaunch() async throws {
        try await withFixtureServer { server in
            try await withTemporaryDirectory(prefix: "LoaderHTTPTests-launch") { (directory: URL) async throws in
                _ = try await Self.launch(server, directory: directory, age: 1)
                #expect(try await Self.requests(server) == [Self.count, 0])
                // Changed a second before: fresh for a tenth of a second at most. The next launch
                // (its clock a second on, so no run can be fast enough to beat that) asks again:
                // bare 304s, with only Date.
                let later = TestClock(start: Date().addingTimeInterval(1))
                let second = try await Self.launch(server, directory: directory, age: 1, clock: later,
                                                   revalidation: .revalidateBeforeAnswering)
                #expect(second == Array(repeating: .revalidated, count: Self.count))
                #expect(try await Self.requests(server) == [2 * Self.count, Self.count])
            }
        }
    }

    @Test func aBare304GivesTheStoredLastModifiedItsHeuristicLifetime() async throws {
        try await withFixtureServer { server in
            try await withTemporaryDirectory(prefix: "LoaderHTTPTests-launch") { (directory: URL) async throws in
                let month = 30 * 86_400
                _ = try await Self.launch(server, directory: directory, age: month)
                // Four days on, the three days are over: revalidated, with a 304 that names no
                // Last-Modified. The stored one still counts: three more days from now.
                let later = TestClock(start: Date().addingTimeInterval(4 * 86_400))
                let second = try await Self.launch(server, directory: directory, age: month, clock: later,
                                                   revalidation: .revalidateBeforeAnswering)
                #expect(second == Array(repeating: .revalidated, count: Self.count))
                #expect(try await Self.requests(server) == [2 * Self.count, Self.count])
                let third = try await Self.launch(server, directory: directory, age: month, clock: later,
                                                  revalidation: .revalidateBeforeAnswering)
                #expect(third == Array(repeating: .disk, count: Self.count))
                #expect(try await Self.requests(server) == [2 * Self.count, Self.count])
            }
        }
    }
}
