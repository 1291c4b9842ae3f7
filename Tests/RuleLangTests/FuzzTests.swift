import RuleLang
import XCTest

/// Random and adversarial bytes: the front end always returns, with diagnostics, never traps.
final class FuzzTests: XCTestCase {
    /// A small deterministic generator so failures reproduce.
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    private func checkAndRender(_ bytes: [UInt8]) {
        let result = RuleCompiler.check([SourceFile(path: "fuzz.rules", bytes: bytes)])
        _ = DiagnosticRenderer().render(result.diagnostics)
        for diagnostic in result.diagnostics {
            XCTAssertLessThanOrEqual(diagnostic.range.upperBound, bytes.count)
        }
    }

    func testRandomBytes() {
        var rng = SplitMix(state: 42)
        for _ in 0..<300 {
            let count = Int.random(in: 0..<400, using: &rng)
            checkAndRender((0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) })
        }
    }

    func testRandomTokenSoup() {
        let pieces = [
            "scenario", "group", "param", "A", "<", ">", "<=", "==", ";", "{", "}", "(", ")", ",", ":",
            "=", "min_events", "max_exec", "between", "when", "on", "per", "within", "session", "5",
            "7d", "1d12h", "\"s\"", "not", "and", "or", "count", "executions", "todo", "true", "#", "\n",
            "\"", "\\", "99999999999999999999", "é", "\u{0}", "priority", "int", "duration",
        ]
        var rng = SplitMix(state: 7)
        for _ in 0..<2_000 {
            let count = Int.random(in: 1..<60, using: &rng)
            let text = (0..<count).map { _ in pieces.randomElement(using: &rng)! }.joined(separator: " ")
            checkAndRender(Array(text.utf8))
        }
    }

    func testAdversarialShapes() {
        let shapes: [[UInt8]] = [
            [UInt8](repeating: UInt8(ascii: "("), count: 1 << 20),
            [UInt8](repeating: 0, count: 100_000),
            [UInt8](repeating: 0xFF, count: 100_000),
            Array(("scenario A < when " + String(repeating: "not (", count: 50_000)).utf8),
            Array(String(repeating: "scenario A < ", count: 20_000).utf8),
            Array(String(repeating: ">", count: 100_000).utf8),
            Array(("\"" + String(repeating: "\\", count: 100_001)).utf8),
            Array(("scenario A < when " + String(repeating: "1 == ", count: 50_000) + "1 >").utf8),
            Array(("scenario A < when " + String(repeating: "true and ", count: 50_000) + "true >").utf8),
        ]
        for shape in shapes { checkAndRender(shape) }
    }
}
