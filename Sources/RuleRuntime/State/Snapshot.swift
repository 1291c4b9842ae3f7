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
        public var last: Double?
        /// The most recent times kept (bounded), ascending.
        public var recent: [Double]
        /// Counts in the session and version they were last recorded in, with those ids.
        public var session: Int64
        public var sessionCount: Int64
        public var version: Int64
        public var versionCount: Int64
    }

    /// A scenario's own view: the events it counts and its executions.
    public struct View: Codable, Sendable, Equatable {
        public var events: Counts
        public var executions: Counts
    }

    /// A pending or expired to-do (expiry is seconds since 1970).
    public struct ToDo: Codable, Sendable, Equatable {
        public var created: Double
        public var expires: Double?
        public var info: [String: String]?
    }

    /// The session and version the state was last in.
    public struct Session: Codable, Sendable, Equatable {
        public var session: Int64
        public var sessionStart: Double?
        public var version: String?
        public var versionNumber: Int64
        public var versionStart: Double?
        public var firstVersion: String?
    }

    public var streams: [String: Counts]
    public var scenarios: [String: View]
    public var groups: [String: Counts]
    /// Stored param values as `.rules` literals (`true`, `12`, `"pro"`, `90m`).
    public var params: [String: String]
    public var todos: [String: ToDo]
    public var session: Session
    /// Importers that ran on the store (their names).
    public var imports: [String]

    /// Decodes a store's entries (as ``RuleStore/load()`` returns them); throws
    /// ``RuleStoreError/undecodableEntry(key:reason:)`` for a damaged entry.
    public init(entries: [String: [UInt8]]) throws {
        let state = try EngineState(entries: entries)
        streams = state.streams.mapValues(Counts.init)
        scenarios = state.scenarios.mapValues { View(events: Counts($0.events), executions: Counts($0.executions)) }
        groups = state.groups.mapValues(Counts.init)
        params = state.params.mapValues(\.description)
        todos = state.todos.mapValues { ToDo(created: $0.created, expires: $0.expires, info: $0.info) }
        let meta = state.meta
        session = Session(
            session: meta.sessionID, sessionStart: meta.sessionStart, version: meta.version,
            versionNumber: meta.versionID, versionStart: meta.versionStart, firstVersion: meta.firstVersion)
        imports = state.imports.keys.sorted()
    }
}

extension StateSnapshot.Counts {
    init(_ tally: Tally) {
        self.init(
            total: tally.total, first: tally.first, last: tally.last, recent: tally.recent, session: tally.sessionID,
            sessionCount: tally.sessionCount, version: tally.versionID, versionCount: tally.versionCount)
    }
}
