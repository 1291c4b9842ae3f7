internal import CRegionGuard
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// `PATH.shm`, beside a state file opened shared: the lock every process takes for one
/// append or one compaction step, and two counters mapped into each process's memory.
///
/// - `sequence` grows by one with every append and every compaction, so a process tells
///   "another process wrote" by one memory load at the start of a call, with no system call;
/// - `generation` grows by one whenever the state file is replaced (compacted or rewritten),
///   so a process tells "read the new records" from "reopen and read the file again".
///
/// Both are written only under the lock, with aligned 8-byte stores (single-copy atomic on
/// every 64-bit platform Swift runs on); the lock orders them against the file's writes. They
/// are hints: the state file's records are the truth, and a region that is lost or zeroed
/// only makes processes read the file again. Writers move them *before* they write or rename,
/// so a process killed in between leaves them moved and the others look at the file.
///
/// The lock: on Linux a process-shared, robust `pthread_mutex_t` in the page (no system call
/// when nobody else holds it; when its holder dies, the kernel hands it to the next process,
/// which moves both counters so that everyone looks at the file). Elsewhere (Apple platforms
/// have no robust mutexes) `flock` on the region's file, held per open file, not per process.
/// Either way it is never held across a call, and the region's file is never replaced or
/// removed, so the lock outlives compactions of the state file.
final class SharedRegion {
    static let size = 4096
    #if canImport(Glibc)
        /// "RULESHM2", little-endian: a region with the mutex at ``mutexOffset``.
        static let magic: UInt64 = 0x324D_4853_454C_5552
    #else
        /// "RULESHM1", little-endian.
        static let magic: UInt64 = 0x314D_4853_454C_5552
    #endif
    /// Where the mutex lives in the page (Linux).
    static let mutexOffset = 64
    let path: String
    let descriptor: Int32
    /// The mapped page: a raw pointer because the page is shared with other processes (a load
    /// of `sequence` is the whole cost of an unchanged shared call: rulebench
    /// `try_shared_vs_limit`, where an `fstat` per call would cost more than the call; and the
    /// mutex in it makes a lock and unlock ~10 ns where a `flock` pair is ~760 ns, beside a
    /// ~880 ns `write(2)`: rulebench `trigger_shared_vs_write`).
    private let base: UnsafeMutableRawPointer

    /// Opens (creating when missing, unless `create` is false: then nil when missing) and maps
    /// the region beside the state file at `statePath`.
    ///
    /// The region's file has a second name, `PATH.shm.keep`: when `PATH.shm` was deleted or
    /// replaced by something else while processes hold the region, an opener puts the name
    /// back on the file they hold (instead of making a second lock beside theirs).
    init?(statePath: String, create: Bool = true) throws {
        path = statePath + ".shm"
        let keep = path + ".keep"
        SharedRegion.restoreName(path, from: keep)
        descriptor = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0o644)
        if descriptor < 0 && !create && errno == ENOENT { return nil }
        guard descriptor >= 0 else { throw RuleStoreError.io(path: path, operation: "open", errno: errno) }
        if FileIdentity(path: keep) != FileIdentity(descriptor: descriptor) {
            unlink(keep)
            link(path, keep)
        }
        var failure: RuleStoreError?
        // Sized and stamped under the file's lock, once, by whichever process comes first.
        if flock(descriptor, LOCK_EX) != 0 {
            failure = .io(path: path, operation: "lock", errno: errno)
        } else {
            var info = stat()
            if fstat(descriptor, &info) != 0 {
                failure = .io(path: path, operation: "stat", errno: errno)
            } else if Int(info.st_size) < SharedRegion.size && ftruncate(descriptor, off_t(SharedRegion.size)) != 0 {
                failure = .io(path: path, operation: "size", errno: errno)
            }
        }
        let mapped =
            failure == nil
            ? mmap(nil, SharedRegion.size, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0) : nil
        guard failure == nil, let mapped, mapped != MAP_FAILED else {
            let error = failure ?? .io(path: path, operation: "map", errno: errno)
            close(descriptor)
            throw error
        }
        base = mapped
        // A load or store there after something cut the file short finds zeros, not SIGBUS.
        rules_guard_region(base, SharedRegion.size)
        if base.load(as: UInt64.self) != SharedRegion.magic {
            base.storeBytes(of: 0, toByteOffset: 8, as: UInt64.self)
            base.storeBytes(of: 0, toByteOffset: 16, as: UInt64.self)
            #if canImport(Glibc)
                var attributes = pthread_mutexattr_t()
                pthread_mutexattr_init(&attributes)
                pthread_mutexattr_setpshared(&attributes, Int32(PTHREAD_PROCESS_SHARED))
                pthread_mutexattr_setrobust(&attributes, Int32(PTHREAD_MUTEX_ROBUST))
                pthread_mutex_init(mutex, &attributes)
                pthread_mutexattr_destroy(&attributes)
            #endif
            base.storeBytes(of: SharedRegion.magic, as: UInt64.self)
        }
        flock(descriptor, LOCK_UN)
    }

    deinit {
        rules_unguard_region(base)
        munmap(base, SharedRegion.size)
        close(descriptor)
    }

    /// Puts the name `path` back on the region's file, named `keep` too, when it names another
    /// file or none.
    private static func restoreName(_ path: String, from keep: String) {
        guard let kept = FileIdentity(path: keep), FileIdentity(path: path) != kept else { return }
        let temporary = path + ".relink-\(getpid())"
        unlink(temporary)
        guard link(keep, temporary) == 0 else { return }
        if rename(temporary, path) != 0 { unlink(temporary) }
    }

    /// True while the page holds a region: false once something cut the file short (the guard
    /// put zeros in its place).
    var isIntact: Bool { base.load(as: UInt64.self) == SharedRegion.magic }

    /// True when the region's file is no longer at its path (deleted or replaced) or was cut
    /// short: a process opening now would not share it. Two system calls.
    var isDetached: Bool {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return true }
        return Int(info.st_size) < SharedRegion.size
            || FileIdentity(path: path) != FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    #if canImport(Glibc)
        private var mutex: UnsafeMutablePointer<pthread_mutex_t> {
            (base + SharedRegion.mutexOffset).assumingMemoryBound(to: pthread_mutex_t.self)
        }
    #endif

    /// Grows with every append and compaction by any process.
    var sequence: UInt64 {
        @inline(__always) get { base.load(fromByteOffset: 8, as: UInt64.self) }
    }

    /// Grows whenever the state file is replaced.
    var generation: UInt64 { base.load(fromByteOffset: 16, as: UInt64.self) }

    /// The file every process should use (device and inode; nil until a process recorded it, as
    /// in a region made by an earlier release): written by whoever creates, compacts or restores
    /// the state file, under the lock. A path naming any other file (or none) was replaced or
    /// deleted by something else, never by a process of this library.
    var recordedFile: FileIdentity? {
        get {
            let device = base.load(fromByteOffset: 24, as: UInt64.self)
            let inode = base.load(fromByteOffset: 32, as: UInt64.self)
            return device == 0 && inode == 0 ? nil : FileIdentity(device: device, inode: inode)
        }
        set {
            base.storeBytes(of: newValue?.device ?? 0, toByteOffset: 24, as: UInt64.self)
            base.storeBytes(of: newValue?.inode ?? 0, toByteOffset: 32, as: UInt64.self)
        }
    }

    /// The recorded file's durable length (every acknowledged record), as of the last append or
    /// compaction of any process: a file found shorter was truncated by something else.
    var durableLength: Int {
        get { Int(base.load(fromByteOffset: 40, as: UInt64.self)) }
        set { base.storeBytes(of: UInt64(newValue), toByteOffset: 40, as: UInt64.self) }
    }

    /// A fault (the file deleted, replaced or cut short) noticed by a process that cannot write
    /// the file again itself: the sequence as of the notice (whoever read up to it holds every
    /// acknowledged record in memory) and when, in uptime nanoseconds. Zero: none pending.
    var faultNotice: (sequence: UInt64, since: UInt64) {
        get { (base.load(fromByteOffset: 48, as: UInt64.self), base.load(fromByteOffset: 56, as: UInt64.self)) }
        set {
            base.storeBytes(of: newValue.sequence, toByteOffset: 48, as: UInt64.self)
            base.storeBytes(of: newValue.since, toByteOffset: 56, as: UInt64.self)
        }
    }

    /// Where the table of the processes that hold the state file open shared begins: one
    /// 8-byte slot per open store, its process id (0: free), to the end of the page.
    static let holdersOffset = 512

    /// Under the lock: takes a slot for a store of this process (one whose process is gone is
    /// taken over). False when every slot is held by a live process.
    func register() -> Bool {
        let own = UInt64(getpid())
        for offset in stride(from: SharedRegion.holdersOffset, to: SharedRegion.size, by: 8) {
            let holder = base.load(fromByteOffset: offset, as: UInt64.self)
            if holder == 0 || !SharedRegion.isAlive(holder) {
                base.storeBytes(of: own, toByteOffset: offset, as: UInt64.self)
                return true
            }
        }
        return false
    }

    /// Under the lock: gives back one slot of this process.
    func unregister() {
        let own = UInt64(getpid())
        for offset in stride(from: SharedRegion.holdersOffset, to: SharedRegion.size, by: 8)
        where base.load(fromByteOffset: offset, as: UInt64.self) == own {
            base.storeBytes(of: 0, toByteOffset: offset, as: UInt64.self)
            return
        }
    }

    /// Gives back one slot of this process, when the page still holds the region.
    func unregisterIfIntact() {
        if isIntact { unregister() }
    }

    /// Under the lock: the live processes holding the file open shared (this one included).
    var holders: [Int32] {
        stride(from: SharedRegion.holdersOffset, to: SharedRegion.size, by: 8).compactMap {
            let holder = base.load(fromByteOffset: $0, as: UInt64.self)
            return holder != 0 && SharedRegion.isAlive(holder) ? Int32(truncatingIfNeeded: holder) : nil
        }
    }

    /// Under the lock, after this store registered: true when another store (of another
    /// process, or another of this one) holds the file open shared. A system call per slot taken.
    var heldByOthers: Bool { holders.count > 1 }

    /// Under the lock: notes a fault (the file deleted, replaced or cut short) that no process
    /// noted yet, as of the sequence now, and moves the sequence, so that every process looks at
    /// the file at its next call.
    func noteFault() {
        guard faultNotice.sequence == 0 else { return }
        faultNotice = (sequence, DispatchTime.now().uptimeNanoseconds)
        advance()
    }

    private static func isAlive(_ pid: UInt64) -> Bool {
        guard pid <= UInt64(Int32.max) else { return false }
        return kill(Int32(pid), 0) == 0 || errno == EPERM
    }

    /// Under the lock: one more append (or, with `replaced`, a new file).
    func advance(replaced: Bool = false) {
        if replaced { base.storeBytes(of: generation &+ 1, toByteOffset: 16, as: UInt64.self) }
        base.storeBytes(of: sequence &+ 1, toByteOffset: 8, as: UInt64.self)
    }

    /// Takes the lock, waiting for the process that holds it (for one append at most). Unlock
    /// it on the thread that took it.
    func lock() throws {
        #if canImport(Glibc)
            let result = pthread_mutex_lock(mutex)
            if result == EOWNERDEAD {
                // Its holder died in the middle of an append or a compaction step: whatever it
                // left, every process looks at the file (and reopens it) at its next call.
                pthread_mutex_consistent(mutex)
                advance(replaced: true)
            } else if result != 0 {
                throw RuleStoreError.io(path: path, operation: "lock", errno: result)
            }
        #else
            while flock(descriptor, LOCK_EX) != 0 {
                if errno == EINTR { continue }
                throw RuleStoreError.io(path: path, operation: "lock", errno: errno)
            }
        #endif
    }

    func unlock() {
        #if canImport(Glibc)
            pthread_mutex_unlock(mutex)
        #else
            flock(descriptor, LOCK_UN)
        #endif
    }
}

/// Tells a process that another one wrote the state file, so that ``RuleEngine/updates(for:)-(Scenario)``
/// streams yield without waiting for the process's next call.
///
/// On Apple platforms through a Darwin notification named after the file (no payload: every
/// shared append posts it, and observers read the file again). On Linux through `inotify` on
/// the file's directory (an append modifies the file; a compaction moves a new one to its name).
/// Elsewhere nothing is watched: changes show at the next call.
///
/// `@unchecked`: what it holds besides its `Sendable` handler (a dispatch source, a Darwin
/// notification's name) is not `Sendable` in the SDKs, and is set once, in `init`, and used in
/// `deinit`. Nothing to measure: the checked form cannot hold either.
final class ChangeWatcher: @unchecked Sendable {
    private let handler: @Sendable () -> Void
    #if canImport(Glibc)
        private var source: DispatchSourceRead?
    #elseif canImport(Darwin)
        private var name: CFNotificationName?
    #endif

    /// The notification name of the state file at `realPath`.
    static func notificationName(_ realPath: String) -> String { "rules.state.changed:" + realPath }

    /// Posts the change of the state file at `realPath` (Apple platforms; a no-op elsewhere).
    static func post(_ realPath: String) {
        #if canImport(Darwin)
            CFNotificationCenterPostNotification(
                CFNotificationCenterGetDarwinNotifyCenter(), CFNotificationName(notificationName(realPath) as CFString),
                nil, nil, true)
        #endif
    }

    /// Calls `handler` (on a background queue) whenever the file at `realPath` may have changed.
    init(realPath: String, handler: @escaping @Sendable () -> Void) {
        self.handler = handler
        #if canImport(Glibc)
            let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
            guard descriptor >= 0 else { return }
            let directory = (realPath as NSString).deletingLastPathComponent
            let file = (realPath as NSString).lastPathComponent
            let mask = UInt32(IN_MODIFY | IN_MOVED_TO | IN_CREATE | IN_CLOSE_WRITE)
            guard inotify_add_watch(descriptor, directory.isEmpty ? "." : directory, mask) >= 0 else {
                close(descriptor)
                return
            }
            let source = DispatchSource.makeReadSource(
                fileDescriptor: descriptor, queue: DispatchQueue(label: "rules.FileStore.watch"))
            source.setEventHandler { [weak self] in
                var buffer = [UInt8](repeating: 0, count: 4096)
                var relevant = false
                while true {
                    let n = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                    if n <= 0 { break }
                    var at = 0
                    // Each event: wd (4), mask (4), cookie (4), len (4), then a NUL-padded name.
                    while at + 16 <= n {
                        let length = buffer.withUnsafeBytes {
                            Int($0.loadUnaligned(fromByteOffset: at + 12, as: UInt32.self))
                        }
                        let end = min(n, at + 16 + length)
                        let name = buffer[(at + 16)..<end].prefix { $0 != 0 }
                        if String(decoding: name, as: UTF8.self) == file { relevant = true }
                        at = end
                    }
                }
                if relevant { self?.handler() }
            }
            source.setCancelHandler { close(descriptor) }
            source.resume()
            self.source = source
        #elseif canImport(Darwin)
            let name = CFNotificationName(ChangeWatcher.notificationName(realPath) as CFString)
            self.name = name
            CFNotificationCenterAddObserver(
                CFNotificationCenterGetDarwinNotifyCenter(), Unmanaged.passUnretained(self).toOpaque(),
                { _, observer, _, _, _ in
                    guard let observer else { return }
                    Unmanaged<ChangeWatcher>.fromOpaque(observer).takeUnretainedValue().handler()
                }, name.rawValue, nil, .deliverImmediately)
        #endif
    }

    deinit {
        #if canImport(Glibc)
            source?.cancel()
        #elseif canImport(Darwin)
            if let name {
                CFNotificationCenterRemoveObserver(
                    CFNotificationCenterGetDarwinNotifyCenter(), Unmanaged.passUnretained(self).toOpaque(), name, nil)
            }
        #endif
    }
}
