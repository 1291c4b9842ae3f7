import Foundation
import TestSupport
import XCTest

/// `rulec simulate --save`, `rulec state` and `rulec explain --state`.
final class StateCommandTests: XCTestCase {
    private func directory() throws -> URL { scratchFolder("state") }

    /// `rulec state` of the state `rulec simulate --save` leaves after `timeline` over `rules`,
    /// and its lines.
    private func savedState(_ rules: String, _ timeline: String, in directory: URL) throws -> (
        CommandResult, [String]
    ) {
        let state = directory.appendingPathComponent("device.state").path
        let simulated = try RulecBinary.run(["simulate", "--save", state, rules, timeline])
        XCTAssertEqual(simulated.status, 0, simulated.stderr)
        let result = try RulecBinary.run(["state", state])
        XCTAssertEqual(result.status, 0, result.stderr)
        return (result, result.stdout.split(separator: "\n").map(String.init))
    }

    private func write(_ text: String, _ name: String, in directory: URL) throws -> String {
        let url = directory.appendingPathComponent(name)
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    /// Language 1.2: outcomes listed as rules read them, the engine's own to-dos apart from the app's.
    func testStateListsOutcomesHoldsAndTheRunsMark() throws {
        let dir = try directory()
        let rules = try write(
            "# language 1.2\ngroup G < > {\n    scenario Rate < when since_last(crash) >= 0s >\n    scenario Tip < >\n}\n",
            "r.rules", in: dir)
        let timeline = try write(
            "0 launch 1.0\n0 present Tip\n1m finish Tip declined\n2m present Rate\n2m todo task\n", "t.timeline",
            in: dir)
        let (result, lines) = try savedState(rules, timeline, in: dir)
        XCTAssertTrue(
            lines.contains(
                "  Tip: declined: 1 event (first 2026-01-01T00:01:00Z, last 2026-01-01T00:01:00Z), 1 this session, "
                    + "1 this version"),
            result.stdout)
        XCTAssertTrue(lines.contains("to-dos (1):"), result.stdout)
        XCTAssertTrue(
            lines.contains(
                "showing: 'Rate' holds G since 2026-01-01T00:02:00Z until 2026-01-01T01:02:00Z"), result.stdout)
        XCTAssertTrue(
            lines.contains(
                "the app's run is in the foreground since 2026-01-01T00:00:00Z "
                    + "(a crash, if a later session finds it so with its process gone)"
            ), result.stdout)
    }

    /// The engine's own streams are listed as rules read them (`crash`, `purchase where amount >=
    /// 499`, `sum(purchase.amount)`), never by their stored names (`@where:purchase:...`).
    func testStateShowsTheEnginesStreamsAsRulesReadThem() throws {
        let dir = try directory()
        let rules = try write(
            "# language 1.2\nevent purchase(amount: int)\n"
                + "scenario Big < on purchase; min_events 1 where amount >= 499; when since_last(crash) >= 0s "
                + "and sum(purchase.amount) >= 0 >\n",
            "r.rules", in: dir)
        let timeline = try write(
            "0 launch 1.0\n0 trigger purchase amount=500\n1m crash\n", "t.timeline", in: dir)
        let (result, lines) = try savedState(rules, timeline, in: dir)
        for prefix in [
            "  purchase where amount >= 499: 1 event", "  crash: 1 event", "  sum(purchase.amount): a sum of 500",
        ] {
            XCTAssertTrue(lines.contains { $0.hasPrefix(prefix) }, "\(prefix) in\n\(result.stdout)")
        }
        XCTAssertFalse(result.stdout.contains("@"), result.stdout)
    }

    func testSimulateSavesAStateThatStateAndExplainRead() throws {
        let dir = try directory()
        let rules = try write(
            "event launch\nparam plan: string\nscenario Ask < on launch; min_events 3; between 1d >\n", "r.rules",
            in: dir)
        let timeline = try write(
            "0 launch 1.0\n0 trigger launch\n1h trigger launch\n2h trigger launch\n2h try Ask\n3h set plan pro\n"
                + "4h todo \"sale banner\" until 1d info source=home\n", "t.timeline", in: dir)
        let state = dir.appendingPathComponent("device.state").path
        var result = try RulecBinary.run(["simulate", "--save", state, rules, timeline])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "2h Ask yes\n")

        result = try RulecBinary.run(["state", state])
        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(
            lines.first,
            "session 1 (started 2026-01-01T00:00:00Z), version '1.0' (since 2026-01-01T00:00:00Z), "
                + "first version '1.0'")
        XCTAssertTrue(
            lines.contains(
                "  launch: 3 events (first 2026-01-01T00:00:00Z, last 2026-01-01T02:00:00Z), 3 this session, "
                    + "3 this version"), result.stdout)
        XCTAssertTrue(lines.contains("  plan = \"pro\""), result.stdout)
        XCTAssertTrue(
            lines.contains(
                "  \"sale banner\": added 2026-01-01T04:00:00Z, expires 2026-01-02T04:00:00Z, info source=home"),
            result.stdout)

        result = try RulecBinary.run(["state", "--json", state])
        XCTAssertEqual(result.status, 0)
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let streams = json?["streams"] as? [String: Any]
        XCTAssertEqual((streams?["launch"] as? [String: Any])?["total"] as? Int, 3)

        // At 2h30m, 'between 1d' holds it back; a day later it would run.
        result = try RulecBinary.run(["explain", rules, "--state", state, "Ask", "--at", "2026-01-01T02:30:00Z"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.hasPrefix("Ask: would not run\n"), result.stdout)
        XCTAssertTrue(result.stdout.contains("FAIL  between 1d: 23h 30m left"), result.stdout)
        XCTAssertTrue(result.stdout.contains("time-based clauses pass from 2026-01-02T02:00:00Z"), result.stdout)
        result = try RulecBinary.run(["explain", rules, "--state", state, "--at", "1767405600"])
        XCTAssertEqual(
            result.stdout, "Ask: would run\n  pass  min_events 3: 3 so far\n  pass  between 1d: last 2d ago\n")
        // The file is read, never changed.
        let before = try Data(contentsOf: URL(fileURLWithPath: state))
        _ = try RulecBinary.run(["explain", rules, "--state", state, "--at", "2030-01-01T00:00:00Z"])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: state)), before)
    }

    /// A state file that does not exist is wrong usage (64, with the `Usage:` line), as a missing
    /// path is for every command; `state` exited 1.
    func testAMissingStateFileIsWrongUsage() throws {
        let dir = try directory()
        let missing = dir.appendingPathComponent("nope.state").path
        let rules = try write("scenario S < >\n", "r.rules", in: dir)
        for arguments in [
            ["state", missing], ["explain", rules, "--state", missing], ["diff", "--state", missing, rules, rules],
        ] {
            let result = try RulecBinary.run(arguments)
            XCTAssertEqual(result.status, 64, "\(arguments)")
            XCTAssertTrue(result.stderr.contains("error: no such file: '\(missing)'"), result.stderr)
            XCTAssertTrue(result.stderr.contains("Usage:"), result.stderr)
        }
    }

    func testErrorsAreClear() throws {
        let dir = try directory()
        let rules = try write("scenario AskToSubscribe < max_exec 1 >\n", "r.rules", in: dir)
        let state = dir.appendingPathComponent("s.state").path
        XCTAssertEqual(
            try RulecBinary.run([
                "simulate", "--save", state, rules, try write("0 try AskToSubscribe\n", "t.timeline", in: dir),
            ]).status, 0)
        var result = try RulecBinary.run(["explain", rules, "--state", state, "AskToSubscibe"])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(
            result.stderr.contains("unknown scenario 'AskToSubscibe'; did you mean 'AskToSubscribe'?"), result.stderr)
        // A damaged file: the store's own error, located.
        var bytes = try Data(contentsOf: URL(fileURLWithPath: state))
        bytes[bytes.count / 2] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: state))
        result = try RulecBinary.run(["state", state])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.hasPrefix("\(state): error: "), result.stderr)
        result = try RulecBinary.run(["state", dir.appendingPathComponent("missing.state").path])
        XCTAssertEqual(result.status, 64, "a missing path is wrong usage, as for every command")
        XCTAssertTrue(result.stderr.contains("no such file"), result.stderr)
        XCTAssertEqual(try RulecBinary.run(["explain", rules]).status, 64)
        XCTAssertEqual(try RulecBinary.run(["explain", rules, "--state", state, "--at", "yesterday"]).status, 64)
        XCTAssertEqual(try RulecBinary.run(["state"]).status, 64)
    }
}
