import Foundation
import RuleRuntime

// Loads the bundled rules, records three events and tries the scenario.
let url = Bundle.module.url(forResource: "app", withExtension: "rules")!
let engine = try RuleEngine(contentsOf: url)
engine.startSession(version: "1.0")
for _ in 0..<3 { engine.trigger("PluginDemo") }
print(engine.tryToExecute("PluginDemo") ? "PluginDemo yes" : "PluginDemo no: \(engine.explain("PluginDemo").reason)")
