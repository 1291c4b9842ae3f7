import XCTest

@testable import RuleLang

final class ParserTests: XCTestCase {
    private func parse(_ text: String) -> (RuleFile, [Diagnostic]) {
        Parser.parse(SourceFile(path: "t.rules", text: text))
    }

    /// A body ending with a bare `>` before a declaration whose keyword is contextual (`event`,
    /// `retired`) closes there: it is not a comparison with the keyword.
    func testABareGreaterBeforeAContextualDeclarationClosesTheBody() {
        for next in ["event launch", "event \"app open\", close", "retired scenario Old"] {
            let (file, diagnostics) = parse("scenario A < when (count(e) >= 1) >\n\(next)\n")
            XCTAssertEqual(diagnostics.map(\.message), [], next)
            XCTAssertEqual(file.declarations.count, 2, next)
        }
        XCTAssertFalse(parse("scenario A < when count(e) > event >\n").1.isEmpty, "a stream named event compared")
    }

    func testCardLineParsesExactly() {
        let (file, diagnostics) = parse(
            "scenario AskToSubscribe < min_events 5; since_first 7d; max_exec 4; between 2d >")
        XCTAssertTrue(diagnostics.isEmpty)
        let expected = ScenarioDecl(
            name: Name("AskToSubscribe", 9..<23),
            clauses: [
                Clause(
                    kind: .minEvents(IntLiteral(value: 5, range: 37..<38), Scope(.install, 38..<38)), range: 26..<38),
                Clause(kind: .sinceFirst(DurationLiteral(seconds: 604_800, range: 52..<54)), range: 40..<54),
                Clause(kind: .maxExec(IntLiteral(value: 4, range: 65..<66), Scope(.install, 66..<66)), range: 56..<66),
                Clause(kind: .between(DurationLiteral(seconds: 172_800, range: 76..<78)), range: 68..<78),
            ],
            range: 0..<80)
        XCTAssertEqual(file.declarations, [.scenario(expected)])
    }

    func testScopesParamsGroupsAndTrailingSemicolon() throws {
        let (file, diagnostics) = parse(
            """
            param limit: int = 3
            group G < max_exec 1 within 1d > { scenario A < min_events 2 per session; on a, "b c"; > }
            scenario E < >
            """)
        XCTAssertTrue(diagnostics.isEmpty, "\(diagnostics.map(\.message))")
        XCTAssertEqual(file.declarations.count, 3)
        guard case .param(let param) = file.declarations[0], case .group(let group) = file.declarations[1],
            case .scenario(let empty) = file.declarations[2]
        else { return XCTFail("shapes") }
        XCTAssertEqual(param.type, .int)
        XCTAssertEqual(param.defaultValue?.kind, .integer(3))
        XCTAssertEqual(group.clauses.map { Printer.clause($0.kind) }, ["max_exec 1 within 1d"])
        XCTAssertEqual(group.members.map(\.name.text), ["A"])
        XCTAssertEqual(
            group.members[0].clauses.map { Printer.clause($0.kind) }, ["min_events 2 per session", "on a, \"b c\""])
        XCTAssertTrue(empty.clauses.isEmpty)
    }

    func testExpressionPrecedence() {
        let (file, diagnostics) = parse("scenario S < when not a == 1 or b and (count(x within 2h) > 3) >")
        XCTAssertTrue(diagnostics.isEmpty)
        guard case .scenario(let s) = file.declarations.first, case .when(let e) = s.clauses.first?.kind else {
            return XCTFail("shape")
        }
        guard case .binary(.or, let left, let right) = e.kind, case .unary(.not, let negated) = left.kind,
            case .binary(.equal, _, _) = negated.kind, case .binary(.and, _, let paren) = right.kind,
            case .parenthesized(let inner) = paren.kind, case .binary(.greater, let call, _) = inner.kind,
            case .call(let f, let arg, let scope, _, _, _) = call.kind
        else {
            return XCTFail("precedence: \(Printer.expression(e))")
        }
        XCTAssertEqual([f.text, arg.text], ["count", "x"])
        XCTAssertEqual(scope?.kind, .within(seconds: 7_200))
    }

    func testRecoveryReportsEveryIndependentError() {
        let (file, diagnostics) = parse(
            """
            scenario A < min_events; max_exec 1 >
            scenario B < bogus 3 >
            scenario C < between 1d >
            """)
        XCTAssertEqual(
            diagnostics.map { "\($0.location) \($0.message)" },
            [
                "1:24 expected a whole number, found ';'",
                "2:14 unknown clause 'bogus'",
            ])
        XCTAssertEqual(file.declarations.count, 3, "every scenario survives its errors")
    }

    func testMissingOpenAngleSkipsTheWholeBody() {
        let (file, diagnostics) = parse("scenario C max_exec 1; between 2d; when (a > 1) >\nscenario D < >")
        XCTAssertEqual(
            diagnostics.map { "\($0.location) \($0.message)" },
            ["1:12 expected '<' to open the body of scenario 'C', found 'max_exec'"])
        XCTAssertEqual(file.declarations.count, 2)
    }

    func testDeepNestingIsAnErrorNotACrash() {
        let text = "scenario S < when " + String(repeating: "(", count: 200_000) + " >\nscenario T < >"
        let (file, diagnostics) = parse(text)
        XCTAssertEqual(diagnostics.map(\.id), [.nestingTooDeep])
        XCTAssertEqual(file.declarations.count, 2)
        let nots = "scenario S < when " + String(repeating: "not ", count: 100) + "true >"
        XCTAssertEqual(parse(nots).1.map(\.id), [.nestingTooDeep])
    }

    func testLongExpressionsAreCapped() {
        let text =
            "scenario S < when " + Array(repeating: "true", count: 600).joined(separator: " and ")
            + " >\nscenario T < >"
        let (file, diagnostics) = parse(text)
        XCTAssertEqual(diagnostics.map(\.id), [.expressionTooLong])
        XCTAssertEqual(file.declarations.count, 2)
    }

    func testFileSizeAndNameLengthLimits() {
        let big = SourceFile(path: "big", bytes: [UInt8](repeating: 0x20, count: Limits.maxFileSize + 1))
        XCTAssertEqual(Parser.parse(big).1.map(\.id), [.fileTooLarge])
        let long = "scenario " + String(repeating: "a", count: Limits.maxNameLength + 1) + " < >"
        XCTAssertEqual(parse(long).1.map(\.id), [.nameTooLong])
    }

    func testErrorFloodIsCapped() {
        let (_, diagnostics) = parse(String(repeating: "@", count: 10_000))
        XCTAssertEqual(diagnostics.count, Limits.maxErrorsPerFile + 1)
        XCTAssertEqual(diagnostics.last?.id, .tooManyErrors)
    }

    func testTooManyDeclarations() {
        let text = String(repeating: "scenario A < >\n", count: Limits.maxDeclarationsPerFile + 1)
        XCTAssertEqual(parse(text).1.map(\.id), [.tooManyDeclarations])
    }

    func testStandaloneExpressionAllowsBareAngles() {
        let file = SourceFile(path: "t", text: "count(x per session) > 1 and y < 2")
        let (expr, diagnostics) = Parser.parseExpression(file, range: 0..<file.bytes.count)
        XCTAssertTrue(diagnostics.isEmpty)
        XCTAssertEqual(Printer.expression(expr), "count(x per session) > 1 and y < 2")
    }
}
