import Foundation
import RuleLang
import RuleRuntime

/// The same rules over many installs' state in PostgreSQL: each call runs the device engine
/// (the same compiled rules and the same evaluator) over one install's state, read from its
/// rows and written back in the same transaction, under a lock on the install's row, so that
/// concurrent workers never exceed a cap.
///
/// A call costs one transaction: `BEGIN`; the install's row locked (`SELECT ... FOR UPDATE`;
/// created at its first call); with a request id, its answer looked up (a call retried after a
/// lost connection returns the answer it was given and changes nothing); the install's entries
/// read; the engine's call; the entries it changed written; `COMMIT`. A failure anywhere rolls
/// the whole call back: nothing is half-written. docs/server.md.
///
/// `@unchecked Sendable`: `lock` guards `rules`, the one field that changes (a swap); the pool
/// is safe to share.
public final class RuleServer: @unchecked Sendable {
    public struct Options: Sendable {
        /// Connections kept open at most (calls beyond wait for one).
        public var connections: Int
        /// A statement running longer fails with ``RuleServerError/query(sqlState:message:)``
        /// (SQLSTATE `57014`), its call rolled back; 0: no limit.
        public var statementTimeout: TimeInterval
        /// The engine's options for each install (`recentLimit`, `presentationTimeout`...); its
        /// install id is always the call's.
        public var engine: RuleEngine.Options

        public init(connections: Int = 4, statementTimeout: TimeInterval = 5, engine: RuleEngine.Options = .init()) {
            self.connections = connections
            self.statementTimeout = statementTimeout
            var engine = engine
            engine.logSubsystem = nil
            self.engine = engine
        }
    }

    let pool: ConnectionPool
    let options: Options
    let lock = NSLock()
    /// The rules every call runs, checked and lowered once; swapped whole by
    /// ``replaceRules(sources:)``.
    var rules: RuleEngine.Prepared

    /// A server over the rule files `sources` (checked together as one program) and the database
    /// `database` (a libpq connection string or URL; `PGHOST` and friends fill what it leaves
    /// out). Throws `RuleEngineError.invalidRules(_:)` for rules with errors, and
    /// ``RuleServerError`` when the database cannot be reached or has no schema of this version.
    public init(sources: [SourceFile], database: String, options: Options = Options()) throws {
        let result = RuleCompiler.check(sources)
        if result.hasErrors { throw RuleEngineError.invalidRules(result.diagnostics) }
        self.options = options
        rules = RuleEngine.Prepared(result, recentLimit: options.engine.recentLimit)
        pool = ConnectionPool(database, limit: options.connections, statementTimeout: options.statementTimeout)
        try pool.withConnection { try Schema.check($0) }
    }

    /// Creates the schema, or brings an older one up to this library's (`rulec-server migrate`).
    /// Returns the version found before (0: none).
    @discardableResult
    public static func migrate(database: String) throws -> Int {
        try migrate(database: database, toVersion: schemaVersion)
    }

    /// This library's schema version (`migrate` brings a database to it).
    public static var schemaVersion: Int { Schema.version }

    /// Creates or upgrades the schema as far as `version` only (tests: a database an older
    /// library made).
    @discardableResult
    package static func migrate(database: String, toVersion version: Int) throws -> Int {
        let connection = try Connection(database, statementTimeout: 0)
        return try Schema.migrate(connection, to: version)
    }

    /// Swaps the rules every later call runs. An install's history follows them as on a device:
    /// its first call under rules that rename (`was`) moves it, once; retired names stay.
    public func replaceRules(sources: [SourceFile]) throws {
        let result = RuleCompiler.check(sources)
        if result.hasErrors { throw RuleEngineError.invalidRules(result.diagnostics) }
        let prepared = RuleEngine.Prepared(result, recentLimit: options.engine.recentLimit)
        lock.withLock { rules = prepared }
    }

    /// Runs `body` with one of the pool's connections (`rulebench server` measures its baselines
    /// on the connections the calls use).
    package func withConnection<R>(_ body: (Connection) throws -> R) throws -> R {
        try pool.withConnection(body)
    }

    // MARK: - Calls

    /// Records `event` for `install` at `time`.
    public func trigger(
        install: String, _ event: String, properties: [String: PropertyValue]? = nil, at time: Date,
        requestID: String? = nil
    ) throws {
        _ = try call(install, at: time, requestID: requestID, writes: true) { engine, _ in
            if let properties {
                engine.trigger(Event(event), properties: properties)
            } else {
                engine.trigger(Event(event))
            }
            return "done"
        }
    }

    /// `tryToExecute` for `install` at `time`: true when the scenario runs (its execution
    /// recorded in the same transaction). `contexts`: where the install's app says the user is
    /// now (language 1.3's `in` and `not in`; a server call has none of its own).
    public func tryToExecute(
        install: String, _ scenario: String, at time: Date, contexts: Set<String> = [], requestID: String? = nil
    ) throws -> Bool {
        try call(install, at: time, requestID: requestID, writes: true, contexts: contexts) { engine, _ in
            try Self.known(engine, scenario)
            return engine.tryToExecute(Scenario(scenario)) ? "yes" : "no"
        } == "yes"
    }

    /// `canExecute` for `install` at `time` (in `contexts`): the answer alone; nothing is written.
    public func canExecute(install: String, _ scenario: String, at time: Date, contexts: Set<String> = []) throws
        -> Bool
    {
        try call(install, at: time, requestID: nil, writes: false, contexts: contexts) { engine, _ in
            try Self.known(engine, scenario)
            return engine.canExecute(Scenario(scenario)) ? "yes" : "no"
        } == "yes"
    }

    /// `explain` for `install` at `time` (in `contexts`); nothing is written.
    public func explain(install: String, _ scenario: String, at time: Date, contexts: Set<String> = []) throws
        -> Explanation
    {
        var explanation: Explanation?
        _ = try call(install, at: time, requestID: nil, writes: false, contexts: contexts) { engine, _ in
            explanation = engine.explain(Scenario(scenario))
            return ""
        }
        return explanation!
    }

    /// Records what the user did with a prompt of `install`.
    public func recordOutcome(
        install: String, _ outcome: Outcome, of scenario: String, at time: Date, requestID: String? = nil
    ) throws {
        _ = try call(install, at: time, requestID: requestID, writes: true) { engine, _ in
            try Self.known(engine, scenario)
            try engine.recordOutcome(outcome, of: Scenario(scenario))
            return "done"
        }
    }

    /// Records a session of `install` (an app launch the server hears of, after a clean end of
    /// the one before, as a timeline's `launch`).
    public func startSession(install: String, version: String, at time: Date, requestID: String? = nil) throws {
        _ = try call(install, at: time, requestID: requestID, writes: true) { engine, _ in
            engine.prepareForSuspension()
            engine.startSession(version: version)
            return "done"
        }
    }

    static func known(_ engine: RuleEngine, _ scenario: String) throws {
        // By the name alone: an explanation would be an evaluation, which a device's call does not make.
        guard engine.hasScenario(named: scenario) else { throw RuleServerError.unknownScenario(scenario) }
    }

    /// One call over `install`'s state in one transaction; returns what `body` answered (or, for
    /// a request id already answered, that answer, with nothing changed).
    ///
    /// Four round trips when the install exists: `BEGIN`; its row locked, its entries and a
    /// request id's answer read in one statement; the changed entries, the request's answer and
    /// the row's revision written in one; `COMMIT` (a call that changed nothing skips the write).
    func call(
        _ install: String, at time: Date, requestID: String?, writes: Bool, contexts: Set<String> = [],
        _ body: (RuleEngine, ManualClock) throws -> String
    ) throws -> String {
        let rules = lock.withLock { self.rules }
        let id = Array(install.utf8)
        return try pool.withConnection { connection in
            try connection.execute("BEGIN")
            do {
                // Reads lock too: one that re-bases times recorded ahead of its clock stores them, as a
                // device keeps them in memory, so that the next call reads what this one did.
                let request: [UInt8]? = requestID.map { Array($0.utf8) }
                let read = try Self.lockAndRead(connection, id, request)
                if let answered = read.answer {
                    try connection.execute("COMMIT")
                    return answered
                }
                let store = RowStore(read.entries)
                var engineOptions = options.engine
                engineOptions.installID = install
                let clock = ManualClock(time)
                let engine = try RuleEngine(prepared: rules, store: store, clock: clock, options: engineOptions)
                Self.useStoredZone(engine)
                // Batched events not yet folded, first, each at its time, in the order they came.
                Self.fold(read.inbox, into: engine, clock: clock)
                clock.set(time)
                if !contexts.isEmpty { engine.setContexts(contexts) }
                let answer = try body(engine, clock)
                // Times re-based in memory (a clock corrected) are stored by every call, as a device
                // keeps them in memory, so that the next call reads what this one did.
                engine.storeReBasedTimes()
                let changes = store.changes()
                if !changes.isEmpty || !read.inbox.isEmpty || (writes && request != nil) {
                    try Self.write(
                        connection, id, changes, folded: read.inbox.map(\.seq),
                        request: request.map { ($0, Array(answer.utf8)) })
                }
                try connection.execute("COMMIT")
                return answer
            } catch {
                _ = try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// Judges in the zone the install's state last saw (a device reports it), else the options'
    /// (else the server's own).
    static func useStoredZone(_ engine: RuleEngine) {
        if let stored = engine.storedTimeZone, let zone = TimeZone(identifier: stored),
            zone.identifier != engine.timeZone.identifier
        {
            engine.timeZone = zone
        }
    }

    /// An event of the inbox: appended by a batch, folded by the install's next call.
    struct InboxEvent {
        var seq: Int64
        var event: String
        var properties: [String: PropertyValue]?
        var time: Date
    }

    /// What a call reads under its lock.
    struct Read {
        var entries: [String: [UInt8]] = [:]
        var inbox: [InboxEvent] = []
        /// The answer a request id was given already.
        var answer: String?
    }

    /// Locks `id`'s row (made at its first call) and reads its entries and inbox or, with
    /// `request`, the answer that request was given: one round trip (`rules_lock_install`).
    static func lockAndRead(_ connection: Connection, _ id: [UInt8], _ request: [UInt8]?) throws -> Read {
        let rows = try connection.execute(
            "SELECT key, value, answer, seq, event, properties, at FROM rules_lock_install($1, $2)", [id, request],
            binaryResult: true)
        var read = Read()
        for row in rows.rows {
            if let answer = row[2] { return Read(answer: String(decoding: answer, as: UTF8.self)) }
            if let key = row[0], let value = row[1] {
                read.entries[String(decoding: key, as: UTF8.self)] = value
            } else if let seq = row[3], let event = row[4], let at = row[6] {
                read.inbox.append(
                    InboxEvent(
                        seq: Int64(bitPattern: bigEndian(seq)), event: String(decoding: event, as: UTF8.self),
                        properties: try row[5].map(PropertyCoding.decode),
                        time: Date(timeIntervalSince1970: Double(bitPattern: bigEndian(at)))))
            }
        }
        return read
    }

    /// Runs batched events on `engine`, each at its time.
    static func fold(_ inbox: [InboxEvent], into engine: RuleEngine, clock: ManualClock) {
        for item in inbox {
            clock.set(item.time)
            if let properties = item.properties {
                engine.trigger(Event(item.event), properties: properties)
            } else {
                engine.trigger(Event(item.event))
            }
        }
    }

    /// Writes an install's changed entries (nil: deleted), removes the inbox events it folded,
    /// records its request's answer and bumps its revision: one round trip (`rules_write_install`).
    static func write(
        _ connection: Connection, _ id: [UInt8], _ changes: [(String, [UInt8]?)], folded: [Int64],
        request: ([UInt8], [UInt8])?
    ) throws {
        var (keys, values, gone): ([[UInt8]], [[UInt8]], [[UInt8]]) = ([], [], [])
        for (key, value) in changes {
            if let value {
                keys.append(Array(key.utf8))
                values.append(value)
            } else {
                gone.append(Array(key.utf8))
            }
        }
        try connection.execute(
            "SELECT rules_write_install($1, $2::bytea[], $3::bytea[], $4::bytea[], $5::bigint[], $6, $7)",
            [
                id, PGArray.binary(keys, of: .bytea), PGArray.binary(values, of: .bytea),
                PGArray.binary(gone, of: .bytea), PGArray.binary(folded.map(bigEndianBytes), of: .int8),
                request?.0, request?.1,
            ], binary: [1, 2, 3, 4])
    }
}

/// An 8-byte big-endian integer (PostgreSQL's binary `bigint` and `double precision`).
func bigEndian(_ bytes: [UInt8]) -> UInt64 {
    bytes.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
}

/// `value` as 8 big-endian bytes.
func bigEndianBytes(_ value: Int64) -> [UInt8] {
    (0..<8).map { UInt8(truncatingIfNeeded: UInt64(bitPattern: value) >> (56 - 8 * $0)) }
}

/// One-dimensional arrays in PostgreSQL's binary format, for parameters such as
/// `unnest($1::bytea[])`: every row of a write in one statement.
enum PGArray {
    enum Element: Int32 {
        case bytea = 17
        case int8 = 20
        case text = 25
    }

    /// `items` as an array of `element` (each item's bytes are the element's binary form: for
    /// `text` and `bytea`, the bytes themselves).
    static func binary(_ items: [[UInt8]], of element: Element) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(20 + items.reduce(0) { $0 + 4 + $1.count })
        func int32(_ value: Int32) {
            withUnsafeBytes(of: value.bigEndian) { out.append(contentsOf: $0) }
        }
        int32(items.isEmpty ? 0 : 1)  // dimensions
        int32(0)  // no NULLs
        int32(element.rawValue)
        if !items.isEmpty {
            int32(Int32(items.count))
            int32(1)  // lower bound
            for item in items {
                int32(Int32(item.count))
                out.append(contentsOf: item)
            }
        }
        return out
    }
}

/// One install's entries for one call: loaded from its rows, and the changes the engine makes,
/// last one per key, for the call to write back.
///
/// `@unchecked Sendable`: `lock` guards `entries` and `changed`; the engine calls it under its
/// own lock, from the one thread of the call.
final class RowStore: RuleStore, @unchecked Sendable {
    let lock = NSLock()
    private let entries: [String: [UInt8]]
    private var changed: [String: [UInt8]?] = [:]
    private var order: [String] = []

    init(_ entries: [String: [UInt8]]) { self.entries = entries }

    func load() throws -> [String: [UInt8]] { entries }

    func apply(_ changes: [StoreChange]) throws {
        lock.withLock {
            for change in changes {
                if changed[change.key] == nil { order.append(change.key) }
                changed[change.key] = .some(change.value)
            }
        }
    }

    /// Every key changed, in the order first changed, with its last value (nil: deleted).
    func changes() -> [(String, [UInt8]?)] {
        lock.withLock { order.map { ($0, changed[$0]!) } }
    }
}
