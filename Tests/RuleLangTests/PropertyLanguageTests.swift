import RuleTools
import XCTest

@testable import RuleLang

/// Language 1.2's typed event properties in the front end: declared, filtered on, printed,
/// version-gated, and every mistake located with did-you-mean where there is one.
final class PropertyLanguageTests: XCTestCase {
    let header = "# language 1.2\nevent purchase(amount: int, plan: string, trial: bool), launch\n"

    func check(_ text: String) -> CheckResult { RuleCompiler.check(text: text) }

    /// The messages of `body` in a scenario after the header.
    func messages(_ body: String) -> [String] {
        check(header + "scenario A < on launch, purchase; \(body) >\n").diagnostics.map(\.message)
    }

    func testDeclarationsAndFiltersParseCheckAndPrint() {
        let result = check(
            header + """
                scenario Offer < on launch; when count(purchase where amount >= 10 and plan == "pro" within 30d) >= 3 >
                scenario Lapsed < on launch; when since_last(purchase where not trial) >= 14d and active_days(purchase where (plan != "free") within 30d) >= 2 >
                """)
        XCTAssertEqual(result.diagnostics.map(\.message), [])
        XCTAssertEqual(result.program.properties["purchase"]?.map(\.name.text), ["amount", "plan", "trial"])
        XCTAssertEqual(result.program.properties["purchase"]?.map(\.type), [.int, .string, .bool])
        XCTAssertNil(result.program.properties["launch"])
        XCTAssertEqual(
            result.program.scenarios.map { Printer.clause($0.decl.clauses[1].kind) },
            [
                "when count(purchase where amount >= 10 and plan == \"pro\" within 30d) >= 3",
                "when since_last(purchase where not trial) >= 14d and active_days(purchase where (plan != \"free\") within 30d) >= 2",
            ])
        let formatted = Formatter.format(SourceFile(path: "t.rules", text: header)).text
        XCTAssertEqual(formatted, header, "the declaration prints as written")
    }

    func testPropertiesNeedLanguage12() {
        let declared = check("# language 1.1\nevent purchase(amount: int)\nscenario A < on purchase >\n")
        XCTAssertEqual(declared.diagnostics.map(\.id), [.languageVersion])
        let filtered = check(
            "# language 1.1\nevent purchase\nscenario A < on purchase; when count(purchase where amount > 1) >= 1 >\n")
        XCTAssertTrue(filtered.diagnostics.map(\.id).contains(.languageVersion))
    }

    func testMistakesAreLocatedAndSuggested() {
        let unknown = check(
            header + "scenario A < on launch, purchase; when count(purchase where amont >= 10) >= 1 >\n")
        XCTAssertEqual(
            unknown.diagnostics.map(\.message), ["event 'purchase' has no property 'amont'; did you mean 'amount'?"])
        XCTAssertEqual(unknown.diagnostics.first?.id, .unknownProperty)
        XCTAssertEqual(unknown.diagnostics.first?.fixIts.first?.replacement, "amount")
        let at = header.utf8.count + "scenario A < on launch, purchase; when count(purchase where ".utf8.count
        XCTAssertEqual(unknown.diagnostics.first?.range, at..<at + 5)
        XCTAssertEqual(
            messages("when count(purchase where amount == \"ten\") >= 1"), ["cannot compare 'int' with 'string'"])
        XCTAssertEqual(
            messages("when count(purchase where plan < \"pro\") >= 1"), ["'<' compares ints or durations, not 'string'"]
        )
        XCTAssertEqual(messages("when count(purchase where amount) >= 1"), ["a filter is true or false; this is int"])
        XCTAssertEqual(
            messages("when count(purchase where count(launch) > 1) >= 1"),
            ["a filter compares the event's properties with values; it calls no function"])
        XCTAssertEqual(
            messages("when count(launch where amount > 1) >= 1"),
            ["event 'launch' declares no properties to filter on; declare them: 'event launch(NAME: TYPE, ...)'"])
        XCTAssertEqual(
            messages("when executions(A where amount > 1) >= 1"),
            ["'executions' takes no 'where'; 'count', 'since_first', 'since_last' and 'active_days' of an event do"])
        XCTAssertEqual(
            messages("when count(purchase where plan == pro) >= 1"),
            ["strings are quoted: '\"pro\"'; a bare word names a property"],
            "a bare word: quotes")
        XCTAssertEqual(
            messages("when count(purchase where plann == \"pro\") >= 1"),
            ["event 'purchase' has no property 'plann'; did you mean 'plan'?"],
            "a near miss of a property compared with a string: a misspelt property, not a string")
        XCTAssertEqual(
            check("# language 1.2\nevent purchase(amount: int, amount: string)\nscenario A < on purchase >\n")
                .diagnostics.map(\.message), ["property 'amount' of event 'purchase' is declared twice"])
        let type = check("# language 1.2\nevent purchase(amount: strng)\nscenario A < on purchase >\n")
        XCTAssertEqual(type.diagnostics.map(\.id), [.unknownType])
        XCTAssertEqual(type.diagnostics.first?.fixIts.first?.replacement, "string")
        XCTAssertEqual(
            check("# language 1.2\nevent purchase(amount: duration)\nscenario A < on purchase >\n").diagnostics.map(
                \.id),
            [.unknownType], "a property is an int, a string or a bool")
        let again = check(
            "# language 1.2\nevent purchase(amount: int)\nevent purchase(plan: string)\nscenario A < on purchase >\n")
        XCTAssertTrue(
            again.diagnostics.map(\.message).contains(
                "event 'purchase' is declared again with other properties; declare them once"))
        // The same properties again (in another order): the usual duplicate warning only.
        let same = check(
            "# language 1.2\nevent p(a: int, b: bool)\nevent p(b: bool, a: int)\nscenario A < on p >\n")
        XCTAssertEqual(same.diagnostics.map(\.message), ["event 'p' is declared twice"])
        // A param of the same name as a property does not leak into a filter, nor a property out.
        let param = check(
            header
                + "param amount: int = 3\nscenario A < on launch, purchase; when count(purchase where amount > 1) >= amount >\n"
        )
        XCTAssertEqual(param.diagnostics.map(\.message), [])
        XCTAssertEqual(
            messages("when plan == \"pro\""), ["strings are quoted: '\"plan\"'; a bare word names a param"],
            "a property is not a param")
    }

    func errors(_ result: CheckResult) -> [String] {
        result.diagnostics.filter { $0.severity == .error }.map(\.message)
    }

    /// `min_events N where FILTER [scope]`: the `on` events' triggers whose properties pass.
    func testMinEventsWhere() {
        let body = "scenario Pro < on purchase; min_events 3 where plan == \"pro\" and amount >= 10 within 30d >\n"
        let result = check(header + body)
        XCTAssertEqual(errors(result), [])
        XCTAssertEqual(
            result.program.scenarios.map { Printer.clause($0.decl.clauses[1].kind) },
            ["min_events 3 where plan == \"pro\" and amount >= 10 within 30d"])
        let formatted = Formatter.format(SourceFile(path: "t.rules", text: header + body)).text ?? ""
        XCTAssertEqual(
            Formatter.format(SourceFile(path: "t.rules", text: formatted)).text, formatted, "formatting is stable")
        XCTAssertTrue(formatted.contains("min_events 3 where plan == \"pro\" and amount >= 10 within 30d"), formatted)
        XCTAssertEqual(
            errors(check(header + "scenario A < min_events 1 where plan == \"pro\" >\n")),
            [
                "'min_events N where ...' filters the triggers of the scenario's 'on' events; add 'on EVENT' "
                    + "naming events with properties"
            ])
        XCTAssertEqual(
            messages("min_events 1 where plan == \"pro\""),
            ["event 'launch' declares no properties to filter on; declare them: 'event launch(NAME: TYPE, ...)'"],
            "every 'on' event must have the properties")
        XCTAssertEqual(
            errors(check(header + "scenario A < on purchase; min_events 1 where amont >= 1 >\n")),
            ["event 'purchase' has no property 'amont'; did you mean 'amount'?"])
        XCTAssertEqual(
            check(header + "group G < min_events 1 where amount >= 1 > {\n scenario A < on purchase >\n}\n")
                .diagnostics.filter { $0.severity == .error }.map(\.id), [.clauseNotInGroup])
        let older = check(
            "# language 1.1\nevent purchase\nscenario A < on purchase; min_events 1 where amount >= 1 >\n")
        XCTAssertTrue(older.diagnostics.map(\.id).contains(.languageVersion), "\(older.diagnostics.map(\.message))")
    }

    /// `sum(EVENT.PROPERTY [where FILTER] [scope])`: an int property added up, checked and printed.
    func testSum() {
        let body =
            "scenario S < on launch; when sum(purchase.amount where plan == \"pro\" per session) >= 10 and (sum(purchase.amount) > 1) >\n"
        let result = check(header + body)
        XCTAssertEqual(errors(result), [])
        XCTAssertEqual(
            result.program.scenarios.map { Printer.clause($0.decl.clauses[1].kind) },
            ["when sum(purchase.amount where plan == \"pro\" per session) >= 10 and (sum(purchase.amount) > 1)"])
        func sumErrors(_ call: String) -> [String] {
            errors(check(header + "scenario S < on launch; when \(call) >= 5 >\n"))
        }
        XCTAssertEqual(
            sumErrors("sum(purchase.amont)"), ["event 'purchase' has no property 'amont'; did you mean 'amount'?"])
        XCTAssertEqual(sumErrors("sum(purchase.plan)"), ["'sum' adds an int property; 'plan' is string"])
        // Over a window: compared with a number, on either side, in parentheses or not.
        XCTAssertEqual(sumErrors("sum(purchase.amount within 1d)"), [])
        for fine in [
            "100 <= (sum(purchase.amount where plan == \"pro\" within 30d))", "sum(purchase.amount within 1d) == 0",
        ] {
            XCTAssertEqual(errors(check(header + "scenario S < on launch; when \(fine) >\n")), [], fine)
        }
        let compared =
            "'sum' over a window is compared with a number ('sum(purchase.amount within 30d) >= 100'): "
            + "it keeps as many units as that number, no more"
        for unbounded in [
            "sum(purchase.amount within 1d) >= sum(purchase.amount)", "sum(purchase.amount within 1d) >= count(launch)",
            "not (sum(purchase.amount within 1d) == sum(purchase.amount within 2d))",
        ] {
            let found = errors(check(header + "scenario S < on launch; when \(unbounded) >\n"))
            XCTAssertTrue(!found.isEmpty && found.allSatisfy { $0 == compared }, "\(unbounded): \(found)")
        }
        XCTAssertEqual(
            errors(check(header + "scenario S < on launch; when sum(purchase.amount within 1d) >= 10001 >\n")),
            ["threshold 10001 is too large for a 'within' window; the limit is 10000"])
        XCTAssertEqual(
            sumErrors("sum(launch.amount)"),
            ["event 'launch' declares no properties to filter on; declare them: 'event launch(NAME: TYPE, ...)'"])
        XCTAssertEqual(
            sumErrors("sum(purchase)"),
            ["expected an event's int property, such as 'purchase.amount', found 'purchase'"])
        XCTAssertEqual(
            sumErrors("sum(purchase.amount where plann == \"x\")"),
            ["event 'purchase' has no property 'plann'; did you mean 'plan'?"])
        XCTAssertEqual(
            sumErrors("count(purchase.amount)"), ["a name holding '-' or '.' must be quoted: '\"purchase.amount\"'"],
            "elsewhere a dotted name is a name that needs quotes, as before")
        let older = check(
            "# language 1.1\nevent purchase\nscenario A < on purchase; when sum(purchase.amount) >= 1 >\n")
        XCTAssertTrue(older.diagnostics.map(\.id).contains(.languageVersion), "\(older.diagnostics.map(\.message))")
    }
}
