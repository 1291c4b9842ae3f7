import Foundation
import RuleLang
import RuleRuntime
import RuleTimeline
import XCTest

/// A timeline's `trigger EVENT NAME=VALUE ...`: each value of its property's declared type, and
/// every mistake located on its word.
final class TimelinePropertyTests: XCTestCase {
    let program = RuleCompiler.check(
        text:
            "# language 1.2\nevent purchase(amount: int, plan: string, trial: bool), open\nscenario S < on open, purchase >\n"
    ).program

    func parse(_ text: String) -> (steps: [TimelineStep], messages: [String]) {
        var parser = TimelineParser(file: SourceFile(path: "t.timeline", text: text), program: program)
        let steps = parser.parse()
        return (steps, parser.diagnostics.map(\.message))
    }

    func testPropertiesAreReadAsTheirTypes() {
        let (steps, messages) = parse(
            "1h trigger purchase amount=-12 plan=pro trial=false\n2h trigger purchase\n3h trigger open\n")
        XCTAssertEqual(messages, [])
        guard steps.count == 3, case .triggerWith(let name, let properties) = steps[0].action else {
            return XCTFail("\(steps.map(\.action))")
        }
        XCTAssertEqual(name, "purchase")
        XCTAssertEqual(properties, ["amount": .int(-12), "plan": .string("pro"), "trial": .bool(false)])
        guard case .triggerWith(_, let none) = steps[1].action else { return XCTFail("no properties") }
        XCTAssertEqual(none, [:])
        guard case .trigger("open") = steps[2].action else { return XCTFail("an event without properties") }
    }

    func testMistakesAreLocated() {
        let line = "1h trigger purchase amont=3\n"
        let (_, unknown) = parse(line)
        XCTAssertEqual(unknown, ["event 'purchase' has no property 'amont'; did you mean 'amount'?"])
        var parser = TimelineParser(file: SourceFile(path: "t.timeline", text: line), program: program)
        _ = parser.parse()
        XCTAssertEqual(parser.diagnostics.first?.range, 20..<27, "the pair's word")
        XCTAssertEqual(parse("1h trigger purchase amount=ten\n").messages, ["'ten' is no int for property 'amount'"])
        XCTAssertEqual(parse("1h trigger purchase trial=yes\n").messages, ["'yes' is no bool for property 'trial'"])
        XCTAssertEqual(parse("1h trigger purchase 12\n").messages, ["expected a property as NAME=VALUE, found '12'"])
        XCTAssertEqual(parse("1h trigger open amount=3\n").messages, ["unexpected 'amount=3' at the end of the step"])
    }
}
