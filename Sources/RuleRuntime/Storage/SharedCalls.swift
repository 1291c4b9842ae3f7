import Foundation

/// A shared file's calls, one at a time across processes.
extension FileStore {
    // MARK: - Shared mode: one call at a time

    /// One memory load: true when another process may have written since the engine last
    /// read the file.
    var mayHaveChanged: Bool {
        (region?.sequence).map { $0 != seenSequence } ?? false
    }

    /// What other processes wrote since the engine last read the file: their records' changes,
    /// or, when the file was replaced (compacted), every entry. Takes the lock for the read.
    func changesElsewhere() throws -> ExternalChanges {
        lock.lock()
        defer { lock.unlock() }
        try openIfNeeded()
        return try withFileLock { try readChanges() }
    }

    /// Every entry, read again after a conflicting append (the lock is held: see ``write(record:)``).
    func reloadAll() throws -> StoredEntries {
        lock.lock()
        defer { lock.unlock() }
        try openIfNeeded()
        return try withFileLock {
            if region != nil { _ = try settleFile() }
            return try readAll()
        }
    }

    /// Shared: takes the region's lock for the rest of the engine call (``endCall()`` lets it
    /// go); true when another process wrote since the engine last read the file.
    func lockForAppend() throws -> Bool {
        lock.lock()
        defer { lock.unlock() }
        try openIfNeeded()
        guard region != nil else { return false }
        if !holdsLock {
            try lockRegion()
            holdsLock = true
        }
        return try changedSinceSeen()
    }

    /// Shared: takes the region's lock. A region something else cut short (its page reads as
    /// zeros, ``SharedRegion/isIntact``), or found deleted or replaced by ``checkFile()``, is
    /// opened again from its path first (and then read from scratch), so that every process
    /// shares one lock again.
    func lockRegion() throws {
        guard let current = region else { return }
        if current.isIntact && !regionDetached {
            try current.lock()
            // Cut short while this process waited for the lock: the lock it holds is no one's.
            if current.isIntact { return }
            current.unlock()
        }
        guard let fresh = try SharedRegion(statePath: path) else { return }
        try fresh.lock()
        current.unregisterIfIntact()
        _ = fresh.register()
        if fresh.recordedFile == nil && FileIdentity(path: realPath) == identity {
            fresh.recordedFile = identity
            fresh.durableLength = fileLength
        }
        region = fresh
        regionDetached = false
        // Counters of another region: everything is read again.
        engineBehind = true
        seenSequence = fresh.sequence &+ 1
        backgroundError = backgroundError ?? .replaced(path: fresh.path)
    }

    /// Ends an engine call: lets go of the lock an append took, and tells other processes.
    func endCall() {
        // Both are set only by the thread of the call now ending (which the engine's lock
        // orders against every other call): a call that neither appended nor locked, the
        // common read, costs no lock here (rulebench `try_shared_vs_limit`).
        if !holdsLock && !appendedInCall { return }
        lock.lock()
        let posted = appendedInCall
        if holdsLock {
            region?.unlock()
            holdsLock = false
        }
        appendedInCall = false
        lock.unlock()
        if posted { ChangeWatcher.post(realPath) }
    }

    /// Calls `handler` when another process may have written (shared mode; nil otherwise).
    func watch(_ handler: @escaping @Sendable () -> Void) -> ChangeWatcher? {
        lock.lock()
        defer { lock.unlock() }
        guard region != nil, (try? openIfNeeded()) != nil else { return nil }
        return ChangeWatcher(realPath: realPath, handler: handler)
    }

    /// Runs `body` holding the region's lock (shared mode; just `body` otherwise), keeping a
    /// lock this call already holds.
    func withFileLock<T>(_ body: () throws -> T) throws -> T {
        guard region != nil, !holdsLock else { return try body() }
        try lockRegion()
        let locked = region
        defer { locked?.unlock() }
        return try body()
    }
}

/// What other processes wrote, as ``FileStore/changesElsewhere()`` returns it.
enum ExternalChanges {
    /// Nothing.
    case none
    /// The changes of their records, in order: key and value (nil: deleted) ranges in `bytes`.
    case changes(bytes: [UInt8], [(key: Range<Int>, value: Range<Int>?)])
    /// The file was replaced: every entry.
    case all(StoredEntries)
}

/// An append that found the shared file changed since the engine last read it: nothing was
/// written, the lock is held, and the engine reads the file and runs the call again.
struct StoreConflict: Error {}
