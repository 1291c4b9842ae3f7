import RuleLang

/// The wording of every timeline diagnostic with its id, in one place (the rules' own are in
/// RuleLang's `Message`).
enum TimelineMessage {
    static let unterminatedString = DiagnosticMessage(.unterminatedString, "unterminated string; add the closing '\"'")
    static func uncountedEvent(_ name: String, _ suggestions: [String]) -> DiagnosticMessage {
        DiagnosticMessage(
            .uncountedEvent,
            "no rule counts event '\(name)'"
                + (suggestions.isEmpty
                    ? "" : "; did you mean \(suggestions.map { "'\($0)'" }.joined(separator: " or "))?"))
    }
    static func invalidTime(_ text: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .invalidTime, "invalid time '\(text)'; a time is an offset from the start such as '0', '90s' or '1d12h'")
    }
    static func missingStep(_ verbs: [String]) -> DiagnosticMessage {
        DiagnosticMessage(.expectedToken, "expected a step after the time (\(verbs.joined(separator: ", ")))")
    }
    static func unknownParam(_ name: String, _ params: [String]) -> DiagnosticMessage {
        DiagnosticMessage(.unknownName, Suggestions.unknown("param", name, among: params))
    }
    static func invalidDuration(_ text: String) -> DiagnosticMessage {
        DiagnosticMessage(.invalidDuration, "invalid duration '\(text)'; use units s, m, h, d, w, as in '3h'")
    }
    static func infoPair(_ text: String) -> DiagnosticMessage {
        DiagnosticMessage(.expectedToken, "expected KEY=VALUE after 'info', found '\(text)'")
    }
    static func todoOption(_ expected: String, _ found: String) -> DiagnosticMessage {
        DiagnosticMessage(.expectedToken, "expected \(expected) or the end of the line, found '\(found)'")
    }
    static let missingCondition = DiagnosticMessage(.expectedToken, "expected a condition after 'check'")
    static func unknownStep(_ verb: String, _ verbs: [String]) -> DiagnosticMessage {
        DiagnosticMessage(.unknownStep, Suggestions.unknown("step", verb, among: verbs, limit: 1))
    }
    static func expected(_ what: String) -> DiagnosticMessage { DiagnosticMessage(.expectedToken, "expected \(what)") }
    static func unknownScenario(_ name: String, _ names: [String]) -> DiagnosticMessage {
        DiagnosticMessage(.unknownScenario, Suggestions.unknown("scenario", name, among: names))
    }
    static func unknownOutcome(_ word: String) -> DiagnosticMessage {
        DiagnosticMessage(.unknownOutcome, Suggestions.unknown("outcome", word, among: Outcome.names))
    }
    static func notPresentedToShow(_ verb: String, _ name: String) -> DiagnosticMessage {
        DiagnosticMessage(.notPresented, "'\(verb) \(name)' needs a 'present \(name)' before it that is still open")
    }
    static func notPresented(_ name: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .notPresented, "'finish \(name)' finishes nothing: no 'present \(name)' before it is still open")
    }
    static func unknownTimeZone(_ name: String) -> DiagnosticMessage {
        DiagnosticMessage(.unknownName, "unknown time zone '\(name)'; use an IANA name such as Europe/Paris")
    }
    static func unreadableRules(_ path: String) -> DiagnosticMessage {
        DiagnosticMessage(.unknownName, "cannot read rules file '\(path)' (paths are relative to the timeline)")
    }
    static func invalidRules(_ path: String) -> DiagnosticMessage {
        DiagnosticMessage(.expectedToken, "rules file '\(path)' has errors; the swap would be refused")
    }
    static func propertyPair(_ text: String) -> DiagnosticMessage {
        DiagnosticMessage(.expectedToken, "expected a property as NAME=VALUE, found '\(text)'")
    }
    static func unknownProperty(_ name: String, _ event: String, _ properties: [String]) -> DiagnosticMessage {
        let suggestions = Suggestions.closest(to: name, in: properties)
        let hint = suggestions.isEmpty ? "" : "; did you mean '\(suggestions[0])'?"
        return DiagnosticMessage(.unknownProperty, "event '\(event)' has no property '\(name)'\(hint)")
    }
    static func propertyValue(_ value: String, _ type: ValueType, _ property: String) -> DiagnosticMessage {
        DiagnosticMessage(.typeMismatch, "'\(value)' is no \(type.rawValue) for property '\(property)'")
    }
    static func extraWord(_ text: String) -> DiagnosticMessage {
        DiagnosticMessage(.expectedToken, "unexpected '\(text)' at the end of the step")
    }
    static func paramValue(_ value: String, _ type: ValueType, _ param: String, _ example: String) -> DiagnosticMessage
    {
        DiagnosticMessage(
            .typeMismatch,
            "'\(value)' is not \(type == .int ? "an" : "a") '\(type.rawValue)'; param '\(param)' takes \(example)")
    }
}

/// A timeline's own diagnostics.
extension DiagnosticID {
    /// A timeline line's time is not an offset such as `0`, `90s` or `1d12h`.
    public static let invalidTime = DiagnosticID("invalid-time")
    /// A timeline triggers or marks done a stream no rule counts or declares (a warning).
    public static let uncountedEvent = DiagnosticID("uncounted-event")
    /// A timeline line's step is not one of the timeline format's verbs.
    public static let unknownStep = DiagnosticID("unknown-step")
    /// A timeline finishes a scenario no earlier `present` step of it left open.
    public static let notPresented = DiagnosticID("not-presented")
}
