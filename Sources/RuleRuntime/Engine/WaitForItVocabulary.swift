import Foundation

/// WaitForIt's calls, as a compatibility layer over the engine (its scenarios become `scenario`
/// declarations; ``RuleEngine/importWaitForIt(from:scenarios:)`` carries its stored data over).
extension RuleEngine {
    /// WaitForIt's form: calls `completion` once, synchronously on the caller's thread,
    /// after the lock is released, with the answer of ``tryToExecute(_:)-(Scenario)``.
    public func tryToExecute(_ name: some StringProtocol, completion: (Bool) -> Void) {
        completion(tryToExecute(Scenario(name.ruleName)))
    }
}
