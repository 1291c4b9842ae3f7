import Foundation
import XCTest

/// Every public declaration of the libraries carries a `///` doc comment (DocC reads them).
/// Implementations of a protocol's requirements are exempt: DocC shows the protocol's text.
final class DocCommentTests: XCTestCase {
    static let protocolRequirements = [
        "var description", "var debugDescription", "init(stringLiteral", "init(booleanLiteral", "init(integerLiteral",
        "static func ==", "static func <", "func hash(into", "func encode(to", "init(from decoder",
        "func now()", "func wakeUp(at", "func load()", "func apply(_ changes", "func didLoad()", "func verify()",
        "static var valueType", "var paramValue", "init?(paramValue", "static var zero",
    ]

    func testEveryPublicDeclarationIsDocumented() throws {
        var undocumented: [String] = []
        let fm = FileManager.default
        for library in ["RuleLang", "RuleRuntime", "RuleTimeline", "RuleLSP"] {
            let directory = RulecBinary.packageRoot.appendingPathComponent("Sources/\(library)")
            let files = fm.enumerator(atPath: directory.path)?.compactMap { $0 as? String }.filter {
                $0.hasSuffix(".swift")
            }
            for file in (files ?? []).sorted() {
                let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map {
                    $0.trimmingCharacters(in: .whitespaces)
                }
                for (index, line) in lines.enumerated() where Self.isPublicDeclaration(line) {
                    if Self.protocolRequirements.contains(where: { line.contains($0) }) { continue }
                    var above = index - 1
                    while above >= 0, lines[above].hasPrefix("@") { above -= 1 }
                    if above < 0 || !(lines[above].hasPrefix("///") || lines[above].hasSuffix("*/")) {
                        undocumented.append("Sources/\(library)/\(file):\(index + 1): \(line)")
                    }
                }
            }
        }
        XCTAssertEqual(undocumented, [], "add a /// comment above each")
    }

    /// `public ...` after any attributes on the same line.
    static func isPublicDeclaration(_ line: String) -> Bool {
        var rest = Substring(line)
        while rest.hasPrefix("@") {
            guard let space = rest.firstIndex(of: " ") else { return false }
            rest = rest[rest.index(after: space)...]
        }
        return rest.hasPrefix("public ")
    }
}
