import Foundation
import RuleLang

/// A name the app used that the rules do not know: a debug report, since a misspelt string
/// otherwise fails silently (triggers a stream nothing counts, or tries no scenario).
public struct UnknownName: Hashable, Sendable, CustomStringConvertible {
    /// What kind of name it is.
    public enum Kind: String, Sendable {
        /// Triggered or marked done, but no rule counts it and no `event` declares it.
        case event
        /// Tried, checked, explained or reset as a scenario, but the rules have none of that name.
        case scenario
    }

    /// Whether it is an event or a scenario.
    public let kind: Kind
    /// The name as the app used it.
    public let name: String
    /// The closest known names, best first (at most two).
    public let suggestions: [String]

    /// At most this many names of each kind are remembered.
    public static let limit = 100

    /// `event 'lanch' is counted by no rule; did you mean 'launch'?`
    public var description: String {
        let what = kind == .event ? "is counted by no rule" : "is not a scenario of the rules"
        let quoted = suggestions.map { "'\($0)'" }
        let hint = quoted.isEmpty ? "" : "; did you mean \(quoted.joined(separator: " or "))?"
        return "\(kind.rawValue) '\(name)' \(what)\(hint)"
    }
}

extension RuleEngine {
    /// Names used since this engine was created that the rules do not know, each once in
    /// first-use order, events first: streams triggered or marked done that no rule counts and
    /// no `event` declares, and scenario names tried, checked, explained or reset that do not
    /// exist, each with "did you mean" over the rules' names. At most ``UnknownName/limit``
    /// of each kind. For debug builds and tests: a release app need not read it.
    public var unknownNames: [UnknownName] {
        let (events, scenarios, rules) = locked { core in
            (core.hooks.unknownEvents, core.hooks.unknownScenarios, core.rules)
        }
        let streams = rules.streams.names
        let names = rules.scenarios.map(\.name) + rules.groups.map(\.name)
        return events.map { UnknownName(kind: .event, name: $0, suggestions: Suggestions.closest(to: $0, in: streams)) }
            + scenarios.map {
                UnknownName(kind: .scenario, name: $0, suggestions: Suggestions.closest(to: $0, in: names))
            }
    }

}
