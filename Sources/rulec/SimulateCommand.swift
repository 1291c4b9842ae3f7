enum SimulateCommand {
    static func run(_ arguments: [String]) -> Int32 {
        CLI.misuse("'simulate' is not available yet", usage: "Usage: rulec simulate RULES... TIMELINE [--json]")
    }
}
