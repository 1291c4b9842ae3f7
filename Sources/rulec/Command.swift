/// One `rulec` command: declared once (its name, options and help in ``options``, its line in
/// `rulec --help` in ``summary``), listed once in ``CLI/all``.
protocol Command: Sendable {
    /// The name, options, operands and help.
    static var options: CommandOptions { get }
    /// What it does, for `rulec --help`.
    static var summary: String { get }
    /// Runs it with the arguments after its name; returns the exit status.
    static func run(_ arguments: [String]) -> Int32
}

extension Command {
    /// The usage line, made from ``options``.
    static var usage: String { options.usage }
    /// `rulec NAME --help`.
    static var help: String { options.help }
}
