import Foundation
import GRDBSQLite

/// The SQLite C API with nothing in between, for benchmark baselines: what a
/// hand-written program would do to insert the same rows. Every call's result
/// code is checked, so a baseline that fails says so instead of timing nothing.
final class RawSQLite {
    private var handle: OpaquePointer?
    let path: String

    init(path: String) throws {
        self.path = path
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &handle, flags, nil)
        guard code == SQLITE_OK else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(handle)
            throw RawSQLiteError(message: "cannot open \(path): \(message)")
        }
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &message)
        defer { sqlite3_free(message) }
        guard code == SQLITE_OK else {
            throw RawSQLiteError(message: "\(sql.prefix(60)): \(message.map { String(cString: $0) } ?? "error \(code)")")
        }
    }

    /// Runs a query and returns every row; for the untimed parts of a benchmark.
    func query(_ sql: String) throws -> [[RawValue]] {
        let statement = try prepare(sql)
        return try statement.rows()
    }

    func prepare(_ sql: String) throws -> RawStatement {
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard code == SQLITE_OK, let statement else {
            throw RawSQLiteError(message: "cannot prepare \(sql.prefix(60)): \(String(cString: sqlite3_errmsg(handle)))")
        }
        return RawStatement(statement: statement, database: handle)
    }
}

/// A prepared statement. Text and blobs are bound with `SQLITE_TRANSIENT`
/// (SQLite copies them), as a program that reuses its buffers would.
final class RawStatement {
    private let statement: OpaquePointer
    private let database: OpaquePointer?
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    init(statement: OpaquePointer, database: OpaquePointer?) {
        self.statement = statement
        self.database = database
    }

    deinit {
        sqlite3_finalize(statement)
    }

    func bind(_ index: Int32, _ value: Int64) {
        sqlite3_bind_int64(statement, index, value)
    }

    func bind(_ index: Int32, _ value: String?) {
        guard let value else {
            sqlite3_bind_null(statement, index)
            return
        }
        sqlite3_bind_text(statement, index, value, -1, RawStatement.transient)
    }

    func bind(_ index: Int32, _ value: [UInt8]) {
        value.withUnsafeBytes { bytes in
            _ = sqlite3_bind_blob(statement, index, bytes.baseAddress, Int32(bytes.count), RawStatement.transient)
        }
    }

    func bind(_ index: Int32, _ value: RawValue) {
        switch value {
        case .null: sqlite3_bind_null(statement, index)
        case .integer(let value): sqlite3_bind_int64(statement, index, value)
        case .real(let value): sqlite3_bind_double(statement, index, value)
        case .text(let value): bind(index, value)
        case .blob(let value): bind(index, value)
        }
    }

    /// Binds `values` to the parameters in order, runs the statement and resets it.
    func run(_ values: [RawValue]) throws {
        for (offset, value) in values.enumerated() { bind(Int32(offset + 1), value) }
        try run()
    }

    func rows() throws -> [[RawValue]] {
        var rows: [[RawValue]] = []
        try forEachRow { rows.append($0) }
        return rows
    }

    /// Steps through the result, handing each row to `body` without keeping it.
    func forEachRow(_ body: ([RawValue]) throws -> Void) throws {
        defer { sqlite3_reset(statement) }
        while true {
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else {
                throw RawSQLiteError(message: "step failed: \(String(cString: sqlite3_errmsg(database)))")
            }
            try body((0..<sqlite3_column_count(statement)).map(column))
        }
    }

    private func column(_ index: Int32) -> RawValue {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(statement, index))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(statement, index))
        case SQLITE_TEXT: return .text(String(cString: sqlite3_column_text(statement, index)))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement, index))
            guard count > 0, let bytes = sqlite3_column_blob(statement, index) else { return .blob([]) }
            return .blob([UInt8](UnsafeRawBufferPointer(start: bytes, count: count)))
        default: return .null
        }
    }

    /// Runs the statement to completion and resets it for the next row.
    func run() throws {
        let code = sqlite3_step(statement)
        sqlite3_reset(statement)
        guard code == SQLITE_DONE else {
            throw RawSQLiteError(message: "step failed: \(String(cString: sqlite3_errmsg(database)))")
        }
    }
}

/// A column value as SQLite stores it.
enum RawValue: Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

struct RawSQLiteError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
