import Foundation

/// An ``RuleEngine/updates(for:)`` stream: its scenario and the last value it yielded.
struct Observer {
    let index: Int
    let continuation: AsyncStream<Bool>.Continuation
    var last: Bool
}

extension RuleEngine {
    /// The eligibility of `scenario` (what ``canExecute(_:)-(Scenario)`` answers), at once and
    /// again whenever it changes: after any engine call that changes it, and when time alone
    /// makes it become true (the engine asks its clock to wake it at ``Explanation/earliest``;
    /// with ``ManualClock``, moving the clock there delivers it). No polling: a SwiftUI view
    /// can `for await eligible in engine.updates(for: .rateApp)` in a `.task`.
    ///
    /// A change from true to false that time alone makes (an event leaving a `within` window,
    /// a to-do expiring) is delivered at the next engine call. The stream ends when the engine
    /// is released; an unknown scenario yields `false` once and ends.
    public func updates(for scenario: Scenario) -> AsyncStream<Bool> {
        let index = index(of: scenario)
        return AsyncStream(bufferingPolicy: .bufferingNewest(64)) { continuation in
            guard let index else {
                continuation.yield(false)
                continuation.finish()
                return
            }
            let id = locked { core in
                let id = core.nextObserverID
                core.nextObserverID += 1
                let now = core.now()
                let value = core.passes(index, now: now)
                continuation.yield(value)
                core.observers[id] = Observer(index: index, continuation: continuation, last: value)
                // Over a shared file, another process's write refreshes the observers at once.
                if core.watcher == nil, let shared = self.shared {
                    core.watcher = shared.watch { [weak self] in self?.locked { _ in } }
                }
                return id
            }
            continuation.onTermination = { [weak self] _ in
                self?.locked { core in _ = core.observers.removeValue(forKey: id) }
            }
        }
    }

    /// The string form of ``updates(for:)-(Scenario)``.
    public func updates(for name: String) -> AsyncStream<Bool> { updates(for: Scenario(name)) }

    /// Under the lock, after a call: yields every observed scenario whose eligibility changed;
    /// returns the time to wake the engine at (the earliest at which one that is false may become
    /// true) when it is not asked of the clock already. ``locked(_:)`` asks it after unlocking.
    func refreshObservers() -> Double? {
        let core = coreForRefresh
        let now = core.pointee.now()
        var wake = Double.infinity
        for (id, observer) in core.pointee.observers {
            let value = core.pointee.passes(observer.index, now: now)
            if value != observer.last {
                core.pointee.observers[id]!.last = value
                observer.continuation.yield(value)
            }
            if !value, let earliest = core.pointee.explain(observer.index).earliest?.timeIntervalSince1970,
                earliest > now
            {
                wake = min(wake, earliest)
            }
        }
        guard wake.isFinite else { return nil }
        if let scheduled = core.pointee.scheduledWakeUp, scheduled > now, scheduled <= wake { return nil }
        core.pointee.scheduledWakeUp = wake
        return wake
    }

    /// Asks the clock to wake the engine at `time` (never under the engine's lock).
    func scheduleWakeUp(at time: Double) {
        clock.wakeUp(at: Date(timeIntervalSince1970: time)) { [weak self] in
            // The refresh runs after this (empty) call, as after any other.
            self?.locked { core in
                if core.scheduledWakeUp == time { core.scheduledWakeUp = nil }
            }
        }
    }
}
