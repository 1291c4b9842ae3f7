import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Faults from outside: the state file deleted, replaced or cut short by something else while
/// engines hold it, found by ``checkFile()`` and repaired by the process that can
/// (grammar.md, Storage, "Faults from outside"). Everything here runs under `lock` and, in shared
/// mode, under the region's lock.
extension FileStore {
    /// Shared, opening, under the region's lock (this store registered): when the path does not
    /// name the file the processes recorded, or names it cut short (deleted, replaced or truncated
    /// while they held it), asks them to write it again (every process looks at the file at its
    /// next call) and waits up to 200 ms for one to; a file at the path is then opened as it is.
    /// With no other store holding the file (a region left from a file nobody holds), nobody can
    /// write it again: it is opened as it is at once (``restoreWaits`` counts the waits).
    func waitForRestore(_ region: SharedRegion) throws {
        guard region.recordedFile != nil, region.sequence > 0 else { return }
        func whole() -> Bool {
            var info = stat()
            guard stat(path, &info) == 0 else { return false }
            return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)) == region.recordedFile
                && Int(info.st_size) >= region.durableLength
        }
        if whole() || !region.heldByOthers { return }
        restoreWaits += 1
        // Noted as any process that cannot write it again notes it: a holder that had read
        // every record before this notice still counts as having read them all.
        region.noteFault()
        for _ in 0..<100 {
            region.unlock()
            usleep(2000)
            try region.lock()
            if whole() { return }
        }
    }

    /// What became of the open file, as its path and its size tell.
    enum FileCheck: Equatable {
        /// It is at the path, as long as every acknowledged record.
        case sound
        /// Shared: another process compacted or restored it (the path names the recorded file).
        case movedOn
        /// Something else deleted it, replaced it, or cut it shorter than its acknowledged records.
        case deleted, replaced, truncated
    }

    /// Under the lock(s): an `fstat` and a `stat` of the path, whenever a shared store reads what
    /// other processes wrote, and on the append path at most once a millisecond (``FileStore/checkInterval``).
    /// There, the `stat` of the path is made only when ``FileStore/pathCheckInterval`` has passed
    /// or the `fstat` finds the file without a name (`lookingAtPath` false): a deletion and a
    /// replacement by a rename over the path both leave the open file with no link.
    func checkFile(lookingAtPath: Bool = true) -> FileCheck {
        let now = FileStore.checkClock()
        lastIdentityCheck = now
        if let region, region.isDetached { regionDetached = true }
        if !lookingAtPath {
            var info = stat()
            if fstat(fd, &info) == 0 && info.st_nlink > 0 {
                return Int(info.st_size) < expectedLength ? .truncated : .sound
            }
        }
        lastPathCheck = now
        let atPath = FileIdentity(path: realPath)
        if atPath == identity {
            var info = stat()
            guard fstat(fd, &info) == 0 else { return .sound }
            return Int(info.st_size) < expectedLength ? .truncated : .sound
        }
        if let region, let atPath {
            // A region of an earlier release records no file: a new generation is a compaction.
            if let recorded = region.recordedFile {
                if atPath == recorded { return .movedOn }
            } else if region.generation != seenGeneration {
                return .movedOn
            }
        }
        return atPath == nil ? .deleted : .replaced
    }

    /// How long the open file is at least: its acknowledged records, and, shared, those other
    /// processes acknowledged in it.
    private var expectedLength: Int {
        guard let region, region.recordedFile == identity else { return fileLength }
        return max(fileLength, region.durableLength)
    }

    /// Under the lock(s), after ``checkFile()`` found the open file deleted or replaced by
    /// something else: the open file still holds every record (this process's and, shared,
    /// those other processes appended to it), so it is written to a new file at the path.
    /// When it was cut short too, the engine writes its state from memory instead
    /// (``StoreNeedsRestore``). Shared, only a process holding the file the others write does
    /// this (``takeOnRestore(_:fromMemory:)``).
    func restoreFromOpenFile() throws -> RuleStoreError {
        var info = stat()
        if fstat(fd, &info) == 0, Int(info.st_size) < fileLength {
            try takeOnRestore(.truncated(path: path), fromMemory: true)
        }
        try takeOnRestore(.replaced(path: path), fromMemory: false)
        // Shared: records other processes appended to the open file since this one last read it.
        if region != nil, try changedSinceSeen() {
            _ = try readTail()
            engineBehind = true
        }
        try compactLocked()
        return .replaced(path: path)
    }

    /// Under the lock(s), after ``checkFile()`` found the open file cut short.
    func truncationNoticed() throws -> Never {
        try takeOnRestore(.truncated(path: path), fromMemory: true)
        throw StoreNeedsRestore(fault: .truncated(path: path))
    }

    /// Under the lock(s), after something else deleted, replaced or cut short the file: returns
    /// when this process is the one to write it again; throws ``StoreNeedsRestore`` when it is
    /// to write it from memory. An exclusive store always is. Shared, the one to is a process
    /// holding the file the others write (``SharedRegion/recordedFile``) and, to write it from
    /// memory, one that has read every acknowledged record (the last to write, or to read, before
    /// the fault was noticed). Any other notes the fault, so that every process looks at the file
    /// at its next call, and throws ``StoreWaiting``: its call is not saved. After a second with
    /// no process writing the file again (none holds it any more), it writes what it holds.
    func takeOnRestore(_ fault: RuleStoreError, fromMemory: Bool) throws {
        guard let region else {
            if fromMemory { throw StoreNeedsRestore(fault: fault) }
            return
        }
        let notice = region.faultNotice
        let holdsRecorded = region.recordedFile == nil || region.recordedFile == identity
        let readEverything =
            !engineBehind && seenGeneration == region.generation
            && (seenSequence == region.sequence || (notice.sequence != 0 && seenSequence == notice.sequence))
        let now = DispatchTime.now().uptimeNanoseconds
        let unanswered = notice.sequence != 0 && now &- notice.since > 1_000_000_000
        if (holdsRecorded && (!fromMemory || readEverything)) || unanswered {
            if fromMemory { throw StoreNeedsRestore(fault: fault) }
            return
        }
        region.noteFault()
        throw StoreWaiting(
            error: .unusable(
                path: path,
                reason: "something else \(fault.faultVerb) it, and another process holds its last records: "
                    + "this call is not saved; that process writes the file again at its next call"))
    }

    /// Under the lock(s): writes a new file at the path from what survives in the open one with
    /// `image` (the engine's whole state) over it, and records it. Returns what was found.
    func restore(image: [StoreChange]) throws {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw RuleStoreError.io(path: path, operation: "stat", errno: errno) }
        var merged: [String: [UInt8]] = [:]
        let bytes = try read(from: 0, count: min(Int(info.st_size), RecordFormat.maximumFileSize))
        if bytes.count >= RecordFormat.headerSize, Array(bytes[0..<8]) == RecordFormat.magic {
            var header = ByteReader(bytes, from: 8, to: 12)
            if let version = try? header.u32(), (1...RecordFormat.version).contains(version) {
                let (index, _, _) = RecordFormat.replayRecords(bytes, version: version)
                merged = StoredEntries(bytes: bytes, index: index).values
            }
        }
        for change in image { merged[change.key] = change.value }
        let temporary = realPath + ".tmp"
        let out = open(temporary, O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o644)
        guard out >= 0 else { throw RuleStoreError.io(path: temporary, operation: "open", errno: errno) }
        var record = RecordFormat.record(
            merged.sorted { $0.key < $1.key }.map { StoreChange(key: $0.key, value: $0.value) })
        record.withUnsafeMutableBytes { RecordFormat.frame($0) }
        let header = RecordFormat.header()
        do {
            if region == nil {
                guard flock(out, LOCK_EX | LOCK_NB) == 0 else {
                    throw RuleStoreError.io(path: temporary, operation: "lock", errno: errno)
                }
            }
            try FileStore.writeFully(out, header, path: temporary, system: system)
            try FileStore.writeFully(out, record, path: temporary, system: system)
            try sync(out)
        } catch {
            close(out)
            unlink(temporary)
            throw error
        }
        guard let newIdentity = FileIdentity(descriptor: out) else {
            close(out)
            unlink(temporary)
            throw RuleStoreError.io(path: temporary, operation: "stat", errno: errno)
        }
        let recorded = region?.recordedFile
        region?.advance(replaced: true)
        region?.recordedFile = newIdentity
        guard system.rename(temporary, realPath) == 0 else {
            let code = errno
            region?.recordedFile = recorded
            close(out)
            unlink(temporary)
            throw RuleStoreError.io(path: path, operation: "rename a restored file to", errno: code)
        }
        close(file.replace(with: out, identity: newIdentity, length: header.count + record.count))
        liveBytes = fileLength
        loadedVersion = RecordFormat.version
        contentsUnknown = false
        pending = nil
        loaded = nil
        if let region {
            region.durableLength = fileLength
            region.faultNotice = (0, 0)
            seenGeneration = region.generation
            seenSequence = region.sequence
            engineBehind = false
            appendedInCall = true
        }
        try syncDirectory()
    }

    /// When the path no longer names the open file (deleted or replaced by someone else),
    /// writes the state to a new file there and returns the report. Shared: a file replaced
    /// by another process's compaction is not this (the engine reads it at its next call).
    func recreateIfReplaced(lookingAtPath: Bool = true) throws -> RuleStoreError? {
        let check = checkFile(lookingAtPath: lookingAtPath)
        switch check {
        case .sound, .movedOn: return nil
        case .deleted, .replaced: return try restoreFromOpenFile()
        case .truncated: try truncationNoticed()
        }
    }

    /// Shared, under the region's lock, before reading what other processes wrote: settles
    /// what ``checkFile()`` finds. True when the open file is another one now (another
    /// process's compaction reopened, or the file written again here): read it whole.
    func settleFile() throws -> Bool {
        switch checkFile() {
        case .sound: return false
        case .movedOn:
            try reopen()
            return true
        case .deleted, .replaced:
            let fault = try restoreFromOpenFile()
            backgroundError = backgroundError ?? fault
            loaded = nil
            return true
        case .truncated: try truncationNoticed()
        }
    }
}

/// The open file was cut short by something else (or deleted or replaced and cut short): the
/// engine, which holds every acknowledged record, writes its whole state through
/// ``FileStore/restore(image:)`` and reports `fault`. Nothing was written.
struct StoreNeedsRestore: Error {
    let fault: RuleStoreError
}

/// A fault another process is to repair (``FileStore/takeOnRestore(_:fromMemory:)``): this
/// call's change is not saved (`error` says so). Not reported when only catching up at the
/// start of a call, which may then succeed once the other process has written the file.
struct StoreWaiting: Error {
    let error: RuleStoreError
}
