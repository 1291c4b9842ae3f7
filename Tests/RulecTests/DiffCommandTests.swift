import Foundation
import RuleLang
import RuleRuntime
import RuleTools
import TestSupport
import XCTest

/// `rulec diff [--json] [--state FILE] OLD NEW`.
final class DiffCommandTests: XCTestCase {
    private func directory() throws -> URL { scratchFolder("diff") }

    private func findings(_ old: String, _ new: String) -> [Diagnostic] {
        let a = RuleCompiler.check(text: old, path: "old.rules")
        let b = RuleCompiler.check(text: new, path: "new.rules")
        XCTAssertFalse(a.hasErrors || b.hasErrors, "\(a.diagnostics) \(b.diagnostics)")
        return RuleDiff.compare(old: a.program, new: b.program)
    }

    /// A sum the old rules did not read (and a filtered `min_events`) starts from nothing too.
    func testASumAndAFilteredMinEventsReadForTheFirstTimeAreNoted() {
        let old =
            "# language 1.2\nevent purchase(amount: int), open\nscenario A < on open; when sum(purchase.amount) >= 1 >\n"
        let new = """
            # language 1.2
            event purchase(amount: int), open
            scenario A < on open; when sum(purchase.amount) >= 1 and sum(purchase.amount where amount >= 5 per session) >= 9 >
            scenario B < on purchase; min_events 2 where amount >= 7 >
            """
        let notes = findings(old, new).filter { $0.message.contains("for the first time") }.map(\.message)
        XCTAssertEqual(
            notes,
            [
                "'purchase.amount where amount >= 5' is read for the first time: it counts from these rules on (no trigger's properties were kept)",
                "'purchase where amount >= 7' is read for the first time: it counts from these rules on (no trigger's properties were kept)",
            ])
    }

    /// A filter over event properties that the old rules did not read starts from nothing: a note
    /// at its first use (spelt otherwise, one the old rules read is the same filter).
    func testAFilterReadForTheFirstTimeIsNoted() {
        let old =
            "# language 1.2\nevent purchase(amount: int), open\nscenario A < on open; when count(purchase where amount >= 10) >= 1 >\n"
        let new = """
            # language 1.2
            event purchase(amount: int), open
            scenario A < on open; when count(purchase where amount>=10) >= 1 and since_last(purchase where amount < 3) >= 1d >
            scenario B < on open; when count(purchase where amount < 3 within 7d) >= 2 >
            """
        let notes = findings(old, new).filter { $0.message.contains("for the first time") }
        XCTAssertEqual(
            notes.map(\.message),
            [
                "'purchase where amount < 3' is read for the first time: it counts from these rules on (no trigger's properties were kept)"
            ])
        XCTAssertEqual(notes.first?.severity, .note, "nothing is lost: the events were never filtered")
        let at = new.range(of: "since_last(purchase where amount < 3)")!.lowerBound
        XCTAssertEqual(notes.first?.span.range.lowerBound, new.utf8.distance(from: new.startIndex, to: at))
        XCTAssertTrue(
            RuleDiff.compare(old: RuleCompiler.check(text: new).program, new: RuleCompiler.check(text: new).program)
                .isEmpty)
    }

    func testTheReleaseExamplePairAsTheReadmeShowsIt() throws {
        let result = try RulecBinary.run(["diff", "examples/release/v1.rules", "examples/release/v2.rules"])
        XCTAssertEqual(result.status, 0, "a rename and a retirement lose no history")
        let lines = result.stdout.split(separator: "\n").filter { $0.hasPrefix("examples/") }
        XCTAssertEqual(
            lines,
            [
                "examples/release/v2.rules:6:10: note: scenario 'AskToSubscribe' renamed to 'Subscribe': its history moves with it",
                "examples/release/v2.rules:10:5: note: scenario 'Subscribe': 'max_exec 4' became 'max_exec 2': lowered from 4 to 2: users with 2 to 3 executions stop seeing it",
                "examples/release/v2.rules:14:1: note: scenario 'RateApp' retired: it answers no from now on; its history is kept, and the app may still call it",
                "examples/release/v2.rules:4:7: note: event 'launch' renamed to 'open': its history moves with it",
            ])
        XCTAssertEqual(result.stderr, "no history would be lost (4 changes)\n")
        let readme = try String(
            contentsOf: RulecBinary.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        for line in lines { XCTAssertTrue(readme.contains(line + "\n"), "the README shows: \(line)") }
        let json = try RulecBinary.run(["diff", "--json", "examples/release/v1.rules", "examples/release/v2.rules"])
        XCTAssertEqual(json.status, 0)
        let objects = try json.stdout.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        XCTAssertEqual(
            objects.map { $0["id"] as? String }, ["diff-renamed", "diff-changed", "diff-changed", "diff-renamed"])
    }

    func testAProbableRenameWithoutWasIsAWarningWithAFixIt() throws {
        let old = "scenario AskToSubscribe < min_events 5; max_exec 4 >\nscenario Rate < min_events 9 >\n"
        let new = "scenario Subscribe < min_events 5; max_exec 4 >\nscenario Rat < min_events 9 >\n"
        let found = findings(old, new)
        XCTAssertEqual(found.map(\.id), [.diffProbableRename, .diffProbableRename])
        XCTAssertEqual(
            found.map(\.message).first,
            "scenario 'Subscribe' looks like 'AskToSubscribe' renamed; without 'was AskToSubscribe' its users' history is orphaned"
        )
        XCTAssertEqual(found.last?.message.hasPrefix("scenario 'Rat' looks like 'Rate'"), true, "a close name")
        // Applying the fix-its (and declaring the language) leaves renames only: nothing is lost.
        var bytes = Array(new.utf8)
        for fix in found.flatMap(\.fixIts).sorted(by: { $0.range.lowerBound > $1.range.lowerBound }) {
            bytes.replaceSubrange(fix.range, with: Array(fix.replacement.utf8))
        }
        let fixed = "# language 1.1\n" + String(decoding: bytes, as: UTF8.self)
        let after = findings(old, fixed)
        XCTAssertEqual(after.map(\.id), [.diffRenamed, .diffRenamed])
        XCTAssertFalse(after.contains(where: RuleDiff.losesHistory))
    }

    /// An event renamed without `was` gets the probable-rename warning and fix-it scenarios get
    /// (it was only "removed"); applying the fix leaves a rename that loses nothing.
    func testAnEventRenamedWithoutWasIsAProbableRename() throws {
        let old = "event launch, shared\nscenario Ask < on launch; min_events 5 >\nscenario Invite < on shared >\n"
        let new =
            "event app_launch, shared\nscenario Ask < on app_launch; min_events 5 >\nscenario Invite < on shared >\n"
        // Also: the scenario counts another stream without `was`, so its view is rebuilt.
        let all = findings(old, new)
        XCTAssertEqual(all.map(\.id), [.diffChanged, .diffProbableRename], "\(all.map(\.message))")
        let found = all.filter { $0.id == .diffProbableRename }
        XCTAssertEqual(
            found.first?.message,
            "event 'app_launch' looks like 'launch' renamed; without 'was launch' its users' history is orphaned")
        var bytes = Array(new.utf8)
        for fix in found.flatMap(\.fixIts).sorted(by: { $0.range.lowerBound > $1.range.lowerBound }) {
            bytes.replaceSubrange(fix.range, with: Array(fix.replacement.utf8))
        }
        let fixed = "# language 1.1\n" + String(decoding: bytes, as: UTF8.self)
        XCTAssertTrue(fixed.contains("event app_launch was launch, shared"), fixed)
        let after = findings(old, fixed)
        XCTAssertEqual(after.map(\.id), [.diffRenamed])
        XCTAssertFalse(after.contains(where: RuleDiff.losesHistory))
        // The only event removed and the only one added pair up, however far apart their names.
        let open = findings("event launch\nscenario A < on launch >\n", "event open\nscenario A < on open >\n")
        XCTAssertEqual(open.map(\.id), [.diffChanged, .diffProbableRename])
    }

    func testEveryKindOfChangeIsNamedWithItsDirection() throws {
        let old = """
            param level: int = 0
            param gone: bool
            event a, b
            scenario Up < on a; min_events 5; max_exec 2 >
            scenario Down < on a; min_events 5 within 7d; between 2d; since_first 1d >
            scenario Mover < on b; min_events 1 >
            group G < max_exec 1 per session > {
                scenario Leaver < on b; min_events 1 >
            }
            """
        let new = """
            param level: string
            event a, b
            scenario Up < on a; min_events 8; max_exec 3 >
            scenario Down < on a, b; min_events 5 within 14d; between 1d >
            group G < max_exec 1 per session > {
                scenario Mover < on b; min_events 1 >
            }
            scenario Leaver < on b; min_events 1 >
            """
        let messages = findings(old, new).map(\.message)
        for expected in [
            "scenario 'Up': 'min_events 5' became 'min_events 8': raised from 5 to 8: users with 5 to 7 events wait for more",
            "scenario 'Up': 'max_exec 2' became 'max_exec 3': raised from 2 to 3: users who reached 2 executions see it again",
            "scenario 'Down': 'min_events 5 within 7d' became 'min_events 5 within 14d': window widened from 7d to 14d",
            "scenario 'Down': 'between 2d' became 'between 1d': shortened from 2d to 1d: users waiting see it sooner",
            "scenario 'Down': 'since_first 1d' removed",
            "scenario 'Down' counts other streams: its view is rebuilt from their history",
            "scenario 'Mover' moved into group 'G': the group's budget starts empty for it",
            "scenario 'Leaver' moved out of group 'G': the group's budget no longer limits it",
            "param 'level' changed type from 'int' to 'string': stored values are ignored",
            "param 'gone' removed: its users' history is orphaned",
        ] {
            XCTAssertTrue(messages.contains(expected), "missing: \(expected)\nin: \(messages)")
        }
        XCTAssertEqual(findings(old, old).count, 0, "no change, no finding")
        // A range of one number is the number ("users with 2 to 2 executions" before).
        XCTAssertTrue(
            findings("scenario S < max_exec 3 >", "scenario S < max_exec 2 >").map(\.message).contains(
                "scenario 'S': 'max_exec 3' became 'max_exec 2': lowered from 3 to 2: users with 2 executions stop seeing it"
            ))
    }

    /// Language 1.2's `after` clauses are paired by outcome and their change is named.
    func testOutcomeClausesArePairedByOutcome() throws {
        let old = "# language 1.2\nscenario A < after declined next version; after later 3d; after dismissed 1d >\n"
        let new = "# language 1.2\nscenario A < after declined never; after later 7d; after accepted never >\n"
        let messages = findings(old, new).map(\.message)
        for expected in [
            "scenario 'A': 'after declined next version' became 'after declined never': after 'declined' it now waits for good, not until the next version",
            "scenario 'A': 'after later 3d' became 'after later 7d': lengthened from 3d to 7d: users who answered 'later' wait longer",
            "scenario 'A': 'after accepted never' added",
            "scenario 'A': 'after dismissed 1d' removed",
        ] {
            XCTAssertTrue(messages.contains(expected), "missing: \(expected)\nin: \(messages)")
        }
    }

    func testStateSaysWhichAnswersChangeNowAndIsNotWritten() throws {
        let dir = try directory()
        let v1 = dir.appendingPathComponent("v1.rules").path
        let v2 = dir.appendingPathComponent("v2.rules").path
        try "scenario Ask < min_events 3 >\nscenario Same < min_events 1 >\n".write(
            toFile: v1, atomically: true, encoding: .utf8)
        try "scenario Ask < min_events 2 >\nscenario Same < min_events 1 >\n".write(
            toFile: v2, atomically: true, encoding: .utf8)
        let state = dir.appendingPathComponent("device.state").path
        XCTAssertEqual(try RulecBinary.run(["trigger", "--state", state, "--count", "2", v1, "Ask"]).status, 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: state))
        let result = try RulecBinary.run(["diff", "--state", state, v1, v2])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(
            result.stdout.hasSuffix("\(state): Ask: no now, yes with the new rules: min_events 3: 2 so far\n"),
            result.stdout)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: state)), before, "read, never written")
        // No change: said of the time asked ("now" even with `--at` before).
        let same = try RulecBinary.run(["diff", "--state", state, "--at", "2026-03-01T12:00:00Z", v1, v1])
        XCTAssertEqual(same.status, 0, same.stderr)
        XCTAssertTrue(same.stdout.hasSuffix("\(state): no answer changes at 2026-03-01T12:00:00Z\n"), same.stdout)
    }

    /// A renamed scenario is one line under its new name with its former name, the clause that
    /// changes the answer is named, `--at` asks at another time, and `--json` carries the same.
    func testStatePairsARenameAndNamesTheClause() throws {
        let dir = try directory()
        let v1 = dir.appendingPathComponent("v1.rules").path
        let v2 = dir.appendingPathComponent("v2.rules").path
        try "scenario Ask < max_exec 4; between 2d >\nscenario Gone < min_events 1 >\n".write(
            toFile: v1, atomically: true, encoding: .utf8)
        try "# language 1.2\nscenario Subscribe was Ask < max_exec 2; between 2d >\nretired scenario Gone\n".write(
            toFile: v2, atomically: true, encoding: .utf8)
        let state = dir.appendingPathComponent("device.state").path
        // Three executions, the last on 2026-01-01, and an event for Gone.
        do {
            let engine = try RuleEngine(
                source: "scenario Ask < max_exec 4 >\nscenario Gone < min_events 1 >",
                store: FileStore(url: URL(fileURLWithPath: state)),
                clock: ManualClock(Date(timeIntervalSince1970: 1_767_225_600)))
            for _ in 0..<3 { XCTAssertTrue(engine.tryToExecute("Ask")) }
            engine.trigger("Gone")
        }
        let now = try RulecBinary.run(["diff", "--state", state, "--at", "2026-01-02T00:00:00Z", v1, v2])
        XCTAssertEqual(now.status, 0, now.stderr)
        let lines = now.stdout.split(separator: "\n").filter { $0.hasPrefix(state) }
        XCTAssertEqual(
            lines,
            [
                "\(state): Gone: yes now, no with the new rules: retired: switched off by these rules; its history is kept"
            ], "within 2 days of the last execution both answer no: \(now.stdout)")
        let later = try RulecBinary.run(["diff", "--state", state, "--at", "1767571200", v1, v2])
        XCTAssertEqual(
            later.stdout.split(separator: "\n").filter { $0.hasPrefix(state) },
            [
                "\(state): Subscribe (formerly Ask): yes now, no with the new rules: max_exec 2: 3 so far",
                "\(state): Gone: yes now, no with the new rules: retired: switched off by these rules; its history is kept",
            ])
        let json = try RulecBinary.run(["diff", "--json", "--state", state, "--at", "1767571200", v1, v2])
        let objects = try json.stdout.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }.filter { $0["state"] != nil }
        XCTAssertEqual(objects.first?["scenario"] as? String, "Subscribe")
        XCTAssertEqual(objects.first?["formerly"] as? String, "Ask")
        XCTAssertEqual(objects.first?["reason"] as? String, "max_exec 2: 3 so far")
        XCTAssertEqual(try RulecBinary.run(["diff", "--at", "now", "--state", state, v1, v2]).status, 64)
        XCTAssertEqual(try RulecBinary.run(["diff", "--at", "1767571200", v1, v2]).status, 64)
    }

    func testMisuse() throws {
        for arguments in [
            ["diff"], ["diff", "examples/release/v1.rules"], ["diff", "--stat", "a", "b"],
            ["diff", "examples/release/v1.rules", "examples/release/v2.rules", "examples/app.rules"],
            ["diff", "--state"], ["diff", "examples/release/v1.rules", "missing.rules"],
        ] {
            let result = try RulecBinary.run(arguments)
            XCTAssertEqual(result.status, 64, "\(arguments): \(result.stderr)")
            XCTAssertTrue(result.stderr.hasPrefix("error: "), result.stderr)
        }
    }
}

/// `rulec seal [--write] FILE`.
final class SealCommandTests: XCTestCase {
    func testSealAddsOneLastLineOnceAndRefusesBadRules() throws {
        let dir = scratchFolder("diff")
        let file = dir.appendingPathComponent("v2.rules").path
        let text = "scenario A < min_events 1 >"  // no final newline: the seal adds one first
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        let sealed = try RulecBinary.run(["seal", file])
        XCTAssertEqual(sealed.status, 0, sealed.stderr)
        let lines = sealed.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        XCTAssertEqual(lines.first.map(String.init), text)
        let seal = String(lines[1])
        XCTAssertTrue(seal.hasPrefix("# sealed crc32=") && seal.hasSuffix(" bytes=\(text.utf8.count + 1)"), seal)
        XCTAssertEqual(seal.count, "# sealed crc32=12345678 bytes=28".count)
        // --write rewrites the file; sealing again replaces the seal with the same one.
        XCTAssertEqual(try RulecBinary.run(["seal", "--write", "--", file]).status, 0)
        XCTAssertEqual(try String(contentsOfFile: file, encoding: .utf8), sealed.stdout)
        XCTAssertEqual(try RulecBinary.run(["seal", file]).stdout, sealed.stdout)
        try "scenario A < min_event 1 >\n".write(toFile: file, atomically: true, encoding: .utf8)
        XCTAssertEqual(try RulecBinary.run(["seal", file]).status, 1)
        XCTAssertEqual(try RulecBinary.run(["seal", "--writ", file]).status, 64)
        XCTAssertEqual(try RulecBinary.run(["seal"]).status, 64)
    }

    /// A sealed file edited (lines added after its seal) and sealed again has exactly one seal
    /// line, its last: a download cut right after the old seal would otherwise pass as the
    /// older rules.
    func testSealingAnEditedSealedFileLeavesOneSeal() throws {
        let dir = scratchFolder("diff")
        let file = dir.appendingPathComponent("v3.rules").path
        try "scenario A < min_events 1 >\n".write(toFile: file, atomically: true, encoding: .utf8)
        XCTAssertEqual(try RulecBinary.run(["seal", "--write", file]).status, 0)
        let once = try String(contentsOfFile: file, encoding: .utf8)
        try (once + "scenario B < min_events 2 >\n").write(toFile: file, atomically: true, encoding: .utf8)
        XCTAssertEqual(try RulecBinary.run(["seal", "--write", file]).status, 0)
        let twice = try String(contentsOfFile: file, encoding: .utf8)
        let lines = twice.split(separator: "\n")
        XCTAssertEqual(lines.filter { $0.hasPrefix("# sealed ") }.count, 1, twice)
        XCTAssertTrue(lines.last?.hasPrefix("# sealed ") == true, twice)
        XCTAssertEqual(Array(lines.dropLast()), ["scenario A < min_events 1 >", "scenario B < min_events 2 >"])
    }
}
