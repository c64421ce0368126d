// scripts/sanitize's self-check: the same contended Mutex, plus a deliberate data race on
// `unprotected`. TSan must report the race on `unprotected`, and nothing about the Mutex.
import Foundation
import Synchronization

final class Counter: Sendable {
    let value = Mutex(0)
}

nonisolated(unsafe) var unprotected = 0
let counter = Counter()
let group = DispatchGroup()
for _ in 0..<4 {
    group.enter()
    Thread {
        for _ in 0..<10_000 {
            counter.value.withLock { $0 += 1 }
            unprotected += 1
        }
        group.leave()
    }.start()
}
group.wait()
print(counter.value.withLock { $0 }, unprotected)
