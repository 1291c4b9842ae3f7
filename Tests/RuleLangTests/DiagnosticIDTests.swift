import Foundation
import RuleTools
import XCTest

@testable import RuleLang

/// `DiagnosticID` is open: each module declares its own identifiers beside its messages, and
/// an identifier reads and writes as the bare string it always was.
final class DiagnosticIDTests: XCTestCase {
    func testAnIdentifierIsItsStringInJSONAndEqualsOneMadeElsewhere() throws {
        let data = try JSONEncoder().encode([DiagnosticID.unknownClause, .diffRemoved])
        XCTAssertEqual(String(decoding: data, as: UTF8.self), #"["unknown-clause","diff-removed"]"#)
        XCTAssertEqual(try JSONDecoder().decode([DiagnosticID].self, from: data), [.unknownClause, .diffRemoved])
        // Declared in another module (RuleTools), it is the same value as one spelt here.
        XCTAssertEqual(DiagnosticID.swiftNameCollision, DiagnosticID("swift-name-collision"))
        XCTAssertEqual(DiagnosticID(rawValue: "bare-duration"), .bareDuration)
        XCTAssertEqual("\(DiagnosticID.bareDuration)", "bare-duration")
    }

    func testTheToolsReportTheirOwnIdentifiers() {
        let old = RuleCompiler.check(text: "scenario A < max_exec 1 >\n")
        let new = RuleCompiler.check(text: "scenario B < max_exec 1 >\n")
        let findings = RuleDiff.compare(old: old.program, new: new.program)
        XCTAssertEqual(findings.map(\.id), [.diffProbableRename])
    }
}
