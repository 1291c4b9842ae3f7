import Foundation

/// A store's live entries as it holds them: bytes, and where each key's latest value lies in
/// them. The engine decodes its state from here without a `String` or an array per entry.
struct StoredEntries {
    let bytes: [UInt8]
    let index: RecordIndex

    init(bytes: [UInt8], index: RecordIndex) {
        self.bytes = bytes
        self.index = index
    }

    /// Entries as ``RuleStore/load()`` returns them, laid out in the order of their keys (so
    /// that what is decoded from them comes in the same order every time), after one unused
    /// byte (so that the bytes have an address even for an empty key and value).
    init(_ entries: [String: [UInt8]]) {
        var bytes: [UInt8] = [0]
        var ranges: [(key: Range<Int>, value: Range<Int>)] = []
        ranges.reserveCapacity(entries.count)
        for (key, value) in entries.sorted(by: { $0.key < $1.key }) {
            let start = bytes.count
            bytes += key.utf8
            bytes += value
            ranges.append((start..<start + key.utf8.count, start + key.utf8.count..<bytes.count))
        }
        var index = RecordIndex()
        bytes.withUnsafeBytes { raw in
            index.reserveCapacity(ranges.count, in: raw)
            for range in ranges { index.set(key: range.key, value: range.value, in: raw) }
        }
        self.init(bytes: bytes, index: index)
    }

    /// The entries as ``RuleStore/load()`` returns them.
    var values: [String: [UInt8]] { index.values(in: bytes) }
}

/// Where each key's latest value lies in a state file's bytes, found by replaying its records.
///
/// Keys are compared and hashed as the bytes they are stored as: replaying makes no `String`
/// and no allocation per key, so replaying a file of 100,000 entries (loading, compaction)
/// costs little time and leaves little memory behind. Open addressing, at most half full.
struct RecordIndex {
    /// A key and its latest value, as byte offsets; `valueCount` is -1 once the key is deleted.
    /// Stored in 32 bits each (16 bytes an entry, not 32): a state file is at most 256 MiB, and
    /// a compaction of 100,000 entries holds an index of them and a sorted copy.
    struct Entry {
        private var keyAt: UInt32
        private var keyLength: UInt32
        private var valueAt: UInt32
        private var valueLength: Int32

        /// Offsets and lengths within 4 GiB of bytes (a file's are within 256 MiB).
        init(keyStart: Int, keyCount: Int, valueStart: Int, valueCount: Int) {
            keyAt = UInt32(keyStart)
            keyLength = UInt32(keyCount)
            valueAt = UInt32(valueStart)
            valueLength = Int32(valueCount)
        }

        var keyStart: Int { Int(keyAt) }
        var keyCount: Int { Int(keyLength) }
        var valueStart: Int {
            get { Int(valueAt) }
            set { valueAt = UInt32(newValue) }
        }
        var valueCount: Int {
            get { Int(valueLength) }
            set { valueLength = Int32(newValue) }
        }

        var key: Range<Int> { keyStart..<keyStart + keyCount }
        var value: Range<Int>? { valueCount < 0 ? nil : valueStart..<valueStart + valueCount }
    }

    /// Every key seen, in first-seen order; deleted ones have no value.
    private(set) var entries: [Entry] = []
    /// Entry number + 1 in each slot; 0 is empty. A power of two long.
    private var slots: [Int32] = Array(repeating: 0, count: 16)
    /// How many keys have a value.
    private(set) var liveCount = 0

    /// The keys with a value.
    var live: LazyFilterSequence<[Entry]> { entries.lazy.filter { $0.valueCount >= 0 } }

    /// Makes room for `capacity` keys without growing again (`bytes` holds the keys so far).
    /// Reserving for one record after another grows as appending does (by doubling), not by
    /// each record's count (a copy of every entry per record).
    mutating func reserveCapacity(_ capacity: Int, in bytes: UnsafeRawBufferPointer) {
        if capacity > entries.capacity { entries.reserveCapacity(max(capacity, 2 * entries.capacity)) }
        var size = slots.count
        while size < capacity * 2 { size *= 2 }
        if size > slots.count { resize(to: size, in: bytes) }
    }

    /// The live entries' keys and values (key and value bytes, header and length excluded).
    var liveBytes: Int { live.reduce(0) { $0 + $1.keyCount + $1.valueCount } }

    /// The entry whose key (in `bytes`) is `key`'s bytes, or nil.
    func find(_ key: UnsafeRawBufferPointer, in bytes: UnsafeRawBufferPointer) -> Int? {
        probe(key, in: bytes).entry
    }

    /// The entry whose key (in `bytes`) is `key`'s bytes, and the slot it is in or would go in.
    @inline(__always)
    private func probe(_ key: UnsafeRawBufferPointer, in bytes: UnsafeRawBufferPointer) -> (entry: Int?, slot: Int) {
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: NameTable.hash(key)) & mask
        return slots.withUnsafeBufferPointer { slots in
            entries.withUnsafeBufferPointer { entries in
                while slots[slot] != 0 {
                    let index = Int(slots[slot]) - 1
                    if entries[index].keyCount == key.count
                        && (key.count == 0
                            || memcmp(bytes.baseAddress! + entries[index].keyStart, key.baseAddress!, key.count) == 0)
                    {
                        return (index, slot)
                    }
                    slot = (slot + 1) & mask
                }
                return (nil, slot)
            }
        }
    }

    /// Sets entry `index`'s value to the bytes at `value` (nil: deleted).
    mutating func setValue(ofEntry index: Int, to value: Range<Int>?) {
        if (entries[index].valueCount >= 0) != (value != nil) { liveCount += value == nil ? -1 : 1 }
        entries[index].valueStart = value?.lowerBound ?? 0
        entries[index].valueCount = value?.count ?? -1
    }

    /// Sets the key at `key` in `bytes` to the value at `value` (nil: deleted).
    mutating func set(key: Range<Int>, value: Range<Int>?, in bytes: UnsafeRawBufferPointer) {
        let (found, slot) = probe(UnsafeRawBufferPointer(rebasing: bytes[key]), in: bytes)
        if let found { return setValue(ofEntry: found, to: value) }
        let valueStart = value?.lowerBound ?? 0
        let valueCount = value?.count ?? -1
        entries.append(
            Entry(keyStart: key.lowerBound, keyCount: key.count, valueStart: valueStart, valueCount: valueCount))
        if valueCount >= 0 { liveCount += 1 }
        slots[slot] = Int32(entries.count)
        if entries.count * 2 > slots.count { resize(to: slots.count * 2, in: bytes) }
    }

    private mutating func resize(to size: Int, in bytes: UnsafeRawBufferPointer) {
        var table = [Int32](repeating: 0, count: size)
        let mask = size - 1
        for (index, entry) in entries.enumerated() {
            let key = UnsafeRawBufferPointer(rebasing: bytes[entry.key])
            var slot = Int(truncatingIfNeeded: NameTable.hash(key)) & mask
            while table[slot] != 0 { slot = (slot + 1) & mask }
            table[slot] = Int32(index + 1)
        }
        slots = table
    }

    /// The live entries as the engine reads them.
    func values(in bytes: [UInt8]) -> [String: [UInt8]] {
        var values: [String: [UInt8]] = [:]
        values.reserveCapacity(liveCount)
        for entry in live {
            values[String(decoding: bytes[entry.key], as: UTF8.self)] = Array(bytes[entry.value!])
        }
        return values
    }

    /// How many slots lookups of every key (in `bytes`) pass, in all: about the number of keys
    /// when the hash spreads them, about half its square when they collide (tests).
    func probeLength(in bytes: UnsafeRawBufferPointer) -> Int {
        let mask = slots.count - 1
        var total = 0
        for (slot, value) in slots.enumerated() where value != 0 {
            let key = UnsafeRawBufferPointer(rebasing: bytes[entries[Int(value) - 1].key])
            let home = Int(truncatingIfNeeded: NameTable.hash(key)) & mask
            total += ((slot - home) & mask) + 1
        }
        return total
    }
}
