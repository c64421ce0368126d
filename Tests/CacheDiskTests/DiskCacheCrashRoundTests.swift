import CacheDisk
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Hundreds of `SIGKILL`s of churning writers (stores over a small cap, so eviction passes run
/// throughout, hits written to the index one transaction each, info updates): wherever a kill
/// lands (mid-write, between a rename and its row's commit, between an eviction's row deletes
/// and its file removals, inside a last-use or info transaction), a fresh instance answers every
/// key with exact bytes or a miss, and its index agrees with the files.
///
/// What the design promises, and so what is asserted, after a kill:
/// - every row that survives the reads has its file (a read drops a row whose file is gone);
/// - the totals kept by the triggers equal the sum of the rows' sizes (transactions are whole);
/// - a row describing its file (same generation) counts exactly the file's allocated blocks,
///   so `totalSize` is the allocated bytes of the indexed files, except for rows left stale by
///   a kill between a replacement's rename and its commit (the file has the new generation; the
///   row still counts the old file): at most one per writer task (4) per kill, and the next
///   store of that key mends it;
/// - after a trim, the total is under the cap;
/// - files no row names (renamed in for a key whose row never committed, or whose row an
///   eviction deleted before the kill removed the file) are misses and are not counted: the
///   sweep removes them once older than 10 minutes, with stray temporary files. The last step
///   backdates every file by 11 minutes and sweeps the 256 folders to show it.
extension DiskCacheCrashTests {
    /// The churning writers' cap: about nine of `DiskCachePattern`'s 16–400 KiB bodies, so with
    /// 24 keys nearly every store crosses it and starts an eviction pass.
    static let churnSizeLimit = 2 << 20
    static let crashRounds = 200

    @Test func writersKilledAtRandomPointsOfStoresEvictionAndIndexWritesLeaveOnlyExactEntries() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var random = SeededGenerator(seed: 38)
        var kills = 0, hits = 0, stale = 0, mostStale = 0, mostOrphans = 0
        for round in 0..<Self.crashRounds {
            // Each writer is killed after a random number of its lines (stores, reads, updates);
            // every 20th round two run at once, each killed at its own point.
            let points = (0..<(round % 20 == 19 ? 2 : 1)).map { _ in Int.random(in: 1...40, using: &random) }
            let writers = try points.indices.map {
                try launchWriter(directory, count: 0, seed: 2 * round + $0 + 1, reportsStores: true,
                                 sizeLimit: Self.churnSizeLimit)
            }
            await withTaskGroup(of: Void.self) { group in
                for (writer, point) in zip(writers, points) {
                    group.addTask {
                        let reached = (try? await writer.lines(point)) ?? false
                        writer.kill(SIGKILL)
                        #expect(reached && writer.process.terminationReason == .uncaughtSignal
                                    && writer.process.terminationStatus == SIGKILL,
                                "round \(round): the writer ended on its own, status \(writer.process.terminationStatus)")
                    }
                }
            }
            kills += writers.count
            let found = try await audit(directory, round: round)
            #expect(found.stale <= stale + 4 * writers.count, "round \(round): \(found.stale) stale rows")
            stale = found.stale
            hits += found.hits
            mostStale = max(mostStale, found.stale)
            mostOrphans = max(mostOrphans, found.orphans)
        }
        let temporaries = directory.temporaryNames.count
        print("crash rounds: \(kills) kills, \(hits) exact hits, at most \(mostStale) stale rows and \(mostOrphans) orphan files, "
              + "\(temporaries) stray temporary files at the end")
        #expect(hits > Self.crashRounds)

        // Eleven minutes later (every file backdated), a sweep of the 256 folders leaves only
        // files the index names, and no temporary file.
        let past = timespec(tv_sec: time(nil) - 11 * 60, tv_nsec: 0)
        for path in directory.entryFolderFiles {
            var times = [past, past]
            #expect(utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW) == 0)
        }
        let cache = try makeCache(directory, sizeLimit: Self.churnSizeLimit)
        for _ in 0..<256 { await cache.trim() }
        let named = Set(try IndexDatabase(directory).rows().map(\.fileName))
        #expect(directory.temporaryNames.isEmpty)
        #expect(Set(directory.entryNames) == named)
        _ = try await audit(directory, round: Self.crashRounds)
    }

    /// What a fresh instance finds after a round: every key read (a miss or exact bytes), an
    /// eviction pass, then the index (read through a connection of the test's own) checked
    /// against the files.
    private func audit(_ directory: TemporaryDirectory, round: Int) async throws -> (hits: Int, stale: Int, orphans: Int) {
        let cache = try makeCache(directory, sizeLimit: Self.churnSizeLimit)
        var hits = 0
        for key in 0..<Self.keys {
            guard let entry = await cache.cachedData(for: DiskCachePattern.url(key)) else { continue }
            #expect(DiskCachePattern.isExact(entry, key: key), "round \(round), key \(key)")
            hits += 1
        }
        await cache.trim()
        let rows = try IndexDatabase(directory).rows()
        var indexedBytes = 0, stale = 0
        for row in rows {
            let path = directory.entryPath(name: row.fileName)
            let file = FileIdentity(path)
            #expect(file != nil, "round \(round): a row whose file is gone survived its read")
            if entryGeneration(at: path) == row.generation {
                #expect(file?.allocated == Int(row.size), "round \(round): a row counts other than its file's blocks")
            } else {
                stale += 1
            }
            indexedBytes += Int(row.size)
        }
        #expect(await cache.entryCount == rows.count, "round \(round)")
        #expect(await cache.totalSize == indexedBytes, "round \(round)")
        #expect(indexedBytes <= Self.churnSizeLimit, "round \(round): over the cap after a trim")
        let named = Set(rows.map(\.fileName))
        return (hits, stale, directory.entryNames.filter { !named.contains($0) }.count)
    }
}
