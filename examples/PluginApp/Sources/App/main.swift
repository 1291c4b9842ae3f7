import Foundation
import RuleRuntime

// Loads the bundled rules, records three app openings and tries the scenario, naming both
// through the constants RulesPlugin generated from app.rules (Event.appOpened, Scenario.pluginDemo).
let url = Bundle.module.url(forResource: "app", withExtension: "rules")!
let engine = try RuleEngine(contentsOf: url)
engine.startSession(version: "1.0")
for _ in 0..<3 { engine.trigger(.appOpened) }
if engine.tryToExecute(.pluginDemo) {
    print("PluginDemo yes")
} else {
    print("PluginDemo no: \(engine.explain(.pluginDemo).reason)")
}
