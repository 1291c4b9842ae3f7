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
public struct Explanation: Equatable, Sendable, CustomStringConvertible {
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
    /// The zone the engine judged local windows and days in, where ``description`` prints the
    /// earliest time (nil: UTC).
    public var timeZone: TimeZone? = nil
    /// `defer up to D` (language 1.3): while a wish is kept, the time it lasts until (the
    /// scenario comes first in `executeNext` meanwhile); nil when none is pending.
    public var deferredUntil: Date? = nil

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
            let zone = timeZone ?? TimeZone(identifier: "UTC")!
            lines.append("  time-based clauses pass from \(LocalTimeText.iso8601(earliest, in: zone))")
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
            // The operands first, then a static compare: a method of `self` called with operands
            // that change `self` made Swift copy the whole core for the call (its every array
            // retained and released: 60% of a `when` comparing a param, `perf`).
            let (a, b) = (evaluate(left, now: time), evaluate(right, now: time))
            return .bool(Self.compare(op, a, b))
        case .count(let slot, let scope): return .int(count(slot, scope, now: time))
        case .countOf(let slots, let scope):
            var total: Int64 = 0
            for slot in slots {
                let (sum, overflow) = total.addingReportingOverflow(count(Int(slot), scope, now: time))
                total = overflow ? .max : sum
            }
            return .int(total)
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
        case .bucket(let salt):
            return .int(Int64(bucket(salt)))
        }
    }

    private static func compare(_ op: BinaryOperator, _ a: ParamValue, _ b: ParamValue) -> Bool {
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
        // A stream the engine has no slot for holds nothing (every stored stream has one): it is
        // read as blank, not added, so an ad hoc check adds no state and copies no table.
        let known = streams
        return CompiledRules.lower(expr, rules, slot: { known.index[$0] ?? -1 }).blankingUnknownStreams()
    }
}
