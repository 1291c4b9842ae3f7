import Foundation
import RuleLang

/// `rulec gen swift RULES... [-o FILE] [--access public|internal]`
enum GenCommand {
    static let usage = "Usage: rulec gen swift [-o FILE] [--access public|internal] FILE|DIR ..."
    static let help = """
        rulec gen swift: Swift constants for the names of .rules files.

        \(usage)

        Checks the files as one program (as 'rulec check' does) and, when there is no
        error, writes Swift source with one typed constant per scenario, group, event and
        param, so the app names them through the compiler:

            extension Scenario { static let askToSubscribe: Scenario = "AskToSubscribe" }
            extension Event { static let launch: Event = "launch" }
            extension Param where Value == Bool { static let isSubscribed: Param<Bool> = "is_subscribed" }

        The events are the declared ones ('event launch, ...'), or, in a program that
        declares none, every stream the rules name. Names become lowerCamelCase Swift
        identifiers; two rule names that become one are an error. Diagnostics go to
        standard error, the source to standard output or FILE.

        Options:
          -o, --output FILE      write the source to FILE (replaced whole) instead of standard output
          --access LEVEL         'internal' (the default) or 'public'
          -h, --help             show this help

        Exit status: 0 written, 1 errors in the rules, 64 wrong usage.
        """

    static func run(_ arguments: [String]) -> Int32 {
        guard let language = arguments.first else {
            return CLI.misuse("missing language: 'rulec gen swift ...'", usage: usage)
        }
        if language == "-h" || language == "--help" {
            print(help)
            return ExitCode.ok
        }
        guard language == "swift" else {
            return CLI.misuse(Suggestions.unknown("language", language, among: ["swift"], limit: 1), usage: usage)
        }
        var paths: [String] = []
        var output: String?
        var access = SwiftGenerator.Access.internal
        var onlyPaths = false
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            if onlyPaths || !argument.hasPrefix("-") || argument == "-" {
                paths.append(argument)
                continue
            }
            switch argument {
            case "--": onlyPaths = true
            case "-o", "--output":
                guard let value = iterator.next() else { return CLI.misuse("'\(argument)' needs a FILE", usage: usage) }
                output = value
            case "--access":
                guard let value = iterator.next() else {
                    return CLI.misuse("'--access' needs 'public' or 'internal'", usage: usage)
                }
                guard let level = SwiftGenerator.Access(rawValue: value) else {
                    return CLI.misuse(
                        Suggestions.unknown("access level", value, among: ["public", "internal"], limit: 1),
                        usage: usage)
                }
                access = level
            case "-h", "--help":
                print(help)
                return ExitCode.ok
            default:
                let options = ["--output", "--access", "--help"]
                return CLI.misuse(Suggestions.unknown("option", argument, among: options, limit: 1), usage: usage)
            }
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
