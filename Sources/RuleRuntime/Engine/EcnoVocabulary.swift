import Foundation
import RuleLang

/// The Ecno / Once vocabulary, on the same state as scenarios: a tag is a stream.
extension RuleEngine {
    /// Records that task `tag` was done (an event on stream `tag`) and clears its to-do.
    @inlinable
    public func markDone(_ tag: some StringProtocol) { markDone(named: tag.ruleName) }

    @usableFromInline
    func markDone(named tag: String) {
        locked { $0.markDone(tag) }
    }

    /// ``markDone(_:)-(StringProtocol)`` through a handle: an event on `event`'s stream, and its
    /// to-do cleared.
    public func markDone(_ event: Event) {
        markDone(named: event.name)
    }

    /// Whether `tag`'s count in `scope` satisfies `times` (default: done at least once).
    /// A tag never done has count 0: `.lessThan(1)` and `.exactly(0)` are true for it.
    public func beenDone(_ tag: String, scope: CountScope = .install, times: CountCheck = .moreThan(0)) -> Bool {
        times.holds(count(Event(tag), scope: scope))
    }

    /// When `tag` was last done: the latest time recorded, even if the clock went backwards since.
    public func lastDone(_ tag: String) -> Date? {
        locked { core in
            core.streamSlot(named: tag).flatMap { core.tallies.counts($0).last }.map { Date(timeIntervalSince1970: $0) }
        }
    }

    /// Adds a to-do for `tag` with an optional payload and returns true; or returns false
    /// and changes nothing when a to-do for `tag` is already pending (its info is kept,
    /// never overwritten) or, with `scope`, when `tag` was done within that scope.
    /// `.until(D)` always adds (when none is pending) a to-do that expires D from now.
    @discardableResult
    public func toDo(_ tag: String, scope: ToDoScope? = nil, info: [String: String]? = nil) -> Bool {
        locked { $0.toDo(tag, scope: scope, info: info) }
    }

    /// True while a to-do for `tag` is pending: until `markDone`, `clearToDo`, or its `until` expiry.
    public func needToDo(_ tag: String) -> Bool {
        locked { $0.pendingToDo(tag, now: $0.now()) != nil }
    }

    /// The payload of `tag`'s pending to-do; nil when none is pending.
    public func info(forToDo tag: String) -> [String: String]? {
        locked { $0.pendingToDo(tag, now: $0.now())?.info }
    }

    /// Forgets every time `tag` was done (stream `tag`). Scenarios keep their own counts:
    /// use ``reset(_:)-(Scenario)`` for those.
    public func clearDone(_ tag: String) {
        locked { $0.clearDone(tag) }
    }

    /// Removes `tag`'s to-do.
    public func clearToDo(_ tag: String) {
        locked { core in
            if core.shared { _ = core.lockFileForWriting() }
            if core.todos.removeValue(forKey: tag) != nil { core.save([EngineState.change(todo: tag, nil)]) }
        }
    }

    /// Forgets every event, execution, group budget and to-do. Params, the
    /// current session and version, and the engine's own marks (an open presentation, the
    /// run's watch for a crash) are kept.
    public func clearAll() {
        locked { $0.clearAll() }
    }
}

extension EngineCore {
    mutating func markDone(_ tag: String) {
        let slot = slot(tag)
        recordEvent(slot, at: now())
        if todos.removeValue(forKey: tag) != nil { record.add(EngineState.change(todo: tag, nil)) }
        commit()
    }

    mutating func toDo(_ tag: String, scope: ToDoScope?, info: [String: String]?) -> Bool {
        if shared { _ = lockFileForWriting() }
        let time = now()
        if pendingToDo(tag, now: time) != nil { return false }
        var expires: Double?
        if case .until(let seconds)? = scope {
            // A NaN duration is 0: the to-do is added already expired, never "forever".
            expires = time + (seconds.isNaN ? 0 : seconds)
        } else if let countScope = scope?.doneScope, count(streams.index[tag], countScope, now: time) > 0 {
            return false
        }
        let item = ToDoItem(created: time, expires: expires, info: info)
        todos[tag] = item
        if let expires { nextExpiry = Swift.min(nextExpiry, expires) }
        save([EngineState.change(todo: tag, item)])
        return true
    }

    /// Deletes the to-dos that expired by `time`, and stores it: expired once is expired for
    /// good, so a clock set back later does not bring one back.
    mutating func expireToDos(at time: Double) {
        if shared { _ = lockFileForWriting() }
        var changes: [StoreChange] = []
        var next = Double.infinity
        for (tag, item) in todos {
            guard let expires = item.expires else { continue }
            if time >= expires {
                todos[tag] = nil
                changes.append(EngineState.change(todo: tag, nil))
            } else {
                next = Swift.min(next, expires)
            }
        }
        nextExpiry = next
        save(changes.sorted { $0.key < $1.key })
    }

    func pendingToDo(_ tag: String, now time: Double) -> ToDoItem? {
        guard let item = todos[tag] else { return nil }
        if let expires = item.expires, time >= expires { return nil }
        return item
    }

    mutating func clearDone(_ tag: String) {
        if shared { _ = lockFileForWriting() }
        guard let slot = streams.index[tag], !tallies.isBlank(slot) else { return }
        var changes: [StoreChange] = []
        // Scenarios counting this stream keep what they saw: store their views first
        // (a view merged in memory only would be merged again, without this stream).
        for index in rules.listeners(slot) {
            changes.append(EngineState.change(key: rules.scenarios[index].key, view(index)))
        }
        tallies[slot] = Tally()
        changes.append(EngineState.change(key: streamKey(slot), nil as Tally?))
        save(changes)
    }

    mutating func clearAll() {
        if shared { _ = lockFileForWriting() }
        var changes: [StoreChange] = []
        for slot in tallies.indices where !tallies.isBlank(slot) {
            changes.append(EngineState.change(key: streamKey(slot), nil as Tally?))
        }
        for index in views.indices where built[index] {
            changes.append(EngineState.change(key: rules.scenarios[index].key, nil as ScenarioState?))
        }
        for index in budgets.indices where !budgets[index].isEmpty {
            changes.append(EngineState.change(key: rules.groups[index].key, nil as Tally?))
        }
        // The engine's own to-dos (a presentation's hold, the run's mark) are not the app's tasks.
        let own = todos.filter { EngineStream.isReserved($0.key) }
        changes += todos.keys.filter { !EngineStream.isReserved($0) }.map { EngineState.change(todo: $0, nil) }
        changes += orphans.sorted().map { StoreChange(key: $0, value: nil) }
        tallies.removeAll()
        // Scenarios start empty, not merged again from cleared streams.
        views = Array(repeating: ScenarioState(), count: views.count)
        built = Array(repeating: false, count: built.count)
        budgets = Array(repeating: Tally(), count: budgets.count)
        todos = own
        orphans = []
        save(changes)
    }
}

extension ToDoScope {
    /// The scope in which being done prevents a new to-do; nil for `.until`.
    var doneScope: CountScope? {
        switch self {
        case .install: return .install
        case .version: return .version
        case .session: return .session
        case .since(let seconds): return .within(seconds)
        case .until: return nil
        }
    }
}
