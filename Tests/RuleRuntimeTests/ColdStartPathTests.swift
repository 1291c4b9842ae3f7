import CRuleChecksum
import Foundation
import RuleLang
import TestSupport
import XCTest

@testable import RuleRuntime

/// Cold start's batched paths: names looked up a batch at a time, and stored
/// streams decoded before the rules give them slots, held to a plain dictionary.
final class ColdStartPathTests: XCTestCase {
    /// `count` ASCII names, `prefix` and a number padded with 0-19 bytes: lengths on either
    /// side of a word. The tests add spellings Swift considers equal (é composed and not, K and
    /// KELVIN SIGN) themselves.
    private func names(_ count: Int, _ prefix: String, random: inout SeededGenerator) -> [String] {
        (0..<count).map { k in
            let padding = String(repeating: "x", count: Int(random.next() % 20))
            return "\(prefix)\(k)\(padding)"
        }
    }

    func testBatchedLookupsAgreeWithADictionary() {
        var random = SeededGenerator(seed: 0x51A7_E001)
        for round in 0..<20 {
            var table = NameTable()
            var model: [String: Int] = [:]
            // Names repeated, and spellings Swift considers equal (one name in the model too).
            var inserted = names(Int(random.next() % 300), "n", random: &random)
            inserted += inserted.prefix(Int(random.next() % 40)) + ["é", "e\u{301}", "\u{212A}", "K", ""]
            inserted.shuffle(using: &random)
            for name in inserted where model[name] == nil { model[name] = table.insert(name) }
            XCTAssertEqual(table.count, model.count)
            // Looked up a batch at a time: every stored name, its other spellings, and absent ones.
            let asked = inserted + ["e\u{301}", "é", "K", "\u{212A}", "absent", "n", "n0xxxxxxxxxxxxxxxxxxxxxxx"]
            let bytes = asked.map { Array($0.utf8) }
            var batch = NameTable.LookupBatch()
            for start in stride(from: 0, to: bytes.count, by: NameTable.LookupBatch.size) {
                withRawBuffers(Array(bytes[start..<min(start + NameTable.LookupBatch.size, bytes.count)])) {
                    batch.keys = $0
                    table.lookUp(&batch)
                }
                XCTAssertEqual(batch.positions.count, min(NameTable.LookupBatch.size, bytes.count - start))
                for (offset, position) in batch.positions.enumerated() {
                    let name = asked[start + offset]
                    XCTAssertEqual(position, model[name] ?? -1, "round \(round): \(name)")
                }
            }
        }
    }

    /// `holds(_:at:)`, the check the direct catch-up makes of where a name was last time, is
    /// true exactly where a plain array of the stored names has that name's bytes: every
    /// position asked for every name (a prefix, a longer name, positions out of range).
    func testHoldsIsTrueExactlyAtTheNamesPosition() {
        var random = SeededGenerator(seed: 0x401D_5001)
        var table = NameTable()
        var stored: [[UInt8]] = []
        for name in names(60, "s", random: &random) + ["s1", "s", "", "é"] where !stored.contains(Array(name.utf8)) {
            XCTAssertEqual(table.insert(name), stored.count)
            stored.append(Array(name.utf8))
        }
        let asked = stored + [Array("s1x".utf8), Array("absent".utf8), Array("e\u{301}".utf8)]
        for key in asked {
            for n in -2...stored.count + 1 {
                let held = key.withUnsafeBytes { table.holds($0, at: n) }
                XCTAssertEqual(held, stored.indices.contains(n) && stored[n] == key, "\(key) at \(n)")
            }
        }
    }

    /// The hash reads a name's last bytes in at most two loads: it equals the same hash taken a
    /// byte at a time (written out here), for every length and random bytes, ASCII or not.
    func testTheHashOfANameIsTheOneTakenAByteAtATime() {
        func byteAtATime(_ bytes: [UInt8], seed: UInt64) -> (hash: UInt64, ascii: Bool) {
            let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15
            var hash = (UInt64(bytes.count) &* multiplier) ^ seed
            var seen: UInt64 = 0
            var index = 0
            while bytes.count - index >= 8 {
                var word: UInt64 = 0
                for k in 0..<8 { word |= UInt64(bytes[index + k]) << UInt64(8 * k) }
                seen |= word
                hash = (hash ^ word) &* multiplier
                hash ^= hash >> 32
                index += 8
            }
            var tail: UInt64 = 0
            for k in 0..<(bytes.count - index) { tail |= UInt64(bytes[index + k]) << UInt64(8 * k) }
            seen |= tail
            hash = (hash ^ tail) &* multiplier
            hash ^= hash >> 29
            hash = hash &* 0xBF58_476D_1CE4_E5B9
            return (hash ^ (hash >> 32), seen & 0x8080_8080_8080_8080 == 0)
        }
        var random = SeededGenerator(seed: 0x4A54_0001)
        for length in 0..<40 {
            for round in 0..<50 {
                let high: UInt64 = round % 2 == 0 ? 0x80 : 0x100
                let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next() % high) }
                let seed = random.next()
                let expected = byteAtATime(bytes, seed: seed)
                let actual = bytes.withUnsafeBytes { NameTable.hashAndASCII($0, seed: seed) }
                XCTAssertEqual(actual.hash, expected.hash, "\(bytes)")
                XCTAssertEqual(actual.ascii, expected.ascii, "\(bytes)")
            }
        }
    }

    /// Rules compiled with their `on` lists' names stored beforehand (from the parse) count the
    /// same streams, by name, as rules compiled alone: the slots differ, nothing else.
    func testRulesCompiledFromListedStreamsCountTheSameStreams() throws {
        let long = (0..<300).map { "n\($0)" }.joined(separator: ", ")
        let sources = [
            SourceFile(
                path: "a.rules",
                text: """
                    scenario Long < on \(long), n5, "e\u{301}"; min_events 3 >
                    scenario Own < min_events 1 >
                    group G < max_exec 1 within 1d > {
                        scenario InGroup < on b, "é", c; when count(w per session) >= 1 >
                        scenario Alone < when since_first(n7) >= 1d >
                    }
                    """),
            SourceFile(path: "b.rules", text: "scenario Other < on c, n299, z >\nscenario Same < on z >\n"),
        ]
        let parsed = RuleCompiler.parse(sources)
        let result = RuleCompiler.check(parsed)
        XCTAssertFalse(result.hasErrors, "\(result.diagnostics)")
        let alone = CompiledRules(program: result.program, recentLimit: 5)
        let listed = CompiledRules(program: result.program, recentLimit: 5, listed: ListedStreams(parsed.files))
        XCTAssertEqual(listed.streams.count, alone.streams.count)
        XCTAssertNotEqual(listed.streams.names, alone.streams.names, "another order")
        for (a, b) in zip(alone.scenarios, listed.scenarios) {
            XCTAssertEqual(a.streams.map { alone.streams.name($0) }, b.streams.map { listed.streams.name($0) }, a.name)
            XCTAssertEqual(a.fingerprint, b.fingerprint, a.name)
        }
        for name in alone.streams.names {
            let (x, y) = (alone.streams.index[name]!, try XCTUnwrap(listed.streams.index[name], name))
            XCTAssertEqual(alone.listeners(x), listed.listeners(y), name)
            XCTAssertEqual(alone.streamKeep[x], listed.streamKeep[y], name)
        }
    }

    /// Calls `body` with a buffer over each array's bytes.
    private func withRawBuffers(_ arrays: [[UInt8]], _ body: ([UnsafeRawBufferPointer]) -> Void) {
        var buffers: [UnsafeMutableRawBufferPointer] = []
        defer { for buffer in buffers { buffer.deallocate() } }
        for array in arrays {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(array.count, 1), alignment: 1)
            buffer.copyBytes(from: array)
            buffers.append(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<array.count]))
        }
        body(buffers.map { UnsafeRawBufferPointer($0) })
    }

    func testStagedStreamsLandInTheSlotsOfTheirNames() throws {
        var random = SeededGenerator(seed: 0x57A6_ED00)
        for round in 0..<30 {
            var rules = StreamTable()
            let ruleNames = names(Int(random.next() % 200), "r", random: &random) + ["é", "K"]
            for name in ruleNames { _ = rules.slot(name) }
            // Stored: some of the rules' streams (é in its other spelling), streams only stored,
            // and entries of other kinds between them.
            var model: [String: Tally] = [:]
            var entries: [String: [UInt8]] = [:]
            let storedNames =
                ruleNames.filter { _ in random.next() % 3 != 0 }.map { $0 == "é" ? "e\u{301}" : $0 }
                + names(Int(random.next() % 50), "s", random: &random)
            for name in storedNames {
                var tally = Tally()
                let epoch = Epoch(sessionID: 1, versionID: 1)
                for k in 0..<Int(random.next() % 30) {
                    tally.record(
                        at: Double(k) * 60 + Double(random.next() % 50), in: epoch, keep: 1 + Int(random.next() % 20))
                }
                entries["e:" + name] = EngineState.change(key: "e:" + name, tally).value
                model[name] = tally
            }
            entries["g:G"] = EngineState.change(key: "g:G", Tally()).value
            entries["m:"] = EngineState.change(meta: SessionMeta()).value
            let stored = StoredEntries(entries)
            // Decoded on the other thread: the streams among the names the rules list (the table
            // the rules' table starts with: a prefix of it); from other bytes, not used.
            var listed = StreamTable()
            for name in ruleNames.prefix(Int(random.next() % UInt64(ruleNames.count + 1))) { _ = listed.slot(name) }
            var staged = try XCTUnwrap(
                EngineState.stage(round % 3 == 2 ? StoredEntries(entries) : stored), "round \(round)")
            staged.place(in: listed)
            XCTAssertEqual(staged.isFrom(stored), round % 3 != 2)
            let state = try EngineState(stored, streams: rules, staged: staged)
            let oneByOne = try EngineState(stored, streams: rules)
            // Names Swift considers equal are one stream, as in a Set.
            XCTAssertEqual(state.streams.count, Set(ruleNames + storedNames).count)
            for name in ruleNames + storedNames {
                let slot = try XCTUnwrap(state.streams.index[name], "round \(round): \(name)")
                let expected = model[name] ?? model[name == "é" ? "e\u{301}" : name] ?? Tally()
                XCTAssertEqual(state.tallies[slot], expected, "round \(round): \(name)")
                XCTAssertEqual(
                    state.storedStreams[slot], model[name] != nil || (name == "é" && model["e\u{301}"] != nil))
                XCTAssertEqual(oneByOne.streams.index[name], slot)
                XCTAssertEqual(oneByOne.tallies[slot], expected)
            }
            XCTAssertEqual(state.storedStreams.filter { $0 }.count, model.count)
            XCTAssertNotNil(state.groups["G"])
            // Each stream's times decoded once: the streams the rules do not list are placed from
            // what was staged, not decoded a second time (their blocks would be left unused).
            XCTAssertEqual(state.tallies.bufferLength, oneByOne.tallies.bufferLength, "round \(round)")
        }
    }

    /// The engine's start takes what was staged only from the very bytes it was decoded from:
    /// a real store hands the engine the entries read early, so the staged streams are used.
    func testAFileStoreHandsTheSameEntriesToTheStageAndTheEngine() throws {
        for shared in [false, true] {
            let url = scratchFolder("staged-bytes").appendingPathComponent("state")
            do {
                let engine = try RuleEngine(
                    source: "scenario A < on a >", store: FileStore(url: url, options: .init(shared: shared)))
                engine.trigger("a")
            }
            let store = FileStore(url: url, options: .init(shared: shared))
            let early = try store.loadEntries()
            let staged = try XCTUnwrap(EngineState.stage(early))
            XCTAssertTrue(staged.isFrom(try store.loadEntries()), "shared: \(shared)")
        }
    }

    func testAnUndecodableStreamIsLeftForTheEngineToReport() throws {
        let stored = StoredEntries(["e:a": EngineState.change(key: "e:a", Tally()).value!, "e:b": [9, 1, 2]])
        var first = StreamTable()
        _ = first.slot("a")
        XCTAssertNil(EngineState.stage(stored))
        // Staged from other bytes (its tally as a valid one there): not used, so the engine
        // decodes every entry itself, and reports it.
        var staged = try XCTUnwrap(
            EngineState.stage(
                StoredEntries([
                    "e:a": EngineState.change(key: "e:a", Tally()).value!,
                    "e:b": EngineState.change(key: "e:b", Tally()).value!,
                ])))
        staged.place(in: first)
        XCTAssertFalse(staged.isFrom(stored), "other bytes: not used")
        for attempt in [
            { try EngineState(stored, streams: StreamTable()) },
            { try EngineState(stored, streams: first, staged: staged) },
        ] {
            XCTAssertThrowsError(try attempt()) { error in
                guard case RuleStoreError.undecodableEntry(let key, _)? = error as? RuleStoreError else {
                    return XCTFail("\(error)")
                }
                XCTAssertEqual(key, "e:b")
            }
        }
    }

    /// An engine over a file large enough to be read while its rules are checked answers as
    /// one over the same history in memory.
    func testAnEngineOverALargeFileReadEarlyCountsEveryStream() throws {
        let names = (0..<(CompiledRules.longList + 100)).map { "stream_with_a_long_name_\($0)" }
        let rules =
            "scenario Wide < on \(names.joined(separator: ", ")); min_events 6000 >\n"
            + "scenario One < on stream_with_a_long_name_7; min_events 2 >\n"
        for shared in [false, true] {
            let url = scratchFolder("cold-start").appendingPathComponent("large.state")
            let options = FileStore.Options(shared: shared)
            let memory = InMemoryStore()
            // One injected clock for all four engines: their explanations name times, which the
            // system clock made differ by a second now and then.
            let clock = ManualClock()
            do {
                let file = try RuleEngine(source: rules, store: FileStore(url: url, options: options), clock: clock)
                let inMemory = try RuleEngine(source: rules, store: memory, clock: clock)
                for (k, name) in names.enumerated() {
                    for engine in [file, inMemory] {
                        engine.trigger(Event(name))
                        if k % 2 == 0 { engine.trigger(Event(name)) }
                    }
                }
            }
            let store = FileStore(url: url, options: options)
            XCTAssertTrue(store.worthLoadingEarly, "the file is large enough to be read early (shared: \(shared))")
            let reopened = try RuleEngine(source: rules, store: store, clock: clock)
            let fromMemory = try RuleEngine(source: rules, store: memory, clock: clock)
            XCTAssertFalse(store.worthLoadingEarly, "open now")
            // What was read early counts, and so does what comes after.
            for round in 0..<2 {
                for scenario in ["Wide", "One"] {
                    XCTAssertEqual(
                        reopened.canExecute(Scenario(scenario)), fromMemory.canExecute(Scenario(scenario)), scenario)
                    XCTAssertEqual(
                        reopened.explain(Scenario(scenario)).description,
                        fromMemory.explain(Scenario(scenario)).description)
                }
                XCTAssertEqual(reopened.canExecute("One"), round == 1, "shared: \(shared)")
                for engine in [reopened, fromMemory] { engine.trigger("stream_with_a_long_name_7") }
            }
            XCTAssertTrue(reopened.canExecute("Wide"))
        }
    }

    /// Rules with an error over a large file: the error as before, the file read early is let go
    /// with the failed engine, and the next engine opens it (an exclusive store keeps its lock).
    func testInvalidRulesOverALargeFileLeaveItFree() throws {
        let url = scratchFolder("cold-start").appendingPathComponent("large.state")
        let names = (0..<3_000).map { "stream_with_a_long_name_\($0)" }
        let rules = "scenario Wide < on \(names.joined(separator: ", ")); min_events 2 >\n"
        do {
            let engine = try RuleEngine(source: rules, store: FileStore(url: url))
            for name in names + names { engine.trigger(Event(name)) }
        }
        XCTAssertTrue(FileStore(url: url).worthLoadingEarly)
        XCTAssertThrowsError(
            try RuleEngine(source: rules + "scenario Broken < min_event 1 >\n", store: FileStore(url: url))
        ) {
            guard case RuleEngineError.invalidRules(let diagnostics)? = $0 as? RuleEngineError else {
                return XCTFail("\($0)")
            }
            XCTAssertTrue(diagnostics.contains { $0.message.contains("min_event") }, "\(diagnostics)")
        }
        let engine = try RuleEngine(source: rules, store: FileStore(url: url))
        XCTAssertTrue(engine.canExecute("Wide"))
        XCTAssertNil(engine.lastStoreError)
    }

    /// Fingerprints left for later and computed on another thread are the ones computed at once.
    func testFingerprintsComputedLaterAreTheSame() throws {
        var random = SeededGenerator(seed: 1)
        let long = (0..<(CompiledRules.longList + 10)).map { "n\($0)" }.shuffled(using: &random)
        let rules = """
            event "é"
            scenario Long < on \(long.joined(separator: ", ")), n5, "e\u{301}" >
            scenario Short < on n1, n2 >
            scenario Own < min_events 1 >
            """
        let program = RuleCompiler.check(text: rules).program
        let now = CompiledRules(program: program, recentLimit: 5)
        var later = CompiledRules.Builder(program: program, recentLimit: 5, fingerprintsLater: true)
        XCTAssertEqual(later.scenarios[0].fingerprint, 0, "left for later")
        later.storeFingerprints(later.fingerprintInBackground()())
        XCTAssertEqual(CompiledRules(later).scenarios.map(\.fingerprint), now.scenarios.map(\.fingerprint))
        XCTAssertNotEqual(now.scenarios[0].fingerprint, 0)
    }
}
