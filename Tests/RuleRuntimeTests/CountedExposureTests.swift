import Foundation
import RuleLang
import RuleRuntime
import TestSupport
import XCTest

/// Language 1.3's `counts after D visible` (grammar.md, "Counted exposure"): a presentation
/// counts once it has been on screen that long, summed across hide and show, paused in the
/// background, recorded at the moment reached; never by a finish, an expiry or a crash before it.
final class CountedExposureTests: XCTestCase {
    let rules = """
        # language 1.3
        scenario Banner < max_exec 2; counts after 3s visible >
        scenario Plain < max_exec 2 >
        """

    func lastExecution(_ store: InMemoryStore, _ name: String) throws -> Double? {
        try StateSnapshot(entries: store.load()).scenarios[name]?.executions.last
    }

    func testItCountsAtTheMomentTheTimeOnScreenIsReached() throws {
        let clock = ManualClock()
        let start = clock.now().timeIntervalSince1970
        let store = InMemoryStore()
        let engine = try RuleEngine(source: rules, store: store, clock: clock)
        let shown = try XCTUnwrap(engine.present("Banner"))
        XCTAssertEqual(engine.executions(of: "Banner"), 0, "presented, not yet seen")
        XCTAssertFalse(engine.canExecute("Banner"), "held while on screen")
        clock.advance(by: 1)
        try engine.visible(shown)
        clock.advance(by: 1.5)
        XCTAssertEqual(
            engine.explain("Banner").clauses.last?.description, "counts after 3s visible: on screen 1.5s of 3s")
        try engine.hidden(shown)
        clock.advance(by: 10)
        XCTAssertEqual(engine.executions(of: "Banner"), 0, "hidden time does not count")
        try engine.visible(shown)
        // The clock wakes the engine at the moment reached: no call of the app's needed.
        clock.advance(by: 2)
        XCTAssertEqual(try lastExecution(store, "Banner"), start + 12.5 + 1.5, "recorded at the moment reached")
        XCTAssertEqual(engine.executions(of: "Banner"), 1)
        clock.advance(by: 5)
        try engine.finish(shown, .accepted)
        XCTAssertEqual(engine.executions(of: "Banner"), 1, "counted once")
        XCTAssertEqual(engine.explain("Banner").clauses.last?.detail, "counts once on screen that long")
    }

    func testAFinishOrAnExpiryBeforeTheTimeNeverCounts() throws {
        let clock = ManualClock()
        var options = RuleEngine.Options()
        options.presentationTimeout = 10
        let engine = try RuleEngine(source: rules, clock: clock, options: options)
        let first = try XCTUnwrap(engine.present("Banner"))
        try engine.visible(first)
        clock.advance(by: 2.9)
        try engine.finish(first, .dismissed)
        clock.advance(by: 60)
        XCTAssertEqual(engine.executions(of: "Banner"), 0, "finished at 2.9s of 3s")
        XCTAssertEqual(engine.count(Event("Banner")), 0)
        // Expired: time on screen after the expiry counts for nothing.
        let second = try XCTUnwrap(engine.present("Banner"))
        clock.advance(by: 8)
        try engine.visible(second)
        clock.advance(by: 30)
        XCTAssertEqual(engine.executions(of: "Banner"), 0, "2s on screen before the expiry")
        XCTAssertTrue(engine.canExecute("Banner"), "the hold expired")
        // A scenario without the clause counts when presented; visible and hidden change nothing.
        let plain = try XCTUnwrap(engine.present("Plain"))
        XCTAssertEqual(engine.executions(of: "Plain"), 1)
        try engine.visible(plain)
        try engine.hidden(plain)
        XCTAssertEqual(engine.executions(of: "Plain"), 1)
        try engine.finish(plain, .accepted)
        XCTAssertThrowsError(try engine.visible(plain)) { error in
            XCTAssertEqual("\(error)", "\(RuleEngineError.presentationNotOpen(scenario: "Plain"))")
        }
    }

    func testTheBackgroundPausesTheTimeOnScreen() throws {
        let clock = ManualClock()
        let store = InMemoryStore()
        let start = clock.now().timeIntervalSince1970
        let engine = try RuleEngine(source: rules, store: store, clock: clock)
        let shown = try XCTUnwrap(engine.present("Banner"))
        try engine.visible(shown)
        clock.advance(by: 2)
        engine.prepareForSuspension()
        clock.advance(by: 100)
        XCTAssertEqual(engine.executions(of: "Banner"), 0)
        XCTAssertEqual(engine.explain("Banner").clauses.last?.detail, "on screen 2s of 3s, in the background")
        engine.enteredForeground()
        clock.advance(by: 0.5)
        XCTAssertEqual(engine.executions(of: "Banner"), 0)
        clock.advance(by: 0.5)
        XCTAssertEqual(try lastExecution(store, "Banner"), start + 103)
    }

    /// A launch is in the foreground: a presentation on screen counts again after it.
    func testALaunchEndsTheBackground() throws {
        let clock = ManualClock()
        let engine = try RuleEngine(source: rules, clock: clock)
        let shown = try XCTUnwrap(engine.present("Banner"))
        try engine.visible(shown)
        engine.prepareForSuspension()
        clock.advance(by: 60)
        engine.startSession(version: "1")
        clock.advance(by: 3)
        XCTAssertEqual(engine.executions(of: "Banner"), 1)
    }

    /// A process that ends before the time is reached never counts: the next engine over the
    /// same state sees the hold until it expires, and no execution.
    func testACrashBeforeTheTimeNeverCounts() throws {
        let clock = ManualClock()
        let store = InMemoryStore()
        var engine: RuleEngine? = try RuleEngine(source: rules, store: store, clock: clock)
        let shown = try XCTUnwrap(engine?.present("Banner"))
        try engine?.visible(shown)
        clock.advance(by: 2)
        engine = nil
        clock.advance(by: 5)
        let relaunched = try RuleEngine(source: rules, store: store, clock: clock)
        relaunched.relaunchAfterCrash()
        clock.advance(by: 10_000)
        XCTAssertEqual(relaunched.executions(of: "Banner"), 0)
        XCTAssertTrue(relaunched.canExecute("Banner"))
    }
}
