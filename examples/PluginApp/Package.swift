// swift-tools-version:6.0
// An app package that checks its rules and generates their Swift names at build time with RulesPlugin
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
            // Swift 6.3 leaves typo correction off: this turns on the compiler's
            // "did you mean" for a misspelt generated name (optional).
            swiftSettings: [.unsafeFlags(["-Xfrontend", "-typo-correction-limit", "-Xfrontend", "10"])],
            plugins: [.plugin(name: "RulesPlugin", package: "Rules")])
    ]
)
