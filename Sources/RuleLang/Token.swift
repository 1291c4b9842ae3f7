/// The kind of a token. Literal values are decoded from the source on demand.
public enum TokenKind: Equatable, Hashable, Sendable, CustomStringConvertible {
    case identifier, integer, duration, string
    /// `09:00`, `22:00-08:00` and `2026-12-01` (language 1.2's local windows).
    case clockTime, clockRange, date
    case kwScenario, kwParam, kwGroup, kwPer, kwWithin, kwAnd, kwOr, kwNot, kwTrue, kwFalse
    case less, greater, lessEqual, greaterEqual, equalEqual, bangEqual, equal
    case semicolon, colon, comma, leftParen, rightParen, leftBrace, rightBrace
    /// `%`, after a holdout's share (language 1.2).
    case percent
    /// `mon-fri`, `fri-mon`: the days from one through the other (`days`, language 1.2).
    case dayRange
    /// `purchase.amount`: an event's property (`sum`, language 1.2).
    case memberName
    /// Bytes the lexer already reported as an error.
    case invalid
    case eof

    public var description: String {
        switch self {
        case .identifier: return "name"
        case .integer: return "integer"
        case .duration: return "duration"
        case .string: return "string"
        case .clockTime: return "time of day"
        case .clockRange: return "range of hours"
        case .date: return "date"
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
        case .percent: return "'%'"
        case .dayRange: return "range of days"
        case .memberName: return "event's property"
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

    /// The keywords packed as little-endian words of their (at most 8) bytes, for the lexer:
    /// comparing one word per keyword needs no `String` and no hashing.
    static let packedKeywords: [(word: UInt64, kind: TokenKind)] = keywords.map { (pack($0.key.utf8), $0.value) }

    /// Up to 8 bytes as one little-endian word.
    @inline(__always)
    static func pack<Bytes: Collection>(_ bytes: Bytes) -> UInt64 where Bytes.Element == UInt8 {
        var word: UInt64 = 0
        var shift: UInt64 = 0
        for byte in bytes {
            word |= UInt64(byte) << shift
            shift += 8
        }
        return word
    }

    /// The keyword spelled by `bytes` (1 to 8 of them), if any.
    @inline(__always)
    static func keyword(_ bytes: ArraySlice<UInt8>) -> TokenKind? {
        let word = pack(bytes)
        for entry in packedKeywords where entry.word == word { return entry.kind }
        return nil
    }

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
