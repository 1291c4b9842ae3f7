import Foundation
import RuleLang
import TestSupport
import XCTest

@testable import RuleRuntime

/// `retired scenario NAME` (language 1.2): switched off remotely, the name still known and
/// answering no, its history kept for rules that bring it back.
final class RetirementTests: XCTestCase {
    let v1 = "event launch\nscenario RateApp < on launch; min_events 2; max_exec 2 >\n"
    let v2 = "# language 1.2\nevent launch\nretired scenario RateApp\n"

    func testARetiredScenarioAnswersNoAndKeepsItsHistory() throws {
        let store = InMemoryStore()
        let engine = try RuleEngine(source: v1, store: store, clock: ManualClock())
        engine.trigger("launch")
        engine.trigger("launch")
        XCTAssertTrue(engine.tryToExecute("RateApp"))
        try engine.replaceRules(sources: [SourceFile(path: "v2.rules", text: v2)])
        XCTAssertFalse(engine.canExecute("RateApp"))
        XCTAssertFalse(engine.tryToExecute(Scenario("RateApp")))
        XCTAssertNil(engine.executeNext(among: ["RateApp"]))
        XCTAssertEqual(engine.explain("RateApp").reason, "retired: switched off by these rules; its history is kept")
        XCTAssertTrue(engine.unknownNames.isEmpty, "\(engine.unknownNames)")
        XCTAssertTrue(try engine.check("executions(RateApp) == 1"))
        XCTAssertNotNil(try store.load()["s:RateApp"], "its history is not orphaned")
        // Brought back: the history is all there.
        try engine.replaceRules(sources: [SourceFile(path: "v1.rules", text: v1)])
        XCTAssertEqual(engine.explain("RateApp").reason, "yes")
        XCTAssertTrue(engine.tryToExecute("RateApp"))
        XCTAssertEqual(engine.explain("RateApp").reason, "max_exec 2: 2 so far")
    }

    /// A delivered file retiring a name the app's code uses is accepted; removing it is not.
    func testARetirementSatisfiesTheNamesTheAppUses() throws {
        let delivery = RuleDelivery(
            directory: scratchFolder("retire"), bundled: [SourceFile(path: "app.rules", text: v1)],
            requiredNames: [RequiredName(.scenario, "RateApp", declaredAt: "app.rules:2")])
        XCTAssertNoThrow(try delivery.stage(Data(RuleDelivery.seal(Array(v2.utf8)))))
        let removed = "# language 1.2\nevent launch\n"
        XCTAssertThrowsError(try delivery.stage(Data(RuleDelivery.seal(Array(removed.utf8)))))
        let engine = try delivery.makeEngine(store: InMemoryStore())
        XCTAssertEqual(engine.activeRules?.origin, .delivered)
        XCTAssertFalse(engine.canExecute("RateApp"))
    }
}
