// scripts/sanitize's self-check: four threads contend for a Mutex held in a class, as the
// project's types hold theirs. Correct code: TSan must report nothing.
import Foundation
import Synchronization

final class Counter: Sendable {
    let value = Mutex(0)
}

let counter = Counter()
let group = DispatchGroup()
for _ in 0..<4 {
    group.enter()
    Thread {
        for _ in 0..<10_000 { counter.value.withLock { $0 += 1 } }
        group.leave()
    }.start()
}
group.wait()
print(counter.value.withLock { $0 })
