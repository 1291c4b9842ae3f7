import RuleLang
import XCTest

/// Table-driven checker tests: source in, exact `line:col: severity: message` lines out.
final class CheckerTests: XCTestCase {
    private func lines(_ text: String) -> [String] {
        RuleCompiler.check(text: text, path: "t.rules").diagnostics.map {
            "\($0.location): \($0.severity.rawValue): \($0.message)"
        }
    }

    func testCleanPrograms() {
        XCTAssertEqual(lines("scenario AskToSubscribe < min_events 5; since_first 7d; max_exec 4; between 2d >"), [])
        XCTAssertEqual(
            lines(
                """
                param on_: bool
                param p: duration = 1h
                group G < max_exec 1 within 1d; between 2h; when on_ > { scenario A < > scenario B < > }
                param zero: duration = 0
                scenario C < when (executions(G per session) < 1) and since_last(x) >= p and todo("t") >
                """
            ), [])
    }

    /// The checker reuses its per-body tables: nothing one body holds may leak into the next.
    func testEachBodyIsCheckedOnItsOwn() {
        let body = "< on a, b; min_events 3; max_events 2; since_first 1d; between 2h; priority 1 >"
        XCTAssertEqual(
            lines("scenario A \(body)\nscenario B \(body)\nscenario C < on b, a; min_events 1; since_first 2d >"),
            [
                "1:23: error: 'min_events 3' and 'max_events 2' can never both hold per install; the scenario never runs",
                "2:23: error: 'min_events 3' and 'max_events 2' can never both hold per install; the scenario never runs",
            ])
    }

    func testTable() {
        let cases: [(String, [String])] = [
            (
                "scenario A < min_event 5 >",
                ["1:14: error: unknown clause 'min_event'; did you mean 'min_events' or 'max_events'?"]
            ),
            ("scenario A < since_first 604800 >", ["1:26: error: a duration needs a unit; '604800' seconds is '7d'"]),
            (
                "scenario A < when count(x) > 3 >",
                ["1:28: error: '>' is a comparison only inside parentheses; a bare '>' closes the scenario"]
            ),
            ("scenario A < when (count(x) > 3) >", []),
            ("scenario A < when since_last(x) >= 3 >", ["1:19: error: cannot compare 'duration' with 'int'"]),
            ("scenario A < when count(x) >", ["1:19: error: 'when' needs a bool condition; this is 'int'"]),
            ("scenario A < when cnt(x) == 1 >", ["1:19: error: unknown function 'cnt'; did you mean 'count'?"]),
            ("param flag: bool\nscenario A < when flga >", ["2:19: error: unknown param 'flga'; did you mean 'flag'?"]),
            ("scenario A < when executions(B) == 1 >", ["1:30: error: unknown scenario 'B'"]),
            (
                "scenario A < when since_first(x per session) >= 1d >",
                ["1:33: error: 'since_first' takes no scope; only 'count' and 'executions' do"]
            ),
            (
                "scenario A < min_events 5; max_events 3 >",
                [
                    "1:14: error: 'min_events 5' and 'max_events 3' can never both hold per install; the scenario never runs"
                ]
            ),
            ("scenario A < min_events 5 per session; max_events 3 within 1d >", []),  // scopes that do not nest
            ("scenario A < max_exec 0 >", ["1:14: warning: 'max_exec 0' means the scenario never runs"]),
            ("scenario A < between 1d; between 24h >", ["1:26: warning: duplicate clause 'between 1d'"]),
            // Duplicates are found by meaning, whatever the spelling.
            (
                "scenario A < max_events 1_000 per install; max_events 1000 >",
                ["1:44: warning: duplicate clause 'max_events 1000'"]
            ),
            ("scenario A < on a, \"b\"; on a, b >", ["1:25: warning: duplicate clause 'on a, b'"]),
            (
                "param p: bool\nscenario A < when (count(x within 1d) > 2) and p; when (count(x within 24h)>2) and p >",
                ["2:51: warning: duplicate clause 'when (count(x within 1d) > 2) and p'"]
            ),
            ("param p: bool\nparam q: bool\nscenario A < when p and q; when q and p >", []),
            ("scenario A < min_events 2; min_events 2 per session >", []),
            ("scenario A < priority 1; priority 2 >", ["1:26: error: more than one 'priority' clause"]),
            ("scenario A < on a, b, a >", ["1:23: warning: event 'a' is named twice in 'on'"]),
            (
                "scenario A < max_exec 20000 within 1d >",
                ["1:23: error: threshold 20000 is too large for a 'within' window; the limit is 10000"]
            ),
            (
                "group G < min_events 1 > { }",
                [
                    "1:11: error: clause 'min_events' is not allowed in a group; a group takes 'max_exec', 'between' and 'when'"
                ]
            ),
            ("param p: int = \"x\"", ["1:16: error: default value of 'p' is 'string'; the param is 'int'"]),
            ("param p: duration = 60", ["1:21: error: a duration needs a unit; '60' seconds is '1m'"]),
            ("param p: intt", ["1:10: error: unknown type 'intt'; did you mean 'int'?"]),
            (
                "scenario A < when \"a\" == 1 and not 2 >",
                [
                    "1:19: error: cannot compare 'string' with 'int'",
                    "1:36: error: 'not' needs bool operands; this is 'int'",
                ]
            ),
            ("scenario A < when (1 < 2 < 3) >", ["1:26: error: comparisons cannot be chained; add parentheses"]),
            ("scenario A < min_events 1 per fortnight >", ["1:31: error: unknown scope 'fortnight'"]),
        ]
        for (source, expected) in cases {
            XCTAssertEqual(lines(source), expected, source)
        }
    }

    func testDuplicatesAcrossFilesPointAtTheFirst() {
        let result = RuleCompiler.check([
            SourceFile(path: "a.rules", text: "scenario Same < >"),
            SourceFile(path: "b.rules", text: "\n\nscenario Same < max_exec 1 >"),
        ])
        XCTAssertEqual(result.diagnostics.count, 1)
        let diagnostic = result.diagnostics[0]
        XCTAssertEqual("\(diagnostic.file.path):\(diagnostic.location)", "b.rules:3:10")
        XCTAssertEqual(diagnostic.message, "duplicate scenario 'Same'")
        XCTAssertEqual(diagnostic.notes.first.map { "\($0.span!.file.path):\($0.span!.start)" }, "a.rules:1:10")
    }

    func testFixItsCarryTheReplacement() {
        let result = RuleCompiler.check(text: "scenario A < when x > 3 >\nparam x: int")
        XCTAssertEqual(result.diagnostics.first?.fixIts, [FixIt(range: 18..<23, replacement: "(x > 3)")])
    }

    func testRendererFormat() {
        let result = RuleCompiler.check(text: "scenario A <\n\tmin_event 5 >", path: "app.rules")
        XCTAssertEqual(
            DiagnosticRenderer().render(result.diagnostics),
            """
            app.rules:2:2: error: unknown clause 'min_event'; did you mean 'min_events' or 'max_events'?
             2 | \tmin_event 5 >
               | \t^~~~~~~~~
               = fix: replace 'min_event' with 'min_events'

            """)
        XCTAssertTrue(DiagnosticRenderer(colored: true).render(result.diagnostics).contains("\u{1B}["))
    }
}
