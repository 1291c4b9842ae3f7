import CRuleChecksum
import Foundation
import RuleLang
import TestSupport
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
        // Times without optionals, session and version counts in 32 bits: a tally is seven
        // words (its recent times on the heap), a stream's head in the engine as long.
        XCTAssertEqual(MemoryLayout<Tally>.size, 56)
        XCTAssertEqual(MemoryLayout<StreamTallies.Head>.size, 56)
    }

    /// Session and version counts are 32 bits: one past 4,294,967,295, set, stored or recorded,
    /// stays there, and encodes as it reads.
    func testSessionAndVersionCountsSaturateAt32Bits() throws {
        var tally = Tally()
        tally.counts.sessionCount = Int64(UInt32.max) + 5
        tally.counts.versionCount = -3
        XCTAssertEqual(tally.counts.sessionCount, Int64(UInt32.max))
        XCTAssertEqual(tally.counts.versionCount, 0)
        let epoch = Epoch(sessionID: tally.counts.sessionID, versionID: tally.counts.versionID)
        tally.counts.versionCount = Int64(UInt32.max) - 1
        tally.counts.record(at: 10, in: epoch)
        tally.counts.record(at: 11, in: epoch)
        XCTAssertEqual(tally.counts.sessionCount, Int64(UInt32.max))
        XCTAssertEqual(tally.counts.versionCount, Int64(UInt32.max))
        XCTAssertEqual(tally.counts.total, 2)
        // Stored larger (by an older version, which counted in 64 bits): read as the largest.
        var writer = ByteWriter()
        let past = Tally(counts: tally.counts, recent: [10, 11])
        past.encode(&writer)
        var larger = ByteWriter()
        larger.int(2)
        larger.optionalDouble(10)
        larger.optionalDouble(11)
        larger.varint(2)
        [10.0, 11.0].withUnsafeBufferPointer { larger.doubles($0) }
        larger.int(tally.counts.sessionID)
        larger.int(Int64(UInt32.max) + 100)
        larger.int(tally.counts.versionID)
        larger.int(Int64.max)
        var reader = ByteReader(larger.bytes)
        XCTAssertEqual(try Tally.decode(&reader), past)
        // And written back as it reads.
        var again = ByteWriter()
        var read = ByteReader(larger.bytes)
        try Tally.decode(&read).encode(&again)
        XCTAssertEqual(again.bytes, writer.bytes)
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

    func testTheClauseTablesHoldEachScenariosAndGroupsClausesInOrder() throws {
        let source = """
            event x
            group G < max_exec 2 within 1d; between 1h > {
              scenario A < on x; min_events 2; since_first 1h >
              scenario B < >
            }
            scenario C < max_exec 1; when (count(x) >= 1) >
            group H < between 2h > { scenario D < min_events 1 > }
            """
        let checked = RuleCompiler.check(text: source)
        XCTAssertFalse(checked.hasErrors, "\(checked.diagnostics)")
        let rules = CompiledRules(program: checked.program, recentLimit: 16)
        let tables = rules.clauseTables()
        func text(_ range: Range<Int>) -> String { "\(Array(tables.clauses[range]))" }
        XCTAssertEqual(tables.clauseStart.count, rules.scenarios.count + rules.groups.count + 1)
        for (k, scenario) in rules.scenarios.enumerated() {
            XCTAssertEqual(text(tables.range(ofScenario: k)), "\(scenario.clauses)", scenario.name)
        }
        for (k, group) in rules.groups.enumerated() {
            XCTAssertEqual(text(tables.range(ofGroup: k)), "\(group.clauses)", group.name)
        }
        XCTAssertEqual(tables.groupOf, rules.scenarios.map { Int32($0.group ?? -1) })
        XCTAssertEqual(tables.groupOf.filter { $0 < 0 }.count, 1, "C alone has no group")
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

/// The table-driven CRC-32 records use below ``CRC32/shortLimit`` bytes gives zlib's `crc32`,
/// and both give the CRC-32 computed a bit at a time.
final class ChecksumTests: XCTestCase {
    /// The reflected CRC-32 (polynomial 0xEDB88320), one bit at a time: obviously right.
    private func bitwise(_ bytes: [UInt8], continuing start: UInt32 = 0) -> UInt32 {
        var crc = ~start
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    func testTheTablesGiveZlibsCRCForEveryLengthAndOffset() {
        var generator = SeededGenerator(seed: 0xC3C3)
        let bytes = (0..<2_100).map { _ in UInt8.random(in: 0...255, using: &generator) }
        XCTAssertEqual(bitwise(Array("123456789".utf8)), 0xCBF4_3926, "the standard check value")
        // Every length up to past the limit, at offsets 0-7 (unaligned 8-byte loads), some
        // continuing from an earlier CRC.
        for length in 0...(CRC32.shortLimit + 40) {
            let offset = length % 8
            let start: UInt32 = length % 3 == 0 ? UInt32.random(in: 0...UInt32.max, using: &generator) : 0
            let expected = bitwise(Array(bytes[offset..<offset + length]), continuing: start)
            // A view into the one buffer: its start is `offset` bytes past an aligned address.
            bytes.withUnsafeBytes { whole in
                let raw = UnsafeRawBufferPointer(rebasing: whole[offset..<offset + length])
                XCTAssertEqual(CRC32.sliced(raw, continuing: start), expected, "length \(length)")
                XCTAssertEqual(CRC32.folded(raw, continuing: start), expected, "length \(length), folded")
                XCTAssertEqual(CRC32.zlib(raw, continuing: start), expected, "length \(length)")
                XCTAssertEqual(CRC32.checksum(raw, continuing: start), expected, "length \(length)")
            }
        }
        bytes.withUnsafeBytes {
            XCTAssertEqual(CRC32.checksum($0), bitwise(bytes), "long")
            XCTAssertEqual(CRC32.folded($0), bitwise(bytes), "long, folded")
        }
        XCTAssertEqual(CRC32.hex(of: [bytes[0..<5], bytes[5..<2_100]]), String(format: "%08x", bitwise(bytes)))
    }

    /// The folding constants are what their definitions give: reflect32(x^e mod P) shifted left
    /// once for e = 160, 96, 64, and x^64 div P and P reflected to 33 bits.
    func testTheFoldingConstantsFollowFromThePolynomial() {
        let p: UInt64 = 0x1_04C1_1DB7
        func power(_ e: Int) -> UInt64 {
            var r: UInt64 = 1
            for _ in 0..<e {
                r <<= 1
                if r & (1 << 32) != 0 { r ^= p }
            }
            return r
        }
        func reflect(_ value: UInt64, bits: Int) -> UInt64 {
            (0..<bits).reduce(0) { $0 | ((value >> UInt64($1)) & 1) << UInt64(bits - 1 - $1) }
        }
        // x^64 div P, by long division over GF(2); x^64 needs a 65th bit, kept apart.
        var quotient: UInt64 = 0
        var rest: UInt64 = 0
        var restHigh = true  // the x^64 term
        for shift in stride(from: 32, through: 0, by: -1) {
            let top = shift + 32
            let set = top == 64 ? restHigh : (rest >> UInt64(top)) & 1 == 1
            guard set else { continue }
            quotient |= 1 << UInt64(shift)
            if top == 64 { restHigh = false } else { rest ^= 1 << UInt64(top) }
            rest ^= (p & 0xFFFF_FFFF) << UInt64(shift)
        }
        XCTAssertEqual(reflect(power(160), bits: 32) << 1, RULES_CRC32_K160)
        XCTAssertEqual(reflect(power(96), bits: 32) << 1, RULES_CRC32_K96)
        XCTAssertEqual(reflect(power(64), bits: 32) << 1, RULES_CRC32_K64)
        XCTAssertEqual(reflect(quotient, bits: 33), RULES_CRC32_MU)
        XCTAssertEqual(reflect(p, bits: 33), RULES_CRC32_P)
        #if arch(x86_64)
            // Every x86-64 machine this project runs on has it: the folded path is the one tested.
            XCTAssertTrue(CRC32.folds)
        #endif
    }
}

/// Ad hoc checks (`engine.check`, a timeline's `check`) add no state: a filter or a salt the
/// rules do not name is read, not kept. Before, each distinct one added a stream (copying the
/// stream table) or a kept bucket for good: 16,000 checks took 6.6 s against 0.45 s for 4,000.
final class AdHocCheckTests: XCTestCase {
    func testAdHocChecksAddNoState() throws {
        let rules = """
            # language 1.2
            event purchase(amount: int)
            scenario S < on purchase; min_events 1 where amount >= 10 >
            """
        let (engine, _) = try makeEngine(rules)
        engine.trigger("purchase", properties: ["amount": .int(12)])
        let streams = engine.locked { $0.streams.count }
        for n in 0..<2_000 {
            XCTAssertTrue(
                try engine.check(
                    "count(purchase where amount >= \(n + 100)) == 0 and since_last(purchase where amount == \(n + 100)) > 100d "
                        + "and since_first(purchase where amount < \(n + 100) and amount > \(n + 99)) == 0s and bucket(\"s\(n)\") >= 0"
                ))
        }
        XCTAssertEqual(engine.locked { $0.streams.count }, streams, "no stream added")
        XCTAssertLessThanOrEqual(engine.locked { $0.bucketMemo.buckets.count }, EngineCore.keptBuckets)
        // What the rules read, and what is stored, still reads.
        XCTAssertTrue(try engine.check("count(purchase where amount >= 10) == 1 and count(purchase) == 1"))
    }
}
