internal import CZlib

/// CRC-32 as zlib's `crc32` computes it (the reflected polynomial 0xEDB88320), sixteen bytes at
/// a step through sixteen tables ("slicing by 16") for the short buffers every record has (its
/// 8-byte header, a payload of a few hundred bytes), zlib's `crc32` for longer ones.
///
/// zlib spends about 100 ns setting up each call: its `crc32` of a 186-byte record takes 131 ns
/// here against 56 ns by table (`rulebench file`, "checksum"), and 32 ns for 16 bytes, 683 ns
/// for 4 KiB. That was a tenth of a file trigger and most of a compaction's replay, and
/// `trigger_shared_vs_write` failed because of it (docs/speed.md).
enum CRC32 {
    /// Below this many bytes the tables are faster than zlib here (about 0.3 ns a byte; zlib
    /// 193 ns for 512 bytes, 683 ns for 4 KiB); above, zlib's wider steps.
    static let shortLimit = 512

    /// `tables[k * 256 + b]`: the CRC of byte `b` followed by `k` zero bytes.
    static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 16 * 256)
        for byte in 0..<256 {
            var crc = UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
            tables[byte] = crc
        }
        for k in 1..<16 {
            for byte in 0..<256 {
                let previous = tables[(k - 1) * 256 + byte]
                tables[k * 256 + byte] = (previous >> 8) ^ tables[Int(previous & 0xFF)]
            }
        }
        return tables
    }()

    /// The CRC-32 of `raw`, continuing from `crc` (0 to start), as zlib's `crc32(crc, raw)`.
    static func checksum(_ raw: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        raw.count >= shortLimit ? zlib(raw, continuing: crc) : sliced(raw, continuing: crc)
    }

    /// zlib's `crc32`.
    static func zlib(_ raw: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        guard let base = raw.baseAddress, raw.count > 0 else { return crc }
        return UInt32(truncatingIfNeeded: crc32(uLong(crc), base.assumingMemoryBound(to: Bytef.self), uInt(raw.count)))
    }

    /// The tables, sixteen bytes at a step, then eight, then one (bounds-checked reads: 63 ns
    /// for a 186-byte record, against zlib's 131 ns; `rulebench file`, "checksum").
    static func sliced(_ raw: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        let t = tables
        @inline(__always) func lookup(_ k: Int, _ word: UInt64, _ shift: UInt64) -> UInt32 {
            t[k &* 256 &+ Int(truncatingIfNeeded: (word &>> shift) & 0xFF)]
        }
        var crc = ~crc
        var offset = 0
        let count = raw.count
        while offset + 16 <= count {
            let a = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) ^ UInt64(crc)
            let b = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
            crc =
                lookup(15, a, 0) ^ lookup(14, a, 8) ^ lookup(13, a, 16) ^ lookup(12, a, 24)
                ^ lookup(11, a, 32) ^ lookup(10, a, 40) ^ lookup(9, a, 48) ^ lookup(8, a, 56)
                ^ lookup(7, b, 0) ^ lookup(6, b, 8) ^ lookup(5, b, 16) ^ lookup(4, b, 24)
                ^ lookup(3, b, 32) ^ lookup(2, b, 40) ^ lookup(1, b, 48) ^ lookup(0, b, 56)
            offset += 16
        }
        if offset + 8 <= count {
            let a = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) ^ UInt64(crc)
            crc =
                lookup(7, a, 0) ^ lookup(6, a, 8) ^ lookup(5, a, 16) ^ lookup(4, a, 24)
                ^ lookup(3, a, 32) ^ lookup(2, a, 40) ^ lookup(1, a, 48) ^ lookup(0, a, 56)
            offset += 8
        }
        while offset < count {
            crc = t[Int((crc ^ UInt32(raw[offset])) & 0xFF)] ^ (crc >> 8)
            offset += 1
        }
        return ~crc
    }

    /// The CRC-32 of `parts` one after the other, as eight hex digits: the rules' digest and a
    /// delivered file's seal.
    static func hex(of parts: [ArraySlice<UInt8>]) -> String {
        var crc: UInt32 = 0
        for part in parts { crc = part.withUnsafeBytes { checksum($0, continuing: crc) } }
        let text = String(crc, radix: 16)
        return String(repeating: "0", count: 8 - text.count) + text
    }
}

extension FileStore {
    /// The checksum of `bytes` by zlib's `crc32` (`zlib: true`) or by the tables records below
    /// ``CRC32/shortLimit`` bytes use. For rulebench's comparison only.
    @_spi(Benchmarks)
    public static func checksum(_ bytes: UnsafeRawBufferPointer, zlib: Bool) -> UInt32 {
        zlib ? CRC32.zlib(bytes) : CRC32.sliced(bytes)
    }
}
