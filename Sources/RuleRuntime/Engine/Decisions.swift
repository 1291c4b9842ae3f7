import Foundation

#if canImport(os)
    import os
#endif

/// One answer of the engine, for a decision log: which call, which scenario, the answer and why.
public struct Decision: Sendable, CustomStringConvertible {
    /// The engine call that answered.
    public enum Call: String, Sendable {
        case tryToExecute, canExecute, executeNext
        /// ``RuleEngine/present(_:)-(Scenario)``: a `tryToExecute` that also holds its group.
        case present
    }

    /// The call that answered.
    public var call: Call
    /// The scenario asked about (for `executeNext`, the one executed, or nil when none was).
    public var scenario: String?
    /// What it answered.
    public var answer: Bool
    /// `yes`, the failing clauses as ``Explanation/reason`` words them, or for `executeNext`
    /// with no answer, the candidates and why each was not eligible.
    public var reason: String
    /// The engine clock's time of the answer.
    public var time: Date
    /// The rules that answered: ``ActiveRules/description`` of ``RuleEngine/activeRules``
    /// (where they came from, their digest, version and activation time).
    public var rules: String?

    /// `tryToExecute AskToSubscribe: no (between 2d: 1d left)`.
    public var description: String {
        "\(call.rawValue) \(scenario ?? "-"): \(answer ? "yes" : "no")" + (answer ? "" : " (\(reason))")
    }
}

extension RuleEngine {
    /// Called with every answer of `tryToExecute`, `canExecute` and `executeNext` and its reason,
    /// after the engine's lock is released, on the caller's thread. Explaining costs about as much
    /// as the answer: set it in debug builds or when diagnosing.
    public var decisionHandler: (@Sendable (Decision) -> Void)? {
        get { locked { $0.hooks.decisionHandler } }
        set { locked { $0.hooks.decisionHandler = newValue } }
    }

    /// Runs `body` (an answer about scenario `index`) under the lock and, when decisions are
    /// logged, delivers the decision after the lock is released.
    /// `resolve` finds the scenario's index under the lock (nil: an unknown name, answered false).
    @inline(__always)
    func decide(
        _ call: Decision.Call, function: StaticString = #function, resolve: (inout EngineCore) -> Int?,
        answer body: (inout EngineCore, Int) -> Bool
    ) -> Bool {
        // A reference, made only when decisions are logged: a `Decision` (it holds a `Date`, whose
        // layout is known only at run time) kept on this path cost ~100 instructions a call.
        var log: PendingDecision?
        let answer = locked(function: function) { core -> Bool in
            guard let index = resolve(&core) else { return false }
            let answer = body(&core, index)
            if core.logsDecisions {
                log = PendingDecision(core.decision(call, index, answer), core.hooks.decisionHandler, core.hooks.logger)
            }
            return answer
        }
        log?.deliver()
        return answer
    }

    /// `executeNext` among the candidates `resolve` gives under the lock, with its decision; the
    /// name of the scenario executed.
    func next(function: StaticString = #function, among resolve: (inout EngineCore) -> [Int]) -> String? {
        var log: PendingDecision?
        let chosen = locked(function: function) { core -> String? in
            let candidates = resolve(&core)
            let chosen = core.executeNext(among: candidates)
            if core.logsDecisions {
                log = PendingDecision(
                    core.decision(.executeNext, chosen, chosen != nil, candidates: candidates),
                    core.hooks.decisionHandler,
                    core.hooks.logger)
            }
            return chosen.map { core.rules.scenarios[$0].name }
        }
        log?.deliver()
        return chosen
    }
}

/// A decision made under the engine's lock, delivered to the handler and the log once the lock
/// is released, on the caller's thread.
final class PendingDecision {
    let decision: Decision?
    let handler: (@Sendable (Decision) -> Void)?
    let logger: DecisionLogger?

    init(_ decision: Decision?, _ handler: (@Sendable (Decision) -> Void)?, _ logger: DecisionLogger?) {
        self.decision = decision
        self.handler = handler
        self.logger = logger
    }

    func deliver() {
        guard let decision else { return }
        handler?(decision)
        logger?.log(decision)
    }
}

extension EngineCore {
    /// The decision for scenario `index`'s answer, when decisions are logged.
    mutating func decision(_ call: Decision.Call, _ index: Int?, _ answer: Bool, candidates: [Int] = []) -> Decision? {
        guard logsDecisions else { return nil }
        let time = now()
        var reason = "yes"
        if let index, !answer {
            reason = explain(index).reason
        } else if index == nil {
            reason =
                candidates.isEmpty
                ? "no candidates"
                : candidates.map { "\(rules.scenarios[$0].name): \(explain($0).reason)" }.joined(separator: "; ")
        }
        return Decision(
            call: call, scenario: index.map { rules.scenarios[$0].name }, answer: answer, reason: reason,
            time: Date(timeIntervalSince1970: time), rules: active?.description)
    }

    mutating func applyOverrides(_ overrides: [String: Bool]) {
        guard !overrides.isEmpty else { return }
        forced = Array(repeating: nil, count: rules.scenarios.count)
        for (name, value) in overrides.sorted(by: { $0.key < $1.key }) {
            if let index = rules.scenarioIndex[name] {
                forced[index] = value
            } else {
                noteUnknownScenario(name)
            }
        }
    }
}

/// Sends decisions to `os.Logger` at debug level on Apple platforms; does nothing elsewhere.
struct DecisionLogger: Sendable {
    #if canImport(os)
        private let logger: Logger?
    #endif

    init(subsystem: String?) {
        #if canImport(os)
            logger = subsystem.map { Logger(subsystem: $0, category: "decisions") }
        #endif
    }

    var isActive: Bool {
        #if canImport(os)
            return logger != nil
        #else
            return false
        #endif
    }

    func log(_ decision: Decision) {
        #if canImport(os)
            logger?.debug("\(decision.description, privacy: .public)")
        #endif
    }
}
