import Foundation
import RuleLang
import RuleRuntime

/// Reading state files written by an app (pulled from a device) or by `rulec simulate --save`.
enum StateFile {
    /// The entries of the `FileStore` at `path`, read without changing the file; nil after
    /// printing the store's own error (a missing file, a damaged one).
    static func entries(_ path: String) -> [String: [UInt8]]? {
        do {
            // Loading repairs nothing: repairs wait for the first write, which never comes here.
            return try FileStore(url: URL(fileURLWithPath: path)).load()
        } catch {
            CLI.printError("\(path): error: \(error)")
            return nil
        }
    }

    /// Exit status 64 with an `error:` and the usage when no file is at `path` (a missing path is
    /// wrong usage, as for every command); nil when there is one.
    static func misuseIfMissing(_ path: String, usage: String) -> Int32? {
        FileManager.default.fileExists(atPath: path) ? nil : CLI.misuse("no such file: '\(path)'", usage: usage)
    }

    /// `seconds` as ISO 8601 in `zone`, with its offset; `never` for none.
    static func time(_ seconds: Double?, in zone: TimeZone) -> String {
        guard let seconds else { return "never" }
        return LocalTimeText.iso8601(Date(timeIntervalSince1970: seconds), in: zone)
    }
}

/// `rulec state FILE [--json]`
enum StateCommand: Command {
    static let summary = "print what a state file holds"
    static let json = Flag("--json", help: "one JSON document instead (times in seconds since 1970)")
    static let options = CommandOptions(
        name: "state",
        title: "rulec state: print what a state file holds.",
        operands: "FILE",
        about: """
            FILE is a FileStore file, written by an app or by 'rulec simulate --save'. Prints
            the session and version, then every stream, scenario view, group budget, param
            value and to-do, sorted by name. Times print in the zone the state holds (the
            app's, kept at each session), else in UTC, with their offset. The file is read,
            never changed.
            """,
        options: [json, JudgedState.timeZone],
        exitStatus: """
            Exit status: 0 printed, 1 the file is damaged or unreadable, 64 wrong usage (a missing
            FILE or an unknown zone too).
            """)

    static func run(_ arguments: [String]) -> Int32 {
        let parsed = options.parse(arguments)
        if let exit = parsed.exit { return exit }
        let (paths, json) = (parsed.operands, parsed[Self.json])
        guard paths.count == 1 else { return CLI.misuse("expected one state FILE", usage: usage) }
        if let exit = StateFile.misuseIfMissing(paths[0], usage: usage) { return exit }
        guard let entries = StateFile.entries(paths[0]) else { return ExitCode.failure }
        let snapshot: StateSnapshot
        do {
            snapshot = try StateSnapshot(entries: entries)
        } catch {
            CLI.printError("\(paths[0]): error: \(error)")
            return ExitCode.failure
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
            guard let data = try? encoder.encode(snapshot) else { return ExitCode.failure }
            print(String(decoding: data, as: UTF8.self))
        } else {
            var zone = TimeZone(identifier: "UTC")!
            if let value = parsed[JudgedState.timeZone] {
                guard let given = TimeZone(identifier: value) else {
                    return CLI.misuse(
                        "unknown time zone '\(value)'; use an IANA name such as Europe/Paris", usage: usage)
                }
                zone = given
            } else if let stored = snapshot.timeZone.flatMap(TimeZone.init(identifier:)) {
                zone = stored
            }
            print(describe(snapshot, in: zone), terminator: "")
        }
        return ExitCode.ok
    }

    /// What `state` holds, its times in `zone`.
    static func describe(_ state: StateSnapshot, in zone: TimeZone) -> String {
        func time(_ seconds: Double?) -> String { StateFile.time(seconds, in: zone) }
        var out = ""
        let session = state.session
        out += "session \(session.session) (started \(time(session.sessionStart)))"
        out +=
            ", version \(session.version.map { "'\($0)'" } ?? "none") (since \(time(session.versionStart)))"
        out += ", first version \(session.firstVersion.map { "'\($0)'" } ?? "none")\n"
        if let rules = state.activeRules { out += "rules: \(rules)\n" }
        if let id = state.installID { out += "install id: \(id)\n" }
        if let stored = state.timeZone { out += "time zone: \(stored)\n" }
        func counts(_ c: StateSnapshot.Counts, _ noun: String) -> String {
            // A sum's stream counts the values it added up: "a sum of 500".
            var text = noun == "sum" ? "a sum of \(c.total)" : "\(c.total) \(noun)\(c.total == 1 ? "" : "s")"
            if c.total > 0 { text += " (first \(time(c.first)), last \(time(c.last)))" }
            if c.session == session.session && c.sessionCount > 0 { text += ", \(c.sessionCount) this session" }
            if c.version == session.versionNumber && c.versionCount > 0 { text += ", \(c.versionCount) this version" }
            return text
        }
        out += "streams (\(state.streams.count)):\n"
        for name in state.streams.keys.sorted() {
            // The engine's own streams as rules read them: `RateApp: declined`, `crash`,
            // `purchase where amount >= 10`, never their stored names.
            let shown = EngineStream.isReserved(name) ? EngineStream.ruleText(of: name) : Printer.name(name)
            out += "  \(shown): \(counts(state.streams[name]!, name.hasPrefix("@sum:") ? "sum" : "event"))\n"
        }
        out += "scenarios (\(state.scenarios.count)):\n"
        for name in state.scenarios.keys.sorted() {
            let view = state.scenarios[name]!
            out += "  \(name): \(counts(view.events, "event")); \(counts(view.executions, "execution"))\n"
        }
        out += "groups (\(state.groups.count)):\n"
        for name in state.groups.keys.sorted() {
            out += "  \(name): \(counts(state.groups[name]!, "execution"))\n"
        }
        out += "params (\(state.params.count)):\n"
        for name in state.params.keys.sorted() { out += "  \(name) = \(state.params[name]!)\n" }
        // The engine's own to-dos (a presentation's hold, the run's mark) apart from the app's.
        let own = state.todos.keys.filter { EngineStream.isReserved($0) }
        out += "to-dos (\(state.todos.count - own.count)):\n"
        for name in state.todos.keys.sorted() where !EngineStream.isReserved(name) {
            let todo = state.todos[name]!
            var text = "  \(Printer.name(name)): added \(time(todo.created))"
            if let expires = todo.expires { text += ", expires \(time(expires))" }
            if let info = todo.info {
                text +=
                    info.isEmpty
                    ? ", empty info"
                    : ", info " + info.keys.sorted().map { "\($0)=\(info[$0]!)" }.joined(separator: " ")
            }
            out += text + "\n"
        }
        for name in own.sorted() {
            let todo = state.todos[name]!
            if name.hasPrefix("@showing:") {
                let showing = todo.info?["scenario"].map { "'\($0)'" } ?? "a prompt"
                let until = todo.expires.map { " until \(time($0))" } ?? ""
                out += "showing: \(showing) holds \(Printer.name(String(name.dropFirst(9))))"
                out += " since \(time(todo.created))\(until)\n"
            } else if name == "@running" || name.hasPrefix("@running:") {
                out += "the app's run is in the foreground since \(time(todo.created))"
                out += " (a crash, if a later session finds it so with its process gone)\n"
            }
        }
        if !state.imports.isEmpty { out += "imported from: \(state.imports.joined(separator: ", "))\n" }
        return out
    }
}

/// `rulec explain RULES... --state FILE [SCENARIO...] [--at TIME]`
enum ExplainCommand: Command {
    static let summary = "explain each scenario on a state file"
    static let state = Valued("--state", value: "FILE", required: true, help: "the state file (required)")
    static let at = Valued(
        "--at", value: "TIME",
        help: "evaluate at TIME: ISO 8601 ('2026-03-01T12:00:00Z') or seconds\nsince 1970; default now")
    static let options = CommandOptions(
        name: "explain",
        title: "rulec explain: why each scenario would or would not run, on a device's state.",
        operands: "RULES... [SCENARIO...]",
        about: """
            Loads the rules (files or directories, checked together) over the state in FILE
            (a FileStore file from an app or from 'rulec simulate --save'; read, never
            changed) and prints, for every scenario or each SCENARIO named (an argument that
            is not an existing path), each clause with its numbers and the earliest time the
            time-based clauses pass, as engine.explain does.
            """,
        options: [state, at, JudgedState.installID, JudgedState.timeZone],
        exitStatus: """
            Exit status: 0 explained, 1 errors in the rules, an unknown scenario or a damaged
            state file, 64 wrong usage (an unknown zone too).
            """)

    static func run(_ arguments: [String]) -> Int32 {
        let parsed = options.parse(arguments)
        if let exit = parsed.exit { return exit }
        let statePath = parsed[required: Self.state]
        var at: Date?
        if let value = parsed[Self.at] {
            guard let date = parseTime(value) else {
                return CLI.misuse(
                    "'\(value)' is not a time; use ISO 8601 ('2026-03-01T12:00:00Z') or seconds since 1970",
                    usage: usage)
            }
            at = date
        }
        // An existing path is rules; anything else names a scenario.
        let paths = parsed.operands.filter { FileManager.default.fileExists(atPath: $0) }
        let names = parsed.operands.filter { !FileManager.default.fileExists(atPath: $0) }
        if paths.isEmpty { return CLI.misuse("missing RULES", usage: usage) }
        guard let files = CLI.ruleFiles(paths, usage: usage) else { return ExitCode.usage }
        let (sources, unreadable) = CLI.readSources(files)
        if let exit = StateFile.misuseIfMissing(statePath, usage: usage) { return exit }
        guard unreadable.isEmpty, let entries = StateFile.entries(statePath) else { return ExitCode.failure }
        // Decoded once, for the zone, the id and the last record (the engine decodes its own).
        let snapshot = try? StateSnapshot(entries: entries)
        guard
            let options = JudgedState.options(parsed, state: snapshot, path: statePath, at: at, usage: usage)
        else { return ExitCode.usage }
        guard
            let engine = CLI.engine(
                sources, store: InMemoryStore(entries), clock: FixedClock(date: at ?? Date()), options: options,
                statePath: statePath)
        else { return ExitCode.failure }
        JudgedState.warnWithoutInstallID([engine], parsed, state: snapshot, path: statePath)
        let all = engine.scenarioNames
        // A former name (`was`) is known: the engine explains it under its name now.
        for name in names where !engine.explain(Scenario(name)).isKnown {
            CLI.printError("error: \(Suggestions.unknown("scenario", name, among: all))")
            return ExitCode.failure
        }
        for name in names.isEmpty ? all : names { print(engine.explain(Scenario(name))) }
        return ExitCode.ok
    }

    /// ISO 8601 with or without fractional seconds, or seconds since 1970.
    static func parseTime(_ text: String) -> Date? {
        if let seconds = Double(text), seconds.isFinite { return Date(timeIntervalSince1970: seconds) }
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }
}

/// A clock that always reads one time.
struct FixedClock: RuleClock {
    let date: Date
    func now() -> Date { date }
}

/// What the commands that judge a state file (`explain`, `diff --state`, `state`) take, as the
/// engine does: the install's id and the device's zone, from the options or else from the state.
enum JudgedState {
    static let installID = Valued(
        "--install-id", value: "ID",
        help: "the install's id that bucket(\"salt\") and holdouts hash (default: the\nid the state holds)")
    static let timeZone = Valued(
        "--time-zone", value: "ZONE",
        help:
            "the device's time zone, an IANA name such as Europe/Paris (default:\nthe zone the state holds, else this machine's); times print in it"
    )

    /// The engine's options for the state `entries` (read from `path`) judged at `at`; prints a
    /// warning when `at` is earlier than the state's last record. Nil, after printing why, for
    /// an unknown zone (exit 64).
    static func options(_ parsed: ParsedOptions, state snapshot: StateSnapshot?, path: String, at: Date?, usage: String)
        -> RuleEngine.Options?
    {
        var options = RuleEngine.Options(logSubsystem: nil)
        if let value = parsed[timeZone] {
            guard let zone = TimeZone(identifier: value) else {
                _ = CLI.misuse("unknown time zone '\(value)'; use an IANA name such as Europe/Paris", usage: usage)
                return nil
            }
            options.timeZone = zone
        } else if let stored = snapshot?.timeZone, let zone = TimeZone(identifier: stored) {
            options.timeZone = zone
        }
        options.installID = parsed[installID]
        if let at, let snapshot, let last = lastRecord(snapshot), at.timeIntervalSince1970 < last {
            let zone = options.timeZone ?? TimeZone.current
            CLI.printError(
                "\(path): warning: --at \(LocalTimeText.iso8601(at, in: zone)) is earlier than the state's last "
                    + "record (\(LocalTimeText.iso8601(Date(timeIntervalSince1970: last), in: zone))): "
                    + "later times are read as just now")
        }
        return options
    }

    /// Warns when `engines`' rules place the install by its id but neither the state `entries`
    /// nor the options give one: the answers are then those of a new, random id.
    static func warnWithoutInstallID(
        _ engines: [RuleEngine], _ parsed: ParsedOptions, state: StateSnapshot?, path: String
    ) {
        guard parsed[installID] == nil, engines.contains(where: \.usesInstallID), state?.installID == nil else {
            return
        }
        CLI.printError(
            "\(path): warning: the state holds no install id: bucket() and holdouts are judged for a new, random "
                + "one; pass --install-id ID")
    }

    /// The latest time the state records: an event, an execution, a session's start, a to-do.
    static func lastRecord(_ state: StateSnapshot) -> Double? {
        var times: [Double] = state.streams.values.compactMap(\.last) + state.groups.values.compactMap(\.last)
        for view in state.scenarios.values { times += [view.events.last, view.executions.last].compactMap { $0 } }
        times += [state.session.sessionStart, state.session.versionStart].compactMap { $0 }
        times += state.todos.values.map(\.created)
        return times.max()
    }
}
