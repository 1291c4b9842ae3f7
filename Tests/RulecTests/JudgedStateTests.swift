import Foundation
import RuleLang
import TestSupport
import XCTest

@testable import RuleRuntime

/// The tools judge a state file as the engine that wrote it did: its install id and time zone
/// (kept in the state, or given), times in one zone with its offset, warnings where they guess.
final class JudgedStateTests: XCTestCase {
    let rules = "# language 1.2\nscenario Offer < on visit; during 09:00-17:00; holdout 50% \"offer\" >\n"
    /// 2026-01-01T01:00:00Z: 10:00 in Tokyo, 01:00 in UTC.
    let start = Date(timeIntervalSince1970: 1_767_229_200)

    /// A state file written by an app in Tokyo (its id made by the engine); the rules' path, the
    /// state's path and the install's id.
    func deviceState() throws -> (rules: String, state: String, id: String) {
        let dir = scratchFolder("state")
        let rules = dir.appendingPathComponent("app.rules").path
        try self.rules.write(toFile: rules, atomically: true, encoding: .utf8)
        let state = dir.appendingPathComponent("device.state")
        let engine = try RuleEngine(
            source: self.rules, store: try FileStore(url: state), clock: ManualClock(start),
            options: RuleEngine.Options(logSubsystem: nil, timeZone: TimeZone(identifier: "Asia/Tokyo")))
        engine.startSession(version: "1.0")
        engine.trigger("visit")
        let id = try XCTUnwrap(engine.installID)
        return (rules, state.path, id)
    }

    func testExplainJudgesInTheStatesZoneAndInstallOrAsGiven() throws {
        let (rules, state, id) = try deviceState()
        let shown = InstallBucket.bucket(salt: "offer", installID: id) >= 50
        let at = "2026-01-01T01:00:00Z"
        var result = try RulecBinary.run(["explain", rules, "--state", state, "--at", at])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "")
        XCTAssertTrue(result.stdout.hasPrefix("Offer: would \(shown ? "" : "not ")run"), result.stdout)
        XCTAssertTrue(
            result.stdout.contains("during 09:00-17:00: local time 10:00"), "the state's zone: \(result.stdout)")
        // Another zone, given: the window is closed there, and the earliest time prints in that zone.
        result = try RulecBinary.run(["explain", rules, "--state", state, "--at", at, "--time-zone", "Europe/Paris"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("local time 02:00; opens at 09:00"), result.stdout)
        if shown {
            XCTAssertTrue(result.stdout.contains("pass from 2026-01-01T09:00:00+01:00"), result.stdout)
        }
        // Another install, given: placed by its own bucket.
        let other = (0..<200).map { "qa-\($0)" }.first {
            (InstallBucket.bucket(salt: "offer", installID: $0) >= 50) != shown
        }!
        result = try RulecBinary.run(["explain", rules, "--state", state, "--at", at, "--install-id", other])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.hasPrefix("Offer: would \(shown ? "not " : "")run"), result.stdout)
        XCTAssertEqual(
            try RulecBinary.run(["explain", rules, "--state", state, "--time-zone", "Mars/Base"]).status, 64)
        // Earlier than the state's last record: said.
        result = try RulecBinary.run(["explain", rules, "--state", state, "--at", "2025-12-31T00:00:00Z"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(
            result.stderr.contains(
                "warning: --at 2025-12-31T09:00:00+09:00 is earlier than the state's last record "
                    + "(2026-01-01T10:00:00+09:00)"),
            result.stderr)
    }

    func testAStateWithoutAnInstallIDIsSaidToBeGuessed() throws {
        let dir = scratchFolder("state")
        let rules = dir.appendingPathComponent("app.rules").path
        try self.rules.write(toFile: rules, atomically: true, encoding: .utf8)
        let state = dir.appendingPathComponent("old.state")
        // Written by rules that place nobody: no id is made (the engine lets go of the file after).
        do {
            let engine = try RuleEngine(
                source: "scenario Offer < on visit >", store: try FileStore(url: state), clock: ManualClock(start))
            engine.trigger("visit")
            XCTAssertNil(engine.installID)
        }
        var result = try RulecBinary.run(["explain", rules, "--state", state.path])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stderr.contains("warning: the state holds no install id"), result.stderr)
        result = try RulecBinary.run(["explain", rules, "--state", state.path, "--install-id", "qa-1"])
        XCTAssertEqual(result.stderr, "")
        result = try RulecBinary.run(["diff", rules, rules, "--state", state.path])
        XCTAssertTrue(result.stderr.contains("warning: the state holds no install id"), result.stderr)
        result = try RulecBinary.run(["diff", rules, rules, "--install-id", "qa-1"])
        XCTAssertEqual(result.status, 64, "--install-id needs --state")
    }

    func testStatePrintsTheZoneAndItsTimesInIt() throws {
        let (_, state, _) = try deviceState()
        var result = try RulecBinary.run(["state", state])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("time zone: Asia/Tokyo\n"), result.stdout)
        XCTAssertTrue(result.stdout.contains("(started 2026-01-01T10:00:00+09:00)"), result.stdout)
        result = try RulecBinary.run(["state", state, "--time-zone", "UTC"])
        XCTAssertTrue(result.stdout.contains("(started 2026-01-01T01:00:00Z)"), result.stdout)
    }

    /// The zone is kept when a session starts and when the app sets it, and read back.
    func testTheEngineKeepsItsZoneInTheState() throws {
        let store = InMemoryStore()
        let engine = try RuleEngine(
            source: "scenario A < on x >", store: store, clock: ManualClock(start),
            options: RuleEngine.Options(logSubsystem: nil, timeZone: TimeZone(identifier: "Asia/Tokyo")))
        XCTAssertNil(try StateSnapshot(entries: try store.load()).timeZone, "nothing before a session")
        engine.startSession(version: "1")
        XCTAssertEqual(try StateSnapshot(entries: try store.load()).timeZone, "Asia/Tokyo")
        engine.timeZone = TimeZone(identifier: "America/Denver")!
        XCTAssertEqual(try StateSnapshot(entries: try store.load()).timeZone, "America/Denver")
    }

    /// `count` and `lastDone` of `crash` and `problem` read the engine's streams, as `rulec
    /// state` shows them (they answered 0 and nil).
    func testReadsOfTheEnginesStreamsByTheirWords() throws {
        let engine = try RuleEngine(
            source: "# language 1.2\nscenario A < when since_last(crash) >= 1d >", clock: ManualClock(start))
        engine.relaunchAfterCrash()
        engine.recordProblem()
        XCTAssertEqual(engine.count("crash"), 1)
        XCTAssertEqual(engine.count("problem"), 1)
        XCTAssertEqual(engine.lastDone("crash"), start)
        // Rules of their own `crash` event (before language 1.2) keep it.
        let own = try RuleEngine(source: "event crash\nscenario A < on crash >", clock: ManualClock(start))
        own.trigger("crash")
        own.trigger("crash")
        XCTAssertEqual(own.count("crash"), 2)
    }
}
