/// The kind of a token. Literal values are decoded from the source on demand.
public enum TokenKind: Equatable, Hashable, Sendable, CustomStringConvertible {
    case identifier, integer, duration, string
    case kwScenario, kwParam, kwGroup, kwPer, kwWithin, kwAnd, kwOr, kwNot, kwTrue, kwFalse
    case less, greater, lessEqual, greaterEqual, equalEqual, bangEqual, equal
    case semicolon, colon, comma, leftParen, rightParen, leftBrace, rightBrace
    /// Bytes the lexer already reported as an error.
    case invalid
    case eof

    public var description: String {
        switch self {
        case .identifier: return "name"
        case .integer: return "integer"
        case .duration: return "duration"
        case .string: return "string"
        case .kwScenario: return "'scenario'"
        case .kwParam: return "'param'"
        case .kwGroup: return "'group'"
        case .kwPer: return "'per'"
        case .kwWithin: return "'within'"
        case .kwAnd: return "'and'"
        case .kwOr: return "'or'"
        case .kwNot: return "'not'"
        case .kwTrue: return "'true'"
        case .kwFalse: return "'false'"
        case .less: return "'<'"
        case .greater: return "'>'"
        case .lessEqual: return "'<='"
        case .greaterEqual: return "'>='"
        case .equalEqual: return "'=='"
        case .bangEqual: return "'!='"
        case .equal: return "'='"
        case .semicolon: return "';'"
        case .colon: return "':'"
        case .comma: return "','"
        case .leftParen: return "'('"
        case .rightParen: return "')'"
        case .leftBrace: return "'{'"
        case .rightBrace: return "'}'"
        case .invalid: return "invalid input"
        case .eof: return "end of file"
        }
    }

    static let keywords: [String: TokenKind] = [
        "scenario": .kwScenario, "param": .kwParam, "group": .kwGroup, "per": .kwPer,
        "within": .kwWithin, "and": .kwAnd, "or": .kwOr, "not": .kwNot,
        "true": .kwTrue, "false": .kwFalse,
    ]

    /// True for the keywords that begin a declaration.
    public var startsDeclaration: Bool {
        self == .kwScenario || self == .kwParam || self == .kwGroup
    }
}

/// One token: its kind and its byte range in the source.
public struct Token: Equatable, Hashable, Sendable {
    /// What the token is.
    public var kind: TokenKind
    /// Its byte range in the source.
    public var range: SourceRange

    /// A token of `kind` at `range`.
    public init(_ kind: TokenKind, _ range: SourceRange) {
        self.kind = kind
        self.range = range
    }
}
