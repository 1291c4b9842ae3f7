import Foundation
import RuleLang
@_spi(Tools) import RuleRuntime
import TestSupport
import XCTest

/// Rules swapped into a running engine, and renames (`was`) that keep history.
final class SwapTests: XCTestCase {
    func testASwapAnswersWithTheNewRulesAndAnErrorChangesNothing() throws {
        let (engine, _) = try makeEngine("scenario Ask < min_events 3 >")
        engine.trigger("Ask")
        engine.trigger("Ask")
        XCTAssertFalse(engine.canExecute("Ask"))
        XCTAssertThrowsError(try engine.replaceRules(source: "scenario Ask < min_event 2 >")) { error in
            guard case RuleEngineError.invalidRules(let diagnostics) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(diagnostics.first?.id, .unknownClause)
            XCTAssertEqual(diagnostics.first?.span.start.line, 1)
        }
        XCTAssertFalse(engine.canExecute("Ask"), "the old rules still answer")
        XCTAssertEqual(engine.scenarioNames, ["Ask"])
        try engine.replaceRules(source: "scenario Ask < min_events 2 >\nscenario Other < min_events 1 >")
        XCTAssertTrue(engine.canExecute("Ask"), "the history carried over; the new threshold answers")
        XCTAssertEqual(engine.scenarioNames, ["Ask", "Other"])
        XCTAssertEqual(engine.activeRules?.origin, .given)
    }

    func testHandlesResolveAgainAndAGoneNameAnswersFalse() throws {
        let (engine, _) = try makeEngine("scenario A < min_events 1 >\nscenario B < min_events 1 >")
        let a = Scenario(resolvingOnce: "A")
        let b = Scenario(resolvingOnce: "B")
        let event = Event(resolvingOnce: "B")
        engine.trigger(event)
        XCTAssertTrue(engine.canExecute(b))
        XCTAssertFalse(engine.canExecute(a))
        // B moves to another index, A goes away.
        try engine.replaceRules(source: "scenario C < min_events 9 >\nscenario B < min_events 2 >")
        XCTAssertFalse(engine.canExecute(b))
        engine.trigger(event)
        XCTAssertTrue(engine.canExecute(b), "the handle found B at its new index")
        XCTAssertFalse(engine.tryToExecute(a))
        XCTAssertTrue(engine.unknownNames.contains { $0.name == "A" && $0.kind == .scenario })
    }

    func testUpdatesYieldAgainWhenASwapChangesTheAnswer() async throws {
        let (engine, _) = try makeEngine("scenario A < min_events 2 >")
        engine.trigger("A")
        var iterator = engine.updates(for: Scenario("A")).makeAsyncIterator()
        let first = await iterator.next()
        XCTAssertEqual(first, false)
        try engine.replaceRules(source: "scenario A < min_events 1 >")
        let second = await iterator.next()
        XCTAssertEqual(second, true)
        try engine.replaceRules(source: "scenario Z < min_events 1 >")
        let third = await iterator.next()
        XCTAssertEqual(third, false, "a scenario that is gone is not eligible")
    }

    func testParamsSetAndProvidedCarryOver() throws {
        let (engine, _) = try makeEngine(
            "param level: int = 0\nparam pro: bool\nscenario A < when level >= 2 and pro >")
        try engine.set(Param<Int>("level"), to: 3)
        try engine.provide("pro") { true }
        XCTAssertTrue(engine.canExecute("A"))
        try engine.replaceRules(source: "param level: int = 0\nparam pro: bool\nscenario A < when level >= 3 and pro >")
        XCTAssertTrue(engine.canExecute("A"), "the stored value and the provider carried over")
        try engine.replaceRules(
            source: "param level: int = 0\nparam pro: int\nscenario A < when level >= 3 and pro == 0 >")
        XCTAssertEqual(engine.paramValue(named: "pro"), .int(0), "a provider of another type does not carry over")
    }

    /// A provider is kept with the type its param had: rules that declare the param with
    /// another type do not call it, and rules that declare that type again do, as a stored value.
    func testAProviderComesBackWithItsParamsType() throws {
        let (engine, _) = try makeEngine("param pro: bool\nscenario A < when pro >")
        try engine.provide("pro") { true }
        XCTAssertTrue(engine.canExecute("A"))
        try engine.replaceRules(source: "param pro: int\nscenario A < when pro == 0 >")
        XCTAssertTrue(engine.canExecute("A"), "the int param reads its default, not the bool provider")
        try engine.replaceRules(source: "param pro: bool\nscenario A < when pro >")
        XCTAssertTrue(engine.canExecute("A"), "the provider answers again")
    }

    /// Hooks carry over whole: an override naming a scenario the rules do not know is listed
    /// once however many swaps follow (each swap used to list it again).
    func testAnUnknownOverrideIsListedOnceAcrossSwaps() throws {
        let engine = try RuleEngine(
            source: "scenario A < min_events 1 >", options: RuleEngine.Options(overrides: ["Nope": true]))
        for k in 0..<3 { try engine.replaceRules(source: "scenario A < min_events \(k) >") }
        XCTAssertEqual(engine.unknownNames.filter { $0.name == "Nope" }.count, 1)
        engine.trigger("stray")
        try engine.replaceRules(source: "scenario A < min_events 1 >")
        XCTAssertEqual(engine.unknownNames.map(\.name).sorted(), ["Nope", "stray"])
        try engine.replaceRules(source: "scenario A < on stray; min_events 1 >")
        XCTAssertEqual(engine.unknownNames.map(\.name), ["Nope"], "an event the rules now count is known")
    }

    // MARK: - Renames

    func testRenamesMoveHistoryOnceAndChainsWork() throws {
        let store = InMemoryStore()
        let clock = ManualClock()
        let v1 = """
            param limit: int = 1
            event launch
            scenario Ask < on launch; min_events 2; max_exec 5 >
            group Prompts < max_exec 9 > {
                scenario Rate < min_events 1 >
            }
            """
        var engine = try RuleEngine(source: v1, store: store, clock: clock)
        try engine.set(Param<Int>("limit"), to: 7)
        engine.trigger("launch")
        engine.trigger("launch")
        engine.trigger("Rate")
        XCTAssertTrue(engine.tryToExecute("Ask"))
        XCTAssertTrue(engine.tryToExecute("Rate"))
        // Version 2 renames all four; version 3 renames the scenario and the event again.
        let v3 = """
            # language 1.1
            param cap was limit: int = 1
            event open was start was launch
            scenario Subscribe was AskNow was Ask < on open; min_events 2; max_exec 5 >
            group Pacing was Prompts < max_exec 9 > {
                scenario Review was Rate < min_events 1 >
            }
            """
        engine = try RuleEngine(source: v3, store: store, clock: clock)
        XCTAssertEqual(engine.paramValue(named: "cap"), .int(7))
        XCTAssertEqual(engine.count("open"), 2)
        XCTAssertEqual(engine.count("Review"), 1, "a scenario's own stream moves with it")
        XCTAssertEqual(
            engine.explain("Subscribe").clauses.first { $0.clause.hasPrefix("max_exec") }?.detail, "1 so far")
        XCTAssertTrue(engine.explain("Review").clauses.contains { $0.detail == "1 so far" })
        let snapshot = try StateSnapshot(entries: store.load())
        XCTAssertNil(snapshot.scenarios["Ask"])
        XCTAssertNil(snapshot.streams["launch"])
        XCTAssertNil(snapshot.streams["Rate"])
        XCTAssertNil(snapshot.groups["Prompts"])
        XCTAssertNil(snapshot.params["limit"])
        XCTAssertEqual(snapshot.scenarios["Subscribe"]?.executions.total, 1)
        XCTAssertEqual(snapshot.groups["Pacing"]?.total, 1)
        // Opening again moves nothing more and keeps everything.
        engine = try RuleEngine(source: v3, store: store, clock: clock)
        XCTAssertEqual(try StateSnapshot(entries: store.load()).scenarios["Subscribe"]?.executions.total, 1)
        XCTAssertEqual(engine.count("open"), 2)
    }

    func testANameWithHistoryKeepsItAndTheFormerStays() throws {
        let store = InMemoryStore()
        let both = "scenario A < min_events 1 >\nscenario B < min_events 1 >"
        let engine = try RuleEngine(source: both, store: store, clock: ManualClock())
        XCTAssertTrue(engine.tryToExecute(Scenario("A")) == false)
        engine.trigger("A")
        engine.trigger("B")
        engine.trigger("B")
        XCTAssertTrue(engine.tryToExecute("A"))
        XCTAssertTrue(engine.tryToExecute("B"))
        let renamed = try RuleEngine(source: "# language 1.1\nscenario B was A < min_events 1 >", store: store)
        XCTAssertEqual(renamed.count("B"), 2, "B's own history is kept, not overwritten by A's")
        XCTAssertNotNil(try StateSnapshot(entries: store.load()).scenarios["A"], "A's history is left where it was")
    }

    func testASwapMovesRenamedHistoryAsARestartWould() throws {
        let (engine, _) = try makeEngine("scenario Ask < min_events 2 >")
        engine.trigger("Ask")
        engine.trigger("Ask")
        XCTAssertTrue(engine.tryToExecute("Ask"))
        try engine.replaceRules(source: "# language 1.1\nscenario Subscribe was Ask < min_events 2; max_exec 1 >")
        XCTAssertFalse(engine.canExecute("Subscribe"), "its execution came along")
        XCTAssertEqual(engine.count("Subscribe"), 2)
    }

    /// A process killed at any moment of moves back and forth leaves each history under exactly
    /// one of its names, with every acknowledged event.
    func testRandomKillsDuringRenamesLeaveEachHistoryUnderOneName() throws {
        let url = scratchFolder("rules-swap").appendingPathComponent("renamed.state")
        var generator = SeededGenerator(seed: UInt64(ProcessInfo.processInfo.environment["RULES_SEED"] ?? "") ?? 0x2E4A)
        print("rename kill seed: \(generator.seed)")
        var acknowledged = 0
        for cycle in 0..<100 {
            let child = try FixtureProcess(["rename-loop", url.path])
            acknowledged = max(
                acknowledged, child.readCounts(until: acknowledged + Int.random(in: 1...6, using: &generator)))
            child.kill()
            let snapshot = try StateSnapshot(entries: FileStore(url: url).load())
            let views = ["A", "B"].filter { snapshot.scenarios[$0] != nil }
            let own = ["A", "B"].filter { snapshot.streams[$0] != nil }
            let events = ["e", "f"].filter { snapshot.streams[$0] != nil }
            XCTAssertEqual(views.count, 1, "cycle \(cycle): views under \(views)")
            XCTAssertEqual(own.count, 1, "cycle \(cycle): own streams under \(own)")
            XCTAssertEqual(events.count, 1, "cycle \(cycle): event streams under \(events)")
            guard let view = views.first, let stream = own.first, let event = events.first else { return }
            let total = snapshot.streams[stream]!.total
            XCTAssertGreaterThanOrEqual(total, Int64(acknowledged), "cycle \(cycle)")
            XCTAssertGreaterThanOrEqual(snapshot.streams[event]!.total, Int64(acknowledged), "cycle \(cycle)")
            XCTAssertEqual(snapshot.scenarios[view]!.events.total, total, "cycle \(cycle): the view counts its stream")
            if views.count != 1 || total < acknowledged { return }
        }
    }
}
