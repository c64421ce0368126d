@testable import CacheRedis
import Foundation
import PipelineCore
import Testing

@Suite("Entries a warm holds")
struct WarmedEntriesTests {
    @Test func theBudgetDropsTheOldestAndAReadTakesTheEntry() {
        let urls = (0..<4).map { URL(string: "http://127.0.0.1:1/\($0)")! }  // 20 bytes each
        let entry = CachedData(data: Data(count: 80), info: CacheEntryInfo())  // 100 bytes with its URL
        let held = WarmedEntries(budget: 250)
        #expect(held.stage(entry, for: urls[0]) && held.stage(entry, for: urls[1]))
        #expect(held.stage(entry, for: urls[2]))  // over 250: the oldest goes
        #expect(!held.contains(urls[0]) && held.contains(urls[1]) && held.contains(urls[2]))
        #expect(held.take(urls[1])?.data.count == 80)
        #expect(held.take(urls[1]) == nil, "taken once")
        // Alone over the budget: never held, nothing dropped for it.
        #expect(!held.stage(CachedData(data: Data(count: 300), info: CacheEntryInfo()), for: urls[3]))
        #expect(held.contains(urls[2]))
        held.removeAll()
        #expect(!held.contains(urls[2]))
    }
}
