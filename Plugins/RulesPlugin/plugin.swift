import Foundation
import PackagePlugin

/// Checks a target's `.rules` files at build time and compiles Swift constants for their
/// names into the target: `rulec gen swift` checks the files as `rulec check` does (its
/// diagnostics appear in the build log and the IDE, and an error fails the build), then
/// writes `RuleNames.swift`, so `engine.tryToExecute(.askToSubscribe)` is checked by the
/// Swift compiler. The generated file is a Swift source, never a resource.
///
/// Declare the files as resources (the app loads them from its bundle):
///
///     .target(name: "App", resources: [.process("app.rules")],
///             plugins: [.plugin(name: "RulesPlugin", package: "Rules")])
@main
struct RulesPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        return try Self.commands(
            rules: target.sourceFiles.map(\.url), targetName: target.name,
            workDirectory: context.pluginWorkDirectoryURL, rulec: context.tool(named: "rulec").url)
    }

    /// The one build command for `rules` (the target's files; other extensions are ignored),
    /// shared by SwiftPM and Xcode targets.
    static func commands(rules: [URL], targetName: String, workDirectory: URL, rulec: URL) -> [Command] {
        let rules = rules.filter { $0.pathExtension == "rules" }.sorted { $0.path < $1.path }
        if rules.isEmpty { return [] }
        let output = workDirectory.appendingPathComponent("RuleNames.swift")
        return [
            .buildCommand(
                displayName: "Checking \(rules.count) .rules file(s) of \(targetName) and generating their Swift names",
                executable: rulec,
                arguments: ["gen", "swift", "--output", output.path, "--"] + rules.map(\.path),
                inputFiles: rules,
                outputFiles: [output])
        ]
    }
}

#if canImport(XcodeProjectPlugin)
    import XcodeProjectPlugin

    /// The same command for an Xcode app target's `.rules` files.
    extension RulesPlugin: XcodeBuildToolPlugin {
        func createBuildCommands(context: XcodePluginContext, target: XcodeTarget) throws -> [Command] {
            try Self.commands(
                rules: target.inputFiles.map(\.url), targetName: target.displayName,
                workDirectory: context.pluginWorkDirectoryURL, rulec: context.tool(named: "rulec").url)
        }
    }
#endif
