import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// FileStore's compactions: the file rewritten as one record of its live entries, in place
/// (``compactLocked(appending:)``, under the lock) or in the background while appends go on
/// (``startCompaction()``).
extension FileStore {
    /// Where a background compaction of the file at `path` writes the new file.
    static func compactingPath(_ path: String) -> String { path + ".compacting" }

    /// Removes `PATH.tmp` and `PATH.compacting` left behind by a process that died compacting
    /// (two `unlink`s: the cost of opening does not grow with the directory). Called holding
    /// the file's lock (exclusive) or the region's (shared: only `PATH.tmp` is used there).
    func removeLeftoverCompactions() {
        unlink(realPath + ".tmp")
        if region == nil { unlink(FileStore.compactingPath(realPath)) }
    }

    /// Writes to `out` a compacted file of the first `length` bytes of the file open as
    /// `descriptor` (``SnapshotWriter``): the header, then records of the live entries, in the
    /// order of their values in the file. Any format the reader accepts comes out in the current
    /// one. Returns the file's length.
    static func writeSnapshot(
        of descriptor: Int32, length: Int, path: String, to out: Int32, at outPath: String, system: FileSystemCalls
    ) throws -> Int {
        try SnapshotWriter.write(of: descriptor, length: length, path: path, to: out, at: outPath, system: system)
    }

    /// Writes the live entries (and `extra`, a framed record, after them) to `PATH.tmp`, syncs
    /// and locks it, renames it over the file and only then lets go of the old file (and, when
    /// exclusive, its lock). The durable length becomes the new file's; a failure leaves the old
    /// file as it was.
    func compactLocked(appending extra: UnsafeRawBufferPointer? = nil) throws {
        // The valid records only: `fileLength` ends before damage being salvaged.
        let temporary = realPath + ".tmp"
        let out = open(temporary, O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o644)
        guard out >= 0 else { throw RuleStoreError.io(path: temporary, operation: "open", errno: errno) }
        func fail(_ error: Error) -> Error {
            close(out)
            unlink(temporary)
            return error
        }
        func fail(_ operation: String, _ code: Int32) -> Error {
            fail(RuleStoreError.io(path: temporary, operation: operation, errno: code))
        }
        if region == nil { guard flock(out, LOCK_EX | LOCK_NB) == 0 else { throw fail("lock", errno) } }
        var size: Int
        do {
            size = try FileStore.writeSnapshot(
                of: fd, length: fileLength, path: path, to: out, at: temporary, system: system)
            if let extra {
                try FileStore.writeFully(out, extra, path: temporary, system: system)
                size += extra.count
            }
        } catch {
            throw fail(error)
        }
        guard system.fsync(out) == 0 else { throw fail("fsync", errno) }
        guard let newIdentity = FileIdentity(descriptor: out) else { throw fail("stat", errno) }
        let behind = region.map { $0.sequence != seenSequence || $0.generation != seenGeneration } ?? false
        guard renameCompacted(temporary, newIdentity, size: size) != .failed else { throw fail("rename", errno) }
        // The old file's last close frees its blocks (0.3 ms for 1 MiB here, a fifth of a
        // shared compaction): done on the compaction queue, off the caller's path and the lock.
        let replaced = switchToCompacted(out, newIdentity, length: size, liveBytes: size)
        compactionQueue.async { close(replaced) }
        contentsUnknown = false
        if let region {
            // Replaced: other processes open the new file at their next call.
            // The open file is the new one either way; an engine that had not seen everything in
            // it reads it whole at its next call.
            if behind { engineBehind = true }
            seenGeneration = region.generation
            if !engineBehind { seenSequence = region.sequence }
            appendedInCall = true
        }
        try syncDirectory()
    }

    /// Under the lock: the one switch to a compacted file, whichever path made it (here, in the
    /// background, or shared): the store then appends to `out`, its live bytes are `liveBytes`,
    /// and its format is the current one (a compaction writes no other). Returns the old file's
    /// descriptor, for the caller to close where it suits (its last close frees its blocks).
    func switchToCompacted(_ out: Int32, _ identity: FileIdentity, length: Int, liveBytes live: Int) -> Int32 {
        let replaced = file.replace(with: out, identity: identity, length: length)
        compactionCount += 1
        liveBytes = live
        loadedVersion = RecordFormat.version
        return replaced
    }

    // MARK: - In the background

    /// Starts compacting in the background: the live entries as they are now are written to
    /// a new file (and synced) while appends go on to the old one; then, under the lock, the
    /// records appended meanwhile are copied over, and the new file is locked and renamed
    /// into place. A kill at any moment leaves the old file, complete, or the new one.
    ///
    /// Shared: the same, except that the switch waits for this process's next append, which
    /// holds the region's lock (``finishSharedCompaction()``), and that the new file has a name
    /// of this store's own (`PATH.compacting-PID-N`): several processes may compact at once,
    /// the first to switch wins and the others drop theirs, and no lock is held between calls.
    func startCompaction() {
        compacting = true
        let offset = fileLength
        let startedIn = generation
        let shared = region != nil
        // Exclusive: one name per file, as only the holder of the file's lock compacts it.
        let temporary =
            shared ? FileStore.sharedCompactingPath(realPath) : FileStore.compactingPath(realPath)
        let system = self.system
        let published = file.published
        // A descriptor of our own, opened by name, to copy what is appended meanwhile: a `dup`
        // would share the store's lock and keep it after the store is released.
        let source = open(realPath, O_RDONLY | O_CLOEXEC)
        let sourceIsOurs = source >= 0 && FileIdentity(descriptor: source) == identity
        let label = path
        compactionQueue.async { [weak self] in
            defer { if source >= 0 { close(source) } }
            // The new file's writing and syncing, below the app's threads, without the store's lock.
            let written: (out: Int32, liveSize: Int, failure: RuleStoreError?) = FileStore.belowTheApp {
                var failure: RuleStoreError? =
                    source < 0
                    ? .io(path: label, operation: "open", errno: errno)
                    : sourceIsOurs ? nil : .replaced(path: label)
                var liveSize = 0
                // Emptied only once locked: a file locked by anyone else is neither cut short nor
                // removed (`out` is -1 unless it is ours).
                var out = open(temporary, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
                if shared { FileStore.removeDeadCompactions(beside: label) }
                if failure != nil {
                } else if out < 0 {
                    failure = .io(path: temporary, operation: "open", errno: errno)
                } else if !shared && flock(out, LOCK_EX | LOCK_NB) != 0 {
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
                        // The engine's arrays that moved as they grew left freed blocks in the heap,
                        // which glibc keeps: give them back before waiting on fsync.
                        FileStore.releaseFreedMemory()
                        if system.fsync(out) != 0 { failure = .io(path: temporary, operation: "fsync", errno: errno) }
                    } catch {
                        failure = error as? RuleStoreError ?? .other(error)
                    }
                }
                return (out, liveSize, failure)
            }
            // From here on the work takes the store's lock (to read the file's length, then to
            // switch), so it runs on the queue's thread at the priority it had: a trigger waiting
            // for the lock must not wait for a thread at nice 19, which a busy thread at nice 0
            // on its core leaves about 1/70 of the core (weights 15 and 1024).
            var failure = written.failure
            // Copy what was appended meanwhile in rounds without the lock, until little is left
            // for the switch to copy under it.
            var copied = offset
            while failure == nil, let end = self?.appendedLength(since: startedIn, published), end - copied > 16_384 {
                do {
                    try FileStore.copy(
                        source, copied..<end, path: label, to: written.out, at: temporary, system: system)
                    copied = end
                } catch {
                    failure = error as? RuleStoreError ?? .other(error)
                }
            }
            let ready = ReadyCompaction(
                out: written.out, temporary: temporary, copied: copied, startedIn: startedIn,
                liveSize: written.liveSize, failure: failure)
            // Holds the store only while switching files: a store released meanwhile is gone
            // (its lock with it), and its new file is removed if it is still ours. Asked once:
            // the store may be released just after the switch (which gave `out` to the store,
            // or closed it), and `out` must then not be closed here again (its number may be
            // another file's by then).
            //
            // The store is held for the switch only, not for the directory's sync after it: a
            // store whose app let go of it meanwhile is released here, and until then its file
            // stays locked (an open of the same file by this process waits for that,
            // ``ProcessHolds``).
            var finished: String?
            if let store = self {
                if shared {
                    // The switch needs the region's lock, which this process's next append holds.
                    store.lock.withLock { store.readyCompaction = ready }
                } else {
                    finished = store.finishCompaction(
                        ready.out, temporary, from: copied, startedIn: startedIn, liveSize: ready.liveSize,
                        failure: failure)
                }
            } else {
                ready.discard(system)
            }
            guard let directory = finished else { return }
            // Without syncEveryWrite the rename need only survive the process, which it does at once.
            _ = system.syncDirectory(directory)
        }
    }

    /// Runs `work` below the app's threads, and returns its result when it is done. On Apple
    /// platforms the compaction queue's `utility` QoS does that. On Linux, libdispatch gives QoS
    /// little priority (a `utility` queue's threads run at nice 2), so a compaction competed
    /// with the app's threads almost as an equal: on 2 cores, a thread that triggered while the
    /// engine swapped rules (a third busy thread) lost the CPU for a 4 ms tick, and
    /// `trigger_during_swap_100k_p99_ms` read 2.5-2.6 ms though the engine's lock was held
    /// 0.01-0.06 ms. There, `work` runs on a thread of its own at nice 19 (a pool thread's
    /// priority, once lowered, cannot be raised again without privileges), while the queue's
    /// thread waits, so that ``waitForCompaction()`` still waits for it. `work` must not take
    /// the store's lock, which a trigger would then wait for at nice 19.
    static func belowTheApp<Result: Sendable>(_ work: @escaping @Sendable () -> Result) -> Result {
        #if os(Linux)
            let result = Protected<Result?>(nil)
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                // `who` 0: the calling thread (Linux keeps a nice value per thread).
                _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
                let value = work()
                result.withLock { $0 = value }
                done.signal()
            }
            thread.start()
            done.wait()
            return result.withLock { $0! }
        #else
            return work()
        #endif
    }

    /// The file's length, while it is still the file a compaction started from: read from the
    /// word the open file publishes, without the store's lock, where the system has atomics.
    /// A trigger that finds the lock held by the queue's thread sleeps until that thread runs
    /// again; right after the new file's `fsync`, the sync's completion keeps its CPU busy, and
    /// such triggers slept 340-564 µs (an off-CPU profile, 2026-11-29).
    private func appendedLength(since startedIn: Int, _ published: AtomicWordIfAvailable) -> Int? {
        if published.isAvailable { return OpenStateFile.publishedLength(in: published, generation: startedIn) }
        lock.lock()
        defer { lock.unlock() }
        return startedIn == generation ? fileLength : nil
    }

    /// Waits until no compaction is running (tests). Never call it from the compaction queue.
    func waitForCompaction() {
        compactionQueue.sync {}
    }

    /// ``waitForCompaction()`` for `rulebench`'s memory figures.
    @_spi(Benchmarks) public func waitForCompactionInFlight() { waitForCompaction() }

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
                _ = system.close(out)
                unlink(temporary)
            }
            noteDropped(error)
            lock.unlock()
            return nil
        }
        guard failure == nil, startedIn == generation, fd >= 0, !contentsUnknown else { return drop(failure) }
        let copied = fileLength - offset
        if let error = copyAppended(from: offset, to: out, at: temporary) { return drop(error) }
        guard let newIdentity = FileIdentity(descriptor: out) else {
            return drop(.io(path: temporary, operation: "stat", errno: errno))
        }
        let size = Int(lseek(out, 0, SEEK_END))
        let switched = size >= copied ? renameCompacted(temporary, newIdentity, size: size, swapping: true) : .failed
        if switched == .failed { return drop(.io(path: temporary, operation: "rename", errno: errno)) }
        // The old file is removed (when swapped) and closed after the lock is released: its
        // last close frees its blocks, which a trigger waiting on the lock need not wait for.
        let replaced = switchToCompacted(out, newIdentity, length: size, liveBytes: liveSize)
        defer {
            if switched == .swapped { unlink(temporary) }
            _ = system.close(replaced)
        }
        let directory = (realPath as NSString).deletingLastPathComponent
        if options.syncEveryWrite {
            do { try syncDirectory() } catch { backgroundError = error as? RuleStoreError }
            lock.unlock()
            return nil
        }
        lock.unlock()
        return directory.isEmpty ? "." : directory
    }

    /// Under the lock: copies the records appended from `offset` to the durable length into
    /// the new file `out` (synced with `syncEveryWrite`); the error, if it could not.
    private func copyAppended(from offset: Int, to out: Int32, at temporary: String) -> RuleStoreError? {
        do {
            try FileStore.copy(fd, offset..<fileLength, path: path, to: out, at: temporary, system: system)
            if options.syncEveryWrite && system.fsync(out) != 0 {
                return .io(path: temporary, operation: "fsync", errno: errno)
            }
            return nil
        } catch {
            return error as? RuleStoreError ?? .other(error)
        }
    }

    /// Copies the bytes at `range` of `source` to the end of `out`, 64 KiB at a time (a block
    /// of the C allocator's below its `mmap` threshold: ``MappedBuffer`` says why that matters).
    /// Throws when `source` is shorter than `range`'s end (the file changed while in use).
    static func copy(
        _ source: Int32, _ range: Range<Int>, path: String, to out: Int32, at outPath: String, system: FileSystemCalls
    ) throws {
        var buffer = [UInt8](repeating: 0, count: min(range.count, 64 << 10))
        var at = range.lowerBound
        while at < range.upperBound {
            let count = min(buffer.count, range.upperBound - at)
            let read = buffer.withUnsafeMutableBytes { readFully(source, into: $0.baseAddress!, count: count, at: at) }
            if read < 0 { throw RuleStoreError.io(path: path, operation: "read", errno: errno) }
            guard read == count else {
                throw RuleStoreError.corrupt(
                    path: path, offset: at, reason: "the file changed while in use", keptAt: nil)
            }
            try buffer.withUnsafeBytes {
                try writeFully(out, UnsafeRawBufferPointer(rebasing: $0[..<count]), path: outPath, system: system)
            }
            at += count
        }
    }

    /// Renames a compacted file (`newIdentity`, `size` bytes) over the file. Shared: the
    /// counters move before the rename, so that a process killed in between has moved them and
    /// the others look at the file (a needless look when the rename failed); the new file is
    /// recorded before the rename too, and put back when it fails: a process killed in between
    /// leaves the path naming the old file, which the others keep using. `.failed` (with
    /// `errno`) when the rename failed.
    ///
    /// `swapping`: the two names' files are swapped where the system can
    /// (``FileSystemCalls/exchangePaths(_:_:)``), so that the old file is left at `temporary`
    /// for the caller to remove once the store's lock is let go; a rename where it cannot (a
    /// file system without the call, or no file at the path any more).
    private func renameCompacted(
        _ temporary: String, _ newIdentity: FileIdentity, size: Int, swapping: Bool = false
    ) -> NamesSwitched {
        let recorded = region?.recordedFile
        if let region {
            region.advance(replaced: true)
            region.recordedFile = newIdentity
            region.durableLength = size
            region.faultNotice = (0, 0)
        }
        if swapping && system.exchange(temporary, realPath) == 0 { return .swapped }
        guard system.rename(temporary, realPath) == 0 else {
            let code = errno
            region?.recordedFile = recorded
            region?.durableLength = fileLength
            errno = code
            return .failed
        }
        return .renamed
    }

    /// How ``renameCompacted(_:_:size:swapping:)`` put a compacted file in place.
    enum NamesSwitched {
        /// Nothing moved (`errno` says why).
        case failed
        /// Renamed over the old file.
        case renamed
        /// Swapped with the old file, which now lies at the new file's former name.
        case swapped
    }

    /// A background compaction dropped: a file cut short under it is left to the next append's
    /// look at the path (which writes it again from memory and reports that instead); any
    /// other failure is reported by the next `apply`.
    private func noteDropped(_ error: RuleStoreError?) {
        if case .corrupt = error {
            lastIdentityCheck = 0
            lastPathCheck = 0
        } else if let error {
            backgroundError = error
        }
    }

    // MARK: - In the background (shared files)

    /// Where a shared file's background compaction by this store writes: a name of the
    /// process's own (its id) and the store's (a number), beside the file.
    static func sharedCompactingPath(_ path: String) -> String {
        "\(path).compacting-\(getpid())-\(compactionNames.next())"
    }
    static let compactionNames = Counter()

    /// Removes the new files of shared compactions whose process is gone (killed while
    /// compacting), and those untouched for an hour (a process suspended that long drops its
    /// compaction: it renames only a file still at its name). Run off the caller's path.
    static func removeDeadCompactions(beside path: String) {
        let directory = (path as NSString).deletingLastPathComponent
        let prefix = (path as NSString).lastPathComponent + ".compacting-"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.isEmpty ? "." : directory)
        else { return }
        let now = time(nil)
        for name in names where name.hasPrefix(prefix) {
            let full = (directory as NSString).appendingPathComponent(name)
            let fields = name.dropFirst(prefix.count).split(separator: "-")
            guard let pid = fields.first.flatMap({ Int32($0) }) else { continue }
            var info = stat()
            let stale = stat(full, &info) == 0 && now - info.st_mtim.tv_sec > 3_600
            if (pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH) || stale { unlink(full) }
        }
    }

    /// Under both locks, in an append of a shared file: switches to the file a background
    /// compaction wrote once it is ready, copying the records appended since its last round
    /// (this process's and others', all read by now), as ``compactLocked(appending:)`` does in
    /// place; drops it when the file changed meanwhile (another process compacted first, or
    /// something outside replaced or cut the file).
    func finishSharedCompaction() {
        guard let ready = readyCompaction, let region else { return }
        readyCompaction = nil
        compacting = false
        func drop(_ error: RuleStoreError?) {
            ready.discard(self.system)
            noteDropped(error)
        }
        guard ready.failure == nil, ready.startedIn == generation, fd >= 0, !contentsUnknown else {
            return drop(ready.failure)
        }
        let out = ready.out
        if let error = copyAppended(from: ready.copied, to: out, at: ready.temporary) { return drop(error) }
        // Renamed only while its name still holds it (an hour-old one may have been removed).
        guard let newIdentity = FileIdentity(descriptor: out), FileIdentity(path: ready.temporary) == newIdentity
        else { return drop(nil) }
        let size = Int(lseek(out, 0, SEEK_END))
        let switched = renameCompacted(ready.temporary, newIdentity, size: size, swapping: true)
        if switched == .failed { return drop(.io(path: ready.temporary, operation: "rename", errno: errno)) }
        let replaced = switchToCompacted(out, newIdentity, length: size, liveBytes: ready.liveSize)
        let directory = (realPath as NSString).deletingLastPathComponent
        let system = self.system
        // The old file, at the new one's former name when swapped (a name of this process's
        // own), is removed and closed off the caller's path.
        let oldName = switched == .swapped ? ready.temporary : nil
        compactionQueue.async {
            if let oldName { unlink(oldName) }
            close(replaced)
            _ = system.syncDirectory(directory.isEmpty ? "." : directory)
        }
        seenGeneration = region.generation
        if !engineBehind { seenSequence = region.sequence }
        appendedInCall = true
    }

    #if canImport(Glibc)
        /// glibc's `malloc_trim`, looked up at run time (absent from other C libraries).
        private static let mallocTrim: (@convention(c) (Int) -> Int32)? = dlsym(
            nil, "malloc_trim"
        ).map { unsafeBitCast($0, to: (@convention(c) (Int) -> Int32).self) }
    #endif

    /// Returns memory the C allocator holds freed to the system, where it can (glibc); called
    /// off the caller's path, once a background compaction has written its snapshot (memory per
    /// stream at 100,000 streams right after the last trigger: 107-127 B with it, 117-145 B
    /// without, 8 runs each; idle, 107 B against 117 B; the goal is 150 B).
    static func releaseFreedMemory() {
        #if canImport(Glibc)
            _ = mallocTrim?(0)
        #endif
    }
}

/// A compaction written in the background and ready for the switch (a shared file's waits
/// for this process's next append).
struct ReadyCompaction {
    let out: Int32
    let temporary: String
    /// Where the copy of later records stopped.
    let copied: Int
    let startedIn: Int
    let liveSize: Int
    let failure: RuleStoreError?

    /// Closes (through the store's system calls) and removes the new file, while the name is
    /// still this file's.
    func discard(_ system: FileSystemCalls) {
        guard out >= 0 else { return }
        if FileIdentity(descriptor: out) == FileIdentity(path: temporary) { unlink(temporary) }
        _ = system.close(out)
    }
}
