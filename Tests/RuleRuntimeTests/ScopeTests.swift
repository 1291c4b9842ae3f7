import Foundation
import RuleRuntime
import XCTest

/// Scopes, windows, stacked caps, groups, priority, the clock, explanations.
final class ScopeTests: XCTestCase {
    func testSessionAndVersionScopes() throws {
        let (engine, _) = try makeEngine(
            """
            scenario PerSession < on launch; min_events 2 per session >
            scenario WhatsNew < max_exec 1 per version >
            """)
        engine.startSession(version: "1.0")
        engine.trigger("launch")
        engine.trigger("launch")
        XCTAssertTrue(engine.canExecute("PerSession"))
        XCTAssertTrue(engine.tryToExecute("WhatsNew"))
        XCTAssertFalse(engine.tryToExecute("WhatsNew"))
        engine.startSession(version: "1.0")
        XCTAssertFalse(engine.canExecute("PerSession"), "a new session counts from zero")
        XCTAssertFalse(engine.tryToExecute("WhatsNew"), "same version")
        XCTAssertEqual(engine.count(Event("launch"), scope: .session), 0)
        XCTAssertEqual(engine.count(Event("launch"), scope: .version), 2)
        engine.startSession(version: "1.1")
        XCTAssertTrue(engine.tryToExecute("WhatsNew"), "a new version")
        XCTAssertEqual(engine.count(Event("launch"), scope: .version), 0)
        XCTAssertEqual(engine.count("launch"), 2)
    }

    func testUseBeforeStartSessionCountsFromTheStart() throws {
        let (engine, _) = try makeEngine("scenario S < min_events 1 per session; max_exec 1 per version >")
        engine.trigger("S")
        XCTAssertTrue(engine.tryToExecute("S"), "before startSession, session and version cover everything")
        XCTAssertNil(engine.currentVersion)
    }

    func testSlidingWindowBoundary() throws {
        let (engine, clock) = try makeEngine("scenario S < max_exec 1 within 1d >")
        XCTAssertTrue(engine.tryToExecute("S"))
        clock.advance(by: .day - 1)
        XCTAssertFalse(engine.tryToExecute("S"))
        XCTAssertEqual(engine.explain("S").earliest, clock.now().addingTimeInterval(1))
        clock.advance(by: 1)
        XCTAssertTrue(engine.tryToExecute("S"), "an execution exactly 1d old has left the window")
    }

    func testStackedCaps() throws {
        let (engine, clock) = try makeEngine("scenario S < max_exec 1 within 1d; max_exec 3 within 7d; max_exec 5 >")
        var days: [Int] = []
        for day in 0..<30 {
            for _ in 0..<3 where engine.tryToExecute("S") { days.append(day) }
            clock.advance(by: .day)
        }
        XCTAssertEqual(days, [0, 1, 2, 7, 8])
    }

    func testGroupSharesOneBudget() throws {
        let (engine, clock) = try makeEngine(
            """
            group Prompts < max_exec 1 within 1d; between 12h > {
                scenario Rate < >
                scenario Share < >
            }
            scenario Free < >
            """)
        XCTAssertTrue(engine.tryToExecute("Rate"))
        XCTAssertFalse(engine.tryToExecute("Share"), "one prompt a day across the group")
        XCTAssertTrue(engine.tryToExecute("Free"), "not in the group")
        XCTAssertEqual(
            engine.explain("Share").failing.map(\.description),
            ["group Prompts: max_exec 1 within 1d: 1 so far", "group Prompts: between 12h: 12h left"])
        clock.advance(by: .day)
        XCTAssertTrue(engine.tryToExecute("Share"))
        XCTAssertTrue(try engine.check("executions(Prompts) == 2 and executions(Share) == 1"))
        XCTAssertTrue(engine.reset("Prompts"))
        XCTAssertTrue(engine.tryToExecute("Rate"))
    }

    func testPriorityPicksTheHighestEligible() throws {
        let (engine, _) = try makeEngine(
            """
            scenario Low < priority 1 >
            scenario High < priority 10; max_exec 1 >
            scenario Blocked < priority 99; min_events 1 >
            scenario AlsoLow < priority 1 >
            """)
        XCTAssertEqual(engine.executeNext(), "High")
        XCTAssertEqual(engine.executeNext(), "Low", "ties go to declaration order")
        XCTAssertEqual(engine.executeNext(among: ["AlsoLow", "Blocked"]), "AlsoLow")
        XCTAssertNil(engine.executeNext(among: ["Blocked", "High"]))
    }

    func testClockGoingBackwardsNeverGivesANegativeAgeAndOnlyDelays() throws {
        let (engine, clock) = try makeEngine("scenario S < between 1d > scenario F < since_first 1h >")
        engine.trigger("F")
        XCTAssertTrue(engine.tryToExecute("S"))
        clock.advance(by: -10 * .day)
        XCTAssertFalse(engine.tryToExecute("S"), "an execution in the future counts as just now")
        XCTAssertEqual(engine.explain("S").reason, "between 1d: 1d left")
        XCTAssertFalse(engine.canExecute("F"))
        // The future time was re-based to the correction: S waits 1d from then, not 11d.
        clock.advance(by: .day - 1)
        XCTAssertFalse(engine.tryToExecute("S"), "never earlier than its own cool-down after the correction")
        clock.advance(by: 1)
        XCTAssertTrue(engine.tryToExecute("S"))
        // An event recorded while the clock is back does not move 'last' backwards.
        let (other, otherClock) = try makeEngine("scenario L < on x; since_last 1h >")
        other.trigger("x")
        let latest = otherClock.now()
        otherClock.advance(by: -.day)
        other.trigger("x")
        XCTAssertEqual(other.lastDone("x"), latest)
    }

    func testExplainGivesNumbersAndEarliestTime() throws {
        let (engine, clock) = try makeEngine(
            "scenario AskToSubscribe < min_events 5; since_first 7d; max_exec 4; between 2d >")
        var explanation = engine.explain("AskToSubscribe")
        XCTAssertEqual(
            explanation.clauses.map(\.description),
            [
                "min_events 5: 0 so far", "since_first 7d: no event yet", "max_exec 4: 0 so far",
                "between 2d: never executed",
            ])
        XCTAssertNil(explanation.earliest, "no first event: waiting alone cannot pass")
        let start = clock.now()
        for _ in 0..<5 { engine.trigger("AskToSubscribe") }
        clock.advance(by: 7 * .day)
        XCTAssertTrue(engine.tryToExecute("AskToSubscribe"))
        clock.advance(by: 20 * .hour)
        explanation = engine.explain("AskToSubscribe")
        XCTAssertFalse(explanation.wouldRun)
        XCTAssertEqual(explanation.reason, "between 2d: 1d 4h left")
        XCTAssertEqual(explanation.earliest, start.addingTimeInterval(9 * .day))
        XCTAssertTrue(explanation.description.contains("FAIL  between 2d: 1d 4h left"))
        // Only time-based clauses bound the earliest time: an exhausted max_exec does not.
        let (capped, cappedClock) = try makeEngine("scenario S < max_exec 1; between 1d >")
        XCTAssertTrue(capped.tryToExecute("S"))
        XCTAssertEqual(capped.explain("S").earliest, cappedClock.now().addingTimeInterval(.day))
    }

    func testCheckExpressions() throws {
        let (engine, _) = try makeEngine("scenario S < > param p: int")
        engine.trigger("share")
        XCTAssertTrue(try engine.check("count(share per session) >= 1 and since_last(share) < 1m"))
        XCTAssertTrue(try engine.check("since_first(never) == 0s and not todo(x)"))
        XCTAssertThrowsError(try engine.check("count(share) > p2"))
        XCTAssertThrowsError(try engine.check("count(share)"))
    }
}
