import Foundation
import RuleLang
import TestSupport
import XCTest

@testable import RuleRuntime

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
            case .trigger(let name): engine.trigger(Event(name))
            case .tryToExecute(let name): out.append("try \(name) \(engine.tryToExecute(Scenario(name)))")
            case .canExecute(let name): out.append("can \(name) \(engine.canExecute(Scenario(name)))")
            case .recordExecution(let name): out.append("record \(name) \(engine.recordExecution(Scenario(name)))")
            case .reset(let name): out.append("reset \(name) \(engine.reset(Scenario(name)))")
            case .session(let version): engine.startSession(version: version)
            case .set(let value): out.append("set \((try? engine.set(Param<Int>("lvl"), to: value)) != nil)")
            case .advance(let seconds): clock.advance(by: seconds)
            }
            for name in names { out.append(engine.explain(Scenario(name)).description) }
        }
        return out
    }

    static func snapshot(_ store: InMemoryStore) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(StateSnapshot(entries: store.load())), as: UTF8.self)
    }

    /// Whether a swapped engine equals a restart with the new rules: warnings, answers and stored
    /// state (a failure is reported, located at the first difference).
    static func sameAsRestart(
        trial: Int, old: String, new: String, swapped: (RuleEngine, [String], InMemoryStore),
        restarted: (RuleEngine, [String], InMemoryStore)
    ) throws -> Bool {
        XCTAssertEqual(
            swapped.0.warnings.map { "\($0.span.start) \($0.message)" },
            restarted.0.warnings.map { "\($0.span.start) \($0.message)" }, "trial \(trial)")
        let (swapAnswers, restartAnswers) = (swapped.1, restarted.1)
        if swapAnswers != restartAnswers {
            let first =
                swapAnswers.indices.first { $0 >= restartAnswers.count || swapAnswers[$0] != restartAnswers[$0] } ?? 0
            XCTFail(
                "trial \(trial): answers differ at \(first)\nold:\n\(old)\nnew:\n\(new)\n"
                    + "swap: \(swapAnswers[first...].prefix(3))\nrestart: \(restartAnswers[first...].prefix(3))")
            return false
        }
        let (a, b) = (try snapshot(swapped.2), try snapshot(restarted.2))
        if a != b {
            XCTFail("trial \(trial): stored state differs\nold:\n\(old)\nnew:\n\(new)\n\(a)\n\(b)")
            return false
        }
        return true
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

            let same = try Self.sameAsRestart(
                trial: trial, old: old.text, new: new.text, swapped: (swapped, swapAnswers, swapStore),
                restarted: (fresh, restartAnswers, restartStore))
            if !same { return }
        }
        XCTAssertGreaterThan(renamedCases, 500, "renames are exercised")
    }

    /// A swap decodes the stored state outside the engine's lock; calls made meanwhile (on the
    /// old rules) are applied to it from the core's journal. The engine then equals a restart
    /// made after those calls: answers, warnings, stored state. Rules that rename take the
    /// path that reads the store again under the lock, and must equal a restart too.
    func testCallsWhileASwapDecodesEqualARestartAfterThem() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["RULES_SEED"] ?? "") ?? 0x7C1D
        var g = SeededGenerator(seed: seed)
        print("swap journal seed: \(seed)")
        var journaled = 0
        for trial in 0..<1500 {
            let old = Self.randomRules(&g)
            var renames: [String: String] = [:]
            for (k, name) in Self.scenarios.enumerated() where Int.random(in: 0..<6, using: &g) == 0 {
                renames[name] = "R\(k)"
            }
            let new = Self.randomRules(&g, renaming: renames)
            let before = Self.randomHistory(&g, count: Int.random(in: 0...20, using: &g))
            let during = Self.randomHistory(&g, count: Int.random(in: 0...12, using: &g))
            let after = Self.randomHistory(&g, count: Int.random(in: 1...12, using: &g))

            let swapStore = InMemoryStore()
            let swapClock = ManualClock()
            let swapped = try RuleEngine(source: old.text, store: swapStore, clock: swapClock)
            _ = Self.run(before, swapped, swapClock, names: [])
            var duringAnswers: [String] = []
            swapped.betweenSwapSteps = { duringAnswers = Self.run(during, swapped, swapClock, names: old.names) }
            try swapped.replaceRules(source: new.text)
            swapped.betweenSwapSteps = nil
            let swapAnswers = Self.run(after, swapped, swapClock, names: new.names)

            let restartStore = InMemoryStore()
            let restartClock = ManualClock()
            var restarted: RuleEngine? = try RuleEngine(source: old.text, store: restartStore, clock: restartClock)
            _ = Self.run(before, restarted!, restartClock, names: [])
            let restartDuring = Self.run(during, restarted!, restartClock, names: old.names)
            restarted = nil
            let fresh = try RuleEngine(source: new.text, store: restartStore, clock: restartClock)
            let restartAnswers = Self.run(after, fresh, restartClock, names: new.names)

            XCTAssertEqual(duringAnswers, restartDuring, "trial \(trial): the old rules answer while the swap decodes")
            let same = try Self.sameAsRestart(
                trial: trial, old: old.text, new: new.text, swapped: (swapped, swapAnswers, swapStore),
                restarted: (fresh, restartAnswers, restartStore))
            if !same { return }
            if !during.isEmpty { journaled += swapped.journaledSwaps }
        }
        // Calls made while decoding, applied from the journal (the others read the store again).
        XCTAssertGreaterThan(journaled, 600, "swaps made from the state decoded outside the lock")
    }

    /// Triggers and executions on other threads while one thread swaps rules back and forth:
    /// at the end the engine answers as a restart over its store does, and the store holds
    /// every call (each thread's calls counted).
    func testSwapsUnderConcurrentCallsEqualARestart() throws {
        let ruleSets = [
            "event a, b\nscenario S0 < on a, b; min_events 3; max_exec 500 >\nscenario S1 < on b; between 1s >\n",
            "event a, b\nscenario S0 < on a; min_events 2 >\nscenario S1 < on a, b; max_exec 400 within 1d >\n",
        ]
        for storeKind in ["memory", "file"] {
            let url = scratchFolder("rules-swap").appendingPathComponent("state")
            let memory = InMemoryStore()
            let clock = ManualClock()
            let callers = 2
            // Each caller makes at least this many calls, and goes on until the swaps below
            // number `leastSwaps` (a fast machine finished its calls within two swaps).
            let perCaller = 3_000
            let leastSwaps = 4
            let swapped = Locked(0)
            let made = Locked([Int](repeating: 0, count: callers))
            var swaps = 0
            var answers: [String] = []
            var counts: [Int] = []
            do {
                let store: RuleStore = storeKind == "memory" ? memory : FileStore(url: url)
                let engine = try RuleEngine(source: ruleSets[0], store: store, clock: clock)
                let done = DispatchGroup()
                for caller in 0..<callers {
                    DispatchQueue.global().async(group: done) {
                        var k = 0
                        while k < perCaller || swapped.withValue({ $0 }) < leastSwaps {
                            engine.trigger(k % 2 == 0 ? "a" : "b")
                            if k % 7 == caller { _ = engine.tryToExecute(k % 3 == 0 ? "S0" : "S1") }
                            engine.markDone("tag\(caller)")
                            k += 1
                        }
                        made.withValue { $0[caller] = k }
                    }
                }
                while done.wait(timeout: .now()) == .timedOut {
                    try engine.replaceRules(source: ruleSets[(swaps + 1) % 2])
                    swaps += 1
                    swapped.withValue { $0 = swaps }
                }
                XCTAssertGreaterThanOrEqual(swaps, leastSwaps, storeKind)
                XCTAssertGreaterThan(engine.journaledSwaps, 0, storeKind)
                for caller in 0..<callers {
                    XCTAssertEqual(
                        engine.count("tag\(caller)"), made.withValue { $0[caller] }, "\(storeKind): every call kept")
                }
                answers = ["S0", "S1"].map { engine.explain($0).description }
                counts = ["a", "b"].map { engine.count($0) }
            }
            let reopened: RuleStore = storeKind == "memory" ? memory : FileStore(url: url)
            let restart = try RuleEngine(source: ruleSets[swaps % 2], store: reopened, clock: clock)
            XCTAssertEqual(["S0", "S1"].map { restart.explain($0).description }, answers, storeKind)
            XCTAssertEqual(["a", "b"].map { restart.count($0) }, counts, storeKind)
            XCTAssertEqual(counts.reduce(0, +), made.withValue { $0.reduce(0, +) }, storeKind)
        }
    }

    /// An exclusive file read outside the lock: calls made between the swap's steps that
    /// compact the file (twice over), or the file cut short or replaced by something else
    /// then, still leave the engine equal to a restart, with every call kept. A file cut short
    /// fails the read outside the lock, and the swap reads the store again under it.
    func testAFileReadOutsideTheLockSurvivesCompactionsAndOutsideChanges() throws {
        let rules = "event a\nscenario S < on a; min_events 3; max_exec 100 >\n"
        let swapped = "event a\nscenario S < on a; min_events 4; max_exec 100 within 1d >\n"
        for fault in ["compact", "cut", "replace"] {
            let url = scratchFolder("rules-swap").appendingPathComponent("state")
            let options = FileStore.Options(compactionThreshold: 4_096)
            let clock = ManualClock()
            var expected: [String] = []
            do {
                let store = FileStore(url: url, options: options)
                let engine = try RuleEngine(source: rules, store: store, clock: clock)
                for k in 0..<200 { engine.markDone("tag\(k % 50)") }
                engine.betweenSwapSteps = {
                    switch fault {
                    case "cut":
                        // Something else cuts the file to its header.
                        truncate(url.path, 16)
                    case "replace":
                        // An older copy put in place (the engine writes its state again).
                        try? FileManager.default.removeItem(at: url)
                        _ = FileManager.default.createFile(atPath: url.path, contents: Data())
                    default: break
                    }
                    for k in 0..<3_000 { engine.markDone("tag\(k % 50)") }
                    _ = engine.tryToExecute("S")
                }
                try engine.replaceRules(source: swapped)
                engine.betweenSwapSteps = nil
                XCTAssertEqual(engine.journaledSwaps, fault == "cut" ? 0 : 1, fault)
                if fault == "compact" { XCTAssertGreaterThanOrEqual(store.compactions, 2) }
                XCTAssertEqual((0..<50).map { engine.count("tag\($0)") }, Array(repeating: 64, count: 50), fault)
                expected = (0..<50).map { "\(engine.count("tag\($0)"))" } + [engine.explain("S").description]
            }
            let restart = try RuleEngine(source: swapped, store: FileStore(url: url, options: options), clock: clock)
            let got = (0..<50).map { "\(restart.count("tag\($0)"))" } + [restart.explain("S").description]
            XCTAssertEqual(got, expected, fault)
        }
    }

    /// Something else writes the store between a swap's steps (the app's own `apply` on it):
    /// the engine's journal does not hold that record, the store's count of records says so,
    /// and the swap reads the store again under the lock. Then the engine equals a restart.
    func testAWriteToTheStoreFromOutsideTheEngineDuringASwapIsKept() throws {
        for kind in ["memory", "file"] {
            let url = scratchFolder("rules-swap").appendingPathComponent("state")
            let memory = InMemoryStore()
            let clock = ManualClock()
            var expected: [Int] = []
            do {
                let store: RuleStore = kind == "memory" ? memory : FileStore(url: url)
                let engine = try RuleEngine(source: "scenario S < on a; min_events 2 >", store: store, clock: clock)
                engine.trigger("a")
                // A tally of three events on stream b, as the app would write it straight into the store.
                var tally = Tally()
                for time in [10.0, 20, 30] { tally.record(at: time, in: Epoch(sessionID: 0, versionID: 0), keep: 16) }
                let outside = EngineState.change(key: "e:b", tally)
                engine.betweenSwapSteps = {
                    engine.trigger("a")
                    try? store.apply([outside])
                }
                try engine.replaceRules(source: "scenario S < on a, b; min_events 5 >")
                engine.betweenSwapSteps = nil
                XCTAssertEqual(engine.journaledSwaps, 0, "\(kind): read again under the lock")
                expected = [engine.count("a"), engine.count("b")]
                XCTAssertEqual(expected, [2, 3], kind)
                XCTAssertTrue(engine.canExecute("S"), kind)
            }
            let reopened: RuleStore = kind == "memory" ? memory : FileStore(url: url)
            let restart = try RuleEngine(source: "scenario S < on a, b; min_events 5 >", store: reopened, clock: clock)
            XCTAssertEqual([restart.count("a"), restart.count("b")], expected, kind)
        }
    }
}
