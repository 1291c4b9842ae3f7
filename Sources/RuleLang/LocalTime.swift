/// Local-clock windows (language 1.2): hours of the day, days of the week and dates, read on the
/// device's local calendar: `during`, `days`, `from` and `until` are judged in the engine's
/// zone, as `min_days` is.

/// A time of day as written, `HH:MM`: minutes since local midnight (`24:00`, the end of the day,
/// is 1440 and ends a window only).
public struct ClockTime: Equatable, Hashable, Sendable {
    /// Minutes since local midnight, 0 to 1440.
    public var minutes: Int
    /// Where it is written.
    public var range: SourceRange

    /// The time `minutes` after midnight, written at `range`.
    public init(minutes: Int, range: SourceRange) {
        self.minutes = minutes
        self.range = range
    }

    /// `09:00`.
    public var text: String { ClockTime.text(minutes) }

    /// `HH:MM` for `minutes` since midnight.
    public static func text(_ minutes: Int) -> String {
        let (h, m) = (minutes / 60, minutes % 60)
        return (h < 10 ? "0" : "") + String(h) + ":" + (m < 10 ? "0" : "") + String(m)
    }
}

/// A date as written, `YYYY-MM-DD`, on the proleptic Gregorian calendar.
public struct CalendarDate: Equatable, Hashable, Sendable {
    /// The year, as written.
    public var year: Int
    /// The month, 1 to 12.
    public var month: Int
    /// The day of the month, from 1.
    public var day: Int
    /// Where it is written.
    public var range: SourceRange

    /// The date `year`-`month`-`day`, written at `range`.
    public init(year: Int, month: Int, day: Int, range: SourceRange) {
        (self.year, self.month, self.day, self.range) = (year, month, day, range)
    }

    /// Days from 1970-01-01 to this date (negative before it).
    public var dayNumber: Int64 { CalendarDate.dayNumber(year: year, month: month, day: day) }

    /// `2026-12-01`.
    public var text: String { CalendarDate.text(dayNumber: dayNumber) }

    /// True when the day exists in its month (29 February in leap years only).
    public static func isValid(year: Int, month: Int, day: Int) -> Bool {
        guard (1...12).contains(month), day >= 1 else { return false }
        let lengths = [31, isLeap(year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        return day <= lengths[month - 1]
    }

    static func isLeap(_ year: Int) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    /// Days from 1970-01-01 to the civil date: years counted from March, so that the leap day
    /// ends a year; eras of 400 years (146,097 days) repeat exactly.
    public static func dayNumber(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The civil date of day `n` from 1970-01-01: the inverse of ``dayNumber(year:month:day:)``.
    public static func civil(dayNumber n: Int64) -> (year: Int, month: Int, day: Int) {
        let z = n + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (Int(year), Int(month), Int(day))
    }

    /// `YYYY-MM-DD` of day `n` from 1970-01-01.
    public static func text(dayNumber n: Int64) -> String {
        let (y, m, d) = civil(dayNumber: n)
        func two(_ v: Int) -> String { (v < 10 ? "0" : "") + String(v) }
        let year = String(y)
        return String(repeating: "0", count: max(0, 4 - year.count)) + year + "-" + two(m) + "-" + two(d)
    }
}

/// The days of the week, Monday first, as `days` names them.
public enum Weekday: Int, CaseIterable, Sendable {
    case monday, tuesday, wednesday, thursday, friday, saturday, sunday

    /// `mon` ... `sun`.
    public var name: String { Weekday.names[rawValue] }

    /// Each day's name, Monday first.
    public static let names = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    /// Names of several days: `weekdays` (Monday to Friday) and `weekend` (Saturday, Sunday).
    public static let groups: [String: [Weekday]] = [
        "weekdays": [.monday, .tuesday, .wednesday, .thursday, .friday], "weekend": [.saturday, .sunday],
    ]
    /// Every word `days` takes.
    public static let words = names + ["weekdays", "weekend"]

    /// The days a word of `days` names, or nil: a day, `weekdays`, `weekend`, or a range of
    /// days `mon-fri`, from the first through the second, across Sunday when the second comes
    /// first in the week (`fri-mon`: Friday to Monday; `mon-mon`: Monday alone).
    public static func days(named word: String) -> [Weekday]? {
        if let index = names.firstIndex(of: word) { return [Weekday(rawValue: index)!] }
        if word.utf8.count == 7, word.utf8.dropFirst(3).first == UInt8(ascii: "-"),
            let from = names.firstIndex(of: String(word.prefix(3))),
            let through = names.firstIndex(of: String(word.suffix(3)))
        {
            return (0...((through - from + 7) % 7)).map { Weekday(rawValue: (from + $0) % 7)! }
        }
        return groups[word]
    }

    /// The day of the week of day `n` from 1970-01-01 (a Thursday).
    public static func of(dayNumber n: Int64) -> Weekday {
        let r = (n + 3) % 7
        return Weekday(rawValue: Int(r < 0 ? r + 7 : r))!
    }

    /// The days `names` name, as a bit per day (Monday the lowest).
    public static func mask(_ names: [Name]) -> UInt8 {
        var mask: UInt8 = 0
        for name in names { for day in days(named: name.text) ?? [] { mask |= 1 << UInt8(day.rawValue) } }
        return mask
    }
}
