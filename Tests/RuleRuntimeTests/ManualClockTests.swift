import Foundation
import TestSupport
import XCTest

@testable import RuleRuntime

/// ``ManualClock``: its wake-ups run when it is moved to them, in date order, on the thread that
/// moves it and without its lock (an action may read or move the clock).
final class ManualClockTests: XCTestCase {
    func testWakeUpsRunInDateOrderWhenTheClockReachesThem() {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let clock = ManualClock(start)
        let ran = Locked<[String]>([])
        clock.wakeUp(at: start + 30) { ran.withValue { $0.append("30") } }
        clock.wakeUp(at: start + 10) { ran.withValue { $0.append("10 at \(clock.now().timeIntervalSince(start))") } }
        clock.wakeUp(at: start + 20) { ran.withValue { $0.append("20") } }
        // Due already: at once.
        clock.wakeUp(at: start) { ran.withValue { $0.append("now") } }
        XCTAssertEqual(ran.withValue { $0 }, ["now"])
        clock.advance(by: -5)
        XCTAssertEqual(ran.withValue { $0 }, ["now"], "moving back reaches nothing")
        clock.set(start + 25)
        XCTAssertEqual(ran.withValue { $0 }, ["now", "10 at 25.0", "20"])
        // An action that moves the clock again runs what that reaches too.
        clock.wakeUp(at: start + 26) { clock.advance(by: 10) }
        clock.advance(by: 1)
        XCTAssertEqual(ran.withValue { $0 }, ["now", "10 at 25.0", "20", "30"])
        XCTAssertEqual(clock.now(), start + 36)
    }
}
