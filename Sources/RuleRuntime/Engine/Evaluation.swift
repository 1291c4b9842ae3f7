import Foundation
import RuleLang

/// One clause of an explanation.
public struct ClauseExplanation: Equatable, Sendable, CustomStringConvertible {
    /// The clause as canonical source text: `min_events 5`.
    public var clause: String
    /// The group the clause belongs to, for a group's shared clauses.
    public var group: String?
    /// True when the clause holds now.
    public var passes: Bool
    /// The numbers: `3 so far`, `1d 4h left`, `no event yet`.
    public var detail: String

    public var description: String {
        (group.map { "group \($0): " } ?? "") + "\(clause): \(detail)"
    }
}

/// Why a scenario would or would not run now.
public struct Explanation: Sendable, CustomStringConvertible {
    /// The scenario's name, as asked.
    public var scenario: String
    /// False when no scenario has that name.
    public var isKnown: Bool
    /// True when every clause passes.
    public var wouldRun: Bool
    /// Every clause, the scenario's first, then its group's.
    public var clauses: [ClauseExplanation]
    /// The earliest time at which every time-based clause passes (now, if they all
    /// pass already); nil when one cannot pass by waiting (a `since_first` with no event yet).
    public var earliest: Date?
    /// When asked by a former name (`was`): the name the scenario has now (``scenario`` is the
    /// name asked).
    public var currentName: String?

    /// The clauses that do not hold.
    public var failing: [ClauseExplanation] { clauses.filter { !$0.passes } }

    /// `no: min_events 5: 3 so far; between 2d: 1d 4h left` or `yes`.
    public var reason: String {
        if !isKnown { return "unknown scenario '\(scenario)'" }
        return wouldRun ? "yes" : failing.map(\.description).joined(separator: "; ")
    }

    public var description: String {
        guard isKnown else { return reason }
        let name = currentName.map { "\($0) (formerly \(scenario))" } ?? scenario
        var lines = ["\(name): \(wouldRun ? "would run" : "would not run")"]
        for clause in clauses { lines.append("  \(clause.passes ? "pass" : "FAIL")  \(clause)") }
        if !wouldRun, let earliest {
            lines.append("  time-based clauses pass from \(ISO8601DateFormatter().string(from: earliest))")
        }
        return lines.joined(separator: "\n")
    }
}

extension EngineCore {
    /// Scenario `index`'s clause texts, printed at its first explanation and kept.
    mutating func texts(scenario index: Int) -> [String] {
        EngineCore.texts(&scenarioTexts[index], rules.scenarios[index].declared)
    }

    /// Group `index`'s clause texts, printed at the first explanation that needs them and kept.
    mutating func texts(group index: Int) -> [String] {
        EngineCore.texts(&groupTexts[index], rules.groups[index].declared)
    }

    private static func texts(_ kept: inout [String]?, _ declared: [Clause]) -> [String] {
        if let kept { return kept }
        let texts = CompiledRules.texts(of: declared)
        kept = texts
        return texts
    }

    /// Says, clause by clause, why scenario `index` would or would not run now.
    mutating func explain(_ index: Int) -> Explanation {
        let time = now()
        rebase(index, to: time)
        let scenario = rules.scenarios[index]
        if scenario.retired && (forced.isEmpty || forced[index] == nil) {
            let clause = ClauseExplanation(
                clause: "retired", group: nil, passes: false,
                detail: "switched off by these rules; its history is kept")
            return Explanation(
                scenario: scenario.name, isKnown: true, wouldRun: false, clauses: [clause], earliest: nil)
        }
        if let forced = forced.isEmpty ? nil : forced[index] {
            let clause = ClauseExplanation(
                clause: "override", group: nil, passes: forced,
                detail: "forced by override to \(forced ? "pass" : "fail")")
            return Explanation(
                scenario: scenario.name, isKnown: true, wouldRun: forced, clauses: [clause],
                earliest: forced ? Date(timeIntervalSince1970: time) : nil)
        }
        let view = views[index]
        var clauses: [ClauseExplanation] = []
        var earliest: Double? = time
        func add(_ result: Assessment, _ text: String, _ group: String?) {
            clauses.append(ClauseExplanation(clause: text, group: group, passes: result.passes, detail: result.detail))
            switch result.readyAt {
            case .now: break
            case .at(let when): earliest = earliest.map { max($0, when) }
            case .never: earliest = nil
            }
        }
        for (clause, text) in zip(scenario.clauses, texts(scenario: index)) {
            if case .minDays(let n, let window) = clause {
                // Waiting alone adds no active day: a failing one is never ready by waiting.
                let active = activeDays(of: scenario.streams, window: window, now: time)
                let passes = active >= n
                let detail = "active on \(active) of the last \(window) days" + (passes ? "" : "; needs \(n)")
                add(Assessment(passes: passes, detail: detail, readyAt: passes ? .now : .never), text, nil)
                continue
            }
            add(assess(clause, events: view.events, executions: view.executions, now: time), text, nil)
        }
        if let group = scenario.group {
            let budget = budgets[group]
            for (clause, text) in zip(rules.groups[group].clauses, texts(group: group)) {
                add(
                    assess(clause, events: Tally(), executions: budget, now: time), text,
                    rules.groups[group].name)
            }
        }
        return Explanation(
            scenario: scenario.name, isKnown: true, wouldRun: clauses.allSatisfy(\.passes),
            clauses: clauses, earliest: earliest.map { Date(timeIntervalSince1970: $0) })
    }

    /// Whether scenario `index` and its group pass at `time`; stops at the first clause that fails.
    /// The same answers as ``explain(_:)-(Scenario)``'s `wouldRun`, without building any text.
    mutating func passes(_ index: Int, now time: Double) -> Bool {
        if !forced.isEmpty, let forced = forced[index] { return forced }
        buildView(index)
        let epoch = meta.epoch
        let group = Int(clauses.groupOf[index])
        // Views and budgets are read through a pointer: a call on `views[index]` copies it out
        // (two tallies, a memcpy and four retains) before calling.
        let ahead = views.withUnsafeBufferPointer { $0[index].isAhead(of: time) }
        if ahead || (group >= 0 && budgets.withUnsafeBufferPointer { $0[group].isAhead(of: time) }) {
            rebase(index, to: time)
        }
        for k in clauses.range(ofScenario: index) {
            let clause = clauses.clauses[k]
            if case .when(let condition) = clause {
                guard evaluate(rules.conditions[condition], now: time) == .bool(true) else { return false }
            } else if case .minDays(let n, let window) = clause {
                guard activeDays(of: rules.scenarios[index].streams, window: window, now: time) >= n else {
                    return false
                }
            } else if case .growingBetween(let list) = clause {
                guard holdsGrowing(list, views[index].executions, now: time) else { return false }
            } else {
                guard views.withUnsafeBufferPointer({ $0[index].holds(clause, now: time, in: epoch) }) else {
                    return false
                }
            }
        }
        guard group >= 0 else { return true }
        for k in clauses.range(ofGroup: group) {
            let clause = clauses.clauses[k]
            if case .when(let condition) = clause {
                guard evaluate(rules.conditions[condition], now: time) == .bool(true) else { return false }
            } else if case .growingBetween(let list) = clause {
                guard holdsGrowing(list, budgets[group], now: time) else { return false }
            } else {
                let holds = budgets.withUnsafeBufferPointer {
                    ScenarioState.holds(clause, events: .empty, executions: $0[group], now: time, in: epoch)
                }
                guard holds else { return false }
            }
        }
        return true
    }

    enum ReadyAt {
        /// Passes now, or is not time-based.
        case now
        /// A time-based clause that passes from this time on, if nothing else happens.
        case at(Double)
        /// Cannot pass by waiting alone.
        case never
    }

    struct Assessment {
        var passes: Bool
        var detail: String = ""
        var readyAt: ReadyAt = .now
    }

    /// Evaluates one clause for an explanation. Whether it passes is decided by
    /// ``ScenarioState/holds(_:events:executions:now:in:)``, as for ``passes(_:now:)``;
    /// this adds the numbers and when a time-based clause will pass.
    mutating func assess(_ clause: CompiledClause, events: Tally, executions: Tally, now time: Double) -> Assessment {
        if case .when(let condition) = clause {
            let passes = evaluate(rules.conditions[condition], now: time) == .bool(true)
            return Assessment(passes: passes, detail: passes ? "true" : "false")
        }
        if case .growingBetween(let list) = clause {
            // The gap for the executions so far, assessed as a plain `between` of that gap.
            guard let gap = rules.gap(list, after: executions.total) else {
                return Assessment(passes: true, detail: "never executed")
            }
            var result = assess(.between(gap.seconds), events: events, executions: executions, now: time)
            let after = "after the \(EngineCore.ordinal(Int(clamping: executions.total))) execution"
            result.detail = "\(DurationText.human(gap.seconds)) (\(after)): " + result.detail
            return result
        }
        let epoch = meta.epoch
        let passes = ScenarioState.holds(clause, events: events, executions: executions, now: time, in: epoch)
        func windowReady(_ tally: Tally, _ scope: CountScope, allowed: Int64) -> ReadyAt {
            // The time at which enough of the counted times leave the window.
            // Other scopes are not time-based: they do not bound the earliest time.
            guard !passes, case .within(let window) = scope else { return .now }
            // `max_exec 0 within D` allows nothing, however long one waits.
            guard allowed >= 0 else { return .never }
            let first = tally.firstIndex(inWindow: window, now: time)
            let excess = Int64(tally.recent.count - first) - allowed
            guard excess > 0 else { return .now }
            return .at(tally.recent[first + Int(excess) - 1] + window)
        }
        // Ages are never negative: a time later than now (the clock went back) counts as just
        // now, so the clause waits until the clock passes that time plus D, never less.
        func since(_ at: Double, _ d: Double, _ which: String) -> Assessment {
            let age = max(0, time - at)
            if passes { return Assessment(passes: true, detail: "\(which) \(DurationText.human(age)) ago") }
            return Assessment(passes: false, detail: "\(DurationText.human(d - age)) left", readyAt: .at(at + d))
        }
        switch clause {
        case .minEvents(_, let scope):
            return Assessment(passes: passes, detail: "\(events.count(scope, now: time, in: epoch)) so far")
        case .maxEvents(let n, let scope):
            return Assessment(
                passes: passes, detail: "\(events.count(scope, now: time, in: epoch)) so far",
                readyAt: windowReady(events, scope, allowed: n))
        case .maxExec(let n, let scope):
            return Assessment(
                passes: passes, detail: "\(executions.count(scope, now: time, in: epoch)) so far",
                readyAt: windowReady(executions, scope, allowed: n - 1))
        case .sinceFirst(let d):
            guard let first = events.first else {
                return Assessment(passes: passes, detail: "no event yet", readyAt: .never)
            }
            return since(first, d, "first")
        case .sinceLast(let d):
            guard let last = events.last else { return Assessment(passes: passes, detail: "no event yet") }
            return since(last, d, "last")
        case .between(let d):
            guard let last = executions.last else { return Assessment(passes: passes, detail: "never executed") }
            return since(last, d, "last")
        case .when, .growingBetween, .minDays:
            return Assessment(passes: passes)  // answered above
        }
    }

    // MARK: - Expressions

    /// Evaluates a compiled expression. Side-effect free but for merging a view once; linear in its size.
    mutating func evaluate(_ expr: CompiledExpr, now time: Double) -> ParamValue {
        switch expr {
        case .constant(let value): return value
        case .param(let index): return value(index)
        case .not(let operand): return .bool(evaluate(operand, now: time) != .bool(true))
        case .and(let left, let right):
            return .bool(evaluate(left, now: time) == .bool(true) && evaluate(right, now: time) == .bool(true))
        case .or(let left, let right):
            return .bool(evaluate(left, now: time) == .bool(true) || evaluate(right, now: time) == .bool(true))
        case .compare(let op, let left, let right):
            return .bool(compare(op, evaluate(left, now: time), evaluate(right, now: time)))
        case .count(let slot, let scope): return .int(count(slot, scope, now: time))
        case .activeDays(let slot, let window): return .int(activeDays(of: [slot], window: window, now: time))
        case .scenarioExecutions(let index, let scope):
            return .int(view(index).executions.count(scope, now: time, in: meta.epoch))
        case .groupExecutions(let index, let scope):
            return .int(budgets[index].count(scope, now: time, in: meta.epoch))
        case .sinceFirst(let slot):
            // No event yet: 0s, so `since_first(x) >= D` is false, like the clause.
            guard let first = tallies.counts(slot).first else { return .duration(0) }
            return .duration(max(0, time - first))
        case .sinceLast(let slot):
            // No event yet: forever, so `since_last(x) >= D` is true, like the clause.
            guard let last = tallies.counts(slot).last else { return .duration(.infinity) }
            return .duration(max(0, time - last))
        case .todo(let name):
            return .bool(pendingToDo(name, now: time) != nil)
        case .upgraded:
            return .bool(meta.isUpgrade)
        }
    }

    private func compare(_ op: BinaryOperator, _ a: ParamValue, _ b: ParamValue) -> Bool {
        let order: Int
        switch (a, b) {
        case (.int(let x), .int(let y)): order = x < y ? -1 : x > y ? 1 : 0
        case (.duration(let x), .duration(let y)): order = x < y ? -1 : x > y ? 1 : 0
        case (.string(let x), .string(let y)): order = x < y ? -1 : x > y ? 1 : 0
        case (.bool(let x), .bool(let y)): order = x == y ? 0 : (x ? 1 : -1)
        default: return false  // the checker never lets two types meet
        }
        switch op {
        case .equal: return order == 0
        case .notEqual: return order != 0
        case .less: return order < 0
        case .lessEqual: return order <= 0
        case .greater: return order > 0
        case .greaterEqual: return order >= 0
        case .and, .or: return false  // lowered to .and / .or
        }
    }

    /// Lowers an expression checked against the program, giving slots to streams it names.
    mutating func lower(_ expr: Expr) -> CompiledExpr {
        var table = streams
        let lowered = CompiledRules.lower(expr, rules, slot: { table.slot($0) })
        adopt(table)
        return lowered
    }
}

extension EngineCore {
    /// `between D1, D2, ...` (gap list `list`) over `executions`, a scenario's or a group's: the
    /// gap for the executions so far has passed (none applies before the first).
    func holdsGrowing(_ list: Int, _ executions: Tally, now time: Double) -> Bool {
        guard let gap = rules.gap(list, after: executions.total) else { return true }
        return ScenarioState.holds(
            .between(gap.seconds), events: .empty, executions: executions, now: time, in: meta.epoch)
    }

    /// `1st`, `2nd`, `3rd`, `4th`, `11th`, `21st`.
    static func ordinal(_ n: Int) -> String {
        let suffix: String
        switch (n % 10, n % 100) {
        case (_, 11...13): suffix = "th"
        case (1, _): suffix = "st"
        case (2, _): suffix = "nd"
        case (3, _): suffix = "rd"
        default: suffix = "th"
        }
        return "\(n)\(suffix)"
    }
}
