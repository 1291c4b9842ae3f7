import Foundation
import RuleRuntime
import XCTest

/// ``RuleEngine/unknownNames``: strings that match nothing are reported with "did you mean".
final class UnknownNamesTests: XCTestCase {
    let rules = """
        event launch, shared, "sale banner"
        scenario AskToSubscribe < on launch; min_events 2 >
        scenario Own < min_events 1 >
        scenario Banner < when todo("sale banner") and (count(shared) == 0) >
        group Prompts < max_exec 1 > { scenario Rate < on launch > }
        """

    func testUnknownEventsAndScenariosAreReportedOnceWithSuggestions() throws {
        let engine = try RuleEngine(source: rules)
        engine.trigger("lanch")
        engine.trigger("lanch")
        engine.trigger(Event("shard"))
        engine.markDone("sale baner")
        XCTAssertFalse(engine.tryToExecute("AskRegisteredToSubscibe"))
        XCTAssertFalse(engine.canExecute("Owm"))
        _ = engine.explain(Scenario("Bannr"))
        XCTAssertFalse(engine.reset("Promts"))
        _ = engine.executeNext(among: ["Rat"])
        XCTAssertEqual(
            engine.unknownNames.map(\.description),
            [
                "event 'lanch' is counted by no rule; did you mean 'launch'?",
                "event 'shard' is counted by no rule; did you mean 'shared'?",
                "event 'sale baner' is counted by no rule; did you mean 'sale banner'?",
                "scenario 'AskRegisteredToSubscibe' is not a scenario of the rules; did you mean 'AskToSubscribe'?",
                "scenario 'Owm' is not a scenario of the rules; did you mean 'Own'?",
                "scenario 'Bannr' is not a scenario of the rules; did you mean 'Banner'?",
                "scenario 'Promts' is not a scenario of the rules; did you mean 'Prompts'?",
                "scenario 'Rat' is not a scenario of the rules; did you mean 'Rate'?",
            ])
        XCTAssertEqual(engine.unknownNames.first?.suggestions, ["launch"])
    }

    func testKnownNamesAreNotReported() throws {
        let engine = try RuleEngine(source: rules)
        engine.trigger("launch")
        engine.trigger(Event("shared"))
        engine.trigger("Own")  // a scenario without 'on' counts its own stream
        engine.markDone("sale banner")  // declared, and named by todo()
        _ = engine.tryToExecute("AskToSubscribe")
        _ = engine.canExecute(Scenario("Rate"))
        XCTAssertTrue(engine.reset("Prompts"))  // a group's name resets its budget
        _ = engine.explain("Banner")
        XCTAssertEqual(engine.unknownNames, [])
    }

    func testTodoNamesAndDeclaredEventsAreKnownWithoutDeclarations() throws {
        let engine = try RuleEngine(source: "scenario A < when todo(banner) >")
        engine.markDone("banner")
        engine.trigger("A")
        XCTAssertEqual(engine.unknownNames, [])
        let declared = try RuleEngine(source: "event opened, closed\nscenario A < on opened >")
        declared.trigger("closed")  // declared though no rule counts it yet
        XCTAssertEqual(declared.unknownNames, [])
    }

    func testTheReportIsBounded() throws {
        let engine = try RuleEngine(source: rules)
        for index in 0..<(UnknownName.limit * 3) {
            engine.trigger("stream \(index)")
            _ = engine.tryToExecute("Scenario \(index)")
        }
        let names = engine.unknownNames
        XCTAssertEqual(names.filter { $0.kind == .event }.count, UnknownName.limit)
        XCTAssertEqual(names.filter { $0.kind == .scenario }.count, UnknownName.limit)
        XCTAssertEqual(names.first?.name, "stream 0")
    }
}
