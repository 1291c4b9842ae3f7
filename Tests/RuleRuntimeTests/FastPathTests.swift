import Foundation
import RuleLang
import XCTest

@testable import RuleRuntime

/// The per-call paths answer without building explanations and look names up in a
/// ``NameTable``: these tests hold them to the same answers as the slow, explained path.
final class FastPathTests: XCTestCase {
    func testNameTableFindsEveryNameAndNothingElse() {
        var table = NameTable()
        // Short and long names, Unicode, names differing in one byte, and enough to grow the table.
        var names = ["", "a", "b", "ab", "ba", "AskToSubscribe", "ask-to-subscribe", "é", "日本語のイベント", "Ω"]
        names += (0..<3_000).map { "stream-\($0)-\(String(repeating: "x", count: $0 % 40))" }
        for (position, name) in names.enumerated() { XCTAssertEqual(table.insert(name), position, name) }
        XCTAssertEqual(table.count, names.count)
        for (position, name) in names.enumerated() {
            XCTAssertEqual(table[name], position, name)
            XCTAssertEqual(table.name(at: position), name)
        }
        for missing in ["c", "AskToSubscrib", "AskToSubscribeX", "stream-3000-", "stream-1-"] {
            XCTAssertNil(table[missing], missing)
        }
        // A Substring's String and a bridged copy find the same entry.
        XCTAssertEqual(table[String("xAskToSubscribe".dropFirst())], 5)
        // Names Swift considers equal are one name, whichever spelling comes first (`é` as
        // e + U+0301; Ω as OHM SIGN; K as KELVIN SIGN, which composes to ASCII); the first
        // spelling is the one kept.
        XCTAssertEqual(table["e\u{301}"], 7)
        XCTAssertEqual(table["\u{2126}"], 9)
        XCTAssertEqual(table.insert("e\u{301}"), 7)
        XCTAssertEqual(table.name(at: 7), "é")
        "e\u{301}".utf8.withContiguousStorageIfAvailable {
            XCTAssertEqual(table.position(of: UnsafeRawBufferPointer($0)), 7)
        }
        let kelvin = table.insert("\u{212A}")
        XCTAssertEqual(table["K"], kelvin)
        "K".utf8.withContiguousStorageIfAvailable {
            XCTAssertEqual(table.position(of: UnsafeRawBufferPointer($0)), kelvin)
        }
        XCTAssertEqual(table.insert("K"), kelvin)
        XCTAssertNil(table["k"])
        XCTAssertEqual(table.count, names.count + 1)
        table = NameTable()
        for (position, name) in names.enumerated() { XCTAssertEqual(table.insert(name), position, name) }
        // Inserting a name again gives its position and stores nothing.
        XCTAssertEqual(table.insert("a"), 1)
        XCTAssertEqual(table.count, names.count)
    }

    func testTallyKeepsTheNewestTimesAndComparesEveryOne() {
        var tally = Tally()
        let epoch = Epoch(sessionID: 1, versionID: 1)
        for time in [5.0, 1, 7, 3, 9, 2, 8] { tally.record(at: time, in: epoch, keep: 4) }
        // Sorted (the clock went back in between), only the newest four kept.
        XCTAssertEqual(tally.recent, [5, 7, 8, 9])
        var other = tally
        XCTAssertEqual(other, tally)
        other.recent[1] = 6
        XCTAssertNotEqual(other, tally, "tallies differing in one recent time only")
        other = tally
        other.recent.removeFirst()
        XCTAssertNotEqual(other, tally)
    }

    func testTalliesWithoutTimesAreBlankAndEqual() {
        XCTAssertEqual(Tally(), Tally())
        XCTAssertTrue(Tally().isBlank)
        XCTAssertNil(Tally().first)
        var tally = Tally()
        tally.record(at: 10, in: SessionMeta().epoch, keep: 4)
        XCTAssertFalse(tally.isBlank)
        XCTAssertEqual(tally.first, 10)
        XCTAssertEqual(tally.last, 10)
        XCTAssertNotEqual(tally, Tally())
        tally.first = nil
        XCTAssertNil(tally.first)
        XCTAssertEqual(tally.last, 10)
        // Times without optionals: a tally is eight words (its recent times on the heap).
        XCTAssertEqual(MemoryLayout<Tally>.size, 64)
    }

    /// The one list of listeners gives each stream the scenarios counting it, in declaration
    /// order, and nothing to a stream no scenario counts.
    func testEveryStreamListsTheScenariosCountingIt() throws {
        let source = """
            event lone, x, y, z
            scenario A < on x, y >
            scenario B < on y >
            scenario C < min_events 1 >
            scenario D < on y, x, z; min_events 2 >
            """
        let checked = RuleCompiler.check(text: source)
        XCTAssertFalse(checked.hasErrors, "\(checked.diagnostics)")
        let rules = CompiledRules(program: checked.program, recentLimit: 16)
        var expected: [String: [Int]] = [:]
        for (index, scenario) in rules.scenarios.enumerated() {
            for slot in scenario.streams { expected[rules.streams.name(slot), default: []].append(index) }
        }
        XCTAssertEqual(expected["y"], [0, 1, 3])
        XCTAssertEqual(rules.listenerStart.count, rules.streams.count + 1)
        for slot in 0..<rules.streams.count {
            XCTAssertEqual(rules.listeners(slot), expected[rules.streams.name(slot)] ?? [], rules.streams.name(slot))
        }
        XCTAssertEqual(rules.listeners(rules.streams.count), [], "a slot the app named")
        XCTAssertEqual(rules.triggerInfo.map(\.countsOneStream), [false, true, true, false])
    }

    func testNameTableReservesWithoutLosingEntries() {
        var table = NameTable()
        table.insert("x")
        table.reserveCapacity(10_000)
        for k in 0..<10_000 { table.insert("n\(k)") }
        XCTAssertEqual(table["x"], 0)
        XCTAssertEqual(table["n9999"], 10_000)
    }

    /// `canExecute` (the fast path) and `explain(_).wouldRun` (the explained one) agree for
    /// random programs, histories and clock moves, backwards ones included.
    func testCanExecuteAgreesWithExplainOnRandomHistories() throws {
        var generator = SeededGenerator(
            seed: UInt64(ProcessInfo.processInfo.environment["RULES_SEED"] ?? "") ?? 0xFA57)
        print("fast path seed: \(generator.seed)")
        let clauses = [
            "min_events 2", "min_events 1 per session", "max_events 3", "max_events 1 within 1h",
            "max_exec 2", "max_exec 1 within 1d", "max_exec 1 per version", "since_first 1h",
            "since_last 30m", "between 2h", "when (count(b) >= 1)", "when (executions(G) < 3)",
            "when (since_last(b) >= 10m)",
        ]
        for round in 0..<40 {
            var body: [String] = []
            for clause in clauses where Bool.random(using: &generator) { body.append(clause) }
            let groupBody = ["max_exec 2 within 1d", "between 1h"].filter { _ in Bool.random(using: &generator) }
            let source = """
                group G < \(groupBody.joined(separator: "; ")) > {
                  scenario S < on a, b; \(body.joined(separator: "; ")) >
                  scenario T < >
                }
                """
            let (engine, clock) = try makeEngine(source)
            for step in 0..<60 {
                switch Int.random(in: 0..<7, using: &generator) {
                case 0: engine.trigger("a")
                case 1: engine.trigger("b")
                case 2: _ = engine.tryToExecute("S")
                case 3: _ = engine.tryToExecute("T")
                case 4: clock.advance(by: Double(Int.random(in: 1...7_200, using: &generator)))
                case 5: clock.advance(by: -Double(Int.random(in: 1...3_600, using: &generator)))
                default: engine.startSession(version: Bool.random(using: &generator) ? "1" : "2")
                }
                let explained = engine.explain("S").wouldRun
                XCTAssertEqual(
                    engine.canExecute("S"), explained,
                    "round \(round), step \(step), seed \(generator.seed):\n\(source)\n\(engine.explain("S"))")
            }
        }
    }
}

/// A scenario's stored fingerprint must not change with how the names are sorted.
final class FingerprintTests: XCTestCase {
    func testNamesSortByTheirBytesAsAStringSortWould() {
        var random = SeededGenerator(seed: UInt64(ProcessInfo.processInfo.environment["RULES_SEED"] ?? "") ?? 0xF1)
        print("fingerprint seed: \(random.seed)")
        let pieces = ["", "a", "ab", "abcdefgh", "abcdefghi", "\u{0}", "é", "e\u{301}", "日本", "z", "A", "~"]
        for round in 0..<200 {
            var names: Set<String> = []
            // Short lists sort by comparison, long ones (over 64 names) by radix: both kinds.
            for _ in 0..<(1 + Int(random.next() % (round % 2 == 0 ? 40 : 400))) {
                names.insert((0..<3).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }.joined())
            }
            let list = Array(names)
            let expected = list.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            XCTAssertEqual(CompiledScenario.byteOrder(list).map { list[$0] }, expected, "round \(round)")
            XCTAssertEqual(CompiledScenario.fingerprint(list), CompiledScenario.fingerprint(expected.reversed()))
        }
        // The value stored by earlier versions for `on a, b` (FNV-1a over "a", 0xFF, "b", 0xFF).
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in [UInt8(ascii: "a"), 0xFF, UInt8(ascii: "b"), 0xFF] {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3
        }
        XCTAssertEqual(CompiledScenario.fingerprint(["b", "a"]), hash)
    }
}
