// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Rules",
    platforms: [.macOS(.v12), .iOS(.v15), .tvOS(.v15), .watchOS(.v8)],
    products: [
        .library(name: "RuleLang", targets: ["RuleLang"]),
        .library(name: "RuleRuntime", targets: ["RuleRuntime"]),
        .library(name: "RuleTimeline", targets: ["RuleTimeline"]),
        .library(name: "RuleTools", targets: ["RuleTools"]),
        // The same rules over many installs' state in PostgreSQL, for servers: apps never link it.
        .library(name: "RuleServer", targets: ["RuleServer"]),
        .executable(name: "rulec", targets: ["rulec"]),
        // `rulec server`: a tool of its own, so that rulec (and the build plugin) never needs libpq.
        .executable(name: "rulec-server", targets: ["rulec-server"]),
        .plugin(name: "RulesPlugin", targets: ["RulesPlugin"]),
    ],
    targets: [
        .target(name: "RuleLang"),
        // What tools do with rules (format, compare, generate Swift): rulec and the language
        // server use it; apps link RuleLang and RuleRuntime without it.
        .target(name: "RuleTools", dependencies: ["RuleLang"]),
        // The system zlib, for the state file's CRC-32 (a system library, no package).
        .systemLibrary(name: "CZlib", path: "Sources/CZlib"),
        // A SIGBUS guard for the shared region's mapping (PATH.shm cut short by something else).
        .target(name: "CRegionGuard"),
        // CRC-32 folded by carry-less multiplication where the CPU has it (x86-64).
        .target(name: "CRuleChecksum"),
        // File system calls the system modules leave out (swapping two paths' files).
        .target(name: "CFileCalls"),
        .target(
            name: "RuleRuntime", dependencies: ["RuleLang", "CZlib", "CRegionGuard", "CRuleChecksum", "CFileCalls"]),
        // libpq, PostgreSQL's C client, found by pkg-config (a system library, no package).
        .systemLibrary(
            name: "CLibPQ", path: "Sources/CLibPQ", pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]),
        .target(name: "RuleServer", dependencies: ["RuleLang", "RuleRuntime", "CLibPQ"]),
        .executableTarget(
            name: "rulec-server", dependencies: ["RuleLang", "RuleRuntime", "RuleServer"], path: "Sources/RulecServer"),
        // Worker processes of RuleServerTests (four processes trying the same installs at once).
        .executableTarget(name: "rule-server-worker", dependencies: ["RuleLang", "RuleServer"], path: "Sources/RuleServerWorker"),
        // The timeline format (grammar.md, section 10): rulec simulate and apps' own tests replay with it.
        .target(name: "RuleTimeline", dependencies: ["RuleLang", "RuleRuntime"]),
        // rulec lsp's server, a library so that rulebench and the fuzz target drive it in process.
        .target(name: "RuleLSP", dependencies: ["RuleLang", "RuleTools"]),
        .executableTarget(
            name: "rulec", dependencies: ["RuleLang", "RuleTools", "RuleRuntime", "RuleTimeline", "RuleLSP"]),
        .executableTarget(
            name: "rulebench", dependencies: ["RuleLang", "RuleRuntime", "RuleLSP", "RuleServer", "ScratchPostgres"]),
        // A PostgreSQL of its own on a temporary folder, for RuleServer's tests and `rulebench server`.
        .target(name: "ScratchPostgres"),
        // Child processes for the persistence tests (SIGKILL cycles, two processes locking).
        .executableTarget(name: "rule-test-fixture", dependencies: ["RuleLang", "RuleRuntime"], path: "Sources/RuleTestFixture"),
        // The README's "In an app" example, compiled and run on a fresh HOME by ReadmeAppTests.
        .executableTarget(
            name: "readme-app", dependencies: ["RuleRuntime"], path: "Sources/ReadmeApp",
            resources: [.process("app.rules")], plugins: ["RulesPlugin"]),
        .plugin(name: "RulesPlugin", capability: .buildTool(), dependencies: ["rulec"]),
        // Removes what each test made in the temporary folder, pass or fail.
        .target(name: "TestSupport", dependencies: ["ScratchPostgres"], path: "Tests/TestSupport"),
        .testTarget(name: "RuleLangTests", dependencies: ["RuleLang", "RuleTools"]),
        .testTarget(
            name: "RuleRuntimeTests", dependencies: [
                "RuleRuntime", "CRuleChecksum", "rule-test-fixture", "readme-app", "TestSupport",
            ]),
        .testTarget(
            name: "RuleServerTests",
            dependencies: ["RuleServer", "RuleRuntime", "TestSupport", "rule-server-worker", "rulec-server", "rulec"]),
        .testTarget(name: "RulecTests", dependencies: [
                "rulec", "RuleLang", "RuleTools", "RuleRuntime", "RuleTimeline", "RuleLSP", "TestSupport",
            ]),
    ]
)
