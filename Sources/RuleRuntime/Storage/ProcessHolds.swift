import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The files this process's exclusive stores hold locked, by resolved path.
///
/// An open that finds a file locked asks here: when a store of this process holds it, that store
/// may be on its way out. An app's last reference to a store can go while a background
/// compaction switches its files; the compaction's thread then releases the store (and the
/// file's lock) a moment later, and an engine opened again at once on the same file found it
/// still locked. Such an open waits for the store to let go, up to ``wait``, then tries again.
enum ProcessHolds {
    private static let held = Protected<[String: Int]>([:])
    /// Opens that waited for a store of this process so far (tests).
    static let waits = Protected<Int>(0)

    /// How long an open waits for a store of this process to let go of the file (1 s): a
    /// switch takes well under a millisecond; a store the app still holds never lets go.
    static let wait: UInt64 = 1_000_000_000

    /// A store of this process locked the file at `path`.
    static func take(_ path: String) {
        held.withLock { $0[path, default: 0] += 1 }
    }

    /// That store closed the file.
    static func letGo(_ path: String) {
        held.withLock {
            let left = $0[path, default: 1] - 1
            $0[path] = left > 0 ? left : nil
        }
    }

    /// Whether a store of this process holds the file at `path` locked.
    static func holds(_ path: String) -> Bool {
        held.withLock { $0[path] != nil }
    }

    /// `flock(descriptor, operation | LOCK_NB)` on the file at `path`; when a store of this
    /// process holds it, tried again once that store has let go (or ``wait`` has passed).
    /// Nil once locked; else the `errno` of the last try, and whether a store of this process
    /// still holds the file.
    static func lock(_ descriptor: Int32, _ operation: Int32, path: String) -> (errno: Int32, heldHere: Bool)? {
        if flock(descriptor, operation | LOCK_NB) == 0 { return nil }
        let code = errno
        guard code == EWOULDBLOCK, let resolved = resolved(path), holds(resolved) else { return (code, false) }
        waits.withLock { $0 += 1 }
        let deadline = DispatchTime.now().uptimeNanoseconds + wait
        while holds(resolved) && DispatchTime.now().uptimeNanoseconds < deadline {
            usleep(200)
        }
        if flock(descriptor, operation | LOCK_NB) == 0 { return nil }
        return (errno, holds(resolved))
    }

    /// `path` with its links and dots resolved, as a store records it, or nil.
    static func resolved(_ path: String) -> String? {
        path.withCString { raw in
            guard let resolved = realpath(raw, nil) else { return nil }
            defer { free(resolved) }
            return String(cString: resolved)
        }
    }
}
