// swift-tools-version:6.0
// An app package that checks its rules at build time with RulesCheckPlugin
// and loads them from its bundle. Build it with:
//   swift build --package-path examples/PluginApp
import PackageDescription

let package = Package(
    name: "PluginApp",
    dependencies: [.package(name: "Rules", path: "../..")],
    targets: [
        .executableTarget(
            name: "App",
            dependencies: [.product(name: "RuleRuntime", package: "Rules")],
            resources: [.process("app.rules")],
            plugins: [.plugin(name: "RulesCheckPlugin", package: "Rules")])
    ]
)
