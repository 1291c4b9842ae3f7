import Foundation
import XCTest

@testable import RuleRuntime

extension Scenario {
    static let ask: Scenario = "AskToSubscribe"
    static let other: Scenario = "Other"
    static let missing: Scenario = "AskToSubscibe"
}

extension Event {
    static let launch: Event = "launch"
    static let shareSheet: Event = "share sheet opened"
}

extension Param where Value == Bool {
    static let isSubscribed: Param<Bool> = "is_subscribed"
}

extension Param where Value == Int {
    static let articlesRead: Param<Int> = "articles_read"
}

extension Param where Value == TimeInterval {
    static let cooldown: Param<TimeInterval> = "cooldown"
}

/// Typed handles: every overload, handles shared by engines, and from many threads.
final class HandleTests: XCTestCase {
    let rules = """
        param is_subscribed: bool
        param articles_read: int = 3
        param cooldown: duration = 1d
        scenario Other < on "share sheet opened" >
        scenario AskToSubscribe < on launch; min_events 2; max_exec 1; when not is_subscribed and (articles_read > 2) >
        """

    func testEveryOverloadThroughHandles() throws {
        let (engine, _) = try makeEngine(rules)
        engine.trigger(.launch)
        XCTAssertFalse(engine.canExecute(.ask))
        XCTAssertEqual(engine.explain(.ask).reason, "min_events 2: 1 so far")
        engine.markDone(.launch)
        XCTAssertEqual(engine.count("launch"), 2)
        XCTAssertEqual(engine.value(of: .articlesRead), 3)
        XCTAssertEqual(engine.value(of: .cooldown), .day)
        try engine.set(.articlesRead, to: 7)
        XCTAssertEqual(engine.value(of: .articlesRead), 7)
        try engine.provide(.isSubscribed) { false }
        XCTAssertFalse(engine.value(of: .isSubscribed))
        XCTAssertTrue(engine.tryToExecute(.ask))
        XCTAssertFalse(engine.tryToExecute(.ask))
        XCTAssertTrue(engine.reset(.ask))
        engine.trigger(.shareSheet)
        XCTAssertEqual(engine.executeNext(among: [.ask, .other]), .other)
        XCTAssertEqual(engine.count("share sheet opened"), 1)
    }

    func testUnknownNamesBehaveAsTheirStrings() throws {
        let (engine, _) = try makeEngine(rules)
        XCTAssertFalse(engine.tryToExecute(.missing))
        XCTAssertFalse(engine.explain(.missing).isKnown)
        XCTAssertEqual(engine.value(of: Param<Bool>("nope")), false)
        XCTAssertEqual(engine.value(of: Param<String>("is_subscribed")), "", "declared with another type")
        XCTAssertThrowsError(try engine.set(Param<Int>("nope"), to: 1))
    }

    func testOneHandleServesEnginesWhoseIndicesDiffer() throws {
        // 'AskToSubscribe' is scenario 1 here and scenario 0 there.
        let (first, _) = try makeEngine(rules)
        let (second, _) = try makeEngine("scenario AskToSubscribe < max_exec 1 >\nscenario Other < >")
        for _ in 0..<3 {
            XCTAssertFalse(first.canExecute(.ask))
            XCTAssertTrue(second.canExecute(.ask))
        }
        XCTAssertTrue(second.tryToExecute(.ask))
        XCTAssertEqual(first.explain(.ask).reason, "min_events 2: 0 so far")
        XCTAssertEqual(second.explain(.ask).reason, "max_exec 1: 1 so far")
        first.trigger(.launch)
        second.trigger(.launch)
        XCTAssertEqual(first.count("launch"), 1)
        XCTAssertEqual(second.count("launch"), 1)
    }

    func testHandlesFromEightThreads() throws {
        let (first, _) = try makeEngine(rules)
        let (second, _) = try makeEngine("scenario AskToSubscribe < on launch; max_exec 5 >")
        let executed = ManualBox(0)
        let lock = NSLock()
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            let engine = thread % 2 == 0 ? first : second
            for _ in 0..<500 {
                engine.trigger(.launch)
                if engine === second && engine.tryToExecute(.ask) {
                    lock.lock()
                    executed.value += 1
                    lock.unlock()
                }
                _ = engine.canExecute(.ask)
            }
        }
        XCTAssertEqual(first.count("launch"), 2_000)
        XCTAssertEqual(second.count("launch"), 2_000)
        XCTAssertEqual(executed.value, 5)
    }

    func testHandlesCompareAndHashByName() {
        XCTAssertEqual(Scenario("A"), "A")
        XCTAssertEqual(Set<Event>(["x", "x", Event("y")]).count, 2)
        XCTAssertEqual(Param<Int>("n").description, "n")
    }
}
