import Foundation
import PipelineCore
import PipelineTestSupport
import Synchronization
import Testing

@Suite("WorkerPool with idle threads that linger")
struct WorkerPoolIdleTests {
    @Test func lingeringThreadsRunEveryJobWithinTheBoundAndAfterTimingOut() async throws {
        let pool = WorkerPool(maxConcurrent: 2, name: "test", idleTimeout: 0.05)
        let running = Running()
        for round in 0..<3 {
            let sum = try await withThrowingTaskGroup(of: Int.self) { group in
                for i in 0..<200 {
                    group.addTask {
                        try await pool.run(priority: PriorityHandle(.visible)) {
                            running.state.withLock { $0.now += 1; $0.peak = max($0.peak, $0.now) }
                            defer { running.state.withLock { $0.now -= 1 } }
                            return i
                        }
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(sum == 199 * 200 / 2, "round \(round)")
            // Sequential jobs reuse the idle threads; then every thread times out and exits.
            for i in 0..<50 { #expect(try await pool.run(priority: PriorityHandle(.visible)) { i } == i) }
            #expect(await eventually { pool.threadCount == 0 }, "round \(round): every idle thread timed out")
        }
        #expect(running.state.withLock { $0.peak } <= 2)
    }
}

/// Jobs running now and the most that ever ran at once.
private final class Running: Sendable {
    let state = Mutex((now: 0, peak: 0))
}
