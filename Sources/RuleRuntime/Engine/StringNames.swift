import Foundation
import RuleLang

/// The calls that took a name as a `String`, deprecated: each call has one spelling, through a
/// handle (``Scenario``, ``Event``, ``Param``). A string literal is a handle already, so
/// `engine.tryToExecute("Onboarding")` compiles to the handle form unchanged; a `String`
/// variable is wrapped, `engine.tryToExecute(Scenario(name))`. Each form below answers as its
/// handle form does, and is disfavored so that a literal never picks it. They go in a later
/// release.
extension RuleEngine {
    /// `trigger(_:)` with a `String` name (deprecated): each call takes a handle.
    @available(*, deprecated, message: "pass an Event: trigger(Event(name))")
    @_disfavoredOverload
    public func trigger(_ name: some StringProtocol) { trigger(Event(name.ruleName)) }

    /// `trigger(_:properties:)` with a `String` name (deprecated): each call takes a handle.
    @available(*, deprecated, message: "pass an Event: trigger(Event(name), properties:)")
    @_disfavoredOverload
    public func trigger(_ name: some StringProtocol, properties: [String: PropertyValue]) {
        trigger(Event(name.ruleName), properties: properties)
    }

    /// `tryToExecute(_:)` with a `String` name (deprecated): each call takes a handle.
    @available(*, deprecated, message: "pass a Scenario: tryToExecute(Scenario(name))")
    @_disfavoredOverload
    public func tryToExecute(_ name: some StringProtocol) -> Bool { tryToExecute(Scenario(name.ruleName)) }

    /// `canExecute(_:)` with a `String` name (deprecated): each call takes a handle.
    @available(*, deprecated, message: "pass a Scenario: canExecute(Scenario(name))")
    @_disfavoredOverload
    public func canExecute(_ name: some StringProtocol) -> Bool { canExecute(Scenario(name.ruleName)) }

    /// `recordExecution(_:)` with a `String` name (deprecated): each call takes a handle.
    @available(*, deprecated, message: "pass a Scenario: recordExecution(Scenario(name))")
    @_disfavoredOverload @discardableResult
    public func recordExecution(_ name: some StringProtocol) -> Bool { recordExecution(Scenario(name.ruleName)) }

    /// `executeNext(among:)` with a `String` name (deprecated): each call takes a handle.
    @available(*, deprecated, message: "pass Scenarios: executeNext(among: names.map { Scenario($0) })?.name")
    @_disfavoredOverload @discardableResult
    public func executeNext(among names: [String]? = nil) -> String? {
        executeNext(among: names?.map { Scenario($0) })?.name
    }

    /// `reset(_:)` with a `String` name (deprecated): each call takes a handle.
    @available(*, deprecated, message: "pass a Scenario: reset(Scenario(name))")
    @_disfavoredOverload @discardableResult
    public func reset(_ name: some StringProtocol) -> Bool { reset(Scenario(name.ruleName)) }

    /// `explain(_:)` with a `String` name (deprecated): each call takes a handle.
    @available(*, deprecated, message: "pass a Scenario: explain(Scenario(name))")
    @_disfavoredOverload
    public func explain(_ name: some StringProtocol) -> Explanation { explain(Scenario(name.ruleName)) }

    /// `recordOutcome(_:of:)` with a `String` name (deprecated): each call takes a handle.
    @available(*, deprecated, message: "pass a Scenario: recordOutcome(_:of: Scenario(name))")
    @_disfavoredOverload
    public func recordOutcome(_ outcome: Outcome, of name: some StringProtocol) throws {
        try recordOutcome(outcome, of: Scenario(name.ruleName))
    }

    /// `present(_:)` with a `String` name (deprecated): each call takes a handle.
    @available(*, deprecated, message: "pass a Scenario: present(Scenario(name))")
    @_disfavoredOverload
    public func present(_ name: some StringProtocol) -> Presentation? { present(Scenario(name.ruleName)) }

    /// `showing(_:)` with a `String` name (deprecated): each call takes a handle.
    @available(*, deprecated, message: "pass a Scenario: showing(Scenario(name))")
    @_disfavoredOverload
    public func showing(_ name: some StringProtocol) -> (scenario: String, opened: Date)? {
        showing(Scenario(name.ruleName))
    }

    /// `updates(for:)` with a `String` name (deprecated): each call takes a handle.
    @available(*, deprecated, message: "pass a Scenario: updates(for: Scenario(name))")
    @_disfavoredOverload
    public func updates(for name: String) -> AsyncStream<Bool> { updates(for: Scenario(name)) }

    /// `controlExposures(of:)` with a `String` name (deprecated): each call takes a handle.
    @available(*, deprecated, message: "pass a Scenario: controlExposures(of: Scenario(name))")
    @_disfavoredOverload
    public func controlExposures(of name: some StringProtocol) -> Int { controlExposures(of: Scenario(name.ruleName)) }

    /// `isHeldOut(_:)` with a `String` name (deprecated): each call takes a handle.
    @available(*, deprecated, message: "pass a Scenario: isHeldOut(Scenario(name))")
    @_disfavoredOverload
    public func isHeldOut(_ name: some StringProtocol) -> Bool { isHeldOut(Scenario(name.ruleName)) }

    /// `count(_:scope:)` with a `String` name (deprecated): each call takes a handle.
    @available(*, deprecated, message: "pass an Event: count(Event(name), scope:)")
    @_disfavoredOverload
    public func count(_ name: some StringProtocol, scope: CountScope = .install) -> Int {
        // Generic, as the other deprecated forms are: a `String` parameter won a literal from
        // the `Event` overload (`count("launch", scope: .install)` warned).
        count(Event(name.ruleName), scope: scope)
    }

    /// `executions(of:scope:)` with a `String` name (deprecated): each call takes a handle.
    @available(*, deprecated, message: "pass a Scenario: executions(of: Scenario(name), scope:)")
    @_disfavoredOverload
    public func executions(of name: some StringProtocol, scope: CountScope = .install) -> Int {
        executions(of: Scenario(name.ruleName), scope: scope)
    }

    // MARK: - Params by name and untyped value

    /// `set(_:to:)` with a `String` name (deprecated): each call takes a handle.
    @available(*, deprecated, message: "pass a typed Param: set(Param<Bool>(name), to: true)")
    @_disfavoredOverload
    public func set(_ name: String, to value: ParamValue) throws { try setParam(named: name, to: value) }

    /// `provide(_:_:)` with a `String` name (deprecated): each call takes a handle. One generic
    /// form answers for the four typed ones it replaced (`Bool`, `Int`, `String`, `TimeInterval`).
    @available(*, deprecated, message: "pass a typed Param: provide(Param<Int>(name)) { ... }")
    @_disfavoredOverload
    public func provide<Value: ParamValueConvertible>(_ name: String, _ provider: @escaping @Sendable () -> Value)
        throws
    {
        try provide(Param<Value>(name), provider)
    }

    /// `value(of:)` with a `String` name (deprecated): each call takes a handle.
    @available(*, deprecated, message: "pass a typed Param: value(of: Param<Int>(name))")
    @_disfavoredOverload
    public func value(of name: String) -> ParamValue? { paramValue(named: name) }
}

/// The untyped param calls the tools make (`rulec`, timelines), whose params are named by a
/// file rather than by the app's code: not part of the API an app sees.
extension RuleEngine {
    /// Stores `value` for param `name`, as ``set(_:to:)-(Param<Value>,_)`` does.
    @_spi(Tools)
    public func setParam(named name: String, to value: ParamValue) throws {
        try locked { try $0.set(name, to: value) }
    }

    /// The value param `name` has now (provider, else stored value, else default, else its
    /// type's zero); nil for a name the rules do not declare.
    @_spi(Tools)
    public func paramValue(named name: String) -> ParamValue? {
        locked { core in (core.rules.paramIndex[name] ?? core.rules.formerParams[name]).map { core.value($0) } }
    }
}
