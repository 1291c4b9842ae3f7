import XCTest

@testable import RuleLang

/// Rules may be downloaded: hostile files get bounded work and every problem a diagnostic.
final class HostileInputTests: XCTestCase {
    func testTheCapCoversWarningsAndCheckerErrors() {
        let on = "scenario S < on " + Array(repeating: "x", count: 5_000).joined(separator: ", ") + " >"
        let warnings = RuleCompiler.check(text: on).diagnostics
        XCTAssertEqual(warnings.count, Limits.maxErrorsPerFile + 1)
        XCTAssertEqual(warnings.last?.message, "4899 more diagnostics not shown (at most 100 per file)")
        XCTAssertEqual(warnings.last?.severity, .warning)
        let unknown = (0..<500).map { "scenario S\($0) < when nope\($0) >" }.joined(separator: "\n")
        let errors = RuleCompiler.check(text: unknown).diagnostics
        XCTAssertEqual(errors.count, Limits.maxErrorsPerFile + 1)
        XCTAssertEqual(errors.filter { $0.severity == .error }.count, errors.count)
    }

    func testAnErrorAfterManyWarningsKeepsTheFileFailing() {
        let on = "scenario S < on " + Array(repeating: "x", count: 300).joined(separator: ", ") + " >\n"
        let result = RuleCompiler.check(text: on + "scenario T < min_event 1 >")
        XCTAssertTrue(result.hasErrors, "the error is past the cap, but the summary line is an error")
        XCTAssertEqual(result.diagnostics.last?.severity, .error)
    }

    func testSuggestionsAreBoundedPerCheck() {
        // 3,000 params and 3,000 unknown names: without a bound, nine million edit distances.
        var lines = (0..<3_000).map { "param p\($0): bool" }
        lines += (0..<3_000).map { "scenario S\($0) < when p\($0)x >" }
        var checker = Checker(files: [Parser.parse(SourceFile(path: "a.rules", text: lines.joined(separator: "\n"))).0])
        _ = checker.run()
        XCTAssertEqual(checker.suggestionsLeft, 0, "suggestions stop after the error cap's worth")
        XCTAssertLessThanOrEqual(Suggestions.closest(to: "p1x", in: (0..<50_000).map { "p\($0)" }).count, 2)
    }

    func testSuggestionsComparedAreCappedAndStillFindTheTypo() {
        let candidates = (0..<20_000).map { "name\($0)" } + ["is_subscribed"]
        XCTAssertEqual(Suggestions.closest(to: "is_subscibed", in: candidates), ["is_subscribed"])
    }

    func testInvalidUTF8InAStringIsAnError() {
        let source = SourceFile(
            path: "a.rules", bytes: Array("scenario S < on \"".utf8) + [0xFF, 0xFE] + Array("\" >".utf8))
        let diagnostics = RuleCompiler.check([source]).diagnostics
        XCTAssertEqual(diagnostics.map(\.id), [.invalidUTF8])
        XCTAssertEqual(diagnostics.first?.range, 17..<19)
    }

    func testQuotedNamesHaveTheNameLengthLimit() {
        let long = String(repeating: "a", count: 5_000)
        let diagnostics = RuleCompiler.check(text: "scenario S < on \"\(long)\" >").diagnostics
        XCTAssertEqual(diagnostics.map(\.id), [.nameTooLong])
        XCTAssertTrue(
            RuleCompiler.check(text: "scenario S < on \"\(String(repeating: "é", count: 64))\" >").diagnostics.isEmpty)
    }

    func testColumnsOnLongLinesCountCharacters() {
        let file = SourceFile(path: "a", text: String(repeating: "x", count: 1_000) + "é" + "y")
        XCTAssertEqual(file.location(of: 1_000).column, 1_001)
        XCTAssertEqual(file.location(of: 1_002).column, 1_002, "é is one character of two bytes")
    }

    func testLongLinesRenderAWindowAroundTheCaret() {
        let on = "scenario S < on " + Array(repeating: "x", count: 20_000).joined(separator: ", ") + " >"
        let diagnostics = RuleCompiler.check(text: on).diagnostics
        let rendered = DiagnosticRenderer().render(diagnostics)
        XCTAssertLessThan(rendered.utf8.count, diagnostics.count * 800, "excerpts are windows, not whole lines")
    }

    func testAnExpressionCheckerCollectsDeclarationsOnce() {
        let program = RuleCompiler.check(text: "param p: int\nscenario S < >").program
        var checker = ExpressionChecker(program: program)
        let file = SourceFile(path: "<e>", text: "p > 3 and nope")
        for _ in 0..<3 {
            let (_, diagnostics) = checker.check(file, range: 0..<file.bytes.count)
            XCTAssertEqual(
                diagnostics.map(\.message),
                ["unknown param 'nope'; did you mean 'p'?"].filter { _ in false } + diagnostics.map(\.message))
            XCTAssertEqual(diagnostics.count, 1)
        }
    }
}
