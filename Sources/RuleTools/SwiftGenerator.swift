import RuleLang

/// Swift source with one typed constant per name of a checked program (`rulec gen swift`):
/// scenarios, groups, events and params, so an app names them through the compiler.
public enum SwiftGenerator {
    /// Who may see the constants.
    public enum Access: String, Sendable, CaseIterable {
        case `public`, `internal`
    }

    /// One constant to write.
    struct Constant {
        /// The Swift type the constant extends (`Scenario`, `Param<Bool>`, ...).
        var kind: Kind
        var ruleName: String
        var swiftName: String
        /// The rule text the doc comment quotes, and where it is.
        var documentation: [String]
        var span: SourceSpan
        /// An event's typed properties (language 1.2), in declared order: it gets an occurrence type.
        var properties: [PropertyDecl] = []
    }

    enum Kind: Int, Comparable {
        case scenario, group, event, boolParam, intParam, stringParam, durationParam

        static func < (a: Kind, b: Kind) -> Bool { a.rawValue < b.rawValue }

        /// The extension's header and the constant's type.
        var extensionHeader: String {
            switch self {
            case .scenario: return "extension Scenario"
            case .group: return "extension RuleGroup"
            case .event: return "extension Event"
            case .boolParam: return "extension Param where Value == Bool"
            case .intParam: return "extension Param where Value == Int"
            case .stringParam: return "extension Param where Value == String"
            case .durationParam: return "extension Param where Value == TimeInterval"
            }
        }

        /// The case of `RequiredName.Kind` (RuleRuntime) for it.
        var requiredKind: String {
            switch self {
            case .scenario: return "scenario"
            case .group: return "group"
            case .event: return "event"
            case .boolParam: return "boolParam"
            case .intParam: return "intParam"
            case .stringParam: return "stringParam"
            case .durationParam: return "durationParam"
            }
        }

        var typeName: String {
            switch self {
            case .scenario: return "Scenario"
            case .group: return "RuleGroup"
            case .event: return "Event"
            case .boolParam: return "Param<Bool>"
            case .intParam: return "Param<Int>"
            case .stringParam: return "Param<String>"
            case .durationParam: return "Param<TimeInterval>"
            }
        }

        /// Kinds whose constants share one namespace for collisions: every param
        /// type shares `Param`'s, whatever its `Value`.
        var namespace: Int { self >= .boolParam ? Kind.boolParam.rawValue : rawValue }

        init(_ type: ValueType) {
            switch type {
            case .bool: self = .boolParam
            case .int: self = .intParam
            case .string: self = .stringParam
            case .duration: self = .durationParam
            }
        }
    }

    /// The Swift source for `result`'s program, or the diagnostics that stop generation:
    /// the check's errors, or two rule names that become one Swift name.
    public static func generate(
        _ result: CheckResult, access: Access = .internal
    ) -> (source: String?, diagnostics: [Diagnostic]) {
        if result.hasErrors { return (nil, result.diagnostics) }
        let constants = collect(result.program)
        var collisions: [Diagnostic] = []
        var seen: [String: Constant] = [:]
        let files = result.program.files.map { $0.source.path }
        let inSourceOrder = constants.sorted {
            (files.firstIndex(of: $0.span.file.path) ?? 0, $0.span.range.lowerBound)
                < (files.firstIndex(of: $1.span.file.path) ?? 0, $1.span.range.lowerBound)
        }
        for constant in inSourceOrder {
            if constant.swiftName.isEmpty {
                collisions.append(
                    Diagnostic(GeneratorMessage.noSwiftName(constant.ruleName), .error, at: constant.span))
                continue
            }
            let key = "\(constant.kind.namespace) \(constant.swiftName)"
            if let first = seen[key] {
                collisions.append(
                    Diagnostic(
                        GeneratorMessage.swiftNameCollision(first.ruleName, constant.ruleName, constant.swiftName),
                        .error,
                        at: constant.span,
                        notes: [DiagnosticNote("'\(first.ruleName)' is declared here", at: first.span)]))
            } else {
                seen[key] = constant
            }
        }
        for constant in constants {
            var seenProperties: [String: PropertyDecl] = [:]
            for property in constant.properties {
                let span = SourceSpan(constant.span.file, property.name.range)
                let swift = swiftName(property.name.text)
                if swift.isEmpty {
                    collisions.append(Diagnostic(GeneratorMessage.noSwiftName(property.name.text), .error, at: span))
                } else if let first = seenProperties[swift] {
                    collisions.append(
                        Diagnostic(
                            GeneratorMessage.swiftNameCollision(first.name.text, property.name.text, swift), .error,
                            at: span,
                            notes: [
                                DiagnosticNote(
                                    "'\(first.name.text)' is declared here",
                                    at: SourceSpan(constant.span.file, first.name.range))
                            ]))
                } else {
                    seenProperties[swift] = property
                }
            }
        }
        if !collisions.isEmpty { return (nil, (result.diagnostics + collisions).sortedByPosition()) }
        return (render(constants, files: result.program.files, access: access), result.diagnostics)
    }

    // MARK: - Names

    /// `name` as a lowerCamelCase Swift identifier: words split at every character that is
    /// not a letter or digit, the first word lowercased at its start (`URLOpened` -> `urlOpened`),
    /// later words capitalised; a leading digit gets `_`, a keyword backticks. Empty when the
    /// name has no letter or digit.
    public static func swiftName(_ name: String) -> String {
        var words: [[Character]] = [[]]
        for character in name {
            if character.isLetter || character.isNumber {
                words[words.count - 1].append(character)
            } else if !words[words.count - 1].isEmpty {
                words.append([])
            }
        }
        words.removeAll { $0.isEmpty }
        guard var first = words.first else { return "" }
        // Lowercase the leading run of capitals, keeping the last one when a lowercase letter
        // follows it (the start of the next word: `URLOpened` -> `url` + `Opened`).
        var end = 0
        while end < first.count, first[end].isUppercase { end += 1 }
        if end > 1, end < first.count, first[end].isLowercase { end -= 1 }
        for index in 0..<end { first[index] = Character(first[index].lowercased()) }
        var identifier = String(first)
        for word in words.dropFirst() {
            identifier += word[0].uppercased() + String(word.dropFirst())
        }
        if let head = identifier.first, head.isNumber { identifier = "_" + identifier }
        return keywords.contains(identifier) ? "`\(identifier)`" : identifier
    }

    /// Words a declaration cannot use as a name without backticks.
    static let keywords: Set<String> = [
        "associatedtype", "borrowing", "class", "consuming", "deinit", "enum", "extension", "fileprivate", "func",
        "import", "init", "inout", "internal", "let", "nonisolated", "open", "operator", "private",
        "precedencegroup", "protocol", "public", "rethrows", "static", "struct", "subscript", "typealias", "var",
        "break", "case", "catch", "continue", "default", "defer", "do", "else", "fallthrough", "for", "guard", "if",
        "in", "repeat", "return", "throw", "switch", "where", "while", "as", "await", "false", "is", "nil", "self",
        "super", "throws", "true", "try",
    ]

    // MARK: - Collecting

    static func collect(_ program: RuleProgram) -> [Constant] {
        var constants: [Constant] = []
        func add(_ kind: Kind, _ name: Name, _ file: SourceFile, _ text: [String]) {
            constants.append(
                Constant(
                    kind: kind, ruleName: name.text, swiftName: swiftName(name.text), documentation: text,
                    span: SourceSpan(file, name.range)))
        }
        let declaresEvents = !program.events.isEmpty
        var events: Set<String> = []
        var streamUses: [(Name, SourceFile, String)] = []
        // A scenario without `on` counts its own stream: the app triggers it by the scenario's name.
        var ownStreams: [(Name, SourceFile)] = []
        func noteOwnStream(_ scenario: ScenarioDecl, _ file: SourceFile) {
            var counts = false
            for clause in scenario.clauses {
                switch clause.kind {
                case .on: return
                case .minEvents, .maxEvents, .sinceFirst, .sinceLast: counts = true
                default: break
                }
            }
            if counts { ownStreams.append((scenario.name, file)) }
        }
        for file in program.files {
            let source = file.source
            for declaration in file.declarations {
                switch declaration {
                case .scenario(let scenario):
                    add(.scenario, scenario.name, source, quote(source, scenario.range))
                    noteOwnStream(scenario, source)
                    streamUses += RuleProgram.streams(scenario.clauses, source, scenario.name.text)
                case .group(let group):
                    add(.group, group.name, source, quote(source, headerRange(group, source)))
                    streamUses += RuleProgram.streams(group.clauses, source, group.name.text)
                    for member in group.members {
                        add(.scenario, member.name, source, quote(source, member.range))
                        noteOwnStream(member, source)
                        streamUses += RuleProgram.streams(member.clauses, source, member.name.text)
                    }
                case .param(let param):
                    if let type = param.type { add(Kind(type), param.name, source, quote(source, param.range)) }
                case .event(let event):
                    for (k, name) in event.names.enumerated() where events.insert(name.text).inserted {
                        add(.event, name, source, quote(source, event.range))
                        if k < event.properties.count {
                            constants[constants.count - 1].properties = event.properties[k]
                        }
                    }
                }
            }
        }
        for (name, file) in ownStreams where events.insert(name.text).inserted {
            add(.event, name, file, ["The own stream of scenario `\(name.text)`, which counts it (it has no `on`)."])
        }
        if !declaresEvents {
            // Without declarations, the events are the streams the rules name.
            var users: [String: [String]] = [:]
            var first: [(Name, SourceFile)] = []
            for (name, file, user) in streamUses where !events.contains(name.text) {
                if users[name.text] == nil { first.append((name, file)) }
                if users[name.text, default: []].last != user { users[name.text, default: []].append(user) }
            }
            for (name, file) in first {
                let names = users[name.text, default: []].map { "`\($0)`" }.joined(separator: ", ")
                add(.event, name, file, ["A stream the rules name, in \(names)."])
            }
        }
        return constants.sorted {
            ($0.kind, $0.swiftName, $0.ruleName) < ($1.kind, $1.swiftName, $1.ruleName)
        }
    }

    /// A group's text up to the `{` that opens its members (they are documented on their own).
    static func headerRange(_ group: GroupDecl, _ file: SourceFile) -> SourceRange {
        var end = group.members.first?.range.lowerBound ?? group.range.upperBound
        let brace = UInt8(ascii: "{")
        let bodyEnd = group.clauses.last?.range.upperBound ?? group.name.range.upperBound
        if let open = file.bytes[bodyEnd..<end].lastIndex(of: brace) { end = open }
        return group.range.lowerBound..<end
    }

    /// `range`'s text as doc comment lines: where it is, then the rule text, its lines
    /// trimmed at the end and dedented by the first line's column.
    static func quote(_ file: SourceFile, _ range: SourceRange) -> [String] {
        let location = file.location(of: range.lowerBound)
        var lines: [String] = []
        for (number, line) in file.text(range).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var text = Substring(line)
            if number > 0 {
                var indent = location.column - 1
                while indent > 0, let head = text.first, head == " " || head == "\t" {
                    text = text.dropFirst()
                    indent -= 1
                }
            }
            lines.append(String(text.reversed().drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed()))
        }
        while lines.last?.isEmpty == true { lines.removeLast() }
        return ["Declared in \(fileName(file.path)):\(location.line):", ""] + lines.map { "    " + $0 }
    }

    static func fileName(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init) ?? path
    }

    // MARK: - Rendering

    static func render(_ constants: [Constant], files: [RuleFile], access: Access) -> String {
        let modifier = access == .public ? "public " : ""
        let names = files.map { fileName($0.source.path) }.joined(separator: ", ")
        var out = "// Generated by 'rulec gen swift' from \(names). Do not edit: change the rules and generate again.\n"
        out += "\nimport Foundation\nimport RuleRuntime\n"
        var index = 0
        while index < constants.count {
            let kind = constants[index].kind
            out += "\n\(kind.extensionHeader) {\n"
            var first = true
            while index < constants.count, constants[index].kind == kind {
                let constant = constants[index]
                if !first { out += "\n" }
                first = false
                for line in constant.documentation {
                    out += line.isEmpty ? "    ///\n" : "    /// \(line)\n"
                }
                // A kept handle remembers its index (a group's handle has nothing to remember).
                let made = kind == .group ? "" : "resolvingOnce: "
                out += "    \(modifier)static let \(constant.swiftName) = \(kind.typeName)("
                out += "\(made)\(swiftString(constant.ruleName)))\n"
                index += 1
            }
            out += "}\n"
        }
        for constant in constants where constant.kind == .event && !constant.properties.isEmpty {
            out += occurrence(constant, modifier: modifier)
        }
        // The names the constants name, for a delivery to check a new rules file against.
        out += "\nextension RequiredName {\n"
        out += "    /// The names above, each with where it is declared: a delivered rules file that lacks one is\n"
        out += "    /// refused (`RuleDelivery(requiredNames: RequiredName.usedByApp)`).\n"
        out += "    \(modifier)static let usedByApp: [RequiredName] = [\n"
        for constant in constants {
            let at = "\(fileName(constant.span.file.path)):\(constant.span.start.line)"
            out += "        RequiredName(.\(constant.kind.requiredKind), \(swiftString(constant.ruleName)), "
            out += "declaredAt: \(swiftString(at))),\n"
        }
        out += "    ]\n}\n"
        return out
    }

    /// The occurrence type of an event with properties, and the member that makes one:
    /// `engine.trigger(.purchase(amount: 1200, plan: "pro"))`.
    static func occurrence(_ constant: Constant, modifier: String) -> String {
        let name = constant.swiftName.filter { $0 != "`" }
        let type = name.prefix(1).uppercased() + name.dropFirst() + "Occurrence"
        let properties = constant.properties.map {
            property -> (rule: String, swift: String, type: String, value: String) in
            let swift = swiftName(property.name.text)
            switch property.type {
            case .int?: return (property.name.text, swift, "Int", ".int(Int64(\(swift)))")
            case .bool?: return (property.name.text, swift, "Bool", ".bool(\(swift))")
            default: return (property.name.text, swift, "String", ".string(\(swift))")
            }
        }
        let parameters = properties.map { "\($0.swift): \($0.type)" }.joined(separator: ", ")
        let labels = properties.map { "\($0.swift.filter { $0 != "`" }):" }.joined()
        var out = "\nextension Event {\n"
        out += "    /// An occurrence of `\(constant.ruleName)` with its properties:\n"
        out += "    /// `engine.trigger(.\(name)(\(labels)))`.\n"
        out += "    \(modifier)struct \(type): EventOccurrence {\n"
        let layout = properties.map { "(\(swiftString($0.rule)), \($0.type).self)" }.joined(separator: ", ")
        out += "        \(modifier)static let layout = PropertyLayout(.\(constant.swiftName), [\(layout)])\n"
        for property in properties { out += "        \(modifier)var \(property.swift): \(property.type)\n" }
        out += "\n        \(modifier)init(\(parameters)) {\n"
        for property in properties { out += "            self.\(property.swift) = \(property.swift)\n" }
        out += "        }\n\n"
        out += "        \(modifier)func property(at position: Int) -> PropertyValue {\n"
        if properties.count == 1 {
            out += "            \(properties[0].value)\n"
        } else {
            out += "            switch position {\n"
            for (k, property) in properties.enumerated() {
                out += k == properties.count - 1 ? "            default" : "            case \(k)"
                out += ": return \(property.value)\n"
            }
            out += "            }\n"
        }
        out += "        }\n    }\n}\n"
        out += "\nextension EventOccurrence where Self == Event.\(type) {\n"
        for line in constant.documentation { out += line.isEmpty ? "    ///\n" : "    /// \(line)\n" }
        let arguments = properties.map { "\($0.swift.filter { $0 != "`" }): \($0.swift)" }.joined(separator: ", ")
        out += "    \(modifier)static func \(constant.swiftName)(\(parameters)) -> Self { Self(\(arguments)) }\n}\n"
        return out
    }

    /// `text` as a Swift string literal.
    static func swiftString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += "\\u{\(String(scalar.value, radix: 16))}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}

/// `rulec gen swift`'s diagnostics.
enum GeneratorMessage {
    static func noSwiftName(_ name: String) -> DiagnosticMessage {
        DiagnosticMessage(.noSwiftName, "'\(name)' has no letter or digit to make a Swift name from; rename it")
    }
    static func swiftNameCollision(_ a: String, _ b: String, _ swift: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .swiftNameCollision, "'\(a)' and '\(b)' both become the Swift name '\(swift)'; rename one of them")
    }
}

extension DiagnosticID {
    /// `rulec gen swift`: a name with no letter or digit to make a Swift name from.
    public static let noSwiftName = DiagnosticID("no-swift-name")
    /// `rulec gen swift`: two rule names that become one Swift name.
    public static let swiftNameCollision = DiagnosticID("swift-name-collision")
}
