import RuleLang
import XCTest

/// `event` declarations: once a program declares events, every stream it names is checked.
final class EventDeclarationTests: XCTestCase {
    private func lines(_ texts: String...) -> [String] {
        let sources = texts.enumerated().map { SourceFile(path: "t\($0.offset).rules", text: $0.element) }
        return RuleCompiler.check(sources).diagnostics.map {
            "\($0.file.path):\($0.location): \($0.severity.rawValue): \($0.message)"
                + $0.fixIts.map { " [fix: \($0.replacement)]" }.joined()
        }
    }

    func testTable() {
        let cases: [(String, [String])] = [
            // No declaration: any stream, as before.
            ("scenario A < on episode_playd >", []),
            ("event launch\nscenario A < on launch; when (count(launch) > 1) and todo(launch) >", []),
            (
                "event launch, episode_played\nscenario A < on episode_playd, launch >",
                [
                    "t0.rules:2:17: error: unknown event 'episode_playd'; did you mean 'episode_played'? [fix: episode_played]"
                ]
            ),
            (
                "event launch, episode_queued\nscenario A < on launch; when (count(episod_queued) >= 1) and (since_first(episode_queued) >= 1d) >",
                [
                    "t0.rules:2:37: error: unknown event 'episod_queued'; did you mean 'episode_queued'? [fix: episode_queued]"
                ]
            ),
            (
                "event \"share sheet opened\"\nscenario A < on \"share sheet opend\" >",
                [
                    "t0.rules:2:17: error: unknown event 'share sheet opend'; did you mean 'share sheet opened'? [fix: \"share sheet opened\"]"
                ]
            ),
            // A scenario's own stream needs no declaration; todo() and since_last() are checked too.
            (
                "event x\nscenario A < on x >\nscenario B < on A; when todo(y) and (since_last(A) >= 1d) >",
                ["t0.rules:3:30: error: unknown event 'y'"]
            ),
            (
                "event launch, launch\nscenario A < on launch >",
                [
                    "t0.rules:1:15: warning: event 'launch' is declared twice"
                ]
            ),
            // `event` stays usable as a stream's name.
            ("scenario A < on event >", []),
            (
                "event x\nscenario A < on x >\nevent",
                ["t0.rules:3:1: error: expected 'scenario', 'group', 'param' or 'event', found 'event'"]
            ),
        ]
        for (source, expected) in cases {
            XCTAssertEqual(lines(source), expected, source)
        }
    }

    /// The event a misspelt use meant is not reported as unused as well (one diagnostic per mistake);
    /// an event no use is near still is.
    func testTheEventMeantIsNotAlsoUnused() {
        XCTAssertEqual(
            lines("event launch, shared\nscenario A < on lanch >"),
            [
                "t0.rules:1:15: warning: event 'shared' is declared but never used",
                "t0.rules:2:17: error: unknown event 'lanch'; did you mean 'launch'? [fix: launch]",
            ])
    }

    func testDeclarationsCountAcrossFiles() {
        XCTAssertEqual(lines("event launch", "scenario A < on launch >"), [])
        XCTAssertEqual(
            lines("event launch", "scenario A < on lanch >"),
            [
                "t1.rules:1:17: error: unknown event 'lanch'; did you mean 'launch'? [fix: launch]"
            ])
    }

    func testTheProgramListsItsEvents() {
        let program = RuleCompiler.check(text: "event a, \"b c\", a\nscenario S < on a, \"b c\" >").program
        XCTAssertEqual(program.events.map(\.text), ["a", "b c"])
    }
}
