import Foundation

/// Where the user is, as the app says it (language 1.3's `in` and `not in`): the process's own
/// state, never stored, kept across rules swapped in. Observers hear the answers it changes.
extension RuleEngine {
    /// The contexts the app is in now.
    public var contexts: Set<String> { locked { $0.hooks.contexts } }

    /// The app entered `context` (a screen, a flow: `"checkout"`); it stays in it until
    /// ``leave(_:)`` or ``setContexts(_:)``. Several may hold at once.
    public func enter(_ context: String) {
        locked { core in
            guard core.hooks.contexts.insert(context).inserted else { return }
            core.placeContexts()
        }
    }

    /// The app left `context`.
    public func leave(_ context: String) {
        locked { core in
            guard core.hooks.contexts.remove(context) != nil else { return }
            core.placeContexts()
        }
    }

    /// The app is in exactly `contexts` now (for an app that tracks its screens itself).
    public func setContexts(_ contexts: Set<String>) {
        locked { core in
            guard core.hooks.contexts != contexts else { return }
            core.hooks.contexts = contexts
            core.placeContexts()
        }
    }
}
