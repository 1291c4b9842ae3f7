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
switch arguments.first {
case "check": status = CheckCommand.run(Array(arguments.dropFirst()))
case "simulate": status = SimulateCommand.run(Array(arguments.dropFirst()))
case "gen": status = GenCommand.run(Array(arguments.dropFirst()))
case "state": status = StateCommand.run(Array(arguments.dropFirst()))
case "fmt": status = FmtCommand.run(Array(arguments.dropFirst()))
case "dump": status = DumpCommand.run(Array(arguments.dropFirst()))
case "explain": status = ExplainCommand.run(Array(arguments.dropFirst()))
case "trigger": status = TriggerCommand.run(Array(arguments.dropFirst()))
case "diff": status = DiffCommand.run(Array(arguments.dropFirst()))
case "seal": status = SealCommand.run(Array(arguments.dropFirst()))
case "lsp": status = LSPCommand.run(Array(arguments.dropFirst()))
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
exit(status)
