import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An append-only state file: a header, then one checksummed record per engine call.
///
/// Format (little-endian): the 8 bytes `RULESTAT`, a `u32` format version (3),
/// then records `[u32 length][u32 checksum of payload][u32 checksum of the 8 bytes before]
/// [payload]`, checksums by ``WordChecksum``. A payload is a varint count of changes, each
/// a key string, a flag (1 = value, 0 = deleted) and the value's bytes. Replaying the
/// records in order gives the state. Files of versions 1 (records without the header
/// checksum, CRC-32) and 2 (CRC-32) are read and rewritten as version 3 once they have loaded.
///
/// Durability: every `apply` hands its record to the kernel with `write(2)`
/// before returning, so it survives the process being killed at any moment
/// after that (the kernel owns the page cache). It does not `fsync` on every
/// call unless `syncEveryWrite` is set, so a power loss may lose the last
/// seconds. Compaction runs on a background queue: it writes a new file, `fsync`s it,
/// copies the records appended meanwhile, locks it and renames it over the old one,
/// so a crash during compaction leaves the old file or the new one, each complete.
///
/// Damage: a record cut short at the end of the file (the process died while
/// writing it, so its call never returned), or a tail of zero bytes after the
/// last record (what a power loss can leave), is dropped when the engine first
/// writes; the dropped bytes are copied aside to `NAME.damaged-TIME` when they
/// are not all zero. A damaged record header or payload elsewhere is corruption:
/// with `.strict` (the default) `load` throws ``RuleStoreError/corrupt(path:offset:reason:keptAt:)``
/// and leaves the file untouched; with `.salvage` it keeps what precedes the
/// damage, links the damaged file aside and says so in ``recoveryReport``.
/// Nothing is rewritten before the engine has decoded every entry.
public final class FileStore: RuleStore, RecordStore, @unchecked Sendable {
    /// The format version this library writes.
    public static let formatVersion: UInt32 = 3
    /// The largest state file accepted, in bytes (256 MiB); a larger one is refused unread.
    public static let maximumFileSize = 256 << 20
    static let magic: [UInt8] = Array("RULESTAT".utf8)
    static let headerSize = 12
    static let recordHeaderSize = 12

    /// What to do when a file is damaged (not merely torn at its end).
    public enum Recovery: Sendable {
        /// Corruption throws; the file is left as it is.
        case strict
        /// Corruption keeps the records before it; the damaged file is linked aside.
        case salvage
    }

    /// How a file store writes and recovers.
    public struct Options: Sendable {
        /// `fsync` after every record: survives power loss, at the cost of a disk flush per call.
        public var syncEveryWrite = false
        /// Throw on damage (default), or keep the valid prefix.
        public var recovery = Recovery.strict
        /// Compact when the file is larger than this many bytes and twice its live data.
        public var compactionThreshold = 1 << 20

        /// Options: see each property.
        public init(syncEveryWrite: Bool = false, recovery: Recovery = .strict, compactionThreshold: Int = 1 << 20) {
            self.syncEveryWrite = syncEveryWrite
            self.recovery = recovery
            self.compactionThreshold = compactionThreshold
        }
    }

    /// The path as given.
    public let path: String
    /// The options it was opened with.
    public let options: Options
    /// What `load` found and repaired, if anything; nil when the file was sound.
    public var recoveryReport: String? {
        lock.lock()
        defer { lock.unlock() }
        return report
    }
    private var report: String?

    /// How many times the file has been compacted since it was opened.
    public var compactions: Int {
        lock.lock()
        defer { lock.unlock() }
        return compactionCount
    }
    private var compactionCount = 0
    /// The format version of the file as loaded (``formatVersion`` once rewritten).
    private var loadedVersion = FileStore.formatVersion

    private let lock = NSLock()
    let system: FileSystemCalls
    private var fd: Int32 = -1
    /// The path with symbolic links resolved at open: compaction writes beside the real file.
    private var realPath = ""
    private var identity = FileIdentity(device: 0, inode: 0)
    /// The entries `load` read, kept only until the engine has decoded them (``didLoad()``) or
    /// the first write: the engine holds the state, so the store keeps no second copy. Later
    /// loads and compactions replay the file itself.
    private var loaded: StoredEntries?
    private var fileLength = 0
    /// The bytes of live data when the file was last loaded or compacted: compaction starts
    /// when the file has grown past twice that (and the threshold), which keeps its cost
    /// amortized without tracking each entry's size.
    private var liveBytes = 0
    private var pending: Repair?
    /// Compactions run here, off the caller's path.
    private let compactionQueue = DispatchQueue(label: "rules.FileStore.compaction", qos: .utility)
    private var compacting = false
    /// Changes whenever the open file changes, so a compaction of an older file is dropped.
    private var generation = 0
    /// A background compaction's failure, reported by the next `apply`.
    private var backgroundError: RuleStoreError?
    private var lastIdentityCheck: UInt64 = 0

    /// What `load` found that the first write must repair.
    private enum Repair {
        /// Drop the bytes from `offset` on (a torn or zero-filled tail).
        case truncate(offset: Int, reason: String, tail: [UInt8])
        /// Link the damaged file aside and rewrite it from the loaded entries.
        case salvage(offset: Int, reason: String)
    }

    /// A store in the conventional place for app data that is not the user's documents:
    /// `Application Support/<bundle identifier>/<name>` on Apple platforms (the app's
    /// container on iOS), `$XDG_DATA_HOME` or `~/.local/share` on Linux, with the bundle
    /// identifier (or the process name) as a folder. The folders are created at first open, so
    /// a fresh install works. Data protection is the system default; pass your own URL to
    /// ``init(url:options:)`` for another protection class or an app group container.
    public static func applicationSupport(named name: String = "rules.state", options: Options = Options()) -> FileStore
    {
        let base =
            FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? FileManager.default.temporaryDirectory
        let folder = Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName
        return FileStore(url: base.appendingPathComponent(folder).appendingPathComponent(name), options: options)
    }

    /// A store at `url`. Missing parent directories are created when it is first opened.
    public convenience init(url: URL, options: Options = Options()) {
        self.init(url: url, options: options, system: .live)
    }

    init(url: URL, options: Options, system: FileSystemCalls) {
        self.path = url.path
        self.options = options
        self.system = system
    }

    deinit {
        if fd >= 0 { close(fd) }
    }

    // MARK: - Loading

    public func load() throws -> [String: [UInt8]] {
        try loadEntries().values
    }

    func loadEntries() throws -> StoredEntries {
        lock.lock()
        defer { lock.unlock() }
        try openIfNeeded()
        if let loaded { return loaded }
        let (bytes, index) = try FileStore.replayFile(fd, length: fileLength, path: path)
        return StoredEntries(bytes: bytes, index: index)
    }

    /// Repairs what `load` found (a torn tail, a salvaged file, an old format);
    /// the engine calls it once it has decoded every entry.
    public func didLoad() throws {
        lock.lock()
        defer { lock.unlock() }
        try openIfNeeded()
        try repairIfNeeded()
        loaded = nil
    }

    private func openIfNeeded() throws {
        if fd >= 0 { return }
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty && !FileManager.default.fileExists(atPath: directory) {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw RuleStoreError.io(path: directory, operation: "create the directory", errno: errno)
            }
        }
        // Another process may compact (replace the file) between our open and our lock:
        // the lock counts only when the locked file is still the one at the path.
        var descriptor: Int32 = -1
        for _ in 0..<16 {
            descriptor = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else { throw RuleStoreError.io(path: path, operation: "open", errno: errno) }
            // A store of this process released a moment ago may still be finishing a
            // compaction: wait up to 100 ms before calling the file taken.
            var attempts = 0
            while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
                let code = errno
                attempts += 1
                guard code == EWOULDBLOCK && attempts < 100 else {
                    close(descriptor)
                    throw RuleStoreError.io(path: path, operation: "lock (is another process using it?)", errno: code)
                }
                usleep(1_000)
            }
            if let opened = FileIdentity(descriptor: descriptor), opened == FileIdentity(path: path) { break }
            close(descriptor)
            descriptor = -1
        }
        guard descriptor >= 0 else {
            throw RuleStoreError.io(path: path, operation: "lock (it keeps being replaced)", errno: EAGAIN)
        }
        fd = descriptor
        do {
            try loadOpenFile()
        } catch {
            close(fd)
            fd = -1
            loaded = nil
            throw error
        }
    }

    private func loadOpenFile() throws {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw RuleStoreError.io(path: path, operation: "stat", errno: errno) }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw RuleStoreError.unusable(path: path, reason: "it is not a regular file")
        }
        identity = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        realPath = path.withCString { raw in
            guard let resolved = realpath(raw, nil) else { return path }
            defer { free(resolved) }
            return String(cString: resolved)
        }
        lastIdentityCheck = DispatchTime.now().uptimeNanoseconds
        // We hold the lock: temporary files left by a killed compaction are ours to remove.
        removeLeftoverCompactions()
        var size = Int(info.st_size)
        if size < FileStore.headerSize {
            // A process killed while writing the header of a new file: start it again.
            let head = try read(from: 0, count: size)
            let header = FileStore.header()
            if head.isEmpty || head == Array(header[0..<size]) || FileStore.isZero(head[...]) {
                guard system.truncate(fd, 0) == 0 else {
                    throw RuleStoreError.io(path: path, operation: "truncate", errno: errno)
                }
                size = 0
            }
        }
        if size == 0 {
            try writeFully(FileStore.header())
            try sync(fd)
            try syncDirectory()
            fileLength = FileStore.headerSize
            return
        }
        guard size <= FileStore.maximumFileSize else {
            throw RuleStoreError.unusable(
                path: path, reason: "it is \(size) bytes; the limit is \(FileStore.maximumFileSize) bytes")
        }
        let head = try read(from: 0, count: min(size, FileStore.headerSize))
        guard head.count == FileStore.headerSize, Array(head[0..<8]) == FileStore.magic else {
            throw RuleStoreError.corrupt(
                path: path, offset: 0, reason: "not a rules state file (bad header)", keptAt: nil)
        }
        var header = ByteReader(head, from: 8, to: 12)
        let version = try header.u32()
        guard (1...FileStore.formatVersion).contains(version) else {
            throw RuleStoreError.unsupportedVersion(path: path, version: Int(version))
        }
        let bytes = try read(from: 0, count: size)
        try replay(bytes, version: version)
    }

    static func header() -> [UInt8] {
        var writer = ByteWriter()
        writer.bytes = magic
        writer.u32(formatVersion)
        return writer.bytes
    }

    private func replay(_ bytes: [UInt8], version: UInt32) throws {
        loadedVersion = version
        let (index, offset, damage) = FileStore.replayRecords(bytes, version: version)
        fileLength = offset
        loaded = StoredEntries(bytes: bytes, index: index)
        // About what the live entries take in a compacted file (key, value, lengths and flag).
        liveBytes = index.liveBytes + 8 * index.liveCount
        guard let damage else { return }
        if damage.torn {
            let tail = FileStore.isZero(bytes[offset...]) ? [] : Array(bytes[offset...])
            pending = .truncate(offset: offset, reason: damage.reason, tail: tail)
            return
        }
        if options.recovery == .strict {
            throw RuleStoreError.corrupt(path: path, offset: damage.offset, reason: damage.reason, keptAt: nil)
        }
        pending = .salvage(offset: damage.offset, reason: damage.reason)
    }

    /// Where replaying stopped short of the end, and why; `torn` for what a killed writer
    /// leaves (a cut-short last record, a zero-filled tail), not corruption.
    struct Damage {
        var offset: Int
        var reason: String
        var torn: Bool
    }

    /// Replays the records of a whole file (`bytes`, header included) of format `version`:
    /// where each live key's latest value lies in `bytes`, the offset where the valid records
    /// end, and the damage there, if any.
    static func replayRecords(_ bytes: [UInt8], version: UInt32) -> (RecordIndex, Int, Damage?) {
        var entries = RecordIndex()
        var offset = FileStore.headerSize
        let frame = version == 1 ? 8 : FileStore.recordHeaderSize
        func damage(_ reason: String, torn: Bool) -> (RecordIndex, Int, Damage?) {
            (entries, offset, Damage(offset: offset, reason: reason, torn: torn))
        }
        while offset < bytes.count {
            let remaining = bytes.count - offset
            if FileStore.isZero(bytes[offset...]) {
                return damage("the file ends in \(remaining) zero bytes", torn: true)
            }
            if remaining < frame { return damage("a record header is cut short", torn: true) }
            var reader = ByteReader(bytes, from: offset, to: offset + frame)
            guard let length = try? Int(reader.u32()), let checksum = try? reader.u32() else {
                return damage("a record header is cut short", torn: true)
            }
            if version >= 2 {
                guard (try? reader.u32()) == FileStore.checksum(bytes[offset..<offset + 8], version: version) else {
                    return damage("a record header is damaged", torn: false)
                }
            }
            let start = offset + frame
            if length > bytes.count - start { return damage("the last record is cut short", torn: true) }
            guard FileStore.checksum(bytes[start..<start + length], version: version) == checksum else {
                return damage("a record's checksum does not match", torn: false)
            }
            do {
                try apply(payload: bytes, from: start, to: start + length, to: &entries)
            } catch {
                return damage("a record cannot be decoded (\(error))", torn: false)
            }
            offset = start + length
        }
        return (entries, offset, nil)
    }

    /// The first `length` bytes of the file open as `descriptor`, and where the latest value
    /// of each live key lies in them. Damage there (the file changed under us) is an error.
    static func replayFile(_ descriptor: Int32, length: Int, path: String) throws -> ([UInt8], RecordIndex) {
        let bytes = try read(descriptor, from: 0, count: length, path: path)
        guard bytes.count == length, length >= headerSize, Array(bytes[0..<8]) == magic else {
            throw RuleStoreError.corrupt(path: path, offset: 0, reason: "the file changed while in use", keptAt: nil)
        }
        var header = ByteReader(bytes, from: 8, to: 12)
        let version = try header.u32()
        let (index, _, damage) = replayRecords(bytes, version: version)
        if let damage {
            throw RuleStoreError.corrupt(path: path, offset: damage.offset, reason: damage.reason, keptAt: nil)
        }
        return (bytes, index)
    }

    /// Writes to `out` a compacted file of the first `length` bytes of the file open as
    /// `descriptor`: the header, then one record of the live entries sorted by key, copied from
    /// the bytes read (only their positions are kept meanwhile, not a copy of each value).
    /// Any format the reader accepts (version 1 included) comes out in the current one.
    /// Returns the file's length.
    static func writeSnapshot(
        of descriptor: Int32, length: Int, path: String, to out: Int32, at outPath: String, system: FileSystemCalls
    ) throws -> Int {
        let (bytes, index) = try replayFile(descriptor, length: length, path: path)
        let record = snapshotRecord(of: bytes, index)
        let header = FileStore.header()
        try writeFully(out, header, path: outPath, system: system)
        try writeFully(out, UnsafeRawBufferPointer(record.bytes), path: outPath, system: system)
        return header.count + record.length
    }

    /// One framed record of the live entries of `index` in `bytes`, sorted by key.
    static func snapshotRecord(of bytes: [UInt8], _ index: RecordIndex) -> ChangeRecord {
        let size = 32 + index.liveBytes + 12 * index.liveCount
        let record = ChangeRecord(capacity: size)
        bytes.withUnsafeBytes { raw in
            for entry in index.sorted(in: bytes) {
                record.set(UnsafeRawBufferPointer(rebasing: raw[entry.key])) {
                    $0.append(UnsafeRawBufferPointer(rebasing: raw[entry.value!]))
                }
            }
        }
        record.finish()
        frame(record.bytes)
        return record
    }

    static func isZero(_ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.withUnsafeBytes { raw in
            var index = 0
            let words = raw.count / 8
            while index < words {
                if raw.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self) != 0 { return false }
                index += 1
            }
            for k in words * 8..<raw.count where raw[k] != 0 { return false }
            return true
        }
    }

    private static func apply(
        payload bytes: [UInt8], from start: Int, to end: Int, to entries: inout RecordIndex
    ) throws {
        try bytes.withUnsafeBytes { raw in
            // Read twice: checked whole before any change is applied (a record applies all or
            // nothing), then applied, without keeping the changes in between.
            let count = try forEachChange(in: raw, from: start, to: end) { _, _ in }
            // A compacted file is one record of every entry: reserve for it at once.
            if count > 16 { entries.reserveCapacity(entries.entries.count + count, in: raw) }
            _ = try forEachChange(in: raw, from: start, to: end) { entries.set(key: $0, value: $1, in: raw) }
        }
    }

    /// Reads the record payload at `raw[start..<end]`: a varint count, then per change a key
    /// string, a flag (1 = value, 0 = deleted) and the value. Calls `body` with each change's
    /// key and value byte ranges (nil: deleted), in order; throws at anything malformed, after
    /// the changes before it; returns how many changes there are.
    static func forEachChange(
        in raw: UnsafeRawBufferPointer, from start: Int, to end: Int, _ body: (Range<Int>, Range<Int>?) -> Void
    ) throws -> Int {
        var at = start
        /// A varint no larger than what is left of the payload.
        func length() throws -> Int {
            var value = 0
            var shift = 0
            while true {
                guard at < end else { throw DecodeError(description: "unexpected end of data") }
                guard shift < 63 else { throw DecodeError(description: "varint too long") }
                let byte = raw[at]
                at += 1
                value |= Int(byte & 0x7F) << shift
                if byte < 0x80 { break }
                shift += 7
            }
            guard value >= 0, value <= end - at else { throw DecodeError(description: "length \(value) out of range") }
            return value
        }
        let count = try length()
        for _ in 0..<count {
            let keyLength = try length()
            let key = at..<at + keyLength
            at += keyLength
            guard at < end else { throw DecodeError(description: "unexpected end of data") }
            let flag = raw[at]
            at += 1
            switch flag {
            case 0: body(key, nil)
            case 1:
                let valueLength = try length()
                body(key, at..<at + valueLength)
                at += valueLength
            default: throw DecodeError(description: "bad entry flag")
            }
        }
        guard at == end else { throw DecodeError(description: "trailing bytes") }
        return count
    }

    /// Carries out what `load` found, once: truncates a torn tail (keeping the dropped
    /// bytes aside when it can), or links a damaged file aside and rewrites it; then rewrites
    /// a file of an earlier format in this one, as records are appended in this library's.
    private func repairIfNeeded() throws {
        if let repair = pending { try self.repair(repair) }
        if loadedVersion < FileStore.formatVersion { try compactLocked() }
    }

    private func repair(_ repair: Repair) throws {
        switch repair {
        case .truncate(let offset, let reason, let tail):
            var kept = "the dropped bytes were all zero"
            if !tail.isEmpty {
                let aside = asidePath()
                if system.writeAside(aside, tail) {
                    kept = "the \(tail.count) dropped bytes were copied to '\(aside)'"
                } else {
                    kept =
                        "the \(tail.count) dropped bytes could not be kept aside (\(String(cString: strerror(errno))))"
                }
            }
            guard system.truncate(fd, off_t(offset)) == 0 else {
                throw RuleStoreError.io(path: path, operation: "truncate", errno: errno)
            }
            try sync(fd)
            report = "state file '\(path)': \(reason) at byte \(offset); kept the \(offset) bytes before it; \(kept)"
        case .salvage(let offset, let reason):
            let aside = asidePath()
            guard link(realPath, aside) == 0 else {
                throw RuleStoreError.io(path: aside, operation: "keep the damaged file aside at", errno: errno)
            }
            try compactLocked()
            report =
                "state file '\(path)': \(reason) at byte \(offset); kept the records before it; the damaged file was kept at '\(aside)'"
        }
        pending = nil
    }

    /// `PATH.damaged-SECONDS[-N]`, a name not in use.
    private func asidePath() -> String {
        let stamp = Int(Date().timeIntervalSince1970)
        var candidate = "\(realPath).damaged-\(stamp)"
        var suffix = 1
        while FileManager.default.fileExists(atPath: candidate) {
            candidate = "\(realPath).damaged-\(stamp)-\(suffix)"
            suffix += 1
        }
        return candidate
    }

    // MARK: - Writing

    public func apply(_ changes: [StoreChange]) throws {
        if changes.isEmpty { return }
        try FileStore.record(changes).withUnsafeBytes { try write(record: $0) }
    }

    /// Frames the engine's record of one call (``ChangeRecord``) in place and writes it.
    func append(record bytes: UnsafeMutableRawBufferPointer) throws {
        FileStore.frame(bytes)
        try write(record: UnsafeRawBufferPointer(bytes))
    }

    /// Appends one framed record.
    private func write(record: UnsafeRawBufferPointer) throws {
        lock.lock()
        defer { lock.unlock() }
        try openIfNeeded()
        try repairIfNeeded()
        // A cheap look, at most once a second, for the file deleted or replaced under us.
        var replaced: RuleStoreError?
        let clock = DispatchTime.now().uptimeNanoseconds
        if clock &- lastIdentityCheck > 1_000_000_000 {
            replaced = try recreateIfReplaced()
        }
        do {
            try writeFully(record)
        } catch {
            // Never leave half a record behind a later one.
            _ = system.truncate(fd, off_t(fileLength))
            throw error
        }
        if options.syncEveryWrite { try sync(fd) }
        fileLength += record.count
        // What load returned is stale now; a later load replays the file.
        loaded = nil
        if !compacting && fileLength > options.compactionThreshold && fileLength > 2 * liveBytes {
            if let error = try recreateIfReplaced() { replaced = error } else { startCompaction() }
        }
        if let error = backgroundError {
            backgroundError = nil
            replaced = replaced ?? error
        }
        if let replaced { throw replaced }
    }

    /// Checks that the path still names the open file; when it does not (deleted or
    /// replaced), writes the state from memory to a new file there and returns the report.
    public func verify() throws {
        lock.lock()
        defer { lock.unlock() }
        try openIfNeeded()
        if let error = try recreateIfReplaced() { throw error }
    }

    private func recreateIfReplaced() throws -> RuleStoreError? {
        lastIdentityCheck = DispatchTime.now().uptimeNanoseconds
        if FileIdentity(path: realPath) == identity { return nil }
        try compactLocked()
        return .replaced(path: path)
    }

    /// Fills the header (12 zero bytes) of the record that is all of `bytes`: its payload's
    /// length, the payload's checksum and the header's, as format `version` has them.
    static func frame(_ bytes: UnsafeMutableRawBufferPointer, version: UInt32 = formatVersion) {
        let length = UInt32(bytes.count - recordHeaderSize)
        bytes.storeBytes(of: length.littleEndian, toByteOffset: 0, as: UInt32.self)
        let checksum = recordChecksum(UnsafeRawBufferPointer(rebasing: bytes[recordHeaderSize...]), version: version)
        bytes.storeBytes(of: checksum.littleEndian, toByteOffset: 4, as: UInt32.self)
        let headerChecksum = recordChecksum(UnsafeRawBufferPointer(rebasing: bytes[0..<8]), version: version)
        bytes.storeBytes(of: headerChecksum.littleEndian, toByteOffset: 8, as: UInt32.self)
    }

    /// One framed record, `[u32 length][u32 checksum][u32 header checksum][payload]`, of
    /// `changes`, with the checksums of format `version`.
    static func record(_ changes: [StoreChange], version: UInt32 = formatVersion) -> [UInt8] {
        let record = ChangeRecord()
        for change in changes { record.add(change) }
        record.finish()
        frame(record.bytes, version: version)
        return [UInt8](UnsafeRawBufferPointer(record.bytes))
    }

    static func checksum(_ bytes: ArraySlice<UInt8>, version: UInt32) -> UInt32 {
        bytes.withUnsafeBytes { recordChecksum($0, version: version) }
    }

    /// Rewrites the file as one record of the live entries.
    public func compact() throws {
        lock.lock()
        defer { lock.unlock() }
        try openIfNeeded()
        try repairIfNeeded()
        if let error = try recreateIfReplaced() { throw error }
        try compactLocked()
    }

    // MARK: - Compaction

    /// Starts compacting in the background: the live entries as they are now are written to
    /// a new file (and synced) while appends go on to the old one; then, under the lock, the
    /// records appended meanwhile are copied over, and the new file is locked and renamed
    /// into place. A kill at any moment leaves the old file, complete, or the new one.
    private func startCompaction() {
        compacting = true
        let offset = fileLength
        let startedIn = generation
        // One name per file: only the holder of the file's lock compacts it (the queue keeps a
        // duplicate of the descriptor, and with it the lock, until the compaction is over), so
        // a process opening the file later removes a leftover without listing the directory.
        let temporary = FileStore.compactingPath(realPath)
        let system = self.system
        // Our own descriptor of the old file, to copy what is appended meanwhile without the lock.
        let source = dup(fd)
        let label = path
        compactionQueue.async { [weak self] in
            defer { if source >= 0 { close(source) } }
            var failure: RuleStoreError? = source < 0 ? .io(path: label, operation: "dup", errno: errno) : nil
            var liveSize = 0
            // Emptied only once locked: a file locked by anyone else is neither cut short nor
            // removed (`out` is -1 unless it is ours).
            var out = open(temporary, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            if failure != nil {
            } else if out < 0 {
                failure = .io(path: temporary, operation: "open", errno: errno)
            } else if flock(out, LOCK_EX | LOCK_NB) != 0 {
                failure = .io(path: temporary, operation: "lock", errno: errno)
                close(out)
                out = -1
            } else if system.truncate(out, 0) != 0 {
                failure = .io(path: temporary, operation: "truncate", errno: errno)
            } else {
                do {
                    // The live entries of the records written so far, replayed from the file.
                    liveSize = try FileStore.writeSnapshot(
                        of: source, length: offset, path: label, to: out, at: temporary, system: system)
                    // The snapshot's buffers (several times the live entries) are freed now, and
                    // glibc keeps freed blocks below its raised mmap threshold in the heap: give
                    // them back before waiting on fsync.
                    FileStore.releaseFreedMemory()
                    if system.fsync(out) != 0 { failure = .io(path: temporary, operation: "fsync", errno: errno) }
                } catch {
                    failure = error as? RuleStoreError ?? .other(error)
                }
            }
            // Copy what was appended meanwhile in rounds without the lock, until little is left
            // for the switch to copy under it.
            var copied = offset
            while failure == nil, let end = self?.appendedLength(since: startedIn), end - copied > 16_384 {
                do {
                    var chunk = [UInt8](repeating: 0, count: end - copied)
                    let n = chunk.withUnsafeMutableBytes { pread(source, $0.baseAddress, end - copied, off_t(copied)) }
                    guard n == end - copied else {
                        throw RuleStoreError.io(path: label, operation: "read", errno: errno)
                    }
                    try FileStore.writeFully(out, chunk, path: temporary, system: system)
                    chunk.removeAll()
                    copied = end
                } catch {
                    failure = error as? RuleStoreError ?? .other(error)
                }
            }
            // Holds the store only while switching files: a store released meanwhile is gone
            // (its lock with it), and its new file is removed.
            guard
                let directory = self?.finishCompaction(
                    out, temporary, from: copied, startedIn: startedIn, liveSize: liveSize, failure: failure)
            else {
                if self == nil, out >= 0 {
                    close(out)
                    unlink(temporary)
                }
                return
            }
            // Without syncEveryWrite the rename need only survive the process, which it does at once.
            _ = system.syncDirectory(directory)
        }
    }

    /// The file's length, while it is still the file a compaction started from.
    private func appendedLength(since startedIn: Int) -> Int? {
        lock.lock()
        defer { lock.unlock() }
        return startedIn == generation ? fileLength : nil
    }

    /// Waits until no compaction is running (tests). Never call it from the compaction queue.
    func waitForCompaction() {
        compactionQueue.sync {}
    }

    /// Under the lock: copies the records appended since the snapshot, renames the new file
    /// into place and switches to it; or drops it when it failed or the file changed meanwhile.
    /// Returns the directory to sync when the switch was made and is not synced yet.
    private func finishCompaction(
        _ out: Int32, _ temporary: String, from offset: Int, startedIn: Int, liveSize: Int, failure: RuleStoreError?
    ) -> String? {
        lock.lock()
        compacting = false
        func drop(_ error: RuleStoreError?) -> String? {
            if out >= 0 {
                close(out)
                unlink(temporary)
            }
            if let error { backgroundError = error }
            lock.unlock()
            return nil
        }
        guard failure == nil, startedIn == generation, fd >= 0 else { return drop(failure) }
        let copied: Int
        do {
            let appended = try read(from: offset, count: fileLength - offset)
            try FileStore.writeFully(out, appended, path: temporary, system: system)
            if options.syncEveryWrite && system.fsync(out) != 0 {
                return drop(.io(path: temporary, operation: "fsync", errno: errno))
            }
            copied = appended.count
        } catch {
            return drop(error as? RuleStoreError ?? .other(error))
        }
        guard let newIdentity = FileIdentity(descriptor: out) else {
            return drop(.io(path: temporary, operation: "stat", errno: errno))
        }
        let size = Int(lseek(out, 0, SEEK_END))
        guard size >= copied, system.rename(temporary, realPath) == 0 else {
            return drop(.io(path: temporary, operation: "rename", errno: errno))
        }
        // The old file is closed after the lock is released: its last close frees its blocks,
        // which a trigger waiting on the lock need not wait for.
        let replaced = fd
        defer { close(replaced) }
        fd = out
        generation += 1
        compactionCount += 1
        identity = newIdentity
        fileLength = size
        liveBytes = liveSize
        let directory = (realPath as NSString).deletingLastPathComponent
        if options.syncEveryWrite {
            do { try syncDirectory() } catch { backgroundError = error as? RuleStoreError }
            lock.unlock()
            return nil
        }
        lock.unlock()
        return directory.isEmpty ? "." : directory
    }

    /// Removes `PATH.tmp` and `PATH.compacting` left behind by a process that died compacting
    /// (two `unlink`s: the cost of opening does not grow with the directory).
    private func removeLeftoverCompactions() {
        unlink(realPath + ".tmp")
        unlink(FileStore.compactingPath(realPath))
    }

    /// Where a background compaction of the file at `path` writes the new file.
    static func compactingPath(_ path: String) -> String { path + ".compacting" }

    /// Writes the live entries to `PATH.tmp`, syncs and locks it, renames it over the
    /// file and only then lets go of the old file (and its lock).
    private func compactLocked() throws {
        // The valid records only: `fileLength` ends before damage being salvaged.
        let temporary = realPath + ".tmp"
        let out = open(temporary, O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o644)
        guard out >= 0 else { throw RuleStoreError.io(path: temporary, operation: "open", errno: errno) }
        func fail(_ operation: String, _ code: Int32) -> RuleStoreError {
            close(out)
            unlink(temporary)
            return RuleStoreError.io(path: temporary, operation: operation, errno: code)
        }
        guard flock(out, LOCK_EX | LOCK_NB) == 0 else { throw fail("lock", errno) }
        let size: Int
        do {
            size = try FileStore.writeSnapshot(
                of: fd, length: fileLength, path: path, to: out, at: temporary, system: system)
        } catch {
            close(out)
            unlink(temporary)
            throw error
        }
        guard system.fsync(out) == 0 else { throw fail("fsync", errno) }
        guard let newIdentity = FileIdentity(descriptor: out) else { throw fail("stat", errno) }
        guard system.rename(temporary, realPath) == 0 else { throw fail("rename", errno) }
        close(fd)
        fd = out
        generation += 1
        compactionCount += 1
        identity = newIdentity
        fileLength = size
        liveBytes = size
        loadedVersion = FileStore.formatVersion
        try syncDirectory()
    }

    // MARK: - POSIX helpers

    #if canImport(Glibc)
        /// glibc's `malloc_trim`, looked up at run time (absent from other C libraries).
        private static let mallocTrim: (@convention(c) (Int) -> Int32)? = dlsym(
            nil, "malloc_trim"
        ).map { unsafeBitCast($0, to: (@convention(c) (Int) -> Int32).self) }
    #endif

    /// Returns memory the C allocator holds freed to the system, where it can (glibc); called
    /// off the caller's path, once a background compaction has written its snapshot.
    static func releaseFreedMemory() {
        #if canImport(Glibc)
            _ = mallocTrim?(0)
        #endif
    }

    private func read(from offset: Int, count: Int) throws -> [UInt8] {
        try FileStore.read(fd, from: offset, count: count, path: path)
    }

    private static func read(_ fd: Int32, from offset: Int, count: Int, path: String) throws -> [UInt8] {
        // Never with capacity 0 below: that writes the shared empty array's count, a data race
        // (ThreadSanitizer) with another thread doing the same.
        if count == 0 { return [] }
        var failure: Int32?
        // Read into uninitialized memory: filling it with zeros first cost as much as the read.
        let result = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            while initialized < count {
                let n = pread(fd, buffer.baseAddress! + initialized, count - initialized, off_t(offset + initialized))
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    break
                }
                if n == 0 { break }
                initialized += n
            }
        }
        if let failure { throw RuleStoreError.io(path: path, operation: "read", errno: failure) }
        return result
    }

    private func writeFully(_ bytes: UnsafeRawBufferPointer) throws {
        try FileStore.writeFully(fd, bytes, path: path, system: system)
    }

    private func writeFully(_ bytes: [UInt8]) throws {
        try FileStore.writeFully(fd, bytes, path: path, system: system)
    }

    private static func writeFully(_ fd: Int32, _ bytes: [UInt8], path: String, system: FileSystemCalls) throws {
        try bytes.withUnsafeBytes { try writeFully(fd, $0, path: path, system: system) }
    }

    private static func writeFully(
        _ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String, system: FileSystemCalls
    ) throws {
        var written = 0
        while written < bytes.count {
            let n = system.write(fd, bytes.baseAddress! + written, bytes.count - written)
            if n < 0 {
                if errno == EINTR { continue }
                throw RuleStoreError.io(path: path, operation: "write", errno: errno)
            }
            written += n
        }
    }

    private func sync(_ descriptor: Int32) throws {
        guard system.fsync(descriptor) == 0 else {
            throw RuleStoreError.io(path: path, operation: "fsync", errno: errno)
        }
    }

    private func syncDirectory() throws {
        let directory = (realPath as NSString).deletingLastPathComponent
        guard system.syncDirectory(directory.isEmpty ? "." : directory) == 0 else {
            throw RuleStoreError.io(path: directory, operation: "fsync the directory", errno: errno)
        }
    }
}

/// A thread-safe counter, for unique numbers.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0

    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        value += 1
        return value
    }
}

/// A file's device and inode: what tells "the same file" apart from "a file at the same path".
struct FileIdentity: Equatable {
    var device: UInt64
    var inode: UInt64

    init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }

    init?(descriptor: Int32) {
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_nlink > 0 else { return nil }
        self.init(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        self.init(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }
}

/// The system calls through which FileStore changes files, replaceable so tests can
/// make each one fail or stop in turn.
struct FileSystemCalls: Sendable {
    var write: @Sendable (Int32, UnsafeRawPointer, Int) -> Int
    var fsync: @Sendable (Int32) -> Int32
    var rename: @Sendable (String, String) -> Int32
    var truncate: @Sendable (Int32, off_t) -> Int32
    /// `fsync` of a directory, so a rename in it is durable.
    var syncDirectory: @Sendable (String) -> Int32
    /// Writes a new file holding damaged bytes set aside; false (with `errno`) when it cannot.
    var writeAside: @Sendable (String, [UInt8]) -> Bool

    static let live = FileSystemCalls(
        write: { fd, bytes, count in
            #if canImport(Glibc)
                Glibc.write(fd, bytes, count)
            #elseif canImport(Musl)
                Musl.write(fd, bytes, count)
            #else
                Darwin.write(fd, bytes, count)
            #endif
        },
        fsync: { fd in
            #if canImport(Glibc)
                Glibc.fsync(fd)
            #elseif canImport(Musl)
                Musl.fsync(fd)
            #else
                Darwin.fsync(fd)
            #endif
        },
        rename: { from, to in
            #if canImport(Glibc)
                Glibc.rename(from, to)
            #elseif canImport(Musl)
                Musl.rename(from, to)
            #else
                Darwin.rename(from, to)
            #endif
        },
        truncate: { fd, length in ftruncate(fd, length) },
        syncDirectory: { directory in
            let dfd = open(directory, O_RDONLY | O_CLOEXEC)
            guard dfd >= 0 else { return -1 }
            defer { close(dfd) }
            #if canImport(Glibc)
                return Glibc.fsync(dfd)
            #elseif canImport(Musl)
                return Musl.fsync(dfd)
            #else
                return Darwin.fsync(dfd)
            #endif
        },
        writeAside: { path, bytes in FileManager.default.createFile(atPath: path, contents: Data(bytes)) })
}
