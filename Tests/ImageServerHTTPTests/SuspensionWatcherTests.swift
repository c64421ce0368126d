import Dispatch
import PipelineTestSupport
import Synchronization
import Testing

@testable import ImageServerHTTP

extension HTTPServerTests {
    @Suite struct HTTPServerWatcherTests {
        @Test func reportsADueDeadlineButNotAForgottenOne() async throws {
            let expired = Mutex<[UInt64]>([])
            let reported = Latch()
            let watcher = try SuspensionWatcher(
                expired: { id in
                    expired.withLock { $0.append(id) }
                    if id == 2 { reported.fire() }
                }, closed: { _ in })
            let now = DispatchTime.now().uptimeNanoseconds
            watcher.watch(id: 1, socket: -1, deadline: now + 1_000_000)
            watcher.forget(id: 1, socket: -1)
            watcher.watch(id: 2, socket: -1, deadline: now + 2_000_000)
            try await withDeadline { await reported.wait() }
            watcher.stop()
            watcher.stop()  // idempotent
            #expect(expired.withLock { $0 } == [2])
        }

        @Test func answeredRequestsDoNotPileUpInTheQueue() throws {
            let watcher = try SuspensionWatcher(expired: { _ in }, closed: { _ in })
            defer { watcher.stop() }
            let far = DispatchTime.now().uptimeNanoseconds + 3_600_000_000_000
            watcher.watch(id: 1, socket: -1, deadline: far)  // one long request at the head
            for id in UInt64(2)...10_000 {
                watcher.watch(id: id, socket: -1, deadline: far)
                watcher.forget(id: id, socket: -1)
            }
            #expect(watcher.queuedCount <= 1025)
        }
    }
}
