import Foundation
import TestSupport
import XCTest

@testable import RuleRuntime

/// The engine keeps its streams' recent times in one shared buffer (``StreamTallies``); these
/// tests hold every operation on it to what the same operations give on plain ``Tally`` values,
/// and the recent times of both to a model: every time recorded, sorted, the newest `keep`.
final class StreamTalliesTests: XCTestCase {
    func testRandomRecordsMatchPlainTallies() {
        var random = SeededGenerator(seed: UInt64(ProcessInfo.processInfo.environment["RULES_SEED"] ?? "") ?? 0x5EED)
        print("stream tallies seed: \(random.seed)")
        let slots = 40
        var pooled = StreamTallies(count: slots)
        var plain = Array(repeating: Tally(), count: slots)
        var model = Array(repeating: [Double](), count: slots)
        var keeps = (0..<slots).map { _ in [1, 2, 3, 5, 16, 17, 40][Int(random.next() % 7)] }
        var clock = 1_000.0
        for step in 0..<40_000 {
            let slot = Int(random.next() % UInt64(pooled.count))
            let context = "step \(step), slot \(slot), seed \(random.seed)"
            switch random.next() % 100 {
            case 0:
                // A stream made blank (clearDone), or replaced by a decoded or imported tally.
                let tally = random.next() % 2 == 0 ? Tally() : plain[Int(random.next() % UInt64(slots))]
                pooled[slot] = tally
                plain[slot] = tally
                model[slot] = tally.recent
            case 1:
                // The rules changed: a stream keeps more or fewer times than it has.
                keeps[slot] = [1, 2, 4, 16, 33][Int(random.next() % 5)]
            case 2:
                pooled.append()
                plain.append(Tally())
                model.append([])
                keeps.append(3)
            case 3 where random.next() % 20 == 0:
                pooled.removeAll()
                plain = Array(repeating: Tally(), count: plain.count)
                model = Array(repeating: [], count: model.count)
            default:
                // Mostly forward, sometimes back (a clock moved backwards), sometimes the same time.
                switch random.next() % 10 {
                case 0: clock -= Double(random.next() % 50)
                case 1: break
                default: clock += Double(random.next() % 20) + 0.5
                }
                let epoch = Epoch(sessionID: Int64(random.next() % 3), versionID: Int64(random.next() % 2))
                pooled.record(slot, at: clock, in: epoch, keep: keeps[slot])
                plain[slot].record(at: clock, in: epoch, keep: keeps[slot])
                model[slot] = Array((model[slot] + [clock]).sorted().suffix(keeps[slot]))
            }
            XCTAssertEqual(plain[slot].recent, model[slot], context)
            XCTAssertEqual(pooled[slot], plain[slot], context)
            XCTAssertTrue(pooled.equals(slot, plain[slot]), context)
            XCTAssertEqual(pooled.isBlank(slot), plain[slot].isBlank, context)
            let window = CountScope.within(Double(random.next() % 200))
            let epoch = Epoch(sessionID: 1, versionID: 1)
            XCTAssertEqual(
                pooled.count(slot, window, now: clock, in: epoch), plain[slot].count(window, now: clock, in: epoch),
                context)
            if step % 1_000 == 0 {
                for other in 0..<pooled.count {
                    XCTAssertEqual(pooled[other], plain[other], "\(context), other \(other)")
                }
            }
        }
    }

    /// Moving tallies to their slots (an engine's start over a large file), then taking out the
    /// ones that had none and putting them in slots of their own; the model is an array of plain
    /// tallies with each put where it goes, the last one where several go.
    func testMovingToSlotsMatchesPlainTallies() {
        var random = SeededGenerator(seed: UInt64(ProcessInfo.processInfo.environment["RULES_SEED"] ?? "") ?? 0x5107)
        for round in 0..<300 {
            let staged = Int(random.next() % 40)
            let count = Int(random.next() % 45) + 1
            // Some dropped (-1), some to the same slot as another.
            let slots = (0..<staged).map { _ in random.next() % 5 == 0 ? -1 : Int(random.next() % UInt64(count)) }
            var tallies = StreamTallies(count: staged)
            var plain: [Tally] = []
            for n in 0..<staged {
                var tally = Tally()
                for k in 0...(n % 4) {
                    tally.record(at: Double(n * 10 + k), in: Epoch(sessionID: 1, versionID: 1), keep: 3)
                }
                tallies[n] = tally
                plain.append(tally)
            }
            var expected = Array(repeating: Tally(), count: count)
            for (n, slot) in slots.enumerated() where slot >= 0 { expected[slot] = plain[n] }
            let unplaced = slots.indices.filter { slots[$0] < 0 }
            tallies = tallies.moved(to: slots, count: count, capacity: Int(random.next() % 100))
            XCTAssertEqual(tallies.count, count + unplaced.count, "round \(round)")
            for (k, n) in unplaced.enumerated() { XCTAssertEqual(tallies[count + k], plain[n], "round \(round)") }
            // The unplaced ones, each to a slot past the end or over a placed one (which it
            // replaces).
            let heads = tallies.removeTail(from: count)
            for (k, n) in unplaced.enumerated() {
                let slot = Int(random.next() % UInt64(count + 5))
                tallies.put(heads[k], at: slot)
                while expected.count <= slot { expected.append(Tally()) }
                expected[slot] = plain[n]
            }
            XCTAssertEqual(tallies.count, expected.count, "round \(round)")
            for slot in expected.indices {
                XCTAssertEqual(tallies[slot], expected[slot], "round \(round), slot \(slot), slots \(slots)")
            }
            // A tally replaced by `put` gave its block back: recording into every slot reuses it.
            for slot in expected.indices {
                tallies.record(slot, at: 1_000, in: Epoch(sessionID: 1, versionID: 1), keep: 3)
                expected[slot].record(at: 1_000, in: Epoch(sessionID: 1, versionID: 1), keep: 3)
                XCTAssertEqual(tallies[slot], expected[slot], "round \(round), slot \(slot) after a record")
            }
        }
    }

    func testEqualsSeesEveryField() {
        var pooled = StreamTallies(count: 1)
        var tally = Tally()
        let epoch = Epoch(sessionID: 1, versionID: 1)
        for time in [1.0, 2, 3] {
            pooled.record(0, at: time, in: epoch, keep: 16)
            tally.record(at: time, in: epoch, keep: 16)
        }
        XCTAssertTrue(pooled.equals(0, tally))
        var other = tally
        other.recent[0] = 1.5
        XCTAssertFalse(pooled.equals(0, other), "one recent time differs")
        other = tally
        other.recent.removeLast()
        XCTAssertFalse(pooled.equals(0, other), "one recent time fewer")
        other = tally
        other.counts.sessionCount += 1
        XCTAssertFalse(pooled.equals(0, other), "a count differs")
    }

    func testBlocksAreReusedNotLeaked() {
        // Streams growing one time at a time free each smaller block for the next stream: the
        // shared buffer ends at about the times kept, not the sum of every size passed through.
        var pooled = StreamTallies(count: 1_000)
        let epoch = Epoch(sessionID: 1, versionID: 1)
        for slot in 0..<1_000 {
            for time in 0..<3 { pooled.record(slot, at: Double(time), in: epoch, keep: 16) }
        }
        XCTAssertLessThanOrEqual(pooled.bufferLength, 3 * 1_000 + 1 + 2)
        XCTAssertEqual(pooled[999].recent, [0, 1, 2])
    }

    func testSizeClassesHoldTheirCounts() {
        for count in 1...5_000 {
            let capacity = StreamTallies.capacity(for: count)
            XCTAssertGreaterThanOrEqual(capacity, count)
            XCTAssertEqual(StreamTallies.capacity(for: capacity), capacity, "a full block is its own size")
            if count <= 16 { XCTAssertEqual(capacity, count) } else { XCTAssertLessThan(capacity, 2 * count) }
        }
    }

    /// A store that only returns entries (no record bytes): the engine decodes from a dictionary.
    private final class EntriesStore: RuleStore, @unchecked Sendable {
        let entries: [String: [UInt8]]
        init(_ entries: [String: [UInt8]]) { self.entries = entries }
        func load() throws -> [String: [UInt8]] { entries }
        func apply(_ changes: [StoreChange]) throws {}
    }

    func testStoredStreamsDecodeIntoTheirSlotsFromEveryKindOfStore() throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_000_000))
        let source = "scenario A < on a, b; min_events 3 >\nscenario B < min_events 1 >"
        let memory = InMemoryStore()
        let first = try RuleEngine(source: source, store: memory, clock: clock)
        for name in ["a", "b", "a", "app-only", "app-only", "B", "unicodé"] {
            first.trigger(Event(name))
            clock.advance(by: 60)
        }
        let entries = try memory.load()
        // A stream of the rules, one only the app named, a scenario's own stream; the view by reference.
        for store: RuleStore in [InMemoryStore(entries), EntriesStore(entries)] {
            let engine = try RuleEngine(source: source, store: store, clock: clock)
            for name in ["a", "b", "app-only", "B", "unicodé", "never"] {
                XCTAssertEqual(engine.count(Event(name)), first.count(Event(name)), "\(name), \(type(of: store))")
                XCTAssertEqual(engine.lastDone(name), first.lastDone(name), name)
            }
            for name in ["A", "B"] {
                XCTAssertEqual(engine.explain(Scenario(name)).description, first.explain(Scenario(name)).description)
            }
        }
    }

    func testDamagedStreamEntriesAreLocatedErrorsFromEveryKindOfStore() throws {
        var valid = ByteWriter()
        var tally = Tally()
        for time in [1.0, 2, 3] { tally.record(at: time, in: Epoch(sessionID: 0, versionID: 0), keep: 16) }
        EngineState.write(tally, to: &valid)
        let good = valid.bytes
        // The recent times start after the format byte, total, two optional times and the count.
        let timesAt = 1 + 1 + 9 + 9 + 1
        var outOfOrder = good
        outOfOrder.replaceSubrange(
            timesAt..<timesAt + 8, with: withUnsafeBytes(of: 9.0.bitPattern.littleEndian, Array.init))
        var notANumber = good
        notANumber.replaceSubrange(
            timesAt..<timesAt + 8, with: withUnsafeBytes(of: Double.nan.bitPattern.littleEndian, Array.init))
        let cases: [(String, [UInt8])] = [
            ("recent times out of order", outOfOrder), ("not a number", notANumber),
            ("unexpected end of data", Array(good.prefix(timesAt + 12))), ("entry format 7", [7] + good.dropFirst()),
        ]
        for (reason, value) in cases {
            let entries = ["e:a": good, "e:damaged": value]
            for store: RuleStore in [InMemoryStore(entries), EntriesStore(entries)] {
                XCTAssertThrowsError(try RuleEngine(source: "scenario A < on a, damaged >", store: store)) { error in
                    guard case RuleEngineError.store(.undecodableEntry(let key, let why)) = error else {
                        return XCTFail("\(error)")
                    }
                    XCTAssertEqual(key, "e:damaged")
                    XCTAssertTrue(why.contains(reason), "\(why), expected \(reason)")
                }
            }
        }
    }
}
