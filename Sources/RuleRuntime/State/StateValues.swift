import Foundation
import RuleLang

/// A value of a `param`, set by the app or returned by a provider closure.
public enum ParamValue: Equatable, Hashable, Sendable, CustomStringConvertible,
    ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral, ExpressibleByStringLiteral
{
    case bool(Bool)
    case int(Int64)
    case string(String)
    /// Seconds.
    case duration(TimeInterval)

    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(stringLiteral value: String) { self = .string(value) }

    /// The language type of this value.
    public var type: ValueType {
        switch self {
        case .bool: return .bool
        case .int: return .int
        case .string: return .string
        case .duration: return .duration
        }
    }

    /// The zero value of a type: `false`, `0`, `""`, `0s`.
    public static func zero(_ type: ValueType) -> ParamValue {
        switch type {
        case .bool: return .bool(false)
        case .int: return .int(0)
        case .string: return .string("")
        case .duration: return .duration(0)
        }
    }

    public var description: String {
        switch self {
        case .bool(let value): return value ? "true" : "false"
        case .int(let value): return String(value)
        case .string(let value): return Printer.string(value)
        case .duration(let seconds):
            guard seconds == seconds.rounded(.down) && abs(seconds) < 9e15 else { return "\(seconds)s" }
            return seconds < 0 ? "-" + DurationText.format(Int64(-seconds)) : DurationText.format(Int64(seconds))
        }
    }
}

/// Which events or executions a query counts.
public enum CountScope: Equatable, Hashable, Sendable {
    /// Everything kept (since install, or since the last clear).
    case install
    /// Since the app's current version began.
    case version
    /// Since the current session began.
    case session
    /// The last `seconds`: times less than `seconds` old (Ecno's `.since`). A window of 0,
    /// a negative one or NaN counts nothing.
    case within(TimeInterval)

    /// Ecno's name for a sliding window.
    public static func since(_ seconds: TimeInterval) -> CountScope { .within(seconds) }

    init(_ kind: ScopeKind) {
        switch kind {
        case .install: self = .install
        case .version: self = .version
        case .session: self = .session
        case .within(let seconds): self = .within(TimeInterval(seconds))
        // Only `max_exec` takes the calendar's scopes, and it is lowered apart
        // (``CompiledClause/maxExecLocal(_:week:)``): a day's or a week's window stands in.
        case .day: self = .within(86_400)
        case .week: self = .within(604_800)
        }
    }
}
