/// The one queue-and-admission type: what the pipeline's door (``RequestAdmission``), the decode
/// pool (``DecodeAdmission``, ``WorkerPool``'s queue) and the HTTP loader's queue of requests
/// waiting for a connection are each a configuration of.
///
/// It has two parts, used together or alone:
///
/// - **A budget** (a count and/or bytes) and what is admitted against it. An entry is admitted
///   while it fits, or when nothing is admitted at all: one larger than the whole budget runs
///   alone, so nothing waits forever.
/// - **A line** of entries, each with a group (an ``Origin`` for per-host fairness, or one group
///   for all) and a priority that may change while it waits (``PriorityHandle``): visible ones
///   first, in arrival order (ids grow with arrival) within a priority, O(1) to take or remove.
///   The line has a bound of its own (``lineBudget``) and **one push-out policy**
///   (``planPushOut(for:cost:isCandidate:alsoFrees:)``) for a visible newcomer that does not
///   fit: the newest lower-priority entry goes first, then the newest entry of the group holding
///   the most, while that group still holds at least as much as the newcomer's afterwards (so a
///   flood to a few slow hosts cannot keep a healthy host out, and two groups never push each
///   other out in turn). Room is planned before anyone is pushed out, so nobody is unless that
///   makes room.
///
/// What the line holds is its owner's choice: the requests waiting for a slot (the loader's
/// queue, the decode pool), or the requests admitted (the door, where those in flight are the
/// ones pushed out). A value type: its owner keeps it behind its own lock.
package struct AdmissionQueue<Group: Hashable, Entry> {
    /// A count and/or bytes; `nil` bounds nothing.
    package struct Budget: Hashable, Sendable {
        package var count: Int?
        package var bytes: Int?

        package init(count: Int? = nil, bytes: Int? = nil) {
            self.count = count
            self.bytes = bytes
        }

        /// Whether `bytes` more fit the byte bound with `inUse` held: within it, or `alone`
        /// (the one taking them holds all that is held), so that one larger than the whole
        /// budget still goes, alone, and nothing waits forever.
        package func admits(_ bytes: Int, inUse: Int, alone: Bool) -> Bool {
            alone || self.bytes.map { inUse + bytes <= $0 } ?? true
        }
    }

    /// What entries hold: how many, and their bytes.
    package struct Usage: Hashable, Sendable {
        package var count: Int
        package var bytes: Int

        package init(count: Int = 0, bytes: Int = 0) {
            self.count = count
            self.bytes = bytes
        }

        /// One entry of `bytes`.
        package static func one(_ bytes: Int) -> Usage { Usage(count: 1, bytes: bytes) }

        static func + (a: Usage, b: Usage) -> Usage { Usage(count: a.count + b.count, bytes: a.bytes + b.bytes) }
        static func - (a: Usage, b: Usage) -> Usage { Usage(count: a.count - b.count, bytes: a.bytes - b.bytes) }
    }

    /// Which bound of a budget is reached.
    package enum Bound: Sendable { case count, bytes }

    /// Why ``planPushOut(for:cost:isCandidate:alsoFrees:)`` chose an entry.
    package enum PushOutReason: Sendable {
        /// It waits at a lower priority than the visible newcomer.
        case lowerPriority
        /// Its group holds the most, more than the newcomer's will.
        case fairness
    }

    private struct Slot {
        var entry: Entry
        let group: Group
        var cost: Usage
        /// The handle its priority is read from, or `nil` for one set by ``setPriority(_:to:)``.
        let handle: PriorityHandle?
        var fixed: ImagePriority
        /// Which line of its group holds its id.
        var inVisibleLine: Bool

        var priority: ImagePriority { handle?.current ?? fixed }
    }

    /// One group's ids in arrival order, by priority, and what the group holds.
    private struct Lines {
        var visible = Line<UInt64>()
        var prefetch = Line<UInt64>()
        /// Ids of entries gone that are still in the lines (skipped when met).
        var stale = 0
        var usage = Usage()

        var isEmpty: Bool { visible.isEmpty && prefetch.isEmpty && usage == Usage() }
    }

    /// The bound on what is admitted.
    package let budget: Budget
    /// The bound on the line.
    package let lineBudget: Budget
    /// What ``planPushOut(for:cost:isCandidate:alsoFrees:)`` compares groups by.
    private let fairness: KeyPath<Usage, Int>

    /// What is admitted now.
    package private(set) var admitted = Usage()
    /// The most bytes admitted at once so far.
    package private(set) var peakAdmittedBytes = 0
    /// What the line holds now (its entries, and what was charged to its groups).
    package private(set) var lined = Usage()

    private var slots: [UInt64: Slot] = [:]
    private var groups: [Group: Lines] = [:]
    /// How many entries read their priority from a handle.
    private var handled = 0
    /// `PriorityHandle.changeCount` when the entries' priorities were last looked at.
    private var priorityChangesSeen = UInt64.max

    /// A queue admitting within `budget`, whose line is bounded by `lineBudget`; push-out
    /// compares groups by `fairness` (their bytes by default, or their count).
    package init(budget: Budget = Budget(), lineBudget: Budget = Budget(), fairness: KeyPath<Usage, Int> = \.bytes) {
        self.budget = budget
        self.lineBudget = lineBudget
        self.fairness = fairness
    }

    // MARK: The budget

    /// Whether an entry of `bytes` fits the budget now: within it, or alone (nothing admitted).
    package func fits(_ bytes: Int) -> Bool {
        admitted.count == 0 || (budget.count.map { admitted.count < $0 } ?? true)
            && budget.admits(bytes, inUse: admitted.bytes, alone: false)
    }

    /// Admits an entry of `bytes` if it fits and the line is empty (it never jumps ahead of an
    /// entry waiting); `false` when it must wait.
    package mutating func tryAdmit(_ bytes: Int) -> Bool {
        guard slots.isEmpty, fits(bytes) else { return false }
        take(bytes)
        return true
    }

    /// An admitted entry of `bytes` left: its room is free (``admitWaiting()`` fills it).
    package mutating func release(_ bytes: Int) {
        admitted = admitted - .one(bytes)
    }

    /// Admits the most urgent entries of the line while they fit, and returns them, taken off
    /// the line (the first that does not fit keeps the others waiting behind it).
    package mutating func admitWaiting() -> [Entry] {
        var admittedEntries: [Entry] = []
        requeueChangedPriorities()
        while let id = mostUrgent(), let slot = slots[id], fits(slot.cost.bytes) {
            _ = remove(id)
            take(slot.cost.bytes)
            admittedEntries.append(slot.entry)
        }
        return admittedEntries
    }

    private mutating func take(_ bytes: Int) {
        admitted = admitted + .one(bytes)
        peakAdmittedBytes = max(peakAdmittedBytes, admitted.bytes)
    }

    // MARK: The line

    /// Entries in the line.
    package var count: Int { slots.count }
    /// Whether the line has no entry.
    package var isEmpty: Bool { slots.isEmpty }
    /// The groups with entries in the line (or something charged to them).
    package var groupKeys: [Group] { Array(groups.keys) }

    /// The entry `id`, if it is in the line.
    package subscript(id: UInt64) -> Entry? {
        get { slots[id]?.entry }
        set {
            guard let newValue else { return }
            slots[id]?.entry = newValue
        }
    }

    /// Adds `entry` as `id` (ids grow with arrival) of `group`, holding `cost`, at the priority
    /// `priority` has, now and later.
    package mutating func append(_ entry: Entry, id: UInt64, group: Group, cost: Usage, priority: PriorityHandle) {
        handled += 1
        append(Slot(entry: entry, group: group, cost: cost, handle: priority, fixed: .visible, inVisibleLine: false), id: id)
    }

    /// Adds `entry` as `id` (ids grow with arrival) of `group`, holding `cost`, at `priority`
    /// until ``setPriority(_:to:)`` changes it.
    package mutating func append(_ entry: Entry, id: UInt64, group: Group, cost: Usage, priority: ImagePriority) {
        append(Slot(entry: entry, group: group, cost: cost, handle: nil, fixed: priority, inVisibleLine: false), id: id)
    }

    private mutating func append(_ slot: Slot, id: UInt64) {
        var slot = slot
        let visible = slot.priority == .visible, group = slot.group, cost = slot.cost
        slot.inVisibleLine = visible
        slots[id] = slot
        var lines = groups.removeValue(forKey: group) ?? Lines()
        lines.usage = lines.usage + cost
        if visible { lines.visible.append(id) } else { lines.prefetch.append(id) }
        groups[group] = lines
        lined = lined + cost
    }

    /// Takes entry `id` off the line; `nil` when it is not in it.
    @discardableResult
    package mutating func remove(_ id: UInt64) -> Entry? {
        guard let slot = slots.removeValue(forKey: id), var lines = groups.removeValue(forKey: slot.group) else { return nil }
        if slot.handle != nil { handled -= 1 }
        lines.usage = lines.usage - slot.cost
        lined = lined - slot.cost
        // The oldest (the next to go) are at the front and the newest (pushed out) at the back:
        // no search for them; another is skipped when met.
        if slot.inVisibleLine ? !lines.visible.drop(id) : !lines.prefetch.drop(id) { lines.stale += 1 }
        let total = lines.visible.count + lines.prefetch.count
        if lines.stale > 32 && lines.stale * 2 > total {
            let live = slots
            lines.visible = Line(lines.visible.waiting.filter { live[$0] != nil })
            lines.prefetch = Line(lines.prefetch.waiting.filter { live[$0] != nil })
            lines.stale = 0
        }
        if !lines.isEmpty { groups[slot.group] = lines }
        return slot.entry
    }

    /// Entry `id` (added at an ``ImagePriority``) now waits at `priority`: it moves to that
    /// line, at its place by arrival.
    package mutating func setPriority(_ id: UInt64, to priority: ImagePriority) {
        guard var slot = slots[id], slot.handle == nil, slot.fixed != priority else { return }
        slot.fixed = priority
        let visible = priority == .visible
        if slot.inVisibleLine != visible, var lines = groups.removeValue(forKey: slot.group) {
            if slot.inVisibleLine ? !lines.visible.drop(id) : !lines.prefetch.drop(id) { lines.stale += 1 }
            if visible { lines.visible.insert(id) } else { lines.prefetch.insert(id) }
            slot.inVisibleLine = visible
            groups[slot.group] = lines
        }
        slots[id] = slot
    }

    /// The priority of entry `id` now.
    package func priority(of id: UInt64) -> ImagePriority? { slots[id]?.priority }

    /// Changes what entry `id` holds by `change` (its group's and the line's too).
    package mutating func adjust(_ id: UInt64, by change: Usage) {
        guard var slot = slots[id] else { return }
        slot.cost = slot.cost + change
        slots[id] = slot
        charge(change, to: slot.group)
    }

    /// Charges `cost` to `group` apart from any entry (what entries share: the door's started
    /// work); a negative one gives it back.
    package mutating func charge(_ cost: Usage, to group: Group) {
        var lines = groups.removeValue(forKey: group) ?? Lines()
        lines.usage = lines.usage + cost
        lined = lined + cost
        if !lines.isEmpty { groups[group] = lines }
    }

    /// What `group` holds in the line.
    package func usage(of group: Group) -> Usage { groups[group]?.usage ?? Usage() }

    /// The bound of ``lineBudget`` that one more entry holding `cost` would pass, if any.
    package func lineBound(adding cost: Usage) -> Bound? {
        lineBound(adding: cost, freed: Usage())
    }

    private func lineBound(adding cost: Usage, freed: Usage) -> Bound? {
        let after = lined - freed + cost
        if let limit = lineBudget.count, after.count > limit { return .count }
        if let limit = lineBudget.bytes, after.bytes > limit { return .bytes }
        return nil
    }

    /// Takes the most urgent entry off the line: the oldest visible one, else the oldest.
    package mutating func popMostUrgent() -> Entry? {
        requeueChangedPriorities()
        return mostUrgent().flatMap { remove($0) }
    }

    /// Takes the oldest entry of `group` at `visible` priority (or below it) off the line.
    package mutating func popFirst(of group: Group, visible: Bool) -> Entry? {
        requeueChangedPriorities()
        // Taken out of the dictionary while it changes, so dropping stale ids never copies the lines.
        guard var lines = groups.removeValue(forKey: group) else { return nil }
        let id = visible ? lines.visible.firstLive(slots, stale: &lines.stale) : lines.prefetch.firstLive(slots, stale: &lines.stale)
        if !lines.isEmpty { groups[group] = lines }
        return id.flatMap { remove($0) }
    }

    /// The id of the most urgent entry (priorities as last looked at): the oldest visible one,
    /// else the oldest.
    private mutating func mostUrgent() -> UInt64? {
        var best: (id: UInt64, visible: Bool)?
        for group in Array(groups.keys) {
            guard var lines = groups.removeValue(forKey: group) else { continue }
            if let id = lines.visible.firstLive(slots, stale: &lines.stale) {
                if best.map({ !$0.visible || id < $0.id }) ?? true { best = (id, true) }
            } else if let id = lines.prefetch.firstLive(slots, stale: &lines.stale) {
                if best.map({ !$0.visible && id < $0.id }) ?? true { best = (id, false) }
            }
            if !lines.isEmpty { groups[group] = lines }
        }
        return best?.id
    }

    // MARK: The push-out policy

    /// The entries to push out, in order, so that a visible newcomer of `group` holding `cost`
    /// fits the line, or `nil` when they cannot make room (the line is left as it is: remove
    /// those returned to push them out). The newest lower-priority entry first (from any group),
    /// then the newest entry of the group holding the most, while that is another group and still
    /// holds at least as much as `group` with the newcomer afterwards. Only entries
    /// `isCandidate` accepts; `alsoFrees` says what pushing one out frees besides its own cost
    /// (its group and what it frees: the last waiter of shared work frees the work), asked once
    /// for each entry chosen and at most once more for one that then cannot be.
    package mutating func planPushOut(for group: Group, cost: Usage, isCandidate: (UInt64, Entry) -> Bool = { _, _ in true },
                                      alsoFrees: (UInt64, Entry) -> (Group, Usage)? = { _, _ in nil }) -> [(id: UInt64, reason: PushOutReason)]? {
        requeueChangedPriorities()
        var chosen: [(id: UInt64, reason: PushOutReason)] = [], removed = Set<UInt64>()
        var freed = Usage(), freedByGroup: [Group: Usage] = [:]
        func held(_ group: Group) -> Usage { (groups[group]?.usage ?? Usage()) - (freedByGroup[group] ?? Usage()) }
        func candidate(_ id: UInt64) -> Bool { !removed.contains(id) && slots[id].map { isCandidate(id, $0.entry) } == true }
        while lineBound(adding: cost, freed: freed) != nil {
            let victim: UInt64, reason: PushOutReason
            var also: (Group, Usage)?
            if let prefetch = newestLowPriority(where: candidate) {
                (victim, reason) = (prefetch, .lowerPriority)
                also = slots[victim].flatMap { alsoFrees(victim, $0.entry) }
            } else {
                guard let longest = groups.keys.max(by: { held($0)[keyPath: fairness] < held($1)[keyPath: fairness] }), longest != group,
                      let lines = groups[longest] else { return nil }
                let newest: UInt64
                switch (lines.visible.newest(where: candidate), lines.prefetch.newest(where: candidate)) {
                case (let visible?, let prefetch?): newest = max(visible, prefetch)
                case (let visible?, nil): newest = visible
                case (nil, let prefetch?): newest = prefetch
                case (nil, nil): return nil
                }
                guard let slot = slots[newest] else { return nil }
                // What it frees besides its own cost only matters when its own leaves enough.
                let after = (held(group) + cost)[keyPath: fairness]
                guard (held(longest) - slot.cost)[keyPath: fairness] >= after else { return nil }
                also = alsoFrees(newest, slot.entry)
                let leaving = slot.cost + (also.map { $0.0 == longest ? $0.1 : Usage() } ?? Usage())
                guard (held(longest) - leaving)[keyPath: fairness] >= after else { return nil }
                (victim, reason) = (newest, .fairness)
            }
            guard let slot = slots[victim] else { return nil }
            chosen.append((victim, reason))
            removed.insert(victim)
            freed = freed + slot.cost
            freedByGroup[slot.group] = (freedByGroup[slot.group] ?? Usage()) + slot.cost
            if let (otherGroup, other) = also {
                freed = freed + other
                freedByGroup[otherGroup] = (freedByGroup[otherGroup] ?? Usage()) + other
            }
        }
        return chosen
    }

    /// The newest entry below visible priority now that `isCandidate` accepts, of any group.
    private func newestLowPriority(where isCandidate: (UInt64) -> Bool) -> UInt64? {
        var newest: UInt64?
        for lines in groups.values {
            if let id = lines.prefetch.newest(where: { isCandidate($0) && slots[$0]?.priority != .visible }), newest.map({ id > $0 }) ?? true {
                newest = id
            }
        }
        return newest
    }

    /// Moves entries whose priority changed while they waited into the line of their current
    /// priority, keeping arrival order: a prefetch a visible caller joined moves up, and one
    /// whose visible caller left moves back down.
    private mutating func requeueChangedPriorities() {
        // Entries join the line of their priority then; only a change since the last look (any
        // handle's, `PriorityHandle.changeCount`) can have put one in the wrong line. Read
        // before looking: a change during the look moves the count, and the next look looks again.
        let changes = PriorityHandle.changeCount
        guard handled > 0, changes != priorityChangesSeen else { return }
        priorityChangesSeen = changes
        for group in Array(groups.keys) {
            guard var lines = groups[group],
                  lines.visible.waiting.contains(where: { slots[$0].map { $0.priority != .visible } ?? false })
                    || lines.prefetch.waiting.contains(where: { slots[$0]?.priority == .visible }) else { continue }
            // One pass that reads each entry's priority once: an entry must land in exactly one line.
            var visible: [UInt64] = [], prefetch: [UInt64] = []
            for id in Array(lines.visible.waiting) + Array(lines.prefetch.waiting) {
                guard let slot = slots[id] else { continue }
                let isVisible = slot.priority == .visible
                slots[id]?.inVisibleLine = isVisible
                if isVisible { visible.append(id) } else { prefetch.append(id) }
            }
            lines.visible = Line(visible.sorted())
            lines.prefetch = Line(prefetch.sorted())
            lines.stale = 0
            groups[group] = lines
        }
    }
}

/// The one group of an ``AdmissionQueue`` that groups nothing.
package enum OneGroup: Hashable, Sendable { case all }

/// An array queue with a moving head: O(1) pops from either end without shifting the
/// elements each time.
package struct Line<Element> {
    package private(set) var elements: [Element] = []
    package private(set) var head = 0

    package init() {}

    package init(_ elements: [Element]) { self.elements = elements }

    package var isEmpty: Bool { head == elements.count }
    /// Elements in the line.
    package var count: Int { elements.count - head }
    package var waiting: ArraySlice<Element> { elements[head...] }
    package var first: Element? { isEmpty ? nil : elements[head] }

    package mutating func append(_ element: Element) { elements.append(element) }

    package mutating func popLast() -> Element? { isEmpty ? nil : elements.popLast() }

    package mutating func popFirst() -> Element? {
        guard head < elements.count else { return nil }
        let element = elements[head]
        head += 1
        if head == elements.count {
            elements.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64 && head * 2 >= elements.count {
            elements.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Removes and returns the elements matching `predicate`, keeping the others in order.
    ///
    /// One pass, asking `predicate` once per element: a priority can be raised by another thread
    /// at any moment, and asking twice could both keep and remove the same job — it would
    /// then start twice and its continuation be resumed twice.
    package mutating func removeAll(where predicate: (Element) -> Bool) -> [Element] {
        var kept: [Element] = [], removed: [Element] = []
        for element in waiting {
            if predicate(element) { removed.append(element) } else { kept.append(element) }
        }
        self = Line(kept)
        return removed
    }
}

extension Line where Element == UInt64 {
    /// Drops `id` when it is the first or the last: `false` when it is elsewhere (left as a
    /// stale id to skip).
    mutating func drop(_ id: UInt64) -> Bool {
        if first == id {
            _ = popFirst()
        } else if waiting.last == id {
            _ = popLast()
        } else {
            return false
        }
        return true
    }

    /// The first id still in `live`, dropping the stale ones before it.
    mutating func firstLive<Value>(_ live: [UInt64: Value], stale: inout Int) -> UInt64? {
        while let id = first {
            if live[id] != nil { return id }
            _ = popFirst()
            stale -= 1
        }
        return nil
    }

    /// Inserts `id` at its place by arrival (after every smaller id).
    mutating func insert(_ id: UInt64) {
        var low = head, high = elements.count
        while low < high {
            let middle = (low + high) / 2
            if elements[middle] < id { low = middle + 1 } else { high = middle }
        }
        elements.insert(id, at: low)
    }

    /// The newest id that `isCandidate` accepts.
    func newest(where isCandidate: (UInt64) -> Bool) -> UInt64? { waiting.last(where: isCandidate) }
}
