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

    /// How many times scenario `name` would have shown this install, which is in the control
    /// arm of its `holdout` (or its group's): each `tryToExecute`, `present` or `executeNext`
    /// that found its clauses passing. 0 for an install shown the scenario, or an unknown name.
    public func controlExposures(of name: some StringProtocol) -> Int {
        let stream = EngineStream.control(of: name.ruleName)
        return locked { core in
            Int(clamping: core.count(core.streams.index[stream], .install, now: core.now()))
        }
    }

    /// True when this install is in the control arm of scenario `name`'s holdout (or its
    /// group's): the scenario is never shown to it.
    public func isHeldOut(_ name: some StringProtocol) -> Bool {
        let name = name.ruleName
        return locked { core in core.scenario(named: name).map { core.controlArm($0) != nil } ?? false }
    }

    // MARK: - Params

    /// Stores a value for param `name`; it persists. Throws for an unknown name or a wrong type.
    public func set(_ name: String, to value: ParamValue) throws {
        try locked { try $0.set(name, to: value) }
    }

    /// Registers a live provider for param `name`, called at each evaluation; it
    /// wins over a stored value. It runs under the engine's lock: it must not call the engine.
    public func provide(_ name: String, _ provider: @escaping @Sendable () -> Bool) throws {
        try locked { try $0.provide(name, .bool) { .bool(provider()) } }
    }

    /// An int param's live provider.
    public func provide(_ name: String, _ provider: @escaping @Sendable () -> Int) throws {
        try locked { try $0.provide(name, .int) { .int(Int64(provider())) } }
    }

    /// A string param's live provider.
    public func provide(_ name: String, _ provider: @escaping @Sendable () -> String) throws {
        try locked { try $0.provide(name, .string) { .string(provider()) } }
    }

    /// A duration param's provider, in seconds.
    public func provide(_ name: String, _ provider: @escaping @Sendable () -> TimeInterval) throws {
        try locked { try $0.provide(name, .duration) { .duration(provider()) } }
    }

    /// The value param `name` has now: provider, else stored value, else default, else its type's zero;
    /// nil for an unknown name.
    public func value(of name: String) -> ParamValue? {
        locked { core in (core.rules.paramIndex[name] ?? core.rules.formerParams[name]).map { core.value($0) } }
    }

    // MARK: - Queries

    /// The app version of the first session this state saw (nil before any): what the
    /// built-in `upgraded` compares the current session's version with. State written before
    /// it was recorded takes the version it last saw; an Ecno import carries Ecno's over.
    public var firstVersion: String? { locked { $0.meta.firstVersion } }

    /// Events recorded on stream `name` in `scope`.
    public func count(_ name: String, scope: CountScope = .install) -> Int {
        locked { Int(clamping: $0.count($0.streamSlot(named: name), scope, now: $0.now())) }
    }

    /// How many times scenario `name` ran in `scope`: what `executions(NAME per SCOPE)` reads in
    /// a rule (`.within(D)`: `executions(NAME within D)`). 0 for a name no scenario has, which
    /// ``unknownNames`` then lists.
    public func executions(of name: some StringProtocol, scope: CountScope = .install) -> Int {
        let name = name.ruleName
        return locked { core in
            guard let index = core.scenario(named: name) else { return 0 }
            return Int(clamping: core.view(index).executions.count(scope, now: core.now(), in: core.meta.epoch))
        }
    }

    /// ``executions(of:scope:)-(StringProtocol,_)`` through a handle.
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
