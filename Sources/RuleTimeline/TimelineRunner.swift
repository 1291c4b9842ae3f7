import Foundation
import RuleLang
@_spi(Tools) import RuleRuntime

/// Replays timelines (the format of `grammar.md`, section 10) against an engine:
/// `rulec simulate` uses it, and so can an app's own tests.
///
/// ```swift
/// let lines = try TimelineRunner.replay(
///     rules: [SourceFile(path: "app.rules", text: rules)],
///     timeline: SourceFile(path: "launch.timeline", text: "0 trigger launch\n1d try Onboarding\n"))
/// XCTAssertEqual(lines, ["1d Onboarding yes"])
/// ```
public enum TimelineRunner {
    /// Why a replay could not start: the rules or the timeline have errors, located.
    public struct Failure: Error, CustomStringConvertible {
        /// The errors, located in the rules or the timeline.
        public var diagnostics: [Diagnostic]
        public var description: String { DiagnosticRenderer().render(diagnostics) }
    }

    /// The start of every simulation: 2026-01-01T00:00:00Z, offsets count from it.
    public static let start = Date(timeIntervalSince1970: 1_767_225_600)
    /// The install's id of every simulation unless given: `bucket` answers the same in every replay.
    public static let installID = "simulated"

    /// Checks `rules` together, parses `timeline` against them and runs every step on a
    /// new engine (in-memory store, manual clock at ``start``); returns the output lines.
    /// Throws ``Failure`` with the diagnostics when either has errors.
    public static func replay(
        rules: [SourceFile], timeline: SourceFile, json: Bool = false,
        timeZone: TimeZone = TimeZone(identifier: "UTC")!,
        installID: String = TimelineRunner.installID
    ) throws -> [String] {
        let clock = ManualClock(start)
        let engine: RuleEngine
        do {
            var options = RuleEngine.Options(timeZone: timeZone)
            options.installID = installID
            engine = try RuleEngine(sources: rules, store: InMemoryStore(), clock: clock, options: options)
        } catch RuleEngineError.invalidRules(let diagnostics) {
            throw Failure(diagnostics: diagnostics.filter { $0.severity == .error })
        }
        var parser = TimelineParser(file: timeline, program: engine.program)
        let steps = parser.parse()
        if parser.diagnostics.hasErrors { throw Failure(diagnostics: parser.diagnostics.sortedByPosition()) }
        return run(steps, on: engine, clock: clock, json: json)
    }

    /// Runs `steps` in order, setting `clock` to ``start`` plus each step's offset first.
    public static func run(_ steps: [TimelineStep], on engine: RuleEngine, clock: ManualClock, json: Bool = false)
        -> [String]
    {
        var lines: [String] = []
        for step in steps {
            clock.set(start.addingTimeInterval(TimeInterval(step.offset)))
            if let line = perform(step, engine, json: json) { lines.append(line) }
        }
        return lines
    }

    struct Output: Encodable {
        var time: String
        var seconds: Int64
        var step: String
        var name: String?
        var condition: String?
        var result: String
        var reason: String?
        /// A `no`'s failing clauses, each as `explain` writes it (the reason without the words).
        var failing: [String]?
    }

    /// One JSON object on one line, keys sorted.
    static func encode<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Runs one step; returns its output line, if it prints one.
    public static func perform(_ step: TimelineStep, _ engine: RuleEngine, json: Bool = false) -> String? {
        guard let result = outcome(step, engine) else { return nil }
        return json ? encode(result.output) : result.plain
    }

    /// Runs one step; returns what it printed, as a JSON object and as a plain line.
    static func outcome(_ step: TimelineStep, _ engine: RuleEngine) -> (output: Output, plain: String)? {
        func line(_ output: Output, _ plain: String) -> (output: Output, plain: String) { (output, plain) }
        let time = step.timeText
        /// A `try` or `present` step's line: `yes` (`shown`), or `no` with the reason, which is
        /// asked first: a `no` of an install held out records a control exposure (an execution),
        /// after which `between` and `max_exec` would be worded against it.
        func answer(_ verb: String, _ name: String, _ call: () -> String?) -> (output: Output, plain: String) {
            let explanation = engine.explain(Scenario(name))
            if let yes = call() {
                return line(
                    Output(time: time, seconds: step.offset, step: verb, name: name, result: yes),
                    "\(time) \(name) \(yes)")
            }
            let reason = explanation.reason
            return line(
                Output(
                    time: time, seconds: step.offset, step: verb, name: name, result: "no", reason: reason,
                    failing: explanation.failing.map(\.clause)),
                "\(time) \(name) no: \(reason)")
        }
        switch step.action {
        case .launch(let version):
            // A launch after a clean end of the run before it (`crash` plays the other kind).
            engine.prepareForSuspension()
            engine.startSession(version: version)
        case .crash: engine.relaunchAfterCrash()
        case .problem: engine.recordProblem()
        case .enter(let context): engine.enter(context)
        case .leave(let context): engine.leave(context)
        case .background: engine.prepareForSuspension()
        case .foreground: engine.enteredForeground()
        case .visible(let name), .hidden(let name):
            let verb = { if case .visible = step.action { return "visible" } else { return "hidden" } }()
            // Silent, as the app's call is; a presentation finished or expired says so.
            guard let open = engine.openPresentation(of: name),
                (try? verb == "visible" ? engine.visible(open) : engine.hidden(open)) != nil
            else {
                return line(
                    Output(time: time, seconds: step.offset, step: verb, name: name, result: "not showing"),
                    "\(time) \(verb) \(name): not showing")
            }
        case .outcome(let name, let outcome):
            // The parser checked the name against the program.
            try? engine.recordOutcome(outcome, of: Scenario(name))
        case .present(let name):
            return answer("present", name) { engine.present(Scenario(name)) != nil ? "shown" : nil }
        case .finish(let name, let outcome):
            // Not showing: it was refused, or its presentation was finished already; nothing changes.
            guard let open = engine.openPresentation(of: name), (try? engine.finish(open, outcome)) != nil else {
                return line(
                    Output(time: time, seconds: step.offset, step: "finish", name: name, result: "not showing"),
                    "\(time) finish \(name): not showing")
            }
            return line(
                Output(time: time, seconds: step.offset, step: "finish", name: name, result: outcome.rawValue),
                "\(time) finish \(name) \(outcome.rawValue)")
        case .trigger(let name): engine.trigger(Event(name))
        case .triggerWith(let name, let properties): engine.trigger(Event(name), properties: properties)
        case .done(let name): engine.markDone(name)
        case .reset(let name): engine.reset(Scenario(name))
        case .todo(let name, let until, let info):
            engine.toDo(name, scope: until.map { .until(TimeInterval($0)) }, info: info)
        case .info(let name):
            let text: String
            if !engine.needToDo(name) {
                text = "-"
            } else if let info = engine.info(forToDo: name) {
                text = info.isEmpty ? "{}" : info.keys.sorted().map { "\($0)=\(info[$0]!)" }.joined(separator: " ")
            } else {
                text = "none"
            }
            return line(
                Output(time: time, seconds: step.offset, step: "info", name: name, result: text),
                "\(time) info \(name): \(text)")
        case .set(let name, let value):
            // The parser checked the name and the value's type against the program.
            try? engine.setParam(named: name, to: value)
        case .tryScenario(let name):
            return answer("try", name) { engine.tryToExecute(Scenario(name)) ? "yes" : nil }
        case .check(let expr, let text):
            let result = engine.check(expr) ? "true" : "false"
            return line(
                Output(time: time, seconds: step.offset, step: "check", condition: text, result: result),
                "\(time) check \(result)")
        case .timeZone(let zone):
            engine.timeZone = zone
        case .rules(let path, let sources):
            // Checked by the parser: the swap cannot be refused for the rules' sake.
            let result: String
            do {
                try engine.replaceRules(sources: sources)
                result = "swapped"
            } catch {
                result = "refused: \(error)"
            }
            return line(
                Output(time: time, seconds: step.offset, step: "rules", name: path, result: result),
                "\(time) rules \(path): \(result)")
        case .next(let names):
            let chosen = engine.executeNext(among: names.isEmpty ? nil : names.map { Scenario($0) })?.name
            return line(
                Output(time: time, seconds: step.offset, step: "next", name: chosen, result: chosen ?? "none"),
                "\(time) next \(chosen ?? "none")")
        }
        return nil
    }
}
