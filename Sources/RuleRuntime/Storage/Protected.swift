import Foundation

/// A value that threads share, read and changed only under its lock.
///
/// The one reason the runtime gives the compiler its word that a lock makes a class safe to
/// share (`@unchecked Sendable`), stated once: `Mutex` (Synchronization) would have the compiler
/// check it, but needs iOS 18 and macOS 15, and the package supports iOS 15 and macOS 12. A class
/// whose changing state is all in one of these is `Sendable` without `@unchecked`.
final class Protected<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    /// Runs `body` on the value under the lock.
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
