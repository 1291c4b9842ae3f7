import Foundation
import RuleRuntime
import XCTest

/// Testers' overrides and the decision log.
final class QATests: XCTestCase {
    let rules = """
        group G < max_exec 1 > {
            scenario Ask < min_events 5 >
            scenario Other < >
        }
        scenario Never < max_exec 1; min_events 1 >
        """

    func testOverridesForceAPassOrAFailAndExplainSaysSo() throws {
        var options = RuleEngine.Options()
        options.overrides = ["Ask": true, "Other": false, "Missing": true]
        let engine = try RuleEngine(source: rules, options: options)
        XCTAssertTrue(engine.canExecute("Ask"), "min_events 5 is not met, but forced")
        XCTAssertEqual(engine.explain("Ask").reason, "yes")
        XCTAssertEqual(engine.explain("Ask").clauses.map(\.description), ["override: forced by override to pass"])
        XCTAssertFalse(engine.canExecute("Other"), "an empty body always passes, but blocked")
        XCTAssertEqual(engine.explain("Other").reason, "override: forced by override to fail")
        XCTAssertTrue(engine.tryToExecute("Ask"))
        XCTAssertTrue(engine.tryToExecute("Ask"), "forced past the group's budget too")
        XCTAssertEqual(engine.unknownNames.map(\.name), ["Missing"])
        XCTAssertEqual(engine.executeNext(among: ["Other", "Ask"]), "Ask")
        // Without overrides the same state answers by the rules.
        XCTAssertFalse(try RuleEngine(source: rules).canExecute("Ask"))
    }

    func testLaunchArgumentsAndEnvironment() {
        let overrides = RuleEngine.Options.launchOverrides(
            arguments: [
                "/app", "-RulesForce", "Ask", "-NSDoubleLocalizedStrings", "YES", "-RulesBlock", "Other", "-RulesForce",
            ],
            environment: ["RULES_FORCE": "A, B,", "RULES_BLOCK": "Ask"])
        // Arguments win over the environment; a trailing flag without a name is ignored.
        XCTAssertEqual(overrides, ["A": true, "B": true, "Ask": true, "Other": false])
        XCTAssertEqual(RuleEngine.Options.launchOverrides(arguments: [], environment: [:]), [:])
    }

    func testEveryAnswerReachesTheDecisionHandlerWithItsReason() throws {
        final class Log: @unchecked Sendable {
            let lock = NSLock()
            var lines: [String] = []
            func add(_ line: String) { lock.withLock { lines.append(line) } }
        }
        let log = Log()
        let engine = try RuleEngine(source: rules)
        engine.decisionHandler = { log.add($0.description) }
        _ = engine.canExecute("Ask")
        XCTAssertTrue(engine.tryToExecute(Scenario("Other")))
        XCTAssertNil(engine.executeNext(among: ["Ask", "Never"]))
        engine.trigger("Never")
        XCTAssertEqual(engine.executeNext(among: [Scenario("Never")]), "Never")
        engine.decisionHandler = nil
        _ = engine.canExecute("Ask")
        XCTAssertEqual(
            log.lines,
            [
                "canExecute Ask: no (min_events 5: 0 so far)",
                "tryToExecute Other: yes",
                "executeNext -: no (Ask: min_events 5: 0 so far; group G: max_exec 1: 1 so far; Never: min_events 1: 0 so far)",
                "executeNext Never: yes",
            ])
    }
}
