import CLibPQ
import Foundation

/// What a call to the database can fail with.
public enum RuleServerError: Error, Equatable, CustomStringConvertible {
    /// The server could not be reached, or the connection was lost in the middle of a call
    /// (the server restarted, a network cut): nothing of the call was kept. The next call
    /// connects again.
    case connection(String)
    /// A statement failed: its SQLSTATE (`57014`: the statement timeout) and message. The
    /// call's transaction was rolled back.
    case query(sqlState: String, message: String)
    /// The database's schema is missing (run `rulec-server migrate`) or newer than this library.
    case schema(String)
    /// A name these rules do not have.
    case unknownScenario(String)

    public var description: String {
        switch self {
        case .connection(let message): return "cannot reach the database: \(message)"
        case .query(let state, let message): return "the database refused a statement (\(state)): \(message)"
        case .schema(let message): return "the database's schema: \(message)"
        case .unknownScenario(let name): return "unknown scenario '\(name)'"
        }
    }
}

/// The rows a statement returned, each column's bytes (nil for SQL NULL).
package struct Rows {
    package var rows: [[[UInt8]?]] = []
    package var isEmpty: Bool { rows.isEmpty }
    package subscript(row: Int, column: Int) -> [UInt8]? { rows[row][column] }
    /// Column `column` of row `row` as text.
    package func text(_ row: Int, _ column: Int) -> String? {
        rows[row][column].map { String(decoding: $0, as: UTF8.self) }
    }
}

/// One libpq connection, used by one thread at a time (the pool hands it out; `rulebench server`
/// measures its baselines on one).
package final class Connection {
    private var handle: OpaquePointer?

    /// Connects with a libpq connection string (`host=/tmp port=5432 dbname=app`, or a
    /// `postgresql://` URL); `PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE` and the rest fill what it
    /// leaves out, as for `psql`. `statementTimeout`: seconds, or 0 for none.
    package init(_ conninfo: String, statementTimeout: Double) throws {
        handle = PQconnectdb(conninfo)
        guard let handle, PQstatus(handle) == CONNECTION_OK else {
            let message = handle.map { String(cString: PQerrorMessage($0)) } ?? "out of memory"
            if let handle { PQfinish(handle) }
            self.handle = nil
            throw RuleServerError.connection(message.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        if statementTimeout > 0 {
            try execute("SET statement_timeout = \(Int(statementTimeout * 1_000))")
        }
    }

    deinit { if let handle { PQfinish(handle) } }

    /// False once the connection is known to be lost: the pool drops it.
    var isUsable: Bool { handle.map { PQstatus($0) == CONNECTION_OK } ?? false }

    /// Runs `sql` with `parameters` (`$1`, `$2`...; each sent as bytes, `nil` for NULL, in the
    /// binary format when `binary` lists its position, else as text) and returns its rows (in
    /// the binary format when `binaryResult`).
    @discardableResult
    package func execute(
        _ sql: String, _ parameters: [[UInt8]?] = [], binary: Set<Int> = [], binaryResult: Bool = false
    ) throws -> Rows {
        guard let handle else { throw RuleServerError.connection("the connection is closed") }
        // The C API takes arrays of pointers to the parameters' bytes: copied into memory that
        // lives until the call returns (the checked form cannot hand libpq a pointer).
        let count = parameters.count
        let values = UnsafeMutablePointer<UnsafePointer<CChar>?>.allocate(capacity: max(count, 1))
        let lengths = UnsafeMutablePointer<Int32>.allocate(capacity: max(count, 1))
        let formats = UnsafeMutablePointer<Int32>.allocate(capacity: max(count, 1))
        var owned: [UnsafeMutablePointer<CChar>] = []
        defer {
            for pointer in owned { pointer.deallocate() }
            values.deallocate()
            lengths.deallocate()
            formats.deallocate()
        }
        for (index, parameter) in parameters.enumerated() {
            formats[index] = binary.contains(index) ? 1 : 0
            guard let bytes = parameter else {
                values[index] = nil
                lengths[index] = 0
                continue
            }
            // Text parameters end with a NUL; binary ones are read by their length.
            let copy = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            bytes.withUnsafeBufferPointer { source in
                for k in 0..<bytes.count { copy[k] = CChar(bitPattern: source[k]) }
            }
            copy[bytes.count] = 0
            owned.append(copy)
            values[index] = UnsafePointer(copy)
            lengths[index] = Int32(bytes.count)
        }
        guard
            let result = PQexecParams(
                handle, sql, Int32(count), nil, count == 0 ? nil : values, count == 0 ? nil : lengths,
                count == 0 ? nil : formats, binaryResult ? 1 : 0)
        else {
            throw RuleServerError.connection(String(cString: PQerrorMessage(handle)))
        }
        defer { PQclear(result) }
        return try rows(of: result)
    }

    /// A result's rows, or its error thrown.
    private func rows(of result: OpaquePointer) throws -> Rows {
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let message = String(cString: PQresultErrorMessage(result)).trimmingCharacters(in: .whitespacesAndNewlines)
            if let handle, PQstatus(handle) != CONNECTION_OK {
                throw RuleServerError.connection(message.isEmpty ? "the connection was lost" : message)
            }
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
            throw RuleServerError.query(sqlState: state, message: message)
        }
        var rows = Rows()
        let (rowCount, columnCount) = (PQntuples(result), PQnfields(result))
        rows.rows.reserveCapacity(Int(rowCount))
        for row in 0..<rowCount {
            var columns: [[UInt8]?] = []
            columns.reserveCapacity(Int(columnCount))
            for column in 0..<columnCount {
                if PQgetisnull(result, row, column) == 1 {
                    columns.append(nil)
                    continue
                }
                let length = Int(PQgetlength(result, row, column))
                let start = PQgetvalue(result, row, column)!
                columns.append(
                    start.withMemoryRebound(to: UInt8.self, capacity: length) {
                        Array(UnsafeBufferPointer(start: $0, count: length))
                    })
            }
            rows.rows.append(columns)
        }
        return rows
    }

    /// Sends `sql` (no parameters; binary results) without waiting for its answer: the server
    /// works on it while the caller works on the last one. ``receive()`` takes the answer.
    package func send(_ sql: String) throws {
        guard let handle else { throw RuleServerError.connection("the connection is closed") }
        guard PQsendQueryParams(handle, sql, 0, nil, nil, nil, nil, 1) == 1 else {
            throw RuleServerError.connection(
                String(cString: PQerrorMessage(handle)).trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    /// The answer of the statement ``send(_:)`` sent.
    package func receive() throws -> Rows {
        guard let handle else { throw RuleServerError.connection("the connection is closed") }
        var answer: Result<Rows, Error>?
        while let result = PQgetResult(handle) {
            if answer == nil { answer = Result { try rows(of: result) } }
            PQclear(result)
        }
        guard let answer else {
            throw RuleServerError.connection(
                String(cString: PQerrorMessage(handle)).trimmingCharacters(in: .whitespacesAndNewlines))
        }
        return try answer.get()
    }
}

extension Connection {
    /// Runs `COPY ... FROM STDIN` (`sql`) with `data`, the rows in the statement's format,
    /// sent in pieces of 1 MiB; returns when the server has stored them.
    package func copy(_ sql: String, _ data: [UInt8]) throws {
        guard let handle else { throw RuleServerError.connection("the connection is closed") }
        func failure(_ result: OpaquePointer?) -> RuleServerError {
            let message = String(cString: result.map { PQresultErrorMessage($0) } ?? PQerrorMessage(handle))
                .trimmingCharacters(in: .whitespacesAndNewlines)
            if PQstatus(handle) != CONNECTION_OK { return .connection(message) }
            let state = result.flatMap { PQresultErrorField($0, Int32(UInt8(ascii: "C"))) }.map { String(cString: $0) }
            return .query(sqlState: state ?? "", message: message)
        }
        let started = PQexec(handle, sql)
        defer { PQclear(started) }
        guard PQresultStatus(started) == PGRES_COPY_IN else { throw failure(started) }
        var offset = 0
        var sent = true
        while offset < data.count && sent {
            let end = min(data.count, offset + (1 << 20))
            sent = data[offset..<end].withUnsafeBufferPointer { piece in
                piece.baseAddress!.withMemoryRebound(to: CChar.self, capacity: piece.count) {
                    PQputCopyData(handle, $0, Int32(piece.count)) == 1
                }
            }
            offset = end
        }
        guard sent, PQputCopyEnd(handle, nil) == 1 else { throw failure(nil) }
        var error: RuleServerError?
        while let result = PQgetResult(handle) {
            if PQresultStatus(result) != PGRES_COMMAND_OK, error == nil { error = failure(result) }
            PQclear(result)
        }
        if let error { throw error }
    }
}

/// Connections shared by threads: at most `limit` open, handed out one caller at a time; a
/// lost one is dropped, and the next call opens a new one.
///
/// `@unchecked Sendable`: `condition` (its lock) guards `idle` and `open`; a connection is used
/// by the one thread that took it, until it gives it back.
final class ConnectionPool: @unchecked Sendable {
    private let conninfo: String
    private let limit: Int
    private let statementTimeout: Double
    private let condition = NSCondition()
    private var idle: [Connection] = []
    private var open = 0

    init(_ conninfo: String, limit: Int, statementTimeout: Double) {
        self.conninfo = conninfo
        self.limit = max(1, limit)
        self.statementTimeout = statementTimeout
    }

    /// Runs `body` with a connection; waits while every one is in use.
    func withConnection<R>(_ body: (Connection) throws -> R) throws -> R {
        let connection = try take()
        defer { give(connection) }
        return try body(connection)
    }

    private func take() throws -> Connection {
        condition.lock()
        while idle.isEmpty && open >= limit { condition.wait() }
        if let connection = idle.popLast() {
            condition.unlock()
            return connection
        }
        open += 1
        condition.unlock()
        do {
            return try Connection(conninfo, statementTimeout: statementTimeout)
        } catch {
            condition.lock()
            open -= 1
            condition.signal()
            condition.unlock()
            throw error
        }
    }

    private func give(_ connection: Connection) {
        condition.lock()
        if connection.isUsable { idle.append(connection) } else { open -= 1 }
        condition.signal()
        condition.unlock()
    }
}
