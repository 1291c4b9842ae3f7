/// Turns bytes into tokens. Reports malformed input as diagnostics and never fails.
struct Lexer {
    private let file: SourceFile
    private let bytes: [UInt8]
    private var position: Int
    private let end: Int

    init(file: SourceFile, range: SourceRange? = nil) {
        self.file = file
        self.bytes = file.bytes
        self.position = range?.lowerBound ?? 0
        self.end = range?.upperBound ?? file.bytes.count
        // A UTF-8 byte order mark at the start of a file is not content.
        if position == 0 { position = min(file.contentStart, end) }
    }

    /// Every token up to and including `.eof`.
    mutating func tokenize(into sink: inout DiagnosticSink) -> [Token] {
        var tokens: [Token] = []
        // About one token per five bytes of rules: room made once, not by doubling and copying.
        tokens.reserveCapacity((end - position) / 5 + 16)
        while !sink.isFull {
            let token = next(&sink)
            tokens.append(token)
            if token.kind == .eof { return tokens }
        }
        tokens.append(Token(.eof, end..<end))
        return tokens
    }

    // MARK: - Scanning

    private func peek(_ ahead: Int = 0) -> UInt8 {
        position + ahead < end ? bytes[position + ahead] : 0
    }

    private static func isIdentifierStart(_ b: UInt8) -> Bool {
        (b >= 0x61 && b <= 0x7A) || (b >= 0x41 && b <= 0x5A) || b == 0x5F
    }

    static func isIdentifierByte(_ b: UInt8) -> Bool {
        isIdentifierStart(b) || (b >= 0x30 && b <= 0x39)
    }

    private mutating func skipTrivia() {
        while position < end {
            let b = bytes[position]
            if b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D {
                position += 1
            } else if b == UInt8(ascii: "#") || (b == UInt8(ascii: "/") && peek(1) == UInt8(ascii: "/")) {
                while position < end && bytes[position] != 0x0A { position += 1 }
            } else {
                return
            }
        }
    }

    private mutating func next(_ sink: inout DiagnosticSink) -> Token {
        skipTrivia()
        let start = position
        guard position < end else { return Token(.eof, end..<end) }
        let b = bytes[position]
        position += 1
        func single(_ kind: TokenKind) -> Token { Token(kind, start..<position) }
        func pair(_ second: UInt8, _ double: TokenKind, _ alone: TokenKind) -> Token {
            if peek() == second {
                position += 1
                return Token(double, start..<position)
            }
            return Token(alone, start..<position)
        }
        switch b {
        case UInt8(ascii: "<"): return pair(UInt8(ascii: "="), .lessEqual, .less)
        case UInt8(ascii: ">"): return pair(UInt8(ascii: "="), .greaterEqual, .greater)
        case UInt8(ascii: "="): return pair(UInt8(ascii: "="), .equalEqual, .equal)
        case UInt8(ascii: ";"): return single(.semicolon)
        case UInt8(ascii: ":"): return single(.colon)
        case UInt8(ascii: ","): return single(.comma)
        case UInt8(ascii: "%"): return single(.percent)
        case UInt8(ascii: "("): return single(.leftParen)
        case UInt8(ascii: ")"): return single(.rightParen)
        case UInt8(ascii: "{"): return single(.leftBrace)
        case UInt8(ascii: "}"): return single(.rightBrace)
        case UInt8(ascii: "!") where peek() == UInt8(ascii: "="):
            position += 1
            return single(.bangEqual)
        // Operators from other languages: one error with the fix, then read as meant.
        case UInt8(ascii: "&"), UInt8(ascii: "|"):
            if peek() == b { position += 1 }
            let word = b == UInt8(ascii: "&") ? "and" : "or"
            sink.error(
                Message.wrongOperator(file.text(start..<position), word), start..<position,
                fixIts: [FixIt(range: start..<position, replacement: word)])
            return single(word == "and" ? .kwAnd : .kwOr)
        case UInt8(ascii: "!"):
            // `!b` -> `not b`: the fix keeps a space before the operand.
            sink.error(
                Message.wrongOperator("!", "not"), start..<position,
                fixIts: [FixIt(range: start..<position, replacement: "not ")])
            return single(.kwNot)
        case UInt8(ascii: "-")
        where position < end && bytes[position] >= UInt8(ascii: "0")
            && bytes[position] <= UInt8(ascii: "9"):
            let token = number(position, &sink)
            let range = start..<token.range.upperBound
            if token.kind == .integer || token.kind == .duration {
                sink.error(Message.negativeNumber(file.text(range)), range)
            }
            return Token(.invalid, range)
        case UInt8(ascii: "\""):
            return string(start, &sink)
        case UInt8(ascii: "0")...UInt8(ascii: "9"):
            return number(start, &sink)
        default:
            if Lexer.isIdentifierStart(b) {
                while position < end && Lexer.isIdentifierByte(bytes[position]) { position += 1 }
                let range = start..<position
                if range.count > Limits.maxNameLength {
                    sink.error(Message.nameTooLong(range.count), range)
                    return Token(.invalid, range)
                }
                if range.count <= 8, let keyword = TokenKind.keyword(bytes[range]) {
                    return Token(keyword, range)
                }
                // `episode-played`, `episode.played`: a name with such characters is quoted.
                if position + 1 < end, bytes[position] == UInt8(ascii: "-") || bytes[position] == UInt8(ascii: "."),
                    Lexer.isIdentifierByte(bytes[position + 1])
                {
                    while position + 1 < end,
                        bytes[position] == UInt8(ascii: "-") || bytes[position] == UInt8(ascii: "."),
                        Lexer.isIdentifierByte(bytes[position + 1])
                    {
                        position += 1
                        while position < end && Lexer.isIdentifierByte(bytes[position]) { position += 1 }
                    }
                    let whole = start..<position
                    let text = file.text(whole)
                    // `mon-fri`: a range of days, for `days` (elsewhere the parser asks for quotes).
                    if whole.count == 7, Weekday.days(named: text) != nil { return Token(.dayRange, whole) }
                    // `purchase.amount`: an event's property, for `sum` (elsewhere the parser asks
                    // for quotes).
                    if text.utf8.filter({ $0 == UInt8(ascii: ".") }).count == 1, !text.contains("-"),
                        text.utf8.last != UInt8(ascii: ".")
                    {
                        return Token(.memberName, whole)
                    }
                    sink.error(
                        Message.unquotedName(text), whole,
                        fixIts: [FixIt(range: whole, replacement: "\"" + text + "\"")])
                    return Token(.identifier, whole)
                }
                return Token(.identifier, range)
            }
            return badCharacter(start, &sink)
        }
    }

    private mutating func number(_ start: Int, _ sink: inout DiagnosticSink) -> Token {
        while position < end && Lexer.isIdentifierByte(bytes[position]) { position += 1 }
        if let local = localTime(start) { return local }
        // `1.5d`: durations are whole units; say what it is in whole seconds.
        if position + 1 < end, bytes[position] == UInt8(ascii: "."), bytes[position + 1] >= UInt8(ascii: "0"),
            bytes[position + 1] <= UInt8(ascii: "9")
        {
            position += 1
            while position < end && Lexer.isIdentifierByte(bytes[position]) { position += 1 }
            let range = start..<position
            let text = file.text(range)
            if let fix = DurationText.fractional(text) {
                sink.error(
                    Message.fractionalDuration(text, fix), range,
                    fixIts: [FixIt(range: range, replacement: fix)])
            } else {
                sink.error(Message.fractionalDuration(text, nil), range)
            }
            return Token(.invalid, range)
        }
        let range = start..<position
        switch DurationText.parse(bytes[range]) {
        case .integer: return Token(.integer, range)
        case .seconds: return Token(.duration, range)
        case .overflow:
            sink.error(Message.integerOverflow(file.text(range)), range)
        case .malformed:
            let text = file.text(range)
            // `30min`, `2weeks`, `1mo`: a unit word where a unit letter goes.
            let digits = String(text.prefix { $0.isNumber || $0 == "_" })
            let word = String(text.dropFirst(digits.count))
            if !digits.isEmpty, let unit = DurationText.unitWord(word) {
                if let letter = unit.letter {
                    let fix = digits + letter
                    sink.error(
                        Message.unitWord(text, fix), range,
                        fixIts: [FixIt(range: range, replacement: fix)])
                } else {
                    sink.error(Message.noCalendarUnit(.invalidDuration, text, unit), range)
                }
            } else {
                sink.error(Message.invalidDuration(text), range)
            }
        }
        return Token(.invalid, range)
    }

    /// `HH:MM`, `HH:MM-HH:MM` or `YYYY-MM-DD` from `start`, whose digits were just read (their
    /// values are checked by the parser); nil for anything else, the position unmoved.
    private mutating func localTime(_ start: Int) -> Token? {
        func digits(_ from: Int, _ count: Int) -> Bool {
            guard from + count <= end else { return false }
            for k in from..<from + count where !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[k]) {
                return false
            }
            return true
        }
        /// True when no name byte follows `at` (`09:00x` is not a time).
        func ends(_ at: Int) -> Bool { at >= end || !Lexer.isIdentifierByte(bytes[at]) }
        let colon = UInt8(ascii: ":")
        let dash = UInt8(ascii: "-")
        // The byte after the digits first: every other number of a file stops here at once.
        guard position < end, bytes[position] == colon || bytes[position] == dash else { return nil }
        let count = position - start
        guard count == 4 || count <= 2, digits(start, count) else { return nil }
        if bytes[position] == colon, count <= 2, digits(position + 1, 2), ends(position + 3) {
            position += 3
            // `-HH:MM` or `-H:MM` after it: a range.
            for width in [2, 1] {
                let at = position + 1
                if at < end, bytes[position] == dash, digits(at, width), at + width < end, bytes[at + width] == colon,
                    digits(at + width + 1, 2), ends(at + width + 3)
                {
                    position = at + width + 3
                    return Token(.clockRange, start..<position)
                }
            }
            return Token(.clockTime, start..<position)
        }
        if bytes[position] == dash, count == 4, digits(position + 1, 2), position + 3 < end,
            bytes[position + 3] == dash,
            digits(position + 4, 2), ends(position + 6)
        {
            position += 6
            return Token(.date, start..<position)
        }
        return nil
    }

    private mutating func string(_ start: Int, _ sink: inout DiagnosticSink) -> Token {
        var valid = true
        while position < end {
            let b = bytes[position]
            if b == UInt8(ascii: "\"") {
                position += 1
                return Token(valid ? .string : .invalid, start..<position)
            }
            if b == 0x0A { break }
            if b == UInt8(ascii: "\\") {
                let next = peek(1)
                if next != UInt8(ascii: "\"") && next != UInt8(ascii: "\\") {
                    let length = next == 0 || next == 0x0A ? 1 : 2
                    sink.error(
                        Message.invalidEscape(file.text(position..<position + length)),
                        position..<position + length)
                    valid = false
                }
                position += 2
                continue
            }
            if b >= 0x80 {
                // Strings hold UTF-8 only: one error per run of invalid bytes.
                let length = Lexer.validScalarLength(bytes, at: position, end: end)
                if length == 0 {
                    let run = position
                    while position < end && bytes[position] >= 0x80
                        && Lexer.validScalarLength(bytes, at: position, end: end) == 0
                    {
                        position += 1
                    }
                    sink.error(Message.invalidUTF8(bytes[run]), run..<position)
                    valid = false
                    continue
                }
                position += length
                continue
            }
            position += 1
        }
        position = min(position, end)
        sink.error(Message.unterminatedString, start..<position)
        return Token(.invalid, start..<position)
    }

    /// One diagnostic for a run of bytes that cannot start a token.
    private mutating func badCharacter(_ start: Int, _ sink: inout DiagnosticSink) -> Token {
        position = start
        let length = Lexer.validScalarLength(bytes, at: start, end: end)
        if length == 0 {
            let bad = bytes[start]
            position += 1
            while position < end && Lexer.validScalarLength(bytes, at: position, end: end) == 0 { position += 1 }
            sink.error(Message.invalidUTF8(bad), start..<position)
        } else {
            position += length
            let text = file.text(start..<position)
            let shown =
                bytes[start] < 0x20 || bytes[start] == 0x7F
                ? "\\u{\(String(bytes[start], radix: 16, uppercase: true))}" : text
            sink.error(Message.invalidCharacter(shown), start..<position)
        }
        return Token(.invalid, start..<position)
    }

    /// The length of the valid UTF-8 scalar at `index`, or 0 if the bytes there are not valid UTF-8.
    static func validScalarLength(_ bytes: [UInt8], at index: Int, end: Int) -> Int {
        let b0 = bytes[index]
        let length: Int
        switch b0 {
        case 0x00...0x7F: return 1
        case 0xC2...0xDF: length = 2
        case 0xE0...0xEF: length = 3
        case 0xF0...0xF4: length = 4
        default: return 0
        }
        guard index + length <= end else { return 0 }
        for k in 1..<length where bytes[index + k] & 0xC0 != 0x80 { return 0 }
        if length == 3 {
            let b1 = bytes[index + 1]
            if (b0 == 0xE0 && b1 < 0xA0) || (b0 == 0xED && b1 > 0x9F) { return 0 }
        } else if length == 4 {
            let b1 = bytes[index + 1]
            if (b0 == 0xF0 && b1 < 0x90) || (b0 == 0xF4 && b1 > 0x8F) { return 0 }
        }
        return length
    }

    // MARK: - Decoding literals of valid tokens

    /// The value of a valid `.integer` token.
    static func integerValue(_ file: SourceFile, _ range: SourceRange) -> Int64 {
        if case .integer(let value) = DurationText.parse(file.bytes[range]) { return value }
        return 0
    }

    /// The value in seconds of a valid `.duration` or `.integer` token.
    static func durationValue(_ file: SourceFile, _ range: SourceRange) -> Int64 {
        switch DurationText.parse(file.bytes[range]) {
        case .seconds(let value), .integer(let value): return value
        default: return 0
        }
    }

    /// The contents of a valid `.string` token, escapes resolved.
    static func stringValue(_ file: SourceFile, _ range: SourceRange) -> String {
        var out: [UInt8] = []
        var index = range.lowerBound + 1
        let last = range.upperBound - 1
        while index < last {
            let b = file.bytes[index]
            if b == UInt8(ascii: "\\") { index += 1 }
            out.append(file.bytes[index])
            index += 1
        }
        return String(decoding: out, as: UTF8.self)
    }
}
