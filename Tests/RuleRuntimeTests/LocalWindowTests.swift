import Foundation
import RuleLang
import TestSupport
import XCTest

@testable import RuleRuntime

/// `during`, `days`, `from` and `until` against a model written from grammar.md's words with
/// Foundation's calendar (local hour, minute, weekday and date of an instant), in zones with
/// summer time (Paris, New York, Sydney, Lord Howe's half hour), odd offsets (Kolkata, Chatham)
/// and none (UTC): the answer at random instants, and the next opening found by stepping the
/// model minute by minute.
final class LocalWindowTests: XCTestCase {
    static let zones = [
        "Europe/Paris", "America/New_York", "Australia/Sydney", "Australia/Lord_Howe", "Asia/Kolkata",
        "Pacific/Chatham", "UTC",
    ]

    /// The model: the local date and time of `time` in `zone`, by the calendar.
    struct Local {
        var year: Int, month: Int, day: Int, minute: Int
        /// Monday 0 ... Sunday 6.
        var weekday: Int

        init(_ time: Double, _ zone: TimeZone) {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = zone
            let parts = calendar.dateComponents(
                [.year, .month, .day, .hour, .minute, .weekday], from: Date(timeIntervalSince1970: time))
            (year, month, day) = (parts.year!, parts.month!, parts.day!)
            minute = parts.hour! * 60 + parts.minute!
            // The calendar's weekday is 1 for Sunday.
            weekday = (parts.weekday! + 5) % 7
        }

        var date: (Int, Int, Int) { (year, month, day) }
    }

    /// What each clause means, in grammar.md's words, over the model.
    static func holds(_ kind: ClauseKind, _ local: Local) -> Bool {
        func before(_ a: (Int, Int, Int), _ b: (Int, Int, Int)) -> Bool { a < b }
        switch kind {
        case .during(let from, let to, let outside):
            let inside =
                from.minutes < to.minutes
                ? local.minute >= from.minutes && local.minute < to.minutes
                : local.minute >= from.minutes || local.minute < to.minutes
            return inside != outside
        case .days(let names):
            return names.contains { name in
                // A range `a-b`: the days from a, a day at a time, through b.
                let ends = name.text.split(separator: "-").compactMap { Weekday.names.firstIndex(of: String($0)) }
                if ends.count == 2 { return (local.weekday - ends[0] + 7) % 7 <= (ends[1] - ends[0] + 7) % 7 }
                return (Weekday.days(named: name.text) ?? []).contains { $0.rawValue == local.weekday }
            }
        case .from(let date): return !before(local.date, (date.year, date.month, date.day))
        case .until(let date): return !before((date.year, date.month, date.day), local.date)
        default: return false
        }
    }

    static func randomClause(_ random: inout SeededGenerator) -> ClauseKind {
        let none = 0..<0
        switch Int.random(in: 0..<4, using: &random) {
        case 0:
            var from = Int.random(in: 0..<96, using: &random) * 15
            let to = Int.random(in: 0..<96, using: &random) * 15 + (Bool.random(using: &random) ? 0 : 30)
            if from == to % 1_440 { from = (from + 60) % 1_440 }
            return .during(
                ClockTime(minutes: from, range: none), ClockTime(minutes: min(to, 1_440), range: none),
                outside: Bool.random(using: &random))
        case 1:
            let count = Int.random(in: 1...3, using: &random)
            let ranges = Weekday.names.flatMap { a in Weekday.names.map { a + "-" + $0 } }
            return .days(
                (0..<count).map { _ in Name((Weekday.words + ranges).randomElement(using: &random)!, none) })
        default:
            // A date within the two years the instants fall in.
            let n = Int64.random(in: 20_454...21_184, using: &random)
            let (y, m, d) = CalendarDate.civil(dayNumber: n)
            let date = CalendarDate(year: y, month: m, day: d, range: none)
            return Bool.random(using: &random) ? .from(date) : .until(date)
        }
    }

    func testTheWindowsMatchTheCalendarAtRandomInstants() {
        var random = SeededGenerator(seed: 12)
        for zoneName in Self.zones {
            let zone = TimeZone(identifier: zoneName)!
            let clock = LocalClock(zone: zone)
            for _ in 0..<1_500 {
                let kind = Self.randomClause(&random)
                let window = LocalWindow(kind)!
                // 2026 and 2027, with a bias to the hours around summer-time changes.
                var time = Double(Int.random(in: 1_767_225_600..<1_830_297_600, using: &random))
                // Half the hours' instants moved to a minute next to a bound (the bounds are where
                // an off-by-one shows).
                if case .during(let from, let to, _) = kind, Bool.random(using: &random) {
                    let bound =
                        (Bool.random(using: &random) ? from : to).minutes + Int.random(in: -1...0, using: &random)
                    time += Double((bound - Local(time, zone).minute) * 60)
                }
                let (day, second) = clock.local(time)
                XCTAssertEqual(
                    window.holds(day: day, second: second), Self.holds(kind, Local(time, zone)),
                    "\(Printer.clause(kind)) at \(time) in \(zoneName)")
            }
        }
    }

    /// The next opening equals the first minute at which the model holds (windows start on
    /// whole minutes, and these zones change their offsets on whole minutes), or the change of
    /// offset that skips over a window's start.
    func testTheNextOpeningIsTheFirstTimeTheModelHolds() {
        var random = SeededGenerator(seed: 34)
        var checked = 0
        // The days around each zone's changes in 2026, and random ones.
        let changes: [Double] = [1_774_746_000, 1_792_890_000, 1_772_938_800, 1_775_318_400, 1_791_043_200]
        for zoneName in Self.zones {
            let zone = TimeZone(identifier: zoneName)!
            let clock = LocalClock(zone: zone)
            for round in 0..<50 {
                var kind = Self.randomClause(&random)
                if case .until = kind { kind = .days([Name("weekend", 0..<0)]) }
                let window = LocalWindow(kind)!
                let base =
                    round % 2 == 0
                    ? changes[round / 2 % changes.count] - Double(Int.random(in: 0..<2 * 86_400, using: &random))
                    : Double(Int.random(in: 1_767_225_600..<1_830_297_600, using: &random))
                let time = (base / 60).rounded(.down) * 60 + 17
                guard !Self.holds(kind, Local(time, zone)) else { continue }
                let found = window.nextOpening(after: time, in: clock)
                // The model: minute by minute (from the next whole minute) for eight days; a
                // `from` date further off is found from its local midnight.
                var expected: Double?
                var t = (time / 60).rounded(.up) * 60
                while t < time + 8 * 86_400 {
                    if Self.holds(kind, Local(t, zone)) {
                        expected = t
                        break
                    }
                    t += 60
                }
                if expected == nil, case .from = kind {
                    XCTAssertNotNil(found)
                    if let found {
                        XCTAssertTrue(Self.holds(kind, Local(found, zone)))
                        XCTAssertFalse(Self.holds(kind, Local(found - 1, zone)))
                    }
                    continue
                }
                XCTAssertEqual(found, expected, "\(Printer.clause(kind)) after \(time) in \(zoneName)")
                checked += 1
            }
        }
        XCTAssertGreaterThan(checked, 100)
    }

    /// `explain`'s earliest time for several windows together (in a scenario and its group) is
    /// the first moment at which all of them hold, found by the model minute by minute, or none
    /// when the model finds none (a week and a day after the last `from`). It was the latest of
    /// each window's own next opening: `during 09:00-10:00; days sat` passed "from Saturday
    /// 00:00", and a campaign `until` the 31st asked at 23:00 passed "from the 1st".
    func testTheEarliestTimeOfSeveralWindowsIsWhenAllHold() throws {
        var random = SeededGenerator(seed: 56)
        var checked = (some: 0, none: 0)
        let changes: [Double] = [1_774_746_000, 1_792_890_000, 1_772_938_800, 1_775_318_400, 1_791_043_200]
        for zoneName in Self.zones {
            let zone = TimeZone(identifier: zoneName)!
            for round in 0..<40 {
                let base =
                    round % 2 == 0
                    ? changes[round / 2 % changes.count] - Double(Int.random(in: 0..<2 * 86_400, using: &random))
                    : Double(Int.random(in: 1_767_225_600..<1_830_297_600, using: &random))
                let time = (base / 60).rounded(.down) * 60 + 17
                // Two to four windows; dates within ten days of the instant.
                let kinds: [ClauseKind] = (0..<Int.random(in: 2...4, using: &random)).map { _ in
                    var kind = Self.randomClause(&random)
                    if case .from = kind { kind = .from(Self.date(near: time, zone, &random)) }
                    if case .until = kind { kind = .until(Self.date(near: time, zone, &random)) }
                    return kind
                }
                let split = Int.random(in: 0...kinds.count, using: &random)
                let mine = kinds[..<split].map(Printer.clause).joined(separator: "; ")
                let groups = kinds[split...].map(Printer.clause).joined(separator: "; ")
                let source = "# language 1.2\ngroup G < \(groups) > {\n    scenario S < \(mine) >\n}\n"
                var options = RuleEngine.Options()
                options.timeZone = zone
                // Impossible combinations (days that share none, `from` after `until`) are refused.
                guard
                    let engine = try? RuleEngine(
                        source: source, clock: ManualClock(Date(timeIntervalSince1970: time)), options: options)
                else { continue }
                let all = { (t: Double) in kinds.allSatisfy { Self.holds($0, Local(t, zone)) } }
                var expected: Double? = all(time) ? time : nil
                if expected == nil {
                    var end = time + 8 * 86_400
                    for case .from(let date) in kinds {
                        let midnight = Double(date.dayNumber) * 86_400 + 14 * 3_600
                        end = max(end, midnight + 8 * 86_400)
                    }
                    var t = (time / 60).rounded(.up) * 60
                    while t < end {
                        if all(t) {
                            expected = t
                            break
                        }
                        t += 60
                    }
                }
                let found = engine.explain("S").earliest?.timeIntervalSince1970
                XCTAssertEqual(found, expected, "\(kinds.map(Printer.clause)) at \(time) in \(zoneName)")
                if expected == nil { checked.none += 1 } else { checked.some += 1 }
            }
        }
        XCTAssertGreaterThan(checked.some, 100)
        XCTAssertGreaterThan(checked.none, 10)
    }

    /// A date within ten days of `time`'s local date.
    static func date(near time: Double, _ zone: TimeZone, _ random: inout SeededGenerator) -> CalendarDate {
        let today = LocalClock(zone: zone).local(time).day
        let (y, m, d) = CalendarDate.civil(dayNumber: today + Int64.random(in: -10...10, using: &random))
        return CalendarDate(year: y, month: m, day: d, range: 0..<0)
    }

    /// An engine answers with the device's zone and says when the window opens.
    func testAnEngineJudgesInItsZoneAndExplainsTheOpening() throws {
        // 2026-01-01 21:30 UTC is 22:30 in Paris and 06:30 on the 2nd in Tokyo.
        let clock = ManualClock(Date(timeIntervalSince1970: 1_767_303_000))
        let engine = try RuleEngine(
            source: "# language 1.2\nscenario Nudge < not during 22:00-08:00 >", clock: clock)
        engine.timeZone = TimeZone(identifier: "Europe/Paris")!
        XCTAssertFalse(engine.canExecute("Nudge"))
        XCTAssertEqual(
            engine.explain("Nudge").clauses.map(\.description),
            ["not during 22:00-08:00: local time 22:30; opens at 2026-01-02 08:00"])
        engine.timeZone = TimeZone(identifier: "Asia/Tokyo")!
        XCTAssertFalse(engine.canExecute("Nudge"))
        clock.advance(by: 7_200)
        XCTAssertTrue(engine.canExecute("Nudge"), "08:30 in Tokyo")
        engine.timeZone = TimeZone(identifier: "Europe/Paris")!
        XCTAssertFalse(engine.canExecute("Nudge"), "00:30 in Paris")
    }
}
