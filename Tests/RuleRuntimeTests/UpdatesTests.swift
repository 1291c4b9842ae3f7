import Foundation
import XCTest

@testable import RuleRuntime

/// ``RuleEngine/updates(for:)``: the current eligibility at once, then every change, including
/// those time alone makes, delivered by moving a ManualClock (never by sleeping).
final class UpdatesTests: XCTestCase {
    let rules = """
        event e
        param blocked: bool
        scenario S < on e; min_events 2; between 1h; when not blocked >
        scenario Other < max_exec 1 >
        """

    func testTheExactSequenceOfValues() async throws {
        let clock = ManualClock()
        var engine: RuleEngine? = try RuleEngine(source: rules, clock: clock)
        let stream = engine!.updates(for: Scenario("S"))
        engine!.trigger("e")  // 1 event: still false, nothing yielded
        engine!.trigger("e")  // 2 events: true
        XCTAssertTrue(engine!.tryToExecute("S"))  // between 1h: false
        _ = engine!.tryToExecute("Other")  // another scenario: no change
        clock.advance(by: 30 * .minute)  // not yet
        clock.advance(by: 30 * .minute)  // the wake-up: true, with no engine call
        try engine!.set(Param<Bool>("blocked"), to: true)  // false
        try engine!.set(Param<Bool>("blocked"), to: true)  // no change
        try engine!.set(Param<Bool>("blocked"), to: false)  // true
        engine = nil  // the stream ends with the engine
        var values: [Bool] = []
        for await value in stream { values.append(value) }
        XCTAssertEqual(values, [false, true, false, true, false, true])
    }

    func testTimeAloneDeliversWithoutAnyEngineCall() async throws {
        let clock = ManualClock()
        let engine = try RuleEngine(source: "scenario Later < since_first 2d; on e >", clock: clock)
        engine.trigger("e")
        var iterator = engine.updates(for: Scenario("Later")).makeAsyncIterator()
        let first = await iterator.next()
        XCTAssertEqual(first, false)
        clock.advance(by: 2 * .day)
        let second = await iterator.next()
        XCTAssertEqual(second, true)
    }

    func testManyStreamsFromManyThreads() async throws {
        let engine = try RuleEngine(source: rules)
        let streams = (0..<8).map { _ in engine.updates(for: Scenario("S")) }
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<100 { engine.trigger("e") }
        }
        for stream in streams {
            var iterator = stream.makeAsyncIterator()
            let first = await iterator.next()
            let second = await iterator.next()
            XCTAssertEqual([first, second], [false, true])
        }
    }

    func testUnknownScenarioYieldsFalseAndEnds() async throws {
        let engine = try RuleEngine(source: rules)
        var values: [Bool] = []
        for await value in engine.updates(for: Scenario("Nope")) { values.append(value) }
        XCTAssertEqual(values, [false])
    }

    func testACancelledStreamIsForgotten() async throws {
        let clock = ManualClock()
        let engine = try RuleEngine(source: rules, clock: clock)
        let task = Task {
            var count = 0
            for await _ in engine.updates(for: Scenario("S")) { count += 1 }
            return count
        }
        task.cancel()
        _ = await task.value
        // The observer is removed on termination: later calls evaluate nothing for it.
        XCTAssertTrue(engine.locked { $0.hooks.observers.isEmpty })
        for _ in 0..<3 { engine.trigger("e") }
        XCTAssertTrue(engine.canExecute("S"))
    }
}

/// A clock that runs every wake-up at once, on the calling thread (as a clock may): the engine
/// must not hold its lock when it asks for one.
final class ImmediateClock: RuleClock, @unchecked Sendable {
    let lock = NSLock()
    var time = Date(timeIntervalSince1970: 0)
    var wakeUps = 0

    func now() -> Date { lock.withLock { time } }

    func wakeUp(at date: Date, _ action: @escaping @Sendable () -> Void) {
        let run = lock.withLock { () -> Bool in
            wakeUps += 1
            time = max(time, date)  // the wake-up moves this clock to its date
            return wakeUps < 10
        }
        if run { action() }
    }
}

final class ImmediateWakeUpTests: XCTestCase {
    func testAClockRunningAWakeUpAtOnceDoesNotDeadlockTheEngine() throws {
        let clock = ImmediateClock()
        let engine = try RuleEngine(source: "scenario Later < on e; since_first 1h >", clock: clock)
        engine.trigger("e")
        let stream = engine.updates(for: Scenario("Later"))  // false, then a wake-up at 1h run at once: true
        var iterator = stream.makeAsyncIterator()
        let expectation = self.expectation(description: "two values")
        Task {
            let first = await iterator.next()
            let second = await iterator.next()
            XCTAssertEqual([first, second], [false, true])
            expectation.fulfill()
        }
        wait(for: [expectation], timeout: 30)
        XCTAssertGreaterThanOrEqual(clock.wakeUps, 1)
    }
}
