import Foundation
import RuleLang
import RuleTools

/// `rulec gen swift RULES... [-o FILE] [--access public|internal]`
enum GenCommand: Command {
    static let summary = "write Swift constants for the rules' names (checks first)"
    static let output = Valued(
        "-o", "--output", value: "FILE",
        help: "write the source to FILE (replaced whole) instead of standard output")
    static let access = Valued("--access", value: "LEVEL", help: "'internal' (the default) or 'public'")
    static let options = CommandOptions(
        name: "gen swift",
        title: "rulec gen swift: Swift constants for the names of .rules files.",
        operands: "FILE|DIR ...",
        about: """
            Checks the files as one program (as 'rulec check' does) and, when there is no
            error, writes Swift source with one typed constant per scenario, group, event and
            param, so the app names them through the compiler:

                extension Scenario { static let askToSubscribe = Scenario(resolvingOnce: "AskToSubscribe") }
                extension Event { static let launch = Event(resolvingOnce: "launch") }
                extension Param where Value == Bool { static let isSubscribed = Param<Bool>(resolvingOnce: "is_subscribed") }

            The events are the declared ones ('event launch, ...'), or, in a program that
            declares none, every stream the rules name. Names become lowerCamelCase Swift
            identifiers; two rule names that become one are an error. Diagnostics go to
            standard error, the source to standard output or FILE.
            """,
        options: [output, access],
        exitStatus: "Exit status: 0 written, 1 errors in the rules, 64 wrong usage.")

    static func run(_ arguments: [String]) -> Int32 {
        let parsed = options.parse(arguments)
        if let exit = parsed.exit { return exit }
        guard let language = parsed.operands.first else {
            return CLI.misuse("missing language: 'rulec gen swift ...'", usage: usage)
        }
        guard language == "swift" else {
            return CLI.misuse(Suggestions.unknown("language", language, among: ["swift"], limit: 1), usage: usage)
        }
        let paths = Array(parsed.operands.dropFirst())
        let output = parsed[Self.output]
        var access = SwiftGenerator.Access.internal
        if let value = parsed[Self.access] {
            guard let level = SwiftGenerator.Access(rawValue: value) else {
                return CLI.misuse(
                    Suggestions.unknown("access level", value, among: ["public", "internal"], limit: 1), usage: usage)
            }
            access = level
        }
        if paths.isEmpty { return CLI.misuse("missing FILE or DIR to generate from", usage: usage) }
        guard let files = CLI.ruleFiles(paths, usage: usage) else { return ExitCode.usage }
        let (sources, unreadable) = CLI.readSources(files)
        let (source, diagnostics) = SwiftGenerator.generate(RuleCompiler.check(sources), access: access)
        if !diagnostics.isEmpty {
            let rendered = DiagnosticRenderer(colored: CLI.stderrIsColorTerminal).render(diagnostics)
            FileHandle.standardError.write(Data(rendered.utf8))
        }
        guard let source, unreadable.isEmpty else {
            let errors = diagnostics.filter { $0.severity == .error }.count + unreadable.count
            let warnings = diagnostics.filter { $0.severity == .warning }.count
            CLI.printError(CheckCommand.summary(files: files.count, errors: errors, warnings: warnings))
            CLI.printError("error: no Swift source generated")
            return ExitCode.failure
        }
        guard let output else {
            print(source, terminator: "")
            return ExitCode.ok
        }
        do {
            try Data(source.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
        } catch {
            CLI.printError("error: cannot write '\(output)': \(error.localizedDescription)")
            return ExitCode.failure
        }
        return ExitCode.ok
    }
}
