/// What became of a prompt the app showed (language 1.2): the app records one with
/// `RuleEngine.recordOutcome(_:of:)` or by finishing a presentation, and rules read them as
/// history: `count(RateApp: declined per version)`, `after later 3d`.
public enum Outcome: String, CaseIterable, Sendable, Codable {
    /// The user did what was asked (rated, subscribed).
    case accepted
    /// The user closed the prompt without answering.
    case dismissed
    /// The user said no.
    case declined
    /// The user asked to be asked later.
    case later
    /// The prompt does not report what the user did (a system review dialog).
    case unknown

    /// Every outcome's name, for suggestions and completion.
    public static let names = allCases.map(\.rawValue)
}

/// What an `after OUTCOME ...` clause waits for (language 1.2).
public enum AfterWait: Equatable, Hashable, Sendable {
    /// `after later 3d`: at least this long since the last such outcome.
    case duration(DurationLiteral)
    /// `after declined next version` (or `next session`): none in the current version or
    /// session, written at `range`.
    case next(ScopeKind, SourceRange)
    /// `after accepted never`: none ever (since install), written at `range`.
    case never(SourceRange)
}

/// The streams the engine keeps itself, under names no rule can write: they begin with `@`.
/// A language 1.2 file names two of them by a word: `crash` (runs that ended uncleanly) and
/// `problem` (the app's own `recordProblem()`); a scenario's outcomes are read as
/// `SCENARIO: OUTCOME`.
public enum EngineStream {
    /// Runs of the app that ended uncleanly, recorded at the next session's start.
    public static let crash = "@crash"
    /// Problems the app reports with `RuleEngine.recordProblem()`.
    public static let problem = "@problem"

    /// The stream of `scenario`'s outcomes `outcome`: `@declined:RateApp`.
    public static func outcome(_ outcome: Outcome, of scenario: String) -> String {
        "@" + outcome.rawValue + ":" + scenario
    }

    /// The stream of `event`'s triggers whose properties pass `filter` (its canonical text):
    /// `@where:purchase:amount >= 10`.
    /// A filter text longer than ``longestStoredTail`` is stored by a digest (``boundedTail(_:)``).
    public static func filtered(_ event: String, _ filter: String) -> String {
        "@where:" + event + ":" + boundedTail(filter)
    }

    /// The stream of `event`'s triggers whose properties pass `filter`, written in any spelling.
    public static func filtered(_ event: String, _ filter: Expr) -> String {
        filtered(event, Printer.expression(filter))
    }

    /// The stream that adds up `event`'s int property over its triggers (`sum(purchase.amount)`):
    /// `@sum:purchase.amount`, and `@sum:purchase.amount:plan == "pro"` with a filter. `tail` is the
    /// property and, after `:`, the filter's canonical text.
    /// A tail longer than ``longestStoredTail`` is stored by a digest (``boundedTail(_:)``).
    public static func sum(_ event: String, _ tail: String) -> String { "@sum:" + event + "." + boundedTail(tail) }

    /// The longest filter text (or sum tail) a stream's name holds whole, in UTF-8 bytes.
    public static let longestStoredTail = 256

    /// `tail` when it is at most ``longestStoredTail`` bytes long; otherwise its first 64 bytes
    /// (cut at a character), `…#` and 16 hexadecimal digits of ``StableHash/digest(_:)`` of the
    /// whole: a stream's name, and so every record that writes the stream, stays short however
    /// long the filter (every trigger that passes a filter writes its stream's name).
    public static func boundedTail(_ tail: String) -> String {
        let utf8 = tail.utf8
        guard utf8.count > longestStoredTail else { return tail }
        var end = utf8.index(utf8.startIndex, offsetBy: 64)
        while end > utf8.startIndex && UTF8.isContinuation(utf8[end]) { end = utf8.index(before: end) }
        let digest = String(StableHash.digest(utf8), radix: 16)
        return String(tail[..<end]) + "…#" + String(repeating: "0", count: 16 - digest.count) + digest
    }

    /// The tail of a sum's stream name: the property, and the filter if any.
    public static func sumTail(_ property: String, _ filter: Expr?) -> String {
        property + (filter.map { ":" + Printer.expression($0) } ?? "")
    }

    /// The stream of `scenario`'s control exposures (`holdout`): `@control:Offer`.
    public static func control(of scenario: String) -> String { "@control:" + scenario }

    /// The engine's stream a language 1.2 file means by `word` (`crash`, `problem`), if any.
    public static func builtin(_ word: String) -> String? {
        switch word {
        case "crash": return crash
        case "problem": return problem
        default: return nil
        }
    }

    /// The word a file writes for the engine's stream `name` (`crash` for `@crash`), if any.
    public static func word(for name: String) -> String? {
        switch name {
        case crash: return "crash"
        case problem: return "problem"
        default: return nil
        }
    }

    /// The words of ``builtin(_:)``, for completion.
    public static let words = ["crash", "problem"]

    /// True for a name of the engine's own (it begins with `@`): a rule file may not write
    /// one in quotes, and the app's calls do not record on one.
    public static func isReserved(_ name: some StringProtocol) -> Bool { name.utf8.first == UInt8(ascii: "@") }

    /// How the rules write the engine's stream `name` where they read it, for people (`rulec
    /// state`): `crash`, `RateApp: declined`, `purchase where amount >= 10`,
    /// `sum(purchase.amount where plan == "pro")`, `Offer: control exposures`; any other name as
    /// it is. (A filter stored by its digest shows the digest.)
    public static func ruleText(of name: String) -> String {
        guard isReserved(name) else { return name }
        if let word = word(for: name) { return word }
        if let (scenario, outcome) = parseOutcome(name) { return Printer.name(scenario) + ": " + outcome.rawValue }
        func after(_ prefix: String) -> Substring? { name.hasPrefix(prefix) ? name.dropFirst(prefix.count) : nil }
        if let rest = after("@where:"), let colon = rest.firstIndex(of: ":") {
            return Printer.name(String(rest[..<colon])) + " where " + rest[rest.index(after: colon)...]
        }
        if let rest = after("@sum:") {
            guard let colon = rest.firstIndex(of: ":") else { return "sum(\(rest))" }
            return "sum(\(rest[..<colon]) where \(rest[rest.index(after: colon)...]))"
        }
        if let scenario = after("@control:") { return Printer.name(String(scenario)) + ": control exposures" }
        return name
    }

    /// The scenario and outcome of an outcome stream's name, or nil.
    public static func parseOutcome(_ name: String) -> (scenario: String, outcome: Outcome)? {
        guard isReserved(name), let colon = name.firstIndex(of: ":") else { return nil }
        guard let outcome = Outcome(rawValue: String(name[name.index(after: name.startIndex)..<colon])) else {
            return nil
        }
        return (String(name[name.index(after: colon)...]), outcome)
    }
}
