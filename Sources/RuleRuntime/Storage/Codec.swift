/// Where encoded bytes go: a growing array (``ByteWriter``) or a call's record buffer
/// (``ChangeRecord``). Every entry is encoded once, generically, for both.
///
/// The encoding is compact binary: little-endian, LEB128 varints, each entry led by a
/// format byte so it can be migrated.
protocol ByteSink {
    mutating func u8(_ value: UInt8)
    /// Raw bytes, copied in one step.
    mutating func append(_ raw: UnsafeRawBufferPointer)
    mutating func varint(_ value: UInt64)
    /// Eight bytes, little-endian.
    mutating func u64(_ value: UInt64)
}

extension ByteSink {
    mutating func int(_ value: Int64) { varint(UInt64(bitPattern: (value << 1) ^ (value >> 63))) }

    mutating func double(_ value: Double) { u64(value.bitPattern) }

    mutating func optionalDouble(_ value: Double?) {
        if let value {
            u8(1)
            double(value)
        } else {
            u8(0)
        }
    }

    mutating func string(_ value: String) {
        let written: Void? = value.utf8.withContiguousStorageIfAvailable { utf8 in
            varint(UInt64(utf8.count))
            append(UnsafeRawBufferPointer(utf8))
        }
        if written == nil {
            varint(UInt64(value.utf8.count))
            for byte in value.utf8 { u8(byte) }
        }
    }

    /// The key `K:NAME` of `kind`'s entry for the name whose UTF-8 is `name`, its length first (as ``string(_:)``
    /// writes the key made whole).
    mutating func key(_ kind: StoreKey.Kind, _ name: UnsafeRawBufferPointer) {
        varint(UInt64(name.count + 2))
        u8(kind.rawValue)
        u8(StoreKey.separator)
        append(name)
    }

    /// A string given as its UTF-8, its length first (as ``string(_:)`` writes it).
    mutating func string(bytes: UnsafeRawBufferPointer) {
        varint(UInt64(bytes.count))
        append(bytes)
    }

    /// Eight bytes, little-endian (a sink may write them more directly).
    mutating func u64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { append($0) }
    }

    mutating func u32(_ value: UInt32) {
        withUnsafeBytes(of: value.littleEndian) { append($0) }
    }

    /// Many times (seconds since 1970) at once.
    mutating func doubles(_ values: UnsafeBufferPointer<Double>) {
        #if _endian(little)
            append(UnsafeRawBufferPointer(values))
        #else
            for value in values { u64(value.bitPattern) }
        #endif
    }
}

/// Encoded bytes in an array.
struct ByteWriter: ByteSink {
    var bytes: [UInt8] = []

    mutating func u8(_ value: UInt8) { bytes.append(value) }

    mutating func varint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(truncatingIfNeeded: rest))
    }

    /// Raw bytes, copied in one step (an `UnsafeRawBufferPointer` appended as a sequence
    /// would be copied a byte at a time).
    @inline(__always)
    mutating func append(_ raw: UnsafeRawBufferPointer) {
        bytes.append(
            contentsOf: UnsafeBufferPointer(
                start: raw.baseAddress?.assumingMemoryBound(to: UInt8.self), count: raw.count))
    }
}

/// Malformed stored bytes.
struct DecodeError: Error, CustomStringConvertible {
    var description: String
}

/// Reads stored bytes in order. Its small reads are `@_transparent`: inlined even in a debug
/// build (the build apps' own tests run), where each call also zeroes its frame and retains
/// and releases the array. Within this file only: a debug build compiles each file apart.
struct ByteReader {
    let bytes: [UInt8]
    var position: Int
    let end: Int

    init(_ bytes: [UInt8], from start: Int = 0, to end: Int? = nil) {
        self.bytes = bytes
        self.position = start
        self.end = end ?? bytes.count
    }

    var isAtEnd: Bool { position >= end }

    @_transparent
    mutating func u8() throws -> UInt8 {
        guard position < end else { throw DecodeError(description: "unexpected end of data") }
        // Not through `defer`: a debug build calls a function of its own for it.
        position += 1
        return bytes[position - 1]
    }

    @_transparent
    mutating func varint() throws -> UInt64 {
        // Most are one byte (counts, ids, lengths). The byte read once: a debug build calls,
        // retains and releases for each read.
        if position < end {
            let first = bytes[position]
            if first < 0x80 {
                position += 1
                return UInt64(first)
            }
        }
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try u8()
            if shift >= 64 { throw DecodeError(description: "varint too long") }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
    }

    @_transparent
    mutating func int() throws -> Int64 {
        let raw = try varint()
        return Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))
    }

    @_transparent
    mutating func double() throws -> Double { Double(bitPattern: try u64()) }

    @_transparent
    mutating func u64() throws -> UInt64 {
        guard end - position >= 8 else { throw DecodeError(description: "unexpected end of data") }
        let value = bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: position, as: UInt64.self) }
        position += 8
        return UInt64(littleEndian: value)
    }

    /// A stored time (seconds since 1970): any number but NaN.
    @_transparent
    mutating func time() throws -> Double {
        let value = try double()
        guard !value.isNaN else { throw DecodeError(description: "a stored time is not a number") }
        return value
    }

    /// `count` stored times, ascending, read into `base`.
    mutating func times(_ count: Int, into base: UnsafeMutablePointer<Double>) throws {
        guard count <= (end - position) / 8 else { throw DecodeError(description: "unexpected end of data") }
        guard count > 0 else { return }
        let start = position
        bytes.withUnsafeBytes { raw in
            // Copied as they are stored (little-endian), then checked in place.
            UnsafeMutableRawPointer(base).copyMemory(from: raw.baseAddress! + start, byteCount: 8 * count)
        }
        #if _endian(big)
            for k in 0..<count { base[k] = Double(bitPattern: UInt64(littleEndian: base[k].bitPattern)) }
        #endif
        var previous = -Double.infinity
        for k in 0..<count {
            let time = base[k]
            guard !time.isNaN else { throw DecodeError(description: "a stored time is not a number") }
            guard time >= previous else { throw DecodeError(description: "recent times out of order") }
            previous = time
        }
        position += 8 * count
    }

    @_transparent
    mutating func optionalTime() throws -> Double? {
        switch try u8() {
        case 0: return nil
        case 1: return try time()
        default: throw DecodeError(description: "bad optional flag")
        }
    }

    mutating func optionalDouble() throws -> Double? {
        switch try u8() {
        case 0: return nil
        case 1: return try double()
        default: throw DecodeError(description: "bad optional flag")
        }
    }

    @_transparent
    mutating func count(max: Int) throws -> Int {
        let value = try varint()
        guard value <= UInt64(max), value <= UInt64(end - position) else {
            throw DecodeError(description: "length \(value) out of range")
        }
        return Int(value)
    }

    /// Where the bytes of the string at the reader lie (as ``string()`` reads it, without making it).
    mutating func stringRange() throws -> Range<Int> {
        let length = try count(max: end - position)
        defer { position += length }
        return position..<position + length
    }

    mutating func string() throws -> String {
        String(decoding: bytes[try stringRange()], as: UTF8.self)
    }

    mutating func u32() throws -> UInt32 {
        guard end - position >= 4 else { throw DecodeError(description: "unexpected end of data") }
        var value: UInt32 = 0
        for k in 0..<4 { value |= UInt32(bytes[position + k]) << UInt32(8 * k) }
        position += 4
        return value
    }
}
