import Foundation
import RuleLang
import RuleRuntime

/// `rulec trigger --state FILE [--count N] RULES... EVENT [PROPERTY=VALUE...]`
enum TriggerCommand: Command {
    static let summary = "record an event into a state file (opened shared)"
    static let state = Valued("--state", value: "FILE", required: true, help: "the state file (required)")
    static let count = Valued("--count", value: "N", help: "how many times (1 to 1000000; default 1)")
    static let options = CommandOptions(
        name: "trigger",
        title: "rulec trigger: record an event into a state file, as an app would.",
        operands: "RULES... EVENT [PROPERTY=VALUE...]",
        about: """
            Records EVENT N times (default 1) at the current time into FILE, through the same
            store an app uses, opened shared: an app or its extensions may have the file open
            at the same time, and see the events at their next call. FILE is created when it
            does not exist. RULES (files or directories, checked together) are the app's rules:
            they say which scenarios count the event. For QA, and to drive processes from a shell.
            PROPERTY=VALUE operands after EVENT give the event's declared properties (language
            1.2), each of its declared type: an int, true or false, or any text for a string
            ('rulec trigger --state s.state app.rules purchase amount=999 plan=pro').
            """,
        options: [state, count],
        exitStatus: """
            Prints the event's count afterwards. When the rules declare events, an EVENT that no
            declaration or rule names is an error, with did-you-mean, and nothing is written;
            otherwise an event no scenario counts is recorded, with a warning. Exit status: 0
            recorded, 1 errors in the rules, an unknown event or a damaged or unwritable state
            file, 64 wrong usage.
            """)

    static func run(_ arguments: [String]) -> Int32 {
        let parsed = options.parse(arguments)
        if let exit = parsed.exit { return exit }
        let (statePath, operands) = (parsed[required: Self.state], parsed.operands)
        var count = 1
        if let value = parsed[Self.count] {
            guard let n = Int(value), (1...1_000_000).contains(n) else {
                return CLI.misuse("'--count' takes a whole number from 1 to 1000000, not '\(value)'", usage: usage)
            }
            count = n
        }
        // Trailing NAME=VALUE operands (that are not files) are the event's properties.
        var pairs: [String] = []
        var rest = operands[...]
        while let last = rest.last, last.contains("="), !FileManager.default.fileExists(atPath: last) {
            pairs.insert(last, at: 0)
            rest = rest.dropLast()
        }
        guard rest.count >= 2, let event = rest.last else {
            return CLI.misuse(rest.isEmpty ? "missing RULES and EVENT" : "missing EVENT", usage: usage)
        }
        guard let files = CLI.ruleFiles(Array(rest.dropLast()), usage: usage) else { return ExitCode.usage }
        let (sources, unreadable) = CLI.readSources(files)
        guard unreadable.isEmpty else { return ExitCode.failure }
        // A typo is refused before the state file is touched: once the rules declare their
        // events, a name that no declaration or rule knows (nor a former name) is an error, as
        // it is in rules and timelines. Without declarations it is recorded, with a warning.
        guard let probe = CLI.engine(sources, store: InMemoryStore(), clock: SystemClock(), statePath: statePath)
        else { return ExitCode.failure }
        let properties: [String: PropertyValue]
        switch Self.properties(pairs, of: event, in: probe.program) {
        case .success(let parsed): properties = parsed
        case .failure(let problem):
            CLI.printError("error: \(problem.message); nothing was written")
            return ExitCode.failure
        }
        probe.trigger(Event(event))
        if !probe.program.events.isEmpty,
            let unknown = probe.unknownNames.first(where: { $0.kind == .event && $0.name == event })
        {
            let message = Suggestions.unknown("event", event, suggestions: unknown.suggestions)
            CLI.printError("error: \(message) (the rules declare their events); nothing was written")
            return ExitCode.failure
        }
        let store = FileStore(url: URL(fileURLWithPath: statePath), options: .init(shared: true))
        guard let engine = CLI.engine(sources, store: store, clock: SystemClock(), statePath: statePath) else {
            return ExitCode.failure
        }
        for _ in 0..<count {
            if properties.isEmpty {
                engine.trigger(Event(event))
            } else {
                engine.trigger(Event(event), properties: properties)
            }
            if let error = engine.lastStoreError {
                CLI.printError("\(statePath): error: \(error)")
                return ExitCode.failure
            }
        }
        if let unknown = engine.unknownNames.first(where: { $0.name == event }) {
            let hint = unknown.suggestions.first.map { "; did you mean '\($0)'?" } ?? ""
            CLI.printError("warning: no scenario counts event '\(event)'" + hint)
        }
        print("\(event): \(engine.count(Event(event)))")
        return ExitCode.ok
    }

    struct PropertyProblem: Error {
        var message: String
    }

    /// `NAME=VALUE` operands as `event`'s declared properties: each a declared property of its
    /// type (an int, `true` or `false`, any text for a string).
    static func properties(_ pairs: [String], of event: String, in program: RuleProgram) -> Result<
        [String: PropertyValue], PropertyProblem
    > {
        guard !pairs.isEmpty else { return .success([:]) }
        let declared = program.properties[event] ?? []
        guard !declared.isEmpty else {
            return .failure(PropertyProblem(message: "event '\(event)' declares no properties"))
        }
        var result: [String: PropertyValue] = [:]
        for pair in pairs {
            let equals = pair.firstIndex(of: "=")!
            let (name, text) = (String(pair[..<equals]), String(pair[pair.index(after: equals)...]))
            guard let property = declared.first(where: { $0.name.text == name }), let type = property.type else {
                let names = declared.map { "'\($0.name.text)'" }.joined(separator: ", ")
                return .failure(
                    PropertyProblem(message: "event '\(event)' has no property '\(name)' (it has \(names))"))
            }
            let value: PropertyValue?
            switch type {
            case .int: value = Int64(text).map(PropertyValue.int)
            case .bool: value = text == "true" ? .bool(true) : text == "false" ? .bool(false) : nil
            case .string: value = .string(text)
            case .duration: value = nil
            }
            guard let value else {
                return .failure(PropertyProblem(message: "'\(text)' is no \(type.rawValue) for property '\(name)'"))
            }
            result[name] = value
        }
        return .success(result)
    }
}
