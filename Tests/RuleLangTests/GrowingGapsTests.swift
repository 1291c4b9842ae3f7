import RuleTools
import XCTest

@testable import RuleLang

/// `between 1d, 3d, 1w`: parsed, checked, printed.
final class GrowingGapsTests: XCTestCase {
    func testAListParsesPrintsAndNeedsLanguage11() throws {
        let result = RuleCompiler.check(text: "# language 1.1\nscenario A < between 1d, 3d, 1w >\n")
        XCTAssertEqual(result.diagnostics.map(\.message), [])
        guard case .growingBetween(let gaps) = result.program.scenarios[0].decl.clauses[0].kind else {
            return XCTFail("not a list")
        }
        XCTAssertEqual(gaps.map(\.seconds), [86_400, 259_200, 604_800])
        XCTAssertEqual(Printer.clause(.growingBetween(gaps)), "between 1d, 3d, 7d")
        let old = RuleCompiler.check(text: "scenario A < between 1d, 3d >\n")
        XCTAssertEqual(old.diagnostics.map(\.id), [.languageVersion])
        XCTAssertEqual(RuleCompiler.check(text: "scenario A < between 1d >\n").diagnostics.count, 0, "one gap is 1.0")
    }

    func testAShrinkingListIsAWarningAndAMissingGapAnError() {
        let shrinking = RuleCompiler.check(text: "# language 1.1\nscenario A < between 3d, 1d >\n")
        XCTAssertEqual(shrinking.diagnostics.map(\.id), [.shrinkingGaps])
        XCTAssertEqual(shrinking.diagnostics.first?.severity, .warning)
        let missing = RuleCompiler.check(text: "# language 1.1\nscenario A < between 1d, >\n")
        XCTAssertTrue(missing.hasErrors)
        let grouped = RuleCompiler.check(text: "# language 1.1\ngroup G < between 1d, 2d > { scenario A < > }\n")
        XCTAssertEqual(grouped.diagnostics.map(\.message), [], "groups take growing gaps too")
    }

    func testFormatterKeepsTheList() {
        let (text, diagnostics) = Formatter.format(
            SourceFile(path: "f", text: "# language 1.1\nscenario A <between 1d,3d ,  1w>\n"))
        XCTAssertEqual(diagnostics.count, 0)
        XCTAssertEqual(text, "# language 1.1\nscenario A < between 1d, 3d, 7d >\n")
    }

    func testDayCountsNeedLanguage11AndWholeDaysWithinTheLimit() {
        let old = RuleCompiler.check(text: "scenario A < on x; min_days 2 within 7d >\n")
        XCTAssertEqual(old.diagnostics.map(\.id), [.languageVersion])
        let call = RuleCompiler.check(text: "scenario A < when active_days(x within 7d) >= 2 >\n")
        XCTAssertEqual(call.diagnostics.map(\.id), [.languageVersion])
        let header = "# language 1.1\n"
        XCTAssertEqual(
            RuleCompiler.check(text: header + "scenario A < on x; min_days 2 within 7d >\n").diagnostics.count, 0)
        for (body, id) in [
            ("min_days 2 within 36h", DiagnosticID.invalidDuration),
            ("min_days 2 within 121d", .windowThresholdTooLarge),
            ("min_days 8 within 7d", .impossibleScenario), ("when active_days(x per session) >= 1", .expectedToken),
        ] {
            let result = RuleCompiler.check(text: header + "scenario A < on x; \(body) >\n")
            XCTAssertEqual(result.diagnostics.map(\.id), [id], body)
        }
    }

    /// The parser records each use of a 1.1 construct as it makes it (groups, their members,
    /// calls deep in an expression); the check reports each once, in source order.
    func testEveryNewerConstructIsReportedOnceWhereItIs() {
        let text = """
            group G < between 1d, 2d > {
                scenario A < when not (count(y) > 1 or active_days(x within 7d) >= 2) >
                scenario B < on x; min_days 1 within 1d >
            }
            scenario C < between 1d, 3d; when active_days(z within 2d) >= 1 >

            """
        let result = RuleCompiler.check(text: text)
        XCTAssertEqual(result.diagnostics.map(\.id), Array(repeating: .languageVersion, count: 5))
        let words = [
            "'between' with several gaps", "'active_days'", "'min_days'", "'between' with several gaps",
            "'active_days'",
        ]
        for (diagnostic, word) in zip(result.diagnostics, words) {
            XCTAssertTrue(diagnostic.message.contains(word), diagnostic.message)
        }
        let starts = result.diagnostics.map(\.span.range.lowerBound)
        XCTAssertEqual(starts, starts.sorted())
        // Declared, none.
        XCTAssertEqual(RuleCompiler.check(text: "# language 1.1\n" + text).diagnostics.map(\.id), [])
        // Former names (the first of each list) and retirement, recorded by the parser too.
        let renamed = RuleCompiler.check(
            text: "event b was a, d was c\nscenario S was R was Q < on b, d >\n# later\nretired scenario T\n")
        XCTAssertEqual(
            renamed.diagnostics.filter { $0.id == .languageVersion }.map(\.message),
            [
                "'was' needs rules language 1.1, but this file is language 1.0; declare it on the first line: '# language 1.1'",
                "'was' needs rules language 1.1, but this file is language 1.0; declare it on the first line: '# language 1.1'",
                "'was' needs rules language 1.1, but this file is language 1.0; declare it on the first line: '# language 1.1'",
                "'retired' needs rules language 1.2, but this file is language 1.0; declare it on the first line: '# language 1.2'",
            ])
    }
}
