import RuleLang

/// A command's options and help, declared once: ``parse(_:)`` reads arguments by these
/// declarations and ``help`` lists them. The conventions are swift-argument-parser's:
/// `--opt value` and `--opt=value`, `--` ends the options (what follows is an operand even
/// when it starts with `-`), `-h`/`--help` prints the help and exits 0, an unknown option or
/// a missing value exits 64 with an `error:` line and the `Usage:` line. `-` alone is an
/// operand (standard input, where a command reads one).
struct CommandOptions {
    /// One option.
    struct Option {
        /// Its spellings (`-o`, `--output`); the last is the one ``ParsedOptions`` reports.
        let names: [String]
        /// The placeholder of its value (`FILE`), or nil for a flag.
        let value: String?
        /// What it does; a `\n` starts a line of its own, indented under the first.
        let help: String

        /// True for an option the command cannot run without: the usage line shows it bare.
        let required: Bool

        init(names: [String], value: String?, required: Bool = false, help: String) {
            self.names = names
            self.value = value
            self.required = required
            self.help = help
        }

        var name: String { names[names.count - 1] }
    }

    /// The command's name: `check` (`gen swift`: the word `rulec` dispatches on, then a word
    /// the command reads as its first operand).
    let name: String
    /// The word after `rulec`.
    var word: String { String(name.split(separator: " ")[0]) }
    /// `rulec check: check .rules files as one program.`
    let title: String
    /// What follows the options on the usage line: `FILE|DIR ...`.
    let operands: String
    /// What the command does (may be empty).
    let about: String
    let options: [Option]
    /// `Exit status: ...`
    let exitStatus: String

    init(
        name: String, title: String, operands: String, about: String = "", options: [any DeclaredOption],
        exitStatus: String
    ) {
        self.name = name
        self.title = title
        self.operands = operands
        self.about = about
        self.options = options.map(\.option)
        self.exitStatus = exitStatus
    }

    /// `Usage: rulec check [--json] [--stamp FILE] FILE|DIR ...`, made from the declarations:
    /// each option by its last spelling, in brackets unless required, then the operands.
    var usage: String { "Usage: rulec " + synopsis(all: true) }

    /// The name, the options (all, or the required ones), the operands.
    func synopsis(all: Bool) -> String {
        var words = [name]
        for option in options where all || option.required {
            let spelt = option.name + (option.value.map { " " + $0 } ?? "")
            words.append(option.required ? spelt : "[" + spelt + "]")
        }
        if !operands.isEmpty { words.append(operands) }
        return words.joined(separator: " ")
    }

    /// The help text, options generated from the declarations.
    var help: String {
        let all =
            options + [
                Option(names: ["--"], value: nil, help: "ends the options"),
                Option(names: ["-h", "--help"], value: nil, help: "show this help"),
            ]
        let left = all.map { option in option.names.joined(separator: ", ") + (option.value.map { " " + $0 } ?? "") }
        let column = max(13, (left.map(\.count).max() ?? 0) + 3)
        var lines: [String] = []
        for (option, label) in zip(all, left) {
            let pad = String(repeating: " ", count: column - label.count)
            let help = option.help.split(separator: "\n", omittingEmptySubsequences: false)
            lines.append("  " + label + pad + help[0])
            for more in help.dropFirst() { lines.append(String(repeating: " ", count: column + 2) + more) }
        }
        var text = title + "\n\n" + usage + "\n\n"
        if !about.isEmpty { text += about + "\n\n" }
        return text + "Options:\n" + lines.joined(separator: "\n") + "\n\n" + exitStatus
    }

    /// The options and operands of `arguments`; with ``ParsedOptions/exit`` set when the command
    /// must end at once (the help printed, or a misuse reported).
    func parse(_ arguments: [String]) -> ParsedOptions {
        var parsed = ParsedOptions()
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || !argument.hasPrefix("-") || argument == "-" {
                parsed.operands.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            if argument == "-h" || argument == "--help" {
                print(help)
                parsed.exit = ExitCode.ok
                return parsed
            }
            let parts = argument.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            guard let option = options.first(where: { $0.names.contains(parts[0]) }) else {
                let known = options.flatMap(\.names).filter { $0.hasPrefix("--") } + ["--help"]
                return misuse(Suggestions.unknown("option", parts[0], among: known, limit: 1))
            }
            if let placeholder = option.value {
                if parts.count == 2 {
                    parsed.given.append((option.name, parts[1]))
                } else if index < arguments.count {
                    parsed.given.append((option.name, arguments[index]))
                    index += 1
                } else {
                    return misuse("'\(parts[0])' needs a value (\(placeholder))")
                }
            } else if parts.count == 2 {
                return misuse("'\(parts[0])' takes no value")
            } else {
                parsed.given.append((option.name, ""))
            }
        }
        // A required option (shown bare in the usage line) is checked here, once for every command.
        for option in options where option.required && !parsed.given.contains(where: { $0.name == option.name }) {
            return misuse("missing '" + option.name + (option.value.map { " " + $0 } ?? "") + "'")
        }
        return parsed
    }

    private func misuse(_ message: String) -> ParsedOptions {
        var parsed = ParsedOptions()
        parsed.exit = CLI.misuse(message, usage: usage)
        return parsed
    }
}

/// What ``CommandOptions/parse(_:)`` read.
struct ParsedOptions {
    /// The options given, in order, by their last spelling; a flag's value is empty.
    var given: [(name: String, value: String)] = []
    /// Everything else, in order.
    var operands: [String] = []
    /// Set when the command must return this status at once: the help was printed (0), or a
    /// misuse reported (64).
    var exit: Int32?

    /// True when `flag` was given.
    subscript(_ flag: Flag) -> Bool { given.contains { $0.name == flag.option.name } }

    /// The value of `option` given last, if any.
    subscript(_ option: Valued) -> String? { given.last { $0.name == option.option.name }?.value }

    /// The value of a required option: ``CommandOptions/parse(_:)`` refused the command line
    /// without it.
    subscript(required option: Valued) -> String { self[option] ?? "" }
}

/// An option a command declares once, as a static property, and reads through it.
protocol DeclaredOption {
    var option: CommandOptions.Option { get }
}

/// A flag: `parsed[Self.json]` is true when it was given.
struct Flag: DeclaredOption {
    let option: CommandOptions.Option

    init(_ names: String..., required: Bool = false, help: String) {
        option = .init(names: names, value: nil, required: required, help: help)
    }
}

/// An option with a value: `parsed[Self.state]` is its value given last, or nil.
struct Valued: DeclaredOption {
    let option: CommandOptions.Option

    init(_ names: String..., value: String, required: Bool = false, help: String) {
        option = .init(names: names, value: value, required: required, help: help)
    }
}
