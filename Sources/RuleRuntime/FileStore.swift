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
/// Format (little-endian): the 8 bytes `RULESTAT`, a `u32` format version (1),
/// then records `[u32 length][u32 CRC-32 of payload][payload]`. A payload is a
/// varint count of changes, each a key string, a flag (1 = value, 0 = deleted)
/// and the value's bytes. Replaying the records in order gives the state.
///
/// Durability: every `apply` hands its record to the kernel with `write(2)`
/// before returning, so it survives the process being killed at any moment
/// after that (the kernel owns the page cache). It does not `fsync` on every
/// call unless `syncEveryWrite` is set, so a power loss may lose the last
/// seconds. Compaction writes a new file, `fsync`s it and renames it over the
/// old one, so a crash during compaction leaves the old file or the new one.
///
/// Damage: a record cut short at the end of the file (the process died while
/// writing it, so its call never returned) is dropped; the file before it is
/// kept, and the original is first copied aside to `NAME.damaged-TIME`. A bad
/// checksum or undecodable record elsewhere is corruption: with `.strict`
/// (the default) `load` throws ``RuleStoreError/corrupt(path:offset:reason:keptAt:)``
/// and leaves the file untouched; with `.salvage` it keeps what precedes the
/// damage, moves the damaged file aside and says so in ``recoveryReport``.
public final class FileStore: RuleStore, @unchecked Sendable {
    /// The format version this library writes and reads.
    public static let formatVersion: UInt32 = 1
    static let magic: [UInt8] = Array("RULESTAT".utf8)
    static let headerSize = 12

    public enum Recovery: Sendable {
        /// Corruption throws; the file is left as it is.
        case strict
        /// Corruption keeps the records before it; the damaged file is moved aside.
        case salvage
    }

    public struct Options: Sendable {
        /// `fsync` after every record: survives power loss, at the cost of a disk flush per call.
        public var syncEveryWrite = false
        public var recovery = Recovery.strict
        /// Compact when the file is larger than this many bytes and twice its live data.
        public var compactionThreshold = 1 << 20

        public init(syncEveryWrite: Bool = false, recovery: Recovery = .strict, compactionThreshold: Int = 1 << 20) {
            self.syncEveryWrite = syncEveryWrite
            self.recovery = recovery
            self.compactionThreshold = compactionThreshold
        }
    }

    public let path: String
    public let options: Options
    /// What `load` found and repaired, if anything; nil when the file was sound.
    public var recoveryReport: String? {
        lock.lock()
        defer { lock.unlock() }
        return report
    }
    private var report: String?

    private let lock = NSLock()
    private var fd: Int32 = -1
    private var entries: [String: [UInt8]] = [:]
    private var fileLength = 0
    private var liveBytes = 0

    public init(url: URL, options: Options = Options()) {
        self.path = url.path
        self.options = options
    }

    deinit {
        if fd >= 0 { close(fd) }
    }

    // MARK: - Loading

    public func load() throws -> [String: [UInt8]] {
        lock.lock()
        defer { lock.unlock() }
        try openIfNeeded()
        return entries
    }

    private func openIfNeeded() throws {
        if fd >= 0 { return }
        let descriptor = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw RuleStoreError.io(path: path, operation: "open", errno: errno) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(descriptor)
            throw RuleStoreError.io(path: path, operation: "lock (is another process using it?)", errno: code)
        }
        fd = descriptor
        do {
            let bytes = try readAll()
            if bytes.isEmpty {
                try writeFully(FileStore.header())
                try sync(fd)
                syncDirectory()
                fileLength = FileStore.headerSize
                return
            }
            try replay(bytes)
        } catch {
            close(fd)
            fd = -1
            throw error
        }
    }

    static func header() -> [UInt8] {
        var writer = ByteWriter()
        writer.bytes = magic
        writer.u32(formatVersion)
        return writer.bytes
    }

    private func replay(_ bytes: [UInt8]) throws {
        guard bytes.count >= FileStore.headerSize, Array(bytes[0..<8]) == FileStore.magic else {
            throw RuleStoreError.corrupt(
                path: path, offset: 0, reason: "not a rules state file (bad header)", keptAt: nil)
        }
        var header = ByteReader(bytes, from: 8, to: 12)
        let version = try header.u32()
        guard version <= FileStore.formatVersion else {
            throw RuleStoreError.unsupportedVersion(path: path, version: Int(version))
        }
        var offset = FileStore.headerSize
        var damage: (offset: Int, reason: String, torn: Bool)?
        while offset < bytes.count {
            if bytes.count - offset < 8 {
                damage = (offset, "a record header is cut short", true)
                break
            }
            var frame = ByteReader(bytes, from: offset, to: offset + 8)
            let length = Int(try frame.u32())
            let checksum = try frame.u32()
            let start = offset + 8
            if length > bytes.count - start {
                damage = (offset, "the last record is cut short", true)
                break
            }
            guard CRC32.checksum(bytes[start..<start + length]) == checksum else {
                damage = (offset, "a record's checksum does not match", false)
                break
            }
            do {
                try apply(payload: bytes, from: start, to: start + length)
            } catch {
                damage = (offset, "a record cannot be decoded (\(error))", false)
                break
            }
            offset = start + length
        }
        fileLength = offset
        liveBytes = entries.reduce(0) { $0 + FileStore.entrySize($1.key, $1.value) }
        guard let damage else { return }
        if !damage.torn && options.recovery == .strict {
            throw RuleStoreError.corrupt(path: path, offset: damage.offset, reason: damage.reason, keptAt: nil)
        }
        let kept = try keepAside(bytes)
        if damage.torn {
            // Only a call that never returned can be cut short: drop its bytes.
            guard ftruncate(fd, off_t(offset)) == 0 else {
                throw RuleStoreError.io(path: path, operation: "truncate", errno: errno)
            }
            try sync(fd)
        } else {
            try compactLocked()
        }
        report =
            "state file '\(path)': \(damage.reason) at byte \(damage.offset); kept the \(offset) bytes before it; the original was copied to '\(kept)'"
    }

    private func apply(payload bytes: [UInt8], from start: Int, to end: Int) throws {
        var reader = ByteReader(bytes, from: start, to: end)
        let count = try reader.count(max: end - start)
        var decoded: [(String, [UInt8]?)] = []
        decoded.reserveCapacity(count)
        for _ in 0..<count {
            let key = try reader.string()
            switch try reader.u8() {
            case 0: decoded.append((key, nil))
            case 1:
                let length = try reader.count(max: end - start)
                decoded.append((key, Array(bytes[reader.position..<reader.position + length])))
                reader.position += length
            default: throw DecodeError(description: "bad entry flag")
            }
        }
        guard reader.isAtEnd else { throw DecodeError(description: "trailing bytes") }
        for (key, value) in decoded { entries[key] = value }
    }

    /// Copies the damaged file to `PATH.damaged-SECONDS[-N]` and returns that path.
    private func keepAside(_ bytes: [UInt8]) throws -> String {
        let stamp = Int(Date().timeIntervalSince1970)
        var candidate = "\(path).damaged-\(stamp)"
        var suffix = 1
        while FileManager.default.fileExists(atPath: candidate) {
            candidate = "\(path).damaged-\(stamp)-\(suffix)"
            suffix += 1
        }
        guard FileManager.default.createFile(atPath: candidate, contents: Data(bytes)) else {
            throw RuleStoreError.io(path: candidate, operation: "keep the damaged file aside at", errno: errno)
        }
        return candidate
    }

    // MARK: - Writing

    public func apply(_ changes: [StoreChange]) throws {
        if changes.isEmpty { return }
        lock.lock()
        defer { lock.unlock() }
        try openIfNeeded()
        let record = FileStore.record(changes)
        do {
            try writeFully(record)
        } catch {
            // Never leave half a record behind a later one.
            _ = ftruncate(fd, off_t(fileLength))
            throw error
        }
        if options.syncEveryWrite { try sync(fd) }
        fileLength += record.count
        for change in changes {
            liveBytes -= FileStore.entrySize(change.key, entries[change.key])
            entries[change.key] = change.value
            liveBytes += FileStore.entrySize(change.key, change.value)
        }
        if fileLength > options.compactionThreshold && fileLength > 2 * liveBytes {
            try compactLocked()
        }
    }

    /// One framed record: `[u32 length][u32 CRC-32][payload]`, the payload holding `changes`.
    static func record(_ changes: [StoreChange]) -> [UInt8] {
        var payload = ByteWriter()
        payload.varint(UInt64(changes.count))
        for change in changes {
            payload.string(change.key)
            if let value = change.value {
                payload.u8(1)
                payload.varint(UInt64(value.count))
                payload.bytes += value
            } else {
                payload.u8(0)
            }
        }
        var record = ByteWriter()
        record.bytes.reserveCapacity(payload.bytes.count + 8)
        record.u32(UInt32(payload.bytes.count))
        record.u32(CRC32.checksum(payload.bytes[...]))
        record.bytes += payload.bytes
        return record.bytes
    }

    /// About what an entry takes in a compacted file; deleted entries take nothing.
    static func entrySize(_ key: String, _ value: [UInt8]?) -> Int {
        value.map { key.utf8.count + $0.count + 8 } ?? 0
    }

    /// Rewrites the file as one record of the live entries.
    public func compact() throws {
        lock.lock()
        defer { lock.unlock() }
        try openIfNeeded()
        try compactLocked()
    }

    private func compactLocked() throws {
        let live = entries.sorted { $0.key < $1.key }.map { StoreChange(key: $0.key, value: $0.value) }
        let file = FileStore.header() + FileStore.record(live)
        let temporary = path + ".tmp"
        let out = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard out >= 0 else { throw RuleStoreError.io(path: temporary, operation: "open", errno: errno) }
        do {
            try FileStore.writeFully(out, file, path: temporary)
            try sync(out)
        } catch {
            close(out)
            unlink(temporary)
            throw error
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            close(out)
            throw RuleStoreError.io(path: path, operation: "rename", errno: code)
        }
        syncDirectory()
        // The lock moves with the new file's descriptor.
        _ = flock(out, LOCK_EX | LOCK_NB)
        close(out)
        let reopened = open(path, O_RDWR | O_APPEND | O_CLOEXEC)
        guard reopened >= 0 else { throw RuleStoreError.io(path: path, operation: "reopen", errno: errno) }
        _ = flock(reopened, LOCK_EX | LOCK_NB)
        close(fd)
        fd = reopened
        fileLength = file.count
    }

    // MARK: - POSIX helpers

    private func readAll() throws -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var offset: off_t = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw RuleStoreError.io(path: path, operation: "read", errno: errno)
            }
            if n == 0 { return result }
            result += buffer[0..<n]
            offset += off_t(n)
        }
    }

    private func writeFully(_ bytes: [UInt8]) throws {
        try FileStore.writeFully(fd, bytes, path: path)
    }

    private static func writeFully(_ fd: Int32, _ bytes: [UInt8], path: String) throws {
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, bytes.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                throw RuleStoreError.io(path: path, operation: "write", errno: errno)
            }
            written += n
        }
    }

    private func sync(_ descriptor: Int32) throws {
        guard fsync(descriptor) == 0 else { throw RuleStoreError.io(path: path, operation: "fsync", errno: errno) }
    }

    private func syncDirectory() {
        let directory = (path as NSString).deletingLastPathComponent
        let dfd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_CLOEXEC)
        if dfd >= 0 {
            _ = fsync(dfd)
            close(dfd)
        }
    }
}
