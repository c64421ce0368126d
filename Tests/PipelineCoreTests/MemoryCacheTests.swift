import Foundation
import PipelineCore
import Testing

@Suite("Memory cache")
struct MemoryCacheTests {
    @Test func evictsLeastRecentlyUsedToStayUnderTheByteLimit() {
        let cache = MemoryCache<String, Int>(costLimit: 100, entryCostFraction: 1)
        cache.insert(1, for: "a", cost: 40)
        cache.insert(2, for: "b", cost: 40)
        #expect(cache.value(for: "a") == 1)  // a is now more recent than b
        cache.insert(3, for: "c", cost: 40)  // 120 > 100: evict the least recent, b
        #expect(cache.value(for: "b") == nil)
        #expect(cache.value(for: "a") == 1 && cache.value(for: "c") == 3)
        #expect(cache.totalCost == 80 && cache.count == 2)
        #expect(cache.keysByRecency == ["c", "a"])
    }

    @Test func honoursACountLimit() {
        let cache = MemoryCache<Int, Int>(costLimit: 1_000, countLimit: 3, entryCostFraction: 1)
        for i in 0..<10 { cache.insert(i, for: i, cost: 1) }
        #expect(cache.count == 3)
        #expect(cache.keysByRecency == [9, 8, 7])
    }

    @Test func doesNotStoreAnEntryOverThePerEntryLimit() {
        let cache = MemoryCache<String, Int>(costLimit: 1_000, entryCostFraction: 0.1)
        cache.insert(1, for: "small", cost: 100)
        cache.insert(2, for: "huge", cost: 101)
        #expect(cache.value(for: "small") == 1)
        #expect(cache.value(for: "huge") == nil)
        cache.insert(3, for: "small", cost: 500)  // replacing with an oversized value removes it
        #expect(cache.value(for: "small") == nil && cache.totalCost == 0)
    }

    @Test func replacingAValueUpdatesTheCost() {
        let cache = MemoryCache<String, Int>(costLimit: 100, entryCostFraction: 1)
        cache.insert(1, for: "a", cost: 10)
        cache.insert(2, for: "a", cost: 30)
        #expect(cache.totalCost == 30 && cache.count == 1 && cache.value(for: "a") == 2)
    }

    @Test func trimAndRemoveAll() {
        let cache = MemoryCache<Int, Int>(costLimit: 100, entryCostFraction: 1)
        for i in 0..<10 { cache.insert(i, for: i, cost: 10) }
        cache.trim(toFraction: 0.5)
        #expect(cache.totalCost == 50)
        #expect(cache.keysByRecency == [9, 8, 7, 6, 5])
        cache.removeValue(for: 7)
        #expect(cache.keysByRecency == [9, 8, 6, 5])
        cache.removeAll()
        #expect(cache.count == 0 && cache.totalCost == 0 && cache.value(for: 9) == nil)
        cache.insert(1, for: 1, cost: 10)  // still usable after removeAll
        #expect(cache.value(for: 1) == 1)
    }

    @Test func slotsAreReusedAfterEviction() {
        let cache = MemoryCache<Int, Int>(costLimit: 50, entryCostFraction: 1)
        for i in 0..<10_000 { cache.insert(i, for: i, cost: 10) }
        #expect(cache.count == 5)
        #expect(cache.keysByRecency == [9_999, 9_998, 9_997, 9_996, 9_995])
    }

    @Test func staysConsistentUnderConcurrentUse() async {
        let cache = MemoryCache<Int, Int>(costLimit: 500, entryCostFraction: 1)
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for i in 0..<5_000 {
                        let key = (i * 31 + worker) % 200
                        if let value = cache.value(for: key) { precondition(value == key * 2) }
                        cache.insert(key * 2, for: key, cost: 5)
                    }
                }
            }
        }
        #expect(cache.totalCost <= 500)
        #expect(cache.totalCost == cache.count * 5)
        #expect(cache.keysByRecency.count == cache.count)
    }

    @Test func aBudgetNearIntMaxDoesNotTrap() {
        let cache = MemoryCache<Int, Int>(costLimit: .max, entryCostFraction: 1)
        cache.insert(1, for: 1, cost: 10)
        cache.trim(toFraction: 1)
        #expect(cache.entryCostLimit == .max && cache.value(for: 1) == 1)
    }

    @Test func defaultBudgetIsAFifthOfMemoryCappedAt512MiB() {
        let empty = try? FakeCgroup()
        let expected = min(ProcessInfo.processInfo.physicalMemory / 5, 512 << 20)
        #expect(MemoryCache<Int, Int>.defaultCostLimit(cgroupRoot: empty?.path ?? "/nonexistent") == Int(expected))
    }

    @Test func defaultBudgetIsAFifthOfTheCgroupV2LimitInsideAContainer() throws {
        let cgroup = try FakeCgroup()
        try cgroup.write("memory.max", "536870912\n")  // a 512 MiB pod
        let gib64: UInt64 = 64 << 30
        #expect(MemoryCache<Int, Int>.containerMemoryLimit(cgroupRoot: cgroup.path) == 512 << 20)
        #expect(MemoryCache<Int, Int>.defaultCostLimit(cgroupRoot: cgroup.path, physicalMemory: gib64)
                == (512 << 20) / 5)
        // A limit above physical memory changes nothing.
        try cgroup.write("memory.max", "\(UInt64(1) << 40)\n")
        #expect(MemoryCache<Int, Int>.defaultCostLimit(cgroupRoot: cgroup.path, physicalMemory: 1 << 30)
                == (1 << 30) / 5)
    }

    @Test func cgroupV2MaxMeansNoLimit() throws {
        let cgroup = try FakeCgroup()
        try cgroup.write("memory.max", "max\n")
        #expect(MemoryCache<Int, Int>.containerMemoryLimit(cgroupRoot: cgroup.path) == nil)
        #expect(MemoryCache<Int, Int>.defaultCostLimit(cgroupRoot: cgroup.path, physicalMemory: 64 << 30) == 512 << 20)
    }

    @Test func cgroupV1LimitIsTheFallback() throws {
        let cgroup = try FakeCgroup()
        try cgroup.write("memory/memory.limit_in_bytes", "268435456\n")  // 256 MiB
        #expect(MemoryCache<Int, Int>.defaultCostLimit(cgroupRoot: cgroup.path, physicalMemory: 64 << 30)
                == (256 << 20) / 5)
        // v1 spells "unlimited" as a huge number: physical memory decides.
        try cgroup.write("memory/memory.limit_in_bytes", "9223372036854771712\n")
        #expect(MemoryCache<Int, Int>.defaultCostLimit(cgroupRoot: cgroup.path, physicalMemory: 1 << 30)
                == (1 << 30) / 5)
    }

    @Test func aMalformedCgroupFileCountsAsNoLimit() throws {
        let cgroup = try FakeCgroup()
        try cgroup.write("memory.max", "-1 garbage")
        #expect(MemoryCache<Int, Int>.containerMemoryLimit(cgroupRoot: cgroup.path) == nil)
        try cgroup.write("memory.max", String(repeating: "9", count: 5000))
        #expect(MemoryCache<Int, Int>.containerMemoryLimit(cgroupRoot: cgroup.path) == nil)
    }
}

/// A throw-away directory laid out like `/sys/fs/cgroup`, removed on deinit.
private final class FakeCgroup {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory
            .appendingPathComponent("fake-cgroup-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func write(_ name: String, _ text: String) throws {
        let url = URL(fileURLWithPath: path).appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
