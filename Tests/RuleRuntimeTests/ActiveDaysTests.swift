import Foundation
import RuleRuntime
import TestSupport
import XCTest

/// `min_days` and `active_days` held to an independent model: a plain set of local calendar
/// dates, computed with Foundation's calendar in the zone current at each event.
final class ActiveDaysTests: XCTestCase {
    static let zones = [
        "UTC", "Europe/Paris", "America/New_York", "Asia/Tokyo", "Australia/Lord_Howe", "Pacific/Kiritimati",
        "America/St_Johns", "Asia/Kolkata",
    ].map { TimeZone(identifier: $0)! }

    /// The local date of `time` in `zone`, as a day number (days since 1970-01-01 of that date).
    static func dayNumber(_ time: Date, _ zone: TimeZone) -> Int {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.year, .month, .day], from: time)
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        let midnight = utc.date(from: DateComponents(year: parts.year, month: parts.month, day: parts.day))!
        return Int((midnight.timeIntervalSince1970 / 86_400).rounded())
    }

    func testActiveDaysMatchASetOfLocalDatesOverRandomHistoriesAndZones() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["RULES_SEED"] ?? "") ?? 0xDA75
        var g = SeededGenerator(seed: seed)
        print("active days seed: \(seed)")
        for trial in 0..<60 {
            let window = Int.random(in: 1...30, using: &g)
            let needed = Int.random(in: 1...window, using: &g)
            let clock = ManualClock()
            var zone = Self.zones.randomElement(using: &g)!
            let engine = try RuleEngine(
                source: "# language 1.1\nscenario Days < on x; min_days \(needed) within \(window)d >",
                clock: clock, options: RuleEngine.Options(timeZone: zone))
            var dates = Set<Int>()
            for _ in 0..<Int.random(in: 5...60, using: &g) {
                // Steps of minutes to days, so events fall on both sides of local midnights.
                clock.advance(by: Double(Int.random(in: 1...(3 * 86_400 / 60), using: &g) * 60))
                if Int.random(in: 0..<8, using: &g) == 0 {
                    zone = Self.zones.randomElement(using: &g)!
                    engine.timeZone = zone
                }
                if Bool.random(using: &g) {
                    engine.trigger("x")
                    dates.insert(Self.dayNumber(clock.now(), zone))
                }
                let today = Self.dayNumber(clock.now(), zone)
                let expected = dates.filter { $0 <= today && $0 > today - window }.count
                let check = try engine.check("active_days(x within \(window)d) == \(expected)")
                XCTAssertTrue(
                    check, "trial \(trial): \(expected) days of \(window) at \(clock.now()) in \(zone.identifier)")
                XCTAssertEqual(engine.canExecute("Days"), expected >= needed, "trial \(trial)")
                if !check { return }
            }
        }
    }

    func testDaysAreStoredOnlyForStreamsADayClauseCounts() throws {
        let store = InMemoryStore()
        let engine = try RuleEngine(
            source: "# language 1.1\nscenario A < on x; min_days 1 within 1d >\nscenario B < on y; min_events 1 >",
            store: store, clock: ManualClock())
        engine.trigger("x")
        engine.trigger("y")
        let keys = try store.load().keys.filter { $0.hasPrefix("d:") }
        XCTAssertEqual(keys, ["d:x"])
        // And they survive a restart.
        let again = try RuleEngine(
            source: "# language 1.1\nscenario A < on x; min_days 1 within 1d >", store: store, clock: ManualClock())
        XCTAssertTrue(again.canExecute("A"))
    }
}
