import CCurl
import Foundation
@testable import LoaderHTTP
import PipelineCore
import PipelineTestSupport
import Testing

/// A multi-interface call that fails (out of memory, an internal error) ends the transfers it
/// concerns with a typed error and leaves the loader working. The failures are injected into
/// the engine's calls: a real libcurl does not run out of memory on demand.
@Suite("curl multi failures", .timeLimit(.minutes(1)))
struct EngineFailureTests {
    @Test func aFailedPerformFailsTheTransfersInFlightAndTheLoaderGoesOn() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: .init(maxRetries: 0))
            let held = Task { try await loader.load(DataLoadRequest(url: server.url("/hold/a"))) }
            #expect(try await eventually(timeout: 30) { try await server.hits("/hold/a") == 1 })
            loader.engine.injectFault(CURLM_OUT_OF_MEMORY, into: .perform)
            // Wakes the engine, whose next perform fails: the held transfer and this one end.
            let added = await pipelineError { _ = try await loader.load(DataLoadRequest(url: server.url("/image/b"))) }
            let inFlight = await pipelineError { _ = try await held.value }
            let expected = LoadFailure.http(.engineFailure(message: "curl_multi_perform failed: Out of memory"))
            #expect(added == expected)
            #expect(inFlight == expected)
            try await server.release("a")

            guard case .data(let data, _) = try await loader.load(DataLoadRequest(url: server.url("/image/c"))) else {
                Issue.record("not data"); return
            }
            #expect(data.count == 2000)
        }
    }

    @Test func aFailedAddFailsThatRequestOnly() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: .init(maxRetries: 0))
            loader.engine.injectFault(CURLM_OUT_OF_MEMORY, into: .add)
            let error = await pipelineError { _ = try await loader.load(DataLoadRequest(url: server.url("/image/a"))) }
            #expect(error == .http(.engineFailure(message: "curl_multi_add_handle failed: Out of memory")))
            #expect(try await server.hits("/image/a") == 0)
            guard case .data = try await loader.load(DataLoadRequest(url: server.url("/image/a"))) else {
                Issue.record("not data"); return
            }
        }
    }

    @Test func aFailedPollFailsTheTransfersInFlightAndTheLoaderGoesOn() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: .init(maxRetries: 0))
            let held = Task { try await loader.load(DataLoadRequest(url: server.url("/hold/p"))) }
            #expect(try await eventually(timeout: 30) { try await server.hits("/hold/p") == 1 })
            // The engine thread is in (or about to enter) its poll; the fault hits the next one,
            // which a second request (waking the thread) brings on.
            loader.engine.injectFault(CURLM_INTERNAL_ERROR, into: .poll)
            let second = Task { try await loader.load(DataLoadRequest(url: server.url("/hold/q"))) }
            let inFlight = await pipelineError { _ = try await held.value }
            #expect(inFlight == .http(.engineFailure(message: "curl_multi_poll failed: Internal error")))
            try await server.release("p")
            try await server.release("q")
            _ = try? await second.value
            guard case .data = try await loader.load(DataLoadRequest(url: server.url("/image/after"))) else {
                Issue.record("not data"); return
            }
        }
    }
}
