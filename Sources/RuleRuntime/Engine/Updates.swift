import Foundation

/// An ``RuleEngine/updates(for:)-(Scenario)`` stream: its scenario and the last value it yielded.
struct Observer {
    /// The scenario's name, and its index in the rules (nil after a swap that removed it: false).
    let name: String
    var index: Int?
    /// Where changes go: an `AsyncStream`, or a ``ScenarioStatus`` (with the explanation).
    let sink: Sink
    var last: Bool
    /// For a status: the explanation last delivered (compared as a value: its description
    /// formats a date, which cost more than the explanation itself).
    var lastExplanation: Explanation?

    enum Sink {
        case stream(AsyncStream<Bool>.Continuation)
        /// Called under the engine's lock: it must not call the engine.
        case status(@Sendable (Bool, Explanation) -> Void)
    }

    /// Ends a stream (the engine is going away).
    func finish() {
        if case .stream(let continuation) = sink { continuation.finish() }
    }
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
    /// is released; an unknown scenario yields `false` once and ends. After
    /// ``replaceRules(sources:origin:version:)`` the stream follows the scenario of that name in
    /// the new rules (`false` while the rules have none).
    public func updates(for scenario: Scenario) -> AsyncStream<Bool> {
        AsyncStream(bufferingPolicy: .bufferingNewest(64)) { continuation in
            let id: Int? = locked { core in
                guard let index = core.scenario(scenario) else { return nil }
                let value = core.wouldShow(index, now: core.now())
                continuation.yield(value)
                return register(
                    Observer(name: scenario.name, index: index, sink: .stream(continuation), last: value), &core)
            }
            guard let id else {
                continuation.yield(false)
                continuation.finish()
                return
            }
            continuation.onTermination = { [weak self] _ in self?.removeObserver(id) }
        }
    }

    /// Adds `observer` (its current answer already delivered) and returns its id; over a shared
    /// file, starts watching it, so another process's write refreshes the observers at once.
    func register(_ observer: Observer, _ core: inout EngineCore) -> Int {
        let id = core.hooks.nextObserverID
        core.hooks.nextObserverID += 1
        core.hooks.observers[id] = observer
        if core.hooks.watcher == nil, let shared {
            core.hooks.watcher = shared.watch { [weak self] in self?.locked { _ in } }
        }
        return id
    }

    /// Forgets observer `id`.
    func removeObserver(_ id: Int) {
        locked { core in _ = core.hooks.observers.removeValue(forKey: id) }
    }

    /// Under the lock, after a call: yields every observed scenario whose eligibility changed;
    /// returns the time to wake the engine at (the earliest at which one that is false may become
    /// true) when it is not asked of the clock already. ``locked(_:)`` asks it after unlocking.
    func refreshObservers() -> Double? {
        let core = coreForRefresh
        let now = core.pointee.now()
        var wake = Double.infinity
        for (id, observer) in core.pointee.hooks.observers {
            let value = observer.index.map { core.pointee.wouldShow($0, now: now) } ?? false
            // A status's explanation gives its earliest time too: one explanation per status.
            var explained: Explanation?
            switch observer.sink {
            case .stream(let continuation):
                if value != observer.last {
                    core.pointee.hooks.observers[id]!.last = value
                    continuation.yield(value)
                }
            case .status(let deliver):
                let explanation = core.pointee.explanation(observer)
                explained = explanation
                if value != observer.last || explanation != observer.lastExplanation {
                    core.pointee.hooks.observers[id]!.last = value
                    core.pointee.hooks.observers[id]!.lastExplanation = explanation
                    deliver(value, explanation)
                }
            }
            if !value, let index = observer.index,
                let earliest = (explained ?? core.pointee.explain(index)).earliest?.timeIntervalSince1970,
                earliest > now
            {
                wake = min(wake, earliest)
            }
        }
        guard wake.isFinite else { return nil }
        if let scheduled = core.pointee.hooks.scheduledWakeUp, scheduled > now, scheduled <= wake { return nil }
        core.pointee.hooks.scheduledWakeUp = wake
        return wake
    }

    /// Asks the clock to wake the engine at `time` (never under the engine's lock).
    func scheduleWakeUp(at time: Double) {
        clock.wakeUp(at: Date(timeIntervalSince1970: time)) { [weak self] in
            // The refresh runs after this (empty) call, as after any other.
            self?.locked { core in
                if core.hooks.scheduledWakeUp == time { core.hooks.scheduledWakeUp = nil }
            }
        }
    }
}
