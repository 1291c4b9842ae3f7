import Foundation
import TestSupport
import XCTest

@testable import RuleRuntime

/// A call's changes are encoded once into a reused record buffer and handed to the store as
/// bytes; stores without the record path get them back as `[StoreChange]`. These tests hold
/// the record, its replay and ``InMemoryStore``'s log to the changes they carry.
final class ChangeRecordTests: XCTestCase {
    /// Changes of every shape: short and long keys, empty, short, 127/128-byte and long values, deletions.
    private func sampleChanges(_ count: Int, seed: UInt64) -> [StoreChange] {
        var random = SeededGenerator(seed: seed)
        return (0..<count).map { k in
            let key = "e:" + String(repeating: "k", count: Int(random.next() % 40)) + "\(k)"
            if random.next() % 5 == 0 { return StoreChange(key: key, value: nil) }
            let sizes = [0, 1, 127, 128, 129, 300, 20_000]
            let size = sizes[Int(random.next() % UInt64(sizes.count))]
            return StoreChange(key: key, value: (0..<size).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        }
    }

    func testRecordDecodesToTheChangesItWasGiven() {
        // 1 change (one-byte count), 127 and 128 (the count widens in place), 300.
        for count in [1, 127, 128, 300] {
            let changes = sampleChanges(count, seed: UInt64(count))
            let record = ChangeRecord(capacity: 16)
            for change in changes { record.add(change) }
            record.finish()
            XCTAssertEqual(record.count, count)
            XCTAssertEqual(record.changes(), changes, "\(count) changes")
            // Reused after a reset, it holds only the next call's changes.
            record.reset()
            record.add(changes[0])
            record.finish()
            XCTAssertEqual(record.changes(), [changes[0]])
        }
    }

    /// A tally with counts of every size (one-byte to ten-byte varints, negative ones, times
    /// or none) and 0 to 40 recent times (values over 127 bytes long).
    private func sampleTally(_ random: inout SeededGenerator) -> Tally {
        func number() -> Int64 {
            let magnitude = Int64(bitPattern: random.next()) >> Int64(random.next() % 64)
            return random.next() % 4 == 0 ? -magnitude : magnitude
        }
        var counts = TallyCounts()
        counts.total = number()
        counts.first = random.next() % 3 == 0 ? nil : Double(number())
        counts.last = random.next() % 3 == 0 ? nil : Double(number()) / 7
        counts.sessionID = number()
        counts.sessionCount = number()
        counts.versionID = number()
        counts.versionCount = number()
        let recent = (0..<Int(random.next() % 41)).map { Double($0) * 3.5 }
        return Tally(counts: counts, recent: recent)
    }

    /// The engine writes streams' and views' entries in room it makes first, from lengths it
    /// works out before writing: the record's bytes are those of the general path, and read
    /// back as the plain encoder (``ByteWriter``) writes them, in a record that starts too
    /// small for them.
    func testEntriesWrittenInReservedRoomReadBackAsThePlainEncoding() {
        var random = SeededGenerator(seed: 41)
        for round in 0..<300 {
            let record = ChangeRecord(capacity: 16)
            let name = String(repeating: round % 2 == 0 ? "s" : "é", count: Int(random.next() % 200))
            let tally = sampleTally(&random)
            let view = ScenarioState(
                events: sampleTally(&random), executions: sampleTally(&random),
                streams: random.next() % 2 == 0 ? nil : random.next())
            let from: String? = random.next() % 2 == 0 ? nil : name
            var plain = ByteWriter()
            EngineState.write(tally, to: &plain)
            XCTAssertEqual(Tally.encodedLength(tally.counts, recentCount: tally.recent.count) + 1, plain.bytes.count)
            let viewKey = Array("s:view\(round)".utf8)
            let nameBytes = Array(name.utf8)
            tally.recent.withUnsafeBufferPointer { recent in
                nameBytes.withUnsafeBytes { name in
                    record.reserve(stream: name, recentCount: recent.count)
                    record.set(stream: name, tally.counts, recent: recent)
                }
            }
            viewKey.withUnsafeBytes { key in
                withUnsafePointer(to: view) { view in
                    guard let from else { return record.set(key, view: view, eventsFrom: nil) }
                    Array(from.utf8).withUnsafeBytes { record.set(key, view: view, eventsFrom: $0) }
                }
            }
            record.finish()
            // Byte for byte what the general path writes (the value's length patched in after
            // the value), which every earlier version of the library reads.
            let general = ChangeRecord(capacity: 16)
            general.set("e:" + name) { sink in
                var sink = sink
                EngineState.write(tally, to: &sink)
            }
            viewKey.withUnsafeBytes { key in
                general.set(key) { sink in
                    var sink = sink
                    EngineState.write(view, eventsFrom: from, to: &sink)
                }
            }
            general.finish()
            XCTAssertEqual(Array(record.bytes), Array(general.bytes), "round \(round)")
            var plainView = ByteWriter()
            EngineState.write(view, eventsFrom: from, to: &plainView)
            XCTAssertEqual(
                record.changes(),
                [
                    StoreChange(key: "e:" + name, value: plain.bytes),
                    StoreChange(key: String(decoding: viewKey, as: UTF8.self), value: plainView.bytes),
                ], "round \(round)")
        }
    }

    func testFramedRecordReplaysAsTheLatestValueOfEachKey() throws {
        let first = sampleChanges(200, seed: 7)
        let second = first.prefix(50).map { StoreChange(key: $0.key, value: $0.value == nil ? [1] : nil) }
        var file = RecordFormat.header()
        file += RecordFormat.record(first)
        file += RecordFormat.record(Array(second))
        let (index, end, damage) = RecordFormat.replayRecords(file, version: FileStore.formatVersion)
        XCTAssertNil(damage)
        XCTAssertEqual(end, file.count)
        var expected: [String: [UInt8]] = [:]
        for change in first + second { expected[change.key] = change.value }
        XCTAssertEqual(index.values(in: file), expected)
        XCTAssertEqual(index.liveCount, expected.count)
    }

    /// Writes `bytes` to a new file and returns it open for reading.
    private func openFile(_ bytes: [UInt8], _ name: String) throws -> (Int32, URL) {
        let url = temporaryURL(name)
        try Data(bytes).write(to: url)
        let descriptor = open(url.path, O_RDONLY)
        XCTAssertGreaterThanOrEqual(descriptor, 0)
        return (descriptor, url)
    }

    /// A compaction's snapshot, written a window at a time, against a dictionary replaying the
    /// same changes: every live key with its latest value, deleted ones gone, in records of
    /// about 64 KiB, keys in the order of their bytes across them. The file holds records
    /// bigger than a window (one of 1,500 changes, values of 20,000 bytes), and empty values.
    func testSnapshotWrittenAWindowAtATimeHoldsTheLatestValueOfEachLiveKey() throws {
        var expected: [String: [UInt8]] = [:]
        var file = RecordFormat.header()
        for round in 0..<12 {
            let changes = sampleChanges(round == 5 ? 1_500 : 300, seed: UInt64(round) + 40)
            // Later rounds rewrite and delete keys of earlier ones (their names repeat).
            file += RecordFormat.record(changes)
            for change in changes { expected[change.key] = change.value }
        }
        XCTAssertGreaterThan(file.count, 4 * SnapshotWriter.window)
        let (source, _) = try openFile(file, "source.state")
        defer { close(source) }
        let outURL = temporaryURL("out.state")
        let out = open(outURL.path, O_RDWR | O_CREAT | O_APPEND, 0o644)
        defer { close(out) }
        let size = try FileStore.writeSnapshot(
            of: source, length: file.count, path: "source.state", to: out, at: outURL.path, system: .live)
        let snapshot = [UInt8](try Data(contentsOf: outURL))
        XCTAssertEqual(size, snapshot.count)
        let (index, end, damage) = RecordFormat.replayRecords(snapshot, version: FileStore.formatVersion)
        XCTAssertNil(damage)
        XCTAssertEqual(end, snapshot.count)
        XCTAssertEqual(index.values(in: snapshot), expected)
        // Records of about 64 KiB (one entry may pass it), each key once.
        var keys: [[UInt8]] = []
        var records = 0
        _ = RecordFormat.replay(snapshot, from: RecordFormat.headerSize, version: FileStore.formatVersion) {
            raw, payload, _ in
            records += 1
            var largest = 0
            _ = try? RecordFormat.forEachChange(in: raw, from: payload.lowerBound, to: payload.upperBound) {
                key, value in
                keys.append(Array(raw[key]))
                largest = max(largest, key.count + (value?.count ?? 0) + 21)
            }
            XCTAssertLessThan(payload.count, SnapshotWriter.recordPayload + largest + 16)
        }
        XCTAssertGreaterThan(records, 4)
        XCTAssertEqual(keys.count, index.liveCount)
        XCTAssertEqual(Set(keys).count, keys.count, "each key once")
    }

    /// Damage in a file being compacted is found wherever the windows fall: a record whose
    /// checksum fails far past the first window, a record cut short at the end, a file shorter
    /// than the length asked for. The compaction throws; nothing is written as if whole.
    func testSnapshotOfADamagedFileThrowsAtTheDamage() throws {
        var file = RecordFormat.header()
        var damagedAt = 0
        for round in 0..<10 {
            if round == 7 { damagedAt = file.count }
            file += RecordFormat.record(sampleChanges(150, seed: UInt64(round)))
        }
        XCTAssertGreaterThan(damagedAt, SnapshotWriter.window)
        let outURL = temporaryURL("out.state")
        let out = open(outURL.path, O_RDWR | O_CREAT | O_APPEND, 0o644)
        defer { close(out) }
        func compact(_ bytes: [UInt8], length: Int? = nil) throws {
            let (source, url) = try openFile(bytes, "damaged.state")
            defer {
                close(source)
                try? FileManager.default.removeItem(at: url)
            }
            _ = try FileStore.writeSnapshot(
                of: source, length: length ?? bytes.count, path: "damaged.state", to: out, at: outURL.path,
                system: .live)
        }
        var flipped = file
        flipped[damagedAt + RecordFormat.recordHeaderSize + 3] ^= 0x40
        XCTAssertThrowsError(try compact(flipped)) { error in
            guard case .corrupt(_, let offset, let reason, _) = error as? RuleStoreError else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual(offset, damagedAt)
            XCTAssertEqual(reason, "a record's checksum does not match")
        }
        XCTAssertThrowsError(try compact(Array(file.dropLast(5)))) { error in
            guard case .corrupt(_, _, let reason, _) = error as? RuleStoreError else { return XCTFail("\(error)") }
            XCTAssertEqual(reason, "the last record is cut short")
        }
        XCTAssertThrowsError(try compact(file, length: file.count + 100)) { error in
            guard case .corrupt(_, _, let reason, _) = error as? RuleStoreError else { return XCTFail("\(error)") }
            XCTAssertEqual(reason, "the file changed while in use")
        }
        // Whole, it compacts.
        XCTAssertNoThrow(try compact(file))
    }

    /// The mapped buffer a compaction indexes in, against an array doing the same: appends past
    /// several doublings, bytes appended in runs, resizes that zero what they add, truncations.
    func testMappedBufferHoldsWhatAnArrayHolds() {
        var random = SeededGenerator(seed: 91)
        var buffer = MappedBuffer<UInt32>()
        var model: [UInt32] = []
        var bytes = MappedBuffer<UInt8>()
        var byteModel: [UInt8] = []
        for step in 0..<6_000 {
            switch random.next() % 10 {
            case 0:
                let count = Int(random.next() % 3_000)
                XCTAssertTrue(buffer.resize(to: count))
                if count < model.count {
                    model.removeLast(model.count - count)
                } else {
                    model += Array(repeating: 0, count: count - model.count)
                }
            case 1:
                let count = Int(random.next() % UInt64(model.count + 1))
                buffer.truncate(to: count)
                model.removeLast(model.count - count)
            case 2 where !model.isEmpty:
                let index = Int(random.next() % UInt64(model.count))
                buffer[index] = UInt32(step)
                model[index] = UInt32(step)
            default:
                let value = UInt32(truncatingIfNeeded: random.next())
                XCTAssertTrue(buffer.append(value))
                model.append(value)
                let run = (0..<Int(random.next() % 40)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                XCTAssertTrue(run.withUnsafeBytes { bytes.append(contentsOf: $0) })
                byteModel += run
            }
            XCTAssertEqual(buffer.count, model.count)
        }
        buffer.withBuffer { XCTAssertEqual(Array($0), model) }
        bytes.withBytes { XCTAssertEqual(Array($0), byteModel) }
        XCTAssertGreaterThan(byteModel.count, 4_096)
    }

    func testInMemoryStoreCompactsItsLogAndKeepsTheLatestValues() throws {
        let store = InMemoryStore(["e:kept": [9, 9], "e:gone": [1]])
        try store.apply([StoreChange(key: "e:gone", value: nil)])
        var expected: [String: [UInt8]] = ["e:kept": [9, 9]]
        // Values changing length: far past the 64 KiB of superseded values that make it compact.
        for k in 0..<5_000 {
            let key = "e:s\(k % 37)"
            let value = [UInt8](repeating: UInt8(k % 251), count: 40 + k % 90)
            try store.apply([StoreChange(key: key, value: value)])
            expected[key] = value
        }
        XCTAssertGreaterThan(store.compactions, 0)
        XCTAssertEqual(try store.load(), expected)
    }

    func testEngineStateSurvivesInMemoryCompaction() throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_000_000))
        let store = InMemoryStore([:], compactionThreshold: 1_024)
        let source = "scenario Ask < on a, b; min_events 3; max_exec 2 within 1d >\nscenario Solo < min_events 1 >"
        let engine = try RuleEngine(source: source, store: store, clock: clock)
        for k in 0..<3_000 {
            engine.trigger(k % 3 == 0 ? "a" : k % 3 == 1 ? "b" : "Solo")
            if k % 500 == 0 { _ = engine.tryToExecute("Ask") }
            clock.advance(by: 60)
        }
        XCTAssertGreaterThan(store.compactions, 0)
        let reloaded = try RuleEngine(source: source, store: store, clock: clock)
        for name in ["Ask", "Solo"] {
            XCTAssertEqual(
                reloaded.explain(Scenario(name)).description, engine.explain(Scenario(name)).description, name)
        }
        XCTAssertEqual(reloaded.count("a"), 1_000)
    }

    func testInMemoryStoreWritesOverValuesAndDeletes() throws {
        let store = InMemoryStore(["": [], "e:a": [1, 2, 3]], compactionThreshold: 8)
        XCTAssertEqual(try store.load(), ["": [], "e:a": [1, 2, 3]])
        // Same length (written over in place), longer, shorter, deleted, set again, deleted twice.
        var expected: [String: [UInt8]] = ["": []]
        for value: [UInt8]? in [[4, 5, 6], [7, 8, 9, 10], [1], nil, [2, 2], nil, nil] {
            try store.apply([StoreChange(key: "e:a", value: value)])
            expected["e:a"] = value
            XCTAssertEqual(try store.load(), expected)
        }
        XCTAssertGreaterThan(store.compactions, 0)
        // A malformed record (the store takes the engine's own) is an error, not a crash.
        var record = RecordFormat.record([StoreChange(key: "e:b", value: [1]), StoreChange(key: "e:c", value: [2])])
        record.removeLast()
        XCTAssertThrowsError(try record.withUnsafeMutableBytes { try store.append(record: $0) })
        expected["e:b"] = [1]
        XCTAssertEqual(try store.load(), expected)
    }
}
