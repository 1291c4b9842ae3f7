import Foundation
import RuleLang
import RuleTools

/// `rulec fmt [--check | --write] [--width N] FILE|DIR ...`
enum FmtCommand: Command {
    static let summary = "print or rewrite files in the canonical layout"
    static let check = Flag("--check", help: "list the files that would change; exit 1 if any")
    static let write = Flag("--write", help: "rewrite the files that change, in place")
    static let width = Valued("--width", value: "N", help: "wrap a body one clause a line past N columns (default 100)")
    static let options = CommandOptions(
        name: "fmt",
        title: "rulec fmt: the canonical layout of .rules files (grammar.md, \"Layout\").",
        operands: "FILE|DIR ...",
        about: """
            Prints each file in the canonical layout to standard output, or with --write
            replaces the files that change, or with --check lists them and exits 1. Comments
            stay where they were; clause order and meaning never change. A file with errors
            is left alone and its diagnostics printed.
            """,
        options: [check, write, width],
        exitStatus: """
            Exit status: 0 done (or, with --check, nothing to change), 1 a file would change
            or has errors, 64 wrong usage.
            """)

    static func run(_ arguments: [String]) -> Int32 {
        let parsed = options.parse(arguments)
        if let exit = parsed.exit { return exit }
        let (check, write, paths) = (parsed[Self.check], parsed[Self.write], parsed.operands)
        var width = 100
        if let value = parsed[Self.width] {
            guard let number = Int(value), number >= 20, number <= 10_000 else {
                return CLI.misuse("'--width' needs a number from 20 to 10000", usage: usage)
            }
            width = number
        }
        if check && write { return CLI.misuse("'--check' and '--write' do not go together", usage: usage) }
        if paths.isEmpty { return CLI.misuse("missing FILE or DIR to format", usage: usage) }
        guard let files = CLI.ruleFiles(paths, usage: usage) else { return ExitCode.usage }
        var status = ExitCode.ok
        var changed: [String] = []
        for path in files {
            guard let source = CLI.readSource(path) else {
                CLI.printError("\(path): error: cannot read file")
                status = ExitCode.failure
                continue
            }
            let (text, diagnostics) = Formatter.format(source, width: width)
            guard let text else {
                FileHandle.standardError.write(Data(DiagnosticRenderer().render(diagnostics).utf8))
                status = ExitCode.failure
                continue
            }
            let same = Array(text.utf8) == source.bytes
            if check {
                if !same {
                    print(path)
                    changed.append(path)
                }
            } else if write {
                guard !same else { continue }
                do {
                    try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
                    print(path)
                } catch {
                    CLI.printError("\(path): error: cannot write: \(error.localizedDescription)")
                    status = ExitCode.failure
                }
            } else {
                print(text, terminator: "")
            }
        }
        if check && !changed.isEmpty {
            CLI.printError("\(changed.count) file\(changed.count == 1 ? "" : "s") would be reformatted")
            return ExitCode.failure
        }
        return status
    }
}
