import Foundation

/// Where the engine reads the time. Inject one to test without sleeping.
public protocol RuleClock: Sendable {
    /// The current time.
    func now() -> Date
}

/// The system's wall clock.
public struct SystemClock: RuleClock {
    public init() {}
    public func now() -> Date { Date() }
}

/// A clock that moves only when told to; for tests and simulations. Thread-safe.
public final class ManualClock: RuleClock, @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date

    public init(_ start: Date = Date(timeIntervalSince1970: 1_767_225_600)) {
        current = start
    }

    public func now() -> Date {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    /// Moves the clock by `seconds` (negative moves it backwards).
    public func advance(by seconds: TimeInterval) {
        lock.lock()
        current += seconds
        lock.unlock()
    }

    /// Sets the clock to `date`, earlier or later.
    public func set(_ date: Date) {
        lock.lock()
        current = date
        lock.unlock()
    }
}

/// Readable durations in seconds: `7 * .day`.
extension TimeInterval {
    public static let minute: TimeInterval = 60
    public static let hour: TimeInterval = 3_600
    public static let day: TimeInterval = 86_400
    public static let week: TimeInterval = 604_800
}
