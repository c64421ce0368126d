import Foundation
import PipelineCore
import Testing

@Suite("Admission queue: budget, line and push-out")
struct AdmissionQueueTests {
    typealias Queue = AdmissionQueue<String, String>

    /// An entry fits while the budget holds it, and one larger than the whole budget only
    /// alone; nothing jumps ahead of an entry waiting.
    @Test func aBudgetAdmitsWhatFitsAndTheOversizedAlone() {
        var queue = Queue(budget: .init(bytes: 100))
        var admitted = [queue.tryAdmit(60), queue.tryAdmit(50)]
        queue.append("waits", id: 1, group: "a", cost: .one(50), priority: ImagePriority.visible)
        admitted.append(queue.tryAdmit(10))  // fits, but would jump the line
        #expect(admitted == [true, false, false])
        queue.release(60)
        let waited = queue.admitWaiting()
        #expect(waited == ["waits"])
        queue.release(50)
        admitted = [queue.tryAdmit(500), queue.tryAdmit(1)]  // alone, then nothing beside it
        #expect(admitted == [true, false])
        #expect(queue.peakAdmittedBytes == 500)
        #expect(queue.admitted == .one(500))
    }

    /// A count budget: at most that many at once.
    @Test func aCountBudgetAdmitsThatMany() {
        var queue = Queue(budget: .init(count: 2))
        var admitted = [queue.tryAdmit(0), queue.tryAdmit(0), queue.tryAdmit(0)]
        queue.release(0)
        admitted.append(queue.tryAdmit(0))
        #expect(admitted == [true, true, false, true])
    }

    /// Visible entries go first, each priority in arrival order, and a handle's change moves its
    /// entry at the next look: up when raised, behind earlier prefetches when lowered.
    @Test func theMostUrgentGoesFirstAndPrioritiesMayChange() {
        var queue = Queue()
        let handles = [PriorityHandle(.prefetch), PriorityHandle(.visible), PriorityHandle(.prefetch), PriorityHandle(.visible)]
        for (id, handle) in handles.enumerated() {
            queue.append("\(id)", id: UInt64(id), group: id % 2 == 0 ? "a" : "b", cost: .one(1), priority: handle)
        }
        handles[1].set(.prefetch)
        handles[2].set(.visible)
        var order: [String] = []
        while let next = queue.popMostUrgent() { order.append(next) }
        #expect(order == ["2", "3", "0", "1"])
        #expect(queue.isEmpty && queue.lined == .init())
    }

    /// A priority set on the queue (no handle) moves the entry to its place by arrival.
    @Test func aSetPriorityMovesTheEntryByArrival() {
        var queue = Queue()
        for id in 0..<4 { queue.append("\(id)", id: UInt64(id), group: "a", cost: .one(1), priority: ImagePriority.prefetch) }
        queue.setPriority(2, to: .visible)
        queue.setPriority(0, to: .visible)
        #expect(queue.priority(of: 2) == .visible)
        var order: [String] = []
        while let next = queue.popFirst(of: "a", visible: true) { order.append(next) }
        while let next = queue.popFirst(of: "a", visible: false) { order.append(next) }
        #expect(order == ["0", "2", "1", "3"])
    }

    /// Entries removed from the middle are skipped, and what they held is free at once.
    @Test func removedEntriesAreSkippedAndUncounted() {
        var queue = Queue(lineBudget: .init(count: 100))
        for id in 0..<100 { queue.append("\(id)", id: UInt64(id), group: "a", cost: .one(10), priority: ImagePriority.visible) }
        for id in stride(from: 1, to: 99, by: 2) { queue.remove(UInt64(id)) }
        #expect(queue.count == 51 && queue.lined.bytes == 510)
        #expect(queue.usage(of: "a") == .init(count: 51, bytes: 510))
        var taken: [String] = []
        while let next = queue.popFirst(of: "a", visible: true) { taken.append(next) }
        #expect(taken == (0..<100).filter { $0 % 2 == 0 || $0 == 99 }.map { "\($0)" })
        #expect(queue.groupKeys.isEmpty)
    }

    /// The push-out policy: the newest lower-priority entry first, from any group.
    @Test func theNewestPrefetchIsPushedOutFirst() {
        var queue = Queue(lineBudget: .init(count: 3))
        queue.append("old prefetch", id: 1, group: "a", cost: .one(1), priority: ImagePriority.prefetch)
        queue.append("visible", id: 2, group: "b", cost: .one(1), priority: ImagePriority.visible)
        queue.append("new prefetch", id: 3, group: "b", cost: .one(1), priority: ImagePriority.prefetch)
        #expect(queue.lineBound(adding: .one(1)) == .count)
        let plan = queue.planPushOut(for: "c", cost: .one(1))
        #expect(plan?.map(\.id) == [3] && plan?.first?.reason == .lowerPriority)
        #expect(queue.count == 3)  // planned, not done
    }

    /// Then the newest of the group holding the most, while it keeps at least as much as the
    /// newcomer's group with the newcomer; never the newcomer's own group, and never one
    /// `isCandidate` refuses. Two groups never push each other out in turn.
    @Test func thenTheNewestOfTheGroupHoldingTheMost() {
        var queue = Queue(lineBudget: .init(bytes: 100), fairness: \.bytes)
        for id in 0..<8 { queue.append("slow \(id)", id: UInt64(id), group: "slow", cost: .one(10), priority: ImagePriority.visible) }
        queue.append("healthy", id: 8, group: "healthy", cost: .one(20), priority: ImagePriority.visible)
        let plan = queue.planPushOut(for: "healthy", cost: .one(20))
        #expect(plan?.map(\.id) == [7, 6] && plan?.allSatisfy { $0.reason == .fairness } == true)
        let own = queue.planPushOut(for: "slow", cost: .one(10))
        #expect(own == nil)  // its own group holds the most
        let older = queue.planPushOut(for: "healthy", cost: .one(20), isCandidate: { id, _ in id < 7 })
        #expect(older?.map(\.id) == [6, 5])
        // 40 against 40 and a newcomer of 20: pushing one out would leave the slow host below.
        var even = Queue(lineBudget: .init(bytes: 80))
        for id in 0..<4 { even.append("slow", id: UInt64(id), group: "slow", cost: .one(10), priority: ImagePriority.visible) }
        for id in 4..<6 { even.append("healthy", id: UInt64(id), group: "healthy", cost: .one(20), priority: ImagePriority.visible) }
        let none = even.planPushOut(for: "healthy", cost: .one(20))
        #expect(none == nil)
    }

    /// What pushing an entry out frees besides its own cost counts toward the room made.
    @Test func whatAnEntryAlsoFreesCounts() {
        var queue = Queue(lineBudget: .init(bytes: 100))
        for id in 0..<5 { queue.append("slow", id: UInt64(id), group: "slow", cost: .one(10), priority: ImagePriority.visible) }
        queue.charge(.init(bytes: 50), to: "slow")  // shared work the last entry frees
        #expect(queue.lined.bytes == 100)
        let plan = queue.planPushOut(for: "healthy", cost: .one(30), alsoFrees: { id, _ in id == 4 ? ("slow", Queue.Usage(bytes: 50)) : nil })
        #expect(plan?.map(\.id) == [4])
    }

    /// `removeAll(where:)` must ask its predicate once per element: a priority can change between
    /// two asks (another thread raises it), and asking twice both kept and removed a job, which
    /// then started twice and resumed its continuation twice (found by the FlingGrid example;
    /// moved from the HTTP loader's pending queue, whose lines are these).
    @Test func removeAllAsksOncePerElementSoOneIsNeverBothKeptAndRemoved() {
        var line = Line([0, 1, 2, 3])
        var asks: [Int: Int] = [:]
        let removed = line.removeAll { element in
            asks[element, default: 0] += 1
            return asks[element]! > 1
        }
        let kept = Array(line.waiting)
        #expect(asks.values.allSatisfy { $0 == 1 })
        #expect(removed.count + kept.count == 4)
        #expect(Set(removed).isDisjoint(with: kept))
    }
}

@Suite("Origin")
struct OriginTests {
    /// Scheme and host in any case, the default port written or not, brackets and a final dot:
    /// one origin; another port or scheme is another.
    @Test func originsAreNormalized() throws {
        let origin = { (text: String) throws in try #require(URL(string: text)).origin }
        #expect(try origin("HTTP://Example.COM/a") == origin("http://example.com:80/b"))
        #expect(try origin("https://example.com./") == origin("https://example.com:443"))
        #expect(try origin("http://[::1]:8080/") == Origin(scheme: "http", host: "::1", port: 8080))
        #expect(try origin("http://example.com:8080/") != origin("http://example.com/"))
        #expect(try origin("https://example.com/") != origin("http://example.com/"))
        #expect(try origin("data:image/png;base64,AA") == origin("data:text/plain,x"))
        #expect(try origin("http://example.com/").description == "http://example.com:80")
    }
}
