internal import CZlib

/// CRC-32 as zlib's `crc32` computes it (the reflected polynomial 0xEDB88320), sixteen bytes at
/// a step through sixteen tables ("slicing by 16") for the short buffers every record has (its
/// 8-byte header, a payload of a few hundred bytes), zlib's `crc32` for longer ones.
///
/// zlib spends about 100 ns setting up each call: its `crc32` of a 186-byte record takes 131 ns
/// here against 56-58 ns by table (`rulebench file`, "checksum"), and 32 ns for 16 bytes, 683 ns
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

    /// The tables, sixteen bytes at a step, then eight, then one (bounds-checked reads: 58 ns
    /// for a 186-byte record, against zlib's 131 ns; `rulebench file`, "checksum").
    static func sliced(_ raw: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        let t = tables
        /// The CRC of the 8 bytes of `word` followed by `zeros` zero bytes (tables
        /// `zeros` to `zeros + 7`).
        @inline(__always) func fold(_ word: UInt64, _ zeros: Int) -> UInt32 {
            var crc: UInt32 = 0
            for k in 0..<8 {
                crc ^= t[(zeros &+ 7 &- k) &* 256 &+ Int(truncatingIfNeeded: (word &>> UInt64(8 * k)) & 0xFF)]
            }
            return crc
        }
        func word(_ offset: Int) -> UInt64 {
            UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        }
        var crc = ~crc
        var offset = 0
        let count = raw.count
        while offset + 16 <= count {
            crc = fold(word(offset) ^ UInt64(crc), 8) ^ fold(word(offset + 8), 0)
            offset += 16
        }
        if offset + 8 <= count {
            crc = fold(word(offset) ^ UInt64(crc), 0)
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
