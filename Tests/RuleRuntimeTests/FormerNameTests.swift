import Foundation
import RuleLang
import TestSupport
import XCTest

@_spi(Tools) @testable import RuleRuntime

/// An app built against older rules keeps working, unchanged, after a delivered rename: every
/// lookup by a former name resolves to the declaration that carries it now.
final class FormerNameTests: XCTestCase {
    let v1 = """
        event launch
        param cap: int = 2
        scenario AskToSubscribe < on launch; min_events 2; max_exec 2 >
        group Prompts < max_exec 9 > { scenario Tip < max_exec 1 > }
        """
    let v2 = """
        # language 1.1
        event open was launch
        param limit was cap: int = 2
        scenario Subscribe was AskToSubscribe < on open; min_events 2; when (executions(Subscribe) < limit) >
        group Pacing was Prompts < max_exec 9 > { scenario Tip < max_exec 1 > }
        """

    /// The calls an app compiled against v1 makes: strings and handles made before the swap.
    func testTheOldAppsCallsAnswerAfterADeliveredRename() throws {
        let engine = try RuleEngine(source: v1, store: InMemoryStore(), clock: ManualClock())
        let ask = Scenario("AskToSubscribe")
        let launch = Event("launch")
        engine.trigger(launch)
        try engine.replaceRules(sources: [SourceFile(path: "v2.rules", text: v2)])
        XCTAssertTrue(engine.unknownNames.isEmpty)
        engine.trigger("launch")
        XCTAssertEqual(engine.count("launch"), 2)
        XCTAssertEqual(engine.count("open"), 2)
        XCTAssertTrue(engine.canExecute(ask))
        XCTAssertEqual(
            engine.explain("AskToSubscribe").description.split(separator: "\n").first,
            "Subscribe (formerly AskToSubscribe): would run")
        // The name or handle the app passed comes back.
        XCTAssertEqual(engine.executeNext(among: ["Tip", "AskToSubscribe"]), "AskToSubscribe")
        XCTAssertEqual(engine.executeNext(among: [ask]), ask)
        XCTAssertFalse(engine.tryToExecute("AskToSubscribe"))
        XCTAssertFalse(engine.canExecute("Subscribe"))
        try engine.set(Param<Int>("cap"), to: 3)
        XCTAssertEqual(engine.paramValue(named: "limit"), .int(3))
        XCTAssertTrue(engine.tryToExecute("AskToSubscribe"))
        XCTAssertTrue(engine.reset("Prompts"))
        XCTAssertTrue(engine.reset(group: RuleGroup("Prompts")))
        XCTAssertTrue(engine.reset("AskToSubscribe"))
        XCTAssertFalse(engine.canExecute("Subscribe"), "reset: no events since")
        XCTAssertTrue(engine.unknownNames.isEmpty, "\(engine.unknownNames)")
    }

    /// An observer of the former name, made before the swap, follows the scenario across it.
    func testAnObserverOfTheFormerNameKeepsYielding() async throws {
        var engine: RuleEngine? = try RuleEngine(source: v1, store: InMemoryStore(), clock: ManualClock())
        let stream = engine!.updates(for: Scenario("AskToSubscribe"))
        engine!.trigger("launch")
        try engine!.replaceRules(sources: [SourceFile(path: "v2.rules", text: v2)])
        engine!.trigger("launch")  // 2 events, under the stream's new name: true
        XCTAssertTrue(engine!.tryToExecute("AskToSubscribe"))
        XCTAssertTrue(engine!.tryToExecute("AskToSubscribe"))  // 2 of limit 2: false
        engine = nil
        var values: [Bool] = []
        for await value in stream { values.append(value) }
        XCTAssertEqual(values, [false, true, false])
    }

    /// A delivered rename is not refused for the names the app's code uses: the former names
    /// satisfy them.
    func testADeliveredRenameSatisfiesTheNamesTheAppUses() throws {
        let directory = scratchFolder("former-names")
        let required = [
            RequiredName(.scenario, "AskToSubscribe", declaredAt: "app.rules:3"),
            RequiredName(.group, "Prompts", declaredAt: "app.rules:4"),
            RequiredName(.event, "launch", declaredAt: "app.rules:1"),
            RequiredName(.intParam, "cap", declaredAt: "app.rules:2"),
        ]
        let delivery = RuleDelivery(
            directory: directory, bundled: [SourceFile(path: "app.rules", text: v1)], requiredNames: required)
        XCTAssertNoThrow(try delivery.stage(Data(RuleDelivery.seal(Array(v2.utf8)))))
        // A removal is still refused.
        let removed = v2.replacingOccurrences(of: "scenario Subscribe was AskToSubscribe", with: "scenario Subscribe")
        XCTAssertThrowsError(try delivery.stage(Data(RuleDelivery.seal(Array(removed.utf8))))) {
            XCTAssertTrue("\($0)".contains("scenario 'AskToSubscribe'"), "\($0)")
        }
    }
}
