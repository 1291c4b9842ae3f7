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
public final class ManualClock: RuleClock, Sendable {
    /// The time, and the wake-ups not yet due, run by ``advance(by:)`` and ``set(_:)`` when the
    /// clock reaches them.
    private struct State {
        var current: Date
        var pending: [(date: Date, action: @Sendable () -> Void)] = []
    }

    private let state: Protected<State>

    /// A clock standing at `start` (default 2026-01-01T00:00:00Z).
    public init(_ start: Date = Date(timeIntervalSince1970: 1_767_225_600)) {
        state = Protected(State(current: start))
    }

    public func now() -> Date { state.withLock { $0.current } }

    /// Moves the clock by `seconds` (negative moves it backwards), then runs the wake-ups it reached.
    public func advance(by seconds: TimeInterval) {
        run(
            state.withLock { state in
                state.current += seconds
                return Self.takeDue(&state)
            })
    }

    /// Sets the clock to `date`, earlier or later, then runs the wake-ups it reached.
    public func set(_ date: Date) {
        run(
            state.withLock { state in
                state.current = date
                return Self.takeDue(&state)
            })
    }

    /// Runs `action` when the clock is moved to `date` or later (at once if it is there),
    /// on the thread that moves it, in date order.
    public func wakeUp(at date: Date, _ action: @escaping @Sendable () -> Void) {
        let now: Bool = state.withLock { state in
            if date <= state.current { return true }
            state.pending.append((date, action))
            return false
        }
        if now { action() }
    }

    /// The wake-ups due, in date order, taken out of `state`.
    private static func takeDue(_ state: inout State) -> [@Sendable () -> Void] {
        let current = state.current
        let due = state.pending.filter { $0.date <= current }.sorted { $0.date < $1.date }
        state.pending.removeAll { $0.date <= current }
        return due.map(\.action)
    }

    /// Runs `actions` without the lock: an action may read or move the clock.
    private func run(_ actions: [@Sendable () -> Void]) {
        for action in actions { action() }
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
