import Foundation
import TestSupport
import XCTest

@testable import RuleRuntime

/// Other processes' records taken in entry by entry (``EngineCore/applyDirectly(written:_:)``)
/// against the same records decoded as a whole state (``EngineCore/apply(written:_:droppingOtherTypes:)``
/// with ``EngineCore/catchesUpWhole``): seeded runs of engines on one shared file, each run twice,
/// give the same answers and the same state after every call.
final class DirectCatchUpTests: XCTestCase {
    let rules = """
        # language 1.1
        param level: int = 0
        scenario One < on x; min_events 2; max_exec 3; between 1h >
        scenario Two < on x, y; min_events 3 >
        scenario Days < on y; min_days 2 within 7d >
        scenario Plain < max_exec 5 >
        group G < max_exec 2 within 1d > {
            scenario A < on y; min_events 1 >
            scenario B < on x; when level >= 1 >
        }
        """
    /// An older app's rules beside them: fewer scenarios, so its records and theirs name
    /// things the other does not know.
    let olderRules = """
        param level: int = 0
        scenario One < on x; min_events 2; max_exec 3; between 1h >
        scenario Two < on x, y; min_events 3 >
        group G < max_exec 2 within 1d > {
            scenario A < on y; min_events 1 >
        }
        """

    /// Everything engine `engine` holds, as a store would (sorted), and its answers so far.
    private func image(_ engine: RuleEngine) -> [String] {
        engine.locked { core in
            core.image().map { change in
                let value = change.value.map { $0.map { String($0, radix: 16) }.joined(separator: ".") }
                return "\(change.key)=\(value ?? "-")"
            }
        }.sorted()
    }

    /// One seeded run; returns, after every call, what it answered and every engine's image, and
    /// how many records were taken in entry by entry.
    private func run(seed: UInt64, whole: Bool) throws -> (trace: [String], direct: Int) {
        let url = temporaryURL("direct.state")
        defer { removeFolder(of: url) }
        let clock = ManualClock()
        var engines: [RuleEngine] = []
        for source in [rules, rules, olderRules] {
            let engine = try RuleEngine(
                source: source, store: FileStore(url: url, options: .init(shared: true)), clock: clock)
            engine.locked { $0.catchesUpWhole = whole }
            engines.append(engine)
        }
        var random = SeededGenerator(seed: seed)
        var trace: [String] = []
        for step in 0..<300 {
            let engine = engines[Int(random.next() % 3)]
            let roll = random.next() % 100
            var answer = ""
            switch roll {
            case 0..<40: engine.trigger(random.next() % 2 == 0 ? "x" : "y")
            case 40..<60:
                let name = ["One", "Two", "Days", "Plain", "A", "B"][Int(random.next() % 6)]
                answer = "\(engine.tryToExecute(Scenario(name)))"
            case 60..<70: clock.advance(by: Double(random.next() % 5_000))
            case 70..<75: clock.advance(by: Double(random.next() % 200_000))
            case 75..<80: try? engine.set(Param<Int>("level"), to: Int(random.next() % 3))
            case 80..<84: engine.startSession(version: "1.\(random.next() % 3)")
            case 84..<87: answer = "\(engine.reset(["One", "Two", "A"][Int(random.next() % 3)]))"
            case 87..<90: engine.trigger("z\(random.next() % 4)")
            default: answer = "\(engine.count("x")) \(engine.count("y"))"
            }
            let images = engines.map { image($0).joined(separator: ",") }
            trace.append("\(step) \(roll) \(answer) " + images.joined(separator: " | "))
        }
        return (trace, engines.map { $0.locked { $0.directCatchUps } }.reduce(0, +))
    }

    func testRecordsTakenInEntryByEntryEqualRecordsDecodedWhole() throws {
        var direct = 0
        for seed in UInt64(1)...6 {
            let entryByEntry = try run(seed: seed, whole: false)
            let whole = try run(seed: seed, whole: true)
            XCTAssertEqual(whole.direct, 0)
            direct += entryByEntry.direct
            for (a, b) in zip(entryByEntry.trace, whole.trace) where a != b {
                XCTFail("seed \(seed): first difference\nentry by entry: \(a)\nwhole:          \(b)")
                break
            }
            XCTAssertEqual(entryByEntry.trace.count, whole.trace.count)
        }
        // The direct path ran (most records), and some went the whole way (the older app's).
        XCTAssertGreaterThan(direct, 300)
    }
}
