import Foundation

/// One engine call's changes, encoded once, as they are made, into a buffer reused from call
/// to call: a state-file record (``FileStore``) with its header left blank, that is room for
/// the header, a varint count, and per change a key string, a flag (1 = value, 0 = deleted)
/// and the value's length and bytes.
///
/// A store that takes records (``RecordStore``) is handed these bytes as they are; any other
/// store is given the same changes decoded as `[StoreChange]`. A class owning raw memory, so
/// that a call encodes with plain stores (no array uniqueness or capacity checks per byte)
/// and the engine's state is not borrowed while it writes.
final class ChangeRecord: ByteSink {
    private(set) var base: UnsafeMutableRawPointer
    private(set) var capacity: Int
    /// Bytes written, header included.
    var length = 0
    /// How many changes the record holds.
    var count = 0
    /// Where the count starts: after the record header.
    static let countOffset = RecordFormat.recordHeaderSize

    init(capacity: Int = 1024) {
        self.capacity = Swift.max(capacity, 64)
        base = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 8)
        reset()
    }

    deinit { base.deallocate() }

    var isEmpty: Bool { count == 0 }

    /// The record's bytes, valid until the next change.
    var bytes: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(start: base, count: length) }

    /// Empties the record, keeping its buffer.
    func reset() {
        // The header, and one byte for the count (widened by `finish` past 127 changes).
        base.initializeMemory(as: UInt8.self, repeating: 0, count: ChangeRecord.countOffset + 1)
        length = ChangeRecord.countOffset + 1
        count = 0
    }

    // MARK: - Changes

    /// Sets `key` to the value `encode` writes.
    @inline(__always)
    func set(_ key: String, _ encode: (ChangeRecord) -> Void) {
        write(key: key)
        setValue(encode)
    }

    /// Sets the key stored as `key` (UTF-8) to the value `encode` writes.
    func set(_ key: UnsafeRawBufferPointer, _ encode: (ChangeRecord) -> Void) {
        varint(UInt64(key.count))
        append(key)
        setValue(encode)
    }

    /// Deletes `key`.
    func delete(_ key: String) {
        write(key: key)
        u8(0)
        count += 1
    }

    /// Adds a change made elsewhere.
    func add(_ change: StoreChange) {
        if let value = change.value {
            set(change.key) { record in value.withUnsafeBytes { record.append($0) } }
        } else {
            delete(change.key)
        }
    }

    @inline(__always)
    func write(key: String) {
        var sink = self
        sink.string(key)
    }

    @inline(__always)
    func setValue(_ encode: (ChangeRecord) -> Void) {
        u8(1)
        let lengthAt = length
        u8(0)
        encode(self)
        writeVarint(length - lengthAt - 1, at: lengthAt)
        count += 1
    }

    /// Writes the count: the bytes are then a record whose header ``RecordFormat/frame(_:version:)`` fills.
    func finish() {
        writeVarint(count, at: ChangeRecord.countOffset)
    }

    /// Writes `value` as a varint over the byte reserved at `offset`, moving the bytes after
    /// it along when it needs more than one.
    @inline(__always)
    private func writeVarint(_ value: Int, at offset: Int) {
        if value < 0x80 {
            base.storeBytes(of: UInt8(value), toByteOffset: offset, as: UInt8.self)
            return
        }
        var size = 1
        while value >> (7 * size) != 0 { size += 1 }
        let tail = length - offset - 1
        reserve(size - 1)
        let at = base + offset
        memmove(at + size, at + 1, tail)
        length += size - 1
        var rest = UInt64(value)
        for k in 0..<size {
            at.storeBytes(
                of: UInt8(truncatingIfNeeded: rest) | (k < size - 1 ? 0x80 : 0), toByteOffset: k, as: UInt8.self)
            rest >>= 7
        }
    }

    /// The changes of a finished record, one by one (read as a store reads a record).
    func changes() -> [StoreChange] {
        var changes: [StoreChange] = []
        changes.reserveCapacity(count)
        let raw = UnsafeRawBufferPointer(bytes)
        // The record was written above: it reads back whole.
        _ = try? RecordFormat.forEachChange(in: raw, from: ChangeRecord.countOffset, to: length) { key, value in
            // Keys the engine wrote, canonical already: not checked again on every call.
            changes.append(
                StoreChange(
                    storedKey: String(decoding: UnsafeRawBufferPointer(rebasing: raw[key]), as: UTF8.self),
                    value: value.map { [UInt8](UnsafeRawBufferPointer(rebasing: raw[$0])) }))
        }
        return changes
    }

    // MARK: - Bytes

    /// Room for `extra` more bytes.
    @inline(__always)
    func reserve(_ extra: Int) {
        if length + extra > capacity { grow(to: length + extra) }
    }

    private func grow(to needed: Int) {
        var size = capacity * 2
        while size < needed { size *= 2 }
        let bigger = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
        bigger.copyMemory(from: base, byteCount: length)
        base.deallocate()
        base = bigger
        capacity = size
    }

    @inline(__always)
    func u8(_ value: UInt8) {
        reserve(1)
        base.storeBytes(of: value, toByteOffset: length, as: UInt8.self)
        length += 1
    }

    @inline(__always)
    func append(_ raw: UnsafeRawBufferPointer) {
        guard let source = raw.baseAddress, raw.count > 0 else { return }
        reserve(raw.count)
        (base + length).copyMemory(from: source, byteCount: raw.count)
        length += raw.count
    }

    @inline(__always)
    func varint(_ value: UInt64) {
        reserve(10)
        var rest = value
        var at = length
        while rest >= 0x80 {
            base.storeBytes(of: UInt8(truncatingIfNeeded: rest) | 0x80, toByteOffset: at, as: UInt8.self)
            rest >>= 7
            at += 1
        }
        base.storeBytes(of: UInt8(truncatingIfNeeded: rest), toByteOffset: at, as: UInt8.self)
        length = at + 1
    }

    @inline(__always)
    func u64(_ value: UInt64) {
        reserve(8)
        base.storeBytes(of: value.littleEndian, toByteOffset: length, as: UInt64.self)
        length += 8
    }
}

/// Bytes written where room was made already (``ChangeRecord/reserve(_:)``): no bounds
/// check and no call, so that a trigger's stream and view entries are written from the
/// engine's arrays in place, with none of them retained. What it buys (`rulebench`, four
/// and three runs alternating with the build before it, 2026-11-27): `trigger_memory_vs_limit`
/// 2.63-3.55x against 3.83-5.10x, `trigger_file_vs_write` 1.83-1.85x against 1.92-2.06x,
/// `trigger_shared_vs_write` 2.19-2.24x against 2.35-2.49x.
struct ReservedSink: ByteSink {
    let base: UnsafeMutableRawPointer
    var length: Int

    @inline(__always)
    mutating func u8(_ value: UInt8) {
        base.storeBytes(of: value, toByteOffset: length, as: UInt8.self)
        length += 1
    }

    @inline(__always)
    mutating func append(_ raw: UnsafeRawBufferPointer) {
        guard let source = raw.baseAddress, raw.count > 0 else { return }
        (base + length).copyMemory(from: source, byteCount: raw.count)
        length += raw.count
    }

    @inline(__always)
    mutating func varint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            u8(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        u8(UInt8(truncatingIfNeeded: rest))
    }

    @inline(__always)
    mutating func u64(_ value: UInt64) {
        base.storeBytes(of: value.littleEndian, toByteOffset: length, as: UInt64.self)
        length += 8
    }
}

/// A store that takes a call's changes as one state-file record (``ChangeRecord``), with
/// no per-change arrays: ``FileStore`` and ``InMemoryStore``.
protocol RecordStore: RuleStore {
    /// Stores the record in `bytes` (header blank, count written); it may fill the header in place.
    func append(record bytes: UnsafeMutableRawBufferPointer) throws
    /// What ``RuleStore/load()`` returns, as the bytes the store holds them in.
    func loadEntries() throws -> StoredEntries
    /// The entries as they are now, in two steps: this call takes what names them (quick: the
    /// engine calls it under its lock), and the closure it returns reads them, on any thread,
    /// while the store goes on taking records (a swap decodes them outside the engine's lock).
    /// With ``recordsTaken`` as of the same moment.
    func entriesReader() throws -> (taken: Int, read: () throws -> StoredEntries)
    /// How many records the store was handed to append since it was made (whoever called it):
    /// a swap compares it with the records its engine handed over meanwhile, to know that
    /// nothing else wrote the store while it decoded.
    var recordsTaken: Int { get }
}
