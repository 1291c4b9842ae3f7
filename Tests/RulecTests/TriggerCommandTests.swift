import Foundation
import RuleRuntime
import TestSupport
import XCTest

/// `rulec trigger --state FILE [--count N] RULES... EVENT`.
final class TriggerCommandTests: XCTestCase {
    private func directory() throws -> URL { scratchFolder("trigger") }

    func testRecordsIntoAStateFileThatStateAndExplainRead() throws {
        let dir = try directory()
        let rules = dir.appendingPathComponent("r.rules").path
        try "event launch\nscenario Ask < on launch; min_events 3 >\n".write(
            toFile: rules, atomically: true, encoding: .utf8)
        let state = dir.appendingPathComponent("device.state").path
        var result = try RulecBinary.run(["trigger", "--state", state, "--count", "2", rules, "launch"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "launch: 2\n")
        // `--opt=value`, and `--` before operands.
        result = try RulecBinary.run(["trigger", "--state=\(state)", "--count=1", "--", rules, "launch"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "launch: 3\n")
        result = try RulecBinary.run(["explain", rules, "--state", state])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.hasPrefix("Ask: would run"), result.stdout)
        // The rules declare their events: a typo is an error, and the file is left as it was.
        let before = try Data(contentsOf: URL(fileURLWithPath: state))
        result = try RulecBinary.run(["trigger", "--state", state, rules, "lanch"])
        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertEqual(
            result.stderr,
            "error: unknown event 'lanch'; did you mean 'launch'? (the rules declare their events); nothing was written\n"
        )
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: state)), before)
        // ... and a file that did not exist is not made.
        let fresh = dir.appendingPathComponent("fresh.state").path
        result = try RulecBinary.run(["trigger", "--state", fresh, rules, "widget_tapp"])
        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: fresh))
        XCTAssertFalse(FileManager.default.fileExists(atPath: fresh + ".shm"))
    }

    /// Several processes on one shared file keep one install id: the first process whose rules
    /// read `bucket` makes it; later ones, and an app holding the file open, take it.
    /// `rulec trigger ... EVENT NAME=VALUE ...` records the event with its declared properties,
    /// each of its type; an unknown property or a value of another type is an error and nothing
    /// is written. Before, `purchase amount=999` read `purchase` as a rules file.
    func testTriggersCarryTheirProperties() throws {
        let dir = try directory()
        let rules = dir.appendingPathComponent("r.rules").path
        try """
        # language 1.2
        event purchase(amount: int, plan: string, trial: bool)
        scenario Big < on purchase; min_events 2 where amount >= 500 and plan == "pro plus" and not trial >
        """.write(toFile: rules, atomically: true, encoding: .utf8)
        let state = dir.appendingPathComponent("device.state").path
        var result = try RulecBinary.run(
            [
                "trigger", "--state", state, "--count", "2", rules, "purchase", "amount=999", "plan=pro plus",
                "trial=false",
            ])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "purchase: 2\n")
        result = try RulecBinary.run(["explain", rules, "--state", state])
        XCTAssertTrue(result.stdout.hasPrefix("Big: would run"), result.stdout)
        let before = try Data(contentsOf: URL(fileURLWithPath: state))
        for (pair, message) in [
            ("amount=lots", "error: 'lots' is no int for property 'amount'; nothing was written\n"),
            (
                "colour=red",
                "error: event 'purchase' has no property 'colour' (it has 'amount', 'plan', 'trial'); nothing was written\n"
            ),
        ] {
            result = try RulecBinary.run(["trigger", "--state", state, rules, "purchase", pair])
            XCTAssertEqual(result.status, 1, result.stderr)
            XCTAssertEqual(result.stderr, message)
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: state)), before, "nothing was written")
    }

    func testProcessesSharingAFileKeepOneInstallID() throws {
        let dir = try directory()
        let rules = dir.appendingPathComponent("b.rules").path
        try "# language 1.2\nscenario Offer < on visit; when (bucket(\"offer\") < 50) >\n".write(
            toFile: rules, atomically: true, encoding: .utf8)
        let state = dir.appendingPathComponent("device.state").path
        var id = ""
        do {
            let app = try RuleEngine(
                contentsOf: URL(fileURLWithPath: rules),
                store: FileStore(url: URL(fileURLWithPath: state), options: .init(shared: true)))
            id = try XCTUnwrap(app.installID)
            for _ in 0..<2 {
                XCTAssertEqual(try RulecBinary.run(["trigger", "--state", state, rules, "visit"]).status, 0)
            }
            app.trigger("visit")
            XCTAssertEqual(app.count("visit"), 3, "the app reads the other processes' events")
            XCTAssertEqual(app.installID, id)
        }
        // Read once no process holds the file (`rulec state` opens it alone).
        let shown = try RulecBinary.run(["state", state])
        XCTAssertEqual(
            shown.stdout.split(separator: "\n").filter { $0.hasPrefix("install id: ") }, ["install id: \(id)"],
            shown.stderr)
    }

    /// Without event declarations, an event no scenario counts is recorded, with a warning.
    func testAnUncountedEventIsRecordedWithAWarningWhenNoEventIsDeclared() throws {
        let dir = try directory()
        let rules = dir.appendingPathComponent("r.rules").path
        try "scenario Ask < on launch; min_events 3 >\n".write(toFile: rules, atomically: true, encoding: .utf8)
        let state = dir.appendingPathComponent("device.state").path
        let result = try RulecBinary.run(["trigger", "--state", state, rules, "lanch"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "lanch: 1\n")
        XCTAssertEqual(result.stderr, "warning: no scenario counts event 'lanch'; did you mean 'launch'?\n")
    }

    /// `explain` of a scenario no rule declares is an error with did-you-mean; a former name
    /// (`was`) is explained under the name it has now.
    func testExplainRefusesAnUnknownScenarioAndAnswersAFormerName() throws {
        let dir = try directory()
        let rules = dir.appendingPathComponent("r.rules").path
        try "# language 1.1\nscenario Subscribe was AskToSubscribe < min_events 3 >\n".write(
            toFile: rules, atomically: true, encoding: .utf8)
        let state = dir.appendingPathComponent("device.state").path
        XCTAssertEqual(try RulecBinary.run(["trigger", "--state", state, rules, "Subscribe"]).status, 0)
        var result = try RulecBinary.run(["explain", rules, "--state", state, "Subscrbe"])
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(result.stderr, "error: unknown scenario 'Subscrbe'; did you mean 'Subscribe'?\n")
        result = try RulecBinary.run(["explain", rules, "--state", state, "AskToSubscribe"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.hasPrefix("Subscribe (formerly AskToSubscribe): would not run"), result.stdout)
    }

    /// Beside an app that holds the file exclusively, `rulec trigger` (which opens it shared)
    /// fails with exit 1 naming the file and the mode, and writes nothing.
    func testFailsBesideAnExclusiveHolderAndWritesNothing() throws {
        let dir = try directory()
        let rules = dir.appendingPathComponent("r.rules").path
        try "scenario Ask < min_events 3 >\n".write(toFile: rules, atomically: true, encoding: .utf8)
        let state = dir.appendingPathComponent("app.state")
        let app = try RuleEngine(source: "scenario Ask < min_events 3 >", store: FileStore(url: state))
        for _ in 0..<10 { app.trigger("x") }
        let before = try Data(contentsOf: state)
        let result = try RulecBinary.run(["trigger", "--state", state.path, "--count", "50", rules, "x"])
        XCTAssertEqual(result.status, 1, result.stdout)
        XCTAssertTrue(
            result.stderr.contains("'\(state.path)'") && result.stderr.contains("open exclusively"), result.stderr)
        XCTAssertEqual(result.stdout, "")
        XCTAssertEqual(try Data(contentsOf: state), before)
        app.trigger("x")
        XCTAssertEqual(app.count("x"), 11)
        XCTAssertNil(app.lastStoreError)
    }

    func testMisuseAndBadStateFiles() throws {
        let dir = try directory()
        let rules = dir.appendingPathComponent("r.rules").path
        try "scenario Ask < min_events 3 >\n".write(toFile: rules, atomically: true, encoding: .utf8)
        let state = dir.appendingPathComponent("s.state").path
        for arguments in [
            ["trigger", rules, "launch"], ["trigger", "--state", state, "launch"], ["trigger", "--state"],
            ["trigger", "--state", state, "--count", "0", rules, "x"], ["trigger", "--stat", state, rules, "x"],
        ] {
            let result = try RulecBinary.run(arguments)
            XCTAssertEqual(result.status, 64, "\(arguments)")
            XCTAssertTrue(result.stderr.hasPrefix("error: "), result.stderr)
            XCTAssertTrue(result.stderr.contains("Usage: rulec trigger"), result.stderr)
        }
        let bad = dir.appendingPathComponent("bad.state").path
        try "not a state file".write(toFile: bad, atomically: true, encoding: .utf8)
        let result = try RulecBinary.run(["trigger", "--state", bad, rules, "x"])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("is corrupt at byte 0: not a rules state file"), result.stderr)
        XCTAssertEqual(try String(contentsOfFile: bad, encoding: .utf8), "not a state file", "left untouched")
        XCTAssertEqual(try RulecBinary.run(["trigger", "--help"]).status, 0)
    }
}
