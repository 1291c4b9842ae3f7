import Foundation
import RuleRuntime
import XCTest

/// What the whole-language model (`ClauseModelTests`) found, each as the smallest history that
/// shows it: every test here failed before its fix.
final class ModelFindingsTests: XCTestCase {
    let start = Date(timeIntervalSince1970: 1_767_225_600)

    /// A view written whole at a write that re-based it (a clock corrected) is written again at
    /// the next event: before, the event after it was stored only in its stream, and a swap
    /// (which makes the new core from the store) read the view without it.
    func testASwapAfterAClockCorrectionKeepsTheLatestEvent() throws {
        let rules = "# language 1.1\nscenario S < on b; since_last 2d >"
        let clock = ManualClock(start)
        let engine = try RuleEngine(source: rules, clock: clock)
        engine.startSession(version: "1")
        clock.set(start + 3_600)
        engine.trigger("b")
        clock.set(start + 1_800)  // set back: the decision re-bases what is ahead
        XCTAssertFalse(engine.canExecute("S"))
        engine.trigger("b")  // written with the re-based view
        clock.set(start + 7_200)
        engine.trigger("b")  // the latest event
        let before = engine.explain("S").earliest
        _ = try engine.replaceRules(source: rules.replacingOccurrences(of: "scenario S <", with: "scenario S2 was S <"))
        XCTAssertEqual(before, start + 7_200 + 2 * 86_400)
        XCTAssertEqual(engine.explain("S2").earliest, before)
    }

    /// Times re-based in memory are stored before a swap reads the store: before, the new rules
    /// re-based them again, at the swap's time.
    func testASwapKeepsTimesReBasedInMemory() throws {
        let rules = "scenario S < on a; since_last 1h >"
        let clock = ManualClock(start)
        let engine = try RuleEngine(source: rules, clock: clock)
        engine.startSession(version: "1")
        clock.set(start + 86_400)
        engine.trigger("a")
        clock.set(start)  // set back a day: read, re-based to the start (in memory)
        XCTAssertFalse(engine.canExecute("S"))
        clock.set(start + 1_800)
        _ = try engine.replaceRules(source: rules + "\nscenario Other < on a >")
        XCTAssertEqual(engine.explain("S").earliest, start + 3_600)
    }

    /// A correction re-bases every view already built, not only the scenario judged: before,
    /// a scenario asked before the correction kept the times ahead of the clock, and answered
    /// otherwise than one asked for the first time after it.
    func testACorrectionReBasesEveryView() throws {
        let rules = """
            scenario S < on a; since_last 1h >
            scenario U < on a; since_last 1h >
            """
        let clock = ManualClock(start)
        let engine = try RuleEngine(source: rules, clock: clock)
        engine.startSession(version: "1")
        clock.set(start + 86_400)
        engine.trigger("a")
        XCTAssertFalse(engine.canExecute("S"))  // S's view is built, U's too (both count a)
        clock.set(start)
        XCTAssertFalse(engine.canExecute("U"))  // the correction: re-based to the start
        clock.set(start + 3_600)
        XCTAssertEqual(engine.canExecute("S"), engine.canExecute("U"))
        XCTAssertTrue(engine.canExecute("S"))
    }

    /// The state is looked over at a decision that a retired scenario (or an override) makes
    /// alone: before, asking one skipped it, and later answers depended on that.
    func testARetiredScenarioDecisionLooksOverTheState() throws {
        let rules = """
            # language 1.2
            scenario S < on a; since_last 1h >
            retired scenario R
            """
        let clock = ManualClock(start)
        let engine = try RuleEngine(source: rules, clock: clock)
        engine.startSession(version: "1")
        clock.set(start + 86_400)
        engine.trigger("a")
        clock.set(start)
        XCTAssertFalse(engine.canExecute("R"))  // the clock reads earlier: looked over here
        clock.set(start + 3_600)
        XCTAssertEqual(engine.explain("S").earliest, start + 3_600)
        XCTAssertTrue(engine.canExecute("S"))
    }

    /// `explain` lists a scenario's own holdouts before its group's, as it lists its clauses.
    func testOwnHoldoutsComeBeforeTheGroups() throws {
        let rules = """
            # language 1.2
            group G < holdout 10% "group" > {
                scenario S < holdout 20% "own" >
            }
            """
        let engine = try RuleEngine(source: rules)
        XCTAssertEqual(engine.explain("S").clauses.map(\.clause), ["holdout 20% \"own\"", "holdout 10% \"group\""])
    }

    /// A presentation opened before a rename is found by the new name.
    func testAPresentationOpenedUnderAFormerNameIsOpenUnderTheNewOne() throws {
        let rules = "# language 1.2\nscenario S < max_exec 5 >"
        let engine = try RuleEngine(source: rules)
        XCTAssertNotNil(engine.present(Scenario("S")))
        _ = try engine.replaceRules(source: "# language 1.2\nscenario S2 was S < max_exec 5 >")
        XCTAssertNotNil(engine.openPresentation(of: "S2"))
    }
}
