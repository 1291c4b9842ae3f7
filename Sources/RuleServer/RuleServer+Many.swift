import Foundation
import RuleLang
@_spi(Tools) import RuleRuntime

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

    /// Records many events, each for its install at its time: an event pipeline's batch. The
    /// events are appended to the inbox (`rules_inbox`) by one `COPY`, all or none (a batch that
    /// failed is retried whole without counting anything twice), and each install's are folded
    /// into its state, in the order given, before its next call reads it (or by
    /// ``fold(limit:)``); `eligible` folds them in memory. No install's row is locked: a batch
    /// never waits for decisions, nor they for it.
    public func trigger(batch events: [BatchEvent]) throws {
        guard !events.isEmpty else { return }
        let rows = Self.inboxRows(events)
        try pool.withConnection { connection in
            try connection.copy("COPY rules_inbox (install_id, event, properties, at) FROM STDIN", rows)
        }
    }

    /// `events` as the inbox's rows in `COPY`'s text format (`rulebench server` copies the same
    /// rows elsewhere for its baseline).
    package static func inboxRows(_ events: [BatchEvent]) -> [UInt8] {
        var rows = CopyText()
        for item in events {
            rows.text(item.install)
            rows.text(item.event)
            rows.bytea(item.properties.map(PropertyCoding.encode))
            rows.double(item.time.timeIntervalSince1970, last: true)
        }
        return rows.bytes
    }

    /// Folds the inbox events of up to `limit` installs into their state (each as its next call
    /// would): run it from time to time so that installs that make no call keep a short inbox.
    /// Returns the number of installs folded.
    @discardableResult
    public func fold(limit: Int = 1_000) throws -> Int {
        let installs = try pool.withConnection { connection in
            try connection.execute(
                "SELECT DISTINCT install_id FROM rules_inbox LIMIT $1", [Array(String(max(0, limit)).utf8)]
            ).rows.compactMap { $0[0].map { String(decoding: $0, as: UTF8.self) } }
        }
        for install in installs { try fold(install: install) }
        return installs.count
    }

    /// Folds `install`'s inbox events into its state, if it has any: a call at the latest
    /// event's time that judges nothing.
    func fold(install: String) throws {
        let latest = try pool.withConnection { connection in
            try connection.execute("SELECT max(at) FROM rules_inbox WHERE install_id = $1", [Array(install.utf8)])
                .text(0, 0).flatMap(Double.init)
        }
        guard let latest else { return }
        _ = try call(install, at: Date(timeIntervalSince1970: latest), requestID: nil, writes: true) { _, _ in "" }
    }

    /// The campaign question: calls `each` with every install for which `scenario` would answer
    /// yes at `time` (`canExecute`), read through a server-side cursor `batch` rows at a time, so
    /// that memory stays bounded whatever the number of installs. `installs`: only those;
    /// `buckets`: only installs whose `bucket(salt)` is in the range. Batched events still in the
    /// inbox are folded first (``fold(limit:)``); nothing else is written.
    public func eligible(
        _ scenario: String, at time: Date, installs: [String]? = nil,
        buckets: (salt: String, range: Range<Int>)? = nil, batch: Int = 500, _ each: (String) throws -> Void
    ) throws {
        let rules = lock.withLock { self.rules }
        var engineOptions = options.engine
        // The name is checked once, whatever the number of installs (none included).
        try Self.known(
            RuleEngine(prepared: rules, store: RowStore([:]), clock: ManualClock(time), options: engineOptions),
            scenario)
        try fold(limit: Int(Int32.max))
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
            let clock = ManualClock(time)
            let handle = Scenario(scenario)
            func judge() throws {
                guard let install = current else { return }
                defer { entries = [:] }
                if let buckets, !buckets.range.contains(RuleEngine.bucket(salt: buckets.salt, installID: install)) {
                    return
                }
                engineOptions.installID = install
                let engine = try RuleEngine(
                    prepared: rules, store: RowStore(entries), clock: clock, options: engineOptions)
                Self.useStoredZone(engine)
                if engine.canExecute(handle) { try each(install) }
            }
            // The next rows are asked for before these are judged: the database reads them
            // while the engines run.
            let fetch = "FETCH \(max(1, batch)) FROM rules_eligible"
            try connection.send(fetch)
            while true {
                let rows = try connection.receive()
                if rows.isEmpty { break }
                try connection.send(fetch)
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
                try connection.execute("DELETE FROM rules_inbox WHERE install_id = $1", [id])
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
        // Batched events not yet folded are part of its state.
        try fold(install: install)
        return try pool.withConnection { connection in
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
    public func present(
        install: String, _ scenario: String, at time: Date, contexts: Set<String> = [], requestID: String? = nil
    ) throws -> String? {
        let answer = try call(install, at: time, requestID: requestID, writes: true, contexts: contexts) { engine, _ in
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
            try engine.setParam(named: param, to: value)
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
    public func executeNext(
        install: String, among names: [String], at time: Date, contexts: Set<String> = [], requestID: String? = nil
    ) throws -> String? {
        let answer = try call(install, at: time, requestID: requestID, writes: true, contexts: contexts) { engine, _ in
            engine.executeNext(among: names.map { Scenario($0) }).map { "next " + $0.name } ?? "none"
        }
        return answer.hasPrefix("next ") ? String(answer.dropFirst(5)) : nil
    }
}
