import Foundation
import TestSupport
import XCTest

final class SimulateCommandTests: XCTestCase {
    func testJSONLines() throws {
        let result = try RulecBinary.run([
            "simulate", "--json", "examples/seeds/waitforit_share.rules",
            "examples/seeds/waitforit_share.timeline",
        ])
        XCTAssertEqual(result.status, 0)
        let objects = try result.stdout.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        XCTAssertEqual(objects.count, 4)
        XCTAssertEqual(objects[1]["time"] as? String, "3d")
        XCTAssertEqual(objects[1]["seconds"] as? Int, 259_200)
        XCTAssertEqual(objects[1]["result"] as? String, "no")
        XCTAssertEqual(objects[1]["reason"] as? String, "since_last 4d: 2d left; between 4d: 1d left")
        XCTAssertEqual(objects[3]["step"] as? String, "check")
        XCTAssertEqual(objects[3]["result"] as? String, "true")
    }

    private func simulate(_ rules: String, _ timeline: String, _ extra: [String] = []) throws -> CommandResult {
        TemporaryFiles.watch()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sim-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try rules.write(to: directory.appendingPathComponent("r.rules"), atomically: true, encoding: .utf8)
        try timeline.write(to: directory.appendingPathComponent("t.timeline"), atomically: true, encoding: .utf8)
        return try RulecBinary.run(
            ["simulate"] + extra + [
                directory.appendingPathComponent("r.rules").path, directory.appendingPathComponent("t.timeline").path,
            ])
    }

    /// `--check` compares the output with the timeline's `#> ` lines: silent and 0 when they
    /// agree; the first difference located at its `#> ` line, both lists from there, and 1 when
    /// they do not (a wrong `#>` line exited 0 before: nothing read them).
    func testCheckComparesTheOutputWithTheExpectedLines() throws {
        let rules = "scenario Ask < min_events 2 >\n"
        let right =
            "0 trigger Ask\n0 try Ask\n#> 0 Ask no: min_events 2: 1 so far\n1h trigger Ask\n1h try Ask\n#> 1h Ask yes\n"
        var result = try simulate(rules, right, ["--check"])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertEqual(result.stdout, "")
        let wrong = right.replacingOccurrences(of: "#> 1h Ask yes", with: "#> 1h Ask no")
        result = try simulate(rules, wrong, ["--check"])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stdout.contains("t.timeline:6:1: error: the output differs"), result.stdout)
        XCTAssertTrue(result.stdout.hasSuffix("expected:\n  1h Ask no\nactual:\n  1h Ask yes\n"), result.stdout)
        // A step's output with no `#>` line, and a `#>` line with no output, differ too.
        result = try simulate(rules, "0 try Ask\n", ["--check"])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stdout.contains("after its last"), result.stdout)
        XCTAssertEqual(try simulate(rules, right, ["--check", "--json"]).status, 64)
    }

    func testUncountedEventWarnsOnStandardErrorAndTheSimulationRuns() throws {
        let result = try simulate(
            "event launch, shared\nscenario Ask < on launch; min_events 1 >\nscenario Own < min_events 1 >",
            """
            0 trigger lanch
            0 done "shared"
            0 trigger Own
            1h trigger "nothing like it"
            2h try Ask
            """)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "2h Ask no: min_events 1: 0 so far\n")
        let warnings = result.stderr.split(separator: "\n").filter { $0.contains("warning:") }.map {
            String($0.split(separator: "/").last!)
        }
        XCTAssertEqual(
            warnings,
            [
                "t.timeline:1:11: warning: no rule counts event 'lanch'; did you mean 'launch'?",
                "t.timeline:4:12: warning: no rule counts event 'nothing like it'",
            ])
        XCTAssertTrue(result.stderr.contains("= fix: replace 'lanch' with 'launch'"), result.stderr)
    }

    func testTryOfAnUnknownScenarioIsAnErrorWithDidYouMean() throws {
        let result = try simulate("scenario AskToSubscribe < max_exec 1 >", "0 try AskToSubscibe\n")
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(
            result.stdout.contains(
                "t.timeline:1:7: error: unknown scenario 'AskToSubscibe'; did you mean 'AskToSubscribe'?"),
            result.stdout)
    }

    func testBadTimelineLinesAreLocatedErrors() throws {
        let result = try simulate(
            "scenario Ask < max_exec 1 >\nparam n: int",
            """
            0 launch 1.0
            1x try Ask
            0 tri Ask
            0 try Aks
            0 set n many
            0 check count(a) > n2
            0 launch
            """)
        XCTAssertEqual(result.status, 1)
        let errors = result.stdout.split(separator: "\n").filter { $0.contains(": error: ") }.map {
            String($0.split(separator: "/").last!)
        }
        XCTAssertEqual(
            errors,
            [
                "t.timeline:2:1: error: invalid time '1x'; a time is an offset from the start such as '0', '90s' or '1d12h'",
                "t.timeline:3:3: error: unknown step 'tri'; did you mean 'try'?",
                "t.timeline:4:7: error: unknown scenario 'Aks'; did you mean 'Ask'?",
                "t.timeline:5:9: error: 'many' is not an 'int'; param 'n' takes a whole number",
                "t.timeline:6:20: error: unknown param 'n2'",
                "t.timeline:7:9: error: expected an app version after 'launch'",
            ])
    }

    func testTimeMayGoBackwards() throws {
        let result = try simulate(
            "scenario S < between 1d >",
            """
            10d try S
            0   try S      # the clock was set back
            11d try S
            """)
        XCTAssertEqual(result.stdout, "10d S yes\n0 S no: between 1d: 1d left\n11d S yes\n")
    }

    func testRuleErrorsAndMisuse() throws {
        let bad = try simulate("scenario S < min_event 1 >", "0 try S")
        XCTAssertEqual(bad.status, 1)
        XCTAssertTrue(bad.stdout.contains("r.rules:1:14: error: unknown clause 'min_event'"), bad.stdout)
        let misuse = try RulecBinary.run(["simulate", "examples/app.rules"])
        XCTAssertEqual(misuse.status, 64)
        XCTAssertTrue(misuse.stderr.contains("Usage: rulec simulate"))
    }
}
