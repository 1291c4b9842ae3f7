/// A scenario of a checked program, with the group it belongs to.
public struct ScenarioInfo: Sendable {
    /// The scenario's declaration.
    public var decl: ScenarioDecl
    /// The enclosing group's name, if any.
    public var group: String?
    /// The file it is declared in.
    public var file: SourceFile
    /// The scenario's name.
    public var name: String { decl.name.text }
}

/// The declarations of one or more files checked together, as one program.
public struct RuleProgram: Sendable {
    /// The files, in the order given.
    public var files: [RuleFile]
    /// Every scenario, group members included, in declaration order.
    public var scenarios: [ScenarioInfo]
    /// Every group, in declaration order.
    public var groups: [GroupDecl]
    /// Every param, each once, in declaration order.
    public var params: [ParamDecl]
    /// Declared events, each once, in declaration order (empty when none is declared).
    public var events: [Name] = []
    /// The typed properties of each declared event that has any (language 1.2).
    public var properties: [String: [PropertyDecl]] = [:]
}

extension RuleProgram {
    /// Every stream the program knows, in first-mention order: declared events, streams named
    /// by `on` and by functions (`count`, `since_first`, `since_last`, `todo`), and the own stream
    /// of each scenario without `on`.
    public var knownStreams: [String] {
        var seen = Set<String>()
        var result: [String] = []
        func add(_ name: String) { if seen.insert(name).inserted { result.append(name) } }
        for event in events { add(event.text) }
        for file in files {
            for declaration in file.declarations {
                var bodies: [(String, [Clause], Bool)] = []
                switch declaration {
                case .scenario(let scenario): bodies = [(scenario.name.text, scenario.clauses, true)]
                case .group(let group):
                    bodies = [(group.name.text, group.clauses, false)]
                    bodies += group.members.map { ($0.name.text, $0.clauses, true) }
                case .param, .event: break
                }
                for (name, clauses, isScenario) in bodies {
                    let hasOn = clauses.contains { if case .on = $0.kind { return true } else { return false } }
                    if isScenario && !hasOn { add(name) }
                    for (stream, _, _) in RuleProgram.streams(clauses, file.source, name) { add(stream.text) }
                }
            }
        }
        return result
    }
}

/// Files parsed and not yet checked (`RuleCompiler.parse(_:)`).
public struct ParsedRules: Sendable {
    /// The files, in the order given; a file with syntax errors holds what could be read.
    public var files: [RuleFile] = []
    /// The syntax errors and warnings found.
    public var diagnostics: [Diagnostic] = []

    /// Nothing parsed yet.
    public init() {}
}

/// The result of parsing and checking sources together.
public struct CheckResult: Sendable {
    /// The program, as far as it could be read; complete when there is no error.
    public var program: RuleProgram
    /// Sorted by file and position.
    public var diagnostics: [Diagnostic]
    /// True when any diagnostic is an error.
    public var hasErrors: Bool { diagnostics.hasErrors }
}

/// The front end's entry point.
public enum RuleCompiler {
    /// Parses and checks `sources` as one program. Never throws and never traps, whatever the bytes.
    /// `language` is the oldest language version the file must load on (`rulec check --language`):
    /// a file declaring a newer one is an error.
    public static func check(_ sources: [SourceFile], language: LanguageVersion = .current) -> CheckResult {
        check(parse(sources), language: language)
    }

    /// Parses `sources` without checking them: `check(_:language:)` with the result checks
    /// what this returns, and the declarations can be read meanwhile (an engine reads the
    /// names its rules list on another thread while they are checked).
    public static func parse(_ sources: [SourceFile]) -> ParsedRules {
        var parsed = ParsedRules()
        for source in sources {
            let (file, parseDiagnostics) = Parser.parse(source)
            parsed.files.append(file)
            parsed.diagnostics += parseDiagnostics
        }
        return parsed
    }

    /// Checks parsed files together as one program, as checking the sources does.
    public static func check(_ parsed: ParsedRules, language: LanguageVersion = .current) -> CheckResult {
        var diagnostics = parsed.diagnostics
        var checker = Checker(files: parsed.files)
        diagnostics += checker.run()
        diagnostics += VersionAndRenameChecks.run(checker.program, target: language)
        return CheckResult(program: checker.program, diagnostics: diagnostics.sortedByPosition().capped())
    }

    /// Convenience: checks one text.
    public static func check(text: String, path: String = "<input>") -> CheckResult {
        check([SourceFile(path: path, text: text)])
    }
}

extension RuleCompiler {
    /// Parses and type-checks one bool expression in `range` of `file` against a
    /// checked program's params and scenarios (timelines' `check` lines use it).
    /// Here `<` and `>` compare without parentheses.
    public static func checkExpression(
        _ file: SourceFile, range: SourceRange,
        in program: RuleProgram
    ) -> (expr: Expr, diagnostics: [Diagnostic]) {
        var checker = ExpressionChecker(program: program)
        return checker.check(file, range: range)
    }
}

/// Checks many lone conditions against one program, collecting its declarations once
/// (a timeline's `check` lines, `RuleEngine`'s `check(_:)`).
public struct ExpressionChecker: Sendable {
    private var checker: Checker

    /// A checker for conditions against `program`'s declarations.
    public init(program: RuleProgram) {
        checker = Checker(files: program.files)
        checker.collectOnce()
    }

    /// Parses and type-checks the bool expression in `range` of `file`; `<` and `>` compare without parentheses.
    public mutating func check(_ file: SourceFile, range: SourceRange) -> (expr: Expr, diagnostics: [Diagnostic]) {
        let (expr, parseDiagnostics) = Parser.parseExpression(file, range: range)
        if parseDiagnostics.hasErrors { return (expr, parseDiagnostics) }
        return (expr, parseDiagnostics + checker.checkStandalone(expr, file))
    }
}

extension RuleProgram {
    /// The streams `clauses` name (`on`, and stream and to-do arguments of functions).
    package static func streams(_ clauses: [Clause], _ file: SourceFile, _ user: String) -> [(Name, SourceFile, String)]
    {
        var result: [(Name, SourceFile, String)] = []
        func visit(_ expr: Expr) {
            switch expr.kind {
            case .unary(_, let operand), .parenthesized(let operand): visit(operand)
            case .binary(_, let lhs, let rhs):
                visit(lhs)
                visit(rhs)
            case .call(let function, let argument, _, let outcome, _, _):
                // A scenario's outcomes are its own, not a stream the app triggers.
                if outcome == nil, let builtin = BuiltinFunction(rawValue: function.text),
                    builtin.argument != .scenarioOrGroup
                {
                    result.append((argument, file, user))
                }
            case .integer, .duration, .string, .bool, .name, .invalid: break
            }
        }
        for clause in clauses {
            switch clause.kind {
            case .on(let names): result += names.map { ($0, file, user) }
            case .when(let expr): visit(expr)
            default: break
            }
        }
        return result
    }
}
