import Foundation
import RuleRuntime
import XCTest

/// Every scenario of the peers' READMEs, from `examples/seeds/`, over an injected clock.
final class SeedScenarioTests: XCTestCase {
    func testFirstLaunchTutorial() throws {
        let (engine, clock) = try exampleEngine("seeds/waitforit_first_launch_tutorial.rules")
        engine.trigger("app_launch")
        XCTAssertTrue(engine.tryToExecute("FirstLaunchTutorial"))
        XCTAssertFalse(engine.tryToExecute("FirstLaunchTutorial"), "once")
        clock.advance(by: .day)
        engine.trigger("app_launch")
        XCTAssertFalse(engine.tryToExecute("FirstLaunchTutorial"))
        // A user who skipped it on the first launch does not get it on the second.
        let (late, _) = try exampleEngine("seeds/waitforit_first_launch_tutorial.rules")
        late.trigger("app_launch")
        late.trigger("app_launch")
        XCTAssertFalse(late.tryToExecute("FirstLaunchTutorial"))
    }

    func testReviewAfterTwoWeeksAndFiveLaunches() throws {
        let (engine, clock) = try exampleEngine("seeds/waitforit_review.rules")
        XCTAssertFalse(engine.tryToExecute("AskForReview"), "no launch yet: since_first is false, unlike WaitForIt")
        for _ in 0..<5 {
            engine.trigger("app_launch")
            XCTAssertFalse(engine.tryToExecute("AskForReview"))
            clock.advance(by: .day)
        }
        clock.advance(by: 9 * .day - 1)  // 14 days after the first launch, less a second
        XCTAssertFalse(engine.tryToExecute("AskForReview"))
        XCTAssertEqual(engine.explain("AskForReview").reason, "since_first 14d: 1s left")
        clock.advance(by: 1)
        XCTAssertTrue(engine.tryToExecute("AskForReview"))
        XCTAssertFalse(engine.tryToExecute("AskForReview"))
    }

    func testRegisteredSubscribeEveryThreeDaysAtMostFive() throws {
        let (engine, clock) = try exampleEngine("seeds/waitforit_registered_subscribe.rules")
        XCTAssertFalse(engine.tryToExecute("AskRegisteredToSubscribe"), "not registered")
        try engine.set("is_registered", to: true)
        var shown: [Int] = []
        for day in 0..<30 {
            if engine.tryToExecute("AskRegisteredToSubscribe") { shown.append(day) }
            clock.advance(by: .day)
        }
        XCTAssertEqual(shown, [0, 3, 6, 9, 12])
    }

    func testShareIfNotSharedForFourDays() throws {
        let (engine, clock) = try exampleEngine("seeds/waitforit_share.rules")
        XCTAssertTrue(engine.tryToExecute("AskToShare"), "never shared")
        engine.trigger("shared")
        clock.advance(by: 4 * .day - 60)
        XCTAssertFalse(engine.tryToExecute("AskToShare"))
        clock.advance(by: 60)
        XCTAssertTrue(engine.tryToExecute("AskToShare"))
    }

    func testShowTutorialOnce() throws {
        let (engine, _) = try exampleEngine("seeds/waitforit_show_tutorial.rules")
        XCTAssertTrue(engine.tryToExecute("ShowTutorial"))
        XCTAssertFalse(engine.tryToExecute("ShowTutorial"))
    }

    func testAskToSubscribeCard() throws {
        let (engine, clock) = try exampleEngine("seeds/waitforit_ask_to_subscribe.rules")
        var shown: [Int] = []
        for day in 0..<20 {
            engine.trigger("AskToSubscribe")  // one launch a day
            if engine.tryToExecute("AskToSubscribe") { shown.append(day) }
            clock.advance(by: .day)
        }
        XCTAssertEqual(shown, [7, 9, 11, 13], "after a week and 5 launches, every 2 days, at most 4 times")
    }

    func testLowBrightnessOnceWithLiveProvider() throws {
        let (engine, _) = try exampleEngine("seeds/waitforit_low_brightness.rules")
        let brightness = ManualBox(80)
        try engine.provide("screen_brightness") { brightness.value }
        XCTAssertFalse(engine.tryToExecute("ShowLowBrightnessAlertOnce"))
        brightness.value = 20
        XCTAssertTrue(engine.tryToExecute("ShowLowBrightnessAlertOnce"))
        XCTAssertFalse(engine.tryToExecute("ShowLowBrightnessAlertOnce"))
    }

    func testEcnoTutorialOnce() throws {
        let (engine, _) = try exampleEngine("seeds/ecno_tutorial_once.rules")
        engine.startSession(version: "1.0")
        XCTAssertTrue(engine.tryToExecute("OfferTutorial"))
        XCTAssertFalse(engine.tryToExecute("OfferTutorial"), "once per session")
        engine.startSession(version: "1.0")
        XCTAssertTrue(engine.tryToExecute("OfferTutorial"), "not finished: offered again next session")
        engine.markDone("tutorial")
        engine.startSession(version: "1.0")
        XCTAssertFalse(engine.tryToExecute("OfferTutorial"))
        XCTAssertTrue(engine.beenDone("tutorial"))
    }

    func testEcnoPeriodicTask() throws {
        let (engine, clock) = try exampleEngine("seeds/ecno_periodic.rules")
        var runs = 0
        for _ in 0..<(24 * 4) {  // every 15 minutes for a day
            if engine.tryToExecute("RefreshCatalogue") { runs += 1 }
            clock.advance(by: 15 * .minute)
        }
        XCTAssertEqual(runs, 3, "every 6h, capped at 3 a day")
        clock.advance(by: 6 * .hour)
        XCTAssertTrue(engine.tryToExecute("RefreshCatalogue"))
    }

    func testEcnoUserActionToDoExpires() throws {
        let (engine, clock) = try exampleEngine("seeds/ecno_user_action.rules")
        XCTAssertFalse(engine.tryToExecute("ShowBanner"))
        XCTAssertTrue(engine.toDo("show banner", scope: .until(3 * .hour), info: ["name": "bannerName"]))
        XCTAssertEqual(engine.info(forToDo: "show banner"), ["name": "bannerName"])
        XCTAssertTrue(engine.tryToExecute("ShowBanner"))
        XCTAssertFalse(engine.tryToExecute("ShowBanner"), "max_exec 1 within 3h")
        clock.advance(by: 3 * .hour)
        XCTAssertFalse(engine.needToDo("show banner"), "expired")
        XCTAssertFalse(engine.tryToExecute("ShowBanner"))
    }
}

/// A value shared with a provider closure.
final class ManualBox<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T {
        get {
            lock.lock()
            defer { lock.unlock() }
            return stored
        }
        set {
            lock.lock()
            stored = newValue
            lock.unlock()
        }
    }
}
