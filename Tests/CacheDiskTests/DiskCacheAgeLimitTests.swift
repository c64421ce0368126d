import CacheDisk
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

@Suite("Disk cache age limit: entries unused for too long are removed")
struct DiskCacheAgeLimitTests {
    static let day: TimeInterval = 86_400
    static func url(_ i: Int) -> URL { URL(string: "test://age/\(i)")! }

    /// Stores entries 0…3 with a first instance, then dates their last use in the index 40, 31,
    /// 29 and 0 days back, as if that much time had passed.
    static func entriesLastUsed(in directory: TemporaryDirectory) async throws {
        let writer = try makeCache(directory)
        for i in 0..<4 { await writer.storeData(Data(count: 1000), info: CacheEntryInfo(), for: url(i)) }
        await writer.waitForMaintenance()
        for (i, days) in [40.0, 31, 29, 0].enumerated() {
            await writer.setLastUse(Date().addingTimeInterval(-days * day), for: url(i))
        }
    }

    static func present(in directory: TemporaryDirectory) -> [Int] {
        (0..<4).filter { FileManager.default.fileExists(atPath: directory.entryPath(url($0))) }
    }

    @Test func openingRemovesEntriesUnusedForLongerThanTheLimitFarUnderTheCap() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try await Self.entriesLastUsed(in: directory)
        let cache = try makeCache(directory, maxUnusedAge: 30 * Self.day)
        await cache.waitForMaintenance()
        #expect(Self.present(in: directory) == [2, 3])
        #expect(await cache.entryCount == 2)
        #expect(await cache.cachedData(for: Self.url(0)) == nil)
        #expect(await cache.cachedData(for: Self.url(2)) != nil)
    }

    @Test func withoutALimitOldEntriesStayWhileTheCapAllows() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try await Self.entriesLastUsed(in: directory)
        let cache = try makeCache(directory)
        #expect(cache.maxUnusedAge == nil)
        await cache.trim()
        #expect(Self.present(in: directory) == [0, 1, 2, 3])
    }

    @Test func aHitInAnotherInstanceKeepsAnOldEntry() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try await Self.entriesLastUsed(in: directory)
        let reader = try makeCache(directory)  // another process, without a limit
        await reader.waitForMaintenance()
        // Its hit is written to the shared index (within its accessPersistInterval; at once by
        // waitForMaintenance).
        #expect(await reader.cachedData(for: Self.url(0)) != nil)
        await reader.waitForMaintenance()
        let limited = try makeCache(directory, maxUnusedAge: 30 * Self.day)
        await limited.waitForMaintenance()
        #expect(Self.present(in: directory) == [0, 2, 3])
    }

    @Test func aStoreStartsAnAgePassOnceATenthOfTheLimitHasPassed() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // A limit of a microsecond: by the time a pass runs, every entry is that old. Far under
        // the cap, only the age limit can start a pass after the store (a long-running process).
        let cache = try makeCache(directory, maxUnusedAge: 1e-6)
        await cache.waitForMaintenance()
        await cache.storeData(Data(count: 1000), info: CacheEntryInfo(), for: Self.url(0))
        await cache.waitForMaintenance()
        #expect(Self.present(in: directory) == [])
        #expect(await cache.entryCount == 0)
    }

    @Test func theAgeLimitAndTheSizeCapBothApply() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try await Self.entriesLastUsed(in: directory)
        let size = try #require(FileIdentity(directory.entryPath(Self.url(3)))).allocated
        // Room for one entry: the two aged ones go for their age, then 2, the older of the rest.
        let cache = try makeCache(directory, sizeLimit: size + size / 2, trimRatio: 1, maxUnusedAge: 30 * Self.day)
        await cache.waitForMaintenance()
        #expect(Self.present(in: directory) == [3])
    }
}
