import Foundation
@_spi(Tools) import RuleRuntime
import XCTest

/// The behaviours Ecno's and Once's suites check, as our tests, with our documented choices.
final class EcnoBehaviourTests: XCTestCase {
    private func engine() throws -> (RuleEngine, ManualClock) { try makeEngine("scenario Unused < >") }

    func testUnseenTagsAreNotDoneInAnyScope() throws {
        let (engine, _) = try engine()
        engine.startSession(version: "1.0")
        for scope in [CountScope.install, .version, .session, .since(60)] {
            XCTAssertFalse(engine.beenDone("tag", scope: scope))
            // Our choice: a never-done tag has count 0, so these hold (Ecno answers false).
            XCTAssertTrue(engine.beenDone("tag", scope: scope, times: .lessThan(1)))
            XCTAssertTrue(engine.beenDone("tag", scope: scope, times: .exactly(0)))
        }
        XCTAssertNil(engine.lastDone("tag"))
    }

    func testSeenTagsAreDoneAtOnceAndClearedTagsAreNot() throws {
        let (engine, clock) = try engine()
        engine.startSession(version: "1.0")
        engine.markDone("tag")
        XCTAssertEqual(engine.lastDone("tag"), clock.now())
        for scope in [CountScope.install, .session, .since(60)] { XCTAssertTrue(engine.beenDone("tag", scope: scope)) }
        engine.clearDone("tag")
        XCTAssertFalse(engine.beenDone("tag"))
        XCTAssertNil(engine.lastDone("tag"))
    }

    func testAppUpdateStartsANewVersionScope() throws {
        let (engine, _) = try engine()
        engine.startSession(version: "1.0")
        engine.markDone("tag")
        engine.startSession(version: "2.0")
        XCTAssertFalse(engine.beenDone("tag", scope: .version))
        XCTAssertFalse(engine.beenDone("tag", scope: .session))
        XCTAssertTrue(engine.beenDone("tag", scope: .install))
    }

    func testCountsAcrossScopesAndWindows() throws {
        let (engine, clock) = try engine()
        engine.startSession(version: "1.0")
        for _ in 0..<3 {
            engine.markDone("tag")
            clock.advance(by: 10 * .minute)
        }
        // Done at 0, 10 and 20 minutes; now is 30 minutes.
        XCTAssertTrue(engine.beenDone("tag", times: .exactly(3)))
        XCTAssertTrue(engine.beenDone("tag", scope: .session, times: .moreThan(2)))
        XCTAssertTrue(
            engine.beenDone("tag", scope: .since(20 * .minute), times: .exactly(1)),
            "the 10-minute one is exactly 20m old: out")
        XCTAssertTrue(engine.beenDone("tag", scope: .since(20 * .minute + 1), times: .exactly(2)))
        XCTAssertTrue(engine.beenDone("tag", scope: .since(.hour), times: .lessThan(4)))
        XCTAssertTrue(engine.beenDone("tag", times: .custom { $0 % 3 == 0 }))
    }

    func testToDosPerScopeWithInfoAndExpiry() throws {
        let (engine, clock) = try engine()
        engine.startSession(version: "1.0")
        XCTAssertTrue(engine.toDo("a", info: ["k": "v"]))
        XCTAssertTrue(engine.needToDo("a"))
        XCTAssertFalse(engine.toDo("a", info: ["k": "other"]), "pending: not overwritten")
        XCTAssertEqual(engine.info(forToDo: "a"), ["k": "v"])
        engine.markDone("a")
        XCTAssertFalse(engine.needToDo("a"), "markDone clears the to-do")
        XCTAssertNil(engine.info(forToDo: "a"))
        XCTAssertFalse(engine.toDo("a", scope: .session), "done this session")
        XCTAssertFalse(engine.toDo("a", scope: .install))
        XCTAssertFalse(engine.toDo("a", scope: .since(1)), "done just now")
        clock.advance(by: 1)
        XCTAssertTrue(engine.toDo("a", scope: .since(1)), "not done in the last second")
        engine.clearToDo("a")
        XCTAssertFalse(engine.needToDo("a"))
        engine.startSession(version: "1.0")
        XCTAssertTrue(engine.toDo("a", scope: .session))
        XCTAssertTrue(engine.toDo("b", scope: .until(.hour)))
        clock.advance(by: .hour - 1)
        XCTAssertTrue(engine.needToDo("b"))
        clock.advance(by: 1)
        XCTAssertFalse(engine.needToDo("b"), "expired at exactly 1h")
        XCTAssertTrue(engine.toDo("b", scope: .until(.hour)), "an expired to-do may be added again")
    }

    func testClearAllKeepsParamsAndSession() throws {
        let (engine, _) = try makeEngine("param p: bool\nscenario S < max_exec 1 >")
        engine.startSession(version: "3.0")
        try engine.set("p", to: true)
        engine.markDone("x")
        _ = engine.toDo("y")
        XCTAssertTrue(engine.tryToExecute("S"))
        engine.clearAll()
        XCTAssertFalse(engine.beenDone("x"))
        XCTAssertFalse(engine.needToDo("y"))
        XCTAssertTrue(engine.tryToExecute("S"))
        XCTAssertEqual(engine.paramValue(named: "p"), .bool(true))
        XCTAssertEqual(engine.currentVersion, "3.0")
    }

    func testClearDoneLeavesScenarioCountsAlone() throws {
        let store = InMemoryStore()
        let before = try RuleEngine(source: "scenario Other < >", store: store, clock: ManualClock())
        before.markDone("tag")
        before.markDone("tag")
        // S is new to this store: its view of 'tag' comes from the stream's history.
        let engine = try RuleEngine(source: "scenario S < on tag; min_events 2 >", store: store, clock: ManualClock())
        engine.clearDone("tag")
        XCTAssertFalse(engine.beenDone("tag"))
        XCTAssertTrue(engine.canExecute("S"), "the scenario keeps its own count; reset(S) clears it")
        engine.reset("S")
        XCTAssertFalse(engine.canExecute("S"))
    }

    func testScenarioAddedLaterStartsFromTheStreamsHistory() throws {
        let store = InMemoryStore()
        let clock = ManualClock()
        let before = try RuleEngine(source: "scenario Old < >", store: store, clock: clock)
        for _ in 0..<5 { before.markDone("launch") }
        let after = try RuleEngine(source: "scenario New < on launch; min_events 5 >", store: store, clock: clock)
        XCTAssertTrue(after.canExecute("New"), "history recorded before the rule existed counts")
    }
}
