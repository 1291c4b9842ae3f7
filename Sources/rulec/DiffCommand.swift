import Foundation
import RuleLang
import RuleRuntime
import RuleTools

/// `rulec diff [--json] [--state FILE [--at TIME]] OLD NEW`
enum DiffCommand: Command {
    static let summary = "what changing the rules does to users' history; exit 1 on a loss"
    static let json = Flag("--json", help: "print one JSON object per finding, one per line")
    static let state = Valued(
        "--state", value: "FILE",
        help:
            "also say which scenarios' answers change for the state in FILE\n(read, never written), and the clause that changes each"
    )
    static let at = Valued(
        "--at", value: "TIME",
        help: "with --state: ask at TIME, ISO 8601 ('2026-03-01T12:00:00Z') or\nseconds since 1970; default now"
    )
    static let options = CommandOptions(
        name: "diff",
        title: "rulec diff: what changing the rules from OLD to NEW does to users who already have state.",
        operands: "OLD NEW",
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
        options: [json, state, at, JudgedState.installID, JudgedState.timeZone],
        exitStatus: """
            Exit status: 0 nothing would lose history, 1 something would (or errors in the
            rules, or an unreadable state), 64 wrong usage.
            """)

    static func run(_ arguments: [String]) -> Int32 {
        let parsed = options.parse(arguments)
        if let exit = parsed.exit { return exit }
        let (json, statePath, operands) = (parsed[Self.json], parsed[Self.state], parsed.operands)
        var at = Date()
        if let value = parsed[Self.at] {
            guard let date = ExplainCommand.parseTime(value) else {
                return CLI.misuse(
                    "'\(value)' is not a time; use ISO 8601 ('2026-03-01T12:00:00Z') or seconds since 1970",
                    usage: usage)
            }
            guard statePath != nil else { return CLI.misuse("'--at' needs '--state FILE'", usage: usage) }
            at = date
        }
        if statePath == nil && (parsed[JudgedState.installID] != nil || parsed[JudgedState.timeZone] != nil) {
            return CLI.misuse("'--install-id' and '--time-zone' need '--state FILE'", usage: usage)
        }
        guard operands.count == 2 else {
            return CLI.misuse(
                operands.count < 2 ? "diff needs OLD and NEW rules" : "diff takes two rules: OLD and NEW", usage: usage)
        }
        if let statePath, let exit = StateFile.misuseIfMissing(statePath, usage: usage) { return exit }
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
            guard let entries = StateFile.entries(statePath) else { return ExitCode.failure }
            let snapshot = try? StateSnapshot(entries: entries)
            guard
                let options = JudgedState.options(
                    parsed, state: snapshot, path: statePath, at: parsed[Self.at] == nil ? nil : at, usage: usage)
            else { return ExitCode.usage }
            guard
                let changes = answerChanges(
                    entries, path: statePath, old: oldSources, new: newSources, at: at, options: options,
                    parsed: parsed, state: snapshot)
            else { return ExitCode.failure }
            for change in changes {
                if json {
                    var object = [
                        "scenario": change.scenario, "before": change.before, "after": change.after,
                        "state": statePath, "reason": change.reason,
                    ]
                    if let former = change.formerly { object["formerly"] = former }
                    print(JSONLine.encode(object))
                } else {
                    print("\(statePath): \(change.description)")
                }
            }
            if changes.isEmpty && !json {
                let zone = options.timeZone ?? TimeZone.current
                let when = parsed[Self.at] == nil ? "now" : "at " + LocalTimeText.iso8601(at, in: zone)
                print("\(statePath): no answer changes \(when)")
            }
        }
        if !json {
            CLI.printError(
                losses == 0
                    ? "no history would be lost (\(findings.count) change\(findings.count == 1 ? "" : "s"))"
                    : "\(losses) change\(losses == 1 ? "" : "s") would lose history")
        }
        return losses > 0 ? ExitCode.failure : ExitCode.ok
    }

    /// A scenario whose answer the new rules change, for one state.
    struct AnswerChange {
        /// Its name in the new rules (in the old ones when they alone have it).
        var scenario: String
        /// Its name in the old rules, when the new ones renamed it.
        var formerly: String?
        /// `yes`, `no` or `absent`, with the old rules and with the new.
        var before: String
        var after: String
        /// What says no: the failing clauses of the side that answers no (both, when both do).
        var reason: String

        var description: String {
            let name = scenario + (formerly.map { " (formerly \($0))" } ?? "")
            return "\(name): \(before) now, \(after) with the new rules" + (reason.isEmpty ? "" : ": \(reason)")
        }
    }

    /// The scenarios (of either rules) whose `canExecute` answer for the state in `path`
    /// differs between the old and the new rules at `at`, a renamed one (`was`) paired with its
    /// former name; the file is read, never written.
    static func answerChanges(
        _ entries: [String: [UInt8]], path: String, old: [SourceFile], new: [SourceFile], at: Date,
        options: RuleEngine.Options, parsed: ParsedOptions, state: StateSnapshot?
    ) -> [AnswerChange]? {
        let clock = FixedClock(date: at)
        do {
            let before = try RuleEngine(sources: old, store: InMemoryStore(entries), clock: clock, options: options)
            let after = try RuleEngine(sources: new, store: InMemoryStore(entries), clock: clock, options: options)
            JudgedState.warnWithoutInstallID([before, after], parsed, state: state, path: path)
            let oldNames = Set(before.scenarioNames)
            // The new rules' former names of each scenario that the old rules declare.
            var formerOf: [String: String] = [:]
            for rename in after.program.renames where rename.kind == .scenario {
                if let former = rename.formerNames.first(where: { oldNames.contains($0.text) }) {
                    formerOf[rename.name.text] = former.text
                }
            }
            let paired = Set(formerOf.values)
            func answer(_ engine: RuleEngine, _ name: String?) -> (String, String) {
                guard let name, engine.scenarioNames.contains(name) else { return ("absent", "") }
                let explanation = engine.explain(Scenario(name))
                return explanation.wouldRun ? ("yes", "") : ("no", explanation.reason)
            }
            var changes: [AnswerChange] = []
            func compare(_ name: String, formerly: String?, old oldName: String?, new newName: String?) {
                let (a, whyBefore) = answer(before, oldName)
                let (b, whyAfter) = answer(after, newName)
                guard a != b else { return }
                let reason = [whyBefore, whyAfter].filter { !$0.isEmpty }.joined(separator: "; ")
                changes.append(AnswerChange(scenario: name, formerly: formerly, before: a, after: b, reason: reason))
            }
            for name in after.scenarioNames {
                let former = formerOf[name]
                compare(name, formerly: former, old: former ?? (oldNames.contains(name) ? name : nil), new: name)
            }
            for name in before.scenarioNames where !after.scenarioNames.contains(name) && !paired.contains(name) {
                compare(name, formerly: nil, old: name, new: nil)
            }
            return changes
        } catch {
            CLI.printError("\(path): error: \(error)")
            return nil
        }
    }
}
