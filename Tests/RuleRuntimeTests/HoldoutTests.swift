import Foundation
import RuleLang
import XCTest

@testable import RuleRuntime

/// `holdout N% "SALT"` (language 1.2): the control arm is never shown the scenario, records an
/// exposure each time it would have been, and keeps the shown arm's pacing.
final class HoldoutTests: XCTestCase {
    let rules = """
        # language 1.2
        scenario WinBack < on visit; min_events 1; max_exec 2; between 1h; holdout 10% "winback" >
        group Prompts < holdout 50% "prompts" > {
            scenario Tip < on visit >
        }
        scenario Other < on visit >
        """

    /// An engine whose install is in bucket `winback` of "winback" and `prompts` of "prompts".
    func engine(winback: Int, prompts: Int = 99, clock: ManualClock) throws -> RuleEngine {
        var options = RuleEngine.Options()
        options.bucketOverrides = ["winback": winback, "prompts": prompts]
        return try RuleEngine(source: rules, clock: clock, options: options)
    }

    func testTheControlArmIsNeverShownAndKeepsTheShownArmsPacing() throws {
        let start = Date(timeIntervalSince1970: 1_767_225_600)
        let (heldClock, shownClock) = (ManualClock(start), ManualClock(start))
        let held = try engine(winback: 9, clock: heldClock)
        let shown = try engine(winback: 10, clock: shownClock)
        XCTAssertTrue(held.isHeldOut("WinBack"))
        XCTAssertFalse(shown.isHeldOut("WinBack"))
        var answers: [[Bool]] = [[], []]
        for step in 0..<6 {
            for (k, engine) in [held, shown].enumerated() {
                engine.trigger("visit")
                answers[k].append(engine.tryToExecute("WinBack"))
            }
            heldClock.advance(by: 1_800)
            shownClock.advance(by: 1_800)
            _ = step
        }
        XCTAssertEqual(answers[0], [false, false, false, false, false, false], "never shown")
        XCTAssertEqual(answers[1], [true, false, true, false, false, false], "between 1h, then max_exec 2")
        // Exposures where the shown arm was shown, and the same executions.
        XCTAssertEqual(held.controlExposures(of: "WinBack"), 2)
        XCTAssertEqual(shown.controlExposures(of: "WinBack"), 0)
        XCTAssertEqual(held.executions(of: "WinBack"), shown.executions(of: "WinBack"))
        XCTAssertEqual(
            held.explain("WinBack").clauses.last?.description,
            "holdout 10% \"winback\": bucket 9: the control arm, never shown")
        XCTAssertEqual(shown.explain("WinBack").clauses.last?.description, "holdout 10% \"winback\": bucket 10: shown")
    }

    func testCanExecuteRecordsNothingAndPresentAndNextRecordAnExposure() throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_767_225_600))
        let held = try engine(winback: 0, prompts: 0, clock: clock)
        held.trigger("visit")
        XCTAssertFalse(held.canExecute("WinBack"))
        XCTAssertEqual(held.controlExposures(of: "WinBack"), 0, "canExecute records nothing")
        XCTAssertNil(held.present("WinBack"))
        XCTAssertEqual(held.controlExposures(of: "WinBack"), 1)
        // The group's holdout holds out its scenarios; executeNext goes on to the next one.
        XCTAssertTrue(held.isHeldOut("Tip"))
        XCTAssertEqual(held.executeNext(among: ["Tip", "Other"]), "Other")
        XCTAssertEqual(held.controlExposures(of: "Tip"), 1)
        XCTAssertFalse(held.isHeldOut("Other"))
    }

    func testTheInstallsIdPlacesIt() throws {
        // With no override, the bucket of the install's id decides.
        var options = RuleEngine.Options()
        for id in ["a", "b", "c", "d", "e", "f", "g", "h"] {
            options.installID = id
            let engine = try RuleEngine(source: rules, options: options)
            XCTAssertEqual(
                engine.isHeldOut("WinBack"), InstallBucket.bucket(salt: "winback", installID: id) < 10, id)
        }
    }

    func testTheFrontEnd() {
        func messages(_ body: String) -> [String] {
            RuleCompiler.check(text: "# language 1.2\nscenario A < \(body) >\n").diagnostics.map(\.message)
        }
        XCTAssertEqual(messages("holdout 10% \"x\""), [])
        XCTAssertEqual(messages("holdout 100% \"x\""), ["a holdout of 100% holds out every install: it never runs"])
        XCTAssertEqual(messages("holdout 0% \"x\""), ["a holdout of 0% holds out no install: it does nothing"])
        XCTAssertEqual(messages("holdout 10 \"x\""), ["expected '%' after the holdout's share, found '\"x\"'"])
        XCTAssertEqual(messages("holdout 10% \"\""), [], "an empty salt is a salt (its vector is published)")
        XCTAssertEqual(
            RuleCompiler.check(text: "scenario A < holdout 10% \"x\" >\n").diagnostics.map(\.id), [.languageVersion])
        let program = RuleCompiler.check(text: rules).program
        XCTAssertEqual(
            program.scenarios[0].decl.clauses.map { Printer.clause($0.kind) }.last, "holdout 10% \"winback\"")
    }

    /// The engine keeps each salt's bucket once hashed: asked twice, 40 salts answer as the
    /// hash itself says, and an override still wins.
    func testKeptBucketsEqualTheHash() throws {
        let salts = (0..<40).map { "salt-\($0)" }
        let source =
            "# language 1.2\n"
            + salts.enumerated().map { "scenario S\($0.offset) < holdout 50% \"\($0.element)\" >" }.joined(
                separator: "\n")
        var options = RuleEngine.Options()
        options.installID = "kept"
        options.bucketOverrides = ["salt-7": 99]
        let engine = try RuleEngine(source: source, options: options)
        for _ in 0..<2 {
            for (k, salt) in salts.enumerated() {
                let expected = k == 7 ? false : InstallBucket.bucket(salt: salt, installID: "kept") < 50
                XCTAssertEqual(engine.isHeldOut("S\(k)"), expected, salt)
            }
        }
    }

    /// A rename (`was`) takes the control exposures along, as grammar.md says.
    func testARenameKeepsTheExposures() throws {
        let store = InMemoryStore()
        var options = RuleEngine.Options()
        options.bucketOverrides = ["x": 0]
        let before = try RuleEngine(
            source: "# language 1.2\nscenario Old < holdout 50% \"x\" >", store: store, options: options)
        XCTAssertFalse(before.tryToExecute("Old"))
        XCTAssertEqual(before.controlExposures(of: "Old"), 1)
        let after = try RuleEngine(
            source: "# language 1.2\nscenario New was Old < holdout 50% \"x\" >", store: store, options: options)
        XCTAssertEqual(after.controlExposures(of: "New"), 1)
        XCTAssertEqual(after.executions(of: "New"), 1)
    }
}
