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

        init(_ names: String..., value: String? = nil, help: String) {
            self.names = names
            self.value = value
            self.help = help
        }

        var name: String { names[names.count - 1] }
    }

    /// `rulec check: check .rules files as one program.`
    let title: String
    /// `Usage: rulec check ...`
    let usage: String
    /// What the command does (may be empty).
    let about: String
    let options: [Option]
    /// `Exit status: ...`
    let exitStatus: String

    /// The help text, options generated from the declarations.
    var help: String {
        let all = options + [Option("--", help: "ends the options"), Option("-h", "--help", help: "show this help")]
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

    /// True when the flag or option `name` was given.
    func has(_ name: String) -> Bool { given.contains { $0.name == name } }

    /// The value of option `name` given last, if any.
    func value(_ name: String) -> String? { given.last { $0.name == name }?.value }
}
