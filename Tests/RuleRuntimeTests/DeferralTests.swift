import Foundation
import RuleLang
import RuleRuntime
import TestSupport
import XCTest

/// Language 1.3's `defer up to D` (grammar.md, "Deferral"): a call refused only by a context
/// or a local window keeps the wish, durably and for at most D; while it lasts the scenario comes
/// first in `executeNext`, every clause judged anew.
final class DeferralTests: XCTestCase {
    let rules = """
        # language 1.3
        scenario Rate < not in pin, checkout; max_exec 3; defer up to 30m; priority 1 >
        scenario Tip < priority 5 >
        scenario Night < during 22:00-23:00; defer up to 2h >
        scenario Capped < not in pin; max_exec 0; defer up to 1h >
        """

    func testAWishRefusedByAContextComesFirstOnceTheUserLeaves() throws {
        let clock = ManualClock()
        let store = InMemoryStore()
        var options = RuleEngine.Options()
        options.timeZone = TimeZone(identifier: "UTC")
        let engine = try RuleEngine(source: rules, store: store, clock: clock, options: options)
        engine.enter("pin")
        XCTAssertNil(engine.explain("Rate").deferredUntil)
        XCTAssertFalse(engine.tryToExecute("Rate"))
        let start = clock.now()
        XCTAssertEqual(engine.explain("Rate").deferredUntil, start.addingTimeInterval(1_800))
        XCTAssertEqual(
            engine.explain("Rate").clauses.last?.description, "defer up to 30m: wished 0s ago, kept 30m more")
        // Still on the PIN screen: executeNext passes over it.
        XCTAssertEqual(engine.executeNext(), "Tip")
        clock.advance(by: 600)
        // A later refusal keeps the first wish's end.
        XCTAssertFalse(engine.tryToExecute("Rate"))
        XCTAssertEqual(engine.explain("Rate").deferredUntil, start.addingTimeInterval(1_800))
        engine.leave("pin")
        // The wish comes first, ahead of a higher priority; granted, it is gone.
        XCTAssertEqual(engine.executeNext(), "Rate")
        XCTAssertEqual(engine.executions(of: "Rate"), 1)
        XCTAssertNil(engine.explain("Rate").deferredUntil)
        XCTAssertEqual(engine.explain("Rate").clauses.last?.detail, "no wish")
        XCTAssertEqual(engine.executeNext(), "Tip", "no wish left: priority again")
    }

    func testAWishIsStoredAndExpires() throws {
        let clock = ManualClock()
        let store = InMemoryStore()
        let engine = try RuleEngine(source: rules, store: store, clock: clock)
        engine.enter("checkout")
        XCTAssertNil(engine.present("Rate"))
        // Another process (a relaunch) over the same state sees the wish; contexts are its own.
        let relaunched = try RuleEngine(source: rules, store: store, clock: clock)
        XCTAssertNotNil(relaunched.explain("Rate").deferredUntil)
        clock.advance(by: 1_800)
        XCTAssertNil(relaunched.explain("Rate").deferredUntil)
        XCTAssertEqual(relaunched.explain("Rate").clauses.last?.detail, "the wish expired 0s ago")
        XCTAssertEqual(relaunched.executeNext(), "Tip", "an expired wish comes first no more")
    }

    func testOnlyAContextOrALocalWindowDefers() throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_767_225_600 + 12 * 3_600))
        var options = RuleEngine.Options()
        options.timeZone = TimeZone(identifier: "UTC")
        let engine = try RuleEngine(source: rules, clock: clock, options: options)
        // Refused by its local window alone (noon, the window is 22:00-23:00): kept 2h.
        XCTAssertFalse(engine.tryToExecute("Night"))
        XCTAssertNotNil(engine.explain("Night").deferredUntil)
        // Refused by max_exec 0 too: no wish, even in a context that refuses it.
        engine.enter("pin")
        XCTAssertFalse(engine.tryToExecute("Capped"))
        XCTAssertNil(engine.explain("Capped").deferredUntil)
        // canExecute asks; it keeps no wish.
        XCTAssertFalse(engine.canExecute("Rate"))
        XCTAssertNil(engine.explain("Rate").deferredUntil)
        // Held by its max_exec when asked outside the context: no wish either.
        engine.leave("pin")
        for _ in 0..<3 { XCTAssertTrue(engine.tryToExecute("Rate")) }
        engine.enter("pin")
        XCTAssertFalse(engine.tryToExecute("Rate"))
        XCTAssertNil(engine.explain("Rate").deferredUntil)
    }

    /// The observers see a wish made and granted: ScenarioStatus's explanation carries it.
    func testTheStatusSeesTheWish() throws {
        #if canImport(Observation)
            guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
            let engine = try RuleEngine(source: rules, clock: ManualClock())
            let status = engine.status(of: "Rate")
            XCTAssertNil(status.explanation.deferredUntil)
            engine.enter("pin")
            XCTAssertFalse(engine.tryToExecute("Rate"))
            XCTAssertNotNil(status.explanation.deferredUntil, "the refusal kept a wish")
            XCTAssertFalse(status.isEligible)
            engine.leave("pin")
            XCTAssertTrue(status.isEligible)
            XCTAssertEqual(engine.executeNext(), "Rate")
            XCTAssertNil(status.explanation.deferredUntil, "granted")
        #endif
    }

    func testTheCheckerReadsDeferralAndCountedExposure() {
        let nothing = RuleCompiler.check(text: "# language 1.3\nscenario A < max_exec 1; defer up to 1h >\n")
        XCTAssertEqual(nothing.diagnostics.first?.message.hasPrefix("'defer' keeps a wish"), true)
        XCTAssertFalse(nothing.hasErrors)
        let grouped = RuleCompiler.check(
            text: "# language 1.3\ngroup G < not in pin > { scenario A < defer up to 1h > }\n")
        XCTAssertEqual(grouped.diagnostics.map(\.message), [], "its group's context is one to wait for")
        let old = RuleCompiler.check(text: "# language 1.2\nscenario A < defer up to 1h; counts after 3s visible >\n")
        XCTAssertEqual(
            old.diagnostics.filter { $0.message.contains("1.3") }.count, 2, "\(old.diagnostics.map(\.message))")
        let zero = RuleCompiler.check(text: "# language 1.3\nscenario A < counts after 0s visible >\n")
        XCTAssertTrue(zero.hasErrors)
        let inGroup = RuleCompiler.check(
            text: "# language 1.3\ngroup G < counts after 3s visible > { scenario A < > }\n")
        XCTAssertTrue(inGroup.hasErrors, "a presentation is a scenario's")
        let twice = RuleCompiler.check(
            text: "# language 1.3\nscenario A < counts after 3s visible; counts after 5s visible >\n")
        XCTAssertTrue(twice.hasErrors)
        let misspelt = RuleCompiler.check(text: "# language 1.3\nscenario A < counts after 3s seen; defer to 1h >\n")
        XCTAssertEqual(
            misspelt.diagnostics.map(\.message).prefix(1),
            ["expected 'visible' after 'counts after 3s', found 'seen'"])
        let printed = RuleCompiler.check(
            text: "# language 1.3\nscenario A < counts after 90s visible; defer up to 1800s; in a >\n")
        XCTAssertEqual(
            printed.program.scenarios.first?.decl.clauses.map { Printer.clause($0.kind) },
            ["counts after 1m30s visible", "defer up to 30m", "in a"])
    }
}
