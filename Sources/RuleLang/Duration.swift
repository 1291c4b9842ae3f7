/// Parsing and printing of durations such as `90m` or `1d12h`. Values are whole seconds.
public enum DurationText {
    /// Seconds per unit letter.
    public static func unitSeconds(_ byte: UInt8) -> Int64? {
        switch byte {
        case UInt8(ascii: "s"): return 1
        case UInt8(ascii: "m"): return 60
        case UInt8(ascii: "h"): return 3_600
        case UInt8(ascii: "d"): return 86_400
        case UInt8(ascii: "w"): return 604_800
        default: return nil
        }
    }

    /// What a unit word means: its letter, or a calendar unit (month, year) that has none.
    public struct UnitWord: Sendable {
        /// `s`, `m`, `h`, `d` or `w`; nil for a month or a year.
        public var letter: String?
        /// `month` or `year` when `letter` is nil.
        public var calendarUnit: String?
    }

    /// The unit a word names (`min`, `minutes`, `hrs`, `days`, `weeks`, `mo`, `years`...), if any.
    public static func unitWord(_ word: String) -> UnitWord? {
        switch word.lowercased() {
        case "s", "sec", "secs", "second", "seconds": return UnitWord(letter: "s")
        case "m", "min", "mins", "minute", "minutes": return UnitWord(letter: "m")
        case "h", "hr", "hrs", "hour", "hours": return UnitWord(letter: "h")
        case "d", "day", "days": return UnitWord(letter: "d")
        case "w", "wk", "wks", "week", "weeks": return UnitWord(letter: "w")
        case "mo", "mos", "mon", "month", "months": return UnitWord(calendarUnit: "month")
        case "y", "yr", "yrs", "year", "years": return UnitWord(calendarUnit: "year")
        default: return nil
        }
    }

    /// `1.5d` as whole units (`1d12h`), when it is a whole number of seconds.
    public static func fractional(_ text: String) -> String? {
        guard let unitByte = text.utf8.last, let unit = unitSeconds(unitByte) else { return nil }
        let number = String(text.dropLast()).replacingAll("_", with: "")
        let parts = number.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let whole = Int64(parts[0]), !parts[1].isEmpty, parts[1].count <= 9,
            let fraction = Int64(parts[1])
        else { return nil }
        var scale: Int64 = 1
        for _ in 0..<parts[1].count { scale *= 10 }
        let (wholeSeconds, o1) = whole.multipliedReportingOverflow(by: unit)
        let (fractionScaled, o2) = fraction.multipliedReportingOverflow(by: unit)
        guard !o1, !o2, fractionScaled % scale == 0 else { return nil }
        let (total, o3) = wholeSeconds.addingReportingOverflow(fractionScaled / scale)
        guard !o3, total > 0 else { return nil }
        return format(total)
    }

    enum ParseResult: Equatable {
        case seconds(Int64)
        case integer(Int64)
        case malformed
        case overflow
    }

    /// Parses `digits` (with `_` separators) optionally followed by unit
    /// groups: `12`, `1_000`, `7d`, `1d12h`.
    static func parse<C: Collection>(_ bytes: C) -> ParseResult where C.Element == UInt8 {
        var total: Int64 = 0
        var current: Int64 = 0
        var digits = 0
        var sawUnit = false
        var overflow = false
        for byte in bytes {
            if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                let (m, o1) = current.multipliedReportingOverflow(by: 10)
                let (a, o2) = m.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
                overflow = overflow || o1 || o2
                current = a
                digits += 1
            } else if byte == UInt8(ascii: "_") {
                if digits == 0 { return .malformed }
            } else if let unit = unitSeconds(byte) {
                if digits == 0 { return .malformed }
                let (m, o1) = current.multipliedReportingOverflow(by: unit)
                let (a, o2) = total.addingReportingOverflow(m)
                overflow = overflow || o1 || o2
                total = a
                current = 0
                digits = 0
                sawUnit = true
            } else {
                return .malformed
            }
        }
        if sawUnit && digits > 0 { return .malformed }
        if overflow { return .overflow }
        return sawUnit ? .seconds(total) : .integer(current)
    }

    /// Parses a duration with units, or a bare `0`. Returns nil for anything else.
    public static func seconds(_ text: String) -> Int64? {
        switch parse(Array(text.utf8)) {
        case .seconds(let value): return value
        case .integer(0): return 0
        default: return nil
        }
    }

    /// The shortest source spelling using units d, h, m, s: `604800` is `7d`, `90` is `1m30s`.
    public static func format(_ seconds: Int64) -> String {
        if seconds == 0 { return "0s" }
        var rest = seconds
        var text = ""
        for (unit, size) in [("d", Int64(86_400)), ("h", 3_600), ("m", 60), ("s", 1)] where rest >= size {
            text += "\(rest / size)\(unit)"
            rest %= size
        }
        return text
    }

    /// A human reading of a (possibly fractional) number of seconds, at most
    /// two units, separated by a space: `1d 4h`, `3m 20s`, `0s`.
    public static func human(_ seconds: Double) -> String {
        guard seconds > 0 else { return "0s" }
        let clamped = seconds.isFinite ? Swift.min(seconds, 9e15) : 9e15
        var rest = Int64(clamped)
        if Double(rest) < clamped { rest += 1 }  // round up: never "0s left" while time remains
        var parts: [String] = []
        for (unit, size) in [("d", Int64(86_400)), ("h", 3_600), ("m", 60), ("s", 1)] where rest >= size {
            parts.append("\(rest / size)\(unit)")
            rest %= size
            if parts.count == 2 { break }
        }
        return parts.joined(separator: " ")
    }
}
