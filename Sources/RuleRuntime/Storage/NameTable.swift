import Foundation

/// Names to their positions (the order they were inserted), for the lookups every
/// string-named engine call makes (scenarios, groups, params, streams: each numbered in
/// the order it was declared or first used, so its position is its index).
///
/// A `[String: Int]` hashes with a seeded SipHash on every lookup, which costs about as much
/// as the rest of a refused `tryToExecute`. Names here come from the rules and the app,
/// and the engine bounds how many unknown ones it keeps, so a cheaper hash of the UTF-8
/// bytes (eight at a time, multiplied and folded) is enough. Names Swift considers equal
/// (canonically equivalent) are one name: a name that is not ASCII is hashed in its
/// canonical composition (ASCII names, nearly all, as they are) and compared as a `String`.
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
        probe(Self.hash(name)) { $0 == name }.entry
    }

    /// The position of the name whose UTF-8 is `bytes` (or of one Swift considers equal), or nil.
    func position(of bytes: UnsafeRawBufferPointer) -> Int? {
        let (hash, ascii) = Self.hashAndASCII(bytes)
        return position(of: bytes, hash: hash, ascii: ascii)
    }

    /// As ``position(of:)``, given what ``hashAndASCII(_:seed:)`` says of `bytes`.
    @inline(__always)
    private func position(of bytes: UnsafeRawBufferPointer, hash: UInt64, ascii: Bool) -> Int? {
        guard ascii else { return self[String(decoding: bytes, as: UTF8.self)] }
        // Equal bytes, or (rarely met: a collision) a name that is not ASCII yet equal to this one.
        return probe(hash) { stored in
            NameTable.withBytes(of: stored) {
                ($0.count == bytes.count && NameTable.same($0, bytes))
                    || (!NameTable.hashAndASCII($0).ascii && stored == String(decoding: bytes, as: UTF8.self))
            }
        }.entry
    }

    /// Names to look up at once (``lookUp(_:)``), and their positions; kept from batch to
    /// batch, so that its arrays are allocated once.
    struct LookupBatch {
        /// How many names a batch holds at most.
        static let size = 32
        /// The UTF-8 of each name (valid until ``lookUp(_:)`` returns).
        var keys: [UnsafeRawBufferPointer] = []
        /// By key: its position, or -1.
        fileprivate(set) var positions: [Int] = []
        fileprivate var hashes: [UInt64] = []
        fileprivate var ascii: [Bool] = []

        init() {
            keys.reserveCapacity(Self.size)
            positions.reserveCapacity(Self.size)
            hashes.reserveCapacity(Self.size)
            ascii.reserveCapacity(Self.size)
        }
    }

    /// Looks up the names of `batch` at once: `batch.positions[i]` becomes the position of the
    /// name whose UTF-8 is `batch.keys[i]` (as ``position(of:)`` finds it), or -1.
    ///
    /// In a large table each lookup waits for two cache misses, its first slot and then the
    /// name in it. Hashing every key, then reading every key's first slot, then comparing,
    /// lets the reads of different keys overlap instead of following one another: loading
    /// 100,000 stored streams (`rulebench cold`) spent 17% of an engine's start in lookups one
    /// at a time.
    func lookUp(_ batch: inout LookupBatch) {
        batch.hashes.removeAll(keepingCapacity: true)
        batch.ascii.removeAll(keepingCapacity: true)
        batch.positions.removeAll(keepingCapacity: true)
        for key in batch.keys {
            let (hash, ascii) = Self.hashAndASCII(key)
            batch.hashes.append(hash)
            batch.ascii.append(ascii)
        }
        let mask = slots.count - 1
        // Each key's first slot's entry (-1: empty, so the name is absent).
        slots.withUnsafeBufferPointer { slots in
            for hash in batch.hashes { batch.positions.append(Int(slots[Int(truncatingIfNeeded: hash) & mask]) - 1) }
        }
        entries.withUnsafeBufferPointer { entries in
            for (i, key) in batch.keys.enumerated() {
                let entry = batch.positions[i]
                if entry == -1 && batch.ascii[i] { continue }
                if entry >= 0 && Self.withBytes(of: entries[entry], { $0.count == key.count && Self.same($0, key) }) {
                    continue
                }
                // Further along the chain, or a name Swift considers equal to this one.
                batch.positions[i] = position(of: key, hash: batch.hashes[i], ascii: batch.ascii[i]) ?? -1
            }
        }
    }

    /// The canonical spelling of a name, the one stored keys use: its Unicode canonical
    /// composition (NFC). An ASCII name, nearly all, is its own.
    static func canonical(_ name: String) -> String {
        name.utf8.allSatisfy { $0 < 0x80 } ? name : name.precomposedStringWithCanonicalMapping
    }

    /// The position of `name`, stored (in its canonical spelling) at the end if it is new (a
    /// name is never removed).
    @discardableResult
    mutating func insert(_ name: String) -> Int {
        // The hash sees whether the name is ASCII on the way (then it is its own canonical form).
        let (asciiHash, ascii) = Self.withBytes(of: name) { Self.hashAndASCII($0) }
        let hash = ascii ? asciiHash : Self.hash(name)
        let (entry, slot) = probe(hash) { $0 == name }
        if let entry { return entry }
        entries.append(ascii ? name : name.precomposedStringWithCanonicalMapping)
        slots[slot] = Int32(entries.count)
        if entries.count * 2 > slots.count { resize(to: slots.count * 2) }
        return entries.count - 1
    }

    /// The entry that `matches` along the chain of `hash`, and the slot it is in or would go in.
    /// `String`'s equality decides, so names Swift considers equal (canonically equivalent)
    /// are one name; ``hash(_:)-swift.type.method`` gives them one chain.
    @inline(__always)
    private func probe(_ hash: UInt64, _ matches: (String) -> Bool) -> (entry: Int?, slot: Int) {
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        return slots.withUnsafeBufferPointer { slots in
            entries.withUnsafeBufferPointer { entries in
                while true {
                    let entry = Int(slots[slot]) - 1
                    if entry < 0 { return (nil, slot) }
                    if matches(entries[entry]) { return (entry, slot) }
                    slot = (slot + 1) & mask
                }
            }
        }
    }

    /// Equal bytes (of equal counts).
    @inline(__always)
    private static func same(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0
    }

    /// Calls `body` with `name`'s UTF-8 (copied out only when the string does not hold it as such).
    @inline(__always)
    static func withBytes<R>(of name: String, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        if let result = name.utf8.withContiguousStorageIfAvailable({ body(UnsafeRawBufferPointer($0)) }) {
            return result
        }
        return Array(name.utf8).withUnsafeBytes(body)
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

    /// A 64-bit hash of `name`, the same for names Swift considers equal: of its UTF-8 when
    /// that is ASCII, else of its canonical composition's (an ASCII name is its own).
    static func hash(_ name: String) -> UInt64 {
        let (hash, ascii) = withBytes(of: name) { hashAndASCII($0) }
        return ascii ? hash : withBytes(of: name.precomposedStringWithCanonicalMapping) { self.hash($0) }
    }

    static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 { hashAndASCII(bytes).hash }

    /// Mixed into every hash, different in every process: names and keys read from a state
    /// file cannot be chosen to collide (which would make loading it quadratic). Hashes are
    /// never stored.
    static let seed: UInt64 = UInt64.random(in: 1...UInt64.max)

    /// The hash of `bytes`, and whether they are all ASCII (seen on the way, for free).
    @inline(__always)
    static func hashAndASCII(_ bytes: UnsafeRawBufferPointer, seed: UInt64 = seed) -> (hash: UInt64, ascii: Bool) {
        let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15
        var hash = (UInt64(bytes.count) &* multiplier) ^ seed
        var seen: UInt64 = 0
        var index = 0
        while bytes.count - index >= 8 {
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            seen |= word
            hash = (hash ^ word) &* multiplier
            hash ^= hash >> 32
            index += 8
        }
        // The last 0-7 bytes as one little-endian word (zero above them), from at most two
        // loads that may overlap (bytes read twice are the same bytes), not a byte at a time.
        var tail: UInt64 = 0
        let left = bytes.count - index
        if left >= 4 {
            let low = UInt64(bytes.loadUnaligned(fromByteOffset: index, as: UInt32.self).littleEndian)
            let high = UInt64(bytes.loadUnaligned(fromByteOffset: bytes.count - 4, as: UInt32.self).littleEndian)
            tail = low | high << UInt64(8 * (left - 4))
        } else if left > 0 {
            tail =
                UInt64(bytes[index]) | UInt64(bytes[index + left / 2]) << UInt64(8 * (left / 2))
                | UInt64(bytes[bytes.count - 1]) << UInt64(8 * (left - 1))
        }
        seen |= tail
        hash = (hash ^ tail) &* multiplier
        hash ^= hash >> 29
        hash = hash &* 0xBF58_476D_1CE4_E5B9
        return (hash ^ (hash >> 32), seen & 0x8080_8080_8080_8080 == 0)
    }
}
