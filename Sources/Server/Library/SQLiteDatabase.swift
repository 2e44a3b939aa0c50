internal import CSQLite
import StreamHTTP

/// An error from SQLite: the result code, SQLite's message and what streamd was doing.
public struct SQLiteError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The primary result code (`SQLITE_CORRUPT` is 11, `SQLITE_NOTADB` 26, `SQLITE_BUSY` 5).
    public var code: Int32
    public var message: String
    /// The call or statement that failed.
    public var context: String

    public var description: String { "sqlite: \(context): \(message) (code \(code))" }

    /// True when the file is damaged or not a database at all: the caller moves it aside.
    public var isCorruption: Bool { code == SQLITE_CORRUPT || code == SQLITE_NOTADB }
}

/// A value bound to or read from a statement.
public enum SQLiteValue: Sendable, Equatable {
    case int(Int64)
    case double(Double)
    case text(String)
    case blob([UInt8])
    case null

    /// `.int`, or `.null` for nil.
    public static func optional(_ value: Int?) -> SQLiteValue { value.map { .int(Int64($0)) } ?? .null }
    /// `.double`, or `.null` for nil.
    public static func optional(_ value: Double?) -> SQLiteValue { value.map { .double($0) } ?? .null }
    /// `.text`, or `.null` for nil.
    public static func optional(_ value: String?) -> SQLiteValue { value.map { .text($0) } ?? .null }
}

/// One SQLite connection (libsqlite3 through the `CSQLite` module, which nothing else imports).
///
/// Not thread-safe by itself: each connection is used by one thread at a time (the library
/// store hands connections out under a lock). Prepared statements are cached per SQL text.
public final class SQLiteDatabase {
    private var handle: OpaquePointer?
    private var statements: [String: Statement] = [:]
    /// The file this connection has open (":memory:" for an in-memory database).
    public let path: String

    /// Opens (or creates) the database at `path`; `readOnly` never creates or writes.
    public init(path: String, readOnly: Bool = false) throws(SQLiteError) {
        self.path = path
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
        let status = sqlite3_open_v2(path, &db, flags, nil)
        guard status == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            throw SQLiteError(code: status & 0xFF, message: message, context: "open \(path)")
        }
        handle = db
        // Another connection writing (the scanner) makes this one wait a little, not fail.
        sqlite3_busy_timeout(db, 5_000)
        sqlite3_extended_result_codes(db, 0)
    }

    deinit { close() }

    /// Finalizes every statement and closes the connection (also done on deinit).
    public func close() {
        statements.removeAll()
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    private func failure(_ status: Int32, _ context: String) -> SQLiteError {
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "connection closed"
        return SQLiteError(code: status & 0xFF, message: message, context: context)
    }

    /// Runs one or more statements that return no rows (schema, pragmas, BEGIN/COMMIT).
    public func execute(_ sql: String) throws(SQLiteError) {
        guard let handle else { throw SQLiteError(code: SQLITE_MISUSE, message: "connection closed", context: sql) }
        var error: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &error)
        if let error { sqlite3_free(error) }
        guard status == SQLITE_OK else { throw failure(status, String(sql.prefix(80))) }
    }

    /// The prepared statement for `sql`, compiled once per connection and reset for reuse.
    public func prepare(_ sql: String) throws(SQLiteError) -> Statement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        guard let handle else { throw SQLiteError(code: SQLITE_MISUSE, message: "connection closed", context: sql) }
        var raw: OpaquePointer?
        let status = sqlite3_prepare_v2(handle, sql, -1, &raw, nil)
        guard status == SQLITE_OK, let raw else { throw failure(status, "prepare \(sql.prefix(80))") }
        let statement = Statement(raw, database: self, sql: sql)
        statements[sql] = statement
        return statement
    }

    /// Runs `sql` with `values` for its side effect.
    public func run(_ sql: String, _ values: [SQLiteValue] = []) throws(SQLiteError) {
        let statement = try prepare(sql)
        try statement.bind(values)
        while try statement.step() {}
    }

    /// Every row of `sql` with `values`, each turned into a value by `row`.
    public func query<T>(_ sql: String, _ values: [SQLiteValue] = [], row: (Statement) -> T) throws(SQLiteError) -> [T] {
        let statement = try prepare(sql)
        try statement.bind(values)
        var result: [T] = []
        while try statement.step() { result.append(row(statement)) }
        statement.reset()
        return result
    }

    /// Hands every row of `sql` with `values` to `body` as it is stepped (no array of rows: what
    /// `body` reads from the statement is valid until it returns).
    public func each(_ sql: String, _ values: [SQLiteValue] = [], _ body: (Statement) -> Void) throws(SQLiteError) {
        let statement = try prepare(sql)
        try statement.bind(values)
        defer { statement.reset() }
        while try statement.step() { body(statement) }
    }

    /// Runs `sql` (one integer parameter) once for each of `keys` in turn, handing every row to
    /// `body`: the statement looked up and bound without building SQL text or a value list per
    /// key, all in one read transaction (one snapshot, and one lock of the database instead of one
    /// per key: fcntl locking was a tenth of a page's CPU).
    public func each(_ sql: String, keys: [Int], _ body: (Statement) -> Void) throws(SQLiteError) {
        let statement = try prepare(sql)
        let ownTransaction = handle.map { sqlite3_get_autocommit($0) != 0 } ?? false
        if ownTransaction { try execute("BEGIN") }
        do {
            for key in keys {
                try statement.bind(key: Int64(key))
                while try statement.step() { body(statement) }
            }
            statement.reset()
        } catch {
            statement.reset()
            if ownTransaction { try? execute("ROLLBACK") }
            throw error
        }
        if ownTransaction { try execute("COMMIT") }
    }

    /// Runs `body` in one read transaction (one snapshot and one lock for all its statements),
    /// or inside the caller's transaction when one is open.
    public func reading<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        let ownTransaction = handle.map { sqlite3_get_autocommit($0) != 0 } ?? false
        if ownTransaction { try execute("BEGIN") }
        do {
            let result = try body()
            if ownTransaction { try execute("COMMIT") }
            return result
        } catch {
            if ownTransaction { try? execute("ROLLBACK") }
            throw error
        }
    }

    /// The first row of `sql`, or nil when there is none.
    public func queryOne<T>(_ sql: String, _ values: [SQLiteValue] = [], row: (Statement) -> T) throws(SQLiteError) -> T? {
        let statement = try prepare(sql)
        try statement.bind(values)
        defer { statement.reset() }
        return try statement.step() ? row(statement) : nil
    }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws.
    public func transaction<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
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

    /// The rowid of the last row inserted on this connection.
    public var lastInsertRowID: Int { handle.map { Int(sqlite3_last_insert_rowid($0)) } ?? 0 }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int { handle.map { Int(sqlite3_changes($0)) } ?? 0 }

    /// The SQLite library version ("3.40.1").
    public static var libraryVersion: String { String(cString: sqlite3_libversion()) }

    /// A compiled statement of one connection: bind, step, read columns by index (0-based).
    public final class Statement {
        private var raw: OpaquePointer?
        private unowned let database: SQLiteDatabase
        let sql: String

        fileprivate init(_ raw: OpaquePointer, database: SQLiteDatabase, sql: String) {
            self.raw = raw
            self.database = database
            self.sql = sql
        }

        deinit { sqlite3_finalize(raw) }

        /// Clears the previous bindings and binds `values` to parameters 1, 2, …
        public func bind(_ values: [SQLiteValue]) throws(SQLiteError) {
            sqlite3_reset(raw)
            sqlite3_clear_bindings(raw)
            for (offset, value) in values.enumerated() {
                let index = Int32(offset + 1)
                let status: Int32
                switch value {
                case .int(let v): status = sqlite3_bind_int64(raw, index, v)
                case .double(let v): status = sqlite3_bind_double(raw, index, v)
                case .null: status = sqlite3_bind_null(raw, index)
                case .text(let v):
                    // NUL-terminated, so the buffer is never empty; the length leaves the terminator out.
                    let utf8 = Array(v.utf8CString)
                    status = utf8.withUnsafeBufferPointer {
                        csqlite_bind_text(raw, index, $0.baseAddress, Int32(clamping: $0.count - 1))
                    }
                case .blob(let v):
                    status = v.withUnsafeBytes { csqlite_bind_blob(raw, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(clamping: $0.count)) }
                }
                guard status == SQLITE_OK else { throw database.failure(status, "bind \(index) of \(sql.prefix(60))") }
            }
        }

        /// Resets the statement and binds `key` to its one parameter.
        public func bind(key: Int64) throws(SQLiteError) {
            sqlite3_reset(raw)
            let status = sqlite3_bind_int64(raw, 1, key)
            guard status == SQLITE_OK else { throw database.failure(status, "bind 1 of \(sql.prefix(60))") }
        }

        /// Steps once: true when a row is ready, false when the statement is done.
        public func step() throws(SQLiteError) -> Bool {
            let status = sqlite3_step(raw)
            switch status {
            case SQLITE_ROW: return true
            case SQLITE_DONE: return false
            default:
                sqlite3_reset(raw)
                throw database.failure(status, String(sql.prefix(80)))
            }
        }

        /// Makes the statement ready to run again (bindings stay).
        public func reset() { sqlite3_reset(raw) }

        /// True when column `index` of the current row is NULL.
        public func isNull(_ index: Int) -> Bool { sqlite3_column_type(raw, Int32(index)) == SQLITE_NULL }

        public func int(_ index: Int) -> Int { Int(sqlite3_column_int64(raw, Int32(index))) }

        public func optionalInt(_ index: Int) -> Int? { isNull(index) ? nil : int(index) }

        public func double(_ index: Int) -> Double { sqlite3_column_double(raw, Int32(index)) }

        public func optionalDouble(_ index: Int) -> Double? { isNull(index) ? nil : double(index) }

        /// Column text as UTF-8 ("" for NULL).
        public func text(_ index: Int) -> String {
            guard let bytes = sqlite3_column_text(raw, Int32(index)) else { return "" }
            let count = Int(sqlite3_column_bytes(raw, Int32(index)))
            return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
        }

        public func optionalText(_ index: Int) -> String? { isNull(index) ? nil : text(index) }

        /// Column text as the UTF-8 bytes SQLite holds (empty for NULL), valid until the next
        /// step or reset: what a writer copies straight into a response without a String.
        public func textBytes(_ index: Int) -> UnsafeBufferPointer<UInt8> {
            guard let bytes = sqlite3_column_text(raw, Int32(index)) else { return UnsafeBufferPointer(start: nil, count: 0) }
            return UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(raw, Int32(index))))
        }

        /// Column bytes as SQLite holds them (empty for NULL), valid until the next step or reset.
        public func blobBytes(_ index: Int) -> UnsafeRawBufferPointer {
            // The pointer first, then the length (SQLite's documented order).
            guard let bytes = sqlite3_column_blob(raw, Int32(index)) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
            return UnsafeRawBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(raw, Int32(index))))
        }

        /// Column bytes ([] for NULL or empty).
        public func blob(_ index: Int) -> [UInt8] {
            let count = Int(sqlite3_column_bytes(raw, Int32(index)))
            guard count > 0, let bytes = sqlite3_column_blob(raw, Int32(index)) else { return [] }
            return Array(UnsafeRawBufferPointer(start: bytes, count: count))
        }
    }
}
