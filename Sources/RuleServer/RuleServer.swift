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
    /// The rules every call runs, checked once; swapped whole by ``replaceRules(sources:)``.
    var rules: CheckResult

    /// A server over the rule files `sources` (checked together as one program) and the database
    /// `database` (a libpq connection string or URL; `PGHOST` and friends fill what it leaves
    /// out). Throws `RuleEngineError.invalidRules(_:)` for rules with errors, and
    /// ``RuleServerError`` when the database cannot be reached or has no schema of this version.
    public init(sources: [SourceFile], database: String, options: Options = Options()) throws {
        let result = RuleCompiler.check(sources)
        if result.hasErrors { throw RuleEngineError.invalidRules(result.diagnostics) }
        self.options = options
        rules = result
        pool = ConnectionPool(database, limit: options.connections, statementTimeout: options.statementTimeout)
        try pool.withConnection { try Schema.check($0) }
    }

    /// Creates the schema, or brings an older one up to this library's (`rulec-server migrate`).
    /// Returns the version found before (0: none).
    @discardableResult
    public static func migrate(database: String) throws -> Int {
        let connection = try Connection(database, statementTimeout: 0)
        return try Schema.migrate(connection)
    }

    /// Swaps the rules every later call runs. An install's history follows them as on a device:
    /// its first call under rules that rename (`was`) moves it, once; retired names stay.
    public func replaceRules(sources: [SourceFile]) throws {
        let result = RuleCompiler.check(sources)
        if result.hasErrors { throw RuleEngineError.invalidRules(result.diagnostics) }
        lock.withLock { rules = result }
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
    /// recorded in the same transaction).
    public func tryToExecute(install: String, _ scenario: String, at time: Date, requestID: String? = nil) throws
        -> Bool
    {
        try call(install, at: time, requestID: requestID, writes: true) { engine, _ in
            try Self.known(engine, scenario)
            return engine.tryToExecute(scenario) ? "yes" : "no"
        } == "yes"
    }

    /// `canExecute` for `install` at `time`: the answer alone; nothing is written.
    public func canExecute(install: String, _ scenario: String, at time: Date) throws -> Bool {
        try call(install, at: time, requestID: nil, writes: false) { engine, _ in
            try Self.known(engine, scenario)
            return engine.canExecute(scenario) ? "yes" : "no"
        } == "yes"
    }

    /// `explain` for `install` at `time`; nothing is written.
    public func explain(install: String, _ scenario: String, at time: Date) throws -> Explanation {
        var explanation: Explanation?
        _ = try call(install, at: time, requestID: nil, writes: false) { engine, _ in
            explanation = engine.explain(scenario)
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
            try engine.recordOutcome(outcome, of: scenario)
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
    func call(
        _ install: String, at time: Date, requestID: String?, writes: Bool,
        _ body: (RuleEngine, ManualClock) throws -> String
    ) throws -> String {
        let rules = lock.withLock { self.rules }
        let id = Array(install.utf8)
        return try pool.withConnection { connection in
            try connection.execute("BEGIN")
            do {
                // Reads lock too: one that re-bases times recorded ahead of its clock stores them, as a
                // device keeps them in memory, so that the next call reads what this one did.
                try connection.execute(
                    "INSERT INTO rules_installs (install_id) VALUES ($1) ON CONFLICT DO NOTHING", [id])
                try connection.execute("SELECT revision FROM rules_installs WHERE install_id = $1 FOR UPDATE", [id])
                if let requestID {
                    let answered = try connection.execute(
                        "SELECT answer FROM rules_requests WHERE install_id = $1 AND request_id = $2",
                        [id, Array(requestID.utf8)])
                    if !answered.isEmpty {
                        try connection.execute("COMMIT")
                        return answered.text(0, 0) ?? ""
                    }
                }
                let rows = try connection.execute(
                    "SELECT key, value FROM rules_entries WHERE install_id = $1", [id], binaryResult: true)
                var entries: [String: [UInt8]] = [:]
                for row in rows.rows {
                    if let key = row[0], let value = row[1] { entries[String(decoding: key, as: UTF8.self)] = value }
                }
                let store = RowStore(entries)
                var engineOptions = options.engine
                engineOptions.installID = install
                let clock = ManualClock(time)
                let engine = try RuleEngine(checkedOnce: rules, store: store, clock: clock, options: engineOptions)
                // The install's zone is the one its state last saw (a device reports it), else the
                // options' (else the server's own).
                if let stored = engine.storedTimeZone, let zone = TimeZone(identifier: stored),
                    zone.identifier != engine.timeZone.identifier
                {
                    engine.timeZone = zone
                }
                let answer = try body(engine, clock)
                // Times re-based in memory (a clock corrected) are stored by every call, as a device
                // keeps them in memory, so that the next call reads what this one did.
                engine.storeReBasedTimes()
                let changes = store.changes()
                if writes || !changes.isEmpty {
                    for (key, value) in changes {
                        if let value {
                            try connection.execute(
                                """
                                INSERT INTO rules_entries (install_id, key, value) VALUES ($1, $2, $3)
                                ON CONFLICT (install_id, key) DO UPDATE SET value = EXCLUDED.value
                                """, [id, Array(key.utf8), value], binary: [1, 2])
                        } else {
                            try connection.execute(
                                "DELETE FROM rules_entries WHERE install_id = $1 AND key = $2", [id, Array(key.utf8)],
                                binary: [1])
                        }
                    }
                    if let requestID {
                        try connection.execute(
                            "INSERT INTO rules_requests (install_id, request_id, answer) VALUES ($1, $2, $3)",
                            [id, Array(requestID.utf8), Array(answer.utf8)])
                    }
                    try connection.execute(
                        "UPDATE rules_installs SET revision = revision + 1, updated_at = now() WHERE install_id = $1",
                        [id])
                    try connection.execute("COMMIT")
                } else {
                    try connection.execute("ROLLBACK")
                }
                return answer
            } catch {
                _ = try? connection.execute("ROLLBACK")
                throw error
            }
        }
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
