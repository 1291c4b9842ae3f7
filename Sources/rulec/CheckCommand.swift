import Foundation
import RuleLang

/// `rulec check FILE|DIR ... [--warnings-as-errors] [--json]`
enum CheckCommand: Command {
    static let summary = "check rules; print diagnostics; exit 1 on any error"
    static let warningsAsErrors = Flag("--warnings-as-errors", help: "report warnings as errors (and exit 1 on them)")
    static let json = Flag("--json", help: "print one JSON object per diagnostic, one per line")
    static let stamp = Valued("--stamp", value: "FILE", help: "when there is no error, write FILE (for build systems)")
    static let language = Valued(
        "--language", value: "X.Y",
        help: "check that the files load on apps reading language X.Y\n(default: the newest this rulec reads)")
    static let options = CommandOptions(
        name: "check",
        title: "rulec check: check .rules files as one program.",
        operands: "FILE|DIR ...",
        about: """
            Checks every .rules file named, and every .rules file below each directory
            (recursively; hidden entries and directories holding a '.rulecignore' file
            are skipped). All files are checked together: a scenario name may be
            declared only once across them. Diagnostics are printed sorted by file and
            position as 'path:line:col: severity: message' with the source line.
            """,
        options: [warningsAsErrors, json, stamp, language],
        exitStatus: "Exit status: 0 no errors, 1 any error, 64 wrong usage.")

    static func run(_ arguments: [String]) -> Int32 {
        let parsed = options.parse(arguments)
        if let exit = parsed.exit { return exit }
        let paths = parsed.operands
        let json = parsed[Self.json]
        let warningsAsErrors = parsed[Self.warningsAsErrors]
        let stamp = parsed[Self.stamp]
        var language = LanguageVersion.current
        if let argument = parsed[Self.language] {
            guard let version = LanguageVersion(argument), version >= .initial, version <= .current else {
                return CLI.misuse(
                    "'--language' takes a version from 1.0 to \(LanguageVersion.current), not '\(argument)'",
                    usage: usage)
            }
            language = version
        }
        if paths.isEmpty { return CLI.misuse("missing FILE or DIR to check", usage: usage) }
        guard let files = CLI.ruleFiles(paths, usage: usage) else { return ExitCode.usage }
        let (sources, unreadable) = CLI.readSources(files)
        var diagnostics = RuleCompiler.check(sources, language: language).diagnostics
        if warningsAsErrors {
            for index in diagnostics.indices where diagnostics[index].severity == .warning {
                diagnostics[index].severity = .error
            }
        }
        if json {
            for diagnostic in diagnostics { print(JSONDiagnostic.line(diagnostic)) }
        } else {
            print(DiagnosticRenderer(colored: CLI.stdoutIsColorTerminal).render(diagnostics), terminator: "")
            let errors = diagnostics.filter { $0.severity == .error }.count + unreadable.count
            let warnings = diagnostics.filter { $0.severity == .warning }.count
            CLI.printError(summary(files: files.count, errors: errors, warnings: warnings))
        }
        if diagnostics.hasErrors || !unreadable.isEmpty { return ExitCode.failure }
        if let stamp, !FileManager.default.createFile(atPath: stamp, contents: Data()) {
            CLI.printError("error: cannot write stamp file '\(stamp)'")
            return ExitCode.failure
        }
        return ExitCode.ok
    }

    static func summary(files: Int, errors: Int, warnings: Int) -> String {
        func plural(_ n: Int, _ word: String) -> String { "\(n) \(word)\(n == 1 ? "" : "s")" }
        return "checked \(plural(files, "file")): \(plural(errors, "error")), \(plural(warnings, "warning"))"
    }
}

/// The `--json` form of a diagnostic: one object per line, keys sorted.
struct JSONDiagnostic: Encodable {
    struct Position: Encodable {
        var file: String
        var line: Int
        var column: Int
        var endLine: Int
        var endColumn: Int

        init(_ span: SourceSpan) {
            let start = span.file.location(of: span.range.lowerBound)
            let end = span.file.location(of: span.range.upperBound)
            file = span.file.path
            line = start.line
            column = start.column
            endLine = end.line
            endColumn = end.column
        }
    }
    struct Note: Encodable {
        var message: String
        var position: Position?
    }
    struct Fix: Encodable {
        var position: Position
        var replacement: String
    }

    var id: String
    var severity: String
    var message: String
    var position: Position
    var notes: [Note]
    var fixIts: [Fix]

    static func line(_ diagnostic: Diagnostic) -> String {
        let value = JSONDiagnostic(
            id: diagnostic.id.rawValue, severity: diagnostic.severity.rawValue, message: diagnostic.message,
            position: Position(diagnostic.span),
            notes: diagnostic.notes.map { Note(message: $0.message, position: $0.span.map(Position.init)) },
            fixIts: diagnostic.fixIts.map {
                Fix(position: Position(SourceSpan(diagnostic.file, $0.range)), replacement: $0.replacement)
            })
        return JSONLine.encode(value)
    }
}

enum JSONLine {
    static func encode<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
