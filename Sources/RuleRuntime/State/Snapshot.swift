import Foundation

/// What a store holds, decoded, for tools (`rulec state`, `rulec explain --state`): every
/// stream, scenario view, group budget, param value and to-do, and the session and version.
public struct StateSnapshot: Codable, Sendable {
    /// Counts and times of one stream, scenario view or budget. Times are seconds since 1970.
    public struct Counts: Codable, Sendable, Equatable {
        /// Everything recorded (since install or the last reset).
        public var total: Int64
        /// The time recorded first, and the latest time.
        public var first: Double?
        /// The latest time recorded.
        public var last: Double?
        /// The most recent times kept (bounded), ascending.
        public var recent: [Double]
        /// The session the last event was recorded in.
        public var session: Int64
        /// Events recorded in that session.
        public var sessionCount: Int64
        /// The version (its number) the last event was recorded in.
        public var version: Int64
        /// Events recorded in that version.
        public var versionCount: Int64
    }

    /// A scenario's own view: the events it counts and its executions.
    public struct View: Codable, Sendable, Equatable {
        /// The events it counts (since its last reset).
        public var events: Counts
        /// Its executions.
        public var executions: Counts
    }

    /// A pending or expired to-do (expiry is seconds since 1970).
    public struct ToDo: Codable, Sendable, Equatable {
        /// When it was added.
        public var created: Double
        /// When it stops being needed; nil for never.
        public var expires: Double?
        /// Its payload; nil when added without one.
        public var info: [String: String]?
    }

    /// The session and version the state was last in.
    public struct Session: Codable, Sendable, Equatable {
        /// The session's number (1 for the first `startSession`).
        public var session: Int64
        /// When the session started.
        public var sessionStart: Double?
        /// The app version of the session.
        public var version: String?
        /// The version's number (a new one at each version change).
        public var versionNumber: Int64
        /// When that version's first session started.
        public var versionStart: Double?
        /// The version of the first session this state saw.
        public var firstVersion: String?
    }

    /// Every stream, by name.
    public var streams: [String: Counts]
    /// Every scenario's view, by name.
    public var scenarios: [String: View]
    /// Every group's shared budget, by name.
    public var groups: [String: Counts]
    /// Stored param values as `.rules` literals (`true`, `12`, `"pro"`, `90m`).
    public var params: [String: String]
    /// Every stored to-do, by name.
    public var todos: [String: ToDo]
    /// The session and version.
    public var session: Session
    /// Importers that ran on the store (their names).
    public var imports: [String]
    /// The rules a delivery or a swap last made active: origin, paths, language, digest, version,
    /// activation time (nil when only rules given at start have run).
    public var activeRules: String?
    /// The install's id the engine made for `bucket` (nil when none is stored).
    public var installID: String?
    /// The device's time zone as the app last saw it (an identifier such as `Europe/Paris`),
    /// where its local days and windows were judged; nil in state written before it was kept.
    public var timeZone: String?

    /// Decodes a store's entries (as ``RuleStore/load()`` returns them); throws
    /// ``RuleStoreError/undecodableEntry(key:reason:)`` for a damaged entry.
    public init(entries: [String: [UInt8]]) throws {
        let state = try EngineState(entries: entries)
        streams = state.storedTallies.mapValues(Counts.init)
        scenarios = state.scenarios.mapValues { View(events: Counts($0.events), executions: Counts($0.executions)) }
        groups = state.groups.mapValues(Counts.init)
        params = state.params.mapValues(\.description)
        todos = state.todos.mapValues { ToDo(created: $0.created, expires: $0.expires, info: $0.info) }
        let meta = state.meta
        session = Session(
            session: meta.sessionID, sessionStart: meta.sessionStart, version: meta.version,
            versionNumber: meta.versionID, versionStart: meta.versionStart, firstVersion: meta.firstVersion)
        imports = state.imports.keys.sorted()
        activeRules = state.activeRules
        installID = state.installID
        timeZone = state.zone
    }
}

extension StateSnapshot.Counts {
    init(_ tally: Tally) {
        self.init(
            total: tally.total, first: tally.first, last: tally.last, recent: tally.recent,
            session: tally.counts.sessionID,
            sessionCount: tally.counts.sessionCount, version: tally.counts.versionID,
            versionCount: tally.counts.versionCount)
    }
}
