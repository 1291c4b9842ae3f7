import RuleLang
import XCTest

@testable import RuleTimeline

/// Random and adversarial timelines: the timeline parser always returns, with diagnostics.
final class TimelineFuzzTests: XCTestCase {
    func testRandomTimelinesNeverTrap() {
        let program = RuleCompiler.check(
            text: "param n: int\nparam d: duration\nparam s: string\nparam b: bool\nscenario Ask < max_exec 1 >"
        ).program
        let pieces = [
            "0", "1d", "90s", "-1", "1x", "launch", "trigger", "done", "try", "set", "reset", "todo", "check",
            "next", "Ask", "n", "d", "s", "b", "true", "12", "2h", "until", "\"", "\"a b\"", "\\", "#", "(", ")",
            ">", "<", "count(x)", "==", "and", "\n", "\t", "é", "\u{0}",
        ]
        var state: UInt64 = 1
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        for _ in 0..<2_000 {
            let text = (0..<(1 + next(30))).map { _ in pieces[next(pieces.count)] }.joined(separator: " ")
            let file = SourceFile(path: "t.timeline", text: text)
            var parser = TimelineParser(file: file, program: program)
            _ = parser.parse()
            for diagnostic in parser.diagnostics {
                XCTAssertLessThanOrEqual(diagnostic.range.upperBound, file.bytes.count)
            }
        }
        var bytes: [UInt8] = []
        for _ in 0..<5_000 { bytes.append(UInt8(next(256))) }
        var parser = TimelineParser(file: SourceFile(path: "t", bytes: bytes), program: program)
        _ = parser.parse()
    }
}
