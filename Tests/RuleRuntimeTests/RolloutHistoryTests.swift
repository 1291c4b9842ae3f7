import Foundation
import RuleLang
import TestSupport
import XCTest

@testable import RuleRuntime

/// A rollout keeps every user's history: the state records the renames it applied, so older
/// rules (the fallback to the bundled rules, a downgrade, a swap back) find each history under
/// the name they know.
final class RolloutHistoryTests: XCTestCase {
    let v1 = """
        event launch
        param cap: int = 4
        scenario AskToSubscribe < max_exec 4 >
        scenario Rate < on launch; min_events 3 >
        group Prompts < max_exec 9 > { scenario Tip < max_exec 9 > }
        """
    let v2 = """
        # language 1.1
        event open was launch
        param limit was cap: int = 4
        scenario Subscribe was AskToSubscribe < max_exec 4 >
        scenario Rate < on open; min_events 3 >
        group Pacing was Prompts < max_exec 9 > { scenario Tip < max_exec 9 > }
        """

    /// v1, delivered v2 with renames, a damaged staged file (the fallback to v1), v2 again,
    /// over and over at random: every answer equals a model that never lost anything.
    func testFallbackRoundTripsAgainstAModel() throws {
        let directory = scratchFolder("rollout")
        let bundled = [SourceFile(path: "app.rules", text: v1)]
        let delivery = RuleDelivery(directory: directory, bundled: bundled)
        let store = FileStore(url: directory.appendingPathComponent("rules.state"))
        let sealed = Data(RuleDelivery.seal(Array(v2.utf8)))
        var random = SeededGenerator(seed: 0x0B5E)
        // The model: executions of the subscribe prompt and of Tip, launches, the param.
        var executions = 0
        var tips = 0
        var launches = 0
        var cap = 4
        for step in 0..<60 {
            let delivered = random.next() % 2 == 0
            if delivered {
                try delivery.stage(sealed, version: "v2")
            } else if FileManager.default.fileExists(atPath: delivery.stagedURL.path) {
                // Cut short in place: the next launch falls back to the bundled rules.
                let bytes = try Data(contentsOf: delivery.stagedURL)
                try bytes.prefix(bytes.count - 3).write(to: delivery.stagedURL)
            }
            let engine = try delivery.makeEngine(store: store, clock: ManualClock())
            let label = "step \(step), \(delivered ? "v2" : "v1")"
            XCTAssertEqual(engine.activeRules?.origin, delivered ? .delivered : .bundled, label)
            let (prompt, event, param) =
                delivered ? ("Subscribe", "open", "limit") : ("AskToSubscribe", "launch", "cap")
            func agrees() throws {
                XCTAssertEqual(
                    engine.explain(Scenario(prompt)).reason, executions < 4 ? "yes" : "max_exec 4: 4 so far", label)
                XCTAssertEqual(engine.count(Event(event)), launches, label)
                XCTAssertEqual(engine.explain("Rate").reason == "yes", launches >= 3, label)
                XCTAssertTrue(try engine.check("\(param) == \(cap)"), label)
                XCTAssertEqual(engine.explain("Tip").reason == "yes", tips < 9, label)
            }
            try agrees()
            switch random.next() % 4 {
            case 0: if engine.tryToExecute(Scenario(prompt)) { executions += 1 }
            case 1:
                engine.trigger(Event(event))
                launches += 1
            case 2: if engine.tryToExecute("Tip") { tips += 1 }
            default:
                cap = Int(random.next() % 5) + 1
                try engine.set(Param<Int>(param), to: cap)
            }
            try agrees()
            XCTAssertNil(engine.lastStoreError, label)
        }
        XCTAssertGreaterThan(executions, 0)
        XCTAssertGreaterThan(launches, 0)
    }
}
