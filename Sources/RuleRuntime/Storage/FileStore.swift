import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An append-only state file: a header, then one checksummed record per engine call
/// (the format: `RecordFormat`, and grammar.md, "The state file").
///
/// Durability: every `apply` hands its record to the kernel with `write(2)` before returning,
/// so it survives the process being killed at any moment after that (the kernel owns the page
/// cache). It does not `fsync` unless `syncEveryWrite` is set, so a power loss may lose the
/// last seconds. One invariant holds the file together: the length the store believes is on
/// disk (every acknowledged record, nothing else) advances only when a write succeeded and,
/// with `syncEveryWrite`, only when its `fsync` did. A failed write is cut off again; after a
/// failed `fsync` the file's contents are unknown, so it is rewritten from the acknowledged
/// records and the record in hand (the error is still reported, through ``RuleEngine/lastStoreError``).
///
/// Two modes:
/// - **Exclusive** (the default): one process owns the file and holds its lock while open;
///   compaction runs on a background queue. Never put an exclusive file in an App Group
///   container: iOS terminates a suspended app that holds a file lock there (0xdead10cc).
/// - **Shared** (``Options/shared``): any number of processes (an app, its widget, its
///   extensions) open the same file. No process holds a lock between calls: the lock (of
///   `PATH.shm`, `SharedRegion`) is taken for the span of one call's append (which may
///   switch to a file compacted in the background), and let go before the call returns,
///   across no callback and no `await`.
///   Each call first reads a counter the processes share in memory and, when another process
///   wrote, reads their records; an append that finds the file changed since the call began
///   lets the engine read it and answer again, so a budget is never spent twice.
///
/// Damage: a record cut short at the end of the file (its writer was killed, so its call never
/// returned), or a tail of zero bytes (what a power loss can leave), is dropped before the next
/// write; the dropped bytes are copied aside to `NAME.damaged-TIME` when they are not all zero.
/// A damaged record elsewhere is corruption: with `.strict` (the default) `load` throws
/// ``RuleStoreError/corrupt(path:offset:reason:keptAt:)`` and leaves the file untouched; with
/// `.salvage` it keeps what precedes the damage, links the damaged file aside and says so in
/// ``recoveryReport``. Nothing is rewritten before the engine has decoded every entry.
///
/// `@unchecked Sendable`: its 30 changing fields (the descriptor, lengths, counters, the shared
/// region) are read and written under `lock` (and, shared, the file's lock), which the compiler
/// cannot see, with one exception that pays: `endCall()` reads whether the call appended or
/// took the file's lock without taking `lock`, since only the call's own thread sets them and
/// the engine's lock orders the calls. Taking `lock` there too (what a `Protected` value would
/// make every read do) read `try_shared_vs_limit` 1.31/1.22/1.63x against 1.15/1.15/1.05x,
/// three interleaved pairs of `rulebench shared`, 2026-11-28. The file's lock is also held from
/// a call's append to its `endCall()`, across methods, which a scoped `withLock` cannot express.
public final class FileStore: RuleStore, RecordStore, @unchecked Sendable {
    /// The format version this library writes.
    public static let formatVersion: UInt32 = RecordFormat.version
    /// The largest state file accepted, in bytes (256 MiB); a larger one is refused unread.
    public static let maximumFileSize = RecordFormat.maximumFileSize

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
        /// Compact when the file is larger than this many bytes and twice its live data. Unless
        /// set, 6 MiB for an exclusive file and 4 MiB for a shared one.
        ///
        /// A file compacts in the background, but each compaction's `fsync` and rename still
        /// slow the appends of the moment (about twenty calls each): 6 MiB keeps them out of
        /// the 99.9th percentile of an exclusive file's trigger (rulebench
        /// `trigger_file_p999_vs_write`, one `write(2)` = 1x: 3.0-3.5x at 1 MiB, 1.18-2.20x at
        /// 4 MiB, 1.13-1.15x at 6 MiB), for at most 6 MiB replayed at an engine's start (about
        /// 3 ms here, 0.55 ms for 1 MiB). A shared file: 4 MiB (rulebench
        /// `trigger_shared_vs_write`, three runs against a build at 1 MiB in the same minutes:
        /// 2.17-2.41x against 2.70-2.80x); the others then read the compacted file, its live
        /// data only.
        public var compactionThreshold: Int {
            get { chosenThreshold ?? (shared ? 4 << 20 : 6 << 20) }
            set { chosenThreshold = newValue }
        }
        private var chosenThreshold: Int?
        /// Share the file with other processes (an app and its extensions, the file in an App
        /// Group container): no lock is held between calls, and every call sees every write any
        /// process acknowledged before it began. Every process must open the file shared.
        public var shared = false

        /// Options: see each property.
        public init(
            syncEveryWrite: Bool = false, recovery: Recovery = .strict, compactionThreshold: Int? = nil,
            shared: Bool = false
        ) {
            self.syncEveryWrite = syncEveryWrite
            self.recovery = recovery
            self.chosenThreshold = compactionThreshold
            self.shared = shared
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
    var report: String?

    /// How many times the file has been compacted since it was opened.
    public var compactions: Int {
        lock.lock()
        defer { lock.unlock() }
        return compactionCount
    }
    var compactionCount = 0
    /// Records handed to `write(record:)` that got as far as writing (``recordsTaken``).
    var taken = 0
    /// How many times the open file was read whole (opening, reopening after another
    /// process's compaction, a conflicting append): the tests hold conflicts to none.
    var wholeReads = 0
    /// How many times opening waited for other processes to write the file again (tests).
    var restoreWaits = 0
    /// The format version of the file as loaded (``formatVersion`` once rewritten).
    var loadedVersion = RecordFormat.version

    let lock = NSLock()
    let system: FileSystemCalls
    /// The open file: its descriptor, durable length, identity and generation, changed only
    /// through its methods (``OpenStateFile``).
    var file = OpenStateFile()
    var fd: Int32 { file.descriptor }
    /// The path with symbolic links resolved at open: compaction writes beside the real file.
    var realPath = ""
    /// Exclusive: the resolved path this store holds locked, listed in ``ProcessHolds`` until
    /// the store is released.
    var heldPath: String?
    var identity: FileIdentity { file.identity }
    /// The entries `load` read, kept only until the engine has decoded them (``didLoad()``) or
    /// the first write: the engine holds the state, so the store keeps no second copy.
    var loaded: StoredEntries?
    /// The durable length: the header and every acknowledged record, nothing after them.
    var fileLength: Int { file.length }
    /// True after a failure left bytes of unknown durability after `fileLength` (a failed
    /// `fsync`, a failed cut-off): the file is rewritten before anything is appended.
    var contentsUnknown = false
    /// The bytes of live data when the file was last loaded or compacted: compaction starts
    /// when the file has grown past twice that (and the threshold).
    var liveBytes = 0
    /// The largest the file may grow by an append: ``maximumFileSize``, smaller in tests.
    var sizeLimit = RecordFormat.maximumFileSize
    /// How many times over the threshold (and twice as many times its live data) a file grows
    /// before it compacts in place, a background compaction in flight or not: 4 (a test of the
    /// background compaction's rounds raises it, so that a compaction it holds back stays there).
    var burstFactor = 4
    var pending: Repair?
    /// Compactions run here, off the caller's path.
    let compactionQueue = DispatchQueue(label: "rules.FileStore.compaction", qos: .utility)
    var compacting = false
    /// Shared: a background compaction's new file, switched to at the next append.
    var readyCompaction: ReadyCompaction?
    /// Changes whenever the open file changes, so a compaction of an older file is dropped.
    var generation: Int { file.generation }
    /// A background compaction's failure, reported by the next `apply`.
    var backgroundError: RuleStoreError?
    var lastIdentityCheck: UInt64 = 0
    /// When the path was last looked at (``checkFile(lookingAtPath:)``), on ``checkClock()``.
    var lastPathCheck: UInt64 = 0

    // MARK: Shared mode

    /// How often, at most, an append checks that the path still names the open file and that
    /// the file is as long as its acknowledged records (1 ms, in uptime nanoseconds, read from
    /// a coarse clock: see ``checkClock()``): every append of an app's calls, seconds apart,
    /// and one a tick of that clock in a loop (an `fstat` and a `stat` on each append would cost
    /// about half a file trigger here).
    static let checkInterval: UInt64 = 1_000_000

    /// How often, at most, that check also looks at the path (50 ms): a `stat` of a path
    /// walks it, and after the milliseconds of appends between two checks it took 8-10 µs here
    /// against 2-3 µs for the `fstat` of the open file (a C loop of appends, one look a tick;
    /// rulebench `trigger_file_p999_vs_write`: 62% of the appends that made the pair took over
    /// 12.8 µs). In between, the `fstat` alone finds the file deleted, replaced by a rename over
    /// its name (either leaves it without a link) or cut short; what only the path shows (the
    /// file renamed away, or replaced while another name links it) is found within 50 ms.
    static let pathCheckInterval: UInt64 = 50_000_000

    /// The clock the identity check's interval is read from. Linux: the coarse monotonic clock
    /// (it moves a tick at a time, 1-4 ms by the kernel's configuration; read without the
    /// time-stamp counter, it took about a fifth of the precise clock's 25-30 ns here, which is
    /// 2-3% of a file trigger). Elsewhere: `DispatchTime`, whose uptime clock is already cheap.
    @inline(__always)
    static func checkClock() -> UInt64 {
        #if os(Linux)
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC_COARSE, &now)
            return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
        #else
            return DispatchTime.now().uptimeNanoseconds
        #endif
    }

    /// The lock and counters shared with other processes (shared mode only).
    var region: SharedRegion?
    /// The region's counters as of the state the engine holds.
    var seenSequence: UInt64 = 0
    var seenGeneration: UInt64 = 0
    /// True when the store read records the engine has not taken in (a compaction caught up
    /// with other processes): the engine reads the whole file at its next call.
    var engineBehind = false
    /// True while this process holds the region's lock: from an engine call's first append
    /// to ``endCall()``.
    var holdsLock = false
    /// True when ``checkFile()`` found the region's file deleted, replaced or cut short: the
    /// next ``lockRegion()`` opens it again from its path.
    var regionDetached = false
    /// True when this call appended (the change is then posted to other processes).
    var appendedInCall = false
    /// True once this store appended a record.
    var appendedSinceOpen = false

    /// What `load` found that the first write must repair.
    enum Repair {
        /// Drop the bytes from `offset` on (a torn or zero-filled tail).
        case truncate(offset: Int, reason: String, tail: [UInt8])
        /// Link the damaged file aside and rewrite it from the loaded entries.
        case salvage(offset: Int, reason: String)
    }

    /// A store in the conventional place for app data that is not the user's documents:
    /// `Application Support/<bundle identifier>/<name>` on Apple platforms (the app's
    /// container on iOS), `$XDG_DATA_HOME` or `~/.local/share` on Linux, with the bundle
    /// identifier (or the process name) as a folder. The folders are created at first open, so
    /// a fresh install works. Pass your own URL to ``init(url:options:)`` for an App Group
    /// container (with ``Options/shared``) or another protection class.
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
        if fd >= 0 {
            // The file deleted or replaced since the last check (appends look at most once a
            // millisecond, at the path every 50 ms): written again, so nothing acknowledged is
            // lost at release.
            lock.lock()
            _ = try? withFileLock { try recreateIfReplaced() }
            lock.unlock()
        }
        if let region, holdsLock || (try? region.lock()) != nil {
            region.unregister()
            region.unlock()
        }
        if fd >= 0 { _ = system.close(fd) }
        if let heldPath { ProcessHolds.letGo(heldPath) }
        readyCompaction?.discard(system)
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
        return try withFileLock { try readAll() }
    }

    /// Exclusive: a second descriptor of the open file and its durable length, taken under the
    /// store's lock; the closure reads and replays those bytes without it. The store never
    /// changes bytes it acknowledged: it appends after them, and a compaction or a rewrite
    /// writes another file and renames it into place, which the descriptor does not follow. A
    /// file cut short by something else meanwhile is an error (the engine then reads again).
    /// Shared, or with entries still held from `load`: those entries, read now.
    func entriesReader() throws -> (taken: Int, read: () throws -> StoredEntries) {
        lock.lock()
        defer { lock.unlock() }
        try openIfNeeded()
        if region != nil || loaded != nil || contentsUnknown || pending != nil {
            let entries = try loaded ?? withFileLock { try readAll() }
            return (taken, { entries })
        }
        // A descriptor of its own, opened by name and checked to be the open file: a `dup` would
        // share the store's lock and keep it while the swap reads, after the store is released.
        let copy = open(realPath, O_RDONLY | O_CLOEXEC)
        guard copy >= 0, FileIdentity(descriptor: copy) == identity else {
            if copy >= 0 { close(copy) }
            let entries = try withFileLock { try readAll() }
            return (taken, { entries })
        }
        let (length, path) = (fileLength, path)
        return (
            taken,
            {
                defer { close(copy) }
                let (bytes, index) = try FileStore.replayFile(copy, length: length, path: path)
                return StoredEntries(bytes: bytes, index: index)
            }
        )
    }

    var recordsTaken: Int { lock.withLock { taken } }

    /// True when the file is not open yet and large (from 256 KiB): worth reading on another
    /// thread while an engine checks its rules (``loadEntries()`` then returns what was read).
    var worthLoadingEarly: Bool {
        var info = stat()
        return lock.withLock { fd < 0 && loaded == nil } && stat(path, &info) == 0 && info.st_size >= 256 * 1024
    }

    /// Repairs what `load` found (a torn tail, a salvaged file, an old format);
    /// the engine calls it once it has decoded every entry.
    public func didLoad() throws {
        lock.lock()
        defer { lock.unlock() }
        try openIfNeeded()
        try withFileLock {
            // Shared: another process may have written (and repaired) since `load`.
            if region != nil, try changedSinceSeen() { pending = nil } else { try repairIfNeeded() }
        }
        loaded = nil
    }

    // MARK: - Writing

    public func apply(_ changes: [StoreChange]) throws {
        if changes.isEmpty { return }
        var record = RecordFormat.record(changes)
        defer { endCall() }
        do {
            try record.withUnsafeMutableBytes { try append(record: $0) }
        } catch is StoreConflict {
            // Called directly, not by an engine: what other processes wrote needs no merging
            // with a state held here; the record goes after it (the lock is still held).
            lock.lock()
            let caughtUp = Result { try readChanges() }
            lock.unlock()
            _ = try caughtUp.get()
            try record.withUnsafeMutableBytes { try append(record: $0) }
        }
    }

    /// Frames the engine's record of one call (``ChangeRecord``) in place and writes it.
    func append(record bytes: UnsafeMutableRawBufferPointer) throws {
        RecordFormat.frame(bytes)
        try write(record: UnsafeRawBufferPointer(bytes))
    }

    /// Appends one framed record. Shared: takes the region's lock until ``endCall()``, and
    /// throws ``StoreConflict`` (writing nothing) when another process wrote since the engine
    /// last read the file.
    private func write(record: UnsafeRawBufferPointer) throws {
        lock.lock()
        defer { lock.unlock() }
        try openIfNeeded()
        if region != nil {
            if !holdsLock {
                try lockRegion()
                holdsLock = true
            }
            if try changedSinceSeen() { throw StoreConflict() }
        }
        try repairIfNeeded()
        // A cheap look, at most once a millisecond (a tick), for the file deleted, replaced or
        // cut short; at the path only every 50 ms.
        var replaced: RuleStoreError?
        let clock = FileStore.checkClock()
        if clock &- lastIdentityCheck > FileStore.checkInterval {
            replaced = try recreateIfReplaced(lookingAtPath: clock &- lastPathCheck > FileStore.pathCheckInterval)
        }
        if contentsUnknown { try compactLocked() }
        // Never acknowledge a record that would leave a file too large to open again: compact
        // first (in place, under this call's lock), and refuse the record if even the live
        // entries and it do not fit.
        if fileLength + record.count > sizeLimit {
            try compactLocked()
            if fileLength + record.count > sizeLimit {
                throw RuleStoreError.io(path: path, operation: "write", errno: EFBIG)
            }
        }
        // Shared: counted before it is written, so that a writer killed mid-write leaves the
        // count moved and the others look at (and cut off) what it left.
        noteAppend()
        taken += 1
        do {
            try writeFully(record)
        } catch {
            // Never leave part of a record behind a later one.
            cutBack()
            throw error
        }
        if options.syncEveryWrite, system.fsync(fd) != 0 {
            let failure = RuleStoreError.io(path: path, operation: "fsync", errno: errno)
            // What reached the disk is unknown now: rewrite the file from the acknowledged
            // records and this one. Reported either way; the change is in memory.
            contentsUnknown = true
            try? compactLocked(appending: record)
            throw failure
        }
        file.acknowledge(appended: record.count)
        if let region, region.recordedFile == identity { region.durableLength = fileLength }
        // What load returned is stale now; a later load replays the file.
        loaded = nil
        let threshold = options.compactionThreshold
        if readyCompaction != nil {
            finishSharedCompaction()
        } else if fileLength > threshold && fileLength > 2 * liveBytes {
            // In place, under the lock this call holds, when the file is four times over
            // (a burst of appends outgrows the background compaction, or compactions keep
            // being dropped; not twice: in a loop of appends a file grows by more than the
            // threshold while one is written and synced), and, shared, when the file was over
            // the threshold before this store's first append (a process that calls a few times
            // and exits, such as a widget's, would let every background compaction go with
            // it); otherwise in the background. Nothing more while one runs: the look at the
            // path costs two system calls, on every append of a compaction's seconds.
            let inPlace =
                (region != nil && !appendedSinceOpen)
                || (fileLength > burstFactor * threshold && fileLength > 2 * burstFactor * liveBytes)
            if inPlace || !compacting {
                if let error = try recreateIfReplaced() {
                    replaced = error
                } else if inPlace {
                    try compactLocked()
                } else {
                    startCompaction()
                }
            }
        }
        appendedSinceOpen = true
        if let error = backgroundError {
            backgroundError = nil
            replaced = replaced ?? error
        }
        if let replaced { throw replaced }
    }

    /// Tells other processes about an append (under the region's lock).
    private func noteAppend() {
        guard let region else { return }
        region.advance()
        seenSequence = region.sequence
        appendedInCall = true
    }

    /// Cuts the file back to its durable length after a failed write; when even that fails,
    /// the file is rewritten before the next append.
    func cutBack() {
        if system.truncate(fd, off_t(fileLength)) != 0 { contentsUnknown = true }
    }

    /// Writes the engine's whole state (`image`) to a new file at the path, over what survives
    /// in the open one, after ``StoreNeedsRestore``; the lock an append took is still held.
    func restore(from image: [StoreChange]) throws {
        lock.lock()
        defer { lock.unlock() }
        try openIfNeeded()
        try withFileLock { try restore(image: image) }
    }

    /// Checks that the path still names the open file; when it does not (deleted or
    /// replaced), writes the state from memory to a new file there and returns the report.
    public func verify() throws {
        lock.lock()
        defer { lock.unlock() }
        try openIfNeeded()
        try withFileLock {
            if let error = try recreateIfReplaced() { throw error }
        }
    }

    /// Rewrites the file as one record of the live entries.
    public func compact() throws {
        lock.lock()
        defer { lock.unlock() }
        try openIfNeeded()
        try withFileLock {
            if region != nil, try changedSinceSeen() {
                // Shared: compacts what the file holds now; this process reads it at its next call.
                try catchUp()
            }
            try repairIfNeeded()
            if let error = try recreateIfReplaced() { throw error }
            try compactLocked()
        }
    }
}
