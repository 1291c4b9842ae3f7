import Foundation
import RuleRuntime
import XCTest

/// The importers read the peers' keys from a `UserDefaults` suite, written exactly as the
/// peers write them (PEERS.md, "Their stored data").
final class ImporterTests: XCTestCase {
    private func suite() -> UserDefaults {
        let name = "rules-import-\(UUID().uuidString)"
        let defaults = UserDefaults(suiteName: name)!
        addTeardownBlock { UserDefaults().removePersistentDomain(forName: name) }
        return defaults
    }

    let t0 = Date(timeIntervalSince1970: 1_767_225_600)

    /// WaitForIt's `triggerEvent` / `tryToExecute` bookkeeping for one scenario type.
    private func writeWaitForIt(
        _ defaults: UserDefaults, _ type: String, events: Int, first: Date?, last: Date?, executions: Int,
        lastExecution: Date?
    ) {
        let prefix = "net.pabloweb.WaitForIt.\(type)."
        defaults.set(events, forKey: prefix + "eventsCount")
        defaults.set(executions, forKey: prefix + "executionsCount")
        if let first { defaults.set(first, forKey: prefix + "firstEventDate") }
        if let last { defaults.set(last, forKey: prefix + "lastEventDate") }
        if let lastExecution { defaults.set(lastExecution, forKey: prefix + "lastExecutionDate") }
    }

    func testWaitForItHistoryAnswersAsThePeerDid() throws {
        let defaults = suite()
        // WaitForIt: minEventsRequired 5, minSecondsSinceFirstEvent 7d, maxExecutionsPermitted 4,
        // minSecondsBetweenExecutions 2d; 6 events from t0 to t0+8d, executed once at t0+8d.
        writeWaitForIt(
            defaults, "AskToSubscribeScenario", events: 6, first: t0, last: t0 + 8 * .day, executions: 1,
            lastExecution: t0 + 8 * .day)
        let clock = ManualClock(t0 + 9 * .day)
        let engine = try RuleEngine(
            source: "scenario AskToSubscribe < min_events 5; since_first 7d; max_exec 4; between 2d >", clock: clock)
        let report = engine.importWaitForIt(
            from: defaults, scenarios: ["AskToSubscribeScenario": "AskToSubscribe"])
        XCTAssertEqual(report.skipped, [])
        XCTAssertEqual(report.imported.count, 1)
        XCTAssertTrue(report.imported[0].hasPrefix("AskToSubscribeScenario -> scenario 'AskToSubscribe': 6 events"))
        // WaitForIt at t0+9d: the last execution is 1d old, not more than 2d: no.
        XCTAssertFalse(engine.canExecute("AskToSubscribe"))
        XCTAssertEqual(engine.explain("AskToSubscribe").reason, "between 2d: 1d left")
        // At t0+10d1h (past 2d, strictly, as WaitForIt needs): yes; and the count goes on.
        clock.set(t0 + 10 * .day + .hour)
        XCTAssertTrue(engine.canExecute("AskToSubscribe"))
        XCTAssertEqual(engine.count("AskToSubscribe"), 6, "the scenario's own stream carries the events")
        // Three more executions (1 imported + 3 = 4): WaitForIt's executions < 4 fails.
        for _ in 0..<3 {
            XCTAssertTrue(engine.tryToExecute("AskToSubscribe"))
            clock.advance(by: 3 * .day)
        }
        XCTAssertFalse(engine.canExecute("AskToSubscribe"))
        XCTAssertEqual(engine.explain("AskToSubscribe").reason, "max_exec 4: 4 so far")
    }

    func testWaitForItRunsOncePerStoreAndNeverTouchesThePeerKeys() throws {
        let defaults = suite()
        writeWaitForIt(defaults, "Review", events: 2, first: t0, last: t0 + .day, executions: 0, lastExecution: nil)
        writeWaitForIt(defaults, "Orphan", events: 1, first: t0, last: t0, executions: 0, lastExecution: nil)
        let before = defaults.dictionaryRepresentation().filter { $0.key.hasPrefix("net.pabloweb") }.count
        let store = InMemoryStore()
        let rules = "scenario Review < min_events 3 >\nscenario Tip < on tip_shown; min_events 1 >"
        var engine = try RuleEngine(source: rules, store: store, clock: ManualClock(t0 + 2 * .day))
        let mapping: [String: Scenario] = ["Review": "Review", "Orphan": "Gone", "NeverUsed": "Tip"]
        let first = engine.importWaitForIt(from: defaults, scenarios: mapping)
        XCTAssertFalse(first.fromEarlierRun)
        XCTAssertEqual(
            first.skipped,
            [
                "NeverUsed: no stored data (never triggered nor executed)",
                "Orphan: the rules have no scenario 'Gone'",
            ])
        XCTAssertEqual(engine.count("Review"), 2)
        // A new engine on the same store (the next launch): the marker makes it a no-op.
        writeWaitForIt(defaults, "Review", events: 50, first: t0, last: t0, executions: 0, lastExecution: nil)
        engine = try RuleEngine(source: rules, store: store, clock: ManualClock(t0 + 2 * .day))
        let second = engine.importWaitForIt(from: defaults, scenarios: mapping)
        XCTAssertTrue(second.fromEarlierRun)
        XCTAssertEqual(second.imported, first.imported)
        XCTAssertEqual(second.skipped, first.skipped)
        XCTAssertEqual(engine.count("Review"), 2, "nothing imported twice")
        let after = defaults.dictionaryRepresentation().filter { $0.key.hasPrefix("net.pabloweb") }.count
        XCTAssertEqual(before, after, "the peer's keys are left alone")
        XCTAssertEqual(defaults.integer(forKey: "net.pabloweb.WaitForIt.Review.eventsCount"), 50)
    }

    func testWaitForItSkipsAScenarioThatAlreadyHasHistory() throws {
        let defaults = suite()
        writeWaitForIt(defaults, "Review", events: 9, first: t0, last: t0, executions: 0, lastExecution: nil)
        let engine = try RuleEngine(source: "scenario Review < min_events 3 >")
        engine.trigger("Review")
        let report = engine.importWaitForIt(from: defaults, scenarios: ["Review": "Review"])
        XCTAssertEqual(report.skipped, ["Review: scenario 'Review' already has history in this store"])
        XCTAssertEqual(engine.count("Review"), 1)
    }

    func testEcnoTagsToDosAndVersionComeOver() throws {
        let defaults = suite()
        let update = t0 + 10 * .day
        defaults.set(
            [
                "tutorial": ["timestamps": [t0, t0 + .day]],
                "share": ["timestamps": [t0 + 2 * .day, update + .hour, update + 2 * .hour]],
            ], forKey: "com.xmartlabs.Ecno.Timestamps")
        let now = update + 3 * .hour
        defaults.set(
            [
                "rate": [
                    "scope": ["name": "until", "timeInterval": 3_600.0, "referenceDate": now - 600],
                    "info": ["source": "banner", "count": 3, "flag": true, "list": [1, 2]],
                ],
                "expired": ["scope": ["name": "until", "timeInterval": 60.0, "referenceDate": t0]],
                "plain": ["scope": ["name": "appInstall"]],
            ], forKey: "com.xmartlabs.Ecno.ToDo")
        defaults.set("2.0", forKey: "com.xmartlabs.Ecno.AppVersion")
        defaults.set(update, forKey: "com.xmartlabs.Ecno.LastAppUpdateTime")
        let clock = ManualClock(now)
        let engine = try RuleEngine(
            source: "scenario Rate < when todo(rate) and (count(share) >= 3) >\nscenario New < when upgraded >",
            clock: clock)
        let report = engine.importEcno(from: defaults)
        XCTAssertEqual(
            report.imported,
            [
                "app version '2.0' and its first launch", "tag 'share': 3 timestamps", "tag 'tutorial': 2 timestamps",
                "to-do 'plain' with 0 info values", "to-do 'rate' until its expiry with 3 info values",
            ])
        XCTAssertEqual(
            report.skipped, ["to-do 'expired': expired", "to-do 'rate': info 'list' (not a string, number or bool)"])
        XCTAssertTrue(engine.beenDone("tutorial", times: .exactly(2)))
        XCTAssertEqual(engine.lastDone("share"), update + 2 * .hour)
        XCTAssertTrue(engine.needToDo("rate"))
        XCTAssertEqual(engine.info(forToDo: "rate"), ["source": "banner", "count": "3", "flag": "1"])
        XCTAssertTrue(engine.canExecute("Rate"))
        // The version carries over: same version, same scope; its count is the peer's.
        engine.startSession(version: "2.0")
        XCTAssertEqual(engine.count(Event("share"), scope: .version), 2)
        XCTAssertEqual(engine.firstVersion, "2.0")
        XCTAssertFalse(engine.canExecute("New"), "not an update yet")
        clock.advance(by: 50 * .minute)
        XCTAssertFalse(engine.needToDo("rate"), "the until to-do expires when Ecno's would")
        engine.startSession(version: "2.1")
        XCTAssertTrue(engine.canExecute("New"), "an update from the imported version")
        XCTAssertTrue(engine.importEcno(from: defaults).fromEarlierRun)
    }
}
