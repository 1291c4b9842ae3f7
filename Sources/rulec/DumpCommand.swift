import Foundation
import RuleLang

/// `rulec dump --json FILE|DIR ...`: the checked program as one JSON document for other tools.
enum DumpCommand: Command {
    static let summary = "the checked program as one JSON document"
    /// The document's shape; bumped on any change that is not an addition.
    static let formatVersion = 1
    static let json = Flag("--json", required: true, help: "JSON, the only format (required)")
    static let options = CommandOptions(
        name: "dump",
        title: "rulec dump: the checked program as one JSON document, for other tools.",
        operands: "FILE|DIR ...",
        about: """
            Checks the files as one program (as 'rulec check' does; errors stop it, with the
            usual diagnostics on standard error) and prints, with keys sorted:
              version      \(formatVersion): the shape below; additions keep it, changes bump it
              files        the files, in order
              languages    by file: the language version it declares (1.0 when none)
              events       declared events: name, range
              params       name, type, default (an expression or null), range
              groups       name, clauses, members (scenario names), range
              scenarios    name, group (or null), clauses, range
            A clause has 'keyword' and 'range', and by keyword: 'value' and 'scope' (count
            clauses), 'seconds' (time clauses), 'events' (on), 'condition' (when), 'value'
            (priority), 'outcome' and 'seconds' or 'scope' (after: 'next version' is the
            version scope, 'never' the install scope), 'from', 'to' and 'outside' (during),
            'days' (days), 'date' (from, until), 'value' and 'salt' (holdout), 'contexts' and
            'outside' (in: 'not in' is outside), 'seconds' (counts, defer). The engine's own streams are named
            with '@': 'crash' is "@crash". A scope is {"kind": "install"|"version"|"session"|"day"|"week"} or {"kind":
            "within", "seconds": N}. Every event, param, group and scenario has 'was': its
            former names (newest first, each with its range; empty when renamed never). An expression has 'kind' (integer, duration, string,
            bool, param, builtin, not, and, or, compare, call, parenthesized), 'type' (bool,
            int, string, duration), 'range', and its parts ('value', 'name', 'operator',
            'operand', 'left', 'right', 'function', 'argument', 'scope', 'outcome' (null unless the call reads a scenario's
            outcomes), 'inner'). A range is
            {"file": PATH, "start": "LINE:COL", "end": "LINE:COL"}, 1-based, columns in characters.
            """,
        options: [json],
        exitStatus: "Exit status: 0 printed, 1 errors in the rules, 64 wrong usage.")

    static func run(_ arguments: [String]) -> Int32 {
        let parsed = options.parse(arguments)
        if let exit = parsed.exit { return exit }
        let paths = parsed.operands
        if paths.isEmpty { return CLI.misuse("missing FILE or DIR to dump", usage: usage) }
        guard let files = CLI.ruleFiles(paths, usage: usage) else { return ExitCode.usage }
        let (sources, unreadable) = CLI.readSources(files)
        let result = RuleCompiler.check(sources)
        if result.hasErrors || !unreadable.isEmpty {
            let rendered = DiagnosticRenderer(colored: CLI.stderrIsColorTerminal).render(result.diagnostics)
            FileHandle.standardError.write(Data(rendered.utf8))
            return ExitCode.failure
        }
        let document = Dump(program: result.program).document()
        guard
            let data = try? JSONSerialization.data(
                withJSONObject: document, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes])
        else { return ExitCode.failure }
        print(String(decoding: data, as: UTF8.self))
        return ExitCode.ok
    }
}

/// Builds the JSON objects of a checked program.
struct Dump {
    let program: RuleProgram
    let paramTypes: [String: ValueType]

    init(program: RuleProgram) {
        self.program = program
        var types: [String: ValueType] = [:]
        for param in program.params { if let type = param.type { types[param.name.text] = type } }
        paramTypes = types
    }

    func document() -> [String: Any] {
        var events: [[String: Any]] = []
        var params: [[String: Any]] = []
        var groups: [[String: Any]] = []
        var scenarios: [[String: Any]] = []
        for file in program.files {
            let source = file.source
            func scenario(_ decl: ScenarioDecl, group: String?) -> [String: Any] {
                [
                    "name": decl.name.text, "group": group ?? NSNull(), "was": former(decl.formerNames, source),
                    "clauses": decl.clauses.map { clause($0, in: decl.clauses, source) },
                    "range": range(decl.range, source),
                ]
            }
            for declaration in file.declarations {
                switch declaration {
                case .event(let decl):
                    for (position, name) in decl.names.enumerated() {
                        let was = position < decl.formerNames.count ? decl.formerNames[position] : []
                        let declared = position < decl.properties.count ? decl.properties[position] : []
                        events.append([
                            "name": name.text, "range": range(name.range, source), "was": former(was, source),
                            "properties": declared.map {
                                [
                                    "name": $0.name.text, "type": $0.type.map { $0.rawValue as Any } ?? NSNull(),
                                    "range": range($0.range, source),
                                ] as [String: Any]
                            },
                        ])
                    }
                case .param(let decl):
                    params.append([
                        "name": decl.name.text, "type": decl.type?.rawValue ?? NSNull(),
                        "was": former(decl.formerNames, source),
                        "default": decl.defaultValue.map { expression($0, source) } ?? NSNull(),
                        "range": range(decl.range, source),
                    ])
                case .group(let decl):
                    groups.append([
                        "name": decl.name.text, "clauses": decl.clauses.map { clause($0, in: decl.clauses, source) },
                        "was": former(decl.formerNames, source), "members": decl.members.map(\.name.text),
                        "range": range(decl.range, source),
                    ])
                    scenarios += decl.members.map { scenario($0, group: decl.name.text) }
                case .scenario(let decl):
                    scenarios.append(scenario(decl, group: nil))
                }
            }
        }
        return [
            "version": DumpCommand.formatVersion, "files": program.files.map(\.source.path), "events": events,
            "params": params, "groups": groups, "scenarios": scenarios,
            "languages": Dictionary(
                program.files.map { ($0.source.path, $0.languageVersion.description) }, uniquingKeysWith: { a, _ in a }),
        ]
    }

    /// Former names, each with its range.
    func former(_ names: [Name], _ file: SourceFile) -> [[String: Any]] {
        names.map { ["name": $0.text, "range": range($0.range, file)] }
    }

    func range(_ range: SourceRange, _ file: SourceFile) -> [String: Any] {
        [
            "file": file.path, "start": file.location(of: range.lowerBound).description,
            "end": file.location(of: range.upperBound).description,
        ]
    }

    func scope(_ kind: ScopeKind) -> [String: Any] {
        switch kind {
        case .install: return ["kind": "install"]
        case .version: return ["kind": "version"]
        case .session: return ["kind": "session"]
        case .within(let seconds): return ["kind": "within", "seconds": seconds]
        case .day: return ["kind": "day"]
        case .week: return ["kind": "week"]
        }
    }

    /// `clause` of the body `body` (whose `on` events a filtered `min_events` reads).
    func clause(_ clause: Clause, in body: [Clause], _ file: SourceFile) -> [String: Any] {
        var object: [String: Any] = ["keyword": clause.kind.keyword, "range": range(clause.range, file)]
        switch clause.kind {
        case .minEvents(let n, let s), .maxEvents(let n, let s), .maxExec(let n, let s):
            object["value"] = n.value
            object["scope"] = scope(s.kind)
        case .minEventsWhere(let n, let filter, let s):
            object["value"] = n.value
            object["scope"] = scope(s.kind)
            var types: [String: ValueType] = [:]
            for case .on(let names) in body.map(\.kind) {
                for name in names {
                    for p in program.properties[name.text] ?? [] { if let type = p.type { types[p.name.text] = type } }
                }
            }
            object["filter"] = expression(filter, file, properties: types)
        case .sinceFirst(let d), .sinceLast(let d), .between(let d): object["seconds"] = d.seconds
        case .growingBetween(let gaps): object["gaps"] = gaps.map(\.seconds)
        case .minDays(let n, let d):
            object["value"] = n.value
            object["seconds"] = d.seconds
        case .on(let names): object["events"] = names.map(\.text)
        case .when(let expr): object["condition"] = expression(expr, file)
        case .priority(let n): object["value"] = n.value
        case .after(let outcome, let wait):
            object["outcome"] = outcome.text
            switch wait {
            case .duration(let d): object["seconds"] = d.seconds
            case .next(let s, _): object["scope"] = scope(s)
            case .never: object["scope"] = scope(.install)
            }
        case .during(let from, let to, let outside):
            object["from"] = from.text
            object["to"] = to.text
            object["outside"] = outside
        case .days(let names): object["days"] = names.map(\.text)
        case .from(let date), .until(let date): object["date"] = date.text
        case .holdout(let share, let salt):
            object["value"] = share.value
            object["salt"] = salt.text
        case .contexts(let names, let outside):
            object["contexts"] = names.map(\.text)
            object["outside"] = outside
        case .countsAfter(let d), .deferral(let d): object["seconds"] = d.seconds
        }
        return object
    }

    /// An expression with its type (the program checked clean, so every node has one).
    func expression(_ expr: Expr, _ file: SourceFile, properties: [String: ValueType]? = nil) -> [String: Any] {
        var object: [String: Any] = ["range": range(expr.range, file)]
        switch expr.kind {
        case .integer(let value): object.merge(["kind": "integer", "value": value, "type": "int"]) { $1 }
        case .duration(let seconds): object.merge(["kind": "duration", "value": seconds, "type": "duration"]) { $1 }
        case .string(let text): object.merge(["kind": "string", "value": text, "type": "string"]) { $1 }
        case .bool(let flag): object.merge(["kind": "bool", "value": flag, "type": "bool"]) { $1 }
        case .name(let name):
            if let properties {
                // In a filter: a property of the event.
                object.merge(["kind": "property", "name": name, "type": properties[name]?.rawValue ?? "bool"]) { $1 }
            } else if let type = paramTypes[name] {
                object.merge(["kind": "param", "name": name, "type": type.rawValue]) { $1 }
            } else {
                let type = BuiltinValue(rawValue: name)?.type.rawValue ?? "bool"
                object.merge(["kind": "builtin", "name": name, "type": type]) { $1 }
            }
        case .unary(_, let operand):
            object.merge(["kind": "not", "operand": expression(operand, file, properties: properties), "type": "bool"])
            { $1 }
        case .binary(let op, let left, let right):
            let kind = op == .and ? "and" : op == .or ? "or" : "compare"
            object.merge([
                "kind": kind, "operator": op.rawValue, "left": expression(left, file, properties: properties),
                "right": expression(right, file, properties: properties), "type": "bool",
            ]) { $1 }
        case .call(let function, let argument, let callScope, let outcome, let filter, let property):
            let types = Dictionary(
                (program.properties[argument.text] ?? []).compactMap { p in p.type.map { (p.name.text, $0) } },
                uniquingKeysWith: { a, _ in a })
            let summed: Any = property.map { $0.text as Any } ?? NSNull()
            object["property"] = summed
            object.merge([
                "filter": filter.map { expression($0, file, properties: types) as Any } ?? NSNull(),
                "kind": "call", "function": function.text, "argument": argument.text,
                "scope": callScope.map { scope($0.kind) } ?? NSNull(),
                "outcome": outcome.map { $0.text as Any } ?? NSNull(),
                "type": BuiltinFunction(rawValue: function.text)?.resultType.rawValue ?? "bool",
            ]) { $1 }
        case .parenthesized(let inner):
            let dumped = expression(inner, file, properties: properties)
            object.merge(["kind": "parenthesized", "inner": dumped, "type": dumped["type"] ?? "bool"]) { $1 }
        case .invalid: object["kind"] = "invalid"
        }
        return object
    }
}
