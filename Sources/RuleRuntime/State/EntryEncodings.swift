import Foundation

/// How each kind of stored entry is written and read.
extension Tally {
    /// At most the bytes `encode` writes.
    var encodedSize: Int { Tally.maxEncodedSize(recentCount: recent.count) }

    /// At most the bytes ``encode(_:recent:to:)`` writes for `recentCount` recent times: five
    /// varints of up to ten bytes, two optional times of nine, the count's varint.
    static func maxEncodedSize(recentCount: Int) -> Int { 8 * recentCount + 80 }

    func encode<W: ByteSink>(_ w: inout W) {
        recent.withUnsafeBufferPointer { Tally.encode(counts, recent: $0, to: &w) }
    }

    /// The bytes a varint of `value` takes.
    @inline(__always)
    static func varintLength(_ value: UInt64) -> Int { (64 - (value | 1).leadingZeroBitCount + 6) / 7 }

    /// The bytes ``encode(_:recent:to:)`` writes for `counts` and `recentCount` recent times.
    @inline(__always)
    static func encodedLength(_ counts: TallyCounts, recentCount: Int) -> Int {
        @inline(__always) func intLength(_ value: Int64) -> Int {
            varintLength(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
        }
        return intLength(counts.total) + (counts.first == nil ? 1 : 9) + (counts.last == nil ? 1 : 9)
            + varintLength(UInt64(recentCount)) + 8 * recentCount + intLength(counts.sessionID)
            + intLength(counts.sessionCount) + intLength(counts.versionID) + intLength(counts.versionCount)
    }

    /// A tally's encoding from its counts and recent times (a stream's are kept apart).
    @inline(__always)
    static func encode<W: ByteSink>(_ counts: TallyCounts, recent: UnsafeBufferPointer<Double>, to w: inout W) {
        w.int(counts.total)
        w.optionalDouble(counts.first)
        w.optionalDouble(counts.last)
        w.varint(UInt64(recent.count))
        w.doubles(recent)
        w.int(counts.sessionID)
        w.int(counts.sessionCount)
        w.int(counts.versionID)
        w.int(counts.versionCount)
    }

    static func decode(_ r: inout ByteReader) throws -> Tally {
        var (counts, count) = try decodeHead(&r)
        var recent: [Double] = []
        // Never with capacity 0: that writes the shared empty array's count, a data race
        // (ThreadSanitizer) with any other thread doing the same.
        if count > 0 {
            recent = try [Double](unsafeUninitializedCapacity: count) { buffer, initialized in
                try r.times(count, into: buffer.baseAddress!)
                initialized = count
            }
        }
        try decodeRest(&r, into: &counts)
        return Tally(counts: counts, recent: recent)
    }

    /// Reads a tally's encoding: returns its counts, and hands its recent times to `times`
    /// with how many there are (a stream's go to the engine's shared buffer).
    @inline(__always)
    static func decode(_ r: inout ByteReader, times: (inout ByteReader, Int) throws -> Void) throws -> TallyCounts {
        var (counts, count) = try decodeHead(&r)
        try times(&r, count)
        try decodeRest(&r, into: &counts)
        return counts
    }

    /// A tally's encoding up to its recent times: its total, first and last times, and how
    /// many recent times follow. (In parts, not through a closure: a closure per tally was a
    /// third of decoding one in a debug build. `@_transparent`, so that a debug build inlines
    /// it too, as `ByteReader`'s reads: with them, a tally took 4.1k instructions to decode
    /// there instead of 5.1k, callgrind over two debug `rule-test-fixture shared-count`.)
    @_transparent
    private static func decodeHead(_ r: inout ByteReader) throws -> (TallyCounts, Int) {
        var counts = TallyCounts()
        counts.total = try r.int()
        counts.first = try r.optionalTime()
        counts.last = try r.optionalTime()
        return (counts, try r.count(max: 1 << 20))
    }

    /// A tally's encoding after its recent times: the session's and the version's counts
    /// (`@_transparent`: as ``decodeHead(_:)``).
    @_transparent
    private static func decodeRest(_ r: inout ByteReader, into counts: inout TallyCounts) throws {
        counts.sessionID = try r.int()
        counts.sessionCount = try r.int()
        counts.versionID = try r.int()
        counts.versionCount = try r.int()
    }
}

extension ParamValue {
    func encode<W: ByteSink>(_ w: inout W) {
        switch self {
        case .bool(let value):
            w.u8(0)
            w.u8(value ? 1 : 0)
        case .int(let value):
            w.u8(1)
            w.int(value)
        case .string(let value):
            w.u8(2)
            w.string(value)
        case .duration(let value):
            w.u8(3)
            w.double(value)
        }
    }

    static func decode(_ r: inout ByteReader) throws -> ParamValue {
        switch try r.u8() {
        case 0: return .bool(try r.u8() != 0)
        case 1: return .int(try r.int())
        case 2: return .string(try r.string())
        case 3: return .duration(try r.double())
        default: throw DecodeError(description: "unknown value type")
        }
    }
}

extension ToDoItem {
    func encode<W: ByteSink>(_ w: inout W) {
        w.double(created)
        w.optionalDouble(expires)
        let pairs = info ?? [:]
        w.varint(UInt64(pairs.count))
        func write(_ key: String, _ value: String) {
            w.string(key)
            w.string(value)
        }
        if pairs.count == 2 {
            // In key order without sorting an array (a presentation's hold writes two on every call).
            let (a, b) = (pairs[pairs.startIndex], pairs[pairs.index(after: pairs.startIndex)])
            let (first, second) = a.key < b.key ? (a, b) : (b, a)
            write(first.key, first.value)
            write(second.key, second.value)
        } else {
            for key in pairs.keys.sorted() { write(key, pairs[key]!) }
        }
        // Whether the to-do has info at all (added later: an older entry ends before it).
        w.u8(info == nil ? 0 : 1)
    }

    static func decode(_ r: inout ByteReader) throws -> ToDoItem {
        let created = try r.time()
        let expires = try r.optionalTime()
        var info: [String: String] = [:]
        for _ in 0..<(try r.count(max: 1 << 16)) {
            let key = try r.string()
            info[key] = try r.string()
        }
        // An entry from before the flag: an empty dictionary meant no info.
        let hasInfo = r.isAtEnd ? !info.isEmpty : try r.u8() == 1
        return ToDoItem(created: created, expires: expires, info: hasInfo ? info : nil)
    }
}

extension SessionMeta {
    func encode<W: ByteSink>(_ w: inout W) {
        w.int(sessionID)
        w.int(versionID)
        if let version {
            w.u8(1)
            w.string(version)
        } else {
            w.u8(0)
        }
        w.optionalDouble(sessionStart)
        w.optionalDouble(versionStart)
        // Added in format 2 of the entry; an older entry ends before it.
        if let firstVersion {
            w.u8(1)
            w.string(firstVersion)
        }
    }

    static func decode(_ r: inout ByteReader) throws -> SessionMeta {
        var meta = SessionMeta()
        meta.sessionID = try r.int()
        meta.versionID = try r.int()
        meta.version = try r.u8() == 1 ? try r.string() : nil
        meta.sessionStart = try r.optionalTime()
        meta.versionStart = try r.optionalTime()
        if !r.isAtEnd, try r.u8() == 1 { meta.firstVersion = try r.string() }
        return meta
    }
}
