import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A compaction's snapshot, written without holding the file in memory: the file is replayed
/// a window of records at a time into an index of its keys (their bytes, and where each key's
/// latest value lies in the file); the live entries are put in the order of their values in
/// the file, and the file is read forward once more, a window at a time, each value copied
/// into records of about ``recordPayload`` bytes. (A record bigger than one window is read
/// whole: one an app wrote, or a snapshot by an earlier version, which was one record.)
///
/// A compaction holds the index, about 30 bytes a key at 100,000 keys (12 for the entry, the
/// key's bytes and length, and hash slots at most half full), and a window, all mapped
/// (``MappedBuffer``). Replaying the whole file in memory held the file, an index, a sorted
/// copy and the new file: about 200 bytes a key more while a compaction ran
/// (`rulebench memory 100000`). Sorting by key (a key's bytes compared, its length decoded,
/// per comparison) and reading each value with its own `pread` took the compaction thread's
/// CPU from triggers on a 2-core machine: `trigger_during_swap_100k_p99_ms` read 3.2-3.5 ms
/// with them (3 runs).
struct SnapshotWriter: ~Copyable {
    /// The payload a written record holds, about (one entry may exceed it).
    static let recordPayload = 64 << 10
    /// The bytes of the file read at once while replaying (more for a bigger record).
    static let window = 256 << 10

    /// A key, and its latest value's place in the file being compacted. 12 bytes.
    struct Entry {
        /// Where the key is in ``keys``: a varint length, then its bytes.
        var keyAt: UInt32
        /// Where the latest value is in the file.
        var valueAt: UInt32
        /// -1 once the key is deleted.
        var valueLength: Int32
    }

    /// Every key seen, each once: its length (a varint) and bytes.
    private var keys = MappedBuffer<UInt8>()
    private var entries = MappedBuffer<Entry>()
    /// Entry number + 1 in each slot; 0 is empty. A power of two long, at most half full.
    private var slots = MappedBuffer<UInt32>()
    private let path: String

    private init(path: String) {
        self.path = path
    }

    /// The error for memory the system refused.
    private func noMemory() -> RuleStoreError {
        .io(path: path, operation: "compact (memory)", errno: ENOMEM)
    }

    /// The key of `entry` in `keys`.
    @inline(__always)
    private static func key(_ entry: Entry, in keys: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        var at = Int(entry.keyAt)
        var length = 0
        var shift = 0
        while true {
            let byte = keys[at]
            at += 1
            length |= Int(byte & 0x7F) << shift
            if byte < 0x80 { break }
            shift += 7
        }
        return UnsafeRawBufferPointer(rebasing: keys[at..<at + length])
    }

    /// Sets `key` (bytes of a record being replayed) to the value at `value` in the file
    /// (nil: deleted).
    private mutating func set(_ key: UnsafeRawBufferPointer, value: Range<Int>?) throws {
        let valueAt = UInt32(value?.lowerBound ?? 0)
        let valueLength = Int32(value?.count ?? -1)
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: NameTable.hash(key)) & mask
        let found: Int? = keys.withBytes { keys in
            entries.withBuffer { entries in
                slots.withBuffer { slots in
                    while slots[slot] != 0 {
                        let index = Int(slots[slot]) - 1
                        let stored = SnapshotWriter.key(entries[index], in: keys)
                        if stored.count == key.count
                            && (key.count == 0 || memcmp(stored.baseAddress!, key.baseAddress!, key.count) == 0)
                        {
                            return index
                        }
                        slot = (slot + 1) & mask
                    }
                    return nil
                }
            }
        }
        if let found {
            entries[found].valueAt = valueAt
            entries[found].valueLength = valueLength
            return
        }
        var length = [UInt8]()
        var rest = UInt64(key.count)
        while rest >= 0x80 {
            length.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        length.append(UInt8(rest))
        let keyAt = UInt32(keys.count)
        let added =
            length.withUnsafeBytes { keys.append(contentsOf: $0) } && keys.append(contentsOf: key)
            && entries.append(Entry(keyAt: keyAt, valueAt: valueAt, valueLength: valueLength))
        guard added else { throw noMemory() }
        slots[slot] = UInt32(entries.count)
        if entries.count * 2 > slots.count { try resize(to: slots.count * 2) }
    }

    /// Hash slots for the entries, `size` of them.
    private mutating func resize(to size: Int) throws {
        var table = MappedBuffer<UInt32>()
        guard table.resize(to: size) else { throw noMemory() }
        let mask = size - 1
        keys.withBytes { keys in
            entries.withBuffer { entries in
                table.withBuffer { table in
                    for index in entries.indices {
                        var slot = Int(truncatingIfNeeded: NameTable.hash(SnapshotWriter.key(entries[index], in: keys)))
                        slot &= mask
                        while table[slot] != 0 { slot = (slot + 1) & mask }
                        table[slot] = UInt32(index + 1)
                    }
                }
            }
        }
        slots = table
    }

    /// Replays the records of the first `length` bytes of the file open as `descriptor`,
    /// header included, a window at a time. Throws at damage, and when the file is not what it
    /// was (another header, or shorter).
    private mutating func replay(_ descriptor: Int32, length: Int) throws {
        let path = self.path
        func changed() -> RuleStoreError {
            .corrupt(path: path, offset: 0, reason: "the file changed while in use", keptAt: nil)
        }
        let header = try FileStore.read(descriptor, from: 0, count: RecordFormat.headerSize, path: path)
        guard length >= RecordFormat.headerSize, header.count == RecordFormat.headerSize,
            Array(header[0..<8]) == RecordFormat.magic
        else { throw changed() }
        let version = header[8..<12].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        var window = MappedBuffer<UInt8>()
        var start = RecordFormat.headerSize
        var size = SnapshotWriter.window
        while start < length {
            let count = min(size, length - start)
            guard window.resize(to: count) else { throw noMemory() }
            let read = window.withBuffer {
                FileStore.readFully(descriptor, into: $0.baseAddress!, count: count, at: start)
            }
            if read < 0 { throw RuleStoreError.io(path: path, operation: "read", errno: errno) }
            guard read == count else { throw changed() }
            let base = start
            var failure: Error?
            let (end, damage) = window.withBytes { bytes in
                RecordFormat.replay(bytes, from: 0, version: version) { raw, payload, _ in
                    _ = try? RecordFormat.forEachChange(in: raw, from: payload.lowerBound, to: payload.upperBound) {
                        key, value in
                        guard failure == nil else { return }
                        do {
                            try self.set(
                                UnsafeRawBufferPointer(rebasing: raw[key]),
                                value: value.map { base + $0.lowerBound..<base + $0.upperBound })
                        } catch {
                            failure = error
                        }
                    }
                }
            }
            if let failure { throw failure }
            if let damage {
                // Damage where the window ends may be a record it cuts: read on from there, or
                // a bigger window for a record bigger than one.
                if start + count == length {
                    throw RuleStoreError.corrupt(
                        path: path, offset: start + damage.offset, reason: damage.reason, keptAt: nil)
                }
                if end == 0 {
                    size *= 2
                    continue
                }
            }
            start += end
            if size != SnapshotWriter.window {
                size = SnapshotWriter.window
                window = MappedBuffer()
            }
        }
    }

    /// Writes to `out` (at the end of what it holds) a compacted file of the first `length`
    /// bytes of the file open as `descriptor`: the header, then records of the live entries, in
    /// the order of their values in the file. Any format the reader accepts comes out in the current one. Returns the
    /// number of bytes written.
    static func write(
        of descriptor: Int32, length: Int, path: String, to out: Int32, at outPath: String, system: FileSystemCalls
    ) throws -> Int {
        var index = SnapshotWriter(path: path)
        try index.resize(to: 1_024)
        try index.replay(descriptor, length: length)
        return try index.writeLive(from: descriptor, to: out, at: outPath, system: system)
    }

    /// Writes the header and the live entries, in the order of their values in the file, each
    /// value copied from a window read forward through the file (`descriptor`).
    private mutating func writeLive(
        from descriptor: Int32, to out: Int32, at outPath: String, system: FileSystemCalls
    ) throws -> Int {
        slots = MappedBuffer()
        var live = 0
        for index in 0..<entries.count where entries[index].valueLength >= 0 {
            entries[live] = entries[index]
            live += 1
        }
        entries.truncate(to: live)
        entries.withBuffer { SnapshotWriter.sortByValue($0) }
        try FileStore.writeFully(out, RecordFormat.header(), path: outPath, system: system)
        var written = RecordFormat.headerSize
        var window = MappedBuffer<UInt8>()
        var windowStart = 0
        let path = self.path
        var first = 0
        while first < entries.count {
            // As many entries as fill one record's payload (one at least).
            var last = first
            var size = 0
            keys.withBytes { keys in
                while last < entries.count && (last == first || size < SnapshotWriter.recordPayload) {
                    size += 21 + Int(entries[last].valueLength) + SnapshotWriter.key(entries[last], in: keys).count
                    last += 1
                }
            }
            var writer = RecordWriter(count: last - first, capacity: RecordFormat.recordHeaderSize + 10 + size)
            for index in first..<last {
                let entry = entries[index]
                let start = Int(entry.valueAt)
                let count = Int(entry.valueLength)
                // Values come in file order: the window moves forward, a read per window.
                if start + count > windowStart + window.count || start < windowStart {
                    let length = max(SnapshotWriter.window, count)
                    guard window.resize(to: length) else { throw noMemory() }
                    let read = window.withBuffer {
                        FileStore.readFully(descriptor, into: $0.baseAddress!, count: length, at: start)
                    }
                    if read < 0 { throw RuleStoreError.io(path: path, operation: "read", errno: errno) }
                    guard read >= count else {
                        throw RuleStoreError.corrupt(
                            path: path, offset: start, reason: "the file changed while in use", keptAt: nil)
                    }
                    window.truncate(to: read)
                    windowStart = start
                }
                keys.withBytes { keys in
                    window.withBytes { bytes in
                        writer.add(
                            SnapshotWriter.key(entry, in: keys),
                            UnsafeRawBufferPointer(rebasing: bytes[start - windowStart..<start - windowStart + count]))
                    }
                }
            }
            let record = writer.finish(version: RecordFormat.version)
            try FileStore.writeFully(out, record, path: outPath, system: system)
            written += record.count
            first = last
        }
        return written
    }

    /// Sorts `entries` by where their values are in the file, in place (heapsort: no buffer
    /// beside them).
    private static func sortByValue(_ entries: UnsafeMutableBufferPointer<Entry>) {
        func less(_ a: Int, _ b: Int) -> Bool { entries[a].valueAt < entries[b].valueAt }
        func siftDown(_ start: Int, _ end: Int) {
            var root = start
            while 2 * root + 1 < end {
                var child = 2 * root + 1
                if child + 1 < end && less(child, child + 1) { child += 1 }
                guard less(root, child) else { return }
                entries.swapAt(root, child)
                root = child
            }
        }
        let count = entries.count
        var start = count / 2
        while start > 0 {
            start -= 1
            siftDown(start, count)
        }
        var end = count
        while end > 1 {
            end -= 1
            entries.swapAt(0, end)
            siftDown(0, end)
        }
    }
}
