import Foundation
import RuleLang

/// The calls through handles (``Scenario``, ``Event``, ``RuleGroup``, ``Param``): each as its
/// string form, the name looked up once per rules.
extension RuleEngine {
    /// Records one event on `event`'s stream, as ``trigger(_:)-(StringProtocol)``; no name lookup after the first.
    public func trigger(_ event: Event) {
        locked { core in
            let slot = core.slot(event, serial: core.serial)
            core.recordEvent(slot, at: core.now())
            core.commit()
        }
    }

    /// ``tryToExecute(_:)-(StringProtocol)`` through a handle.
    public func tryToExecute(_ scenario: Scenario) -> Bool {
        decide(.tryToExecute, resolve: { $0.scenario(scenario) }, answer: { $0.tryToExecute($1) })
    }

    /// ``recordExecution(_:)-(StringProtocol)`` through a handle.
    @discardableResult
    public func recordExecution(_ scenario: Scenario) -> Bool {
        locked { core in
            guard let index = core.scenario(scenario) else { return false }
            core.recordExecution(index)
            return true
        }
    }

    /// ``canExecute(_:)-(StringProtocol)`` through a handle.
    public func canExecute(_ scenario: Scenario) -> Bool {
        decide(.canExecute, resolve: { $0.scenario(scenario) }, answer: { $0.wouldShow($1, now: $0.now()) })
    }

    /// ``explain(_:)-(StringProtocol)`` through a handle.
    public func explain(_ scenario: Scenario) -> Explanation {
        locked { core in
            guard let index = core.scenario(scenario) else {
                return Explanation(scenario: scenario.name, isKnown: false, wouldRun: false, clauses: [], earliest: nil)
            }
            return core.explain(index)
        }
    }

    /// ``reset(_:)-(StringProtocol)`` through a handle (a scenario's or a group's name).
    @discardableResult
    public func reset(_ scenario: Scenario) -> Bool {
        reset(scenario.name)
    }

    /// Resets `group`'s shared budget (``reset(_:)-(StringProtocol)`` with a group's name); false for an unknown group.
    @discardableResult
    public func reset(group: RuleGroup) -> Bool {
        locked { core in
            (core.rules.groupIndex[group.name] ?? core.rules.formerGroups[group.name]) != nil
                && core.reset(group.name)
        }
    }

    /// ``executeNext(among:)-(_)`` through handles: the scenario executed, or nil.
    @discardableResult
    public func executeNext(among scenarios: [Scenario]) -> Scenario? {
        guard let chosen = next(among: { core in scenarios.compactMap { core.scenario($0) } }) else { return nil }
        if let handle = scenarios.first(where: { $0.name == chosen }) { return handle }
        // Given by a former name (`was`): the handle the app passed.
        return locked { core in
            scenarios.first { core.rules.formerScenarios[$0.name].map { core.rules.scenarios[$0].name } == chosen }
        }
    }

    /// Stores a value for `param`; it persists. Throws for a param the rules do not declare
    /// with this type.
    public func set<Value>(_ param: Param<Value>, to value: Value) throws {
        try set(param.name, to: value.paramValue)
    }

    /// Registers a live provider for `param`, called at each evaluation, under the engine's lock.
    public func provide<Value>(_ param: Param<Value>, _ provider: @escaping @Sendable () -> Value) throws {
        try locked { try $0.provide(param.name, Value.valueType) { provider().paramValue } }
    }

    /// `param`'s value now: provider, else stored value, else default; `Value.zero` when the
    /// rules do not declare it with this type.
    public func value<Value>(of param: Param<Value>) -> Value {
        locked { core in
            let index: Int
            if let remembered = param.cache.index(for: core.serial) {
                index = remembered
            } else {
                guard let found = core.rules.paramIndex[param.name], core.rules.params[found].type == Value.valueType
                else { return nil }
                param.cache.remember(found, for: core.serial)
                index = found
            }
            return Value(paramValue: core.value(index))
        } ?? .zero
    }
}
