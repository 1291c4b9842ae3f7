import Foundation
import RuleRuntime
import XCTest

/// `canExecute` + `recordExecution`: check, try to show, count only if shown.
final class TwoPhaseTests: XCTestCase {
    let rules = """
        group G < max_exec 1 within 1d > {
            scenario Ask < max_exec 2; between 1h >
            scenario Other < >
        }
        """

    func testNotShownSpendsNothingAndShownCountsLikeTryToExecute() throws {
        let clock = ManualClock()
        let engine = try RuleEngine(source: rules, clock: clock)
        let ask = Scenario("Ask")
        // Checked, but the app could not show it: nothing is spent.
        XCTAssertTrue(engine.canExecute(ask))
        XCTAssertTrue(engine.canExecute(ask))
        XCTAssertEqual(engine.explain(ask).clauses.first?.detail, "0 so far")
        // Shown: one execution, counted by its clauses and its group's budget.
        XCTAssertTrue(engine.recordExecution(ask))
        XCTAssertFalse(engine.canExecute(ask), "between 1h")
        XCTAssertFalse(engine.canExecute("Other"), "the group's budget is spent")
        clock.advance(by: .day)
        XCTAssertTrue(engine.recordExecution("Ask"))
        clock.advance(by: .day)
        XCTAssertFalse(engine.canExecute(ask), "max_exec 2 reached")
        XCTAssertFalse(engine.recordExecution("Nope"))
        XCTAssertEqual(engine.unknownNames.map(\.name), ["Nope"])
    }
}
