import Foundation
import RuleLang
import RuleRuntime

/// `rulec diff [--json] [--state FILE] OLD NEW`
enum DiffCommand {
    static let options = CommandOptions(
        title: "rulec diff: what changing the rules from OLD to NEW does to users who already have state.",
        usage: "Usage: rulec diff [--json] [--state FILE] OLD NEW",
        about: """
            OLD and NEW are a rules file or a directory of them (each checked as one program).
            Lists, located in NEW (or in OLD for something removed):
              warning  a scenario, group, param or event removed (its users' history is
                       orphaned); a probable rename without 'was' (same clauses or a close
                       name), with a fix-it adding 'was OLDNAME'
              note     a rename with 'was' (the history moves); an 'on' list changed (the view
                       is rebuilt from history); a threshold, window, duration or cap changed,
                       and in which direction; a scenario moved into or out of a group; a
                       param's type changed (stored values are ignored)
            """,
        options: [
            .init("--json", help: "print one JSON object per finding, one per line"),
            .init(
                "--state", value: "FILE",
                help: "also say which scenarios' answers change right now for the state\nin FILE (read, never written)"),
        ],
        exitStatus: """
            Exit status: 0 nothing would lose history, 1 something would (or errors in the
            rules, or an unreadable state), 64 wrong usage.
            """)
    static var usage: String { options.usage }
    static var help: String { options.help }

    static func run(_ arguments: [String]) -> Int32 {
        let parsed = options.parse(arguments)
        if let exit = parsed.exit { return exit }
        let (json, statePath, operands) = (parsed.has("--json"), parsed.value("--state"), parsed.operands)
        guard operands.count == 2 else {
            return CLI.misuse(
                operands.count < 2 ? "diff needs OLD and NEW rules" : "diff takes two rules: OLD and NEW", usage: usage)
        }
        guard let oldFiles = CLI.ruleFiles([operands[0]], usage: usage),
            let newFiles = CLI.ruleFiles([operands[1]], usage: usage)
        else { return ExitCode.usage }
        let (oldSources, oldUnreadable) = CLI.readSources(oldFiles)
        let (newSources, newUnreadable) = CLI.readSources(newFiles)
        guard oldUnreadable.isEmpty, newUnreadable.isEmpty else { return ExitCode.failure }
        let old = RuleCompiler.check(oldSources)
        let new = RuleCompiler.check(newSources)
        if old.hasErrors || new.hasErrors {
            let errors = (old.diagnostics + new.diagnostics).filter { $0.severity == .error }
            print(DiagnosticRenderer(colored: CLI.stdoutIsColorTerminal).render(errors), terminator: "")
            return ExitCode.failure
        }
        let findings = RuleDiff.compare(old: old.program, new: new.program)
        if json {
            for finding in findings { print(JSONDiagnostic.line(finding)) }
        } else {
            print(DiagnosticRenderer(colored: CLI.stdoutIsColorTerminal).render(findings), terminator: "")
        }
        let losses = findings.filter(RuleDiff.losesHistory).count
        if let statePath {
            guard let changes = answerChanges(statePath, old: oldSources, new: newSources) else {
                return ExitCode.failure
            }
            for change in changes {
                if json {
                    print(
                        JSONLine.encode([
                            "scenario": change.scenario, "before": change.before, "after": change.after,
                            "state": statePath,
                        ]))
                } else {
                    print("\(statePath): \(change.scenario): \(change.before) now, \(change.after) with the new rules")
                }
            }
            if changes.isEmpty && !json { print("\(statePath): no answer changes now") }
        }
        if !json {
            CLI.printError(
                losses == 0
                    ? "no history would be lost (\(findings.count) change\(findings.count == 1 ? "" : "s"))"
                    : "\(losses) change\(losses == 1 ? "" : "s") would lose history")
        }
        return losses > 0 ? ExitCode.failure : ExitCode.ok
    }

    /// The scenarios (of either rules) whose `canExecute` answer for the state in `path`
    /// differs between the old and the new rules, now. The file is read, never written.
    static func answerChanges(_ path: String, old: [SourceFile], new: [SourceFile]) -> [(
        scenario: String, before: String, after: String
    )]? {
        guard let entries = StateFile.entries(path) else { return nil }
        let clock = FixedClock(date: Date())
        let options = RuleEngine.Options(logSubsystem: nil)
        do {
            let before = try RuleEngine(sources: old, store: InMemoryStore(entries), clock: clock, options: options)
            let after = try RuleEngine(sources: new, store: InMemoryStore(entries), clock: clock, options: options)
            var names = before.scenarioNames
            for name in after.scenarioNames where !names.contains(name) { names.append(name) }
            func answer(_ engine: RuleEngine, _ name: String) -> String {
                engine.scenarioNames.contains(name) ? (engine.canExecute(name) ? "yes" : "no") : "absent"
            }
            return names.compactMap { name in
                let (a, b) = (answer(before, name), answer(after, name))
                return a == b ? nil : (name, a, b)
            }
        } catch {
            CLI.printError("\(path): error: \(error)")
            return nil
        }
    }
}
