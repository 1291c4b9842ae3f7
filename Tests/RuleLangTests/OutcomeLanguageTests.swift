import RuleTools
import XCTest

@testable import RuleLang

/// Language 1.2's outcomes, `after` and the engine's streams in the front end: parsed, checked,
/// printed, formatted, version-gated, and bad input located with its fix.
final class OutcomeLanguageTests: XCTestCase {
    let header = "# language 1.2\n"

    func check(_ text: String) -> CheckResult { RuleCompiler.check(text: text) }

    func testTheFormsParseAndPrint() throws {
        let result = check(
            header + """
                scenario A < after declined next version; after later 3d; after accepted never; after dismissed next session >
                scenario B < when (count(A: declined per version) < 2) and since_last(A: later) >= 1d and since_first(A: accepted) >= 1s >
                scenario C < when since_last(crash) >= 3d; on crash, problem >
                """)
        XCTAssertEqual(result.diagnostics.map(\.message), [])
        let a = result.program.scenarios[0].decl.clauses
        XCTAssertEqual(
            a.map { Printer.clause($0.kind) },
            [
                "after declined next version", "after later 3d", "after accepted never",
                "after dismissed next session",
            ])
        XCTAssertEqual(
            Printer.clause(result.program.scenarios[1].decl.clauses[0].kind),
            "when (count(A: declined per version) < 2) and since_last(A: later) >= 1d and since_first(A: accepted) >= 1s"
        )
        let c = result.program.scenarios[2].decl.clauses
        XCTAssertEqual(c.map { Printer.clause($0.kind) }, ["when since_last(crash) >= 3d", "on crash, problem"])
        guard case .on(let names) = c[1].kind else { return XCTFail("on") }
        XCTAssertEqual(names.map(\.text), ["@crash", "@problem"], "the engine's own streams")
        XCTAssertFalse(result.program.knownStreams.contains { $0.hasPrefix("@declined") }, "outcomes are not events")
    }

    func testEachFormNeedsLanguage12AtTheConstruct() {
        for body in ["after later 3d", "when count(A: declined) == 0"] {
            let result = check("# language 1.1\nscenario A < \(body) >\n")
            XCTAssertEqual(result.diagnostics.map(\.id), [.languageVersion], body)
            XCTAssertEqual(result.diagnostics.first?.fixIts.first?.replacement, "# language 1.2", body)
        }
        // Before 1.2, `crash` is an ordinary stream (a file of an older version keeps its meaning).
        let old = check("event crash\nscenario A < on crash >\n")
        XCTAssertEqual(old.diagnostics.map(\.message), [])
        guard case .on(let names) = old.program.scenarios[0].decl.clauses[0].kind else { return XCTFail("on") }
        XCTAssertEqual(names.map(\.text), ["crash"])
    }

    func testBadInputIsLocatedWithItsFix() {
        func only(_ text: String) -> Diagnostic? {
            let diagnostics = check(header + text).diagnostics
            XCTAssertEqual(diagnostics.count, 1, "\(text): \(diagnostics.map(\.message))")
            return diagnostics.first
        }
        let outcome = only("scenario A < after declind next version >\n")
        XCTAssertEqual(outcome?.id, .unknownOutcome)
        XCTAssertEqual(outcome?.message, "unknown outcome 'declind'; did you mean 'declined'?")
        XCTAssertEqual(outcome?.fixIts.first?.replacement, "declined")
        XCTAssertEqual(outcome?.span.start.column, 20)
        let wait = only("scenario A < after later nevr >\n")
        XCTAssertEqual(
            wait?.message,
            "'after' waits for a duration, 'next version', 'next session' or 'never', not 'nevr'; did you mean 'never'?"
        )
        XCTAssertEqual(wait?.fixIts.first?.replacement, "never")
        XCTAssertEqual(only("scenario A < after later next verson >\n")?.fixIts.first?.replacement, "version")
        XCTAssertEqual(only("scenario A < after later 3 >\n")?.id, .bareDuration)
        let scenario = only("scenario RateApp < >\nscenario B < when count(RateAp: declined) == 0 >\n")
        XCTAssertEqual(scenario?.id, .unknownScenario)
        XCTAssertEqual(scenario?.fixIts.first?.replacement, "RateApp")
        let function = only("scenario A < when executions(A: declined) == 0 >\n")
        XCTAssertEqual(
            function?.message, "'executions' does not read outcomes; 'count', 'since_first' and 'since_last' do")
        XCTAssertEqual(only("group G < after later 1d > { scenario A < > }\n")?.id, .clauseNotInGroup)
        let declared = only("event crash\nscenario A < on crash >\n")
        XCTAssertEqual(declared?.id, .reservedName)
        XCTAssertEqual(declared?.message, "'crash' is the engine's own stream in language 1.2; it needs no declaration")
        XCTAssertEqual(only("scenario A < on \"@crash\" >\n")?.id, .reservedName)
        XCTAssertEqual(only("event \"@x\"\nscenario A < on launch >\n")?.id, .reservedName)
        XCTAssertEqual(only("scenario A < after later 1d; after later 1d >\n")?.id, .duplicateClause)
        XCTAssertEqual(
            only("scenario A < when executions(crash) == 0 >\n")?.message,
            "'crash' is the engine's own stream; 'executions' takes a scenario or a group, not a stream")
        XCTAssertEqual(only("scenario A < when todo(problem) >\n")?.id, .reservedName)
    }

    /// With events declared, `crash` and `problem` need no declaration, and outcomes are no events.
    func testDeclaredEventsDoNotHideTheEnginesStreams() {
        let result = check(
            header + "event launch\nscenario A < on launch; when since_last(crash) >= 1d and count(A: later) == 0 >\n")
        XCTAssertEqual(result.diagnostics.map(\.message), [])
    }

    func testTheFormatterKeepsTheForms() {
        let (text, diagnostics) = Formatter.format(
            SourceFile(
                path: "f",
                text: header + "scenario A <after   later 1w;after declined next  version;when count(A :declined)==0>\n"
            ))
        XCTAssertEqual(diagnostics.map(\.message), [])
        XCTAssertEqual(
            text, header + "scenario A < after later 7d; after declined next version; when count(A: declined) == 0 >\n")
    }
}
