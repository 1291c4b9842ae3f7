import Foundation
import RuleLang
import TestSupport
import XCTest

@testable import RuleRuntime

/// `max_exec N per day` and `per week` (language 1.2): caps on the device's local calendar, the
/// day from local midnight, the ISO week from Monday 00:00.
final class CalendarCapTests: XCTestCase {
    let tokyo = TimeZone(identifier: "Asia/Tokyo")!

    func engine(_ rules: String, _ clock: ManualClock, zone: TimeZone) throws -> RuleEngine {
        try RuleEngine(
            source: "# language 1.2\n" + rules, clock: clock, options: .init(logSubsystem: nil, timeZone: zone))
    }

    func testADayEndsAtLocalMidnight() throws {
        // Monday 2026-01-05 22:00 in Tokyo.
        let clock = ManualClock(Date(timeIntervalSince1970: 1_767_618_000))
        let engine = try engine("scenario A < max_exec 1 per day >", clock, zone: tokyo)
        XCTAssertTrue(engine.tryToExecute("A"))
        XCTAssertFalse(engine.tryToExecute("A"))
        let explained = engine.explain("A")
        XCTAssertEqual(explained.reason, "max_exec 1 per day: 1 today")
        XCTAssertEqual(explained.earliest, Date(timeIntervalSince1970: 1_767_625_200), "Tokyo's midnight")
        clock.advance(by: 7_140)
        XCTAssertFalse(engine.tryToExecute("A"), "23:59")
        clock.advance(by: 60)
        XCTAssertTrue(engine.tryToExecute("A"), "the next local day")
    }

    func testAWeekEndsOnMondayAndAGroupSharesItsCap() throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_767_618_000))
        let engine = try engine(
            "group G < max_exec 2 per week > {\n scenario A < >\n scenario B < >\n}", clock, zone: tokyo)
        XCTAssertTrue(engine.tryToExecute("A"))
        XCTAssertTrue(engine.tryToExecute("B"))
        XCTAssertFalse(engine.tryToExecute("A"))
        XCTAssertEqual(engine.explain("B").reason, "group G: max_exec 2 per week: 2 this week")
        // The next Monday 00:00 in Tokyo: 2026-01-11T15:00:00Z.
        XCTAssertEqual(engine.explain("A").earliest, Date(timeIntervalSince1970: 1_768_143_600))
        clock.set(Date(timeIntervalSince1970: 1_768_143_599))
        XCTAssertFalse(engine.tryToExecute("A"), "Sunday 23:59:59")
        clock.advance(by: 1)
        XCTAssertTrue(engine.tryToExecute("A"))
    }

    /// Against a model built on Foundation's calendar (not the engine's arithmetic): random
    /// executions over weeks in zones with daylight saving, half-hour offsets and the date line.
    func testAgreesWithTheCalendarsDaysAndWeeks() throws {
        let zones = ["America/New_York", "Europe/Paris", "Asia/Tokyo", "Australia/Lord_Howe", "Pacific/Kiritimati"]
        var random = SeededGenerator(seed: 59)
        for round in 0..<60 {
            let zone = TimeZone(identifier: zones[round % zones.count])!
            var calendar = Calendar(identifier: .iso8601)
            calendar.timeZone = zone
            let (perDay, perWeek) = (Int64(1 + random.next(3)), Int64(2 + random.next(5)))
            // Around the daylight-saving changes of 2026 (March and the end of October).
            let start = [1_772_582_400.0, 1_792_713_600.0][round % 2] + Double(random.next(86_400))
            let clock = ManualClock(Date(timeIntervalSince1970: start))
            let engine = try engine(
                "scenario D < max_exec \(perDay) per day >\nscenario W < max_exec \(perWeek) per week >", clock,
                zone: zone)
            var shown: [String: [Date]] = ["D": [], "W": []]
            for _ in 0..<80 {
                clock.advance(by: TimeInterval([600, 3_600, 14_400, 43_200][random.next(4)]))
                let now = clock.now()
                for (name, cap, unit) in [("D", perDay, Calendar.Component.day), ("W", perWeek, .weekOfYear)] {
                    let same = shown[name]!.filter { calendar.isDate($0, equalTo: now, toGranularity: unit) }
                    let expected = Int64(same.count) < cap
                    let answer = engine.tryToExecute(Scenario(name))
                    XCTAssertEqual(answer, expected, "\(zone.identifier) \(name) at \(now)")
                    if answer { shown[name]!.append(now) }
                    if !answer, let earliest = engine.explain(Scenario(name)).earliest {
                        // The earliest time is the start of the next day (week) in the zone.
                        let next = calendar.dateInterval(of: unit, for: now)!.end
                        XCTAssertEqual(earliest, next, "\(zone.identifier) \(name) at \(now)")
                    }
                }
            }
        }
    }
}
