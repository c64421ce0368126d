import Foundation
import LoaderHTTP
import PipelineCore
import PipelineTestSupport
import Testing

/// The bytes all transfers in flight hold together are bounded (`maxDownloadMemory`), not only
/// each transfer's (issue 22, point 4: 48 parallel gzip bombs, each stopped at 50 MB, held
/// 964 MB together). Real libcurl: the fixture server's `/steps` sends its `Content-Length` and
/// first piece, then holds the rest until released, so a transfer holds its claim while the
/// test sends another.
@Suite("HTTPDataLoader's download-memory budget", .timeLimit(.minutes(2)))
struct DownloadMemoryTests {
    static let limits = HTTPDataLoader.Configuration(maxBodyBytes: 200_000, idleTimeout: 150, lowSpeedLimit: 0, totalTimeout: 150,
                                                     maxRetries: 0, maxDownloadMemory: 100_000)

    /// A transfer holding 60,000 bytes of a 100,000 budget: a second declaring 60,000 fails at
    /// once, and one whose gzip body inflates past the room left fails as it grows; both with
    /// `overloaded`, naming the budget. Before, both loaded.
    @Test func transfersThatDoNotFitTheBudgetTogetherFailAsOverloaded() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: Self.limits)
            let holder = Task { try await loader.load(DataLoadRequest(url: server.url("/steps/holder?chunks=2&chunk=30000"))) }
            #expect(await eventually { loader.downloadBytesInUse == 60_000 })

            let declared = server.url("/image/declared?size=60000")
            let first = await #expect(throws: ImagePipelineError.self) { _ = try await loader.load(DataLoadRequest(url: declared)) }
            guard case .overloaded(let url, let limit, let detail)? = first else {
                Issue.record("not overloaded: \(String(describing: first))")
                return
            }
            #expect(url == declared && limit == .downloadMemory && detail.contains("maxDownloadMemory"))

            let inflating = await #expect(throws: ImagePipelineError.self) {
                _ = try await loader.load(DataLoadRequest(url: server.url("/encoded/inflating?encoding=gzip&size=80000")))
            }
            guard case .overloaded(_, .downloadMemory, _)? = inflating else {
                Issue.record("not overloaded: \(String(describing: inflating))")
                return
            }
            #expect(loader.peakDownloadBytes <= 100_000)

            try await server.release("holder.1")
            guard case .data(let body, _) = try await holder.value else {
                Issue.record("the holder did not load")
                return
            }
            #expect(body.count == 60_000)
            #expect(await eventually { loader.downloadBytesInUse == 0 })  // every claim given back
        }
    }

    /// A declared length is claimed as its bytes arrive, not whole before them: a slow host
    /// that declares 150,000 bytes and has sent 30,000 holds 64 KiB of the budget (the first
    /// claim), so another host's 30,000-byte picture still loads. When the whole declared
    /// length was claimed at the headers, it failed as overloaded.
    @Test func aDeclaredLengthIsClaimedAsItsBytesArrive() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: Self.limits)
            let holder = Task { try await loader.load(DataLoadRequest(url: server.url("/steps/slow?chunks=5&chunk=30000"))) }
            #expect(await eventually { loader.downloadBytesInUse == 64 << 10 })
            guard case .data(let other, _) = try await loader.load(DataLoadRequest(url: server.url("/image/other?size=30000"))) else {
                Issue.record("the other host's picture did not load")
                return
            }
            #expect(other.count == 30_000)
            for step in 1...4 { try await server.release("slow.\(step)") }
            guard case .data(let body, _) = try await holder.value else {
                Issue.record("the slow host's picture did not load")
                return
            }
            #expect(body.count == 150_000)  // alone, it may hold more than the budget
            #expect(await eventually { loader.downloadBytesInUse == 0 })
        }
    }

    /// A picture larger than the whole budget (within `maxBodyBytes`) loads when it is alone:
    /// the budget never refuses the only transfer holding bytes, so nothing can starve.
    @Test func aPictureOverTheBudgetLoadsWhenItIsAlone() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: Self.limits)
            guard case .data(let declared, _) = try await loader.load(DataLoadRequest(url: server.url("/image/big?size=150000"))) else {
                Issue.record("no data")
                return
            }
            #expect(declared.count == 150_000)
            let inflated = try await loader.load(DataLoadRequest(url: server.url("/encoded/bigger?encoding=gzip&size=190000")))
            guard case .data(let body, _) = inflated else {
                Issue.record("no data")
                return
            }
            #expect(body.count == 190_000)
            #expect(loader.peakDownloadBytes <= 200_000 && loader.peakDownloadBytes >= 190_000)
        }
    }
}
