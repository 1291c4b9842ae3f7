import Foundation
import RuleLang
import TestSupport
import XCTest

@testable import RuleRuntime

/// Presentations (one prompt at a time) and the crash stream (language 1.2), in one process and
/// across real processes sharing a state file.
final class PresentationTests: XCTestCase {
    let rules = """
        # language 1.2
        group Prompts < max_exec 5 > {
            scenario RateApp < after declined next version >
            scenario Subscribe < after later 1d >
        }
        scenario Tip < >
        """

    func testAPresentationHoldsItsGroupUntilFinished() throws {
        let (engine, clock) = try makeEngine(rules)
        let shown = try XCTUnwrap(engine.present("RateApp"))
        XCTAssertEqual(shown.scenario, "RateApp")
        XCTAssertTrue(try engine.check("executions(RateApp) == 1"), "presenting executes")
        XCTAssertFalse(engine.canExecute("Subscribe"))
        XCTAssertFalse(engine.tryToExecute("RateApp"))
        XCTAssertNil(engine.present("Subscribe"))
        XCTAssertNil(engine.executeNext(among: ["Subscribe", "RateApp"]))
        XCTAssertTrue(engine.canExecute("Tip"), "outside the group: not held")
        XCTAssertTrue(
            engine.explain("Subscribe").reason.hasPrefix("showing: RateApp is showing (for 0s;"),
            engine.explain("Subscribe").reason)
        XCTAssertEqual(engine.showing("Subscribe")?.scenario, "RateApp")
        clock.advance(by: 60)
        try engine.finish(shown, .declined)
        XCTAssertNil(engine.showing("Subscribe"))
        XCTAssertTrue(engine.canExecute("Subscribe"))
        XCTAssertFalse(engine.canExecute("RateApp"), "declined: quiet until the next version")
        XCTAssertTrue(try engine.check("count(RateApp: declined) == 1"))
    }

    func testFinishingTwiceIsAnErrorAndChangesNothing() throws {
        let store = InMemoryStore()
        let (engine, _) = try makeEngine(rules, store: store)
        let shown = try XCTUnwrap(engine.present("Subscribe"))
        try engine.finish(shown, .later)
        let before = try store.load()
        XCTAssertThrowsError(try engine.finish(shown, .accepted)) { error in
            XCTAssertEqual(
                "\(error)",
                "the presentation of 'Subscribe' is not open: it was finished already, or made by another engine")
        }
        XCTAssertEqual(try store.load(), before)
        XCTAssertTrue(try engine.check("count(Subscribe: later) == 1 and count(Subscribe: accepted) == 0"))
    }

    func testAPresentationLeftOpenExpiresAfterTheTimeoutAndStillTakesItsOutcome() throws {
        let clock = ManualClock()
        var options = RuleEngine.Options()
        options.presentationTimeout = 600
        let engine = try RuleEngine(source: rules, clock: clock, options: options)
        let shown = try XCTUnwrap(engine.present("RateApp"))
        clock.advance(by: 599)
        XCTAssertFalse(engine.canExecute("Subscribe"))
        XCTAssertEqual(engine.explain("Subscribe").earliest, shown.opened.addingTimeInterval(600))
        clock.advance(by: 1)
        XCTAssertTrue(engine.canExecute("Subscribe"))
        let second = try XCTUnwrap(engine.present("Subscribe"))
        // The first one's finish records its outcome and leaves the second's hold alone.
        try engine.finish(shown, .accepted)
        XCTAssertTrue(try engine.check("count(RateApp: accepted) == 1"))
        XCTAssertFalse(engine.canExecute("RateApp"), "Subscribe still shows")
        try engine.finish(second, .dismissed)
        XCTAssertTrue(engine.canExecute("RateApp"))
    }

    /// A presentation in one process holds the group in another; a process that dies with it
    /// open holds it until the timeout.
    func testAcrossProcessesAndAfterAProcessDies() throws {
        let url = temporaryURL("present.state")
        let child = try FixtureProcess(["present", url.path, "RateApp"], input: true)
        XCTAssertEqual(child.readLine(), "shown")
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let engine = try RuleEngine(
            source: promptRulesForTests, store: FileStore(url: url, options: .init(shared: true)), clock: clock)
        XCTAssertFalse(engine.canExecute("Subscribe"))
        XCTAssertNil(engine.present("Subscribe"))
        child.send("f later")
        XCTAssertEqual(child.readLine(), "finished")
        XCTAssertTrue(engine.canExecute("Subscribe"))
        XCTAssertTrue(try engine.check("count(RateApp: later) == 1"))
        // Another child presents and is killed before finishing.
        let dying = try FixtureProcess(["present", url.path, "Subscribe"], input: true)
        XCTAssertEqual(dying.readLine(), "shown")
        dying.kill()
        XCTAssertFalse(engine.canExecute("RateApp"))
        clock.advance(by: 3_599)
        XCTAssertFalse(engine.canExecute("RateApp"), "held until the default timeout, an hour")
        clock.advance(by: 1)
        XCTAssertTrue(engine.canExecute("RateApp"), "the dead process's hold ended with the timeout")
        child.kill()
    }

    /// A process built against older rules (language 1.0: no outcomes, no `crash`) shares the file
    /// with one on 1.2: the 1.2 process's presentation holds the group there too, and the outcome
    /// it records survives the older process's writes and its compaction.
    func testAProcessOnOlderRulesSharesTheHoldAndKeepsTheOutcomes() throws {
        let url = temporaryURL("older.state")
        let child = try FixtureProcess(["present", url.path, "RateApp"], input: true)
        XCTAssertEqual(child.readLine(), "shown")
        let older = "group Prompts < > {\n    scenario RateApp < >\n    scenario Subscribe < >\n}\n"
        let store = FileStore(url: url, options: .init(compactionThreshold: 512, shared: true))
        let engine = try RuleEngine(
            source: older, store: store, clock: ManualClock(Date(timeIntervalSince1970: 1_800_000_000)))
        XCTAssertFalse(engine.canExecute("Subscribe"), "held by the 1.2 process's presentation")
        child.send("f declined")
        XCTAssertEqual(child.readLine(), "finished")
        XCTAssertTrue(engine.canExecute("Subscribe"))
        for _ in 0..<200 { engine.trigger("x") }  // writes enough to compact
        store.waitForCompaction()
        engine.trigger("x")  // a shared compaction switches files at the next append
        XCTAssertGreaterThan(store.compactions, 0)
        child.kill()
        let newer = try RuleEngine(
            source: promptRulesForTests, store: FileStore(url: url, options: .init(shared: true)))
        XCTAssertTrue(try newer.check("count(RateApp: declined) == 1"))
    }

    /// Each way a run of the app can end, played by a real child process: only a run that ended
    /// in the foreground counts as a crash, recorded at the next launch.
    func testACrashIsARunThatEndedInTheForeground() throws {
        let cases: [(mode: String, killed: Bool, crash: Bool)] = [
            ("foreground", true, true), ("resumed", true, true), ("exit", false, true),
            ("suspended", true, false), ("clean", false, false),
        ]
        for (mode, killed, crash) in cases {
            let url = temporaryURL("run.state")
            let child = try FixtureProcess(["app-run", url.path, mode])
            if killed {
                XCTAssertEqual(child.readLine(), "ready", mode)
                child.kill()
            } else {
                _ = child.readToEnd()
            }
            let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
            let engine = try RuleEngine(
                source: promptRulesForTests, store: FileStore(url: url, options: .init(shared: true)), clock: clock)
            engine.startSession(version: "1")
            XCTAssertEqual(try engine.check("count(crash) == 1"), crash, mode)
            XCTAssertEqual(engine.canExecute("RateApp"), !crash, mode)
            if crash {
                XCTAssertEqual(engine.explain("RateApp").reason, "when since_last(crash) >= 3d: false", mode)
                clock.advance(by: 3 * 86_400)
                XCTAssertTrue(engine.canExecute("RateApp"), mode)
            }
            // This run ends cleanly: the next launch records nothing more.
            engine.prepareForSuspension()
            engine.startSession(version: "1")
            XCTAssertEqual(try engine.check("count(crash) == 1"), crash, mode)
        }
    }

    /// The run's mark belongs to the process that set it, played by real processes on one file:
    /// an extension's suspension leaves the app's mark (the app killed afterwards counts one
    /// crash), and a second process in the app's role (a Mac app and its helper) is told apart
    /// from a dead one: its mark counts no crash while it runs, is left alone by the other's
    /// suspension, and counts one once it is killed. Before, the extension cleared the app's mark
    /// and the second process counted the running one's mark as a crash.
    func testTheRunsMarkBelongsToItsProcess() throws {
        func engine(_ url: URL, _ role: ProcessRole) throws -> RuleEngine {
            var options = RuleEngine.Options()
            options.role = role
            return try RuleEngine(
                source: promptRulesForTests, store: FileStore(url: url, options: .init(shared: true)),
                clock: ManualClock(), options: options)
        }
        let url = temporaryURL("extension.state")
        var child = try FixtureProcess(["app-run", url.path, "foreground"])
        XCTAssertEqual(child.readLine(), "ready")
        let widget = try engine(url, .appExtension)
        widget.startSession(version: "1")
        widget.prepareForSuspension()
        child.kill()
        let app = try engine(url, .app)
        app.startSession(version: "1")
        XCTAssertTrue(try app.check("count(crash) == 1"), "the app killed after its extension's suspension")

        let shared = temporaryURL("two-apps.state")
        child = try FixtureProcess(["app-run", shared.path, "foreground"])
        XCTAssertEqual(child.readLine(), "ready")
        let mac = try engine(shared, .app)
        mac.startSession(version: "1")
        XCTAssertTrue(try mac.check("count(crash) == 0"), "the helper is running")
        mac.prepareForSuspension()
        mac.startSession(version: "1")
        XCTAssertTrue(try mac.check("count(crash) == 0"), "its mark is the helper's, still running")
        child.kill()
        mac.startSession(version: "1")
        XCTAssertTrue(try mac.check("count(crash) == 1"), "the helper was killed in the foreground")
        mac.startSession(version: "1")
        XCTAssertTrue(try mac.check("count(crash) == 1"), "counted once")
    }

    /// An engine keeps at most 64 presentations open: an app that never finishes them does not
    /// grow it, and the oldest can no longer be finished.
    func testOpenPresentationsAreBounded() throws {
        let (engine, clock) = try makeEngine(rules)
        var shown: [Presentation] = []
        for _ in 0..<65 {
            shown.append(try XCTUnwrap(engine.present("Tip")))
            clock.advance(by: 3_600)  // each one expires unfinished
        }
        XCTAssertEqual(engine.locked { $0.hooks.openPresentations.count }, 64)
        XCTAssertThrowsError(try engine.finish(shown[0], .later))
        XCTAssertNoThrow(try engine.finish(shown[1], .later))
        XCTAssertNoThrow(try engine.finish(shown[64], .accepted))
        XCTAssertTrue(try engine.check("count(Tip: later) == 1 and count(Tip: accepted) == 1"))
    }

    /// A second `startSession` in the same run (or a second engine in the process) is no crash.
    func testTheSameRunStartingAgainIsNoCrash() throws {
        let store = InMemoryStore()
        let (engine, _) = try makeEngine(promptRulesForTests, store: store)
        engine.startSession(version: "1")
        engine.startSession(version: "1")
        let again = try RuleEngine(source: promptRulesForTests, store: store, clock: ManualClock())
        again.startSession(version: "1")
        XCTAssertTrue(try engine.check("count(crash) == 0"))
        XCTAssertTrue(try again.check("count(crash) == 0"))
    }

    /// Rules swapped while a prompt shows, moving it to another group: finishing it lets go of
    /// the hold it took, and records its outcome under its scenario.
    func testASwapWhileShowingLetsGoOfTheHoldItTook() throws {
        let (engine, _) = try makeEngine(rules)
        let shown = try XCTUnwrap(engine.present("RateApp"))
        try engine.replaceRules(
            source: "# language 1.2\ngroup Other < > {\n    scenario RateApp < >\n}\nscenario Subscribe < >\n")
        XCTAssertNotNil(engine.locked { $0.todos["@showing:Prompts"] }, "the hold it took, under its old group")
        try engine.finish(shown, .accepted)
        XCTAssertTrue(engine.canExecute("RateApp"))
        XCTAssertTrue(try engine.check("count(RateApp: accepted) == 1"))
        XCTAssertNil(engine.locked { $0.todos["@showing:Prompts"] }, "the old group's hold is gone")
    }

    /// A rename moves a presentation's hold with its scenario or group: a prompt shown under the
    /// old names still holds once rules with `was` take over (a swap in the process, or an
    /// engine on the same file), and a prompt shown under the new names holds for an engine
    /// still on the old rules. Before, `present Rate` after `scenario Rate was RateApp` was
    /// shown with the first still open.
    func testARenameKeepsAPresentationsHold() throws {
        let renamed = """
            # language 1.2
            group Modals was Prompts < max_exec 5 > {
                scenario Rate was RateApp < after declined next version >
                scenario Subscribe < after later 1d >
            }
            scenario Hint was Tip < >
            """
        // A swap in the process, for a group and for a scenario of its own.
        let (engine, _) = try makeEngine(rules)
        let shown = try XCTUnwrap(engine.present("RateApp"))
        let tip = try XCTUnwrap(engine.present("Tip"))
        _ = try engine.replaceRules(source: renamed)
        XCTAssertNil(engine.present("Rate"), "held by RateApp's presentation")
        XCTAssertNil(engine.present("Subscribe"), "held by RateApp's presentation (the group's hold)")
        XCTAssertNil(engine.present("Hint"), "held by Tip's presentation")
        try engine.finish(shown, .accepted)
        try engine.finish(tip, .accepted)
        XCTAssertNotNil(engine.present("Subscribe"))
        XCTAssertNotNil(engine.present("Hint"))

        // Two engines on one shared file, one on each side of the rename.
        let url = temporaryURL("renamed-hold.state")
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let clock = ManualClock()
        let older = try RuleEngine(
            source: rules, store: FileStore(url: url, options: .init(shared: true)), clock: clock)
        let newer = try RuleEngine(
            source: renamed, store: FileStore(url: url, options: .init(shared: true)), clock: clock)
        let old = try XCTUnwrap(older.present("RateApp"))
        XCTAssertFalse(newer.canExecute("Rate"), "the older rules' presentation holds the renamed group")
        XCTAssertNil(newer.present("Subscribe"))
        try older.finish(old, .dismissed)
        let new = try XCTUnwrap(newer.present("Rate"))
        XCTAssertFalse(older.canExecute("RateApp"), "the newer rules' presentation holds the group's old name")
        XCTAssertNil(older.present("Subscribe"))
        let hint = try XCTUnwrap(newer.present("Hint"))
        XCTAssertNil(older.present("Tip"), "the newer rules' presentation holds the scenario's old name")
        try newer.finish(new, .accepted)
        try newer.finish(hint, .accepted)
        XCTAssertTrue(older.canExecute("Subscribe"))
        XCTAssertTrue(older.canExecute("Tip"))
    }

    /// The same across real processes: a process on the old rules shows a prompt, and one on
    /// rules that rename its group and scenario sees the hold; then the renaming process shows
    /// one, and a process started on the old rules is refused.
    func testARenameKeepsAPresentationsHoldAcrossProcesses() throws {
        let url = temporaryURL("renamed-processes.state")
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let renamed = """
            # language 1.2
            group Modals was Prompts < > {
                scenario Rate was RateApp < when since_last(crash) >= 3d; after declined next version >
                scenario Subscribe < after later 1d >
            }
            """
        let old = try FixtureProcess(["present", url.path, "RateApp"], input: true)
        XCTAssertEqual(old.readLine(), "shown")
        let engine = try RuleEngine(
            source: renamed, store: FileStore(url: url, options: .init(shared: true)),
            clock: ManualClock(Date(timeIntervalSince1970: 1_800_000_000)))
        XCTAssertFalse(engine.canExecute("Rate"), "held by the old rules' process")
        XCTAssertNil(engine.present("Subscribe"))
        old.send("f accepted")
        XCTAssertEqual(old.readLine(), "finished")
        old.kill()
        let shown = try XCTUnwrap(engine.present("Subscribe"))
        let older = try FixtureProcess(["present", url.path, "Subscribe"], input: true)
        XCTAssertEqual(older.readLine(), "refused", "held under the group's new name")
        older.kill()
        try engine.finish(shown, .accepted)
    }

    /// A hold stored without an expiry (a damaged file) holds nothing: a group is never held for good.
    func testAHoldWithoutAnExpiryHoldsNothing() throws {
        let hold = EngineState.change(
            todo: "@showing:Prompts", ToDoItem(created: 0, expires: nil, info: ["scenario": "RateApp", "token": "x"]))
        let store = InMemoryStore([hold.key: hold.value!])
        let (engine, _) = try makeEngine(rules, store: store)
        XCTAssertTrue(engine.canExecute("Subscribe"))
        XCTAssertNil(engine.showing("Subscribe"))
    }

    func testProblemsAreAStreamRulesRead() throws {
        let (engine, clock) = try makeEngine("# language 1.2\nscenario Ask < when since_last(problem) >= 1h >")
        XCTAssertTrue(engine.canExecute("Ask"))
        engine.recordProblem()
        XCTAssertFalse(engine.canExecute("Ask"))
        clock.advance(by: 3_600)
        XCTAssertTrue(engine.canExecute("Ask"))
        XCTAssertTrue(engine.unknownNames.isEmpty)
    }

    /// `clearAll` forgets the app's to-dos, not the engine's own marks.
    func testClearAllKeepsAnOpenPresentationAndTheRunsMark() throws {
        let (engine, _) = try makeEngine(rules)
        engine.startSession(version: "1")
        _ = try XCTUnwrap(engine.present("RateApp"))
        engine.toDo("task")
        engine.clearAll()
        XCTAssertFalse(engine.needToDo("task"))
        XCTAssertFalse(engine.canExecute("Subscribe"), "still showing")
    }
}

/// The fixture's `promptRules`.
let promptRulesForTests = """
    # language 1.2
    group Prompts < > {
        scenario RateApp < when since_last(crash) >= 3d; after declined next version >
        scenario Subscribe < after later 1d >
    }
    """
