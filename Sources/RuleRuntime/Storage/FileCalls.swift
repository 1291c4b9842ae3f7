internal import CFileCalls
import Foundation

/// The system calls a file store makes, and their helpers.
extension FileStore {
    // MARK: - POSIX helpers

    func read(from offset: Int, count: Int) throws -> [UInt8] {
        try FileStore.read(fd, from: offset, count: count, path: path)
    }

    static func read(_ fd: Int32, from offset: Int, count: Int, path: String) throws -> [UInt8] {
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

    /// Reads `count` bytes at `offset` of `fd` into `buffer`; how many were read (fewer at the
    /// end of the file), or -1 with `errno` set.
    static func readFully(_ fd: Int32, into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int) -> Int {
        var done = 0
        while done < count {
            let n = pread(fd, buffer + done, count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                return -1
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    func writeFully(_ bytes: UnsafeRawBufferPointer) throws {
        try FileStore.writeFully(fd, bytes, path: path, system: system)
    }

    func writeFully(_ bytes: [UInt8]) throws {
        try FileStore.writeFully(fd, bytes, path: path, system: system)
    }

    static func writeFully(_ fd: Int32, _ bytes: [UInt8], path: String, system: FileSystemCalls) throws {
        try bytes.withUnsafeBytes { try writeFully(fd, $0, path: path, system: system) }
    }

    static func writeFully(
        _ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String, system: FileSystemCalls
    ) throws {
        var written = 0
        while written < bytes.count {
            let n = system.write(fd, bytes.baseAddress! + written, bytes.count - written)
            if n < 0 {
                if errno == EINTR { continue }
                throw RuleStoreError.io(path: path, operation: "write", errno: errno)
            }
            if n == 0 { throw RuleStoreError.io(path: path, operation: "write", errno: ENOSPC) }
            written += n
        }
    }

    func sync(_ descriptor: Int32) throws {
        guard system.fsync(descriptor) == 0 else {
            throw RuleStoreError.io(path: path, operation: "fsync", errno: errno)
        }
    }

    func syncDirectory() throws {
        let directory = (realPath as NSString).deletingLastPathComponent
        guard system.syncDirectory(directory.isEmpty ? "." : directory) == 0 else {
            throw RuleStoreError.io(path: directory, operation: "fsync the directory", errno: errno)
        }
    }
}

/// A thread-safe counter, for unique numbers.
final class Counter: Sendable {
    private let value = Protected(0)

    func next() -> Int {
        value.withLock {
            $0 += 1
            return $0
        }
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
    /// Swaps the files at two paths in one step (``exchangePaths(_:_:)``): -1 with `errno`
    /// where the system or the file system cannot, and nothing has moved.
    var exchange: @Sendable (String, String) -> Int32 = FileSystemCalls.exchangePaths
    var truncate: @Sendable (Int32, off_t) -> Int32
    /// `fsync` of a directory, so a rename in it is durable.
    var syncDirectory: @Sendable (String) -> Int32
    /// Writes a new file holding damaged bytes set aside; false (with `errno`) when it cannot.
    var writeAside: @Sendable (String, [UInt8]) -> Bool
    /// Closes a descriptor: the store's own file and a compaction's, so that a test can see
    /// that each is closed once.
    var close: @Sendable (Int32) -> Int32 = FileSystemCalls.closeDescriptor

    /// Swaps the files at `a` and `b`: each name then holds the other's file. A background
    /// compaction's switch puts the new file in place this way, and removes the old one after
    /// the store's lock is let go. A rename over the old file costs more under the lock: on
    /// ext4 (`auto_da_alloc`, on by default) a rename that replaces a file first starts writing
    /// out the renamed file's unwritten pages, the records copied after its `fsync`. A C loop
    /// renaming a 3 MiB file, synced and then 4-64 KiB longer, over a 6 MiB one, 30 times each:
    /// 72-83 µs on average against 20-28 µs with nothing left to write (2026-11-29).
    @Sendable static func exchangePaths(_ a: String, _ b: String) -> Int32 {
        rules_exchange_paths(a, b)
    }

    @Sendable static func closeDescriptor(_ descriptor: Int32) -> Int32 {
        #if canImport(Glibc)
            Glibc.close(descriptor)
        #elseif canImport(Musl)
            Musl.close(descriptor)
        #else
            Darwin.close(descriptor)
        #endif
    }

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
            defer { _ = closeDescriptor(dfd) }
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
