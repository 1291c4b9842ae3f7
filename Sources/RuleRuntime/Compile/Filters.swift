import RuleLang

/// A value of an event's property, given with a trigger (language 1.2):
/// `engine.trigger("purchase", properties: ["amount": 12, "plan": "pro"])`.
public enum PropertyValue: Hashable, Sendable, CustomStringConvertible, ExpressibleByIntegerLiteral,
    ExpressibleByStringLiteral, ExpressibleByBooleanLiteral
{
    /// An `int` property's value.
    case int(Int64)
    /// A `string` property's value.
    case string(String)
    /// A `bool` property's value.
    case bool(Bool)

    /// An `int` property.
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// A `string` property.
    public init(stringLiteral value: String) { self = .string(value) }
    /// A `bool` property.
    public init(booleanLiteral value: Bool) { self = .bool(value) }

    /// The value as a rule file writes it: `12`, `"pro"`, `true`.
    public var description: String {
        switch self {
        case .int(let value): return String(value)
        case .string(let text): return Printer.string(text)
        case .bool(let flag): return flag ? "true" : "false"
        }
    }

    /// The type the rules declare for such a value.
    var type: ValueType {
        switch self {
        case .int: return .int
        case .string: return .string
        case .bool: return .bool
        }
    }
}

/// A filter over an event's properties, lowered from a checked `where` (``CompiledRules``).
indirect enum CompiledFilter: Sendable {
    /// A property (by its position in the filter's ``StreamFilter/reads``), or a value written
    /// in the rules.
    enum Term: Sendable {
        case property(Int)
        case value(PropertyValue)

        /// The term's value, `value(position)` for a property.
        @inline(__always)
        func value(_ value: (Int) -> PropertyValue) -> PropertyValue {
            switch self {
            case .property(let read): return value(read)
            case .value(let constant): return constant
            }
        }
    }

    case compare(BinaryOperator, Term, Term)
    case not(CompiledFilter)
    case and(CompiledFilter, CompiledFilter)
    case or(CompiledFilter, CompiledFilter)
    case constant(Bool)

    /// `expr`, checked over an event's properties; `read` gives a property's position in the
    /// filter's reads (nil for one the event does not declare, which the checker reports).
    init(_ expr: Expr, read: (String) -> Int?) {
        func term(_ expr: Expr) -> Term? {
            switch expr.kind {
            case .name(let name): return read(name).map(Term.property)
            case .integer(let value): return .value(.int(value))
            case .string(let text): return .value(.string(text))
            case .bool(let flag): return .value(.bool(flag))
            case .parenthesized(let inner): return term(inner)
            default: return nil
            }
        }
        switch expr.kind {
        case .parenthesized(let inner): self.init(inner, read: read)
        case .unary(_, let operand): self = .not(CompiledFilter(operand, read: read))
        case .binary(.and, let left, let right):
            self = .and(CompiledFilter(left, read: read), CompiledFilter(right, read: read))
        case .binary(.or, let left, let right):
            self = .or(CompiledFilter(left, read: read), CompiledFilter(right, read: read))
        case .binary(let op, let left, let right):
            guard let a = term(left), let b = term(right) else {
                self = .constant(false)
                return
            }
            self = .compare(op, a, b)
        case .name:
            guard let a = term(expr) else {
                self = .constant(false)
                return
            }
            self = .compare(.equal, a, .value(.bool(true)))
        case .bool(let flag): self = .constant(flag)
        default: self = .constant(false)
        }
    }

    /// The names of the properties `expr` reads, in the order of their first appearance.
    static func names(in expr: Expr) -> [String] {
        var names: [String] = []
        func visit(_ expr: Expr) {
            switch expr.kind {
            case .name(let name): if !names.contains(name) { names.append(name) }
            case .parenthesized(let inner), .unary(_, let inner): visit(inner)
            case .binary(_, let left, let right):
                visit(left)
                visit(right)
            default: break
            }
        }
        visit(expr)
        return names
    }

    /// True when the values pass; `value` gives each property the filter reads (by its term's
    /// position), of its declared type (``StreamFilter`` makes sure). An occurrence's values.
    func passes(_ value: (Int) -> PropertyValue) -> Bool {
        switch self {
        case .constant(let flag): return flag
        case .not(let inner): return !inner.passes(value)
        case .and(let a, let b): return a.passes(value) && b.passes(value)
        case .or(let a, let b): return a.passes(value) || b.passes(value)
        case .compare(let op, let a, let b): return CompiledFilter.compare(op, a.value(value), b.value(value))
        }
    }

    /// The same for a dictionary's values. (Generic, not a closure: a closure over the dictionary
    /// read 6.7-7.1x a plain trigger in `rulebench properties`, this 3.3-3.4x; a generic wrapper of an
    /// occurrence costs a metadata lookup a call, so the occurrence's walk above takes a closure.)
    func passes<Values: FilterValues>(_ values: Values) -> Bool {
        switch self {
        case .constant(let flag): return flag
        case .not(let inner): return !inner.passes(values)
        case .and(let a, let b): return a.passes(values) && b.passes(values)
        case .or(let a, let b): return a.passes(values) || b.passes(values)
        case .compare(let op, let a, let b):
            return CompiledFilter.compare(op, a.value(values.value), b.value(values.value))
        }
    }

    /// The same filter with each property's position replaced by `position(old)`.
    func mapped(_ position: (Int) -> Int) -> CompiledFilter {
        func term(_ term: Term) -> Term {
            if case .property(let read) = term { return .property(position(read)) }
            return term
        }
        switch self {
        case .constant: return self
        case .not(let inner): return .not(inner.mapped(position))
        case .and(let a, let b): return .and(a.mapped(position), b.mapped(position))
        case .or(let a, let b): return .or(a.mapped(position), b.mapped(position))
        case .compare(let op, let a, let b): return .compare(op, term(a), term(b))
        }
    }

    /// `x OP y` for two values: false for values of two types, or an order of strings or bools.
    @inline(__always)
    static func compare(_ op: BinaryOperator, _ x: PropertyValue, _ y: PropertyValue) -> Bool {
        switch (x, y) {
        case (.int(let x), .int(let y)): return compare(op, x, y)
        case (.string(let x), .string(let y)): return op == .equal ? x == y : op == .notEqual ? x != y : false
        case (.bool(let x), .bool(let y)): return op == .equal ? x == y : op == .notEqual ? x != y : false
        default: return false
        }
    }

    static func compare(_ op: BinaryOperator, _ x: Int64, _ y: Int64) -> Bool {
        switch op {
        case .equal: return x == y
        case .notEqual: return x != y
        case .less: return x < y
        case .lessEqual: return x <= y
        case .greater: return x > y
        case .greaterEqual: return x >= y
        case .and, .or: return false
        }
    }
}

/// A filter lowered once for every event that reads it over properties of the same types.
final class LoweredFilter: Sendable {
    /// The filter's canonical text (the stream is `@where:EVENT:TEXT`); for a sum, the property and
    /// the filter's text (`@sum:EVENT.TEXT`).
    let text: String
    /// For `sum(EVENT.PROPERTY ...)`: the property whose value a passing trigger adds (it is among
    /// ``reads``); nil for a filter that counts.
    let adds: String?
    let test: CompiledFilter
    /// The properties the filter reads, with their declared types.
    let reads: [(name: String, type: ValueType)]
    /// Their names alone (a filter given a dictionary looks them up).
    let readNames: [String]

    init(text: String, adds: String?, test: CompiledFilter, reads: [(name: String, type: ValueType)]) {
        self.text = text
        self.adds = adds
        self.test = test
        self.reads = reads
        readNames = reads.map(\.name)
    }
}

/// The values of the properties a filter reads, by their position in its terms.
protocol FilterValues {
    func value(_ read: Int) -> PropertyValue
}

/// The stream of an event's triggers that pass a filter (`count(purchase where amount >= 10)`):
/// a trigger of `event` with properties records on `stream` too when they pass.
struct StreamFilter: Sendable {
    /// The event's slot, and the filtered stream's (32 bits each: 16 bytes a filter with
    /// ``lowered``; at 100,000 events with one filter each, 51 B an event less than the fields in
    /// line, `rulebench memory`).
    private let slots: (event: Int32, stream: Int32)
    /// What the events reading the same filter share.
    let lowered: LoweredFilter

    init(event: Int, stream: Int, lowered: LoweredFilter) {
        slots = (Int32(event), Int32(stream))
        self.lowered = lowered
    }

    var event: Int { Int(slots.event) }
    var stream: Int { Int(slots.stream) }
    var text: String { lowered.text }
    var adds: String? { lowered.adds }
    var test: CompiledFilter { lowered.test }
    var reads: [(name: String, type: ValueType)] { lowered.reads }
    var readNames: [String] { lowered.readNames }

    /// The name of this filter's stream for `event` (its own, or a former or newer name).
    func streamName(of event: String) -> String {
        adds == nil ? EngineStream.filtered(event, text) : EngineStream.sum(event, text)
    }

    /// True when `properties` hold every property the filter reads, of its declared type, and
    /// pass it. A property missing or of another type fails it (the event still counts).
    func passes(_ properties: [String: PropertyValue]) -> Bool {
        for (name, type) in reads where properties[name]?.type != type { return false }
        return test.passes(Named(properties: properties, names: readNames))
    }

    /// The properties of a call with a dictionary.
    private struct Named: FilterValues {
        let properties: [String: PropertyValue]
        let names: [String]
        func value(_ read: Int) -> PropertyValue { properties[names[read]]! }
    }
}

extension CompiledRules {
    /// A filtered call of a condition: its event, filter, summed property, stream, and whether it
    /// reads a window (`within D`).
    typealias FilteredRead = (
        event: String, filter: Expr?, adds: String?, stream: String, windowed: Bool, compared: Int64?
    )

    /// The filtered calls of `expr` (`count(EVENT where FILTER ...)`, `sum(EVENT.PROPERTY ...)`),
    /// each with the integer it is compared with, if any (``Expr/calls``).
    static func filteredStreams(in expr: Expr) -> [FilteredRead] {
        var found: [FilteredRead] = []
        for (call, compared) in expr.calls {
            guard case .call(_, let argument, let scope, nil, let filter, let property) = call.kind else { continue }
            let windowed: Bool
            if case .within? = scope?.kind { windowed = true } else { windowed = false }
            if let property {
                let stream = EngineStream.sum(argument.text, EngineStream.sumTail(property.text, filter))
                found.append((argument.text, filter, property.text, stream, windowed, compared))
            } else if let filter {
                found.append(
                    (argument.text, filter, nil, EngineStream.filtered(argument.text, filter), windowed, compared))
            }
        }
        return found
    }
}
