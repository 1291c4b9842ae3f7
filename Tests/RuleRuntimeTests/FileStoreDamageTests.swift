import Foundation
import XCTest

@testable import RuleRuntime

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How a FileStore tells damage from a torn tail, and what it does to files it cannot use.
final class FileStoreDamageTests: XCTestCase {
    let rules = "scenario S < min_events 5 >\nparam p: string"

    private func engine(_ url: URL, recovery: FileStore.Recovery = .strict) throws -> RuleEngine {
        try RuleEngine(
            source: rules, store: FileStore(url: url, options: .init(recovery: recovery)), clock: ManualClock())
    }

    /// A closed state file of `records` triggers of stream `x`, and the byte offset where each record starts.
    private func file(records: Int) throws -> (URL, [Int]) {
        let url = temporaryURL("state")
        var starts: [Int] = []
        let engine = try engine(url)
        for _ in 0..<records {
            starts.append(try Data(contentsOf: url).count)
            engine.trigger("x")
        }
        return (url, starts)
    }

    private func size(_ url: URL) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? -1
    }

    // Finding 4: a flipped bit in a length field is not a torn tail.
    func testEverySingleBitFlipLoadsEverythingOrReportsCorruption() throws {
        let (url, _) = try file(records: 20)
        let original = try [UInt8](Data(contentsOf: url))
        let copy = temporaryURL("flipped")
        var silentLosses: [Int] = []
        for bit in 0..<(original.count * 8) {
            var bytes = original
            bytes[bit / 8] ^= UInt8(1 << (bit % 8))
            try Data(bytes).write(to: copy)
            let store = FileStore(url: copy, options: .init(recovery: .strict))
            guard let loaded = try? RuleEngine(source: rules, store: store, clock: ManualClock()) else {
                continue  // reported
            }
            // Loaded: must be exactly the original records, and nothing dropped.
            if loaded.count("x") != 20 || store.recoveryReport != nil { silentLosses.append(bit) }
        }
        XCTAssertEqual(silentLosses, [], "bits whose flip lost records without a report")
    }

    func testADamagedLengthInAnEarlyRecordIsCorruptionNotATornTail() throws {
        let (url, starts) = try file(records: 20)
        var bytes = try [UInt8](Data(contentsOf: url))
        bytes[starts[2] + 1] ^= 0x40  // the length now points past the end of the file
        try Data(bytes).write(to: url)
        XCTAssertThrowsError(try engine(url)) { error in
            guard case RuleEngineError.store(.corrupt(_, let offset, let reason, _)) = error else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual(offset, starts[2])
            XCTAssertTrue(reason.contains("header"), reason)
        }
        XCTAssertEqual(try [UInt8](Data(contentsOf: url)), bytes, "strict recovery leaves the file as it was")
    }

    // Finding 5: zeros after the last record (a power loss) are a torn tail, not corruption.
    func testAZeroFilledTailIsDroppedAndReported() throws {
        let (url, _) = try file(records: 3)
        let whole = size(url)
        let handle = try FileHandle(forWritingTo: url)
        handle.seekToEndOfFile()
        handle.write(Data(count: 4096))
        try handle.close()
        let store = FileStore(url: url)
        let engine = try RuleEngine(source: rules, store: store, clock: ManualClock())
        XCTAssertEqual(engine.count("x"), 3)
        let report = try XCTUnwrap(store.recoveryReport)
        XCTAssertTrue(report.contains("4096 zero bytes"), report)
        XCTAssertEqual(size(url), whole)
        engine.trigger("x")
        XCTAssertNil(engine.lastStoreError)
    }

    // Also found: startup after a crash must not need a writable directory.
    func testATornTailThatCannotBeKeptAsideStillLoads() throws {
        let (url, _) = try file(records: 3)
        let handle = try FileHandle(forWritingTo: url)
        handle.seekToEndOfFile()
        handle.write(Data([0x40, 0, 0, 0, 1, 2]))
        try handle.close()
        // As in a read-only directory: the copy of the dropped bytes cannot be written.
        var calls = FileSystemCalls.live
        calls.writeAside = { _, _ in
            errno = EACCES
            return false
        }
        let store = FileStore(url: url, options: .init(), system: calls)
        let engine = try RuleEngine(source: rules, store: store, clock: ManualClock())
        XCTAssertEqual(engine.count("x"), 3)
        let report = store.recoveryReport ?? ""
        XCTAssertTrue(report.contains("could not be kept aside (Permission denied)"), report)
        engine.trigger("x")
        XCTAssertNil(engine.lastStoreError)
    }

    func testATornTailInAReadOnlyDirectoryStillLoads() throws {
        guard getuid() != 0 else { throw XCTSkip("root ignores directory permissions; the test above covers it") }
        let (url, _) = try file(records: 3)
        let handle = try FileHandle(forWritingTo: url)
        handle.seekToEndOfFile()
        handle.write(Data([0x40, 0, 0, 0, 1, 2]))
        try handle.close()
        let directory = url.deletingLastPathComponent()
        chmod(directory.path, 0o555)
        defer { chmod(directory.path, 0o755) }
        let store = FileStore(url: url)
        let engine = try RuleEngine(source: rules, store: store, clock: ManualClock())
        XCTAssertEqual(engine.count("x"), 3)
        XCTAssertTrue(
            store.recoveryReport?.contains("could not be kept aside") == true, "\(store.recoveryReport ?? "")")
    }

    // Also found: a record that checks out but does not decode blocks startup without a rewrite.
    func testNothingIsRewrittenBeforeEveryEntryDecodes() throws {
        let (url, _) = try file(records: 2)
        // An entry of a format newer than this library, then a torn tail.
        var bytes = try [UInt8](Data(contentsOf: url))
        bytes += RecordFormat.record([StoreChange(key: "e:y", value: [9, 1, 2])])
        bytes += [0x40, 0, 0, 0, 1]
        try Data(bytes).write(to: url)
        XCTAssertThrowsError(try engine(url)) { error in
            XCTAssertTrue("\(error)".contains("entry format 9"), "\(error)")
        }
        XCTAssertEqual(try [UInt8](Data(contentsOf: url)), bytes, "the torn tail was not truncated yet")
    }

    // Finding 21: only known format versions load.
    func testFormatVersionZeroIsRefused() throws {
        let url = temporaryURL("v0")
        try Data(Array("RULESTAT".utf8) + [0, 0, 0, 0]).write(to: url)
        XCTAssertThrowsError(try engine(url)) { error in
            guard case RuleEngineError.store(.unsupportedVersion(_, 0)) = error else { return XCTFail("\(error)") }
        }
    }

    func testVersionOneFilesLoadAndAreRewrittenInTheCurrentFormat() throws {
        let url = temporaryURL("v1")
        // A version 1 file: records framed `[u32 length][u32 CRC]` without a header checksum.
        var bytes = Array("RULESTAT".utf8) + [1, 0, 0, 0]
        for _ in 0..<3 {
            let current = RecordFormat.record(
                [StoreChange(key: "e:x", value: EngineStateTestSupport.streamValue(total: Int64(bytes.count)))],
                version: 1)
            bytes += current[0..<8] + current[12...]
        }
        try Data(bytes).write(to: url)
        let engine = try engine(url)
        XCTAssertGreaterThan(engine.count("x"), 0)
        let rewritten = try [UInt8](Data(contentsOf: url))
        XCTAssertEqual(rewritten[8], UInt8(FileStore.formatVersion), "rewritten in the current format once loaded")
    }

    func testVersionTwoAndThreeFilesLoadAndAreRewrittenInTheCurrentFormat() throws {
        for version: UInt32 in [2, 3] {
            try checkEarlierVersionLoads(version)
        }
    }

    private func checkEarlierVersionLoads(_ version: UInt32) throws {
        let url = temporaryURL("v\(version)")
        // A version 2 file: records framed with CRC-32 checksums; version 3: WordChecksum.
        var bytes = Array("RULESTAT".utf8) + [UInt8(version), 0, 0, 0]
        for total in 1...3 {
            bytes += RecordFormat.record(
                [StoreChange(key: "e:x", value: EngineStateTestSupport.streamValue(total: Int64(total)))],
                version: version)
        }
        if version == 3 {
            // Read with the current checksum, the same records are damage.
            try Data(bytes[0..<8] + [UInt8(FileStore.formatVersion), 0, 0, 0] + bytes[12...]).write(to: url)
            XCTAssertThrowsError(try engine(url)) { XCTAssertTrue("\($0)".contains("corrupt"), "\($0)") }
        }
        try Data(bytes).write(to: url)
        do {
            let engine = try engine(url)
            XCTAssertEqual(engine.count("x"), 3)
            engine.trigger("x")
        }
        let rewritten = try [UInt8](Data(contentsOf: url))
        XCTAssertEqual(rewritten[8], UInt8(FileStore.formatVersion), "rewritten in the current format once loaded")
        XCTAssertEqual(try self.engine(url).count("x"), 4)
    }

    // Found with the version 3 checksum: a file of an earlier version with a torn tail was
    // truncated, then appended to in the current format, and the next load called it corrupt.
    func testAnEarlierVersionFileWithATornTailIsRewrittenBeforeItIsAppendedTo() throws {
        for version: UInt32 in [1, 2, 3] {
            let url = temporaryURL("torn-v\(version)")
            var bytes = Array("RULESTAT".utf8) + [UInt8(version), 0, 0, 0]
            for total in 1...3 {
                let record = RecordFormat.record(
                    [StoreChange(key: "e:x", value: EngineStateTestSupport.streamValue(total: Int64(total)))],
                    version: version)
                bytes += version == 1 ? record[0..<8] + record[12...] : record[...]
            }
            bytes += [0x40, 0, 0, 0, 1]  // a record cut short
            try Data(bytes).write(to: url)
            do {
                let store = FileStore(url: url)
                let engine = try RuleEngine(source: rules, store: store, clock: ManualClock())
                engine.trigger("x")
                XCTAssertNotNil(store.recoveryReport, "version \(version)")
            }
            let reloaded = try self.engine(url)
            XCTAssertEqual(reloaded.count("x"), 4, "version \(version)")
            XCTAssertEqual(try [UInt8](Data(contentsOf: url))[8], UInt8(FileStore.formatVersion))
        }
    }

    // Finding 22: a huge file is refused before it is read, and never copied.
    func testAHugeSparseFileIsRefusedUnread() throws {
        let url = temporaryURL("huge")
        try Data(RecordFormat.header()).write(to: url)
        XCTAssertEqual(truncate(url.path, off_t(1) << 30), 0)
        let started = Date()
        for recovery in [FileStore.Recovery.strict, .salvage] {
            XCTAssertThrowsError(try engine(url, recovery: recovery)) { error in
                guard case RuleEngineError.store(.unusable(_, let reason)) = error else { return XCTFail("\(error)") }
                XCTAssertTrue(reason.contains("limit"), reason)
            }
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "refused without reading")
        let siblings = try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)
        XCTAssertEqual(siblings, ["huge"], "nothing copied aside")
    }

    // Also found: an endless file is not read until memory runs out.
    func testAPathThatIsNotARegularFileIsRefused() throws {
        guard FileManager.default.fileExists(atPath: "/dev/zero") else { throw XCTSkip("no /dev/zero") }
        XCTAssertThrowsError(try engine(URL(fileURLWithPath: "/dev/zero"))) { error in
            guard case RuleEngineError.store(.unusable(_, let reason)) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(reason.contains("not a regular file"), reason)
        }
    }

    // Salvage links the damaged file aside (no copy) and keeps the records before the damage.
    func testSalvageKeepsTheRecordsBeforeTheDamageAndTheWholeFileAside() throws {
        let (url, starts) = try file(records: 10)
        var bytes = try [UInt8](Data(contentsOf: url))
        bytes[starts[6] + 20] ^= 0x01
        try Data(bytes).write(to: url)
        let store = FileStore(url: url, options: .init(recovery: .salvage))
        let engine = try RuleEngine(source: rules, store: store, clock: ManualClock())
        XCTAssertEqual(engine.count("x"), 6)
        let report = try XCTUnwrap(store.recoveryReport)
        let aside = try XCTUnwrap(
            FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)
                .first { $0.contains(".damaged-") })
        XCTAssertTrue(report.contains(aside), report)
        XCTAssertEqual(
            try [UInt8](Data(contentsOf: url.deletingLastPathComponent().appendingPathComponent(aside))), bytes)
    }

    // Also found: a temporary file left by a compaction that was killed is removed.
    func testALeftoverCompactionFileIsRemovedAtOpen() throws {
        let (url, _) = try file(records: 2)
        let leftover = url.path + ".tmp"
        XCTAssertTrue(FileManager.default.createFile(atPath: leftover, contents: Data(count: 100)))
        _ = try engine(url)
        XCTAssertFalse(FileManager.default.fileExists(atPath: leftover))
    }

    // Finding 6: the file deleted or replaced while the engine runs.
    func testADeletedStateFileIsDetectedReportedAndWrittenAgain() throws {
        let url = temporaryURL("state")
        let engine = try engine(url)
        for _ in 0..<3 { engine.trigger("x") }
        try FileManager.default.removeItem(at: url)
        engine.startSession(version: "1")
        XCTAssertEqual(engine.lastStoreError, .replaced(path: url.path))
        engine.trigger("x")
        let copy = temporaryURL("copy")
        try FileManager.default.copyItem(at: url, to: copy)
        XCTAssertEqual(try self.engine(copy).count("x"), 4, "the file was written again from memory")
    }

    func testAReplacedStateFileIsDetectedBeforeCompaction() throws {
        let url = temporaryURL("state")
        let engine = try RuleEngine(
            source: rules, store: FileStore(url: url, options: .init(compactionThreshold: 2_048)), clock: ManualClock())
        engine.trigger("x")
        // Someone puts another file at the path (a restored backup, a sync tool).
        let other = temporaryURL("other")
        try Data(RecordFormat.header()).write(to: other)
        XCTAssertEqual(rename(other.path, url.path), 0)
        for _ in 0..<200 { engine.trigger("x") }
        XCTAssertEqual(engine.lastStoreError, .replaced(path: url.path))
        let copy = temporaryURL("copy")
        try FileManager.default.copyItem(at: url, to: copy)
        XCTAssertEqual(try self.engine(copy).count("x"), 201)
    }

    // Finding 7: a symbolic link stays a link; compaction writes beside its target.
    func testASymlinkedStatePathKeepsItsLinkThroughCompaction() throws {
        let target = temporaryURL("real.state")
        let link = temporaryURL("link.state")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
        do {
            let store = FileStore(url: link, options: .init(compactionThreshold: 1_024))
            let engine = try RuleEngine(source: rules, store: store, clock: ManualClock())
            for _ in 0..<500 { engine.trigger("x") }
            XCTAssertNil(engine.lastStoreError)
        }
        let attributes = try FileManager.default.attributesOfItem(atPath: link.path)
        XCTAssertEqual(attributes[.type] as? FileAttributeType, .typeSymbolicLink)
        XCTAssertEqual(try engine(target).count("x"), 500, "the link's target holds the state")
    }

    // Issue 7, item 1: a first launch has no Application Support directory yet.
    func testMissingParentDirectoriesAreCreated() throws {
        let url = temporaryURL("a").appendingPathComponent("b/c/rules.state")
        let engine = try engine(url)
        engine.trigger("x")
        XCTAssertTrue(FileManager.default.fileExists(atPath: url.path))
    }

    func testTheRecordChecksumIsPinnedAndSeesEveryBitFlipAndEveryLength() {
        func checksum(_ bytes: [UInt8]) -> UInt32 { bytes.withUnsafeBytes { WordChecksum.checksum($0) } }
        // Files hold these values: changing the function needs a new format version.
        XCTAssertEqual(checksum(Array("123456789".utf8)), 0x79F3_EB04)
        XCTAssertEqual(checksum([]), 0x708F_9153)
        XCTAssertEqual(checksum((0..<237).map { UInt8(truncatingIfNeeded: $0 &* 31) }), 0xA2F5_7B00)
        // A record's worth of bytes: every single-bit flip changes the checksum.
        let record = (0..<237).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let original = checksum(record)
        var unseen: [Int] = []
        for bit in 0..<(record.count * 8) {
            var flipped = record
            flipped[bit / 8] ^= UInt8(1 << (bit % 8))
            if checksum(flipped) == original { unseen.append(bit) }
        }
        XCTAssertEqual(unseen, [])
        // Cut short, zero-padded, zeroed at the end, all zeros: distinct inputs check differently.
        var inputs: Set<[UInt8]> = [record]
        for length in 0..<record.count { inputs.insert(Array(record[0..<length])) }
        for zeros in 1...64 {
            inputs.insert(record + [UInt8](repeating: 0, count: zeros))
            inputs.insert(record[0..<(record.count - zeros)] + [UInt8](repeating: 0, count: zeros))
            inputs.insert([UInt8](repeating: 0, count: zeros))
        }
        XCTAssertEqual(Set(inputs.map(checksum)).count, inputs.count)
        // The same bytes at every alignment.
        for shift in 1..<8 {
            let shifted = [UInt8](repeating: 0xAA, count: shift) + record
            XCTAssertEqual(
                shifted.withUnsafeBytes { WordChecksum.checksum(UnsafeRawBufferPointer(rebasing: $0[shift...])) },
                original)
        }
    }

    func testChecksumMatchesTheStandardCRC32() {
        // Versions 1, 2 and 4 checksum with zlib's CRC-32.
        XCTAssertEqual(RecordFormat.checksum(Array("123456789".utf8)[...], version: 4), 0xCBF4_3926)
        XCTAssertEqual(RecordFormat.checksum(Array("123456789".utf8)[...], version: 2), 0xCBF4_3926)
        // The bitwise definition (the reflected polynomial 0xEDB88320), on every length and alignment.
        let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        for start in 0..<9 {
            for end in stride(from: start, through: bytes.count, by: 37) {
                var crc: UInt32 = 0xFFFF_FFFF
                for byte in bytes[start..<end] {
                    crc ^= UInt32(byte)
                    for _ in 0..<8 { crc = crc & 1 != 0 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
                }
                XCTAssertEqual(RecordFormat.checksum(bytes[start..<end], version: 1), crc ^ 0xFFFF_FFFF)
                XCTAssertEqual(RecordFormat.checksum(bytes[start..<end], version: 4), crc ^ 0xFFFF_FFFF)
            }
        }
    }
}

enum EngineStateTestSupport {
    /// An encoded stream entry with `total` events.
    static func streamValue(total: Int64) -> [UInt8] {
        var tally = Tally()
        tally.total = total
        var writer = ByteWriter()
        writer.u8(EngineState.format)
        tally.encode(&writer)
        return writer.bytes
    }
}
