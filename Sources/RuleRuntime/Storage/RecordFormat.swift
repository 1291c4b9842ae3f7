import Foundation

/// The record format of state files, and of the records every record store takes: framing,
/// checksums, replay. ``FileStore`` and ``InMemoryStore`` both read records through here; it
/// knows keys and values only as bytes (nothing of the engine's state).
///
/// A file (little-endian): the 8 bytes `RULESTAT`, a `u32` format version, then records
/// `[u32 length][u32 checksum of payload][u32 checksum of the 8 bytes before][payload]`.
/// A payload is a varint count of changes, each a varint-length key, a flag (1 = value,
/// 0 = deleted) and, for a value, its varint length and bytes. Replaying the records in
/// order gives the entries. Checksums: CRC-32 (zlib's, ``CRC32``) in versions 1, 2 and 4,
/// ``WordChecksum`` in version 3; version 1 has no header checksum (8-byte frames).
enum RecordFormat {
    /// The format version this library writes.
    static let version: UInt32 = 4
    static let magic: [UInt8] = Array("RULESTAT".utf8)
    static let headerSize = 12
    static let recordHeaderSize = 12
    /// The largest state file accepted, in bytes (256 MiB).
    static let maximumFileSize = 256 << 20

    /// The 12 bytes a file of the current version starts with.
    static func header() -> [UInt8] {
        var bytes = magic
        withUnsafeBytes(of: version.littleEndian) { bytes += $0 }
        return bytes
    }

    // MARK: - Checksums

    /// The checksum of `raw` as records of format `version` have it.
    @inline(__always)
    static func checksum(_ raw: UnsafeRawBufferPointer, version: UInt32) -> UInt32 {
        version == 3 ? WordChecksum.checksum(raw) : CRC32.checksum(raw)
    }

    static func checksum(_ bytes: ArraySlice<UInt8>, version: UInt32) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, version: version) }
    }

    // MARK: - Writing records

    /// Fills the header (12 zero bytes) of the record that is all of `bytes`: its payload's
    /// length, the payload's checksum and the header's, as format `version` has them.
    static func frame(_ bytes: UnsafeMutableRawBufferPointer, version: UInt32 = version) {
        let length = UInt32(bytes.count - recordHeaderSize)
        bytes.storeBytes(of: length.littleEndian, toByteOffset: 0, as: UInt32.self)
        // Ranges with both bounds here and below: a debug build reads `x[a...]` through the
        // generic `RangeExpression` subscript, more than the rest of checking a small record.
        let payload = checksum(
            UnsafeRawBufferPointer(rebasing: bytes[recordHeaderSize..<bytes.count]), version: version)
        bytes.storeBytes(of: payload.littleEndian, toByteOffset: 4, as: UInt32.self)
        let header = checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<8]), version: version)
        bytes.storeBytes(of: header.littleEndian, toByteOffset: 8, as: UInt32.self)
    }

    /// One framed record of `changes`, with the checksums of format `version`.
    static func record(_ changes: [StoreChange], version: UInt32 = version) -> [UInt8] {
        var writer = RecordWriter(count: changes.count)
        for change in changes { writer.add(Array(change.key.utf8)[...], change.value?[...]) }
        return writer.finish(version: version)
    }

    // MARK: - Replaying

    /// Where replaying stopped short of the end, and why; `torn` for what a killed writer
    /// leaves (a cut-short last record, a zero-filled tail), not corruption.
    struct Damage {
        var offset: Int
        var reason: String
        var torn: Bool
    }

    /// Replays the records of `bytes` from `start` (just after the header, or where an earlier
    /// replay ended): each whole record is checked, then `apply` is called with its payload
    /// (`raw`, the payload's bounds and its change count). Returns where the valid records end
    /// and the damage there, if any.
    static func replay(
        _ bytes: [UInt8], from start: Int, version: UInt32,
        _ apply: (UnsafeRawBufferPointer, Range<Int>, Int) -> Void
    ) -> (end: Int, damage: Damage?) {
        bytes.withUnsafeBytes { replay($0, from: start, version: version, apply) }
    }

    /// As ``replay(_:from:version:_:)``, over bytes held elsewhere than an array.
    static func replay(
        _ raw: UnsafeRawBufferPointer, from start: Int, version: UInt32,
        _ apply: (UnsafeRawBufferPointer, Range<Int>, Int) -> Void
    ) -> (end: Int, damage: Damage?) {
        var none: [(key: Range<Int>, value: Range<Int>?)] = []
        return replay(raw, from: start, version: version, collecting: false, &none, apply)
    }

    /// As ``replay(_:from:version:_:)``, adding the changes of each whole record to `changes`
    /// (their key and value ranges in `bytes`; a record that cannot be decoded adds none), read
    /// once: what another process appended, taken in by every call of a shared file's engine.
    static func replayChanges(
        _ bytes: [UInt8], from start: Int, version: UInt32, into changes: inout [(key: Range<Int>, value: Range<Int>?)]
    ) -> (end: Int, damage: Damage?) {
        bytes.withUnsafeBytes { replay($0, from: start, version: version, collecting: true, &changes) { _, _, _ in } }
    }

    /// The replay: when `collecting`, each record's changes are added to `changes` as the
    /// record is checked, instead of being read again by `apply`.
    private static func replay(
        _ raw: UnsafeRawBufferPointer, from start: Int, version: UInt32,
        collecting: Bool, _ changes: inout [(key: Range<Int>, value: Range<Int>?)],
        _ apply: (UnsafeRawBufferPointer, Range<Int>, Int) -> Void
    ) -> (end: Int, damage: Damage?) {
        var offset = start
        let frame = version == 1 ? 8 : recordHeaderSize
        // Not a nested function reading `offset`: that would box it, and check every access.
        func damage(_ reason: String, torn: Bool, at offset: Int) -> (Int, Damage?) {
            (offset, Damage(offset: offset, reason: reason, torn: torn))
        }
        while offset < raw.count {
            let remaining = raw.count - offset
            if isZero(UnsafeRawBufferPointer(rebasing: raw[offset..<raw.count])) {
                return damage("the file ends in \(remaining) zero bytes", torn: true, at: offset)
            }
            if remaining < frame { return damage("a record header is cut short", torn: true, at: offset) }
            let length = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
            let sum = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
            if version >= 2 {
                let headerSum = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self))
                guard
                    headerSum
                        == checksum(UnsafeRawBufferPointer(rebasing: raw[offset..<offset + 8]), version: version)
                else { return damage("a record header is damaged", torn: false, at: offset) }
            }
            let payload = offset + frame
            if length > raw.count - payload { return damage("the last record is cut short", torn: true, at: offset) }
            let end = payload + length
            guard checksum(UnsafeRawBufferPointer(rebasing: raw[payload..<end]), version: version) == sum else {
                return damage("a record's checksum does not match", torn: false, at: offset)
            }
            // Checked whole before any change is applied: a record applies all or nothing.
            let count: Int
            let before = changes.count
            do {
                if collecting {
                    count = try forEachChange(in: raw, from: payload, to: end) { changes.append(($0, $1)) }
                } else {
                    count = try forEachChange(in: raw, from: payload, to: end) { _, _ in }
                }
            } catch {
                changes.removeSubrange(before..<changes.count)
                return damage("a record cannot be decoded (\(error))", torn: false, at: offset)
            }
            apply(raw, payload..<end, count)
            offset = end
        }
        return (offset, nil)
    }

    /// Replays the records of a whole file (`bytes`, header included) of format `version`:
    /// where each live key's latest value lies in `bytes`, the offset where the valid records
    /// end, and the damage there, if any.
    static func replayRecords(_ bytes: [UInt8], version: UInt32) -> (RecordIndex, Int, Damage?) {
        var index = RecordIndex()
        let (end, damage) = replay(bytes, from: headerSize, version: version) { raw, payload, count in
            // A compacted file is records of many entries each: reserve for each at once.
            if count > 16 { index.reserveCapacity(index.entries.count + count, in: raw) }
            _ = try? forEachChange(in: raw, from: payload.lowerBound, to: payload.upperBound) {
                index.set(key: $0, value: $1, in: raw)
            }
        }
        return (index, end, damage)
    }

    /// Reads the record payload at `raw[start..<end]`: a varint count, then per change a key
    /// string, a flag (1 = value, 0 = deleted) and the value. Calls `body` with each change's
    /// key and value byte ranges (nil: deleted), in order; throws at anything malformed, after
    /// the changes before it; returns how many changes there are.
    static func forEachChange(
        in raw: UnsafeRawBufferPointer, from start: Int, to end: Int, _ body: (Range<Int>, Range<Int>?) -> Void
    ) throws -> Int {
        var at = start
        let count = try length(raw, &at, end)
        for _ in 0..<count {
            let keyLength = try length(raw, &at, end)
            let key = at..<at + keyLength
            at += keyLength
            guard at < end else { throw DecodeError(description: "unexpected end of data") }
            let flag = raw[at]
            at += 1
            switch flag {
            case 0: body(key, nil)
            case 1:
                let valueLength = try length(raw, &at, end)
                body(key, at..<at + valueLength)
                at += valueLength
            default: throw DecodeError(description: "bad entry flag")
            }
        }
        guard at == end else { throw DecodeError(description: "trailing bytes") }
        return count
    }

    /// The varint at `raw[at]`, no larger than what is left before `end`; moves `at` past it.
    /// A function of its own, not one nested in ``forEachChange(in:from:to:_:)``: a nested one
    /// captured `at` in a box, and every access to it paid a dynamic exclusivity check (a
    /// quarter of taking in another process's record, built for debugging).
    @inline(__always)
    private static func length(_ raw: UnsafeRawBufferPointer, _ at: inout Int, _ end: Int) throws -> Int {
        var value = 0
        var shift = 0
        while true {
            guard at < end else { throw DecodeError(description: "unexpected end of data") }
            guard shift < 63 else { throw DecodeError(description: "varint too long") }
            let byte = raw[at]
            at += 1
            value |= Int(byte & 0x7F) << shift
            if byte < 0x80 { break }
            shift += 7
        }
        guard value >= 0, value <= end - at else { throw DecodeError(description: "length \(value) out of range") }
        return value
    }

    static func isZero(_ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.withUnsafeBytes { isZero($0) }
    }

    static func isZero(_ raw: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        let words = raw.count / 8
        while index < words {
            if raw.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self) != 0 { return false }
            index += 1
        }
        for k in words * 8..<raw.count where raw[k] != 0 { return false }
        return true
    }
}

/// Builds one framed record of a known number of changes from keys and values given as bytes
/// (snapshots, ``RecordFormat/record(_:version:)``), in one buffer.
struct RecordWriter {
    private(set) var bytes: [UInt8]

    /// A record that will hold `count` changes.
    init(count: Int, capacity: Int = 64) {
        bytes = [UInt8](repeating: 0, count: RecordFormat.recordHeaderSize)
        bytes.reserveCapacity(capacity)
        varint(count)
    }

    mutating func add(_ key: ArraySlice<UInt8>, _ value: ArraySlice<UInt8>?) {
        varint(key.count)
        bytes += key
        if let value {
            bytes.append(1)
            varint(value.count)
            bytes += value
        } else {
            bytes.append(0)
        }
    }

    /// Adds a key and its value, given as raw bytes.
    mutating func add(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
        varint(key.count)
        bytes.append(contentsOf: key)
        bytes.append(1)
        varint(value.count)
        bytes.append(contentsOf: value)
    }

    private mutating func varint(_ value: Int) {
        var rest = UInt64(value)
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    /// The framed record (its header filled in place).
    mutating func finish(version: UInt32) -> [UInt8] {
        bytes.withUnsafeMutableBytes { RecordFormat.frame($0, version: version) }
        return bytes
    }
}

/// The record checksum of format version 3 (read only; version 4 went back to CRC-32): the
/// bytes as little-endian 8-byte words mixed into two 64-bit lanes by xor, multiply and
/// shift, folded to 32 bits.
enum WordChecksum {
    static let k1: UInt64 = 0x9E37_79B9_7F4A_7C15
    static let k2: UInt64 = 0xC2B2_AE3D_27D4_EB4F

    @inline(__always)
    static func mix(_ lane: UInt64, _ word: UInt64, _ k: UInt64) -> UInt64 {
        let product = (lane ^ word) &* k
        return product ^ (product >> 32)
    }

    static func checksum(_ raw: UnsafeRawBufferPointer) -> UInt32 {
        let count = raw.count
        var a = 0x243F_6A88_85A3_08D3 ^ UInt64(count)
        var b: UInt64 = 0x1319_8A2E_0370_7344
        var index = 0
        while count - index >= 16 {
            a = mix(a, UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)), k1)
            b = mix(b, UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index + 8, as: UInt64.self)), k2)
            index += 16
        }
        if count - index >= 8 {
            a = mix(a, UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)), k1)
            index += 8
        }
        if index < count {
            var last: UInt64 = 0
            var shift: UInt64 = 0
            while index < count {
                last |= UInt64(raw[index]) << shift
                shift += 8
                index += 1
            }
            b = mix(b, last, k2)
        }
        var h = mix(a, (b << 23) | (b >> 41), k1)
        h ^= h >> 29
        h &*= k2
        h ^= h >> 32
        return UInt32(truncatingIfNeeded: h)
    }
}
