import Foundation
import RuleLang

/// Params, and what an app may ask of the state: counts, versions, expressions.
extension RuleEngine {
    // MARK: - The install

    /// The install's id that `bucket("salt")` hashes: the one given in
    /// ``Options/installID``, else the one the engine made and stored when rules that read
    /// `bucket` first started (nil before). Report it beside an experiment's exposures so that a
    /// server can compute the same buckets (grammar.md, "Stable buckets").
    public var installID: String? { locked { $0.installID } }

    /// How many times `scenario` would have shown this install, which is in the control arm
    /// of its `holdout` (or its group's): each `tryToExecute`, `present` or `executeNext` that
    /// found its clauses passing. 0 for an install shown the scenario, or an unknown name.
    public func controlExposures(of scenario: Scenario) -> Int {
        let stream = EngineStream.control(of: scenario.name)
        return locked { core in
            Int(clamping: core.count(core.streams.index[stream], .install, now: core.now()))
        }
    }

    /// True when this install is in the control arm of `scenario`'s holdout (or its group's):
    /// the scenario is never shown to it.
    public func isHeldOut(_ scenario: Scenario) -> Bool {
        locked { core in core.scenario(scenario).map { core.controlArm($0) != nil } ?? false }
    }

    // MARK: - Params

    /// Stores a value for `param`; it persists. Throws ``RuleEngineError/unknownParam(_:)`` for
    /// a param the rules do not declare, ``RuleEngineError/typeMismatch(param:declared:given:)`` for one
    /// they declare with another type: `try engine.set(.isSubscribed, to: true)`.
    public func set<Value>(_ param: Param<Value>, to value: Value) throws {
        try locked { try $0.set(param.name, to: value.paramValue) }
    }

    /// Registers a live provider for `param`, called at each evaluation; it wins over a stored
    /// value. It runs under the engine's lock: it must not call the engine.
    public func provide<Value>(_ param: Param<Value>, _ provider: @escaping @Sendable () -> Value) throws {
        try locked { try $0.provide(param.name, Value.valueType) { provider().paramValue } }
    }

    /// `param`'s value now: provider, else stored value, else default; `Value.zero` when the
    /// rules do not declare it with this type.
    public func value<Value>(of param: Param<Value>) -> Value {
        locked { core in
            let index: Int
            if let remembered = param.cache?.index(for: core.serial) {
                index = remembered
            } else {
                guard let found = core.rules.paramIndex[param.name], core.rules.params[found].type == Value.valueType
                else { return nil }
                param.cache?.remember(found, for: core.serial)
                index = found
            }
            return Value(paramValue: core.value(index))
        } ?? .zero
    }

    // MARK: - Queries

    /// True when the rules place the install by its id (`bucket("SALT")` or a `holdout`).
    public var usesInstallID: Bool { locked { $0.rules.readsBuckets } }

    /// The device's time zone for local days (`min_days`, `active_days`): a day runs from local
    /// midnight to the next in the zone current when it is asked. Set it when the device's zone
    /// changes (a trip): days already recorded keep their dates, and "today" is the new zone's.
    /// The state records the zone (at each session and when it is set), so that the tools judge
    /// a state file in its device's zone.
    public var timeZone: TimeZone {
        get { locked { $0.zone() } }
        set { locked { $0.setZone(newValue) } }
    }

    /// True when the rules have a scenario by this name (or a former name of one), judged by the
    /// name alone: nothing is evaluated (an evaluation re-bases times ahead of the clock).
    package func hasScenario(named name: String) -> Bool { locked { $0.scenario(named: name) != nil } }

    /// The time zone the state last saw (entry `z:`), if any: RuleServer judges an install in it.
    package var storedTimeZone: String? { locked { $0.storedZone } }

    /// The app version of the current session, if a session was started.
    public var currentVersion: String? { locked { $0.meta.version } }

    /// The app version of the first session this state saw (nil before any): what the
    /// built-in `upgraded` compares the current session's version with. State written before
    /// it was recorded takes the version it last saw; an Ecno import carries Ecno's over.
    public var firstVersion: String? { locked { $0.meta.firstVersion } }

    /// Events recorded on `event`'s stream in `scope`.
    public func count(_ event: Event, scope: CountScope = .install) -> Int {
        locked { Int(clamping: $0.count($0.streamSlot(named: event.name), scope, now: $0.now())) }
    }

    /// How many times `scenario` ran in `scope`: what `executions(NAME per SCOPE)` reads in a
    /// rule (`.within(D)`: `executions(NAME within D)`). 0 for a name no scenario has, which
    /// ``unknownNames`` then lists.
    public func executions(of scenario: Scenario, scope: CountScope = .install) -> Int {
        locked { core in
            guard let index = core.scenario(scenario) else { return 0 }
            return Int(clamping: core.view(index).executions.count(scope, now: core.now(), in: core.meta.epoch))
        }
    }

    /// Evaluates an expression already checked against ``program`` with
    /// `RuleCompiler.checkExpression`; true when it is `true`.
    public func check(_ expr: Expr) -> Bool {
        locked { core in
            let lowered = core.lower(expr)
            return core.evaluate(lowered, now: core.now()) == .bool(true)
        }
    }

    /// Evaluates a bool expression of the language (`count(share per session) >= 1`)
    /// against the current state. Here `<` and `>` need no parentheses.
    public func check(_ expression: String) throws -> Bool {
        let file = SourceFile(path: "<expression>", text: expression)
        let (expr, diagnostics) = locked { $0.expressions.check(file, range: 0..<file.bytes.count) }
        if diagnostics.hasErrors { throw RuleEngineError.invalidExpression(diagnostics) }
        return check(expr)
    }
}
