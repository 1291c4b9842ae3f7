import Foundation
@_spi(Tools) import RuleRuntime
import XCTest

/// The behaviours WaitForIt's own suite checks, as our tests, plus every boundary.
final class WaitForItBehaviourTests: XCTestCase {
    func testMinEventsIsInclusive() throws {
        let (engine, _) = try makeEngine("scenario S < min_events 2 >")
        var answers: [Bool] = []
        for _ in 0..<3 {
            answers.append(engine.canExecute("S"))
            engine.trigger("S")
        }
        XCTAssertEqual(answers, [false, false, true])
    }

    func testMaxEventsIsInclusive() throws {
        let (engine, _) = try makeEngine("scenario S < max_events 2 >")
        var answers: [Bool] = []
        for _ in 0..<4 {
            answers.append(engine.canExecute("S"))
            engine.trigger("S")
        }
        XCTAssertEqual(answers, [true, true, true, false])
    }

    func testMaxExecutions() throws {
        let (one, _) = try makeEngine("scenario S < max_exec 1 >")
        XCTAssertEqual([one.tryToExecute("S"), one.tryToExecute("S")], [true, false])
        let (three, _) = try makeEngine("scenario S < max_exec 3 >")
        XCTAssertEqual((0..<4).map { _ in three.tryToExecute("S") }, [true, true, true, false])
        let (zero, _) = try makeEngine("scenario S < max_exec 0 >")
        XCTAssertFalse(zero.tryToExecute("S"), "0 means never")
    }

    func testBetweenExecutionsBoundary() throws {
        let (engine, clock) = try makeEngine("scenario S < between 2d >")
        XCTAssertTrue(engine.tryToExecute("S"), "no execution yet")
        clock.advance(by: 2 * .day - 1)
        XCTAssertFalse(engine.tryToExecute("S"))
        XCTAssertEqual(engine.explain("S").reason, "between 2d: 1s left")
        clock.advance(by: 1)
        XCTAssertTrue(engine.tryToExecute("S"), "exactly 2d later: inclusive")
    }

    func testSinceFirstAndLastEventAges() throws {
        let (engine, clock) = try makeEngine("scenario F < since_first 1h > scenario L < on F; since_last 1h >")
        XCTAssertFalse(engine.canExecute("F"), "since_first is false with no event")
        XCTAssertTrue(engine.canExecute("L"), "since_last is true with no event")
        engine.trigger("F")
        clock.advance(by: 30 * .minute)
        engine.trigger("F")
        XCTAssertFalse(engine.canExecute("F"))
        clock.advance(by: 30 * .minute)
        XCTAssertTrue(engine.canExecute("F"), "first event exactly 1h old")
        XCTAssertFalse(engine.canExecute("L"), "last event 30m old")
        clock.advance(by: 30 * .minute)
        XCTAssertTrue(engine.canExecute("L"))
    }

    func testExecutionIsRecordedOnlyWhenTrueAndEventsAreNeverReset() throws {
        let (engine, _) = try makeEngine("scenario S < min_events 1; max_exec 2 >")
        XCTAssertFalse(engine.tryToExecute("S"))
        XCTAssertEqual(
            engine.explain("S").clauses.map(\.description), ["min_events 1: 0 so far", "max_exec 2: 0 so far"])
        engine.trigger("S")
        XCTAssertTrue(engine.tryToExecute("S"))
        XCTAssertEqual(
            engine.explain("S").clauses.map(\.description), ["min_events 1: 1 so far", "max_exec 2: 1 so far"])
    }

    func testMixedConditions() throws {
        let (engine, clock) = try makeEngine("scenario S < min_events 3; max_exec 2; between 1d; since_last 1h >")
        for _ in 0..<3 { engine.trigger("S") }
        XCTAssertFalse(engine.tryToExecute("S"), "last event too recent")
        clock.advance(by: .hour)
        XCTAssertTrue(engine.tryToExecute("S"))
        XCTAssertFalse(engine.tryToExecute("S"))
        clock.advance(by: .day)
        XCTAssertTrue(engine.tryToExecute("S"))
        clock.advance(by: .day)
        XCTAssertFalse(engine.tryToExecute("S"), "max_exec 2")
    }

    func testWhenWithParamsStoredAndLive() throws {
        let (engine, _) = try makeEngine(
            """
            param ok: bool
            param level: int = 3
            param name: string = "x"
            param idle: duration = 1m
            scenario S < when ok and (level > 2) and name == "x" and idle >= 60s >
            """)
        XCTAssertFalse(engine.canExecute("S"), "ok is false until set")
        try engine.set("ok", to: true)
        XCTAssertTrue(engine.canExecute("S"))
        try engine.provide("level") { 1 }
        XCTAssertFalse(engine.canExecute("S"), "the live provider wins over the default")
        XCTAssertThrowsError(try engine.set("ok", to: 1))
        XCTAssertThrowsError(try engine.set("nope", to: true))
        XCTAssertThrowsError(try engine.provide("idle") { true })
        XCTAssertEqual(engine.paramValue(named: "idle"), .duration(60))
        let (zero, _) = try makeEngine("param cool: duration = 0\nscenario S < when cool == 0s >")
        XCTAssertEqual(zero.paramValue(named: "cool"), .duration(0), "a bare 0 default is a duration")
        XCTAssertTrue(zero.canExecute("S"))
    }

    func testResetForgetsExecutionsAndOldEventsButKeepsSharedStreams() throws {
        let (engine, _) = try makeEngine(
            """
            scenario A < on launch; min_events 2; max_exec 1 >
            scenario B < on launch; min_events 2 >
            """)
        engine.trigger("launch")
        engine.trigger("launch")
        XCTAssertTrue(engine.tryToExecute("A"))
        XCTAssertTrue(engine.reset("A"))
        XCTAssertFalse(engine.canExecute("A"), "counts only events after the reset")
        XCTAssertTrue(engine.canExecute("B"), "B still sees the shared stream")
        XCTAssertEqual(engine.count("launch"), 2)
        engine.trigger("launch")
        engine.trigger("launch")
        XCTAssertTrue(engine.tryToExecute("A"), "executions were forgotten")
        XCTAssertFalse(engine.reset("Nope"))
    }

    func testCompletionFormAndUnknownScenario() throws {
        let (engine, _) = try makeEngine("scenario S < max_exec 1 >")
        var calls: [Bool] = []
        engine.tryToExecute("S") { calls.append($0) }
        engine.tryToExecute("S") { calls.append($0) }
        XCTAssertEqual(calls, [true, false])
        XCTAssertFalse(engine.tryToExecute("Missing"))
        XCTAssertEqual(engine.explain("Missing").reason, "unknown scenario 'Missing'")
    }

    func testWarningsAreKeptOnTheEngine() throws {
        let (engine, _) = try makeEngine("scenario S < max_exec 0 >")
        XCTAssertEqual(engine.warnings.map(\.message), ["'max_exec 0' means the scenario never runs"])
    }

    func testInvalidRulesThrowWithDiagnostics() {
        XCTAssertThrowsError(try RuleEngine(source: "scenario S < min_event 5 >", path: "app.rules")) { error in
            guard case RuleEngineError.invalidRules(let diagnostics) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(
                diagnostics.first?.message, "unknown clause 'min_event'; did you mean 'min_events' or 'max_events'?")
            XCTAssertTrue("\(error)".hasPrefix("app.rules:1:14: error: unknown clause"))
        }
    }
}
