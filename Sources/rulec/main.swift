import RuleLang

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
let status: Int32
if let name = arguments.first, let command = CLI.all.first(where: { $0.options.word == name }) {
    status = command.run(Array(arguments.dropFirst()))
} else {
    switch arguments.first {
    case "--help", "-h", "help":
        print(CLI.mainHelp)
        status = ExitCode.ok
    case "--version":
        print("rulec \(CLI.version)")
        status = ExitCode.ok
    case nil:
        status = CLI.misuse("missing command", usage: CLI.mainUsage)
    case let other?:
        status = CLI.misuse(Suggestions.unknown("command", other, among: CLI.commands, limit: 1), usage: CLI.mainUsage)
    }
}
exit(status)
