import Foundation
import XCTest

@testable import RuleLang
@testable import RuleTools

/// `Formatter`: one canonical layout, idempotent, meaning-preserving, comments kept.
final class FormatterTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The valid example files (examples/ without invalid/, plus the apps' rules).
    static func exampleFiles() throws -> [SourceFile] {
        var result: [SourceFile] = []
        let fm = FileManager.default
        for directory in ["examples", "Sources/ReadmeApp"] {
            let base = root.appendingPathComponent(directory)
            for path in fm.enumerator(atPath: base.path)?.compactMap({ $0 as? String }) ?? []
            where path.hasSuffix(".rules") && !path.hasPrefix("invalid/") && !path.contains(".build/") {
                let url = base.appendingPathComponent(path)
                result.append(SourceFile(path: url.path, bytes: [UInt8](try Data(contentsOf: url))))
            }
        }
        return result
    }

    /// The program's meaning: every declaration printed canonically, ranges aside.
    static func meaning(_ file: SourceFile) -> [String] {
        let (parsed, _) = Parser.parse(file)
        return parsed.declarations.map { declaration in
            switch declaration {
            case .event(let decl): return "event " + decl.names.map(\.text).joined(separator: "|")
            case .param(let decl):
                return "param \(decl.name.text) \(decl.type?.rawValue ?? "") "
                    + (decl.defaultValue.map(Printer.expression) ?? "")
            case .scenario(let decl):
                return "scenario \(decl.name.text) "
                    + decl.clauses.map { Printer.clause($0.kind) }.joined(separator: "|")
            case .group(let decl):
                return "group \(decl.name.text) " + decl.clauses.map { Printer.clause($0.kind) }.joined(separator: "|")
                    + " {"
                    + decl.members.map {
                        "\($0.name.text) " + $0.clauses.map { Printer.clause($0.kind) }.joined(separator: "|")
                    }
                    .joined(separator: "; ") + "}"
            }
        }
    }

    static func commentTexts(_ file: SourceFile) -> [String] { Formatter.comments(file).map(\.text) }

    func check(_ source: SourceFile, width: Int = 100, file: StaticString = #filePath, line: UInt = #line) {
        guard let once = Formatter.format(source, width: width).text else {
            return XCTFail("\(source.path) has errors", file: file, line: line)
        }
        let formatted = SourceFile(path: source.path, text: once)
        XCTAssertFalse(RuleCompiler.check([formatted]).hasErrors, "\(source.path):\n\(once)", file: file, line: line)
        XCTAssertEqual(Self.meaning(formatted), Self.meaning(source), source.path, file: file, line: line)
        XCTAssertEqual(Self.commentTexts(formatted), Self.commentTexts(source), source.path, file: file, line: line)
        XCTAssertEqual(
            Formatter.format(formatted, width: width).text, once, "idempotent: \(source.path)", file: file, line: line)
        for outputLine in once.split(separator: "\n") where !outputLine.contains("#") && !outputLine.contains("//") {
            // A line over the width is a one-clause line that cannot be broken further.
            if outputLine.count > width {
                XCTAssertFalse(outputLine.contains("; "), String(outputLine), file: file, line: line)
            }
        }
    }

    func testEveryExampleIsIdempotentMeaningPreservingAndKeepsItsComments() throws {
        let files = try Self.exampleFiles()
        XCTAssertGreaterThanOrEqual(files.count, 15)
        for file in files {
            check(file)
            check(file, width: 40)
        }
    }

    func testGeneratedProgramsSurviveFormatting() {
        var state: UInt64 = 0x5EED
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        let clauses = [
            "min_events 3", "max_events 1_000 per session", "max_exec 2 within 1d", "since_first 36h", "since_last 90m",
            "between 2w", "on a, \"b c\"", "when (count(a within 1h) > 2) and not flag", "priority 7",
            "when since_last(a) >= 4d or flag == true",
        ]
        let comments = ["", " # note", " // other"]
        print("formatter generated programs seed: 0x5EED")
        for _ in 0..<300 {
            var text = "param flag: bool = false  # a flag\n\n"
            for index in 0..<(1 + next(4)) {
                if next(3) == 0 { text += "# before \(index)\n" }
                let body = (0..<next(6)).map { _ in clauses[next(clauses.count)] }
                if next(2) == 0 {
                    text += "scenario S\(index) < " + body.joined(separator: "; ") + " >" + comments[next(3)] + "\n"
                } else {
                    text +=
                        "scenario S\(index) <\n" + body.map { "  \($0);" + comments[next(3)] }.joined(separator: "\n")
                        + "\n>\n"
                }
                if next(4) == 0 { text += "\n\n" }
            }
            check(SourceFile(path: "g.rules", text: text), width: 20 + next(100))
        }
    }

    func testLayout() {
        let source = """
            # Header comment.
            param   n :int=1_000


            scenario   A<min_events 5;between 36h>   # trailing
            group G < max_exec 1 > { scenario B < on x > # after B
              scenario C <
                # inside C
                on y; min_events 2  # about the count
              >
            }
            """
        let formatted = Formatter.format(SourceFile(path: "t.rules", text: source)).text
        XCTAssertEqual(
            formatted,
            """
            # Header comment.
            param n: int = 1_000

            scenario A < min_events 5; between 1d12h >  # trailing
            group G < max_exec 1 > {
                scenario B < on x >                      # after B
                scenario C <
                    # inside C
                    on y;
                    min_events 2    # about the count
                >
            }

            """)
    }

    func testErrorsLeaveTheFileAlone() {
        let (text, diagnostics) = Formatter.format(SourceFile(path: "t.rules", text: "scenario A < min_event 1 >"))
        XCTAssertNil(text)
        XCTAssertEqual(diagnostics.map(\.id), [.unknownClause])
    }
}
