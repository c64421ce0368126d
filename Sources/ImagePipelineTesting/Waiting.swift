import Foundation
import PipelineCore

/// Checks `condition` every millisecond until it holds or `timeout` seconds have passed; true
/// when it held. For conditions nothing signals (a count inside the pipeline's actor, a local
/// server's counters): the timeout is a safety net for a broken test, never a pause the test
/// relies on, so a starved machine makes the test slower, not wrong. An error `condition`
/// throws ends the wait and is rethrown.
public func eventually(isolation: isolated (any Actor)? = #isolation, timeout: TimeInterval = 120,
                       _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while try await !condition() {
        if Date() > deadline { return false }
        try? await Task.sleep(nanoseconds: 1_000_000)
    }
    return true
}

extension ImagePipeline {
    /// Waits until at least `count` callers wait on the shared work (decode, or the download
    /// before it) for `request`, so a test can release a held load only once every caller it
    /// started has joined. False after `timeout` seconds.
    ///
    /// ```swift
    /// async let a = pipeline.image(for: request)
    /// async let b = pipeline.image(for: request)
    /// #expect(await pipeline.waitForWaiters(2, for: request))
    /// loader.releaseWithFakeData(request.url)
    /// ```
    public nonisolated func waitForWaiters(_ count: Int, for request: ImageRequest, timeout: TimeInterval = 120) async -> Bool {
        await eventually(timeout: timeout) { self.waiterCount(for: request) >= count }
    }

    /// Waits until at least `count` callers wait on the download of the fetch URL `url`
    /// (requests of different sizes share one download). False after `timeout` seconds.
    public nonisolated func waitForDownloadWaiters(_ count: Int, for url: URL, timeout: TimeInterval = 120) async -> Bool {
        await eventually(timeout: timeout) { self.downloadWaiterCount(for: url) >= count }
    }
}
