import Foundation

/// Names to their positions (the order they were inserted), for the lookups every
/// string-named engine call makes (scenarios, groups, params, streams: each numbered in
/// the order it was declared or first used, so its position is its index).
///
/// A `[String: Int]` hashes with a seeded SipHash on every lookup, which costs about as much
/// as the rest of a refused `tryToExecute`. Names here come from the rules and the app,
/// and the engine bounds how many unknown ones it keeps, so a cheaper hash of the UTF-8
/// bytes (eight at a time, multiplied and folded) is enough; equality is still `String`'s.
/// Open addressing with linear probing, at most half full.
struct NameTable: Sendable {
    /// The names by position. No stored hash and no value: 16 bytes a name (one per stream at
    /// 100,000 streams counts); a collision costs one `String` comparison, which rejects a
    /// different small name at once.
    private var entries: [String] = []
    /// Entry number + 1 in each slot; 0 is empty. A power of two long.
    private var slots: [Int32] = Array(repeating: 0, count: 8)

    init() {}

    var count: Int { entries.count }

    /// The name stored `n`th (names are never removed, so `n` is stable).
    func name(at n: Int) -> String { entries[n] }

    /// Every name, in the order stored.
    var names: [String] { entries }

    /// The position of `name`, or nil.
    subscript(name: String) -> Int? {
        let hash = Self.hash(name)
        let mask = slots.count - 1
        return slots.withUnsafeBufferPointer { slots in
            entries.withUnsafeBufferPointer { entries in
                var slot = Int(truncatingIfNeeded: hash) & mask
                while true {
                    let entry = Int(slots[slot]) - 1
                    if entry < 0 { return nil }
                    if entries[entry] == name { return entry }
                    slot = (slot + 1) & mask
                }
            }
        }
    }

    /// The position of the name whose UTF-8 is `bytes`, or nil.
    func position(of bytes: UnsafeRawBufferPointer) -> Int? {
        let hash = Self.hash(bytes)
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let entry = Int(slots[slot]) - 1
            if entry < 0 { return nil }
            let same =
                entries[entry].utf8.withContiguousStorageIfAvailable {
                    $0.count == bytes.count
                        && ($0.count == 0 || memcmp($0.baseAddress!, bytes.baseAddress!, $0.count) == 0)
                } ?? entries[entry].utf8.elementsEqual(bytes)
            if same { return entry }
            slot = (slot + 1) & mask
        }
    }

    /// The position of `name`, stored at the end if it is new (a name is never removed).
    @discardableResult
    mutating func insert(_ name: String) -> Int {
        let hash = Self.hash(name)
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while slots[slot] != 0 {
            let entry = Int(slots[slot]) - 1
            if entries[entry] == name { return entry }
            slot = (slot + 1) & mask
        }
        entries.append(name)
        slots[slot] = Int32(entries.count)
        if entries.count * 2 > slots.count { resize(to: slots.count * 2) }
        return entries.count - 1
    }

    /// Makes room for `capacity` names without growing again.
    mutating func reserveCapacity(_ capacity: Int) {
        entries.reserveCapacity(capacity)
        var size = slots.count
        while size < capacity * 2 { size *= 2 }
        if size > slots.count { resize(to: size) }
    }

    private mutating func resize(to size: Int) {
        var table = [Int32](repeating: 0, count: size)
        let mask = size - 1
        for (entry, name) in entries.enumerated() {
            var slot = Int(truncatingIfNeeded: Self.hash(name)) & mask
            while table[slot] != 0 { slot = (slot + 1) & mask }
            table[slot] = Int32(entry + 1)
        }
        slots = table
    }

    /// A 64-bit hash of `name`'s UTF-8 bytes.
    @inline(__always)
    static func hash(_ name: String) -> UInt64 {
        if let hash = name.utf8.withContiguousStorageIfAvailable({ hash(UnsafeRawBufferPointer($0)) }) {
            return hash
        }
        return Array(name.utf8).withUnsafeBytes { hash($0) }
    }

    static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15
        var hash = UInt64(bytes.count) &* multiplier
        var index = 0
        while bytes.count - index >= 8 {
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            hash = (hash ^ word) &* multiplier
            hash ^= hash >> 32
            index += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while index < bytes.count {
            tail |= UInt64(bytes[index]) << shift
            shift += 8
            index += 1
        }
        hash = (hash ^ tail) &* multiplier
        hash ^= hash >> 29
        hash = hash &* 0xBF58_476D_1CE4_E5B9
        return hash ^ (hash >> 32)
    }
}
