import Foundation
import RuleRuntime
import XCTest

/// `import RuleRuntime` alone gives an app what it needs for rules, outcomes and presentations:
/// `Outcome` was visible only with `import RuleLang` too. (This file imports nothing else.)
final class OneImportTests: XCTestCase {
    func testOutcomesAndPresentationsWithOneImport() throws {
        let engine = try RuleEngine(
            source: "# language 1.2\nscenario Rate < after later 1d >\n", clock: ManualClock())
        let shown = try XCTUnwrap(engine.present(Scenario("Rate")))
        let outcome: Outcome = .later
        try engine.finish(shown, outcome)
        XCTAssertFalse(engine.canExecute(Scenario("Rate")))
        XCTAssertEqual(Outcome.allCases.count, 5)
    }

    /// An app's tests can play a crash and check the cool-off (`relaunchAfterCrash` was `package`).
    func testAnAppsTestsExerciseTheCrashCoolOff() throws {
        let clock = ManualClock()
        let engine = try RuleEngine(
            source: "# language 1.2\nscenario Rate < when since_last(crash) >= 3d >\n", clock: clock)
        engine.startSession(version: "1.0")
        XCTAssertTrue(engine.canExecute(Scenario("Rate")))
        engine.relaunchAfterCrash()
        XCTAssertFalse(engine.canExecute(Scenario("Rate")))
        clock.advance(by: 3 * 86_400)
        XCTAssertTrue(engine.canExecute(Scenario("Rate")))
    }
}
