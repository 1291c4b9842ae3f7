import RuleLang
import RuleTimeline
import TestSupport
import XCTest

/// The library form of `rulec simulate`, for apps' own tests.
final class TimelineRunnerTests: XCTestCase {
    let rules = SourceFile(
        path: "app.rules", text: "scenario Onboarding < on launch; max_exec 1 >\nscenario Ask < min_events 2 >")

    func testAppTestsReplayATimelineAndAssertTheAnswers() throws {
        let timeline = SourceFile(
            path: "t.timeline",
            text: "0 trigger launch\n0 try Onboarding\n1d try Onboarding\n2d trigger Ask\n2d try Ask\n")
        XCTAssertEqual(
            try TimelineRunner.replay(rules: [rules], timeline: timeline),
            ["0 Onboarding yes", "1d Onboarding no: max_exec 1: 1 so far", "2d Ask no: min_events 2: 1 so far"])
    }

    /// A `no` of an install held out records a control exposure (an execution): its reason is
    /// asked before the call. Before, it was asked after and named `between`, failing because of
    /// the exposure just recorded (found by `ClauseModelTests`).
    func testAHeldOutNoGivesTheReasonOfTheDecision() throws {
        XCTAssertLessThan(LanguageModel.bucket("x", TimelineRunner.installID), 99, "the install is held out")
        let rules = SourceFile(path: "h.rules", text: "# language 1.2\nscenario S < between 1h; holdout 99% \"x\" >\n")
        let timeline = SourceFile(path: "t.timeline", text: "0 try S\n")
        let lines = try TimelineRunner.replay(rules: [rules], timeline: timeline)
        XCTAssertEqual(lines.count, 1)
        XCTAssertTrue(lines[0].hasPrefix("0 S no: holdout 99% \"x\": bucket"), lines[0])
        XCTAssertFalse(lines[0].contains("between"), lines[0])
    }

    /// A presentation opened under a former name is finished by the name the swapped rules give
    /// it (the engine finds it so; the parser refused it until the model's conformance cases of
    /// language 1.3 met the case), and the contexts steps drive `in` and `not in`.
    func testAFinishByTheNameNowAndContextSteps() throws {
        let folder = scratchFolder("timeline-renamed")
        defer { try? FileManager.default.removeItem(at: folder) }
        let swapped = "# language 1.3\nscenario S2 was S < not in pin >\n"
        try swapped.write(to: folder.appendingPathComponent("b.rules"), atomically: true, encoding: .utf8)
        let rules = SourceFile(
            path: folder.appendingPathComponent("a.rules").path, text: "# language 1.3\nscenario S < >\n")
        let timeline = SourceFile(
            path: folder.appendingPathComponent("t.timeline").path,
            text:
                "0 present S\n1s rules b.rules\n2s finish S2 accepted\n3s enter pin\n4s try S2\n5s leave pin\n6s try S2\n"
        )
        XCTAssertEqual(
            try TimelineRunner.replay(rules: [rules], timeline: timeline),
            [
                "0 S shown", "1s rules b.rules: swapped", "2s finish S2 accepted", "4s S2 no: not in pin: in pin",
                "6s S2 yes",
            ])
    }

    /// `visible`, `hidden`, `background` and `foreground` (language 1.3's counted exposure): a
    /// launch is in the foreground; a step on a presentation not open is refused, located.
    func testVisibilitySteps() throws {
        let rules = SourceFile(path: "v.rules", text: "# language 1.3\nscenario B < counts after 3s visible >\n")
        let timeline = SourceFile(
            path: "t.timeline",
            text: "0 launch 1\n0 present B\n1s visible B\n2s background\n1m foreground\n1m1s check executions(B) == 0\n"
                + "1m2s check executions(B) == 1\n2m finish B accepted\n3m launch 2\n3m present B\n3m visible B\n"
                + "3m3s check executions(B) == 2\n")
        XCTAssertEqual(
            try TimelineRunner.replay(rules: [rules], timeline: timeline),
            [
                "0 B shown", "1m1s check true", "1m2s check true", "2m finish B accepted", "3m B shown",
                "3m3s check true",
            ])
        let unopened = SourceFile(path: "t.timeline", text: "0 visible B\n")
        XCTAssertThrowsError(try TimelineRunner.replay(rules: [rules], timeline: unopened)) { error in
            XCTAssertTrue("\(error)".contains("t.timeline:1:11: error: 'visible B' needs a 'present B'"), "\(error)")
        }
    }

    func testErrorsAreLocatedWithDistinctIDs() throws {
        let timeline = SourceFile(path: "t.timeline", text: "soon trigger launch\n0 tirgger launch\n")
        XCTAssertThrowsError(try TimelineRunner.replay(rules: [rules], timeline: timeline)) { error in
            let failure = error as? TimelineRunner.Failure
            XCTAssertEqual(failure?.diagnostics.map(\.id), [.invalidTime, .unknownStep])
            XCTAssertTrue("\(error)".contains("t.timeline:2:3: error: unknown step 'tirgger'"), "\(error)")
        }
    }

    /// A quoted property value is the string inside the quotes (spaces kept), and only a string:
    /// `plan="pro"` kept its quotes in the value before, silently.
    func testQuotedPropertyValuesAreStrings() throws {
        let rules = SourceFile(
            path: "p.rules",
            text: "# language 1.2\nevent purchase(plan: string, amount: int)\n"
                + "scenario Pro < on purchase; min_events 2 where plan == \"pro plus\" >\n")
        let timeline = SourceFile(
            path: "t.timeline",
            text: "0 trigger purchase plan=\"pro plus\" amount=1\n1m trigger purchase amount=2 plan=\"pro plus\"\n"
                + "2m try Pro\n2m check count(purchase where plan == \"pro plus\") == 2\n")
        XCTAssertEqual(
            try TimelineRunner.replay(rules: [rules], timeline: timeline), ["2m Pro yes", "2m check true"])
        // A quoted value is a string: an int property refuses it.
        let bad = SourceFile(path: "t.timeline", text: "0 trigger purchase amount=\"12\"\n")
        XCTAssertThrowsError(try TimelineRunner.replay(rules: [rules], timeline: bad)) { error in
            XCTAssertEqual((error as? TimelineRunner.Failure)?.diagnostics.map(\.id), [.typeMismatch], "\(error)")
            XCTAssertTrue("\(error)".contains("'\"12\"' is no int for property 'amount'"), "\(error)")
        }
    }

    /// Former names (`was`) are taken in every step as the engine takes them, and an event's
    /// former name is counted (under its new name): no "unknown scenario", no "uncounted" warning.
    func testFormerNamesAreTakenAsTheEngineTakesThem() throws {
        let rules = SourceFile(
            path: "p.rules",
            text: "# language 1.2\nevent open was launch\ngroup Modals was Prompts < > {\n"
                + "    scenario Rate was RateApp < on open; min_events 1 >\n}\n")
        let timeline = SourceFile(
            path: "t.timeline",
            text: "0 trigger launch\n0 present RateApp\n1m finish RateApp declined\n2m outcome RateApp later\n"
                + "3m reset Prompts\n3m try RateApp\n3m check count(open) == 1 and count(Rate: later) == 1\n")
        var parser = TimelineParser(file: timeline, program: RuleCompiler.check([rules]).program)
        _ = parser.parse()
        XCTAssertEqual(parser.diagnostics.map(\.message), [])
        XCTAssertEqual(
            try TimelineRunner.replay(rules: [rules], timeline: timeline),
            ["0 RateApp shown", "1m finish RateApp declined", "3m RateApp yes", "3m check true"])
    }

    /// `rulec simulate --help` lists every step the parser takes (it left out `info`, `rules`,
    /// `timezone` and a trigger's properties), and says that `launch` records no event.
    func testSimulateHelpListsEveryStep() throws {
        let help = try RulecBinary.run(["simulate", "--help"])
        XCTAssertEqual(help.status, 0)
        let listed = Set(
            help.stdout.split(separator: "\n").compactMap { line -> String? in
                let words = line.split(separator: " ")
                return line.hasPrefix("  ") && !words.isEmpty ? String(words[0]) : nil
            })
        for verb in TimelineParser.verbs { XCTAssertTrue(listed.contains(verb), "'\(verb)' is not in --help") }
        XCTAssertTrue(help.stdout.contains("trigger NAME PROP=VALUE"))
        XCTAssertTrue(help.stdout.contains("it records no event"))
    }

    /// The engine's own streams are never suggested nor taken for an app's event: `trigger crsh`
    /// suggested `@crash`, and `trigger @crash` (which the app's calls do not record) was accepted.
    func testTheEnginesOwnStreamsAreNotSuggested() throws {
        let rules = SourceFile(
            path: "p.rules", text: "# language 1.2\nevent open\nscenario S < on open; when since_last(crash) >= 1d >\n")
        let timeline = SourceFile(path: "t.timeline", text: "0 trigger crsh\n0 trigger @crash\n")
        var parser = TimelineParser(file: timeline, program: RuleCompiler.check([rules]).program)
        _ = parser.parse()
        let messages = parser.diagnostics.map(\.message)
        XCTAssertEqual(messages.count, 2, "\(messages)")
        XCTAssertFalse(messages.contains { $0.contains("@crash'?") }, "\(messages)")
        XCTAssertTrue(messages.contains { $0.contains("no rule counts event '@crash'") }, "\(messages)")
    }

    /// Language 1.2's steps: outcomes, presentations and crashes; bad ones located, none run.
    func testPromptStepsAndTheirErrors() throws {
        let prompts = SourceFile(
            path: "p.rules",
            text: "# language 1.2\ngroup G < > {\n    scenario A < when since_last(crash) >= 1d; after later 2d >\n"
                + "    scenario B < >\n}\n")
        let timeline = SourceFile(
            path: "t.timeline",
            text: """
                0 launch 1
                0 present A
                0 present B
                1m finish A later
                1m try B
                1d crash
                1d present A
                1d finish A accepted
                3d1m present A
                3d1m finish A dismissed
                3d1m check count(A: later) == 1 and count(A: dismissed) == 1 and count(crash) == 1
                """)
        XCTAssertEqual(
            try TimelineRunner.replay(rules: [prompts], timeline: timeline),
            [
                "0 A shown", "0 B no: showing: A is showing (for 0s; it ends when finished, or in 1h)",
                "1m finish A later", "1m B yes",
                "1d A no: when since_last(crash) >= 1d: false; after later 2d: later 23h 59m ago; 1d 1m left",
                "1d finish A: not showing", "3d1m A shown", "3d1m finish A dismissed", "3d1m check true",
            ])
        let bad = SourceFile(path: "t.timeline", text: "0 finish A later\n0 outcome A declind\n0 present Z\n")
        XCTAssertThrowsError(try TimelineRunner.replay(rules: [prompts], timeline: bad)) { error in
            let failure = error as? TimelineRunner.Failure
            XCTAssertEqual(failure?.diagnostics.map(\.id), [.notPresented, .unknownOutcome, .unknownScenario])
            XCTAssertTrue(
                "\(error)".contains(
                    "t.timeline:1:10: error: 'finish A' finishes nothing: no 'present A' before it is still open"),
                "\(error)")
            XCTAssertTrue("\(error)".contains("unknown outcome 'declind'; did you mean 'declined'?"), "\(error)")
        }
    }
}
