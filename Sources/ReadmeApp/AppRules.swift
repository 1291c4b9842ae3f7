import Foundation
import RuleRuntime

/// The app's rules, loaded at launch. State lives in Application Support, which
/// FileStore creates on a fresh install.
@MainActor
final class AppRules {
    let engine: RuleEngine

    init(bundle: Bundle, version: String) throws {
        let rules = bundle.url(forResource: "app", withExtension: "rules")!
        engine = try RuleEngine(contentsOf: rules, store: FileStore.applicationSupport(named: "rules.state"))
        engine.startSession(version: version)  // once per launch
        engine.trigger(.launch)  // record events through generated names
    }

    /// Main-actor state reaches the rules through `set`, which persists it; a `provide`
    /// closure runs on the caller's thread under the engine's lock, so it must be `@Sendable`.
    var articleCount = 0 {
        didSet { try? engine.set(.articlesRead, to: articleCount) }
    }

    func offerSubscription(show: () -> Bool) {
        // Check, try to show, and count an execution only if it was shown.
        if engine.canExecute(.askToSubscribe), show() {
            engine.recordExecution(.askToSubscribe)
        } else {
            print(engine.explain(.askToSubscribe))  // why not? "between 2d: 1d 4h left"
        }
    }
}
