import Foundation
import RuleRuntime
import XCTest

@testable import RuleTimeline

/// grammar.md says what the code does: every timeline step is in its step table, and the
/// limits table names the state file format versions the store reads.
final class GrammarDocTests: XCTestCase {
    private var grammar: String {
        get throws {
            try String(contentsOf: RulecBinary.packageRoot.appendingPathComponent("grammar.md"), encoding: .utf8)
        }
    }

    func testEveryTimelineStepIsInTheStepTable() throws {
        let text = try grammar
        for verb in TimelineParser.verbs {
            XCTAssertTrue(
                text.contains("\n| `\(verb) ") || text.contains("\n| `\(verb)` "),
                "grammar.md's step table lacks '\(verb)'")
        }
    }

    func testTheLimitsTableNamesTheStateFormatVersions() throws {
        XCTAssertTrue(
            try grammar.contains(
                "| state file format | versions 1 to \(FileStore.formatVersion) (written as \(FileStore.formatVersion)) |"
            ))
        XCTAssertTrue(try grammar.contains("**The state file, format version \(FileStore.formatVersion)**"))
    }
}
