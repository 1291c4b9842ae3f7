/// A diagnostic's stable identifier, shown in `--json` output and as the language server's
/// `code`. Open: each module declares the identifiers of the diagnostics it makes, beside its
/// messages (the language's here, a timeline's in RuleTimeline, the tools' in RuleTools).
public struct DiagnosticID: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The identifier as written: lowercase words joined by '-'.
    public let rawValue: String

    /// The identifier `rawValue`.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The identifier `rawValue`.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }
}

/// The language's diagnostics, alphabetized.
extension DiagnosticID {
    /// A number where a duration is needed, without its unit (`between 3`).
    public static let bareDuration = DiagnosticID("bare-duration")
    /// `a < b < c`: comparisons do not chain.
    public static let chainedComparison = DiagnosticID("chained-comparison")
    /// A clause a group cannot hold (groups hold `max_exec`, `between` and `when`).
    public static let clauseNotInGroup = DiagnosticID("clause-not-in-group")
    /// A `<` or `>` comparison inside a body, outside parentheses.
    public static let comparisonOutsideParentheses = DiagnosticID("comparison-outside-parentheses")
    /// The same clause twice in one body.
    public static let duplicateClause = DiagnosticID("duplicate-clause")
    /// A scenario, group, param or event declared twice.
    public static let duplicateDeclaration = DiagnosticID("duplicate-declaration")
    /// The same stream listed twice in one `on` clause.
    public static let duplicateEvent = DiagnosticID("duplicate-event")
    /// A clause that may appear once per body (`since_first`, `between`...) given twice.
    public static let duplicateSingleClause = DiagnosticID("duplicate-single-clause")
    /// A `;` after a body, where none is needed (a warning).
    public static let extraSemicolon = DiagnosticID("extra-semicolon")
    /// The syntax expected something else here.
    public static let expectedToken = DiagnosticID("expected-token")
    /// An expression with more operators than the limit.
    public static let expressionTooLong = DiagnosticID("expression-too-long")
    /// A file over the size limit.
    public static let fileTooLarge = DiagnosticID("file-too-large")
    /// Clauses that can never all hold: the scenario never runs.
    public static let impossibleScenario = DiagnosticID("impossible-scenario")
    /// A number too large to hold.
    public static let integerOverflow = DiagnosticID("integer-overflow")
    /// A character the language does not use.
    public static let invalidCharacter = DiagnosticID("invalid-character")
    /// A duration that is malformed or not whole where it must be.
    public static let invalidDuration = DiagnosticID("invalid-duration")
    /// An escape in a string other than the ones the language has.
    public static let invalidEscape = DiagnosticID("invalid-escape")
    /// Bytes that are not UTF-8.
    public static let invalidUTF8 = DiagnosticID("invalid-utf8")
    /// A file that needs a newer language than the library reads, or than `--language` allows,
    /// or a construct newer than the file declares.
    public static let languageVersion = DiagnosticID("language-version")
    /// A name over the length limit.
    public static let nameTooLong = DiagnosticID("name-too-long")
    /// A `was` name that is live, claimed twice, or part of a cycle.
    public static let invalidRename = DiagnosticID("invalid-rename")
    /// A minus sign before a number: counts, thresholds and priorities are whole numbers from 0.
    public static let negativeNumber = DiagnosticID("negative-number")
    /// Parentheses nested deeper than the limit.
    public static let nestingTooDeep = DiagnosticID("nesting-too-deep")
    /// A scenario whose clauses leave it no chance to run (a warning).
    public static let neverRuns = DiagnosticID("never-runs")
    /// `between 3d, 1d`: a growing-gap list that shrinks (a warning).
    public static let shrinkingGaps = DiagnosticID("shrinking-gaps")
    /// A stored value that the rules ignore (a warning).
    public static let storedValueIgnored = DiagnosticID("stored-value-ignored")
    /// A body with more clauses than the limit.
    public static let tooManyClauses = DiagnosticID("too-many-clauses")
    /// A program with more declarations than the limit.
    public static let tooManyDeclarations = DiagnosticID("too-many-declarations")
    /// The error limit was reached; later errors are not reported.
    public static let tooManyErrors = DiagnosticID("too-many-errors")
    /// A value of one type where another is needed.
    public static let typeMismatch = DiagnosticID("type-mismatch")
    /// A word where a clause starts that is no clause.
    public static let unknownClause = DiagnosticID("unknown-clause")
    /// A program that declares events names a stream it does not declare.
    public static let unknownEvent = DiagnosticID("unknown-event")
    /// A call to a function the language does not have.
    public static let unknownFunction = DiagnosticID("unknown-function")
    /// A name that is not declared.
    public static let unknownName = DiagnosticID("unknown-name")
    /// A property an event does not declare, read by a filter (`where`).
    public static let unknownProperty = DiagnosticID("unknown-property")
    /// An outcome other than `accepted`, `dismissed`, `declined`, `later` and `unknown`.
    public static let unknownOutcome = DiagnosticID("unknown-outcome")
    /// A time of day, date or day of the week that does not exist (`25:00`, `2026-02-30`, `fri_day`).
    public static let invalidLocalTime = DiagnosticID("invalid-local-time")
    /// A name of the engine's own (beginning with `@`), or a built-in stream declared as an event.
    public static let reservedName = DiagnosticID("reserved-name")
    /// A scenario or group that is not declared.
    public static let unknownScenario = DiagnosticID("unknown-scenario")
    /// A scope other than the ones the language has.
    public static let unknownScope = DiagnosticID("unknown-scope")
    /// A param type the language does not have.
    public static let unknownType = DiagnosticID("unknown-type")
    /// A string without its closing quote.
    public static let unterminatedString = DiagnosticID("unterminated-string")
    /// A declared event no rule names.
    public static let unusedEvent = DiagnosticID("unused-event")
    /// A name holding '-' or '.' written without quotes.
    public static let unquotedName = DiagnosticID("unquoted-name")
    /// `&&`, `||`, `!` or `=` where the rules say `and`, `or`, `not` or `==`.
    public static let wrongOperator = DiagnosticID("wrong-operator")
    /// A count or window larger than the limit.
    public static let windowThresholdTooLarge = DiagnosticID("window-threshold-too-large")
}

/// What a diagnostic says and the stable id that names it, made together in one place
/// (`Message` in this module) so an id never drifts from its text.
public struct DiagnosticMessage: Sendable, Hashable {
    /// The stable identifier.
    public let id: DiagnosticID
    /// The text: lowercase, no final period.
    public let text: String

    /// `text`, identified by `id`. Other modules (the runtime, timelines, tools) make theirs with it.
    public init(_ id: DiagnosticID, _ text: String) {
        self.id = id
        self.text = text
    }
}

/// The wording of every message, in one place: lowercase, no final period,
/// names in 'single quotes', a second idea after ';'.
enum Message {
    static func malformedLanguageLine(_ line: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .languageVersion, "'\(line)' is not a language version line; write '# language \(LanguageVersion.current)'")
    }
    static func newerLanguage(_ version: LanguageVersion) -> DiagnosticMessage {
        DiagnosticMessage(
            .languageVersion,
            "this file needs rules language \(version); this library reads language \(LanguageVersion.current) and older"
        )
    }
    static func languageAboveTarget(_ version: LanguageVersion, _ target: LanguageVersion) -> DiagnosticMessage {
        DiagnosticMessage(
            .languageVersion,
            "this file needs rules language \(version); apps reading language \(target) cannot load it")
    }
    static let languageLineNotFirst = DiagnosticMessage(
        .languageVersion,
        "a '# language' line declares the version only as the first line of the file; "
            + "this one is a comment: move it to line 1")
    static func constructNeedsLanguage(_ construct: String, _ version: LanguageVersion, declared: LanguageVersion)
        -> DiagnosticMessage
    {
        DiagnosticMessage(
            .languageVersion,
            "\(construct) needs rules language \(version), but this file is language \(declared); "
                + "declare it on the first line: '# language \(version)'")
    }
    static let dayWindowRequired = DiagnosticMessage(
        .expectedToken, "'active_days' takes a window of whole days: 'active_days(EVENT within 7d)'")
    static func wholeDays(_ text: String) -> DiagnosticMessage {
        DiagnosticMessage(.invalidDuration, "days are counted whole: '\(text)' is not a whole number of days")
    }
    static func dayWindowTooLong(_ days: Int64) -> DiagnosticMessage {
        DiagnosticMessage(
            .windowThresholdTooLarge, "a window of \(days) days is longer than the \(Limits.maxDayWindow) days counted")
    }
    static func moreDaysThanWindow(_ n: Int64, _ days: Int64) -> DiagnosticMessage {
        DiagnosticMessage(.impossibleScenario, "\(n) distinct days cannot fit in a window of \(days); it never runs")
    }
    static func shrinkingGaps(_ earlier: String, _ later: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .shrinkingGaps,
            "the gaps shrink: \(later) after \(earlier), so a later 'not now' waits less than an earlier one")
    }
    static func renameOfLiveName(_ kind: String, _ old: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .invalidRename, "'\(old)' is a \(kind) of these rules; only a name no longer declared can be a former name")
    }
    static func renameCycle(_ names: [String]) -> DiagnosticMessage {
        DiagnosticMessage(
            .invalidRename, "renames form a cycle: " + names.map { "'\($0)'" }.joined(separator: " was "))
    }
    static func retiredWithClauses(_ name: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .expectedToken,
            "a retired scenario has no clauses: 'retired scenario \(name)' answers no, whatever they say")
    }
    static func readsMovedName(_ old: String, _ new: String, what: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .invalidRename,
            "'\(old)' was renamed to '\(new)' ('was' moves its \(what) there); this reads the old name, "
                + "which holds none any more: read '\(new)'")
    }
    static func renameClaimedTwice(_ old: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .invalidRename, "'\(old)' is claimed as a former name twice; its history can move to one name only")
    }
    static func bareDuration(_ text: String, _ fix: String) -> DiagnosticMessage {
        DiagnosticMessage(.bareDuration, "a duration needs a unit; '\(text)' seconds is '\(fix)'")
    }
    static func bareDurationChoices(_ text: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .bareDuration, "a duration needs a unit: '\(text)s', '\(text)m', '\(text)h', '\(text)d' or '\(text)w'?")
    }
    static func unitWordApart(_ text: String, _ fix: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .bareDuration, "a duration is written with a one-letter unit and no space; '\(text)' is '\(fix)'")
    }
    static let assignmentInCondition = DiagnosticMessage(
        .wrongOperator, "use '==' to compare; '=' only gives a param its default")
    static func scopeUnit(_ word: String, _ fix: String?) -> DiagnosticMessage {
        let text =
            if let fix {
                "there is no 'per \(word)'; \(word == "hour" ? "an" : "a") \(word) is a window: '\(fix)'"
            } else if word == "year" {
                "there is no 'per year'; years differ in length: use a window such as 'within 365d'"
            } else {
                "there is no 'per month'; months differ in length: use a window such as 'within 30d' or 'within 4w'"
            }
        return DiagnosticMessage(.unknownScope, text)
    }
    static func calendarScopeElsewhere(_ word: String, _ fix: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .unknownScope,
            "'per \(word)' caps executions on the local calendar: only 'max_exec' takes it; "
                + "a sliding \(word) is '\(fix)'")
    }
    static func numberBeforeScope(_ clause: String, _ fix: String) -> DiagnosticMessage {
        DiagnosticMessage(.expectedToken, "the number comes before the scope: '\(clause) \(fix)'")
    }
    static let conditionNeedsWhen = DiagnosticMessage(.unknownClause, "a condition needs 'when': 'when CONDITION'")
    static func stringNeedsQuotes(_ word: String, names: String = "a param") -> DiagnosticMessage {
        DiagnosticMessage(.unknownName, "strings are quoted: '\"\(word)\"'; a bare word names \(names)")
    }
    static let bodyInBraces = DiagnosticMessage(
        .expectedToken, "a body is written between '<' and '>'; braces hold a group's scenarios")
    static func lowercaseKeyword(_ written: String, _ keyword: String) -> DiagnosticMessage {
        DiagnosticMessage(.expectedToken, "keywords are lowercase: '\(keyword)', not '\(written)'")
    }
    static let missingSeparator = DiagnosticMessage(.expectedToken, "clauses are separated by ';'")
    static let semicolonAfterBody = DiagnosticMessage(.extraSemicolon, "no ';' is needed after a body")
    static func sinceLastTakesDuration(_ clause: String, _ event: String, _ duration: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .expectedToken,
            "'\(clause)' takes a duration (the scenario's own events); to test another event use "
                + "'when \(clause)(\(event)) >= \(duration)'")
    }
    static let chainedComparison = DiagnosticMessage(
        .chainedComparison, "comparisons cannot be chained; add parentheses")
    static func clauseNotInGroup(_ clause: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .clauseNotInGroup,
            "clause '\(clause)' is not allowed in a group; a group takes 'max_exec', 'between' and 'when'")
    }
    static func comparisonOutsideParentheses(_ op: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .comparisonOutsideParentheses,
            "'\(op)' is a comparison only inside parentheses; a bare '>' closes the scenario")
    }
    static func duplicateClause(_ clause: String) -> DiagnosticMessage {
        DiagnosticMessage(.duplicateClause, "duplicate clause '\(clause)'")
    }
    static func duplicateDeclaration(_ kind: String, _ name: String) -> DiagnosticMessage {
        DiagnosticMessage(.duplicateDeclaration, "duplicate \(kind) '\(name)'")
    }
    static func duplicateEvent(_ name: String) -> DiagnosticMessage {
        DiagnosticMessage(.duplicateEvent, "event '\(name)' is named twice in 'on'")
    }
    static func duplicateSingleClause(_ clause: String) -> DiagnosticMessage {
        DiagnosticMessage(.duplicateSingleClause, "more than one '\(clause)' clause")
    }
    static func expected(_ what: String, found: String) -> DiagnosticMessage {
        DiagnosticMessage(.expectedToken, "expected \(what), found \(found)")
    }
    static func fileTooLarge(_ size: Int) -> DiagnosticMessage {
        DiagnosticMessage(.fileTooLarge, "file is \(size) bytes; the limit is \(Limits.maxFileSize) bytes")
    }
    static func impossible(_ a: String, _ b: String, _ scope: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .impossibleScenario, "'\(a)' and '\(b)' can never both hold \(scope); the scenario never runs")
    }
    static func impossibleAcross(_ a: String, _ b: String, _ narrow: String, _ wide: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .impossibleScenario,
            "'\(a)' and '\(b)' can never both hold: the events \(narrow) are among those \(wide); the scenario never runs"
        )
    }
    static func sinceFirstWithoutEvents(_ clause: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .impossibleScenario, "'\(clause)' needs an event, and 'max_events 0' allows none; the scenario never runs")
    }
    static func twoTimeClauses(_ keyword: String, _ larger: String) -> DiagnosticMessage {
        DiagnosticMessage(.duplicateClause, "two '\(keyword)' clauses: only the larger, '\(larger)', matters")
    }
    static func integerOverflow(_ text: String) -> DiagnosticMessage {
        DiagnosticMessage(.integerOverflow, "number '\(text)' does not fit in 64 bits")
    }
    static func invalidCharacter(_ text: String) -> DiagnosticMessage {
        DiagnosticMessage(.invalidCharacter, "unexpected character '\(text)'")
    }
    static func invalidDuration(_ text: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .invalidDuration,
            "invalid duration '\(text)'; a duration is numbers with units s, m, h, d, w, as in '1d12h'")
    }
    static func invalidEscape(_ text: String) -> DiagnosticMessage {
        DiagnosticMessage(.invalidEscape, "invalid escape '\(text)' in string; only '\\\"' and '\\\\' are allowed")
    }
    static func invalidUTF8(_ byte: UInt8) -> DiagnosticMessage {
        DiagnosticMessage(.invalidUTF8, "invalid UTF-8 byte 0x\(String(byte, radix: 16, uppercase: true))")
    }
    static func nameTooLong(_ length: Int) -> DiagnosticMessage {
        DiagnosticMessage(.nameTooLong, "name is \(length) bytes long; the limit is \(Limits.maxNameLength)")
    }
    static let expressionTooLong = DiagnosticMessage(
        .expressionTooLong, "expression has more than \(Limits.maxExpressionOperators) operators")
    static let nestingTooDeep = DiagnosticMessage(
        .nestingTooDeep, "expression nests deeper than \(Limits.maxNestingDepth) levels")
    static let neverRuns = DiagnosticMessage(.neverRuns, "'max_exec 0' means the scenario never runs")
    static let tooManyClauses = DiagnosticMessage(
        .tooManyClauses, "more than \(Limits.maxClausesPerBody) clauses in one body")
    static let tooManyDeclarations = DiagnosticMessage(
        .tooManyDeclarations, "more than \(Limits.maxDeclarationsPerFile) declarations in one file")
    static func wrongOperator(_ written: String, _ word: String) -> DiagnosticMessage {
        DiagnosticMessage(.wrongOperator, "'\(written)' is written '\(word)' in rules")
    }
    static func negativeNumber(_ text: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .negativeNumber,
            "'\(text)' is negative; counts, thresholds and priorities are whole numbers from 0 "
                + "(the highest priority wins: use 0 for the lowest)")
    }
    static func unquotedName(_ text: String) -> DiagnosticMessage {
        DiagnosticMessage(.unquotedName, "a name holding '-' or '.' must be quoted: '\"\(text)\"'")
    }
    static func fractionalDuration(_ text: String, _ fix: String?) -> DiagnosticMessage {
        DiagnosticMessage(
            .invalidDuration,
            fix.map { "durations are whole units; '\(text)' is '\($0)'" }
                ?? "durations are whole units; write '\(text)' with smaller units, as in '1d12h'")
    }
    static func unitWord(_ text: String, _ fix: String) -> DiagnosticMessage {
        DiagnosticMessage(.invalidDuration, "a duration's unit is one letter (s, m, h, d, w); '\(text)' is '\(fix)'")
    }
    static func noCalendarUnit(_ id: DiagnosticID, _ text: String, _ unit: DurationText.UnitWord) -> DiagnosticMessage {
        DiagnosticMessage(
            id,
            unit.calendarUnit == "year"
                ? "there is no year unit in '\(text)', because years differ in length; use days, as in '365d'"
                : "there is no month unit in '\(text)', because months differ in length; use '30d' or '4w'")
    }
    static func unusedEvent(_ name: String) -> DiagnosticMessage {
        DiagnosticMessage(.unusedEvent, "event '\(name)' is declared but never used")
    }
    static func duplicateEventDeclaration(_ name: String) -> DiagnosticMessage {
        DiagnosticMessage(.duplicateDeclaration, "event '\(name)' is declared twice")
    }
    static func tooManyErrors(_ limit: Int) -> DiagnosticMessage {
        DiagnosticMessage(.tooManyErrors, "too many errors (more than \(limit)); stopping here")
    }
    static func tooManyDiagnostics(_ more: Int, _ limit: Int) -> DiagnosticMessage {
        DiagnosticMessage(.tooManyErrors, "\(more) more diagnostics not shown (at most \(limit) per file)")
    }
    static func unknown(_ id: DiagnosticID, _ kind: String, _ name: String, _ suggestions: [String])
        -> DiagnosticMessage
    {
        DiagnosticMessage(id, Suggestions.unknown(kind, name, suggestions: suggestions))
    }
    static func windowThresholdTooLarge(_ value: Int64) -> DiagnosticMessage {
        DiagnosticMessage(
            .windowThresholdTooLarge,
            "threshold \(value) is too large for a 'within' window; the limit is \(Limits.maxWindowedThreshold)")
    }
    static func unknownProperty(_ name: String, of event: String, _ suggestions: [String]) -> DiagnosticMessage {
        let hint = suggestions.isEmpty ? "" : "; did you mean '\(suggestions[0])'?"
        return DiagnosticMessage(.unknownProperty, "event '\(event)' has no property '\(name)'\(hint)")
    }
    static func sumNotInt(_ property: String, _ type: ValueType) -> DiagnosticMessage {
        DiagnosticMessage(.typeMismatch, "'sum' adds an int property; '\(property)' is \(type.rawValue)")
    }
    static var sumWindow: DiagnosticMessage {
        DiagnosticMessage(
            .typeMismatch,
            "'sum' over a window is compared with a number ('sum(purchase.amount within 30d) >= 100'): "
                + "it keeps as many units as that number, no more")
    }
    static func noProperties(_ event: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .unknownProperty,
            "event '\(event)' declares no properties to filter on; declare them: 'event \(event)(NAME: TYPE, ...)'")
    }
    static var filterNeedsOn: DiagnosticMessage {
        DiagnosticMessage(
            .unknownProperty,
            "'min_events N where ...' filters the triggers of the scenario's 'on' events; add 'on EVENT' "
                + "naming events with properties")
    }
    static func filterFunction(_ function: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .typeMismatch,
            "'\(function)' takes no 'where'; 'count', 'since_first', 'since_last' and 'active_days' of an event do")
    }
    static let filterCall = DiagnosticMessage(
        .typeMismatch, "a filter compares the event's properties with values; it calls no function")
    static func filterNotBool(_ type: ValueType) -> DiagnosticMessage {
        DiagnosticMessage(.typeMismatch, "a filter is true or false; this is \(type.rawValue)")
    }
    static func duplicateProperty(_ name: String, of event: String) -> DiagnosticMessage {
        DiagnosticMessage(.duplicateDeclaration, "property '\(name)' of event '\(event)' is declared twice")
    }
    static func otherProperties(_ event: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .duplicateDeclaration, "event '\(event)' is declared again with other properties; declare them once")
    }
    static let unterminatedString = DiagnosticMessage(
        .unterminatedString, "unterminated string; add a closing '\"' on the same line")
}

extension Message {
    static func holdoutAll(_ share: Int64) -> DiagnosticMessage {
        DiagnosticMessage(.impossibleScenario, "a holdout of \(share)% holds out every install: it never runs")
    }
    static let holdoutNone = DiagnosticMessage(.neverRuns, "a holdout of 0% holds out no install: it does nothing")
    static func saltNotQuoted(_ text: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .typeMismatch, "'bucket' takes a salt written as a string, such as bucket(\"paywall-2026\"), not '\(text)'")
    }
    static func invalidClock(_ text: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .invalidLocalTime,
            "'\(text)' is no time of day: hours run from 00 to 23 and minutes from 00 to 59 (24:00 ends a day)")
    }
    static func invalidDate(_ text: String) -> DiagnosticMessage {
        DiagnosticMessage(.invalidLocalTime, "'\(text)' is no date (YYYY-MM-DD)")
    }
    static func duplicateContext(_ name: String) -> DiagnosticMessage {
        DiagnosticMessage(.duplicateEvent, "context '\(name)' is named twice in one list")
    }
    static func contextsExcludeAll(_ names: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .impossibleScenario, "every context 'in' allows (\(names)) is one a 'not in' refuses: it never runs")
    }
    static func zeroWait(_ text: String) -> DiagnosticMessage {
        DiagnosticMessage(.impossibleScenario, "'\(text)' needs a duration longer than 0s")
    }
    static let nothingToDefer = DiagnosticMessage(
        .impossibleScenario,
        "'defer' keeps a wish refused by a context or a local window ('in', 'not in', 'during', 'days', 'from', "
            + "'until'), and neither the scenario nor its group has one: it never defers")
    static func emptyHours(_ text: String) -> DiagnosticMessage {
        DiagnosticMessage(.impossibleScenario, "'\(text)' starts and ends at the same time: write the hours it holds")
    }
    static func duringNeedsRange(_ found: String) -> DiagnosticMessage {
        DiagnosticMessage(.expectedToken, "'during' takes a range of local hours such as 09:00-21:00, not \(found)")
    }
    static func dateNeeded(_ keyword: String, _ found: String) -> DiagnosticMessage {
        DiagnosticMessage(.expectedToken, "'\(keyword)' takes a local date such as 2026-12-01, not \(found)")
    }
    static func neverOpen(_ from: String, _ until: String) -> DiagnosticMessage {
        DiagnosticMessage(.impossibleScenario, "'from \(from)' is after 'until \(until)': it never runs")
    }
    static let noDays = DiagnosticMessage(
        .impossibleScenario, "these 'days' clauses share no day of the week: it never runs")
    static func afterWait(_ word: String, _ suggestions: [String]) -> DiagnosticMessage {
        DiagnosticMessage(
            .expectedToken,
            "'after' waits for a duration, 'next version', 'next session' or 'never', not '\(word)'"
                + (suggestions.first.map { "; did you mean '\($0)'?" } ?? ""))
    }
    static func outcomeFunction(_ function: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .typeMismatch, "'\(function)' does not read outcomes; 'count', 'since_first' and 'since_last' do")
    }
    static func reservedName(_ name: String) -> DiagnosticMessage {
        DiagnosticMessage(.reservedName, "'\(name)' begins with '@': such names are the engine's own")
    }
    static func engineStreamArgument(_ word: String, _ function: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .reservedName,
            "'\(word)' is the engine's own stream; '\(function)' takes "
                + (function == "todo" ? "a to-do's name" : "a scenario or a group") + ", not a stream")
    }
    static func builtinStreamDeclared(_ word: String) -> DiagnosticMessage {
        DiagnosticMessage(
            .reservedName, "'\(word)' is the engine's own stream in language 1.2; it needs no declaration")
    }
    static func conditionNotBool(_ type: ValueType) -> DiagnosticMessage {
        DiagnosticMessage(.typeMismatch, "'when' needs a bool condition; this is '\(type.rawValue)'")
    }
    static func operandNotBool(_ op: String, _ type: ValueType) -> DiagnosticMessage {
        DiagnosticMessage(.typeMismatch, "'\(op)' needs bool operands; this is '\(type.rawValue)'")
    }
    static func cannotCompare(_ a: ValueType, _ b: ValueType) -> DiagnosticMessage {
        DiagnosticMessage(.typeMismatch, "cannot compare '\(a.rawValue)' with '\(b.rawValue)'")
    }
    static func notOrdered(_ op: String, _ type: ValueType) -> DiagnosticMessage {
        DiagnosticMessage(.typeMismatch, "'\(op)' compares ints or durations, not '\(type.rawValue)'")
    }
    static func defaultType(_ name: String, _ actual: ValueType, _ declared: ValueType) -> DiagnosticMessage {
        DiagnosticMessage(
            .typeMismatch, "default value of '\(name)' is '\(actual.rawValue)'; the param is '\(declared.rawValue)'")
    }
    static let defaultNotLiteral = DiagnosticMessage(
        .typeMismatch, "a param's default must be a literal (a number, duration, string, 'true' or 'false')")
    static func noScope(_ function: String) -> DiagnosticMessage {
        DiagnosticMessage(.typeMismatch, "'\(function)' takes no scope; only 'count' and 'executions' do")
    }
}

extension DiagnosticMessage {
    /// The runtime's warning when a stored param value no longer has the param's declared type.
    public static func storedValueIgnored(_ param: String, stored: ValueType, declared: ValueType) -> DiagnosticMessage
    {
        DiagnosticMessage(
            .storedValueIgnored,
            "the stored value of param '\(param)' is '\(stored.rawValue)' but the param is '\(declared.rawValue)'; "
                + "the stored value is ignored")
    }
}
