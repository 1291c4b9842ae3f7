import Foundation
import RuleLang

/// A local-clock window, lowered (language 1.2): `during`, `days`, `from`, `until`.
enum LocalWindow: Sendable, Equatable {
    /// Minutes since local midnight: from `from` (included) to `to` (excluded), across midnight
    /// when `to` is not after `from`; `outside` holds the rest of the day.
    case hours(from: Int, to: Int, outside: Bool)
    /// A bit per day of the week, Monday the lowest.
    case days(UInt8)
    /// From local midnight starting day `n` (from 1970-01-01) on.
    case from(Int64)
    /// Up to local midnight after day `n`.
    case until(Int64)

    init?(_ kind: ClauseKind) {
        switch kind {
        case .during(let from, let to, let outside): self = .hours(from: from.minutes, to: to.minutes, outside: outside)
        case .days(let names): self = .days(Weekday.mask(names))
        case .from(let date): self = .from(date.dayNumber)
        case .until(let date): self = .until(date.dayNumber)
        default: return nil
        }
    }

    /// True on local day `day` (from 1970-01-01), `second` seconds after its midnight.
    func holds(day: Int64, second: Double) -> Bool {
        switch self {
        case .hours(let from, let to, let outside):
            let minute = Int(second / 60)
            let inside = from < to ? minute >= from && minute < to : minute >= from || minute < to
            return inside != outside
        case .days(let mask): return mask & (1 << UInt8(Weekday.of(dayNumber: day).rawValue)) != 0
        case .from(let n): return day >= n
        case .until(let n): return day <= n
        }
    }

    /// The seconds into a local day at which `hours` may change (midnight aside).
    private var boundaries: [Double] {
        guard case .hours(let from, let to, _) = self else { return [] }
        return [Double(from * 60), Double(to * 60)]
    }

    /// The first time after `time` at which the window holds in `clock`'s zone, or nil when it
    /// never will (`until` passed). Steps from one local boundary (a window's start or end, a
    /// midnight) or change of the zone's offset to the next: a week and a day at most.
    func nextOpening(after time: Double, in clock: LocalClock) -> Double? {
        switch self {
        case .until: return nil
        case .from(let n): return clock.firstInstant(ofLocalDay: n, after: time)
        default: break
        }
        var t = time
        for _ in 0..<64 {
            let offset = clock.offset(t)
            let (day, second) = clock.local(t, offset: offset)
            let next = boundaries.filter { $0 > second }.min() ?? 86_400
            var candidate = (Double(day) * 86_400 + next - offset)
            if clock.offset(candidate) != offset { candidate = clock.transition(after: t, before: candidate) }
            t = candidate
            let local = clock.local(t, offset: clock.offset(t))
            if holds(day: local.day, second: local.second) { return t }
        }
        return nil
    }
}

extension LocalWindow {
    /// The first time at or after `time` at which every one of `windows` holds together, or nil
    /// when none will. A window closed at a candidate time stays closed until its own next
    /// opening, so no time before that can do: the search jumps there and asks every window
    /// again. Hours and days repeat each week, so once every `from` has opened, a week and a
    /// day (a change of offset) without such a time means never.
    static func firstTime(all windows: [LocalWindow], from time: Double, in clock: LocalClock) -> Double? {
        var horizon = time
        for case .from(let n) in windows { horizon = max(horizon, clock.firstInstant(ofLocalDay: n, after: time)) }
        horizon += 8 * 86_400
        var t = time
        while t <= horizon {
            let (day, second) = clock.local(t)
            guard let closed = windows.first(where: { !$0.holds(day: day, second: second) }) else { return t }
            guard let opens = closed.nextOpening(after: t, in: clock), opens > t else { return nil }
            t = opens
        }
        return nil
    }
}

/// Local days and times of instants in a zone (offsets asked of the zone, DST included).
struct LocalClock {
    let zone: TimeZone

    /// Seconds the zone is ahead of UTC at `time`.
    func offset(_ time: Double) -> Double {
        Double(zone.secondsFromGMT(for: Date(timeIntervalSince1970: time)))
    }

    /// The local day (from 1970-01-01) and the seconds into it, at `time` with `offset`.
    func local(_ time: Double, offset: Double) -> (day: Int64, second: Double) {
        let local = time + offset
        let day = (local / 86_400).rounded(.down)
        return (Int64(day), local - day * 86_400)
    }

    func local(_ time: Double) -> (day: Int64, second: Double) { local(time, offset: offset(time)) }

    /// The first whole second in `(after, before]` with another offset than at `after` (there is one).
    func transition(after: Double, before: Double) -> Double {
        let start = offset(after)
        var (low, high) = (after.rounded(.down), before.rounded(.up))
        while high - low > 1 {
            let middle = ((low + high) / 2).rounded(.down)
            if offset(middle) == start { low = middle } else { high = middle }
        }
        return high
    }

    /// The first time after `time` on local day `n` or later: the first second of that day,
    /// found between the instants of its midnight at the largest offsets a zone has (±14 h).
    func firstInstant(ofLocalDay n: Int64, after time: Double) -> Double {
        if local(time).day >= n { return time }
        let midnight = Double(n) * 86_400
        var (low, high) = (midnight - 14 * 3_600 - 1, midnight + 14 * 3_600)
        while high - low > 1 {
            let middle = ((low + high) / 2).rounded(.down)
            if local(middle).day >= n { high = middle } else { low = middle }
        }
        return max(high, time)
    }
}

/// Times as people read them: ISO 8601 in one zone, with its offset.
public enum LocalTimeText {
    /// `2026-03-01T09:30:00+01:00` (`Z` in UTC): `date` in `zone`, to the second.
    public static func iso8601(_ date: Date, in zone: TimeZone) -> String {
        let time = date.timeIntervalSince1970.rounded(.down)
        let clock = LocalClock(zone: zone)
        let offset = clock.offset(time)
        let (day, second) = clock.local(time, offset: offset)
        let s = Int(second)
        let text = CalendarDate.text(dayNumber: day) + "T" + two(s / 3_600) + ":" + two(s / 60 % 60) + ":" + two(s % 60)
        if offset == 0 { return text + "Z" }
        let minutes = Int(abs(offset)) / 60
        return text + (offset < 0 ? "-" : "+") + two(minutes / 60) + ":" + two(minutes % 60)
    }

    private static func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
}
