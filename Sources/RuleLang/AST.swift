/// A name as written, with its range.
public struct Name: Equatable, Hashable, Sendable {
    /// The name as written, without quotes or escapes.
    public var text: String
    /// The name's byte range in its file.
    public var range: SourceRange

    /// A name `text` at `range`.
    public init(_ text: String, _ range: SourceRange) {
        self.text = text
        self.range = range
    }
}

/// An integer literal with its range.
public struct IntLiteral: Equatable, Hashable, Sendable {
    /// The value.
    public var value: Int64
    /// The literal's byte range in its file.
    public var range: SourceRange
}

/// A duration literal, in whole seconds, with its range.
public struct DurationLiteral: Equatable, Hashable, Sendable {
    /// Whole seconds.
    public var seconds: Int64
    /// The literal's byte range in its file.
    public var range: SourceRange
}

/// Which events or executions a count looks at.
public enum ScopeKind: Equatable, Hashable, Sendable {
    /// Everything since install (or since the scenario's last reset). The default.
    case install
    /// Since the app's current version began (the first launch of that version).
    case version
    /// Since the current session began.
    case session
    /// A sliding window: times less than `seconds` old (an event exactly `seconds` old has left it).
    case within(seconds: Int64)
    /// Since the local calendar day began, in the device's zone (`per day`, language 1.2;
    /// `max_exec` only).
    case day
    /// Since the local ISO week began, Monday 00:00 in the device's zone (`per week`, language
    /// 1.2; `max_exec` only).
    case week
}

/// A scope with its range; `range` is empty when the default was implied.
public struct Scope: Equatable, Hashable, Sendable {
    /// Which events or executions.
    public var kind: ScopeKind
    /// Where the scope is written; empty when implied.
    public var range: SourceRange

    /// A scope of `kind` written at `range`.
    public init(_ kind: ScopeKind, _ range: SourceRange) {
        self.kind = kind
        self.range = range
    }
}

/// One clause of a scenario or group body.
public enum ClauseKind: Equatable, Hashable, Sendable {
    case minEvents(IntLiteral, Scope)
    /// `min_events 3 where plan == "pro" within 30d`: at least N triggers of the scenario's `on`
    /// events whose properties pass the filter. Language 1.2.
    case minEventsWhere(IntLiteral, Expr, Scope)
    case maxEvents(IntLiteral, Scope)
    case maxExec(IntLiteral, Scope)
    case sinceFirst(DurationLiteral)
    case sinceLast(DurationLiteral)
    case between(DurationLiteral)
    /// `between 1d, 3d, 1w`: the gap after the first execution, the second, ... (the last one
    /// after every later execution). Language 1.1.
    case growingBetween([DurationLiteral])
    case on([Name])
    case when(Expr)
    case priority(IntLiteral)
    /// `min_days N within D`: events on at least N distinct local days among the last D
    /// (whole days, today included). Language 1.1.
    case minDays(IntLiteral, DurationLiteral)
    /// `after declined next version`, `after later 3d`, `after accepted never`: what the
    /// scenario's own outcomes of one kind hold it back for. Language 1.2.
    case after(Name, AfterWait)
    /// `during 09:00-21:00`: local hours from the first time (included) to the second
    /// (excluded), across midnight when the second is earlier; `not during` (`outside`) is the
    /// rest of the day. Language 1.2.
    case during(ClockTime, ClockTime, outside: Bool)
    /// `days sat, sun`, `days weekdays`: the local days of the week. Language 1.2.
    case days([Name])
    /// `from 2026-12-01`: from local midnight starting the date on. Language 1.2.
    case from(CalendarDate)
    /// `until 2026-12-24`: up to the end of the date (local midnight after it). Language 1.2.
    case until(CalendarDate)
    /// `holdout 10% "winback-2026"`: installs whose bucket for the salt is below the share are
    /// the control arm: they are never shown the scenario (or the group's), and each time it
    /// would have shown an exposure is recorded. Language 1.2.
    case holdout(IntLiteral, salt: Name)
    /// `in home, feed`: only while the app is in one of these contexts; `not in
    /// checkout, pin` (`outside`): never while it is in one of them. The app says where the user
    /// is (`enter`, `leave`); contexts belong to the process and are never stored. Language 1.3.
    case contexts([Name], outside: Bool)
    /// `counts after 3s visible`: a presentation of the scenario counts (its execution, and its
    /// group's, recorded) only once it has been on screen this long, summed across hide and show
    /// and paused in the background; recorded at the time reached. Language 1.3.
    case countsAfter(DurationLiteral)
    /// `defer up to 30m`: a call that would show the scenario but for a context or a local
    /// window keeps the wish this long; while it lasts the scenario comes first in
    /// `executeNext`, every clause judged anew. Language 1.3.
    case deferral(DurationLiteral)

    /// The clause's keyword as written in source.
    public var keyword: String { word.text }

    /// Which clause it is, without its payload.
    var word: ClauseWord {
        switch self {
        case .minEvents, .minEventsWhere: return .minEvents
        case .maxEvents: return .maxEvents
        case .maxExec: return .maxExec
        case .sinceFirst: return .sinceFirst
        case .sinceLast: return .sinceLast
        case .between, .growingBetween: return .between
        case .on: return .on
        case .when: return .when
        case .priority: return .priority
        case .minDays: return .minDays
        case .after: return .after
        case .during: return .during
        case .days: return .days
        case .from: return .from
        case .until: return .until
        case .holdout: return .holdout
        case .contexts: return .contexts
        case .countsAfter: return .countsAfter
        case .deferral: return .deferral
        }
    }

    /// Every clause keyword, for suggestions; in the order of `ClauseWord`'s cases.
    public static let keywords = [
        "min_events", "max_events", "max_exec", "since_first", "since_last",
        "between", "on", "when", "priority", "min_days", "after", "during", "days", "from", "until", "holdout",
        "in", "counts", "defer",
    ]
}

/// A clause keyword: which clause it is, without the clause's payload.
enum ClauseWord: Int, CaseIterable, Sendable {
    case minEvents, maxEvents, maxExec, sinceFirst, sinceLast, between, on, when, priority, minDays, after
    case during, days, from, until, holdout, contexts, countsAfter, deferral

    /// The keyword as written.
    var text: String { ClauseKind.keywords[rawValue] }

    /// Each keyword's bytes, for finding one in source without making a `String`.
    static let spellings: [(bytes: [UInt8], word: ClauseWord)] = allCases.map { (Array($0.text.utf8), $0) }
}

/// One clause with its range.
public struct Clause: Equatable, Hashable, Sendable {
    /// What the clause says.
    public var kind: ClauseKind
    /// The clause's byte range, keyword to last argument.
    public var range: SourceRange
}

/// `scenario NAME < clauses >`.
public struct ScenarioDecl: Equatable, Hashable, Sendable {
    /// The scenario's name.
    public var name: Name
    /// Its body's clauses, in order.
    public var clauses: [Clause]
    /// The declaration's byte range, `scenario` to `>`.
    public var range: SourceRange
    /// The names it had before (`was OLD`), newest first: stored history under one of them moves to it.
    public var formerNames: [Name] = []
    /// For `retired scenario NAME` (language 1.2): the word `retired`. A retired scenario has no
    /// clauses, keeps its history and answers no.
    public var retired: SourceRange?

    /// The clauses it runs by: its own, or for a retired scenario one `max_exec 0` at the word
    /// `retired` (it can never run).
    public var effectiveClauses: [Clause] {
        guard let word = retired else { return clauses }
        return [Clause(kind: .maxExec(IntLiteral(value: 0, range: word), Scope(.install, word)), range: word)]
    }
}

/// `group NAME < clauses > { scenario ... }`.
public struct GroupDecl: Equatable, Hashable, Sendable {
    /// The group's name.
    public var name: Name
    /// The group's own clauses (shared by its members).
    public var clauses: [Clause]
    /// The scenarios declared inside its braces.
    public var members: [ScenarioDecl]
    /// The declaration's byte range, `group` to `}`.
    public var range: SourceRange
    /// The names it had before (`was OLD`), newest first.
    public var formerNames: [Name] = []
}

/// The type of a value: a param's declared type or an expression's type.
public enum ValueType: String, Equatable, Hashable, Sendable, CaseIterable {
    case bool, int, string, duration
}

/// `param NAME: TYPE [= DEFAULT]`.
public struct ParamDecl: Equatable, Hashable, Sendable {
    /// The param's name.
    public var name: Name
    /// The declared type; nil when it was missing or unknown (already reported).
    public var type: ValueType?
    /// Where the type is written.
    public var typeRange: SourceRange
    /// The default value's literal, if any.
    public var defaultValue: Expr?
    /// The declaration's byte range.
    public var range: SourceRange
    /// The names it had before (`was OLD`), newest first.
    public var formerNames: [Name] = []
}

/// `event NAME, ...`: event streams the program names. Once a program declares one,
/// every stream it names must be declared (or be a scenario's own).
public struct EventDecl: Equatable, Hashable, Sendable {
    /// The declared names, in order.
    public var names: [Name]
    /// The declaration's byte range.
    public var range: SourceRange
    /// By name (as `names`): the names each had before (`event open was launch`), newest first.
    public var formerNames: [[Name]] = []
    /// By name (as `names`): its typed properties (`event purchase(amount: int)`, language
    /// 1.2); empty for every name when none declares any.
    public var properties: [[PropertyDecl]] = []
}

/// `NAME: TYPE` in an event's declaration: a property its triggers carry (language 1.2).
public struct PropertyDecl: Equatable, Hashable, Sendable {
    /// The property's name.
    public var name: Name
    /// Its type (`int`, `string` or `bool`); nil when it was unknown (already reported).
    public var type: ValueType?
    /// The declaration's byte range, name to type.
    public var range: SourceRange

    /// A property `name` of `type` written at `range`.
    public init(name: Name, type: ValueType?, range: SourceRange) {
        self.name = name
        self.type = type
        self.range = range
    }
}

/// One top-level declaration of a file.
public enum Declaration: Equatable, Hashable, Sendable {
    case scenario(ScenarioDecl)
    case group(GroupDecl)
    case param(ParamDecl)
    case event(EventDecl)
}

/// A parsed file: its source and declarations in order.
public struct RuleFile: Sendable {
    /// The file's source.
    public var source: SourceFile
    /// Its declarations, in source order.
    public var declarations: [Declaration]
    /// Its `# language X.Y` line, if it has one (else it is language 1.0).
    public var language: LanguageDeclaration? = nil
    /// Where it uses a construct newer than 1.0, recorded by the parser as it makes each one
    /// (the version check walks no clause and no rename again).
    var newerConstructs: [NewerConstruct] = []

    /// The language version the file declares (1.0 when it declares none).
    public var languageVersion: LanguageVersion { language?.version ?? .initial }
}

/// A use of a construct newer than language 1.0: which, what the version check calls it
/// (`'min_days'` or `'active_days'` for ``Construct/days``), and where.
struct NewerConstruct: Sendable {
    let construct: Construct
    let what: String
    let range: SourceRange
}

// MARK: - Expressions

/// A prefix operator.
public enum UnaryOperator: String, Equatable, Hashable, Sendable {
    case not
}

/// An infix operator.
public enum BinaryOperator: String, Equatable, Hashable, Sendable {
    case or, and
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessEqual = "<="
    case greater = ">"
    case greaterEqual = ">="

    /// True for `==`, `!=`, `<`, `<=`, `>`, `>=`.
    public var isComparison: Bool { self != .or && self != .and }
}

/// An expression node and its range.
public struct Expr: Equatable, Hashable, Sendable {
    /// What an expression is.
    public indirect enum Kind: Equatable, Hashable, Sendable {
        case integer(Int64)
        /// Whole seconds.
        case duration(Int64)
        case string(String)
        case bool(Bool)
        /// A param's name.
        case name(String)
        case unary(UnaryOperator, Expr)
        case binary(BinaryOperator, Expr, Expr)
        /// `function(argument [scope])`; with `outcome`, `function(SCENARIO: OUTCOME [scope])`
        /// reads the scenario's outcomes of that kind; with `filter`, `function(EVENT where
        /// FILTER [scope])` reads the events whose properties pass it (both language 1.2).
        /// With `property`, `sum(EVENT.PROPERTY ...)`: the argument is the event.
        case call(
            function: Name, argument: Name, scope: Scope?, outcome: Name? = nil, filter: Expr? = nil,
            property: Name? = nil)
        case parenthesized(Expr)
        /// Input the parser already reported; checked no further.
        case invalid
    }

    /// What the expression is.
    public var kind: Kind
    /// The expression's byte range.
    public var range: SourceRange

    /// An expression of `kind` at `range`.
    public init(_ kind: Kind, _ range: SourceRange) {
        self.kind = kind
        self.range = range
    }

    /// Each call in the expression (not inside a filter), in order, with the integer it is
    /// compared with (`sum(...) >= 100`, `100 <= (sum(...))`), or nil when it is not an operand
    /// of a comparison with an integer.
    public var calls: [(call: Expr, compared: Int64?)] {
        var found: [(call: Expr, compared: Int64?)] = []
        func integer(_ expr: Expr) -> Int64? {
            switch expr.kind {
            case .integer(let value): return value
            case .parenthesized(let inner): return integer(inner)
            default: return nil
            }
        }
        func visit(_ expr: Expr, _ compared: Int64?) {
            switch expr.kind {
            case .parenthesized(let inner): visit(inner, compared)
            case .unary(_, let operand): visit(operand, nil)
            case .binary(let op, let left, let right):
                visit(left, op.isComparison ? integer(right) : nil)
                visit(right, op.isComparison ? integer(left) : nil)
            case .call: found.append((expr, compared))
            default: break
            }
        }
        visit(self, nil)
        return found
    }

    /// Each `sum(EVENT.PROPERTY ... within D)` of ``calls``, with the integer it is compared
    /// with. A windowed sum keeps that many units, and one more (grammar.md, "Event properties").
    public var windowedSums: [(call: Expr, threshold: Int64?)] {
        calls.compactMap { call, compared in
            guard case .call(_, _, let scope?, nil, _, _?) = call.kind, case .within = scope.kind else { return nil }
            return (call, compared)
        }
    }
}
