/// Names a `when` may use without declaring them: values the runtime knows.
public enum BuiltinValue: String, CaseIterable, Sendable {
    /// True when the current session's app version differs from the first version the
    /// state ever saw: an upgrade, not a fresh install.
    case upgraded

    /// The value's type.
    public var type: ValueType { .bool }
}

/// The language's built-in functions: one table for the checker, the printer and the
/// runtime. A call is `NAME(ARGUMENT [scope])`.
public enum BuiltinFunction: String, CaseIterable, Sendable {
    case count
    case executions
    case sinceFirst = "since_first"
    case sinceLast = "since_last"
    case todo
    /// `active_days(EVENT within D)`: distinct local days with an event among the last D (language 1.1).
    case activeDays = "active_days"
    /// `bucket("salt")`: the install's stable bucket for that salt, 0 to 99 (language 1.2).
    case bucket
    /// `sum(purchase.amount [where FILTER] [scope])`: the sum of an int property over the event's
    /// triggers (language 1.2).
    case sum

    /// What the argument names.
    public enum Argument: Sendable {
        /// An event stream (declared or not: any name is a stream).
        case stream
        /// A scenario or a group of the program.
        case scenarioOrGroup
        /// A to-do's name.
        case todo
        /// A salt: any string, written quoted.
        case salt
        /// An event's int property: `purchase.amount`.
        case property
    }

    /// The function as written in source.
    public var name: String { rawValue }

    /// The type of the call's value.
    public var resultType: ValueType {
        switch self {
        case .count, .executions, .activeDays, .bucket, .sum: return .int
        case .sinceFirst, .sinceLast: return .duration
        case .todo: return .bool
        }
    }

    /// What kind of name the call's argument must be.
    public var argument: Argument {
        switch self {
        case .count, .sinceFirst, .sinceLast, .activeDays: return .stream
        case .executions: return .scenarioOrGroup
        case .todo: return .todo
        case .bucket: return .salt
        case .sum: return .property
        }
    }

    /// True when the call takes a scope (`count(x per session)`).
    public var takesScope: Bool { resultType == .int && self != .bucket }

    /// Every function's name, for suggestions.
    public static let names = allCases.map(\.name)
}
