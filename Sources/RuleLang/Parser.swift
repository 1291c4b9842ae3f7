/// A recursive-descent parser with one method per production of `grammar.md`.
///
/// It never stops at the first error: it records it, skips to the next `;`,
/// `>`, `}` or declaration keyword, and goes on. Every loop consumes a token.
package struct Parser {
    let file: SourceFile
    var tokens: [Token]
    var index = 0
    var sink: DiagnosticSink
    /// Parenthesis depth inside the current expression; `<` and `>` compare only above 0.
    var parenDepth = 0
    var nesting = 0
    /// Binary operators in the current expression, capped by ``Limits/maxExpressionOperators``.
    var operators = 0
    /// Set when a clause reported the missing `;` after it itself (`on a, min_events 5`).
    var separatorReported = false
    /// Set when `<` and `>` may compare at depth 0 (a lone expression, not a scenario body).
    var bareAnglesCompare = false
    /// Uses of constructs newer than 1.0, for ``RuleFile/newerConstructs``.
    var newerConstructs: [NewerConstruct] = []
    /// True in a file of language 1.2 or later (and in a lone expression): the words `crash`
    /// and `problem` name the engine's own streams (``EngineStream``).
    var builtinWords = false
    /// Errors not reported because they sit on input the lexer already rejected.
    var suppressed = 0
    /// Every error so far, reported or suppressed; used to avoid cascades.
    var problems: Int { sink.errorCount + suppressed }

    init(file: SourceFile, range: SourceRange? = nil) {
        self.file = file
        self.sink = DiagnosticSink(file: file)
        var lexer = Lexer(file: file, range: range)
        self.tokens = lexer.tokenize(into: &sink)
    }

    /// Parses a whole file. Diagnostics cover lexing and syntax only; see `RuleCompiler.check` for the rest.
    package static func parse(_ file: SourceFile) -> (RuleFile, [Diagnostic]) {
        if file.bytes.count > Limits.maxFileSize {
            let diagnostic = Diagnostic(
                Message.fileTooLarge(file.bytes.count), .error,
                at: SourceSpan(file, 0..<0))
            return (RuleFile(source: file, declarations: []), [diagnostic])
        }
        var header: [Diagnostic] = []
        let language = LanguageDeclaration.parse(file) { message, range in
            header.append(Diagnostic(message, .error, at: SourceSpan(file, range)))
        }
        if let language, language.version > .current {
            // A newer language may mean anything: one error, and nothing else is read.
            let diagnostic = Diagnostic(
                Message.newerLanguage(language.version), .error, at: SourceSpan(file, language.range))
            return (RuleFile(source: file, declarations: [], language: language), [diagnostic])
        }
        var parser = Parser(file: file)
        parser.builtinWords = (language?.version ?? .initial) >= LanguageVersion(1, 2)
        let declarations = parser.parseFile()
        return (
            RuleFile(
                source: file, declarations: declarations, language: language,
                newerConstructs: parser.newerConstructs),
            header + parser.sink.diagnostics
        )
    }

    /// formerNames = { "was" name }: `was` is a keyword only there, before a name.
    mutating func parseFormerNames(event: Bool = false) -> [Name] {
        var names: [Name] = []
        while current.kind == .identifier, current.range.count == 3,
            file.bytes[current.range].elementsEqual("was".utf8),
            peek().kind == .identifier || (event && peek().kind == .string)
        {
            advance()
            if let name = event ? parseEventName() : parseName("a former name") { names.append(name) }
        }
        if let first = names.first { noteNewer(.was, at: first.range) }
        return names
    }

    /// Records a use of a construct newer than 1.0 for the version check, called `what`
    /// (its own name unless given).
    mutating func noteNewer(_ construct: Construct, _ what: String? = nil, at range: SourceRange) {
        newerConstructs.append(NewerConstruct(construct: construct, what: what ?? construct.rawValue, range: range))
    }

    /// Parses one expression filling `range` of `file` (used by timelines' `check`).
    /// Here `<` and `>` compare without parentheses.
    package static func parseExpression(_ file: SourceFile, range: SourceRange) -> (Expr, [Diagnostic]) {
        var parser = Parser(file: file, range: range)
        parser.bareAnglesCompare = true
        parser.builtinWords = true
        parser.operators = 0
        let expr = parser.parseExpr()
        if parser.current.kind != .eof && !parser.sink.isFull {
            parser.sink.error(
                Message.expected("end of expression", found: parser.describe(parser.current)),
                parser.current.range)
        }
        return (expr, parser.sink.diagnostics)
    }

    // MARK: - Helpers

    var current: Token { tokens[index] }
    var previous: Token { tokens[max(index - 1, 0)] }
    func peek(_ ahead: Int = 1) -> Token { tokens[min(index + ahead, tokens.count - 1)] }
    func check(_ kind: TokenKind) -> Bool { current.kind == kind }
    func text(_ token: Token) -> String { file.text(token.range) }

    @discardableResult
    mutating func advance() -> Token {
        let token = current
        if token.kind != .eof { index += 1 }
        return token
    }

    mutating func match(_ kind: TokenKind) -> Bool {
        if check(kind) {
            advance()
            return true
        }
        return false
    }

    /// Consumes `kind` or reports "expected WHAT" at the current token (the words of WHAT are
    /// made only then).
    mutating func expect(_ kind: TokenKind, _ what: @autoclosure () -> String) -> Token? {
        if check(kind) { return advance() }
        error(expected: what())
        return nil
    }

    func describe(_ token: Token) -> String {
        switch token.kind {
        case .eof: return "end of file"
        case .invalid: return "invalid input"
        default:
            let spelled = text(token)
            return spelled.count > 24 ? "'\(spelled.prefix(24))…'" : "'\(spelled)'"
        }
    }

    mutating func error(expected what: String) {
        // Tokens the lexer rejected were reported already.
        if current.kind == .invalid {
            suppressed += 1
            return
        }
        // `mon-fri` where a name goes: a name with a `-`, which is quoted (a range of days only
        // after `days`).
        if current.kind == .dayRange || current.kind == .memberName {
            let spelled = text(current)
            sink.error(
                Message.unquotedName(spelled), current.range,
                fixIts: [FixIt(range: current.range, replacement: "\"" + spelled + "\"")])
            return
        }
        sink.error(Message.expected(what, found: describe(current)), current.range)
    }

    /// Skips to just before the next `;`, `>`, `}`, `{` or declaration keyword (or end of file).
    mutating func synchronize() {
        var depth = 0
        while !check(.eof) {
            switch current.kind {
            case .leftParen: depth += 1
            case .rightParen: depth = max(0, depth - 1)
            case .semicolon, .rightBrace, .leftBrace, .kwScenario, .kwParam, .kwGroup: return
            case .greater where depth == 0: return
            default: break
            }
            advance()
        }
    }

    // MARK: - Declarations

    /// file = { declaration } EOF
    mutating func parseFile() -> [Declaration] {
        var declarations: [Declaration] = []
        while !check(.eof) && !sink.isFull {
            if declarations.count == Limits.maxDeclarationsPerFile {
                sink.error(Message.tooManyDeclarations, current.range)
                break
            }
            if let declaration = parseDeclaration() {
                declarations.append(declaration)
            }
        }
        return declarations
    }

    /// declaration = scenario | group | param
    mutating func parseDeclaration() -> Declaration? {
        switch current.kind {
        case .kwScenario: return parseScenario().map(Declaration.scenario)
        case .kwGroup: return parseGroup().map(Declaration.group)
        case .kwParam: return parseParam().map(Declaration.param)
        case .identifier where startsEventDeclaration: return parseEvent().map(Declaration.event)
        case .identifier where startsRetiredScenario: return parseRetiredScenario().map(Declaration.scenario)
        case .identifier
        where ["scenario", "group", "param", "event"].contains(text(current).lowercased())
            && (peek().kind == .identifier || peek().kind == .string):
            // `Scenario X`, `SCENARIO X`: keywords are lowercase.
            let keyword = text(current).lowercased()
            sink.error(
                Message.lowercaseKeyword(text(current), keyword), current.range,
                fixIts: [FixIt(range: current.range, replacement: keyword)])
            switch keyword {
            case "scenario": return parseScenario().map(Declaration.scenario)
            case "group": return parseGroup().map(Declaration.group)
            case "param": return parseParam().map(Declaration.param)
            default: return parseEvent().map(Declaration.event)
            }
        case .semicolon where previous.kind == .greater || previous.kind == .rightBrace:
            // `scenario A < ... >;`: harmless, but not the language.
            let semicolon = advance()
            sink.add(
                Diagnostic(
                    Message.semicolonAfterBody, .warning, at: SourceSpan(file, semicolon.range),
                    fixIts: [FixIt(range: semicolon.range, replacement: "")]))
            return nil
        default:
            error(expected: "'scenario', 'group', 'param' or 'event'")
            advance()
            while !check(.eof) && !startsDeclaration { advance() }
            return nil
        }
    }

    /// `event` is a keyword only where a declaration starts, followed by a name: a stream
    /// may still be called `event`.
    var startsEventDeclaration: Bool {
        // The length first: most identifiers here are not five bytes long.
        guard current.kind == .identifier, current.range.count == 5,
            file.bytes[current.range].elementsEqual("event".utf8)
        else { return false }
        let next = peek().kind
        return next == .identifier || next == .string
    }

    /// True where a declaration starts.
    var startsDeclaration: Bool { current.kind.startsDeclaration || startsEventDeclaration || startsRetiredScenario }

    /// `retired` is a keyword only where a declaration starts, before `scenario`.
    var startsRetiredScenario: Bool {
        current.kind == .identifier && current.range.count == 7
            && file.bytes[current.range].elementsEqual("retired".utf8)
            && peek().kind == .kwScenario
    }

    /// retired = "retired" "scenario" NAME { "was" NAME }: no clauses.
    mutating func parseRetiredScenario() -> ScenarioDecl? {
        let word = advance().range
        noteNewer(.retired, at: word)
        let start = advance().range.lowerBound
        guard let name = parseName("a scenario name") else {
            synchronizeToDeclaration()
            return nil
        }
        let former = parseFormerNames()
        if check(.less) {
            let body = current.range.lowerBound
            _ = parseBody(of: "scenario '\(name.text)'")
            sink.error(
                Message.retiredWithClauses(name.text), body..<previous.range.upperBound,
                fixIts: [FixIt(range: body..<previous.range.upperBound, replacement: "")])
        }
        return ScenarioDecl(
            name: name, clauses: [], range: start..<previous.range.upperBound, formerNames: former, retired: word)
    }

    /// event = "event" eventName [ "(" property { "," property } ")" ] { was } { "," ... }
    mutating func parseEvent() -> EventDecl? {
        let start = advance().range.lowerBound
        var names: [Name] = []
        var former: [[Name]] = []
        var properties: [[PropertyDecl]] = []
        repeat {
            guard let name = parseEventName() else {
                synchronizeToDeclaration()
                return nil
            }
            names.append(name)
            var declared: [PropertyDecl] = []
            if check(.leftParen) {
                let open = advance().range
                repeat {
                    guard let property = parseProperty() else {
                        synchronizeToDeclaration()
                        return nil
                    }
                    declared.append(property)
                } while match(.comma)
                guard expect(.rightParen, "')' to close the properties of '\(name.text)'") != nil else {
                    synchronizeToDeclaration()
                    return nil
                }
                noteNewer(.properties, "event properties", at: open.lowerBound..<previous.range.upperBound)
            }
            properties.append(declared)
            former.append(parseFormerNames(event: true))
        } while match(.comma)
        let renamed = former.contains { !$0.isEmpty }
        return EventDecl(
            names: names, range: start..<previous.range.upperBound, formerNames: renamed ? former : [],
            properties: properties.contains { !$0.isEmpty } ? properties : [])
    }

    /// property = IDENT ":" ( "int" | "string" | "bool" )
    mutating func parseProperty() -> PropertyDecl? {
        guard let name = parseName("a property name") else { return nil }
        guard expect(.colon, "':' and a type after the property name") != nil else { return nil }
        guard let typeToken = expect(.identifier, "a type ('int', 'string' or 'bool')") else { return nil }
        let typeName = text(typeToken)
        let type = ValueType(rawValue: typeName).flatMap { $0 == .duration ? nil : $0 }
        if type == nil {
            let types = ["int", "string", "bool"]
            let suggestions = Suggestions.closest(to: typeName, in: types)
            sink.error(
                Message.unknown(.unknownType, "property type", typeName, suggestions), typeToken.range,
                fixIts: suggestions.prefix(1).map { FixIt(range: typeToken.range, replacement: $0) })
        }
        return PropertyDecl(name: name, type: type, range: name.range.lowerBound..<typeToken.range.upperBound)
    }

    /// name = IDENT
    mutating func parseName(_ what: String) -> Name? {
        guard let token = expect(.identifier, what) else { return nil }
        return Name(text(token), token.range)
    }

    /// scenario = "scenario" NAME "<" body ">"
    mutating func parseScenario() -> ScenarioDecl? {
        let start = advance().range.lowerBound
        guard let name = parseName("a scenario name") else {
            synchronizeToDeclaration()
            return nil
        }
        let former = parseFormerNames()
        let clauses = parseBody(of: "scenario '\(name.text)'")
        return ScenarioDecl(name: name, clauses: clauses, range: start..<previous.range.upperBound, formerNames: former)
    }

    /// group = "group" NAME "<" body ">" "{" { scenario } "}"
    mutating func parseGroup() -> GroupDecl? {
        let start = advance().range.lowerBound
        guard let name = parseName("a group name") else {
            synchronizeToDeclaration()
            return nil
        }
        let former = parseFormerNames()
        let clauses = parseBody(of: "group '\(name.text)'")
        var members: [ScenarioDecl] = []
        if expect(.leftBrace, "'{' to list the group's scenarios") != nil {
            while !check(.rightBrace) && !check(.eof) && !sink.isFull {
                if check(.kwScenario) {
                    if let member = parseScenario() { members.append(member) }
                } else if check(.kwGroup) || check(.kwParam) {
                    error(expected: "'scenario' or '}' (groups hold scenarios only)")
                    break
                } else {
                    error(expected: "'scenario' or '}'")
                    advance()
                    while !check(.eof) && !startsDeclaration && !check(.rightBrace) { advance() }
                }
            }
            _ = expect(.rightBrace, "'}' to close group '\(name.text)'")
        }
        return GroupDecl(
            name: name, clauses: clauses, members: members, range: start..<previous.range.upperBound,
            formerNames: former)
    }

    /// param = "param" NAME ":" TYPE [ "=" expr ]
    mutating func parseParam() -> ParamDecl? {
        let start = advance().range.lowerBound
        guard let name = parseName("a param name") else {
            synchronizeToDeclaration()
            return nil
        }
        let former = parseFormerNames()
        guard expect(.colon, "':' and a type after the param name") != nil else {
            synchronizeToDeclaration()
            return nil
        }
        guard let typeToken = expect(.identifier, "a type ('bool', 'int', 'string' or 'duration')") else {
            synchronizeToDeclaration()
            return nil
        }
        let typeName = text(typeToken)
        let type = ValueType(rawValue: typeName)
        if type == nil {
            let suggestions = Suggestions.closest(to: typeName, in: ValueType.allCases.map(\.rawValue))
            sink.error(Message.unknown(.unknownType, "type", typeName, suggestions), typeToken.range)
        }
        var defaultValue: Expr?
        if match(.equal) {
            operators = 0
            defaultValue = parseExpr()
        }
        return ParamDecl(
            name: name, type: type, typeRange: typeToken.range, defaultValue: defaultValue,
            range: start..<previous.range.upperBound, formerNames: former)
    }

    /// `scenario X { on launch }`: one error at `{`, the fix turning the braces into `<` `>`
    /// when they hold only clauses; the clauses are read as the body.
    mutating func parseBracedBody() -> [Clause] {
        let open = advance()
        var close: Token?
        var ahead = index
        while ahead < tokens.count {
            let kind = tokens[ahead].kind
            if kind == .rightBrace { close = tokens[ahead] }
            if kind == .rightBrace || kind == .leftBrace || kind == .eof || kind.startsDeclaration { break }
            ahead += 1
        }
        let fixIts =
            close.map {
                [FixIt(range: open.range, replacement: "<"), FixIt(range: $0.range, replacement: ">")]
            } ?? []
        sink.error(Message.bodyInBraces, open.range, fixIts: fixIts)
        var clauses: [Clause] = []
        guard close != nil else {
            synchronizeToDeclaration()
            return clauses
        }
        while !check(.rightBrace) && !check(.eof) && !sink.isFull {
            let before = index
            if let clause = parseClause() { clauses.append(clause) } else { synchronize() }
            if !match(.semicolon) && index == before { advance() }
            if !check(.semicolon) && !check(.rightBrace) && index == before { advance() }
        }
        _ = match(.rightBrace)
        return clauses
    }

    mutating func synchronizeToDeclaration() {
        while !check(.eof) && !startsDeclaration { advance() }
    }

    /// body = "<" [ clause { ";" clause } [ ";" ] ] ">"
    mutating func parseBody(of owner: @autoclosure () -> String) -> [Clause] {
        if check(.leftBrace) { return parseBracedBody() }
        // The owner's words are made only for an error (not once for each of 10,000 bodies).
        guard match(.less) else {
            error(expected: "'<' to open the body of \(owner())")
            // Skip what would have been the body, clauses and all.
            repeat { synchronize() } while match(.semicolon)
            if check(.greater) { advance() }
            return []
        }
        var clauses: [Clause] = []
        // Room for a typical body at once, rather than growing 1, 2, 4, 8.
        clauses.reserveCapacity(8)
        var recovering = false
        while !check(.greater) && !sink.isFull {
            if check(.eof) || check(.rightBrace) || check(.leftBrace) || startsDeclaration {
                // After an error in this body the missing '>' is part of the same mistake.
                if !recovering { error(expected: "'>' to close the body of \(owner())") }
                return clauses
            }
            let before = index
            let errorsBefore = problems
            defer { if problems > errorsBefore { recovering = true } }
            if let clause = parseClause() {
                if clauses.count == Limits.maxClausesPerBody {
                    sink.error(Message.tooManyClauses, clause.range)
                }
                clauses.append(clause)
                if separatorReported {
                    separatorReported = false
                    continue
                }
                if check(.identifier), ClauseKind.keywords.contains(text(current)), problems == errorsBefore {
                    // `min_events 5 on launch`: the next clause began without a `;`.
                    let end = previous.range.upperBound
                    sink.error(
                        Message.missingSeparator, current.range,
                        fixIts: [FixIt(range: end..<end, replacement: ";")])
                    continue
                }
                if !check(.semicolon) && !check(.greater) {
                    // After an error inside the clause, the stray token is part of the same mistake.
                    if problems == errorsBefore { error(expected: "';' or '>' after the clause") }
                    synchronize()
                }
            } else {
                synchronize()
            }
            if !match(.semicolon) && index == before {
                // Nothing was consumed: skip the token so the loop always advances.
                advance()
            }
        }
        advance()
        return clauses
    }
}
