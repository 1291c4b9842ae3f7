import Foundation

/// Names to their positions (the order they were inserted), for the lookups every
/// string-named engine call makes (scenarios, groups, params, streams: each numbered in
/// the order it was declared or first used, so its position is its index).
///
/// A `[String: Int]` hashes with a seeded SipHash on every lookup, which costs about as much
/// as the rest of a refused `tryToExecute`. Names here come from the rules and the app,
/// and the engine bounds how many unknown ones it keeps, so a cheaper hash of the UTF-8
/// bytes (eight at a time, multiplied and folded) is enough. Names Swift considers equal
/// (canonically equivalent) are one name: a name is stored, hashed and compared in its
/// canonical composition (an ASCII name, nearly all, is its own).
/// Open addressing with linear probing, at most half full.
struct NameTable: Sendable {
    /// The names' UTF-8, in their canonical spelling (``canonical(_:)``), end to end in the
    /// order stored: name `n` is `bytes[ends[n - 1]..<ends[n]]`. No stored hash and no value,
    /// and no object per name: a name takes its bytes and 4 more. A `[String]` took 16 bytes
    /// and, for a name over 15 bytes, a heap object of 48-80 more: at 100,000 streams each with
    /// a filter (`@where:EVENT:TEXT`), that was a third of what an aggregate costs (rulebench
    /// `bytes_per_aggregate_100k`, 202 B before). A collision costs one `memcmp`.
    private var bytes: [UInt8] = []
    private var ends: [UInt32] = []
    /// Entry number + 1 in each slot; 0 is empty. A power of two long.
    private var slots: [Int32] = Array(repeating: 0, count: 8)

    init() {}

    var count: Int { ends.count }

    /// Where name `n`'s bytes are.
    @inline(__always)
    private func range(_ n: Int) -> Range<Int> {
        (n == 0 ? 0 : Int(ends[n - 1]))..<Int(ends[n])
    }

    /// The name stored `n`th (names are never removed, so `n` is stable).
    func name(at n: Int) -> String {
        withName(at: n) { String(decoding: $0, as: UTF8.self) }
    }

    /// Calls `body` with the UTF-8 of the name stored `n`th, in place (no `String` made).
    @inline(__always)
    func withName<R>(at n: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let range = range(n)
        return try bytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[range])) }
    }

    /// Every name, in the order stored.
    var names: [String] { (0..<count).map(name(at:)) }

    /// Whether the name stored `n`th is `key`, byte for byte (false for an `n` out of range):
    /// one comparison, where a lookup hashes and probes. (Names are unique, so then `n` is
    /// the position of `key`.)
    func holds(_ key: UnsafeRawBufferPointer, at n: Int) -> Bool {
        guard n >= 0 && n < ends.count else { return false }
        let range = range(n)
        // Not `range.count`: a debug build reads that through the generic `Collection`.
        guard range.upperBound - range.lowerBound == key.count else { return false }
        return bytes.withUnsafeBytes { Self.same(UnsafeRawBufferPointer(rebasing: $0[range]), key) }
    }

    /// The position of `name` (or of one Swift considers equal), or nil.
    subscript(name: String) -> Int? {
        Self.withCanonicalBytes(of: name) { probe($1, $0).entry }
    }

    /// The position of the name whose UTF-8 is `bytes` (or of one Swift considers equal), or nil.
    func position(of bytes: UnsafeRawBufferPointer) -> Int? {
        let (hash, ascii) = Self.hashAndASCII(bytes)
        return position(of: bytes, hash: hash, ascii: ascii)
    }

    /// As ``position(of:)``, given what ``hashAndASCII(_:seed:)`` says of `bytes`.
    @inline(__always)
    func position(of bytes: UnsafeRawBufferPointer, hash: UInt64, ascii: Bool) -> Int? {
        // Not ASCII: looked up in its canonical spelling, the one stored.
        guard ascii else { return self[String(decoding: bytes, as: UTF8.self)] }
        return probe(hash, bytes).entry
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
        for (i, key) in batch.keys.enumerated() {
            let entry = batch.positions[i]
            if entry == -1 && batch.ascii[i] { continue }
            if entry >= 0 && batch.ascii[i] && withName(at: entry, { Self.same($0, key) }) { continue }
            // Further along the chain, or a name not in its canonical spelling.
            batch.positions[i] = position(of: key, hash: batch.hashes[i], ascii: batch.ascii[i]) ?? -1
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
        let (entry, slot) = Self.withCanonicalBytes(of: name) { canonical, hash in
            let found = probe(hash, canonical)
            if found.entry == nil {
                bytes.append(contentsOf: canonical.bindMemory(to: UInt8.self))
                precondition(bytes.count <= Int(UInt32.max), "names over 4 GiB")
            }
            return found
        }
        if let entry { return entry }
        ends.append(UInt32(bytes.count))
        slots[slot] = Int32(ends.count)
        if ends.count * 2 > slots.count { resize(to: slots.count * 2) }
        return ends.count - 1
    }

    /// The entry whose bytes are `key` along the chain of `hash`, and the slot it is in or would
    /// go in. Stored names are canonical, so a canonical `key` finds the name Swift considers
    /// equal to it (``hash(_:)-swift.type.method`` gives them one chain).
    @inline(__always)
    private func probe(_ hash: UInt64, _ key: UnsafeRawBufferPointer) -> (entry: Int?, slot: Int) {
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        return slots.withUnsafeBufferPointer { slots in
            bytes.withUnsafeBytes { stored in
                ends.withUnsafeBufferPointer { ends in
                    while true {
                        let entry = Int(slots[slot]) - 1
                        if entry < 0 { return (nil, slot) }
                        let start = entry == 0 ? 0 : Int(ends[entry - 1])
                        if Int(ends[entry]) - start == key.count
                            && Self.same(UnsafeRawBufferPointer(rebasing: stored[start..<Int(ends[entry])]), key)
                        {
                            return (entry, slot)
                        }
                        slot = (slot + 1) & mask
                    }
                }
            }
        }
    }

    /// Equal bytes.
    @inline(__always)
    private static func same(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        a.count == b.count && (a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
    }

    /// Calls `body` with the UTF-8 of `name`'s canonical spelling and its hash (the hash sees
    /// on the way whether the name is ASCII, and so its own canonical spelling).
    @inline(__always)
    static func withCanonicalBytes<R>(of name: String, _ body: (UnsafeRawBufferPointer, UInt64) -> R) -> R {
        withBytes(of: name) { bytes in
            let (hash, ascii) = hashAndASCII(bytes)
            if ascii { return body(bytes, hash) }
            return withBytes(of: name.precomposedStringWithCanonicalMapping) { body($0, self.hash($0)) }
        }
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
        ends.reserveCapacity(capacity)
        var size = slots.count
        while size < capacity * 2 { size *= 2 }
        if size > slots.count { resize(to: size) }
    }

    private mutating func resize(to size: Int) {
        var table = [Int32](repeating: 0, count: size)
        let mask = size - 1
        for entry in 0..<count {
            // Stored canonical: the hash of its bytes is the hash of the name.
            var slot = Int(truncatingIfNeeded: withName(at: entry) { Self.hash($0) }) & mask
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
