import RuleLang

/// The indexes of a program's names, by which an expression is lowered: the rules' and, while
/// they are made, their builder's.
protocol NameIndexes {
    var paramIndex: NameTable { get }
    var scenarioIndex: NameTable { get }
    var groupIndex: NameTable { get }
}

extension CompiledRules: NameIndexes {}

/// A checked expression lowered to a ``CompiledExpr``: names to indexes and slots.
extension CompiledRules {
    /// Lowers an expression checked against `rules.program`; `slot` gives each stream's slot.
    /// A name the checker would have refused (only possible for an unchecked expression) is `false`.
    static func lower(_ expr: Expr, _ rules: some NameIndexes, slot: (String) -> Int) -> CompiledExpr {
        func lower(_ expr: Expr) -> CompiledExpr {
            switch expr.kind {
            case .integer(let value): return .constant(.int(value))
            case .duration(let seconds): return .constant(.duration(Double(seconds)))
            case .string(let text): return .constant(.string(text))
            case .bool(let flag): return .constant(.bool(flag))
            case .name(let name):
                if let index = rules.paramIndex[name] { return .param(index) }
                switch BuiltinValue(rawValue: name) {
                case .upgraded?: return .upgraded
                case nil: return .constant(.bool(false))
                }
            case .parenthesized(let inner): return lower(inner)
            case .unary(_, let operand): return .not(lower(operand))
            case .binary(.and, let left, let right): return .and(lower(left), lower(right))
            case .binary(.or, let left, let right): return .or(lower(left), lower(right))
            case .binary(let op, let left, let right): return .compare(op, lower(left), lower(right))
            case .call(let function, let argument, let scope, let outcome, let filter, let property):
                let scope = scope.map { CountScope($0.kind) } ?? .install
                // `count(purchase where amount >= 10)`: the stream of the triggers that pass;
                // `sum(purchase.amount)`: the stream whose counts are the sums.
                let stream =
                    property.map { EngineStream.sum(argument.text, EngineStream.sumTail($0.text, filter)) }
                    ?? filter.map { EngineStream.filtered(argument.text, $0) } ?? argument.text
                if let outcome {
                    // `count(RateApp: declined)`: the scenario's outcome stream.
                    guard let outcome = Outcome(rawValue: outcome.text) else { return .constant(.bool(false)) }
                    let stream = slot(EngineStream.outcome(outcome, of: argument.text))
                    switch BuiltinFunction(rawValue: function.text) {
                    case .count?: return .count(slot: stream, scope)
                    case .sinceFirst?: return .sinceFirst(slot: stream)
                    case .sinceLast?: return .sinceLast(slot: stream)
                    default: return .constant(.bool(false))
                    }
                }
                switch BuiltinFunction(rawValue: function.text) {
                case .count?, .sum?: return .count(slot: slot(stream), scope)
                case .executions?:
                    if let index = rules.scenarioIndex[argument.text] { return .scenarioExecutions(index, scope) }
                    if let index = rules.groupIndex[argument.text] { return .groupExecutions(index, scope) }
                    return .constant(.int(0))
                case .sinceFirst?: return .sinceFirst(slot: slot(stream))
                case .sinceLast?: return .sinceLast(slot: slot(stream))
                case .activeDays?:
                    guard case .within(let seconds) = scope else { return .constant(.int(0)) }
                    return .activeDays(slot: slot(stream), days: Int64(seconds / 86_400))
                case .todo?:
                    _ = slot(argument.text)  // a known name for markDone (``RuleEngine/unknownNames``)
                    return .todo(argument.text)
                case .bucket?:
                    return .bucket(argument.text)
                case nil: return .constant(.bool(false))
                }
            case .invalid: return .constant(.bool(false))
            }
        }
        return lower(expr)
    }
}

extension CompiledExpr {
    /// The expression with every read of slot -1 (a stream with nothing recorded) replaced by
    /// what a blank stream reads: counts and active days 0, `since_first` 0s, `since_last` forever.
    func blankingUnknownStreams() -> CompiledExpr {
        switch self {
        case .count(let slot, _) where slot < 0: return .constant(.int(0))
        case .activeDays(let slot, _) where slot < 0: return .constant(.int(0))
        case .sinceFirst(let slot) where slot < 0: return .constant(.duration(0))
        case .sinceLast(let slot) where slot < 0: return .constant(.duration(.infinity))
        case .countOf(let slots, let scope): return .countOf(slots: slots.filter { $0 >= 0 }, scope)
        case .not(let operand): return .not(operand.blankingUnknownStreams())
        case .and(let a, let b): return .and(a.blankingUnknownStreams(), b.blankingUnknownStreams())
        case .or(let a, let b): return .or(a.blankingUnknownStreams(), b.blankingUnknownStreams())
        case .compare(let op, let a, let b): return .compare(op, a.blankingUnknownStreams(), b.blankingUnknownStreams())
        default: return self
        }
    }
}
