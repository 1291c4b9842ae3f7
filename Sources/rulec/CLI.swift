import Foundation
import RuleLSP
import RuleLang
import RuleRuntime

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Exit statuses shared by every command.
enum ExitCode {
    static let ok: Int32 = 0
    /// A diagnostic of severity error (or a warning with `--warnings-as-errors`).
    static let failure: Int32 = 1
    /// The command line itself is wrong (EX_USAGE).
    static let usage: Int32 = 64
}

enum CLI {
    static let version = "\(RulesLibrary.version) (rules language \(LanguageVersion.current))"
    /// Every command, in the order `rulec --help` lists them: the one list.
    static let all: [any Command.Type] = [
        CheckCommand.self, SimulateCommand.self, GenCommand.self, FmtCommand.self, DumpCommand.self,
        StateCommand.self, ExplainCommand.self, TriggerCommand.self, DiffCommand.self, SealCommand.self,
        LSPCommand.self, ServerCommand.self,
    ]
    static var commands: [String] { all.map { $0.options.word } }
    static var mainUsage: String {
        "Usage: rulec <command> [options] ...   (commands: \(commands.joined(separator: ", ")); see 'rulec --help')"
    }

    /// `rulec --help`: each command's name and operands, then its summary.
    static var mainHelp: String {
        let left = all.map { $0.options.synopsis(all: false) }
        let column = 30
        let lines = zip(all, left).map { command, label in
            "  " + label + String(repeating: " ", count: max(2, column - label.count)) + command.summary
        }
        return """
            rulec: the command-line tool for .rules files.

            Usage: rulec <command> [options] ...

            Commands:
            \(lines.joined(separator: "\n"))

            Run 'rulec <command> --help' for a command's options.
            Exit status: 0 success, 1 errors in the input, 64 wrong usage.
            """
    }

    /// Prints `error: MESSAGE` and a usage line to standard error; returns 64.
    static func misuse(_ message: String, usage: String) -> Int32 {
        printError("error: \(message)\n\(usage)")
        return ExitCode.usage
    }

    static func printError(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// Colour only when standard output is a terminal and NO_COLOR is unset.
    static var stdoutIsColorTerminal: Bool {
        let env = ProcessInfo.processInfo.environment
        return isatty(STDOUT_FILENO) == 1 && env["NO_COLOR"] == nil && env["TERM"] != "dumb"
    }

    /// The same for standard error, where `gen` writes its diagnostics.
    static var stderrIsColorTerminal: Bool {
        let env = ProcessInfo.processInfo.environment
        return isatty(STDERR_FILENO) == 1 && env["NO_COLOR"] == nil && env["TERM"] != "dumb"
    }

    /// An engine over `sources` and a device's state in `store` (from `statePath`); nil after
    /// printing the rules' diagnostics or the store's error.
    static func engine(
        _ sources: [SourceFile], store: RuleStore, clock: RuleClock,
        options: RuleEngine.Options = .init(logSubsystem: nil),
        statePath: String
    ) -> RuleEngine? {
        do {
            return try RuleEngine(sources: sources, store: store, clock: clock, options: options)
        } catch RuleEngineError.invalidRules(let diagnostics) {
            print(DiagnosticRenderer(colored: stdoutIsColorTerminal).render(diagnostics), terminator: "")
        } catch {
            printError("\(statePath): error: \(error)")
        }
        return nil
    }

    /// Reads a file as a ``SourceFile`` keeping the path as given.
    static func readSource(_ path: String) -> SourceFile? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return SourceFile(path: path, bytes: [UInt8](data))
    }

    /// The `.rules` files named by `paths`; nil, after printing why, when a path does
    /// not exist or there is no rules file at all (both are misuse: exit 64).
    static func ruleFiles(_ paths: [String], usage: String) -> [String]? {
        guard let files = collectRuleFiles(paths) else { return nil }
        if files.isEmpty {
            _ = misuse("no .rules files found in \(paths.joined(separator: ", "))", usage: usage)
            return nil
        }
        return files
    }

    /// Reads `paths`; prints `PATH: error: cannot read file` for each it cannot read.
    static func readSources(_ paths: [String]) -> (sources: [SourceFile], unreadable: [String]) {
        var sources: [SourceFile] = []
        var unreadable: [String] = []
        for path in paths {
            if let source = readSource(path) {
                sources.append(source)
            } else {
                printError("\(path): error: cannot read file")
                unreadable.append(path)
            }
        }
        return (sources, unreadable)
    }

    /// The `.rules` files named by `paths`: files as given, directories searched recursively
    /// (sorted; hidden entries and directories holding `.rulecignore` are skipped). A directory
    /// reached twice (through symbolic links, a cycle included) is searched once, and a file
    /// reached by two paths (device and inode) is listed once, under the first path found.
    /// Returns nil after printing an error when a path does not exist.
    static func collectRuleFiles(_ paths: [String]) -> [String]? {
        var search = DirectorySearch()
        var result: [String] = []
        let fm = FileManager.default
        for path in paths {
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: path, isDirectory: &isDirectory) else {
                printError("error: no such file or directory: '\(path)'")
                return nil
            }
            if isDirectory.boolValue {
                result += search.files(in: path)
            } else if search.firstVisit(path) {
                result.append(path)
            }
        }
        return result
    }
}
