import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// FileStore's file: opening and locking it, reading and replaying it, repairing what a killed
/// writer left, and the POSIX calls it goes through. Everything here runs under `lock` and,
/// in shared mode, under the region's lock.
extension FileStore {
    // MARK: - Opening

    func openIfNeeded() throws {
        if fd >= 0 { return }
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty && !FileManager.default.fileExists(atPath: directory) {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw RuleStoreError.io(path: directory, operation: "create the directory", errno: errno)
            }
        }
        if options.shared {
            try openShared()
        } else {
            try openExclusive()
        }
    }

    /// Shared: opens the file under the region's lock, held only while it is read.
    private func openShared() throws {
        guard let region = try SharedRegion(statePath: path) else { return }
        try region.lock()
        defer { region.unlock() }
        guard region.register() else {
            throw RuleStoreError.unusable(
                path: path, reason: "\(region.holders.count) stores hold it open shared, the most there is room for")
        }
        self.region = region
        do {
            try waitForRestore(region)
            let descriptor = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else { throw RuleStoreError.io(path: path, operation: "open", errno: errno) }
            file.use(descriptor)
            // An exclusive store holds the file's lock for as long as it is open; a shared one
            // takes it only here, to find one (and is listed in the region for the exclusive
            // opener to find: whichever opens second fails).
            if ProcessHolds.lock(descriptor, LOCK_SH, path: path) != nil {
                throw RuleStoreError.unusable(path: path, reason: FileStore.heldExclusively)
            }
            flock(descriptor, LOCK_UN)
            try loadOpenFile()
            seenSequence = region.sequence
            seenGeneration = region.generation
            // The file opened becomes the recorded one, and its length the durable one, unless
            // the recorded file is held: then a process holding it writes it again if it was
            // cut short. A file nobody holds is taken as it is, even when it is the recorded
            // one (device and inode) and shorter than the recorded length: truncated while no
            // process held it, or deleted and another file made that reused its inode number.
            if region.recordedFile != identity || (region.durableLength != fileLength && !region.heldByOthers) {
                region.recordedFile = identity
                region.durableLength = fileLength
            }
        } catch {
            if fd >= 0 { close(fd) }
            file.forget()
            loaded = nil
            region.unregister()
            self.region = nil
            throw error
        }
    }

    /// Why a shared open failed beside an exclusive store.
    static let heldExclusively =
        "another store holds it open exclusively (FileStore.Options.shared is false there); "
        + "every process must open it shared"

    /// Exclusive, holding the file's lock: fails when stores hold it open shared.
    private func refuseIfOpenShared(_ descriptor: Int32) throws {
        guard let region = try? SharedRegion(statePath: path, create: false) else { return }
        try region.lock()
        let holders = region.holders
        region.unlock()
        guard !holders.isEmpty else { return }
        close(descriptor)
        let who =
            holders.count == 1
            ? "process \(holders[0])" : "processes " + holders.map(String.init).joined(separator: ", ")
        throw RuleStoreError.unusable(
            path: path,
            reason: "\(who) hold\(holders.count == 1 ? "s" : "") it open shared (FileStore.Options.shared); "
                + "every process must open it shared")
    }

    /// Exclusive: opens the file and holds its lock until the store is released.
    private func openExclusive() throws {
        // Another process may compact (replace the file) between our open and our lock:
        // the lock counts only when the locked file is still the one at the path.
        var descriptor: Int32 = -1
        for _ in 0..<16 {
            descriptor = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else { throw RuleStoreError.io(path: path, operation: "open", errno: errno) }
            if let refused = ProcessHolds.lock(descriptor, LOCK_EX, path: path) {
                close(descriptor)
                throw RuleStoreError.io(
                    path: path,
                    operation: refused.heldHere
                        ? "lock (another store of this process holds it open)" : "lock (is another process using it?)",
                    errno: refused.errno)
            }
            if let opened = FileIdentity(descriptor: descriptor), opened == FileIdentity(path: path) { break }
            close(descriptor)
            descriptor = -1
        }
        guard descriptor >= 0 else {
            throw RuleStoreError.io(path: path, operation: "lock (it keeps being replaced)", errno: EAGAIN)
        }
        try refuseIfOpenShared(descriptor)
        // Listed from the lock on, not from the end of the load: an open of this process made
        // while this store reads its file waits for it too, rather than naming another process.
        let held = ProcessHolds.resolved(path) ?? path
        ProcessHolds.take(held)
        heldPath = held
        file.use(descriptor)
        do {
            try loadOpenFile(resolvedPath: held)
        } catch {
            close(fd)
            file.forget()
            loaded = nil
            ProcessHolds.letGo(held)
            heldPath = nil
            throw error
        }
    }

    /// Shared, under the region's lock: the file at the path replaced the open one (another
    /// process compacted or restored it: it is the recorded file); open and read it (into
    /// `loaded`). Never creates one: a file no process recorded is not adopted.
    func reopen() throws {
        let descriptor = open(realPath, O_RDWR | O_APPEND | O_CLOEXEC)
        guard descriptor >= 0 else { throw RuleStoreError.io(path: path, operation: "open", errno: errno) }
        // The recorded file shorter than its acknowledged records: cut short by something else
        // (never adopted as a file being started).
        var info = stat()
        if let region, fstat(descriptor, &info) == 0, Int(info.st_size) < region.durableLength {
            close(descriptor)
            try takeOnRestore(.truncated(path: path), fromMemory: true)
            throw StoreNeedsRestore(fault: .truncated(path: path))
        }
        let old = fd
        file.use(descriptor)
        do {
            try loadOpenFile()
        } catch {
            close(descriptor)
            file.use(old)
            throw error
        }
        close(old)
        file.changed()
    }

    /// Reads the open file into `loaded`. `resolvedPath`: the path with its links resolved, when
    /// the caller has it already (else resolved here).
    func loadOpenFile(resolvedPath: String? = nil) throws {
        wholeReads += 1
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw RuleStoreError.io(path: path, operation: "stat", errno: errno) }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw RuleStoreError.unusable(path: path, reason: "it is not a regular file")
        }
        file.identify(FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)))
        realPath = resolvedPath ?? ProcessHolds.resolved(path) ?? path
        lastIdentityCheck = FileStore.checkClock()
        lastPathCheck = lastIdentityCheck
        // We hold the lock: temporary files left by a killed compaction are ours to remove.
        removeLeftoverCompactions()
        var size = Int(info.st_size)
        if size < RecordFormat.headerSize {
            // A process killed while writing the header of a new file: start it again.
            let head = try read(from: 0, count: size)
            let header = RecordFormat.header()
            if head.isEmpty || head == Array(header[0..<size]) || RecordFormat.isZero(head[...]) {
                guard system.truncate(fd, 0) == 0 else {
                    throw RuleStoreError.io(path: path, operation: "truncate", errno: errno)
                }
                size = 0
            }
        }
        if size == 0 {
            try writeFully(RecordFormat.header())
            try sync(fd)
            try syncDirectory()
            file.acknowledge(upTo: RecordFormat.headerSize)
            loadedVersion = RecordFormat.version
            loaded = StoredEntries([:])
            liveBytes = 0
            return
        }
        guard size <= RecordFormat.maximumFileSize else {
            throw RuleStoreError.unusable(
                path: path, reason: "it is \(size) bytes; the limit is \(RecordFormat.maximumFileSize) bytes")
        }
        let head = try read(from: 0, count: min(size, RecordFormat.headerSize))
        guard head.count == RecordFormat.headerSize, Array(head[0..<8]) == RecordFormat.magic else {
            throw RuleStoreError.corrupt(
                path: path, offset: 0, reason: "not a rules state file (bad header)", keptAt: nil)
        }
        var header = ByteReader(head, from: 8, to: 12)
        let version = try header.u32()
        guard (1...RecordFormat.version).contains(version) else {
            throw RuleStoreError.unsupportedVersion(path: path, version: Int(version))
        }
        let bytes = try read(from: 0, count: size)
        try replay(bytes, version: version)
    }

    private func replay(_ bytes: [UInt8], version: UInt32) throws {
        loadedVersion = version
        let (index, offset, damage) = RecordFormat.replayRecords(bytes, version: version)
        file.acknowledge(upTo: offset)
        loaded = StoredEntries(bytes: bytes, index: index)
        // About what the live entries take in a compacted file (key, value, lengths and flag).
        liveBytes = index.liveBytes + 8 * index.liveCount
        guard let damage else { return }
        if damage.torn {
            let tail = RecordFormat.isZero(bytes[offset...]) ? [] : Array(bytes[offset...])
            pending = .truncate(offset: offset, reason: damage.reason, tail: tail)
            return
        }
        if options.recovery == .strict {
            throw RuleStoreError.corrupt(path: path, offset: damage.offset, reason: damage.reason, keptAt: nil)
        }
        pending = .salvage(offset: damage.offset, reason: damage.reason)
    }

    /// Every entry of the open file, replayed from its bytes. Shared: up to its end (other
    /// processes append), repairing a torn tail, as of the counters now (what `reopen` just
    /// read is used as it is); exclusive: its acknowledged records.
    func readAll() throws -> StoredEntries {
        guard let region else {
            let (bytes, index) = try FileStore.replayFile(fd, length: fileLength, path: path)
            return StoredEntries(bytes: bytes, index: index)
        }
        if loaded == nil { try loadOpenFile() }
        try repairIfNeeded()
        seenSequence = region.sequence
        seenGeneration = region.generation
        engineBehind = false
        let entries = loaded ?? StoredEntries([:])
        loaded = nil
        return entries
    }

    /// The first `length` bytes of the file open as `descriptor`, and where the latest value
    /// of each live key lies in them. Damage there (the file changed under us) is an error.
    static func replayFile(_ descriptor: Int32, length: Int, path: String) throws -> ([UInt8], RecordIndex) {
        let bytes = try read(descriptor, from: 0, count: length, path: path)
        guard bytes.count == length, length >= RecordFormat.headerSize, Array(bytes[0..<8]) == RecordFormat.magic
        else {
            throw RuleStoreError.corrupt(path: path, offset: 0, reason: "the file changed while in use", keptAt: nil)
        }
        var header = ByteReader(bytes, from: 8, to: 12)
        let version = try header.u32()
        let (index, _, damage) = RecordFormat.replayRecords(bytes, version: version)
        if let damage {
            throw RuleStoreError.corrupt(path: path, offset: damage.offset, reason: damage.reason, keptAt: nil)
        }
        return (bytes, index)
    }

    // MARK: - Shared mode: reading what others wrote

    /// Under the region's lock: true when another process wrote since the engine last read
    /// the file. Writers move the count before they write, so a writer killed mid-write has
    /// moved it too.
    func changedSinceSeen() throws -> Bool {
        guard let region else { return false }
        return region.sequence != seenSequence || region.generation != seenGeneration
    }

    /// Under the region's lock: the changes of the records other processes appended since the
    /// engine last read the file, or every entry when the file was replaced (or a compaction
    /// read records the engine has not taken in: ``catchUp()``).
    func readChanges() throws -> ExternalChanges {
        guard let region, try changedSinceSeen() else { return .none }
        let sequence = region.sequence
        if try settleFile() { return .all(try readAll()) }
        if engineBehind { return .all(try readAllOfOpenFile()) }
        let (tail, changes) = try readTail()
        seenSequence = sequence
        return .changes(bytes: tail, changes)
    }

    /// Shared, under the region's lock: every entry of the open file, as of the counters now.
    func readAllOfOpenFile() throws -> StoredEntries {
        loaded = nil
        return try readAll()
    }

    /// Under the region's lock: the records appended after `fileLength` (whose end it becomes)
    /// and their changes, with offsets in the returned bytes; a torn tail is cut off.
    func readTail() throws -> ([UInt8], [(key: Range<Int>, value: Range<Int>?)]) {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw RuleStoreError.io(path: path, operation: "stat", errno: errno) }
        let tail = try read(from: fileLength, count: max(0, Int(info.st_size) - fileLength))
        var changes: [(key: Range<Int>, value: Range<Int>?)] = []
        let (end, damage) = RecordFormat.replayChanges(tail, from: 0, version: loadedVersion, into: &changes)
        if let damage {
            guard damage.torn else {
                throw RuleStoreError.corrupt(
                    path: path, offset: fileLength + damage.offset, reason: damage.reason, keptAt: nil)
            }
            // Left by a writer killed while it held the lock: its call never returned.
            pending = .truncate(
                offset: fileLength + end, reason: damage.reason,
                tail: RecordFormat.isZero(tail[end...]) ? [] : Array(tail[end...]))
        }
        file.acknowledge(appended: end)
        try repairIfNeeded()
        return (tail, changes)
    }

    /// Under the region's lock: reads what other processes wrote so that a compaction keeps it.
    /// The counters stay as the engine saw them, and the engine reads the whole file at its
    /// next call (it has not taken these records in).
    func catchUp() throws {
        switch checkFile() {
        case .movedOn: try reopen()
        case .sound: _ = try readTail()
        case .deleted, .replaced: break
        case .truncated: try truncationNoticed()
        }
        loaded = nil
        engineBehind = true
    }

    // MARK: - Repair

    /// Carries out what `load` found, once: truncates a torn tail (keeping the dropped
    /// bytes aside when it can), or links a damaged file aside and rewrites it; then rewrites
    /// a file of an earlier format in this one, as records are appended in this library's.
    func repairIfNeeded() throws {
        if let repair = pending { try self.repair(repair) }
        if loadedVersion < RecordFormat.version { try compactLocked() }
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
}
