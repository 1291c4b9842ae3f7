import Foundation
import PackagePlugin

/// Runs `rulec check` on a target's `.rules` files at build time, so their
/// diagnostics appear in the build log and the IDE, and a rule error fails the build.
///
/// Declare the files as resources (the app loads them from its bundle):
///
///     .target(name: "App", resources: [.process("app.rules")],
///             plugins: [.plugin(name: "RulesCheckPlugin", package: "Rules")])
@main
struct RulesCheckPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let rules = target.sourceFiles.map(\.url).filter { $0.pathExtension == "rules" }
            .sorted { $0.path < $1.path }
        if rules.isEmpty { return [] }
        let stamp = context.pluginWorkDirectoryURL.appendingPathComponent("\(target.name).rules-checked")
        return [
            .buildCommand(
                displayName: "Checking \(rules.count) .rules file(s) of \(target.name)",
                executable: try context.tool(named: "rulec").url,
                arguments: ["check", "--stamp", stamp.path] + rules.map(\.path),
                inputFiles: rules,
                outputFiles: [stamp])
        ]
    }
}
