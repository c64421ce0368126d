import Dispatch
import PipelineCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The disk cache's index: one row per entry in `<directory>/index.sqlite`, a SQLite database in
/// WAL mode shared by every instance and process on the directory. A row holds what a lookup,
/// the caps and eviction need, so none of them reads the folder: the entry's name, the random
/// generation written in its file's header, the disk space the file takes, its last use and its
/// ``CacheEntryInfo`` (validators, freshness, rendition record, placeholder: after a 304 only the
/// row changes). A `totals` row kept by triggers holds the sum of sizes and the count, so
/// opening and the cap checks cost the same at ten entries and at a million.
///
/// Rows are keyed by the first 8 bytes of the name (an `INTEGER PRIMARY KEY`, SQLite's fastest
/// lookup); the row keeps the whole 32-byte name, and a lookup whose name differs (two names
/// sharing 8 bytes) is a miss, never another entry.
///
/// Two connections: lookups use one and never wait for a write (WAL readers do not block);
/// stores, last-use batches, eviction and the rebuild use the other, whose busy timeout waits
/// for another process's transaction. Each is used under its own lock by one thread at a time.
///
/// A database SQLite reports as corrupt (or not a database, or of another schema) is deleted
/// and made anew with a rebuild pending: the maintenance pass then reads the entry files'
/// headers back into it, while lookups without a row go to the file.
final class DiskIndex: Sendable {
    /// An entry's row.
    struct Row: Equatable {
        /// The first 8 bytes of ``name``: the row's key.
        var key: Int64
        /// The entry's file name as 32 bytes (the SHA-256 of its URL).
        var name: [UInt8]
        /// The generation in the file's header: the row describes that file and no other.
        var generation: UInt64
        /// The disk space the file takes (``DiskFiles/allocatedSize(_:)``).
        var size: Int
        /// Microseconds since 1970.
        var lastUse: Int64
        /// `CacheEntryInfo.encoded()`.
        var info: [UInt8]
    }

    /// The schema version in `PRAGMA user_version`; a database with another is made anew.
    static let schemaVersion: Int64 = 1
    static let fileName = "index.sqlite"

    static let schema = """
        CREATE TABLE entries(
            key INTEGER PRIMARY KEY,
            name BLOB NOT NULL,
            generation INTEGER NOT NULL,
            size INTEGER NOT NULL,
            last_use INTEGER NOT NULL,
            info BLOB NOT NULL);
        CREATE INDEX entries_by_use ON entries(last_use);
        CREATE TABLE totals(id INTEGER PRIMARY KEY CHECK (id = 0), size INTEGER NOT NULL, count INTEGER NOT NULL);
        INSERT INTO totals VALUES (0, 0, 0);
        CREATE TRIGGER entries_added AFTER INSERT ON entries
            BEGIN UPDATE totals SET size = size + new.size, count = count + 1; END;
        CREATE TRIGGER entries_removed AFTER DELETE ON entries
            BEGIN UPDATE totals SET size = size - old.size, count = count - 1; END;
        CREATE TRIGGER entries_resized AFTER UPDATE OF size ON entries
            BEGIN UPDATE totals SET size = size - old.size + new.size; END;
        CREATE TABLE meta(name TEXT PRIMARY KEY, value INTEGER NOT NULL);
        INSERT INTO meta VALUES ('rebuild', 1), ('sweep', 0);
        PRAGMA user_version = 1;
        """

    /// What this instance keeps in memory besides the connections.
    private struct State {
        /// Hits not yet written: key → last use. Bounded by ``DiskIndex/maxPendingUses``.
        var pendingUses: [Int64: Int64] = [:]
        /// Whether a rebuild from the files is pending (lookups without a row then read the file).
        var rebuilding = false
        /// The database file's device and inode when this instance opened it: another
        /// instance's recovery replaces the file, and this one then reopens.
        var identity: (dev: UInt64, ino: UInt64)?
        var clock: Int64 = 0
        /// Whether a delayed write of the waiting hits is scheduled.
        var flushScheduled = false
        /// Whether an immediate write of them is on its way.
        var flushRequested = false
        /// How many times a corrupt database was replaced by this instance.
        var recoveries = 0
    }

    /// At most this many hits wait in memory before they are written in one transaction.
    static let maxPendingUses = 1024

    /// Rows waiting for a grouped commit (``store(_:)``), and the totals after the commit for
    /// each store whose row another store committed.
    private struct CommitQueue {
        var nextTicket = 0
        var rows: [(ticket: Int, row: Row)] = []
        var results: [Int: (size: Int, count: Int)] = [:]
    }

    let directory: String
    let databasePath: String
    private let queue = Mutex(CommitQueue())
    private let reader = Mutex<Reader?>(nil)
    /// Commits of this instance's write connection: a read snapshot older than the last one is
    /// replaced, so this instance always reads its own writes.
    private let commits = Atomic<Int>(0)

    /// The read connection and its snapshot. Beginning a read transaction in WAL mode costs two
    /// `fcntl` locks on the shared-memory file (a third of a page-cache hit), so lookups share
    /// one for at most ``snapshotLifetime``: another process's commits are seen that much
    /// later (a lookup may miss an entry stored a few milliseconds ago), this instance's at
    /// once. A snapshot left idle is ended by a task soon after, so it never pins the WAL.
    private final class Reader: @unchecked Sendable {
        let connection: SQLiteConnection
        /// When the open snapshot began (uptime nanoseconds), `nil` without one.
        var snapshotSince: UInt64?
        var commitsSeen = 0

        init(_ connection: SQLiteConnection) { self.connection = connection }
    }

    /// How long lookups share one read snapshot.
    static let snapshotLifetime: UInt64 = 10_000_000

    private let writer = Mutex<SQLiteConnection?>(nil)
    private let state = Mutex(State())

    /// Opens the index of the cache in `directory` (creating it, with a rebuild pending, when
    /// missing). When it cannot be opened at all (a read-only folder without one, say), the
    /// cache runs without an index: every lookup reads the file, as during a rebuild.
    init(directory: String) {
        self.directory = directory
        databasePath = directory + "/" + Self.fileName
        open()
    }

    // MARK: Opening and recovery

    private func open() {
        removeOddNodes()
        do throws(SQLiteConnection.Failure) {
            try connect()
        } catch {
            // Corrupt, not a database, or of another schema: made anew, with a rebuild pending.
            if error.isCorrupt || error.code == -1 {
                removeDatabaseFiles()
                if (try? connect()) != nil { return }
            }
            state.withLock { $0.rebuilding = true }  // no index: every lookup reads the file
        }
    }

    /// Opens both connections on the database (making its schema if it is new) and installs them.
    private func connect() throws(SQLiteConnection.Failure) {
        let (writing, rebuilding) = try openWriter()
        let reading = try openReader()
        let identity = Self.identity(of: databasePath)
        writer.withLock { $0 = writing }
        reader.withLock { $0 = Reader(reading) }
        state.withLock {
            $0.rebuilding = rebuilding
            $0.identity = identity
        }
    }

    /// SQLite's page cache per connection, in KiB: bounded, so the index's resident memory does
    /// not grow with the entries (lookups past it are served by the kernel's page cache).
    static let pageCacheKiB = 1024

    /// The read connection.
    private func openReader() throws(SQLiteConnection.Failure) -> SQLiteConnection {
        let connection = try SQLiteConnection(path: databasePath, busyTimeoutMilliseconds: 5000)
        try connection.execute("PRAGMA cache_size = -\(Self.pageCacheKiB)")
        return connection
    }

    /// The write connection, with the schema made if the database is new. Throws a failure of
    /// code -1 for a database of another schema version.
    private func openWriter() throws(SQLiteConnection.Failure) -> (SQLiteConnection, rebuilding: Bool) {
        let connection = try SQLiteConnection(path: databasePath, busyTimeoutMilliseconds: 5000)
        // WAL: readers never wait for the writer, and a commit is one append. NORMAL: a commit
        // is not synced (a power cut may lose the last ones: their files become orphans and are
        // swept), and the database is never corrupted by a crash.
        // journal_size_limit: a WAL that grew (a long rebuild, a burst of writes) is cut back to
        // 4 MiB once checkpointed.
        try connection.execute("""
            PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -\(Self.pageCacheKiB);
            PRAGMA journal_size_limit = 4194304
            """)
        let version = try connection.transaction { () throws(SQLiteConnection.Failure) -> Int64 in
            let version = try connection.integer("PRAGMA user_version") ?? 0
            if version == 0 { try connection.execute(Self.schema) }
            return version == 0 ? Self.schemaVersion : version
        }
        guard version == Self.schemaVersion else {
            throw SQLiteConnection.Failure(code: -1, message: "index of schema version \(version)")
        }
        let rebuilding = try connection.integer("SELECT value FROM meta WHERE name = 'rebuild'") ?? 1
        return (connection, rebuilding != 0)
    }

    /// Removes anything but a regular file at the database's paths (a symlink, FIFO, directory…:
    /// damage, or planted), so that SQLite makes a real file there.
    private func removeOddNodes() {
        for suffix in ["", "-wal", "-shm"] {
            if let status = DiskFiles.status(of: Self.fileName + suffix, in: directory), status.st_mode & S_IFMT != S_IFREG {
                DiskFiles.remove(databasePath + suffix, ifStill: status)
            }
        }
    }

    private func removeDatabaseFiles() {
        for suffix in ["", "-wal", "-shm", "-journal"] { unlink(databasePath + suffix) }
    }

    private static func identity(of path: String) -> (dev: UInt64, ino: UInt64)? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return (UInt64(status.st_dev), UInt64(status.st_ino))
    }

    /// Closes the connections and opens the database again: after it was found corrupt (then,
    /// unless another instance already replaced it, its files are deleted first) or replaced
    /// by another instance's recovery.
    private func reopen(deleting: Bool) {
        writer.withLock { writing in
            reader.withLock { reading in
                writing = nil
                reading = nil
            }
            let opened = state.withLock { $0.identity }
            if deleting, let current = Self.identity(of: databasePath), let opened,
               current.dev == opened.dev, current.ino == opened.ino {
                removeDatabaseFiles()
            }
            if deleting { state.withLock { $0.recoveries += 1 } }
        }
        open()
    }

    /// Reopens the database if another instance or process replaced it (its recovery from a
    /// corrupt file), or tries again to open one that could not be opened (a busy or read-only
    /// moment); called by each maintenance pass.
    func followReplacement() {
        guard isOpen else { return open() }
        let opened = state.withLock { $0.identity }
        let current = Self.identity(of: databasePath)
        if let opened, let current, current.dev == opened.dev, current.ino == opened.ino { return }
        reopen(deleting: false)
    }

    /// Runs `body` on the read connection; `nil` when there is none or the call failed (a
    /// corrupt database is then replaced).
    private func reading<T: Sendable>(_ body: (SQLiteConnection) throws(SQLiteConnection.Failure) -> T) -> T? {
        let result = reader.withLock { reader -> Result<T, SQLiteConnection.Failure>? in
            guard let reader else { return nil }
            return read(on: reader, body)
        }
        return handle(result)
    }

    /// Runs `body` in `reader`'s current snapshot (beginning a new one when it is too old or
    /// this instance has committed since); a failure ends the snapshot.
    private func read<T: Sendable>(on reader: Reader, _ body: (SQLiteConnection) throws(SQLiteConnection.Failure) -> T)
        -> Result<T, SQLiteConnection.Failure> {
        let now = DispatchTime.now().uptimeNanoseconds
        let committed = commits.load(ordering: .acquiring)
        do throws(SQLiteConnection.Failure) {
            if let since = reader.snapshotSince, now &- since < Self.snapshotLifetime, reader.commitsSeen == committed {
                return .success(try body(reader.connection))
            }
            if reader.snapshotSince != nil {
                reader.snapshotSince = nil
                try reader.connection.execute("COMMIT")
            }
            try reader.connection.execute("BEGIN")
            reader.snapshotSince = now
            reader.commitsSeen = committed
            scheduleSnapshotEnd()
            return .success(try body(reader.connection))
        } catch {
            if reader.snapshotSince != nil { try? reader.connection.execute("ROLLBACK") }
            reader.snapshotSince = nil
            return .failure(error)
        }
    }

    /// Ends the read snapshot now. A write calls it first: the checkpoint SQLite runs after a
    /// commit can copy the WAL into the database and start it over only up to the oldest
    /// snapshot still open, so a snapshot renewed behind every write would let the WAL grow
    /// (30,000 lookups grew it to 35 MB).
    private func endSnapshot() {
        reader.withLock { reader in
            guard let reader, reader.snapshotSince != nil else { return }
            reader.snapshotSince = nil
            try? reader.connection.execute("COMMIT")
        }
    }

    /// Ends the read snapshot once it is older than ``snapshotLifetime`` (soon after it began),
    /// unless lookups have already replaced it.
    private func scheduleSnapshotEnd() {
        Task.detached { [self] in
            try? await Task.sleep(nanoseconds: 2 * Self.snapshotLifetime)
            reader.withLock { reader in
                guard let reader, let since = reader.snapshotSince,
                      DispatchTime.now().uptimeNanoseconds &- since >= Self.snapshotLifetime else { return }
                reader.snapshotSince = nil
                try? reader.connection.execute("COMMIT")
            }
        }
    }

    /// Runs `body` on the write connection; `nil` when there is none or the call failed.
    private func writing<T>(_ body: (SQLiteConnection) throws(SQLiteConnection.Failure) -> T) -> T? {
        endSnapshot()  // so that this write's checkpoint can take the whole WAL back
        let result = writer.withLock { connection -> Result<T, SQLiteConnection.Failure>? in
            guard let connection else { return nil }
            defer { commits.add(1, ordering: .releasing) }  // whatever it did, later reads see it
            do throws(SQLiteConnection.Failure) { return .success(try body(connection)) } catch { return .failure(error) }
        }
        return handle(result)
    }

    private func handle<T>(_ result: Result<T, SQLiteConnection.Failure>?) -> T? {
        switch result {
        case .success(let value): return value
        case .failure(let failure):
            if failure.isCorrupt { reopen(deleting: true) }
            return nil
        case nil: return nil
        }
    }

    // MARK: Names and time

    /// The row key and 32-byte name of file name `name` (64 hex digits; any other string, which
    /// only a test's name function gives, is hashed to 32 bytes first).
    static func key(of name: String) -> (key: Int64, name: [UInt8]) {
        let parsed = name.utf8.withContiguousStorageIfAvailable { utf8 -> [UInt8]? in
            guard utf8.count == 64 else { return nil }
            var bytes = [UInt8](repeating: 0, count: 32)
            for i in 0..<32 {
                guard let high = hexValue(utf8[2 * i]), let low = hexValue(utf8[2 * i + 1]) else { return nil }
                bytes[i] = high << 4 | low
            }
            return bytes
        } ?? nil
        let bytes = parsed ?? SHA256.hash(Array(name.utf8))
        let key = bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return (Int64(bitPattern: key), bytes)
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case 0x30...0x39: digit - 0x30
        case 0x61...0x66: digit - 0x61 + 10
        default: nil
        }
    }

    /// A strictly increasing "now" in microseconds since 1970.
    func tick() -> Int64 {
        state.withLock {
            $0.clock = max(Int64(Date().timeIntervalSince1970 * 1e6), $0.clock + 1)
            return $0.clock
        }
    }

    // MARK: Lookups

    /// Whether a rebuild from the files is pending (or there is no index at all): a lookup
    /// without a row must then read the file.
    var isRebuilding: Bool { state.withLock { $0.rebuilding } }

    /// The `name` and `info` columns as read: a blob of a length no row of ours has (planted) reads
    /// as empty, without its content being loaded (SQLite takes a blob's length from the record
    /// header), so a 64 MiB one costs no 64 MiB allocation.
    private static let nameColumn = "CASE WHEN length(name) = 32 THEN name ELSE X'' END"
    private static let infoColumn = "CASE WHEN length(info) <= \(CacheEntryInfo.maxEncodedLength) THEN info ELSE X'' END"

    /// The row under `key`, or `nil` (also when the index cannot answer).
    func row(_ key: Int64) -> Row? {
        reading { connection throws(SQLiteConnection.Failure) -> Row? in try Self.row(key, on: connection) } ?? nil
    }

    /// ``row(_:)`` on the write connection: for the sweep and the rebuild, whose thousands of
    /// queries then never hold the connection that lookups take.
    func rowForMaintenance(_ key: Int64) -> Row? {
        writing { connection throws(SQLiteConnection.Failure) -> Row? in try Self.row(key, on: connection) } ?? nil
    }

    /// The row under `key` if the read connection is free now: `.some(nil)` for no row, `nil`
    /// when the connection is busy with another thread or the query failed (the caller then
    /// asks ``row(_:)`` on a thread that may wait, which also handles a corrupt database).
    func rowWithoutWaiting(_ key: Int64) -> Row?? {
        reader.withLockIfAvailable { reader -> Row?? in
            guard let reader else { return nil }
            return try? read(on: reader) { connection throws(SQLiteConnection.Failure) in try Self.row(key, on: connection) }.get()
        } ?? nil
    }

    private static func row(_ key: Int64, on connection: SQLiteConnection) throws(SQLiteConnection.Failure) -> Row? {
        var found: Row?
        try connection.query("SELECT \(Self.nameColumn), generation, size, last_use, \(Self.infoColumn) FROM entries WHERE key = ?",
                             [.integer(key)]) { row throws(SQLiteConnection.Failure) in
            found = Row(key: key, name: row.blob(0), generation: UInt64(bitPattern: row.integer(1)),
                        size: Int(row.integer(2)), lastUse: row.integer(3), info: row.blob(4))
            return false
        }
        return found
    }

    /// The total disk space and count of the entries, from the `totals` row.
    func totals() -> (size: Int, count: Int)? {
        reading { connection throws(SQLiteConnection.Failure) in try Self.totals(on: connection) }
    }

    /// The `totals` row (clamped: a planted row's size must not overflow the cap arithmetic).
    private static func totals(on connection: SQLiteConnection) throws(SQLiteConnection.Failure) -> (size: Int, count: Int) {
        var totals = (size: 0, count: 0)
        try connection.query("SELECT size, count FROM totals") { row throws(SQLiteConnection.Failure) in
            totals = (clamped(row.integer(0)), clamped(row.integer(1)))
            return false
        }
        return totals
    }

    /// When the caller should write the waiting hits.
    enum UseWrite: Equatable {
        /// Now: the batch is full (or the interval is 0).
        case now
        /// After this many seconds: the first hit of a new batch.
        case later(TimeInterval)
        /// Nothing to do: a write is already scheduled.
        case scheduled
    }

    /// Records a hit on `key` at `time`, to be written within `interval` seconds.
    func recordUse(_ key: Int64, at time: Int64, flushAfter interval: TimeInterval) -> UseWrite {
        state.withLock {
            $0.pendingUses[key] = time
            if $0.flushRequested { return .scheduled }  // a write on its way takes this hit too
            if $0.pendingUses.count >= Self.maxPendingUses || interval <= 0 {
                $0.flushRequested = true
                return .now
            }
            if $0.flushScheduled { return .scheduled }
            $0.flushScheduled = true
            return .later(interval)
        }
    }

    /// Whether hits wait to be written.
    var hasPendingUses: Bool { state.withLock { !$0.pendingUses.isEmpty } }

    /// Writes the waiting hits in one transaction (a later use in the row is kept).
    func flushUses() {
        let uses = state.withLock { state -> [Int64: Int64] in
            defer {
                state.pendingUses = [:]
                state.flushScheduled = false
                state.flushRequested = false
            }
            return state.pendingUses
        }
        guard !uses.isEmpty else { return }
        _ = writing { connection throws(SQLiteConnection.Failure) in
            try connection.transaction { () throws(SQLiteConnection.Failure) in
                for (key, time) in uses {
                    try connection.run("UPDATE entries SET last_use = ?2 WHERE key = ?1 AND last_use < ?2",
                                       [.integer(key), .integer(time)])
                }
            }
        }
    }

    // MARK: Changes

    /// Sets the last use of the row under `key` (``DiskCache/setLastUse(_:for:)``).
    func setLastUse(_ key: Int64, _ time: Int64) {
        _ = writing { connection throws(SQLiteConnection.Failure) in
            try connection.run("UPDATE entries SET last_use = ? WHERE key = ?", [.integer(time), .integer(key)])
        }
    }

    /// Inserts or replaces `row`; returns the totals after, or `nil` when it was not recorded.
    ///
    /// Commits are grouped: rows wait in a queue, and whichever store holds the write connection
    /// next commits every waiting row in one transaction (a store that finds its row committed
    /// by another returns that commit's totals). One store alone pays one commit; 64 at once pay
    /// a few, instead of queueing 64 commits (and their checkpoints) behind one lock.
    func store(_ row: Row) -> (size: Int, count: Int)? {
        let ticket = queue.withLock { queue -> Int in
            queue.nextTicket += 1
            queue.rows.append((queue.nextTicket, row))
            return queue.nextTicket
        }
        // A second attempt only when the first found the database corrupt and made it anew:
        // the row then goes into the new one instead of being lost.
        for _ in 0..<2 {
            let recoveries = state.withLock { $0.recoveries }
            if let totals = writing({ connection throws(SQLiteConnection.Failure) in try commitQueued(on: connection, for: ticket) }) {
                return totals
            }
            if state.withLock({ $0.recoveries }) == recoveries { break }
        }
        return queue.withLock { queue in
            if let totals = queue.results.removeValue(forKey: ticket) { return totals }  // another holder committed it
            queue.rows.removeAll { $0.ticket == ticket }
            return nil
        }
    }

    /// Commits every queued row in one transaction (unless another holder already committed
    /// `ticket`'s); the totals after. On a failure the rows go back to the queue for the next
    /// holder, and the error is thrown.
    private func commitQueued(on connection: SQLiteConnection, for ticket: Int) throws(SQLiteConnection.Failure)
        -> (size: Int, count: Int) {
        let batch = queue.withLock { queue -> [(ticket: Int, row: Row)]? in
            if queue.results[ticket] != nil { return nil }
            defer { queue.rows = [] }
            return queue.rows
        }
        guard let batch else { return queue.withLock { $0.results.removeValue(forKey: ticket) } ?? (0, 0) }
        do throws(SQLiteConnection.Failure) {
            let totals = try connection.transaction { () throws(SQLiteConnection.Failure) -> (size: Int, count: Int) in
                for (_, row) in batch {
                    try connection.run("""
                        INSERT INTO entries(key, name, generation, size, last_use, info) VALUES (?, ?, ?, ?, ?, ?)
                        ON CONFLICT(key) DO UPDATE SET name = excluded.name, generation = excluded.generation,
                            size = excluded.size, last_use = excluded.last_use, info = excluded.info
                        """, Self.arguments(row))
                }
                return try Self.totals(on: connection)
            }
            queue.withLock { queue in for (other, _) in batch where other != ticket { queue.results[other] = totals } }
            return totals
        } catch {
            queue.withLock { $0.rows.insert(contentsOf: batch, at: 0) }
            throw error
        }
    }

    /// Inserts each of `rows` whose key has none, in one transaction (a rebuild: what a store
    /// wrote since wins).
    func insertIfAbsent(_ rows: [Row]) {
        guard !rows.isEmpty else { return }
        _ = writing { connection throws(SQLiteConnection.Failure) in
            try connection.transaction { () throws(SQLiteConnection.Failure) in
                for row in rows {
                    try connection.run("""
                        INSERT INTO entries(key, name, generation, size, last_use, info) VALUES (?, ?, ?, ?, ?, ?)
                        ON CONFLICT(key) DO NOTHING
                        """, Self.arguments(row))
                }
            }
        }
    }

    private static func arguments(_ row: Row) -> [SQLiteConnection.Value] {
        [.integer(row.key), .blob(row.name), .integer(Int64(bitPattern: row.generation)), .integer(Int64(row.size)),
         .integer(row.lastUse), .blob(row.info)]
    }

    /// Replaces the info of the row for `name` at `generation`, after `accept` approves the stored
    /// one (read in the same transaction); returns whether it was replaced.
    func updateInfo(_ key: Int64, name: [UInt8], generation: UInt64, to info: [UInt8],
                    if accept: ([UInt8]) -> Bool) -> Bool {
        writing { connection throws(SQLiteConnection.Failure) -> Bool in
            try connection.transaction { () throws(SQLiteConnection.Failure) -> Bool in
                var stored: [UInt8]?
                try connection.query("SELECT \(Self.infoColumn) FROM entries WHERE key = ? AND name = ? AND generation = ?",
                                     [.integer(key), .blob(name), .integer(Int64(bitPattern: generation))]) { row throws(SQLiteConnection.Failure) in
                    stored = row.blob(0)
                    return false
                }
                guard let stored, accept(stored) else { return false }
                return try connection.run("UPDATE entries SET info = ? WHERE key = ?", [.blob(info), .integer(key)]) > 0
            }
        } ?? false
    }

    /// Deletes the row for `name` (at `generation`, if given); returns whether one went.
    @discardableResult
    func remove(_ key: Int64, name: [UInt8], generation: UInt64? = nil) -> Bool {
        writing { connection throws(SQLiteConnection.Failure) -> Bool in
            if let generation {
                return try connection.run("DELETE FROM entries WHERE key = ? AND name = ? AND generation = ?",
                                          [.integer(key), .blob(name), .integer(Int64(bitPattern: generation))]) > 0
            }
            return try connection.run("DELETE FROM entries WHERE key = ? AND name = ?", [.integer(key), .blob(name)]) > 0
        } ?? false
    }

    /// Deletes every row.
    func removeAll() {
        _ = writing { connection throws(SQLiteConnection.Failure) in
            try connection.transaction { () throws(SQLiteConnection.Failure) in try connection.run("DELETE FROM entries") }
        }
    }

    // MARK: Eviction

    /// Chooses and deletes, in one transaction, the rows to evict, oldest use first: every row
    /// last used before `unusedBefore`, then, while the totals are over `sizeTarget` bytes or
    /// `countTarget` entries, the least recently used. Returns the deleted rows, whose files the
    /// caller removes; a concurrent pass in another process deletes other rows (each row goes
    /// once). At most `batch` rows per call: the caller repeats while it returns a full batch.
    func evict(sizeTarget: Int?, countTarget: Int?, unusedBefore: Int64?, batch: Int) -> [Row] {
        writing { connection throws(SQLiteConnection.Failure) -> [Row] in
            try connection.transaction { () throws(SQLiteConnection.Failure) -> [Row] in
                let (size, count) = try Self.totals(on: connection)
                var excess = sizeTarget.map { size - $0 } ?? 0
                var excessCount = countTarget.map { count - $0 } ?? 0
                let cutoff = unusedBefore ?? Int64.min
                var victims: [Row] = []
                try connection.query("SELECT key, \(Self.nameColumn), generation, size, last_use FROM entries ORDER BY last_use LIMIT ?",
                                     [.integer(Int64(batch))]) { row throws(SQLiteConnection.Failure) in
                    let victim = Row(key: row.integer(0), name: row.blob(1), generation: UInt64(bitPattern: row.integer(2)),
                                     size: Self.clamped(row.integer(3)), lastUse: row.integer(4), info: [])
                    guard excess > 0 || excessCount > 0 || victim.lastUse < cutoff else { return false }
                    victims.append(victim)
                    excess -= victim.size
                    excessCount -= 1
                    return true
                }
                for victim in victims {
                    try connection.run("DELETE FROM entries WHERE key = ?", [.integer(victim.key)])
                }
                return victims
            }
        } ?? []
    }

    /// A size or count read from the database, within 0...2^48: any process can write the file,
    /// and a planted Int64.min or Int64.max must not overflow the eviction's arithmetic.
    private static func clamped(_ value: Int64) -> Int { Int(min(max(value, 0), 1 << 48)) }

    // MARK: Maintenance state

    /// A value of the `meta` table.
    func meta(_ name: String) -> Int64? {
        reading { connection throws(SQLiteConnection.Failure) -> Int64? in
            try connection.integer("SELECT value FROM meta WHERE name = ?", [.text(name)])
        } ?? nil
    }

    func setMeta(_ name: String, _ value: Int64) {
        _ = writing { connection throws(SQLiteConnection.Failure) in
            try connection.run("UPDATE meta SET value = ? WHERE name = ?", [.integer(value), .text(name)])
        }
        if name == "rebuild" { refreshRebuilding() }
    }

    /// Reads whether a rebuild is pending (another process may have finished one).
    func refreshRebuilding() {
        guard let value = reading({ connection throws(SQLiteConnection.Failure) in
            try connection.integer("SELECT value FROM meta WHERE name = 'rebuild'")
        }) ?? nil else { return }
        state.withLock { $0.rebuilding = value != 0 }
    }

    /// Whether the index has connections at all.
    var isOpen: Bool { writer.withLock { $0 != nil } }
}
