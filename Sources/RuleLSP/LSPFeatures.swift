import Foundation
import RuleLang
import RuleTools

/// The answers of `rulec lsp` about one file of a checked workspace.
struct LSPFeatures {
    let analysis: LSPWorkspace.Analysis
    let file: SourceFile

    var names: NameIndex { analysis.names }
    var program: RuleProgram { analysis.result.program }

    // MARK: - Hover

    func hover(at offset: Int) -> Any {
        if let name = names.occurrence(in: file, at: offset) {
            return hoverResult(describe(name), name.range)
        }
        let (word, range) = LSPFeatures.word(in: file, at: offset)
        if let text = LSPFeatures.keywordHelp[word] { return hoverResult("`\(word)`: " + text, range) }
        return NSNull()
    }

    private func hoverResult(_ markdown: String, _ range: SourceRange) -> JSONObject {
        [
            "contents": ["kind": "markdown", "value": markdown] as JSONObject,
            "range": LSPPosition.range(in: file, range),
        ]
    }

    private func describe(_ name: NameOccurrence) -> String {
        let declaration = names.declaration(of: name)
        if let current = name.formerOf {
            return "former name of \(name.kind.rawValue) **\(current)**: the history stored under "
                + "'\(name.text)' moves to '\(current)' (language 1.1)"
        }
        switch declaration?.kind ?? name.kind {
        case .scenario:
            guard let info = program.scenarios.first(where: { $0.name == name.text }) else { break }
            var text = "scenario **\(info.name)**"
            if let group = info.group { text += " (group \(group))" }
            return text + ": " + LSPFeatures.plainWords(info.decl.clauses, info.file)
        case .group:
            guard let group = program.groups.first(where: { $0.name.text == name.text }) else { break }
            let members = group.members.map(\.name.text).joined(separator: ", ")
            let budget = LSPFeatures.plainWords(group.clauses, declaration?.file ?? file)
            return "group **\(group.name.text)**: \(budget)\n\nscenarios: \(members.isEmpty ? "none" : members)"
        case .param:
            guard let param = program.params.first(where: { $0.name.text == name.text }),
                let place = declaration
            else { break }
            return "`\(place.file.text(param.range))`" + usedBy(name)
        case .event:
            if let place = declaration {
                // Its properties, when it declares any (language 1.2): what a filter may read.
                let properties = Printer.properties(program.properties[name.text] ?? [])
                return
                    "event **\(name.text)**\(properties.isEmpty ? "" : "`\(properties)`"), declared at \(place.file.path):\(place.file.location(of: place.range.lowerBound))"
                    + usedBy(name)
            }
            return "event **\(name.text)** (not declared with `event`)" + usedBy(name)
        case .function:
            // `since_first(x)` the function, not the clause of that name.
            if let help = LSPFeatures.keywordHelp[name.text + "()"] ?? LSPFeatures.keywordHelp[name.text] {
                return "`\(name.text)`: " + help
            }
        case .todo:
            return "to-do **\(name.text)**: true while it is pending (`toDo`, `markDone`)"
        }
        return "**\(name.text)**: not declared in the workspace"
    }

    private func usedBy(_ name: NameOccurrence) -> String {
        let owners = names.references(of: name).compactMap { $0.isDeclaration ? nil : $0.owner }
        var seen = Set<String>()
        let unique = owners.filter { seen.insert($0).inserted }
        return unique.isEmpty ? "\n\nused by no scenario" : "\n\nused by: " + unique.joined(separator: ", ")
    }

    /// A body's clauses in plain words: "at least 5 events; the first at least 7d ago; ...".
    static func plainWords(_ clauses: [Clause], _ file: SourceFile) -> String {
        func scope(_ scope: Scope) -> String {
            switch scope.kind {
            case .install: return ""
            case .version: return " in this version"
            case .session: return " in this session"
            case .within(let seconds): return " in the last " + DurationText.format(seconds)
            case .day: return " today (the local day)"
            case .week: return " this week (the local ISO week, from Monday)"
            }
        }
        var parts: [String] = []
        for clause in clauses {
            switch clause.kind {
            case .minEvents(let n, let s): parts.append("at least \(n.value) events" + scope(s))
            case .minEventsWhere(let n, let filter, let s):
                parts.append("at least \(n.value) events where \(Printer.expression(filter))" + scope(s))
            case .maxEvents(let n, let s): parts.append("at most \(n.value) events" + scope(s))
            case .maxExec(let n, let s): parts.append("at most \(n.value) executions" + scope(s))
            case .sinceFirst(let d): parts.append("the first event at least \(file.text(d.range)) ago")
            case .sinceLast(let d): parts.append("the last event at least \(file.text(d.range)) ago")
            case .between(let d): parts.append("executions at least \(file.text(d.range)) apart")
            case .growingBetween(let list):
                parts.append("executions " + list.map { file.text($0.range) }.joined(separator: ", then ") + " apart")
            case .on(let list): parts.append("counting " + list.map(\.text).joined(separator: ", "))
            case .when(let expr): parts.append("when " + file.text(expr.range))
            case .priority(let n): parts.append("priority \(n.value)")
            case .minDays(let n, let d):
                parts.append("events on at least \(n.value) days of the last \(file.text(d.range))")
            case .after(let outcome, let wait):
                switch wait {
                case .duration(let d): parts.append("at least \(file.text(d.range)) after the last '\(outcome.text)'")
                case .next(let scope, _):
                    parts.append("no '\(outcome.text)' this \(scope == .session ? "session" : "version")")
                case .never: parts.append("never after '\(outcome.text)'")
                }
            case .during(let from, let to, let outside):
                parts.append((outside ? "outside" : "between") + " \(from.text) and \(to.text) local time")
            case .days(let names): parts.append("on " + names.map(\.text).joined(separator: ", ") + " (local)")
            case .from(let date): parts.append("from \(date.text) (local)")
            case .until(let date): parts.append("until the end of \(date.text) (local)")
            case .holdout(let share, let salt):
                parts.append("\(share.value)% of installs held out (salt \"\(salt.text)\")")
            case .contexts(let names, let outside):
                parts.append((outside ? "never in " : "only in ") + names.map(\.text).joined(separator: ", "))
            case .countsAfter(let d): parts.append("counted once on screen for \(file.text(d.range))")
            case .deferral(let d): parts.append("kept for up to \(file.text(d.range)) when a context or window refuses")
            }
        }
        return parts.isEmpty ? "no conditions: runs whenever asked" : parts.joined(separator: "; ")
    }

    /// What each keyword means, in grammar.md's words, short.
    static let keywordHelp: [String: String] = [
        "min_events": "passes when the events in scope are at least N (`min_events N [scope]`).",
        "max_events": "passes when the events in scope are at most N (`max_events N [scope]`).",
        "max_exec":
            "passes when the executions in scope are fewer than N: at most N (`max_exec N [scope]`); `per day` and `per week` count on the local calendar (language 1.2).",
        "since_first": "passes when the first counted event is at least D old; fails when there is none.",
        "since_last": "passes when the last counted event is at least D old, or there is none.",
        "after":
            "holds the scenario back after an outcome of its own: `after later 3d` (at least 3d since the last), "
            + "`after declined next version` (none this version), `after accepted never` (none ever). Language 1.2.",
        "between":
            "passes when the last execution is at least D old; `between 1d, 3d, 7d` grows the gap after each execution (language 1.1).",
        "on": "which streams the scenario counts (default: the stream named like the scenario).",
        "during":
            "passes in local hours: `during 09:00-21:00` (start included, end excluded; across midnight when the end is earlier), `not during 22:00-08:00` the rest of the day. Language 1.2.",
        "days":
            "passes on local days of the week: `days sat, sun`, `days mon-thu`, `days weekdays`, `days weekend`. Language 1.2.",
        "from": "passes from local midnight starting the date on: `from 2026-12-01`. Language 1.2.",
        "until": "passes up to the end of the local date: `until 2026-12-24`. Language 1.2.",
        "holdout":
            "`holdout 10% \"salt\"`: installs in buckets 0-9 of the salt are the control arm: never shown, an exposure recorded each time it would have shown. Language 1.2.",
        "in":
            "`in home, feed`: passes only while the app is in one of these contexts; `not in checkout, pin`: never while it is in one of them. The app says where the user is (`enter`, `leave`); contexts are never stored. Language 1.3.",
        "counts":
            "`counts after 3s visible`: a presentation counts (its execution and its group's recorded) only once it has been on screen 3s, summed across `hidden`/`visible` and paused in the background; recorded at the time reached, never by a crash, a finish or an expiry before it. Language 1.3.",
        "defer":
            "`defer up to 30m`: a call refused only by a context or a local window keeps the wish 30m; while it lasts the scenario comes first in `executeNext`, every clause judged anew. Language 1.3.",
        "when": "passes when the expression is true.",
        "priority": "orders `executeNext` (default 0).",
        "min_days":
            "passes when the counted streams had events on at least N distinct local days among the last D (language 1.1).",
        "per": "a scope: `per install` (default), `per version`, `per session`.",
        "within": "a sliding window: times whose age is less than D.",
        "scenario": "declares a scenario: `scenario NAME < clause; ... >`.",
        "group": "declares a group whose clauses budget its scenarios: `group NAME < ... > { scenario ... }`.",
        "param": "declares a parameter the app sets: `param NAME: type [= default]`.",
        "event": "declares event names, so that a misspelt one in `on` is an error.",
        "was": "a former name: the history under it moves to the new name (language 1.1).",
        "count": "`count(EVENT [scope])`: the events in scope (an int).",
        "executions": "`executions(SCENARIO|GROUP [scope])`: the executions in scope (an int).",
        "since_first()": "`since_first(EVENT)`: the age of the first event (a duration).",
        "since_last()": "`since_last(EVENT)`: the age of the last event (a duration).",
        "todo": "`todo(NAME)`: true while the to-do is pending.",
        "bucket":
            "`bucket(\"salt\")`: the install's stable bucket for the salt, 0 to 99 (`bucket(\"paywall\") < 10` is 10% of installs). Language 1.2.",
        "active_days":
            "`active_days(EVENT within D)`: distinct local days with an event among the last D (language 1.1).",
        "sum":
            "`sum(EVENT.PROPERTY [where FILTER] [scope])`: an int property added up over the event's triggers (language 1.2).",
        "upgraded": "true when this session's version differs from the first version the state saw.",
    ]

    /// The identifier at (or just before) `offset`, and its range.
    static func word(in file: SourceFile, at offset: Int) -> (String, SourceRange) {
        func isWord(_ byte: UInt8) -> Bool {
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x5F
        }
        let bytes = file.bytes
        var start = min(max(offset, 0), bytes.count)
        var end = start
        while start > 0 && isWord(bytes[start - 1]) { start -= 1 }
        while end < bytes.count && isWord(bytes[end]) { end += 1 }
        return (file.text(start..<end), start..<end)
    }

    // MARK: - Definition, references, rename

    func definition(at offset: Int) -> Any {
        guard let name = names.occurrence(in: file, at: offset), let declaration = names.declaration(of: name) else {
            return NSNull()
        }
        return location(declaration)
    }

    func references(at offset: Int, includeDeclaration: Bool) -> Any {
        guard let name = names.occurrence(in: file, at: offset) else { return NSNull() }
        let found = names.references(of: name).filter { includeDeclaration || !$0.isDeclaration }
        // Written as JSON text here, into one buffer: a name used 300,000 times answers 40 MB.
        let located = Located(found)
        var out: [UInt8] = [UInt8(ascii: "[")]
        out.reserveCapacity(found.count * 120)
        for k in found.indices {
            if k > 0 { out.append(UInt8(ascii: ",")) }
            out += Located.rangeKey
            located.writeRange(k, into: &out)
            out += Located.uriKey
            out += located.uriJSON[located.file[k]]
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "]"))
        return RawJSON(bytes: out)
    }

    /// Occurrences with their protocol positions, computed file by file in one sweep each
    /// (``LSPPosition/positions(in:_:)``), and their files' URIs as JSON strings.
    struct Located {
        static let rangeKey = Array("{\"range\":".utf8)
        static let uriKey = Array(",\"uri\":".utf8)
        var start: [(line: Int, character: Int)]
        var end: [(line: Int, character: Int)]
        /// Each occurrence's index into `uris` and `uriJSON`.
        var file: [Int]
        /// Each file's URI, and the same as a JSON string.
        var uris: [String] = []
        var uriJSON: [[UInt8]] = []

        init(_ occurrences: [NameOccurrence]) {
            start = Array(repeating: (0, 0), count: occurrences.count)
            end = start
            file = Array(repeating: 0, count: occurrences.count)
            var byFile: [String: [Int]] = [:]
            for (k, occurrence) in occurrences.enumerated() { byFile[occurrence.file.path, default: []].append(k) }
            for (path, indices) in byFile.sorted(by: { $0.key < $1.key }) {
                let uri = LSPWorkspace.uri(of: path)
                var text: [UInt8] = []
                JSON.write(string: uri, into: &text)
                uris.append(uri)
                uriJSON.append(text)
                let offsets = indices.flatMap { [occurrences[$0].range.lowerBound, occurrences[$0].range.upperBound] }
                let positions = LSPPosition.positions(in: occurrences[indices[0]].file, offsets)
                for (n, k) in indices.enumerated() {
                    start[k] = positions[2 * n]
                    end[k] = positions[2 * n + 1]
                    file[k] = uris.count - 1
                }
            }
        }

        /// `{"end":{"character":C,"line":L},"start":{...}}`, keys sorted as ``JSON/data(_:)`` writes them.
        func writeRange(_ k: Int, into out: inout [UInt8]) {
            func position(_ p: (line: Int, character: Int)) {
                out += Located.characterKey
                JSON.write(int: p.character, into: &out)
                out += Located.lineKey
                JSON.write(int: p.line, into: &out)
                out.append(UInt8(ascii: "}"))
            }
            out += Located.endKey
            position(end[k])
            out += Located.startKey
            position(start[k])
            out.append(UInt8(ascii: "}"))
        }

        // The fixed parts, made once.
        static let characterKey = Array("{\"character\":".utf8)
        static let lineKey = Array(",\"line\":".utf8)
        static let endKey = Array("{\"end\":".utf8)
        static let startKey = Array(",\"start\":".utf8)
        static let newTextKey = Array("{\"newText\":".utf8)
        static let rangeAfterTextKey = Array(",\"range\":".utf8)
    }

    func rename(at offset: Int, to newName: String) -> Result<Any, LSPServer.Failure> {
        guard let name = names.occurrence(in: file, at: offset), name.kind != .function, name.kind != .todo else {
            return .failure(.init(code: LSPServer.ErrorCode.requestFailed, message: "there is no name to rename here"))
        }
        if let current = name.formerOf {
            return .failure(
                .init(
                    code: LSPServer.ErrorCode.requestFailed,
                    message:
                        "'\(name.text)' is a former name of '\(current)' (its stored history): rename '\(current)' instead"
                ))
        }
        // As the printer writes names: an identifier, or (an event's only: a name no scenario
        // also declares as its own stream) a string. The text written must read back as the
        // name: a name with a line break or another control character cannot be written.
        let written = Printer.name(newName)
        let references = names.references(of: name)
        let onlyEvents = references.allSatisfy { $0.kind == .event }
        guard !newName.isEmpty, written == newName || onlyEvents, Self.readsBack(written, as: newName) else {
            let why =
                newName.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
                ? "a name cannot hold a line break or another control character"
                : onlyEvents
                    ? "it does not read back as a name"
                    : "only an event's name may be quoted; this one names a \(references.first { $0.kind != .event }!.kind.rawValue)"
            return .failure(
                .init(code: LSPServer.ErrorCode.invalidParams, message: "'\(newName)' is not a name here: \(why)"))
        }
        if newName == name.text { return .success(["changes": [:] as JSONObject] as JSONObject) }
        if let taken = names.occurrences.first(where: { ($0.isDeclaration || $0.formerOf != nil) && $0.text == newName }
        ) {
            return .failure(
                .init(
                    code: LSPServer.ErrorCode.requestFailed,
                    message:
                        "'\(newName)' is already the name of a \(taken.kind.rawValue) (\(taken.file.path):\(taken.file.location(of: taken.range.lowerBound)))"
                ))
        }
        // Former names (`was`) name stored history: they stay as they are. The edits are written
        // as JSON text, file by file, as the references are.
        var newText: [UInt8] = []
        JSON.write(string: written, into: &newText)
        let edited = references.filter { $0.formerOf == nil }
        let located = Located(edited)
        var edits = [[UInt8]](repeating: [], count: located.uris.count)
        for k in edited.indices {
            // Appended in place, into one buffer a file.
            edits[located.file[k]].append(UInt8(ascii: edits[located.file[k]].isEmpty ? "[" : ","))
            edits[located.file[k]] += Located.newTextKey
            edits[located.file[k]] += newText
            edits[located.file[k]] += Located.rangeAfterTextKey
            located.writeRange(k, into: &edits[located.file[k]])
            edits[located.file[k]].append(UInt8(ascii: "}"))
        }
        var changes: JSONObject = [:]
        for (n, text) in edits.enumerated() {
            changes[located.uris[n]] = RawJSON(bytes: text + [UInt8(ascii: "]")])
        }
        return .success(["changes": changes] as JSONObject)
    }

    /// Whether `written` parses as one event name equal to `name`: what a rename may write.
    static func readsBack(_ written: String, as name: String) -> Bool {
        if name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) { return false }
        let (parsed, diagnostics) = Parser.parse(SourceFile(path: "<rename>", text: "event \(written)\n"))
        guard !diagnostics.contains(where: { $0.severity == .error }), parsed.declarations.count == 1,
            case .event(let declaration) = parsed.declarations[0], declaration.names.count == 1
        else { return false }
        return declaration.names[0].text == name
    }

    private func location(_ occurrence: NameOccurrence) -> JSONObject {
        [
            "uri": LSPWorkspace.uri(of: occurrence.file.path),
            "range": LSPPosition.range(in: occurrence.file, occurrence.range),
        ]
    }

    // MARK: - Symbols, formatting, quick fixes

    func symbols() -> Any {
        guard let rules = program.files.first(where: { $0.source.path == file.path }) else { return [JSONObject]() }
        func symbol(_ name: Name, _ kind: Int, _ range: SourceRange, _ detail: String, _ children: [JSONObject] = [])
            -> JSONObject
        {
            var object: JSONObject = [
                "name": name.text, "kind": kind, "detail": detail, "range": LSPPosition.range(in: file, range),
                "selectionRange": LSPPosition.range(in: file, name.range),
            ]
            if !children.isEmpty { object["children"] = children }
            return object
        }
        var result: [JSONObject] = []
        for declaration in rules.declarations {
            switch declaration {
            case .scenario(let scenario):
                result.append(symbol(scenario.name, 12, scenario.range, "scenario"))
            case .group(let group):
                let members = group.members.map { symbol($0.name, 12, $0.range, "scenario") }
                result.append(symbol(group.name, 3, group.range, "group", members))
            case .param(let param):
                result.append(symbol(param.name, 13, param.range, "param"))
            case .event(let events):
                for name in events.names { result.append(symbol(name, 24, events.range, "event")) }
            }
        }
        return result
    }

    /// The whole file in `rulec fmt`'s layout, as one edit; none when it does not parse.
    func formatting() -> Any {
        guard let text = Formatter.format(file).text else { return NSNull() }
        if text == String(decoding: file.bytes, as: UTF8.self) { return [JSONObject]() }
        return [["range": LSPPosition.range(in: file, 0..<file.bytes.count), "newText": text] as JSONObject]
    }

    /// A quick fix for each fix-it of a diagnostic in `range`: exactly the fix-it's edit.
    func codeActions(_ range: SourceRange, uri: String) -> Any {
        var actions: [JSONObject] = []
        for diagnostic in analysis.result.diagnostics where diagnostic.file.path == file.path {
            let overlaps =
                diagnostic.range.overlaps(range) || diagnostic.range.contains(range.lowerBound)
                || range.contains(diagnostic.range.lowerBound) || diagnostic.range.upperBound == range.lowerBound
            guard overlaps else { continue }
            for fix in diagnostic.fixIts {
                actions.append([
                    "title": "Fix: " + fix.summary(in: file),
                    "kind": "quickfix",
                    "diagnostics": [LSPServer.diagnostic(diagnostic)],
                    "isPreferred": diagnostic.fixIts.count == 1,
                    "edit": [
                        "changes": [
                            uri: [
                                ["range": LSPPosition.range(in: file, fix.range), "newText": fix.replacement]
                                    as JSONObject
                            ]
                        ]
                    ] as JSONObject,
                ])
            }
        }
        return actions
    }
}
