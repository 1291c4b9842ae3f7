import Foundation
import RuleLang
import RuleRuntime
import XCTest

/// A swap must leave the engine exactly where a restart with the new rules would: same
/// answers, same explanations, same stored state.
final class SwapDifferentialTests: XCTestCase {
    static let scenarios = ["S0", "S1", "S2", "S3"]
    static let events = ["a", "b", "c"]

    /// Random rules over a small pool of names, so that two draws share, drop and rename some.
    static func randomRules(_ g: inout SeededGenerator, renaming previous: [String: String] = [:]) -> (
        text: String, names: [String]
    ) {
        var lines = ["# language 1.1"]
        let renameEvent = !previous.isEmpty && Bool.random(using: &g)
        let stream = renameEvent ? "d" : "a"
        lines.append("event " + (renameEvent ? "d was a" : "a") + ", b, c")
        let intParam = Int.random(in: 0..<5, using: &g) != 0
        lines.append(intParam ? "param lvl: int = 1" : "param lvl: string")
        var names: [String] = []
        var members: [String] = []
        for base in scenarios where Int.random(in: 0..<5, using: &g) != 0 {
            var name = base
            var header = base
            if let renamed = previous[base] {
                name = renamed
                header = "\(renamed) was \(base)"
            }
            var clauses: [String] = []
            if Bool.random(using: &g) {
                let on = [stream, "b", "c"].filter { _ in Bool.random(using: &g) }
                if !on.isEmpty { clauses.append("on " + on.joined(separator: ", ")) }
            }
            let scopes = ["", " per session", " within 2d", " per version"]
            if Bool.random(using: &g) {
                clauses.append("min_events \(Int.random(in: 1...4, using: &g))" + scopes.randomElement(using: &g)!)
            }
            if Bool.random(using: &g) { clauses.append("max_exec \(Int.random(in: 1...3, using: &g))") }
            if Bool.random(using: &g) {
                clauses.append("between \(["1h", "6h", "1d", "2d"].randomElement(using: &g)!)")
            }
            if Int.random(in: 0..<3, using: &g) == 0 {
                clauses.append("since_first \(["1h", "1d", "3d"].randomElement(using: &g)!)")
            }
            if intParam && Int.random(in: 0..<3, using: &g) == 0 {
                clauses.append("when lvl >= \(Int.random(in: 0...3, using: &g))")
            }
            if Int.random(in: 0..<4, using: &g) == 0 { clauses.append("when count(b) >= 1") }
            if clauses.isEmpty { clauses.append("min_events 1") }
            let line = "scenario \(header) < \(clauses.joined(separator: "; ")) >"
            if Int.random(in: 0..<3, using: &g) == 0 { members.append("    " + line) } else { lines.append(line) }
            names.append(name)
        }
        if !members.isEmpty {
            lines.append("group G < max_exec \(Int.random(in: 1...3, using: &g)) within 1d > {")
            lines += members
            lines.append("}")
        }
        return (lines.joined(separator: "\n") + "\n", names)
    }

    enum Step {
        case trigger(String)
        case tryToExecute(String)
        case canExecute(String)
        case recordExecution(String)
        case reset(String)
        case session(String)
        case set(Int)
        case advance(Double)
    }

    static func randomHistory(_ g: inout SeededGenerator, count: Int) -> [Step] {
        let names = scenarios + ["R0", "R1", "R2", "R3", "G"]
        let streams = events + ["d"] + scenarios + ["R0", "R1"]
        return (0..<count).map { _ in
            switch Int.random(in: 0..<12, using: &g) {
            case 0..<4: return .trigger(streams.randomElement(using: &g)!)
            case 4, 5: return .tryToExecute(names.randomElement(using: &g)!)
            case 6: return .canExecute(names.randomElement(using: &g)!)
            case 7: return .recordExecution(names.randomElement(using: &g)!)
            case 8:
                return Int.random(in: 0..<4, using: &g) == 0 ? .reset(names.randomElement(using: &g)!) : .advance(60)
            case 9: return .session(["1.0", "1.1"].randomElement(using: &g)!)
            case 10: return .set(Int.random(in: 0...3, using: &g))
            default: return .advance(Double(Int.random(in: 1...40, using: &g)) * 3600)
            }
        }
    }

    /// Runs `steps`, returning what each answered and, after each, every scenario's explanation.
    static func run(_ steps: [Step], _ engine: RuleEngine, _ clock: ManualClock, names: [String]) -> [String] {
        var out: [String] = []
        for step in steps {
            switch step {
            case .trigger(let name): engine.trigger(name)
            case .tryToExecute(let name): out.append("try \(name) \(engine.tryToExecute(name))")
            case .canExecute(let name): out.append("can \(name) \(engine.canExecute(name))")
            case .recordExecution(let name): out.append("record \(name) \(engine.recordExecution(name))")
            case .reset(let name): out.append("reset \(name) \(engine.reset(name))")
            case .session(let version): engine.startSession(version: version)
            case .set(let value): out.append("set \((try? engine.set("lvl", to: .int(Int64(value)))) != nil)")
            case .advance(let seconds): clock.advance(by: seconds)
            }
            for name in names { out.append(engine.explain(name).description) }
        }
        return out
    }

    static func snapshot(_ store: InMemoryStore) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(StateSnapshot(entries: store.load())), as: UTF8.self)
    }

    func testSwapThenCallsEqualsRestartWithTheNewRulesThenCalls() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["RULES_SEED"] ?? "") ?? 0x5A4B
        var g = SeededGenerator(seed: seed)
        print("swap differential seed: \(seed)")
        var renamedCases = 0
        for trial in 0..<2000 {
            let old = Self.randomRules(&g)
            var renames: [String: String] = [:]
            for (k, name) in Self.scenarios.enumerated() where Int.random(in: 0..<3, using: &g) == 0 {
                renames[name] = "R\(k)"
            }
            let new = Self.randomRules(&g, renaming: renames)
            if !renames.isEmpty { renamedCases += 1 }
            let before = Self.randomHistory(&g, count: Int.random(in: 0...25, using: &g))
            let after = Self.randomHistory(&g, count: Int.random(in: 1...15, using: &g))

            let swapStore = InMemoryStore()
            let swapClock = ManualClock()
            let swapped = try RuleEngine(source: old.text, store: swapStore, clock: swapClock)
            _ = Self.run(before, swapped, swapClock, names: [])
            try swapped.replaceRules(source: new.text)
            let swapAnswers = Self.run(after, swapped, swapClock, names: new.names)

            let restartStore = InMemoryStore()
            let restartClock = ManualClock()
            var restarted: RuleEngine? = try RuleEngine(source: old.text, store: restartStore, clock: restartClock)
            _ = Self.run(before, restarted!, restartClock, names: [])
            restarted = nil
            let fresh = try RuleEngine(source: new.text, store: restartStore, clock: restartClock)
            let restartAnswers = Self.run(after, fresh, restartClock, names: new.names)

            XCTAssertEqual(
                swapped.warnings.map { "\($0.span.start) \($0.message)" },
                fresh.warnings.map { "\($0.span.start) \($0.message)" }, "trial \(trial)")
            if swapAnswers != restartAnswers {
                let first =
                    swapAnswers.indices.first { $0 >= restartAnswers.count || swapAnswers[$0] != restartAnswers[$0] }
                    ?? 0
                XCTFail(
                    "trial \(trial): answers differ at \(first)\nold:\n\(old.text)\nnew:\n\(new.text)\n"
                        + "swap: \(swapAnswers[first...].prefix(3))\nrestart: \(restartAnswers[first...].prefix(3))")
                return
            }
            let (a, b) = (try Self.snapshot(swapStore), try Self.snapshot(restartStore))
            if a != b {
                XCTFail("trial \(trial): stored state differs\nold:\n\(old.text)\nnew:\n\(new.text)\n\(a)\n\(b)")
                return
            }
        }
        XCTAssertGreaterThan(renamedCases, 500, "renames are exercised")
    }
}
