import CSQLite
import Foundation
import PipelineCore
import PipelineTestSupport

/// The cache's `index.sqlite` opened by a test through a connection of its own, as another
/// process would: to read the rows as they are on disk and to plant hostile ones.
final class IndexDatabase {
    /// An entry's row as stored (the columns of `DiskIndex`'s `entries` table).
    struct Row {
        var key: Int64
        var name: [UInt8]
        var generation: Int64
        var size: Int64
        var lastUse: Int64

        /// The entry file name the row names: its name in hex.
        var fileName: String { SHA256.hex(name) }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let db: OpaquePointer

    /// Opens `directory`'s index (it must exist: never creates one).
    init(_ directory: TemporaryDirectory) throws {
        var handle: OpaquePointer?
        let path = directory.url.appendingPathComponent("index.sqlite").path
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close_v2(handle)
            throw Failure(description: "\(path): \(message)")
        }
        db = handle
        sqlite3_busy_timeout(db, 5000)
    }

    deinit { sqlite3_close_v2(db) }

    /// Runs `sql` (one or more statements), calling `row` with each result row's statement.
    func execute(_ sql: String, row: ((OpaquePointer) -> Void)? = nil) throws {
        var statement: OpaquePointer?
        var rest: UnsafePointer<CChar>?
        try sql.withCString { start in
            var next: UnsafePointer<CChar>? = start
            while let current = next, current.pointee != 0 {
                guard sqlite3_prepare_v2(db, current, -1, &statement, &rest) == SQLITE_OK else { throw failure() }
                defer { sqlite3_finalize(statement) }
                next = rest
                guard let statement else { continue }  // only whitespace or a comment left
                while true {
                    let code = sqlite3_step(statement)
                    if code == SQLITE_DONE { break }
                    guard code == SQLITE_ROW else { throw failure() }
                    row?(statement)
                }
            }
        }
    }

    /// Every row of the `entries` table.
    func rows() throws -> [Row] {
        var rows: [Row] = []
        try execute("SELECT key, name, generation, size, last_use FROM entries") { statement in
            let count = Int(sqlite3_column_bytes(statement, 1))
            let name = sqlite3_column_blob(statement, 1).map { Array(UnsafeRawBufferPointer(start: $0, count: count)) } ?? []
            rows.append(Row(key: sqlite3_column_int64(statement, 0), name: name, generation: sqlite3_column_int64(statement, 2),
                            size: sqlite3_column_int64(statement, 3), lastUse: sqlite3_column_int64(statement, 4)))
        }
        return rows
    }

    private func failure() -> Failure { Failure(description: String(cString: sqlite3_errmsg(db))) }
}

/// The generation in the header of the entry file at `path` (format 3: a UInt64 at byte 12), or
/// `nil` when there is no such file or it is too short.
func entryGeneration(at path: String) -> Int64? {
    guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
    defer { try? handle.close() }
    guard let bytes = try? handle.read(upToCount: 20), bytes.count == 20 else { return nil }
    return bytes.dropFirst(12).reversed().reduce(Int64(0)) { $0 << 8 | Int64($1) }
}
