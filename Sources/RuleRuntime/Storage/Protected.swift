import Foundation

/// A value that threads share, read and changed only under its lock.
///
/// The one reason the runtime gives the compiler its word that a lock makes a class safe to
/// share (`@unchecked Sendable`), stated once: `Mutex` (Synchronization) would have the compiler
/// check it, but needs iOS 18 and macOS 15, and the package supports iOS 15 and macOS 12. A class
/// whose changing state is all in one of these is `Sendable` without `@unchecked`.
final class Protected<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    /// Only `withLock` reaches it, under the lock, so the run-time exclusivity check of an
    /// access to a class's property (a thread-local access set, entered and left) adds nothing
    /// to the lock. It was 4% of the samples of `rulebench profile trigger` (the in-memory store
    /// applies each record through here). Five interleaved pairs of `rulebench calls`, 2026-11-28:
    /// `trigger_memory_vs_limit` 3.25/3.61/3.66/3.26/3.74x unchecked against
    /// 3.83/3.74/3.73/3.62/3.77x checked (medians 3.61x and 3.74x).
    @exclusivity(unchecked) private var value: Value

    init(_ value: Value) { self.value = value }

    /// Runs `body` on the value under the lock.
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
