import Foundation
import RuleLang

/// Completion: what may be written at a position, read from the text before it (which may
/// not parse while it is being typed).
extension LSPFeatures {
    /// Where the cursor is, as far as completion cares.
    private struct Context {
        var inBody = false
        /// Where the body being written starts (just after its `<`).
        var bodyStart = 0
        /// Where the clause being written starts.
        var clauseStart = 0
        /// The function of each open parenthesis ("" for a plain one).
        var parentheses: [String] = []
        /// In a comment or a string: nothing to complete.
        var inText = false
    }

    func completion(at offset: Int) -> Any {
        let context = scan(to: offset)
        guard !context.inText else { return LSPFeatures.items([]) }
        let typed = min(offset, file.bytes.count)
        let language = program.files.first { $0.source.path == file.path }?.languageVersion ?? .initial
        guard context.inBody else {
            let line = file.text(min(file.lineRange(file.lineIndex(of: typed) + 1).lowerBound, typed)..<typed)
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if words.isEmpty || (words.count == 1 && words[0] == "}") {
                return LSPFeatures.items(declarationItems(language))
            }
            if words.count >= 2, words[0] == "param", line.hasSuffix(":") || line.hasSuffix(": ") {
                return LSPFeatures.items(ValueType.allCases.map { Self.item($0.rawValue, kind: 25, detail: "type") })
            }
            return LSPFeatures.items([])
        }
        let clause = file.text(context.clauseStart..<typed)
        let words = clause.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "," })
            .map(String.init)
        if let function = context.parentheses.last {
            guard let builtin = BuiltinFunction(rawValue: function) else {
                return LSPFeatures.items(expressionItems(language))
            }
            // Inside `f(`: its argument first, then (after a space) its scope.
            let inside = file.text((LSPFeatures.lastOpen(file, before: typed) ?? typed)..<typed)
            let written = inside.split(whereSeparator: { $0 == " " || $0 == "\t" })
            // `count(RateApp: `: a scenario's outcomes (language 1.2).
            if language >= Construct.outcomes.version, written.count <= 2, inside.contains(":"),
                !(written.count == 2 && inside.hasSuffix(" ") && Outcome(rawValue: String(written[1])) != nil)
            {
                return LSPFeatures.items(outcomeItems)
            }
            // `count(purchase where `: the event's properties (language 1.2).
            if written.count >= 2, written[1] == "where", builtin.argument == .stream || builtin.argument == .property {
                // `sum(purchase.amount where `: the event is before the dot.
                let event = String(written[0].split(separator: ".").first ?? written[0])
                return LSPFeatures.items(
                    filterItems(properties(of: [event]), after: inside, scopes: builtin.takesScope))
            }
            if written.isEmpty {
                switch builtin.argument {
                case .stream:
                    var items = eventItems()
                    if language >= Construct.outcomes.version {
                        items += EngineStream.words.map { Self.item($0, kind: 23, detail: "the engine's stream") }
                        if builtin != .activeDays {
                            items += program.scenarios.map {
                                Self.item($0.name + ": ", kind: 7, detail: "its outcomes")
                            }
                        }
                    }
                    return LSPFeatures.items(items)
                case .scenarioOrGroup: return LSPFeatures.items(scenarioAndGroupItems())
                case .property:
                    // `sum(`: each event's int properties, `purchase.amount`.
                    var items: [JSONObject] = []
                    for event in program.events {
                        for property in program.properties[event.text] ?? [] where property.type == .int {
                            items.append(
                                Self.item(event.text + "." + property.name.text, kind: 10, detail: "int property"))
                        }
                    }
                    return LSPFeatures.items(items)
                case .todo, .salt: return LSPFeatures.items([])
                }
            }
            guard written.count == 1, inside.hasSuffix(" ") else { return LSPFeatures.items([]) }
            let filters =
                builtin.argument == .stream && !properties(of: [String(written[0])]).isEmpty ? [whereItem] : []
            if builtin == .activeDays { return LSPFeatures.items(filters + [withinItem]) }
            return LSPFeatures.items(filters + (builtin.takesScope ? scopeItems : []))
        }
        guard let keyword = words.first else { return LSPFeatures.items(Self.clauseItems(language)) }
        if words.count == 1 && !clause.hasSuffix(" ") { return LSPFeatures.items(Self.clauseItems(language)) }
        switch keyword {
        case "on":
            let listed = Set(words.dropFirst())
            return LSPFeatures.items(eventItems().filter { !listed.contains($0["label"] as? String ?? "") })
        case "when":
            return LSPFeatures.items(expressionItems(language))
        case "min_events" where words.count >= 3 && words[2] == "where":
            // `min_events 3 where `: the properties of the scenario's `on` events.
            return LSPFeatures.items(filterItems(properties(of: onEvents(context, before: typed)), after: clause))
        case "min_events", "max_events", "max_exec":
            guard words.count == 2 && clause.hasSuffix(" ") else { return LSPFeatures.items([]) }
            let filters =
                keyword == "min_events" && !properties(of: onEvents(context, before: typed)).isEmpty ? [whereItem] : []
            let calendar = keyword == "max_exec" && language >= Construct.calendarCaps.version ? calendarItems : []
            return LSPFeatures.items(filters + scopeItems + calendar)
        case "min_days":
            return LSPFeatures.items(words.count == 2 && clause.hasSuffix(" ") ? [withinItem] : [])
        case "after" where language >= Construct.outcomes.version:
            // `after OUTCOME WAIT`: the outcome, then how long it waits.
            guard clause.hasSuffix(" ") else { return LSPFeatures.items(words.count == 2 ? outcomeItems : []) }
            if words.count == 1 { return LSPFeatures.items(outcomeItems) }
            guard words.count == 2 else { return LSPFeatures.items([]) }
            return LSPFeatures.items([
                Self.item("next version", kind: 14, detail: "none in the current version", snippet: "next version"),
                Self.item("next session", kind: 14, detail: "none in the current session", snippet: "next session"),
                Self.item("never", kind: 14, detail: "none ever", snippet: "never"),
                Self.item("7d", kind: 14, detail: "at least this long since the last", snippet: "${1:7d}"),
            ])
        default:
            return LSPFeatures.items([])
        }
    }

    /// Reads the file from its start to `offset`: bodies, clauses, parentheses, comments, strings.
    private func scan(to offset: Int) -> Context {
        var context = Context()
        let bytes = file.bytes
        var index = 0
        let end = min(offset, bytes.count)
        while index < end {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "#"):
                while index < bytes.count && bytes[index] != UInt8(ascii: "\n") { index += 1 }
                if index >= end { context.inText = true }
                continue
            case UInt8(ascii: "\""):
                index += 1
                while index < bytes.count && bytes[index] != UInt8(ascii: "\"") && bytes[index] != UInt8(ascii: "\n") {
                    index += 1
                }
                if index >= end { context.inText = true }
            case UInt8(ascii: "<") where !context.inBody:
                context = Context(inBody: true, bodyStart: index + 1, clauseStart: index + 1)
            case UInt8(ascii: ">") where context.inBody && context.parentheses.isEmpty:
                context.inBody = false
            case UInt8(ascii: ";") where context.inBody && context.parentheses.isEmpty:
                context.clauseStart = index + 1
            case UInt8(ascii: "(") where context.inBody:
                context.parentheses.append(LSPFeatures.word(in: file, at: index).0)
            case UInt8(ascii: ")") where context.inBody:
                _ = context.parentheses.popLast()
            default: break
            }
            index += 1
        }
        return context
    }

    /// Just after the last `(` before `offset`.
    private static func lastOpen(_ file: SourceFile, before offset: Int) -> Int? {
        var index = offset - 1
        while index >= 0 {
            if file.bytes[index] == UInt8(ascii: "(") { return index + 1 }
            index -= 1
        }
        return nil
    }

    // MARK: - Items

    private static func items(_ items: [JSONObject]) -> JSONObject { ["isIncomplete": false, "items": items] }

    private static func item(_ label: String, kind: Int, detail: String, snippet: String? = nil) -> JSONObject {
        var object: JSONObject = ["label": label, "kind": kind, "detail": detail]
        if let snippet {
            object["insertText"] = snippet
            object["insertTextFormat"] = 2
        }
        if let help = LSPFeatures.keywordHelp[label] {
            object["documentation"] = ["kind": "markdown", "value": help] as JSONObject
        }
        return object
    }

    private func declarationItems(_ language: LanguageVersion) -> [JSONObject] {
        var items = [
            Self.item("scenario", kind: 14, detail: "declaration", snippet: "scenario ${1:Name} < ${2:min_events 1} >"),
            Self.item(
                "group", kind: 14, detail: "declaration",
                snippet: "group ${1:Name} < ${2:max_exec 1 per session} > {\n\t$0\n}"),
            Self.item(
                "param", kind: 14, detail: "declaration", snippet: "param ${1:name}: ${2|bool,int,string,duration|}"),
            Self.item("event", kind: 14, detail: "declaration", snippet: "event ${1:name}"),
        ]
        if language >= Construct.retired.version {
            items.append(Self.item("retired", kind: 14, detail: "declaration", snippet: "retired scenario ${1:Name}"))
        }
        return items
    }

    /// The clauses a body of a file of `language` may hold (`ClauseKind.keywords`, each from
    /// its version: `ClauseChecklistTests` holds them together).
    static func clauseItems(_ language: LanguageVersion) -> [JSONObject] {
        var items = [
            Self.item("min_events", kind: 15, detail: "min_events N [scope]", snippet: "min_events ${1:5}"),
            Self.item("max_events", kind: 15, detail: "max_events N [scope]", snippet: "max_events ${1:10}"),
            Self.item("max_exec", kind: 15, detail: "max_exec N [scope]", snippet: "max_exec ${1:1}"),
            Self.item("since_first", kind: 15, detail: "since_first D", snippet: "since_first ${1:7d}"),
            Self.item("since_last", kind: 15, detail: "since_last D", snippet: "since_last ${1:1d}"),
            Self.item("between", kind: 15, detail: "between D", snippet: "between ${1:2d}"),
            Self.item("on", kind: 15, detail: "on EVENT, ...", snippet: "on ${1:event}"),
            Self.item("when", kind: 15, detail: "when EXPR", snippet: "when ${1:condition}"),
            Self.item("priority", kind: 15, detail: "priority N", snippet: "priority ${1:1}"),
        ]
        if language >= Construct.days.version {
            items.append(
                Self.item(
                    "min_days", kind: 15, detail: "min_days N within D", snippet: "min_days ${1:3} within ${2:7d}"))
        }
        if language >= Construct.outcomes.version {
            items.append(
                Self.item(
                    "after", kind: 15, detail: "after OUTCOME D|next version|next session|never",
                    snippet: "after ${1|declined,later,accepted,dismissed,unknown|} ${2:next version}"))
        }
        if language >= Construct.localTime.version {
            items += [
                Self.item(
                    "during", kind: 15, detail: "[not] during HH:MM-HH:MM", snippet: "during ${1:09:00}-${2:21:00}"),
                Self.item("days", kind: 15, detail: "days DAY, ...", snippet: "days ${1:weekdays}"),
                Self.item("from", kind: 15, detail: "from YYYY-MM-DD", snippet: "from ${1:2026-12-01}"),
                Self.item("until", kind: 15, detail: "until YYYY-MM-DD", snippet: "until ${1:2026-12-24}"),
            ]
        }
        if language >= Construct.buckets.version {
            items.append(
                Self.item("holdout", kind: 15, detail: "holdout N% \"SALT\"", snippet: "holdout ${1:10}% \"${2:salt}\"")
            )
        }
        if language >= Construct.contexts.version {
            items.append(Self.item("in", kind: 15, detail: "[not] in CONTEXT, ...", snippet: "in ${1:home}"))
        }
        if language >= Construct.countedExposure.version {
            items += [
                Self.item(
                    "counts", kind: 15, detail: "counts after D visible", snippet: "counts after ${1:3s} visible"),
                Self.item("defer", kind: 15, detail: "defer up to D", snippet: "defer up to ${1:30m}"),
            ]
        }
        return items
    }

    private var outcomeItems: [JSONObject] { Outcome.names.map { Self.item($0, kind: 20, detail: "outcome") } }

    private var scopeItems: [JSONObject] {
        [
            Self.item("per session", kind: 14, detail: "scope", snippet: "per session"),
            Self.item("per version", kind: 14, detail: "scope", snippet: "per version"),
            Self.item("per install", kind: 14, detail: "scope", snippet: "per install"),
            withinItem,
        ]
    }

    /// `max_exec`'s scopes on the local calendar (language 1.2).
    private var calendarItems: [JSONObject] {
        [
            Self.item("per day", kind: 14, detail: "scope: the local day", snippet: "per day"),
            Self.item("per week", kind: 14, detail: "scope: the local ISO week, from Monday", snippet: "per week"),
        ]
    }

    private var whereItem: JSONObject {
        Self.item(
            "where", kind: 14, detail: "where FILTER: the triggers whose properties pass", snippet: "where ${1:filter}")
    }

    /// The properties `events` declare (each name once, with its type).
    private func properties(of events: [String]) -> [(name: String, type: String)] {
        var found: [(name: String, type: String)] = []
        for event in events {
            for property in program.properties[event] ?? []
            where !found.contains(where: { $0.name == property.name.text }) {
                found.append((property.name.text, property.type?.rawValue ?? "?"))
            }
        }
        return found
    }

    /// The events of the `on` clause of the body being written, before `offset`.
    private func onEvents(_ context: Context, before offset: Int) -> [String] {
        let body = file.text(context.bodyStart..<offset)
        for clause in body.split(separator: ";") {
            let words = clause.split(whereSeparator: {
                $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == ","
            })
            if words.first == "on" {
                return words.dropFirst().map { String($0).replacingOccurrences(of: "\"", with: "") }
            }
        }
        return []
    }

    /// In a filter written so far as `text`: the properties after `where`, `and`, `or`, `not` or
    /// `(`; after a comparison, `and`, `or` and, in a call that takes one, the scopes.
    private func filterItems(_ properties: [(name: String, type: String)], after text: String, scopes: Bool = true)
        -> [JSONObject]
    {
        var words = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }).map(String.init)
        if !text.hasSuffix(" "), !text.hasSuffix("("), !words.isEmpty { words.removeLast() }  // a word being typed
        let last = words.last ?? ""
        if ["where", "and", "or", "not"].contains(last) || last.hasSuffix("(") || text.hasSuffix("(") {
            return properties.map { Self.item($0.name, kind: 10, detail: "property: \($0.type)") }
        }
        guard text.hasSuffix(" "), words.count >= 2 else { return [] }
        if let property = properties.first(where: { $0.name == last }), property.type != "bool" {
            let operators = property.type == "int" ? ["==", "!=", ">=", "<="] : ["==", "!="]
            return operators.map { Self.item($0, kind: 24, detail: "compare the \(property.type)") }
        }
        let joins = [Self.item("and", kind: 14, detail: "both"), Self.item("or", kind: 14, detail: "either")]
        return joins + (scopes ? scopeItems : [])
    }

    private var withinItem: JSONObject { Self.item("within", kind: 14, detail: "within D", snippet: "within ${1:7d}") }

    private func eventItems() -> [JSONObject] {
        program.events.map { Self.item($0.text, kind: 23, detail: "event") }
    }

    private func scenarioAndGroupItems() -> [JSONObject] {
        program.scenarios.map { Self.item($0.name, kind: 7, detail: "scenario") }
            + program.groups.map { Self.item($0.name.text, kind: 9, detail: "group") }
    }

    private func expressionItems(_ language: LanguageVersion) -> [JSONObject] {
        var items = program.params.map {
            Self.item($0.name.text, kind: 6, detail: "param: \($0.type?.rawValue ?? "?")")
        }
        for function in BuiltinFunction.allCases {
            if function == .activeDays && language < Construct.days.version { continue }
            if function == .bucket && language < Construct.buckets.version { continue }
            let argument = function.argument == .scenarioOrGroup ? "scenario" : function == .todo ? "name" : "event"
            let scope = function == .activeDays ? " within ${2:7d}" : ""
            let snippet =
                function == .bucket ? "bucket(\"${1:salt}\")" : "\(function.name)(${1:\(argument)}\(scope))"
            items.append(Self.item(function.name, kind: 3, detail: "function", snippet: snippet))
        }
        items += BuiltinValue.allCases.map { Self.item($0.rawValue, kind: 21, detail: "bool") }
        items += ["true", "false"].map { Self.item($0, kind: 21, detail: "bool") }
        return items
    }
}
