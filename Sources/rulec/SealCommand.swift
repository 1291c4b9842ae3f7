import Foundation
import RuleLang
import RuleRuntime

/// `rulec seal [--write] FILE`
enum SealCommand: Command {
    static let summary = "add the last line a delivered rules file needs (RuleDelivery)"
    static let write = Flag("--write", help: "rewrite FILE instead of printing")
    static let options = CommandOptions(
        name: "seal",
        title: "rulec seal: make a rules file ready for delivery after release.",
        operands: "FILE",
        about: """
            Checks FILE and prints it with a seal as its last line,
            '# sealed crc32=XXXXXXXX bytes=N' (the CRC-32 and the length of every byte before
            it). Every existing seal line is removed, wherever it is (a sealed file edited
            since), so the result has exactly one. RuleDelivery refuses a delivered file without
            a matching seal, or with more than one seal line: a download cut short or damaged in
            transit never becomes the rules.
            """,
        options: [write],
        exitStatus: """
            Exit status: 0 sealed, 1 errors in the rules or an unwritable file, 64 wrong usage.
            """)

    static func run(_ arguments: [String]) -> Int32 {
        let parsed = options.parse(arguments)
        if let exit = parsed.exit { return exit }
        let (operands, write) = (parsed.operands, parsed[Self.write])
        guard operands.count == 1 else {
            return CLI.misuse(operands.isEmpty ? "missing FILE" : "seal takes one FILE", usage: usage)
        }
        guard let source = CLI.readSource(operands[0]) else {
            CLI.printError("\(operands[0]): error: cannot read file")
            return ExitCode.failure
        }
        let result = RuleCompiler.check([source])
        if result.hasErrors {
            print(DiagnosticRenderer(colored: CLI.stdoutIsColorTerminal).render(result.diagnostics), terminator: "")
            return ExitCode.failure
        }
        let sealed = RuleDelivery.seal(source.bytes)
        if write {
            guard FileManager.default.createFile(atPath: operands[0], contents: Data(sealed)) else {
                CLI.printError("\(operands[0]): error: cannot write file")
                return ExitCode.failure
            }
        } else {
            FileHandle.standardOutput.write(Data(sealed))
        }
        return ExitCode.ok
    }
}
