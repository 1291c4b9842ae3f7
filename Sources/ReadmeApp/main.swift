import Foundation
import RuleRuntime

// Runs the README's "In an app" example (AppRules.swift, copied there verbatim) the way an
// app's first launch would: ReadmeAppTests runs it with a fresh, empty HOME.
MainActor.assumeIsolated {
    do {
        let rules = try AppRules(bundle: .module, version: "1.0")
        rules.articleCount = 12
        rules.offerSubscription(show: { true })
        print("articles_read \(rules.engine.value(of: Param<Int>.articlesRead))")
        print("state \(FileStore.applicationSupport(named: "rules.state").path)")
    } catch {
        print("error: \(error)")
        exit(1)
    }
}
