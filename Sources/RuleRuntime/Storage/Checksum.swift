internal import CRuleChecksum
internal import CZlib

/// CRC-32 as zlib's `crc32` computes it (the reflected polynomial 0xEDB88320). Where the CPU
/// has carry-less multiplication (x86-64 with PCLMULQDQ), whole 16-byte blocks are folded by
/// it (`CRuleChecksum`), the last 0-15 bytes (and a record's 8-byte header) eight at a time by
/// its eight tables; elsewhere sixteen bytes at a step through sixteen tables ("slicing by
/// 16") for the short buffers every record has, and zlib's `crc32` for longer ones.
///
/// A 186-byte record: zlib 200-274 ns here, the tables 83-121 ns, folded 23-46 ns
/// (`rulebench file`, "checksum", same runs). Folded with its last bytes a byte at a time it
/// took 48 ns in three runs, against 36-37 ns eight at a time, interleaved. The tables' CRC
/// was about a tenth of a file trigger and a fifth of a shared one (its records, and the
/// replay of a shared compaction on the caller's path).
enum CRC32 {
    /// Below this many bytes the tables are faster than zlib here (about 0.3 ns a byte; zlib
    /// 193 ns for 512 bytes, 683 ns for 4 KiB); above, zlib's wider steps.
    static let shortLimit = 512

    /// Whether this CPU folds blocks in hardware (read before the first fold, which needs it).
    static let folds = rules_crc32_fold_available() != 0

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
        if folds { return folded(raw, continuing: crc) }
        return raw.count >= shortLimit ? zlib(raw, continuing: crc) : sliced(raw, continuing: crc)
    }

    /// Whole 16-byte blocks folded in hardware, the bytes after them by a table (only where
    /// ``folds``; the tables elsewhere).
    static func folded(_ raw: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        guard folds else { return sliced(raw, continuing: crc) }
        guard let base = raw.baseAddress else { return crc }
        return rules_crc32_fold(crc, base, raw.count)
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
    /// How ``checksum(_:by:)`` computes a CRC-32. For rulebench's comparison only.
    @_spi(Benchmarks)
    public enum ChecksumMethod: CaseIterable, Sendable {
        /// zlib's `crc32`.
        case zlib
        /// Sixteen tables, sixteen bytes at a step.
        case tables
        /// Blocks folded by carry-less multiplication (the tables where the CPU has none).
        case folding
    }

    /// The CRC-32 of `bytes`, computed by `method`. For rulebench's comparison only.
    @_spi(Benchmarks)
    public static func checksum(_ bytes: UnsafeRawBufferPointer, by method: ChecksumMethod) -> UInt32 {
        switch method {
        case .zlib: CRC32.zlib(bytes)
        case .tables: CRC32.sliced(bytes)
        case .folding: CRC32.folded(bytes)
        }
    }

    /// Whether this CPU folds in hardware. For rulebench's report only.
    @_spi(Benchmarks)
    public static var checksumFolds: Bool { CRC32.folds }
}
