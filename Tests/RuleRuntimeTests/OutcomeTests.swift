import Foundation
import RuleLang
import TestSupport
import XCTest

@testable import RuleRuntime

/// Language 1.2's outcomes: what became of a prompt, read by rules in every scope, stored on the
/// scenario's outcome streams, carried by renames.
final class OutcomeTests: XCTestCase {
    let rules = """
        # language 1.2
        event launch
        scenario RateApp < on launch; min_events 2; after declined next version; after later 3d; after accepted never >
        """

    func testTheThreeShortFormsHoldAPromptBackAsDocumented() throws {
        let (engine, clock) = try makeEngine(rules)
        engine.startSession(version: "1.0")
        engine.trigger("launch")
        engine.trigger("launch")
        XCTAssertTrue(engine.canExecute("RateApp"))
        // "later" waits 3 days, counted from the last "later".
        try engine.recordOutcome(.later, of: "RateApp")
        XCTAssertFalse(engine.canExecute("RateApp"))
        XCTAssertEqual(engine.explain("RateApp").reason, "after later 3d: later 0s ago; 3d left")
        XCTAssertEqual(engine.explain("RateApp").earliest, clock.now().addingTimeInterval(3 * 86_400))
        clock.advance(by: 3 * 86_400 - 1)
        XCTAssertFalse(engine.canExecute("RateApp"))
        clock.advance(by: 1)
        XCTAssertTrue(engine.canExecute("RateApp"))
        // A decline quiets it until the next version, whatever the wait.
        try engine.recordOutcome(.declined, of: "RateApp")
        clock.advance(by: 400 * 86_400)
        XCTAssertFalse(engine.canExecute("RateApp"))
        XCTAssertEqual(
            engine.explain("RateApp").reason,
            "after declined next version: declined 400d ago; quiet until the next version")
        XCTAssertNil(engine.explain("RateApp").earliest, "waiting alone never passes it")
        engine.startSession(version: "1.1")
        XCTAssertTrue(engine.canExecute("RateApp"))
        // An acceptance ends it for good, new versions included.
        try engine.recordOutcome(.accepted, of: "RateApp")
        engine.startSession(version: "2.0")
        XCTAssertFalse(engine.canExecute("RateApp"))
        XCTAssertTrue(engine.explain("RateApp").reason.hasSuffix("quiet for good"), engine.explain("RateApp").reason)
    }

    func testRulesReadOutcomesInEveryScope() throws {
        let source = """
            # language 1.2
            scenario Offer < when (count(Offer: declined per version) < 2) and count(Offer: dismissed within 1d) == 0 >
            scenario Ask < when since_last(Offer: accepted) >= 2d and count(Offer: declined per session) == 0 >
            """
        let (engine, clock) = try makeEngine(source)
        engine.startSession(version: "1")
        XCTAssertTrue(engine.canExecute("Offer"))
        XCTAssertTrue(engine.canExecute("Ask"), "no acceptance yet: since_last is forever")
        try engine.recordOutcome(.declined, of: "Offer")
        XCTAssertTrue(engine.canExecute("Offer"))
        XCTAssertFalse(engine.canExecute("Ask"))
        engine.startSession(version: "1")
        XCTAssertTrue(engine.canExecute("Ask"), "a new session")
        try engine.recordOutcome(.declined, of: "Offer")
        XCTAssertFalse(engine.canExecute("Offer"), "two declines this version")
        engine.startSession(version: "2")
        XCTAssertTrue(engine.canExecute("Offer"))
        try engine.recordOutcome(.dismissed, of: "Offer")
        XCTAssertFalse(engine.canExecute("Offer"))
        clock.advance(by: 86_400)
        XCTAssertTrue(engine.canExecute("Offer"), "the window slid past it")
        try engine.recordOutcome(.accepted, of: "Offer")
        clock.advance(by: 86_400)
        XCTAssertFalse(engine.canExecute("Ask"))
        clock.advance(by: 86_400)
        XCTAssertTrue(engine.canExecute("Ask"))
        XCTAssertTrue(try engine.check("count(Offer: accepted) == 1 and count(Offer: later) == 0"))
        XCTAssertTrue(engine.unknownNames.isEmpty, "\(engine.unknownNames)")
    }

    func testAnOutcomeForAnUnknownScenarioIsAClearErrorAndChangesNothing() throws {
        let store = InMemoryStore()
        let (engine, _) = try makeEngine(rules, store: store)
        let before = try store.load()
        XCTAssertThrowsError(try engine.recordOutcome(.declined, of: "RateAp")) { error in
            XCTAssertEqual("\(error)", "unknown scenario 'RateAp'")
        }
        XCTAssertEqual(try store.load(), before)
    }

    /// Outcomes are stored, survive a restart over a file, and move with a rename (and back,
    /// for older rules: the fallback).
    func testOutcomesPersistAndMoveWithARenameAndBack() throws {
        let url = temporaryURL("outcomes.state")
        do {
            let engine = try RuleEngine(source: rules, store: FileStore(url: url), clock: ManualClock())
            try engine.recordOutcome(.declined, of: "RateApp")
            try engine.recordOutcome(.declined, of: "RateApp")
            try engine.recordOutcome(.accepted, of: "RateApp")
        }
        let renamed = """
            # language 1.2
            event launch
            scenario Review was RateApp < on launch; after accepted never >
            """
        do {
            let engine = try RuleEngine(source: renamed, store: FileStore(url: url), clock: ManualClock())
            XCTAssertTrue(try engine.check("count(Review: declined) == 2 and count(Review: accepted) == 1"))
            XCTAssertFalse(engine.canExecute("Review"))
            // The app's old code still records under the former name.
            try engine.recordOutcome(.declined, of: "RateApp")
            XCTAssertTrue(try engine.check("count(Review: declined) == 3"))
        }
        // The older rules (a fallback) find every outcome under the old name again.
        let engine = try RuleEngine(source: rules, store: FileStore(url: url), clock: ManualClock())
        XCTAssertTrue(try engine.check("count(RateApp: declined) == 3 and count(RateApp: accepted) == 1"))
        XCTAssertFalse(engine.canExecute("RateApp"))
    }

    /// Outcomes are bounded as any stream is: a thousand outcomes keep a count and a few times.
    func testOutcomesAreBounded() throws {
        let store = InMemoryStore()
        let (engine, _) = try makeEngine(rules, store: store)
        for _ in 0..<1_000 { try engine.recordOutcome(.later, of: "RateApp") }
        XCTAssertTrue(try engine.check("count(RateApp: later) == 1000"))
        let bytes = try XCTUnwrap(try store.load()["e:@later:RateApp"])
        XCTAssertLessThan(bytes.count, 400, "a count and at most the recent-times limit")
    }
}
