import Foundation

/// Where the engine reads the time. Inject one to test without sleeping.
public protocol RuleClock: Sendable {
    /// The current time.
    func now() -> Date

    /// Calls `action` once, on any thread, when this clock reaches `date` (at once if it has).
    /// ``RuleEngine/updates(for:)-(Scenario)`` uses it to deliver changes that time alone makes. The
    /// default waits on a background queue for the wall-clock time between ``now()`` and `date`.
    func wakeUp(at date: Date, _ action: @escaping @Sendable () -> Void)
}

extension RuleClock {
    public func wakeUp(at date: Date, _ action: @escaping @Sendable () -> Void) {
        let seconds = date.timeIntervalSince(now())
        guard seconds.isFinite else { return }
        DispatchQueue.global(qos: .utility).asyncAfter(
            wallDeadline: .now() + max(0, min(seconds, 3e8)), execute: action)
    }
}

/// The system's wall clock.
public struct SystemClock: RuleClock {
    /// The system clock.
    public init() {}
    public func now() -> Date { Date() }
}

/// A clock that moves only when told to; for tests and simulations. Thread-safe.
public final class ManualClock: RuleClock, @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date
    /// Wake-ups not yet due, run by ``advance(by:)`` and ``set(_:)`` when the clock reaches them.
    private var pending: [(date: Date, action: @Sendable () -> Void)] = []

    /// A clock standing at `start` (default 2026-01-01T00:00:00Z).
    public init(_ start: Date = Date(timeIntervalSince1970: 1_767_225_600)) {
        current = start
    }

    public func now() -> Date {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    /// Moves the clock by `seconds` (negative moves it backwards), then runs the wake-ups it reached.
    public func advance(by seconds: TimeInterval) {
        lock.lock()
        current += seconds
        runDue()
    }

    /// Sets the clock to `date`, earlier or later, then runs the wake-ups it reached.
    public func set(_ date: Date) {
        lock.lock()
        current = date
        runDue()
    }

    /// Runs `action` when the clock is moved to `date` or later (at once if it is there),
    /// on the thread that moves it, in date order.
    public func wakeUp(at date: Date, _ action: @escaping @Sendable () -> Void) {
        lock.lock()
        if date <= current {
            lock.unlock()
            action()
            return
        }
        pending.append((date, action))
        lock.unlock()
    }

    /// Called with the lock held; releases it before running what is due.
    private func runDue() {
        let due = pending.filter { $0.date <= current }.sorted { $0.date < $1.date }
        pending.removeAll { $0.date <= current }
        lock.unlock()
        for wakeUp in due { wakeUp.action() }
    }
}

/// Readable durations in seconds: `7 * .day`.
extension TimeInterval {
    /// 60 seconds.
    public static let minute: TimeInterval = 60
    /// 3,600 seconds.
    public static let hour: TimeInterval = 3_600
    /// 86,400 seconds.
    public static let day: TimeInterval = 86_400
    /// 604,800 seconds.
    public static let week: TimeInterval = 604_800
}
