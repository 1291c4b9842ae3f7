import Foundation
import RuleLang
import RuleRuntime

/// One step of a timeline.
public struct TimelineStep: Sendable {
    /// What the step does, with its checked arguments.
    public enum Action: Sendable {
        case launch(version: String)
        case trigger(String)
        /// A trigger with its event's properties (`trigger purchase amount=12 plan=pro`).
        case triggerWith(String, properties: [String: PropertyValue])
        case done(String)
        case tryScenario(String)
        case set(param: String, value: ParamValue)
        case reset(String)
        case todo(String, until: Int64?, info: [String: String]?)
        /// Prints a pending to-do's info: `none` without info, `-` when not pending.
        case info(String)
        case check(Expr, text: String)
        case next([String])
        /// Moves the device to another time zone.
        case timeZone(TimeZone)
        /// Swaps the engine to the rules of `path` (relative to the timeline), already checked.
        case rules(path: String, sources: [SourceFile])
        /// Records what became of a scenario's prompt (language 1.2).
        case outcome(String, Outcome)
        /// Presents a scenario: shown (executed, holding its group) or not, with the reason.
        case present(String)
        /// Finishes the scenario's open presentation with an outcome.
        case finish(String, Outcome)
        /// The app's run ends uncleanly here, and the app is launched again (same version).
        case crash
        /// The app reports a problem (`recordProblem()`).
        case problem
        /// The app enters a context (`enter(_:)`, language 1.3).
        case enter(String)
        /// The app leaves a context (`leave(_:)`, language 1.3).
        case leave(String)
        /// The scenario's open presentation is on screen (`visible(_:)`), or no longer
        /// (`hidden(_:)`): language 1.3's `counts after D visible`.
        case visible(String)
        case hidden(String)
        /// The app goes to the background (`prepareForSuspension()`) or comes back
        /// (`enteredForeground()`) without a new launch.
        case background
        case foreground
    }

    /// The time field as written, echoed in the output.
    public var timeText: String
    /// Seconds from the start of the simulation.
    public var offset: Int64
    /// What the step does.
    public var action: Action
}

/// Parses the timeline format of `grammar.md`: one step a line, `#` comments,
/// `TIME VERB ARGUMENTS`. Names may be quoted when they hold spaces.
public struct TimelineParser {
    /// The timeline's source.
    public let file: SourceFile
    /// The checked program its steps name: the rules given, then those of the last `rules` step.
    public private(set) var program: RuleProgram
    /// Every problem found, located in `file`; steps with errors are left out.
    public private(set) var diagnostics: [Diagnostic] = []

    /// Every step a timeline may hold.
    public static let verbs = [
        "launch", "trigger", "done", "try", "set", "reset", "todo", "info", "check", "next", "rules", "timezone",
        "outcome", "present", "finish", "crash", "problem", "enter", "leave", "visible", "hidden", "background",
        "foreground",
    ]

    /// The program's declarations, collected once for every `check` line.
    var expressions: ExpressionChecker
    /// The streams some rule counts or declares, and the same as a list for suggestions.
    private var knownStreams: Set<String> = []
    private var streamList: [String] = []
    /// Former names (`was`) the engine takes for scenarios and groups, as every step does.
    private var formerScenarios: Set<String> = []
    /// Each former scenario name, to its name now.
    private var scenarioNow: [String: String] = [:]
    private var formerGroups: Set<String> = []
    /// Scenarios a `present` step showed and no `finish` step finished yet, as the steps read.
    private var presented: Set<String> = []

    /// A parser for `file` against `program`.
    public init(file: SourceFile, program: RuleProgram) {
        self.file = file
        self.program = program
        self.expressions = ExpressionChecker(program: program)
        noteNames()
    }

    /// The names steps may use: the streams rules count (and their former names, which the
    /// engine counts under the new ones), and former names of scenarios and groups.
    private mutating func noteNames() {
        // The engine's own streams (`@crash`) are not the app's to trigger: never suggested, and
        // a trigger of one is uncounted (the `crash` and `problem` steps record them).
        streamList = program.knownStreams.filter { !EngineStream.isReserved($0) }
        knownStreams = Set(streamList)
        formerScenarios = []
        scenarioNow = [:]
        formerGroups = []
        for rename in program.renames {
            let former = rename.formerNames.map(\.text)
            switch rename.kind {
            case .event: knownStreams.formUnion(former)
            case .scenario:
                formerScenarios.formUnion(former)
                for name in former { scenarioNow[name] = rename.name.text }
                if rename.countsOwnStream { knownStreams.formUnion(former) }
            case .group: formerGroups.formUnion(former)
            case .param: break
            }
        }
    }

    /// Later steps name the names of `program` (after a `rules` step).
    private mutating func switchTo(_ program: RuleProgram) {
        self.program = program
        expressions = ExpressionChecker(program: program)
        noteNames()
    }

    /// The steps of the timeline, in order; problems go to ``diagnostics``.
    public mutating func parse() -> [TimelineStep] {
        var steps: [TimelineStep] = []
        for line in 1...file.lineStarts.count {
            let range = contentRange(file.lineRange(line))
            if let open = unterminatedQuote(range) {
                error(TimelineMessage.unterminatedString, open..<range.upperBound)
                continue
            }
            var words = Words(file: file, range: range)
            guard let timeWord = words.next() else { continue }
            if let step = parseStep(timeWord, &words) { steps.append(step) }
        }
        return steps
    }

    /// Where a string that the line does not close opens, if one does.
    private func unterminatedQuote(_ range: SourceRange) -> Int? {
        var open: Int?
        var index = range.lowerBound
        while index < range.upperBound {
            let byte = file.bytes[index]
            if byte == UInt8(ascii: "\"") { open = open == nil ? index : nil }
            if byte == UInt8(ascii: "\\") && open != nil { index += 1 }
            index += 1
        }
        return open
    }

    /// The line without its comment: `#` outside a string starts one.
    private func contentRange(_ line: SourceRange) -> SourceRange {
        var inString = false
        var index = line.lowerBound
        while index < line.upperBound {
            let byte = file.bytes[index]
            if byte == UInt8(ascii: "\"") { inString.toggle() }
            if byte == UInt8(ascii: "\\") && inString { index += 1 }
            if byte == UInt8(ascii: "#") && !inString { return line.lowerBound..<index }
            index += 1
        }
        return line
    }

    /// A warning for a stream no rule counts or declares: the step still runs (the
    /// engine records it), but it is most likely a misspelt name.
    private mutating func warnIfUncounted(_ name: Word) {
        guard !knownStreams.contains(name.text) else { return }
        let suggestions = Suggestions.closest(to: name.text, in: streamList)
        diagnostics.append(
            Diagnostic(
                TimelineMessage.uncountedEvent(name.text, suggestions), .warning, at: SourceSpan(file, name.range),
                fixIts: suggestions.first.map { [FixIt(range: name.range, replacement: TimelineParser.word($0))] } ?? []
            ))
    }

    /// `name` as a timeline word: quoted when it holds a space or a quote.
    static func word(_ name: String) -> String {
        name.contains(where: { $0 == " " || $0 == "\"" || $0 == "#" }) || name.isEmpty ? Printer.string(name) : name
    }

    private mutating func error(_ problem: DiagnosticMessage, _ range: SourceRange, fixIts: [FixIt] = []) {
        diagnostics.append(Diagnostic(problem, .error, at: SourceSpan(file, range), fixIts: fixIts))
    }

    private mutating func parseStep(_ timeWord: Word, _ words: inout Words) -> TimelineStep? {
        guard let offset = DurationText.seconds(timeWord.text) else {
            error(TimelineMessage.invalidTime(timeWord.text), timeWord.range)
            return nil
        }
        guard let verb = words.next() else {
            error(
                TimelineMessage.missingStep(TimelineParser.verbs), timeWord.range.upperBound..<timeWord.range.upperBound
            )
            return nil
        }
        func step(_ action: TimelineStep.Action) -> TimelineStep {
            TimelineStep(timeText: timeWord.text, offset: offset, action: action)
        }
        switch verb.text {
        case "launch":
            guard let version = requireWord(&words, "an app version after 'launch'", after: verb) else { return nil }
            return finish(&words, step(.launch(version: version.text)))
        case "trigger", "done":
            guard let name = requireWord(&words, "an event name after '\(verb.text)'", after: verb) else { return nil }
            warnIfUncounted(name)
            if verb.text == "trigger", let declared = program.properties[name.text] {
                // `trigger purchase amount=12 plan=pro`: the event's properties, each of its type.
                var properties: [String: PropertyValue] = [:]
                while let pair = words.next() {
                    guard let equals = pair.text.firstIndex(of: "=") else {
                        error(TimelineMessage.propertyPair(pair.text), pair.range)
                        return nil
                    }
                    let key = String(pair.text[..<equals])
                    let text = String(pair.text[pair.text.index(after: equals)...])
                    guard let property = declared.first(where: { $0.name.text == key }), let type = property.type
                    else {
                        error(TimelineMessage.unknownProperty(key, name.text, declared.map(\.name.text)), pair.range)
                        return nil
                    }
                    // A quoted value is a string, whatever it reads as (`plan="12"`).
                    let parsed: ParamValue? =
                        pair.quotedValue ? (type == .string ? .string(text) : nil) : TimelineValue.parse(text, as: type)
                    guard let value = parsed.flatMap(PropertyValue.init) else {
                        error(
                            TimelineMessage.propertyValue(pair.quotedValue ? Printer.string(text) : text, type, key),
                            pair.range)
                        return nil
                    }
                    properties[key] = value
                }
                return step(.triggerWith(name.text, properties: properties))
            }
            return finish(&words, step(verb.text == "trigger" ? .trigger(name.text) : .done(name.text)))
        case "try", "reset":
            guard let name = requireWord(&words, "a scenario name after '\(verb.text)'", after: verb) else {
                return nil
            }
            let groups = verb.text == "reset" ? program.groups.map(\.name.text) : []
            guard requireScenario(name, alsoAllowing: groups) else { return nil }
            return finish(&words, step(verb.text == "try" ? .tryScenario(name.text) : .reset(name.text)))
        case "set":
            guard let name = requireWord(&words, "a param name after 'set'", after: verb) else { return nil }
            guard let value = requireWord(&words, "a value after the param name", after: name) else { return nil }
            guard let param = program.params.first(where: { $0.name.text == name.text }) else {
                error(TimelineMessage.unknownParam(name.text, program.params.map(\.name.text)), name.range)
                return nil
            }
            guard let parsed = parseValue(value, for: param) else { return nil }
            return finish(&words, step(.set(param: name.text, value: parsed)))
        case "todo":
            guard let name = requireWord(&words, "a to-do name after 'todo'", after: verb) else { return nil }
            var until: Int64?
            var info: [String: String]?
            while let keyword = words.next() {
                if keyword.text == "until", until == nil, info == nil {
                    guard let duration = requireWord(&words, "a duration after 'until'", after: keyword) else {
                        return nil
                    }
                    guard let seconds = DurationText.seconds(duration.text) else {
                        error(TimelineMessage.invalidDuration(duration.text), duration.range)
                        return nil
                    }
                    until = seconds
                } else if keyword.text == "info", info == nil {
                    // `info` then KEY=VALUE words to the end of the line (none: empty info).
                    var pairs: [String: String] = [:]
                    while let pair = words.next() {
                        guard let equals = pair.text.firstIndex(of: "=") else {
                            error(TimelineMessage.infoPair(pair.text), pair.range)
                            return nil
                        }
                        pairs[String(pair.text[..<equals])] = String(pair.text[pair.text.index(after: equals)...])
                    }
                    info = pairs
                } else {
                    let expected = info != nil ? "KEY=VALUE" : until == nil ? "'until', 'info'" : "'info'"
                    error(TimelineMessage.todoOption(expected, keyword.text), keyword.range)
                    return nil
                }
            }
            return finish(&words, step(.todo(name.text, until: until, info: info)))
        case "info":
            guard let name = requireWord(&words, "a to-do name after 'info'", after: verb) else { return nil }
            return finish(&words, step(.info(name.text)))
        case "check":
            let rest = words.rest
            guard !rest.isEmpty else {
                error(TimelineMessage.missingCondition, verb.range.upperBound..<verb.range.upperBound)
                return nil
            }
            let (expr, found) = expressions.check(file, range: rest)
            diagnostics += found
            if found.hasErrors { return nil }
            return step(.check(expr, text: file.text(rest)))
        case "timezone":
            guard let name = requireWord(&words, "a time zone such as Europe/Paris after 'timezone'", after: verb)
            else {
                return nil
            }
            guard let zone = TimeZone(identifier: name.text) else {
                error(TimelineMessage.unknownTimeZone(name.text), name.range)
                return nil
            }
            return finish(&words, step(.timeZone(zone)))
        case "rules":
            guard let path = requireWord(&words, "a rules file's path after 'rules'", after: verb) else { return nil }
            let directory = (file.path as NSString).deletingLastPathComponent
            let full = path.text.hasPrefix("/") ? path.text : (directory as NSString).appendingPathComponent(path.text)
            guard let data = FileManager.default.contents(atPath: full) else {
                error(TimelineMessage.unreadableRules(path.text), path.range)
                return nil
            }
            let source = SourceFile(path: full, bytes: [UInt8](data))
            let result = RuleCompiler.check([source])
            if result.hasErrors {
                error(TimelineMessage.invalidRules(path.text), path.range)
                diagnostics += result.diagnostics.filter { $0.severity == .error }
                return nil
            }
            switchTo(result.program)
            return finish(&words, step(.rules(path: path.text, sources: [source])))
        case "outcome", "finish":
            guard let name = requireWord(&words, "a scenario name after '\(verb.text)'", after: verb) else {
                return nil
            }
            guard requireScenario(name, alsoAllowing: []) else { return nil }
            guard let word = requireWord(&words, "an outcome (\(Outcome.names.joined(separator: ", ")))", after: name)
            else { return nil }
            guard let outcome = Outcome(rawValue: word.text) else {
                let suggestions = Suggestions.closest(to: word.text, in: Outcome.names)
                error(
                    TimelineMessage.unknownOutcome(word.text), word.range,
                    fixIts: suggestions.prefix(1).map { FixIt(range: word.range, replacement: $0) })
                return nil
            }
            if verb.text == "finish" {
                // Opened under a former name (before the rules that renamed it) or the name now.
                let now = scenarioNow[name.text] ?? name.text
                guard let open = presented.first(where: { (scenarioNow[$0] ?? $0) == now }),
                    presented.remove(open) != nil
                else {
                    error(TimelineMessage.notPresented(name.text), name.range)
                    return nil
                }
                return finish(&words, step(.finish(name.text, outcome)))
            }
            return finish(&words, step(.outcome(name.text, outcome)))
        case "present":
            guard let name = requireWord(&words, "a scenario name after 'present'", after: verb) else { return nil }
            guard requireScenario(name, alsoAllowing: []) else { return nil }
            presented.insert(name.text)
            return finish(&words, step(.present(name.text)))
        case "crash", "problem":
            return finish(&words, step(verb.text == "crash" ? .crash : .problem))
        case "background", "foreground":
            return finish(&words, step(verb.text == "background" ? .background : .foreground))
        case "visible", "hidden":
            guard let name = requireWord(&words, "a scenario name after '\(verb.text)'", after: verb) else {
                return nil
            }
            guard requireScenario(name, alsoAllowing: []) else { return nil }
            let now = scenarioNow[name.text] ?? name.text
            guard presented.contains(where: { (scenarioNow[$0] ?? $0) == now }) else {
                error(TimelineMessage.notPresentedToShow(verb.text, name.text), name.range)
                return nil
            }
            return finish(&words, step(verb.text == "visible" ? .visible(name.text) : .hidden(name.text)))
        case "enter", "leave":
            // Any name: contexts are not declared (a rule may never name it).
            guard let name = requireWord(&words, "a context's name after '\(verb.text)'", after: verb) else {
                return nil
            }
            return finish(&words, step(verb.text == "enter" ? .enter(name.text) : .leave(name.text)))
        case "next":
            var names: [String] = []
            while let name = words.next() {
                guard requireScenario(name, alsoAllowing: []) else { return nil }
                names.append(name.text)
            }
            return step(.next(names))
        default:
            error(TimelineMessage.unknownStep(verb.text, TimelineParser.verbs), verb.range)
            return nil
        }
    }

    private mutating func requireWord(_ words: inout Words, _ what: String, after previous: Word) -> Word? {
        if let word = words.next() { return word }
        error(TimelineMessage.expected(what), previous.range.upperBound..<previous.range.upperBound)
        return nil
    }

    private mutating func requireScenario(_ name: Word, alsoAllowing extra: [String]) -> Bool {
        let names = program.scenarios.map(\.name) + extra
        if names.contains(name.text) || formerScenarios.contains(name.text) { return true }
        if !extra.isEmpty && formerGroups.contains(name.text) { return true }
        error(TimelineMessage.unknownScenario(name.text, names), name.range)
        return false
    }

    private mutating func finish(_ words: inout Words, _ step: TimelineStep) -> TimelineStep? {
        if let extra = words.next() {
            error(TimelineMessage.extraWord(extra.text), extra.range)
            return nil
        }
        return step
    }

    private mutating func parseValue(_ value: Word, for param: ParamDecl) -> ParamValue? {
        guard let type = param.type else { return nil }
        if let parsed = TimelineValue.parse(value.text, as: type) { return parsed }
        let example = [
            "bool": "true or false", "int": "a whole number", "string": "a word or a quoted string",
            "duration": "a duration such as 2d",
        ][type.rawValue]!
        error(TimelineMessage.paramValue(value.text, type, param.name.text, example), value.range)
        return nil
    }
}

/// A word of a timeline line: a run of non-blank bytes, or a quoted string; a run that reaches
/// `="` (`plan="pro plus"`) goes on to the closing quote, the value read as the quoted string.
struct Word {
    var text: String
    var range: SourceRange
    /// True when the value after `=` was quoted: a string, whatever it reads as.
    var quotedValue = false
}

struct Words {
    let file: SourceFile
    var position: Int
    let end: Int

    init(file: SourceFile, range: SourceRange) {
        self.file = file
        self.position = range.lowerBound
        self.end = range.upperBound
    }

    private mutating func skipBlanks() {
        while position < end,
            file.bytes[position] == 0x20 || file.bytes[position] == 0x09 || file.bytes[position] == 0x0D
        {
            position += 1
        }
    }

    /// What is left of the line after blanks.
    var rest: SourceRange {
        var copy = self
        copy.skipBlanks()
        var last = end
        while last > copy.position, [0x20, 0x09, 0x0D].contains(file.bytes[last - 1]) { last -= 1 }
        return copy.position..<last
    }

    mutating func next() -> Word? {
        skipBlanks()
        guard position < end else { return nil }
        let start = position
        if file.bytes[position] == UInt8(ascii: "\"") {
            return Word(text: quoted(), range: start..<position)
        }
        while position < end, ![0x20, 0x09, 0x0D].contains(file.bytes[position]) {
            if file.bytes[position] == UInt8(ascii: "="), position + 1 < end,
                file.bytes[position + 1] == UInt8(ascii: "\"")
            {
                let name = file.text(start..<position)
                position += 1
                let value = quoted()
                return Word(text: name + "=" + value, range: start..<position, quotedValue: true)
            }
            position += 1
        }
        return Word(text: file.text(start..<position), range: start..<position)
    }

    /// The quoted string at `position` (its opening quote), without its quotes and with each `\`
    /// escape taken as the byte after it; `position` ends after the closing quote.
    private mutating func quoted() -> String {
        var out: [UInt8] = []
        position += 1
        while position < end && file.bytes[position] != UInt8(ascii: "\"") {
            if file.bytes[position] == UInt8(ascii: "\\") && position + 1 < end { position += 1 }
            out.append(file.bytes[position])
            position += 1
        }
        position = min(position + 1, end)
        return String(decoding: out, as: UTF8.self)
    }
}

extension PropertyValue {
    /// A param value of a property's type (`int`, `string`, `bool`), as a property's value.
    init?(_ value: ParamValue) {
        switch value {
        case .int(let number): self = .int(number)
        case .string(let text): self = .string(text)
        case .bool(let flag): self = .bool(flag)
        case .duration: return nil
        }
    }
}

enum TimelineValue {
    /// A `set` value as the param's type: `true`/`false`, an integer, a duration, or any word.
    static func parse(_ text: String, as type: ValueType) -> ParamValue? {
        switch type {
        case .bool:
            guard text == "true" || text == "false" else { return nil }
            return .bool(text == "true")
        case .int:
            // ASCII digits with an optional '-': the whole Int64 range, its minimum included.
            let digits = text.utf8.drop { $0 == UInt8(ascii: "-") && text.utf8.first == $0 }
            guard text.utf8.count - digits.count <= 1, !digits.isEmpty,
                digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
            else { return nil }
            return Int64(text).map { .int($0) }
        case .duration:
            return DurationText.seconds(text).map { .duration(TimeInterval($0)) }
        case .string:
            return .string(text)
        }
    }
}
