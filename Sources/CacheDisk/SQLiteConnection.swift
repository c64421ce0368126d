import CSQLite

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One SQLite connection, used by one thread at a time (its owner holds a lock around every
/// call), with its prepared statements cached by SQL text and finalised when it closes.
///
/// Opened in multi-thread mode (`SQLITE_OPEN_NOMUTEX`: the owner's lock is the only one needed),
/// with extended result codes and a busy timeout, so a write waits for another process's
/// transaction instead of failing at once. `@unchecked Sendable` because it only ever moves
/// into the `Mutex` that guards it (``DiskIndex``), which every use goes through.
final class SQLiteConnection: @unchecked Sendable {
    /// A failed call: SQLite's (extended) result code and its message.
    struct Failure: Error, CustomStringConvertible {
        let code: Int32
        let message: String

        /// Whether the database file is damaged, not a database at all, or not the index (a
        /// table missing: every statement the index runs is fixed, so `SQLITE_ERROR` means the
        /// schema is not its own): the index is then rebuilt from the entry files.
        var isCorrupt: Bool {
            code & 0xFF == SQLITE_CORRUPT || code & 0xFF == SQLITE_NOTADB || code & 0xFF == SQLITE_ERROR
        }

        var description: String { "SQLite error \(code): \(message)" }
    }

    /// A value bound to a statement's parameter.
    enum Value {
        case integer(Int64)
        case blob([UInt8])
        case text(String)
    }

    /// The current row of a running statement.
    struct Row {
        fileprivate let statement: OpaquePointer

        func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }

        func blob(_ column: Int32) -> [UInt8] {
            let count = Int(sqlite3_column_bytes(statement, column))
            guard count > 0, let bytes = sqlite3_column_blob(statement, column) else { return [] }
            return Array(UnsafeRawBufferPointer(start: bytes, count: count))
        }
    }

    /// `SQLITE_TRANSIENT`: SQLite copies a bound value before the bind call returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    private let db: OpaquePointer
    private var statements: [String: OpaquePointer] = [:]

    /// Opens (creating if missing) the database at `path`.
    init(path: String, busyTimeoutMilliseconds: Int32) throws(Failure) {
        var handle: OpaquePointer?
        // NOFOLLOW: a symlink planted at the path is refused, never followed out of the cache.
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW
        let code = sqlite3_open_v2(path, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close_v2(handle)
            throw Failure(code: code, message: message)
        }
        db = handle
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(db)
    }

    /// Runs one or more statements that return nothing of interest (schema, pragmas, `BEGIN`).
    func execute(_ sql: String) throws(Failure) {
        let code = sqlite3_exec(db, sql, nil, nil, nil)
        guard code == SQLITE_OK else { throw failure(code) }
    }

    /// Runs `sql` with `arguments` bound to its parameters in order, calling `row` for each row
    /// until it returns `false`. The statement is prepared once per connection and reset after.
    func query(_ sql: String, _ arguments: [Value] = [], row: (Row) throws(Failure) -> Bool) throws(Failure) {
        let statement = try prepared(sql)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (index, argument) in arguments.enumerated() {
            let position = Int32(index + 1)
            let code: Int32
            switch argument {
            case .integer(let value): code = sqlite3_bind_int64(statement, position, value)
            case .blob(let bytes):
                code = bytes.withUnsafeBytes {
                    // An empty blob still needs a non-null pointer (a null one binds NULL).
                    sqlite3_bind_blob(statement, position, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count),
                                      Self.transient)
                }
            case .text(let string): code = sqlite3_bind_text(statement, position, string, -1, Self.transient)
            }
            guard code == SQLITE_OK else { throw failure(code) }
        }
        while true {
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else { throw failure(code) }
            guard try row(Row(statement: statement)) else { return }
        }
    }

    /// Runs `sql` with `arguments`, ignoring any rows; returns the number of rows it changed.
    @discardableResult
    func run(_ sql: String, _ arguments: [Value] = []) throws(Failure) -> Int {
        try query(sql, arguments) { _ throws(Failure) in true }
        return Int(sqlite3_changes(db))
    }

    /// The first column of the first row as an integer, or `nil` without a row.
    func integer(_ sql: String, _ arguments: [Value] = []) throws(Failure) -> Int64? {
        var value: Int64?
        try query(sql, arguments) { row throws(Failure) in
            value = row.integer(0)
            return false
        }
        return value
    }

    /// Runs `body` in a write transaction (`BEGIN IMMEDIATE`: the write lock is taken first, so
    /// a busy database waits at the start, never half-way), committing when it returns and
    /// rolling back when it throws.
    func transaction<T>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    private func prepared(_ sql: String) throws(Failure) -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard code == SQLITE_OK, let statement else {
            sqlite3_finalize(statement)
            throw failure(code)
        }
        statements[sql] = statement
        return statement
    }

    private func failure(_ code: Int32) -> Failure {
        Failure(code: code, message: String(cString: sqlite3_errmsg(db)))
    }
}
