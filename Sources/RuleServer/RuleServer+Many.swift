import Foundation
import RuleLang
import RuleRuntime

extension RuleServer {
    /// One event of a batch: an install, the event, its properties, its time.
    public struct BatchEvent: Sendable {
        public var install: String
        public var event: String
        public var properties: [String: PropertyValue]?
        public var time: Date

        public init(install: String, event: String, properties: [String: PropertyValue]? = nil, at time: Date) {
            self.install = install
            self.event = event
            self.properties = properties
            self.time = time
        }
    }

    /// Records many events, each for its install at its time: an event pipeline's batch. One
    /// transaction for the whole batch (all its events are kept, or none: a batch that failed is
    /// retried whole without counting anything twice), four round trips whatever its size:
    /// `BEGIN`; the installs' rows made where missing, locked in the order of their ids (two
    /// batches never wait for each other in a circle) and read with their entries in one statement
    /// (`rules_lock_installs`); each install's events run in the order given; every changed entry
    /// written in one statement; `COMMIT`.
    public func trigger(batch events: [BatchEvent]) throws {
        guard !events.isEmpty else { return }
        var byInstall: [String: [BatchEvent]] = [:]
        for item in events { byInstall[item.install, default: []].append(item) }
        let order = byInstall.keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        let ids = order.map { Array($0.utf8) }
        let rules = lock.withLock { self.rules }
        try pool.withConnection { connection in
            try connection.execute("BEGIN")
            do {
                let rows = try connection.execute(
                    "SELECT install_id, key, value FROM rules_lock_installs($1::text[])",
                    [PGArray.binary(ids, of: .text)], binary: [0], binaryResult: true)
                var entries: [String: [String: [UInt8]]] = [:]
                for row in rows.rows {
                    let install = String(decoding: row[0] ?? [], as: UTF8.self)
                    if let key = row[1], let value = row[2] {
                        entries[install, default: [:]][String(decoding: key, as: UTF8.self)] = value
                    } else if entries[install] == nil {
                        entries[install] = [:]
                    }
                }
                var writes: [(id: [UInt8], changes: [(String, [UInt8]?)], request: ([UInt8], [UInt8])?)] = []
                for (install, id) in zip(order, ids) {
                    let items = byInstall[install]!
                    let store = RowStore(entries[install] ?? [:])
                    var engineOptions = options.engine
                    engineOptions.installID = install
                    let clock = ManualClock(items[0].time)
                    let engine = try RuleEngine(prepared: rules, store: store, clock: clock, options: engineOptions)
                    if let stored = engine.storedTimeZone, let zone = TimeZone(identifier: stored),
                        zone.identifier != engine.timeZone.identifier
                    {
                        engine.timeZone = zone
                    }
                    for item in items {
                        clock.set(item.time)
                        if let properties = item.properties {
                            engine.trigger(Event(item.event), properties: properties)
                        } else {
                            engine.trigger(Event(item.event))
                        }
                    }
                    engine.storeReBasedTimes()
                    let changes = store.changes()
                    if !changes.isEmpty { writes.append((id, changes, nil)) }
                }
                if !writes.isEmpty { try Self.write(connection, writes) }
                try connection.execute("COMMIT")
            } catch {
                _ = try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// The campaign question: calls `each` with every install for which `scenario` would answer
    /// yes at `time` (`canExecute`; nothing is written), read through a server-side cursor
    /// `batch` rows at a time, so that memory stays bounded whatever the number of installs.
    /// `installs`: only those; `buckets`: only installs whose `bucket(salt)` is in the range.
    public func eligible(
        _ scenario: String, at time: Date, installs: [String]? = nil,
        buckets: (salt: String, range: Range<Int>)? = nil, batch: Int = 500, _ each: (String) throws -> Void
    ) throws {
        let rules = lock.withLock { self.rules }
        var engineOptions = options.engine
        try pool.withConnection { connection in
            try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            defer { _ = try? connection.execute("ROLLBACK") }
            let filter = installs == nil ? "" : "WHERE i.install_id = ANY($1::text[])"
            let parameters: [[UInt8]?] = installs.map { [Array(Self.arrayLiteral($0).utf8)] } ?? []
            try connection.execute(
                "DECLARE rules_eligible NO SCROLL CURSOR FOR SELECT i.install_id, e.key, e.value "
                    + "FROM rules_installs i LEFT JOIN rules_entries e ON e.install_id = i.install_id \(filter) "
                    + "ORDER BY i.install_id", parameters)
            var current: String?
            var entries: [String: [UInt8]] = [:]
            func judge() throws {
                guard let install = current else { return }
                defer { entries = [:] }
                if let buckets, !buckets.range.contains(RuleEngine.bucket(salt: buckets.salt, installID: install)) {
                    return
                }
                engineOptions.installID = install
                let engine = try RuleEngine(
                    prepared: rules, store: RowStore(entries), clock: ManualClock(time), options: engineOptions)
                try Self.known(engine, scenario)
                if engine.canExecute(scenario) { try each(install) }
            }
            while true {
                let rows = try connection.execute("FETCH \(max(1, batch)) FROM rules_eligible", binaryResult: true)
                if rows.isEmpty { break }
                for row in rows.rows {
                    let install = String(decoding: row[0] ?? [], as: UTF8.self)
                    if install != current {
                        try judge()
                        current = install
                    }
                    if let key = row[1], let value = row[2] { entries[String(decoding: key, as: UTF8.self)] = value }
                }
            }
            try judge()
        }
    }

    /// A text array literal (`{"a","b"}`) for `= ANY($1::text[])`.
    static func arrayLiteral(_ values: [String]) -> String {
        let quoted = values.map { value in
            "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                + "\""
        }
        return "{" + quoted.joined(separator: ",") + "}"
    }

    // MARK: - State files

    /// A device's state (the entries of its state file: `FileStore(url:).load()`) made
    /// `install`'s rows, replacing what it had: "make user 42 look like my test phone".
    public func importState(install: String, entries: [String: [UInt8]]) throws {
        let id = Array(install.utf8)
        try pool.withConnection { connection in
            try connection.execute("BEGIN")
            do {
                try connection.execute(
                    "INSERT INTO rules_installs (install_id) VALUES ($1) ON CONFLICT DO NOTHING", [id])
                try connection.execute("SELECT revision FROM rules_installs WHERE install_id = $1 FOR UPDATE", [id])
                try connection.execute("DELETE FROM rules_entries WHERE install_id = $1", [id])
                for (key, value) in entries.sorted(by: { $0.key < $1.key }) {
                    try connection.execute(
                        "INSERT INTO rules_entries (install_id, key, value) VALUES ($1, $2, $3)",
                        [id, Array(key.utf8), value], binary: [1, 2])
                }
                try connection.execute(
                    "UPDATE rules_installs SET revision = revision + 1, updated_at = now() WHERE install_id = $1", [id])
                try connection.execute("COMMIT")
            } catch {
                _ = try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// `install`'s entries as a device's state file holds them (write them into one with
    /// `FileStore(url:).apply(...)`: "make my test phone look like user 42"); empty for an install
    /// the database has never seen.
    public func exportState(install: String) throws -> [String: [UInt8]] {
        try pool.withConnection { connection in
            let rows = try connection.execute(
                "SELECT key, value FROM rules_entries WHERE install_id = $1", [Array(install.utf8)],
                binaryResult: true)
            var entries: [String: [UInt8]] = [:]
            for row in rows.rows {
                if let key = row[0], let value = row[1] { entries[String(decoding: key, as: UTF8.self)] = value }
            }
            return entries
        }
    }
}

extension RuleServer {
    /// `present` for `install` at `time`: when the scenario may show, records its execution and
    /// holds its group (outside a group, the scenario) as on a device, and returns the
    /// presentation's token, for ``finish(install:_:token:_:at:requestID:)``; nil when it may
    /// not show. Every scenario held answers no, with "NAME is showing", until the presentation
    /// is finished or `RuleEngine.Options.presentationTimeout` has passed.
    public func present(install: String, _ scenario: String, at time: Date, requestID: String? = nil) throws
        -> String?
    {
        let answer = try call(install, at: time, requestID: requestID, writes: true) { engine, _ in
            try Self.known(engine, scenario)
            return engine.present(Scenario(scenario)).map { "shown " + $0.token } ?? "no"
        }
        return answer.hasPrefix("shown ") ? String(answer.dropFirst(6)) : nil
    }

    /// Ends a presentation: records what the user did (`outcome`) and lets go of its hold if it
    /// still holds. One expired or finished already records the outcome all the same: a call
    /// retried after a lost connection says so with its request id, and is applied once.
    public func finish(
        install: String, _ scenario: String, token: String, _ outcome: Outcome, at time: Date,
        requestID: String? = nil
    ) throws {
        _ = try call(install, at: time, requestID: requestID, writes: true) { engine, _ in
            try Self.known(engine, scenario)
            try engine.finish(scenario: scenario, token: token, outcome)
            return "done"
        }
    }
}

extension RuleServer {
    /// `markDone` for `install`: an event on `name`'s stream, and its to-do cleared.
    public func markDone(install: String, _ name: String, at time: Date, requestID: String? = nil) throws {
        _ = try call(install, at: time, requestID: requestID, writes: true) { engine, _ in
            engine.markDone(name)
            return "done"
        }
    }

    /// `toDo` for `install`: a to-do for `name`, pending until done.
    public func toDo(install: String, _ name: String, at time: Date, requestID: String? = nil) throws {
        _ = try call(install, at: time, requestID: requestID, writes: true) { engine, _ in
            _ = engine.toDo(name)
            return "done"
        }
    }

    /// Sets a param of `install`'s (its value stored with its state).
    public func set(install: String, _ param: String, to value: ParamValue, at time: Date) throws {
        _ = try call(install, at: time, requestID: nil, writes: true) { engine, _ in
            try engine.set(param, to: value)
            return "done"
        }
    }

    /// The install's device moved to `zone`: its later calls judge local days and windows there.
    public func setTimeZone(install: String, _ zone: TimeZone, at time: Date) throws {
        _ = try call(install, at: time, requestID: nil, writes: true) { engine, _ in
            engine.timeZone = zone
            return "done"
        }
    }

    /// The install's app ended uncleanly and was launched again (same version): a crash, when
    /// the rules read `crash`.
    public func relaunchAfterCrash(install: String, at time: Date, requestID: String? = nil) throws {
        _ = try call(install, at: time, requestID: requestID, writes: true) { engine, _ in
            engine.relaunchAfterCrash()
            return "done"
        }
    }

    /// `recordProblem` for `install`.
    public func recordProblem(install: String, at time: Date, requestID: String? = nil) throws {
        _ = try call(install, at: time, requestID: requestID, writes: true) { engine, _ in
            engine.recordProblem()
            return "done"
        }
    }

    /// `executeNext(among:)` for `install`: the name (as given) of the scenario executed, or nil.
    public func executeNext(install: String, among names: [String], at time: Date, requestID: String? = nil)
        throws -> String?
    {
        let answer = try call(install, at: time, requestID: requestID, writes: true) { engine, _ in
            engine.executeNext(among: names).map { "next " + $0 } ?? "none"
        }
        return answer.hasPrefix("next ") ? String(answer.dropFirst(5)) : nil
    }
}
