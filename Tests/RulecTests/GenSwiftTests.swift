import Foundation
import RuleLang
import RuleTools
import TestSupport
import XCTest

/// `rulec gen swift`: names, collisions, the golden output for examples/app.rules, and the
/// generated source compiled against RuleRuntime with every handle overload.
final class GenSwiftTests: XCTestCase {
    func testSwiftNames() {
        let cases: [(String, String)] = [
            ("AskToSubscribe", "askToSubscribe"), ("share sheet opened", "shareSheetOpened"),
            ("is_subscribed", "isSubscribed"), ("episode-played", "episodePlayed"), ("URLOpened", "urlOpened"),
            ("URL", "url"), ("launch", "launch"), ("3d touch", "_3dTouch"), ("default", "`default`"),
            ("self", "`self`"), ("in", "`in`"), ("Type", "type"), ("a__b", "aB"), ("__x", "x"),
            ("café ouvert", "caféOuvert"), ("😀", ""), ("x1_y2", "x1Y2"), ("HTTPServer2", "httpServer2"),
        ]
        for (rule, swift) in cases {
            XCTAssertEqual(SwiftGenerator.swiftName(rule), swift, rule)
        }
    }

    func testGoldenOutputForAppRules() throws {
        let result = try RulecBinary.run(["gen", "swift", "examples/app.rules"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "")
        let golden = try String(
            contentsOf: RulecBinary.packageRoot.appendingPathComponent("examples/AppRuleNames.swift"), encoding: .utf8)
        XCTAssertEqual(result.stdout, golden, "regenerate with: swift run rulec gen swift examples/app.rules")
    }

    func testOutputIsSortedAndDeterministic() throws {
        let text = """
            event zeta, alpha, "Mid point"
            param b_flag: bool
            param a_count: int = 1
            scenario Zed < on zeta; when (a_count > 0) and b_flag >
            scenario Able < on alpha; min_events 2 >
            scenario Mid < on "Mid point" >
            """
        let first = SwiftGenerator.generate(RuleCompiler.check(text: text, path: "x.rules"))
        let second = SwiftGenerator.generate(RuleCompiler.check(text: text, path: "x.rules"))
        let source = try XCTUnwrap(first.source)
        XCTAssertEqual(source, second.source)
        let order = ["able", "mid", "zed", "alpha", "midPoint", "zeta", "bFlag", "aCount"].map {
            source.range(of: "static let \($0) =")?.lowerBound
        }
        XCTAssertFalse(order.contains(nil), source)
        XCTAssertEqual(order.compactMap { $0 }, order.compactMap { $0 }.sorted(), source)
        XCTAssertTrue(source.contains("static let midPoint = Event(resolvingOnce: \"Mid point\")"), source)
    }

    func testEventsAreTheNamedStreamsWhenNoneIsDeclared() throws {
        let text = """
            scenario A < on launch, "share sheet"; when (count(opened) > 1) and todo(banner) and (executions(B) == 0) >
            scenario B < on launch >
            scenario Own < min_events 2 >
            scenario NoStream < max_exec 1 >
            """
        let source = try XCTUnwrap(SwiftGenerator.generate(RuleCompiler.check(text: text)).source)
        for name in ["launch", "shareSheet", "opened", "banner"] {
            XCTAssertTrue(source.contains("static let \(name) = Event("), name)
        }
        XCTAssertFalse(source.contains("static let b = Event"), "executions() names a scenario, not a stream")
        XCTAssertTrue(
            source.contains("static let own = Event(resolvingOnce: \"Own\")"),
            "a scenario without 'on' counts its own stream")
        XCTAssertFalse(source.contains("static let noStream = Event"), "it counts no event")
        XCTAssertTrue(source.contains("/// A stream the rules name, in `A`, `B`."), source)
    }

    func testTwoNamesBecomingOneSwiftNameIsAnErrorNamingBoth() throws {
        let text = """
            event share_sheet_opened
            event "share sheet opened"
            scenario A < on share_sheet_opened, "share sheet opened" >
            """
        let (source, diagnostics) = SwiftGenerator.generate(RuleCompiler.check(text: text, path: "c.rules"))
        XCTAssertNil(source)
        let lines = diagnostics.filter { $0.severity == .error }.map { "\($0.location): \($0.message)" }
        XCTAssertEqual(
            lines,
            [
                "2:7: 'share_sheet_opened' and 'share sheet opened' both become the Swift name 'shareSheetOpened'; "
                    + "rename one of them"
            ])
        XCTAssertEqual(diagnostics.first { $0.severity == .error }?.notes.first?.span?.start.line, 1)
    }

    func testParamsShareOneNamespaceAcrossTypes() throws {
        let text = "param is_on: bool\nparam isOn: int\nscenario A < when is_on and (isOn > 0) >"
        let (source, diagnostics) = SwiftGenerator.generate(RuleCompiler.check(text: text))
        XCTAssertNil(source)
        XCTAssertEqual(diagnostics.map(\.id), [.swiftNameCollision])
    }

    func testNameWithoutLettersIsAnError() throws {
        let (source, diagnostics) = SwiftGenerator.generate(
            RuleCompiler.check(text: "event \"😀\"\nscenario A < on \"😀\" >"))
        XCTAssertNil(source)
        XCTAssertEqual(diagnostics.map(\.id), [.noSwiftName])
    }

    func testErrorsStopGenerationWithTheUsualDiagnostics() throws {
        let directory = try temporaryDirectory()
        let rules = directory.appendingPathComponent("bad.rules")
        try "event launch\nscenario A < on lanch >\n".write(to: rules, atomically: true, encoding: .utf8)
        let output = directory.appendingPathComponent("Names.swift")
        let result = try RulecBinary.run(["gen", "swift", "-o", output.path, rules.path])
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(result.stdout, "")
        XCTAssertTrue(
            result.stderr.contains("bad.rules:2:17: error: unknown event 'lanch'; did you mean 'launch'?"),
            result.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: output.path))
    }

    func testAccessAndOutputFile() throws {
        let directory = try temporaryDirectory()
        let output = directory.appendingPathComponent("Names.swift")
        let result = try RulecBinary.run([
            "gen", "swift", "--access", "public", "-o", output.path, "examples/seeds/waitforit_share.rules",
        ])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "")
        let source = try String(contentsOf: output, encoding: .utf8)
        XCTAssertTrue(source.contains("\nextension Scenario {"), source)
        XCTAssertFalse(source.contains("public extension"), "members are public, not their extensions (a warning)")
        XCTAssertTrue(source.contains("    public static let "), source)
        XCTAssertEqual(try RulecBinary.run(["gen", "swift", "--access", "open", "examples"]).status, 64)
        XCTAssertEqual(try RulecBinary.run(["gen", "kotlin", "examples"]).status, 64)
        XCTAssertEqual(try RulecBinary.run(["gen", "swift"]).status, 64)
    }

    // MARK: - Compiled

    /// Every handle overload, called through the names generated for examples/app.rules.
    static let callsEveryOverload = """
        import Foundation
        import RuleRuntime

        func use(_ engine: RuleEngine) throws {
            engine.trigger(.launch)
            engine.markDone(.shared)
            let ran: Bool = engine.tryToExecute(.rateApp)
            let could: Bool = engine.canExecute(.inviteFriends)
            let why: Explanation = engine.explain(.onboarding)
            engine.reset(.whatsNew)
            engine.reset(group: .prompts)
            let next: Scenario? = engine.executeNext(among: [.rateApp, .upgrade, .comeBack])
            try engine.set(.isSubscribed, to: true)
            try engine.set(.articlesRead, to: 3)
            try engine.set(.plan, to: "pro")
            try engine.set(.idleTime, to: 60)
            try engine.provide(.articlesRead) { 4 }
            try engine.provide(.isSubscribed) { false }
            let subscribed: Bool = engine.value(of: .isSubscribed)
            let articles: Int = engine.value(of: .articlesRead)
            let plan: String = engine.value(of: .plan)
            let idle: TimeInterval = engine.value(of: .idleTime)
            print(ran, could, why.wouldRun, next as Any, subscribed, articles, plan, idle)
            engine.trigger("a string still works")
            _ = engine.tryToExecute("DebugMenu")
        }

        """

    func testGeneratedNamesCompileWithEveryOverload() throws {
        let result = try typecheck(Self.callsEveryOverload)
        XCTAssertEqual(result.status, 0, result.output)
    }

    func testMisspeltGeneratedNamesFailToCompileWithDidYouMean() throws {
        let misspellings = [
            ("engine.tryToExecute(.rateApp)", "engine.tryToExecute(.rateAp)", "Scenario", "rateAp", "rateApp"),
            ("engine.trigger(.launch)", "engine.trigger(.lanch)", "Event", "lanch", "launch"),
            ("engine.reset(group: .prompts)", "engine.reset(group: .promts)", "RuleGroup", "promts", "prompts"),
            ("engine.set(.plan, to:", "engine.set(.plann, to:", "Param<String>", "plann", "plan"),
            (
                "engine.canExecute(.inviteFriends)", "engine.canExecute(.inviteFriend)", "Scenario", "inviteFriend",
                "inviteFriends"
            ),
        ]
        for (right, wrong, type, written, meant) in misspellings {
            let program = Self.callsEveryOverload.replacingOccurrences(of: right, with: wrong)
            XCTAssertNotEqual(program, Self.callsEveryOverload, right)
            let result = try typecheck(program)
            XCTAssertNotEqual(result.status, 0, wrong)
            XCTAssertTrue(
                result.output.contains("main.swift:")
                    && result.output.contains(
                        "error: type '\(type)' has no member '\(written)'; did you mean '\(meant)'?"),
                "\(wrong):\n\(result.output)")
        }
    }

    /// `tryToExecute` spends an execution when it answers yes: an unused call is a warning.
    func testAnUnusedTryToExecuteIsAWarning() throws {
        let program =
            Self.callsEveryOverload + "func unused(_ engine: RuleEngine) {\n    engine.tryToExecute(.rateApp)\n}\n"
        let result = try typecheck(program)
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertTrue(
            result.output.contains("warning: result of call to 'tryToExecute' is unused"), result.output)
        XCTAssertFalse(try typecheck(Self.callsEveryOverload).output.contains("warning:"))
    }

    /// An event with properties gets an occurrence type: the typed trigger compiles, and one that
    /// misses a property, names an unknown one or gives another type fails to compile.
    func testTypedTriggersCompileAndAMissingPropertyDoesNot() throws {
        let main = """
            import RuleRuntime

            func use(_ engine: RuleEngine) {
                engine.trigger(.purchase(amount: 1200, plan: "pro"))
                engine.trigger(.purchase)
                engine.trigger(Event.PurchaseOccurrence(amount: 5, plan: "free"))
            }

            """
        let rules = "examples/offers/purchase.rules"
        for access in ["internal", "public"] {
            let good = try typecheck(main, rules: rules, access: access)
            XCTAssertEqual(good.status, 0, good.output)
            XCTAssertFalse(good.output.contains("warning:"), good.output)
        }
        let mistakes = [
            ("(amount: 1200, plan: \"pro\")", "(amount: 1200)", "missing argument for parameter 'plan' in call"),
            (
                "(amount: 1200, plan: \"pro\")", "(amount: \"1200\", plan: \"pro\")",
                "cannot convert value of type 'String'"
            ),
            (
                "(amount: 1200, plan: \"pro\")", "(amount: 1200, plan: \"pro\", trial: true)",
                "cannot call value of non-function type 'Event'"
            ),
        ]
        for (right, wrong, message) in mistakes {
            let result = try typecheck(main.replacingOccurrences(of: right, with: wrong), rules: rules)
            XCTAssertNotEqual(result.status, 0, wrong)
            XCTAssertTrue(result.output.contains("error: \(message)"), "\(wrong):\n\(result.output)")
        }
    }

    /// Two properties of one event that become one Swift name stop generation, naming both.
    func testTwoPropertiesBecomingOneSwiftNameIsAnError() throws {
        let text = "# language 1.2\nevent buy(plan_id: string, planId: int)\nscenario S < when (count(buy) > 0) >\n"
        let (source, diagnostics) = SwiftGenerator.generate(RuleCompiler.check(text: text, path: "c.rules"))
        XCTAssertNil(source)
        let lines = diagnostics.filter { $0.severity == .error }.map { "\($0.location): \($0.message)" }
        XCTAssertEqual(lines, ["2:28: 'plan_id' and 'planId' both become the Swift name 'planId'; rename one of them"])
        XCTAssertEqual(diagnostics.first { $0.severity == .error }?.notes.first?.span?.start.column, 11)
    }

    /// Type-checks `main` with the names generated for examples/app.rules against the RuleRuntime
    /// module this test run built (typo correction on: Swift 6.3 leaves it off by default).
    private func typecheck(
        _ main: String, rules: String = "examples/app.rules", access: String = "internal"
    ) throws -> (status: Int32, output: String) {
        let directory = try temporaryDirectory()
        let names = directory.appendingPathComponent("AppRuleNames.swift")
        let generated = try RulecBinary.run(["gen", "swift", "--access", access, "-o", names.path, rules])
        XCTAssertEqual(generated.status, 0, generated.stderr)
        let mainFile = directory.appendingPathComponent("main.swift")
        try main.write(to: mainFile, atomically: true, encoding: .utf8)
        let modules = RulecBinary.url.deletingLastPathComponent().appendingPathComponent("Modules")
        let result = try Subprocess.tool(
            "swiftc",
            [
                "-typecheck", "-I", modules.path, "-Xfrontend", "-typo-correction-limit", "-Xfrontend", "10",
                names.path, mainFile.path,
            ] + cModuleFlags, in: directory)
        return (result.status, result.stdout + result.stderr)
    }

    /// The throwaway package: the generated file and a `main.swift` calling every overload,
    /// built with `swift build` against this package; then one misspelt name fails the build with
    /// the compiler naming the near miss. (One scratch folder: the second build is incremental.)
    func testAThrowawayPackageBuildsAndAMisspeltNameFailsIt() throws {
        let directory = try temporaryDirectory()
        let sources = directory.appendingPathComponent("Sources/Use")
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        let manifest = """
            // swift-tools-version:6.0
            import PackageDescription

            let package = Package(
                name: "Throwaway",
                dependencies: [.package(name: "Rules", path: "\(RulecBinary.packageRoot.path)")],
                targets: [
                    .executableTarget(
                        name: "Use", dependencies: [.product(name: "RuleRuntime", package: "Rules")],
                        swiftSettings: [.unsafeFlags(["-Xfrontend", "-typo-correction-limit", "-Xfrontend", "10"])])
                ]
            )

            """
        try manifest.write(to: directory.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        let names = sources.appendingPathComponent("AppRuleNames.swift")
        XCTAssertEqual(try RulecBinary.run(["gen", "swift", "-o", names.path, "examples/app.rules"]).status, 0)
        let main = sources.appendingPathComponent("main.swift")
        try Self.callsEveryOverload.write(to: main, atomically: true, encoding: .utf8)
        let build = [
            "build", "--package-path", directory.path, "--scratch-path",
            directory.appendingPathComponent(".build").path,
        ]
        var result = try Subprocess.tool("swift", build, in: directory)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        try Self.callsEveryOverload.replacingOccurrences(of: "tryToExecute(.rateApp)", with: "tryToExecute(.rateAp)")
            .write(to: main, atomically: true, encoding: .utf8)
        result = try Subprocess.tool("swift", build, in: directory)
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(
            (result.stdout + result.stderr).contains(
                "main.swift:7:42: error: type 'Scenario' has no member 'rateAp'; did you mean 'rateApp'?"),
            result.stdout + result.stderr)
    }

    private func temporaryDirectory() throws -> URL { scratchFolder("gen") }
}

/// The folder of the system zlib's module map: RuleRuntime's module names it, and SwiftPM passes
/// it to a package's users; a bare `swiftc` needs it given.
let zlibModule = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Sources/CZlib")

/// The `-I` flags of the module maps RuleRuntime's C modules need, for a bare `swiftc` as
/// `zlibModule`: zlib's, the shared region's SIGBUS guard's, the folded CRC-32's and the file
/// calls' (C targets).
let cModuleFlags = [
    zlibModule, zlibModule.deletingLastPathComponent().appendingPathComponent("CRegionGuard/include"),
    zlibModule.deletingLastPathComponent().appendingPathComponent("CRuleChecksum/include"),
    zlibModule.deletingLastPathComponent().appendingPathComponent("CFileCalls/include"),
].flatMap { ["-I", $0.path] }
