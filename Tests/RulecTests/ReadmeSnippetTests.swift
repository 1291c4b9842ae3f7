import Foundation
import RuleLang
import TestSupport
import XCTest

/// Every ```swift block of the README, of docs/*.md and of the DocC articles type-checks in Swift 6 mode against the RuleRuntime this
/// run built, with the names `rulec gen swift` makes for the rules the README uses. A block
/// preceded by `<!-- not compiled: WHY -->` (another library's API, a manifest) is skipped.
final class ReadmeSnippetTests: XCTestCase {
    static let rules = """
        event launch, shared, tutorial
        param is_subscribed: bool
        param articles_read: int = 0
        scenario AskToSubscribe < min_events 5; since_first 7d; max_exec 4; between 2d >
        group Prompts < max_exec 1 within 1d > {
            scenario RateApp < on launch; min_events 3 >
            scenario InviteFriends < when (articles_read > 10) and since_last(shared) >= 4d >
        }
        scenario Tutorial < when count(tutorial) == 0 >
        event renewed
        scenario ThankForRenewing < on renewed >
        scenario PromoBanner < >
        """

    static let helpers = """
        import Foundation
        import RuleRuntime

        func showOffer() {}
        func showTutorial() {}
        let appVersion = "1.0"
        let rulesURL = URL(fileURLWithPath: "app.rules")
        let stateURL = URL(fileURLWithPath: "app.state")
        enum RatingAnswer { case rated, notNow }
        func showRatingDialog(_ answered: @escaping (RatingAnswer) -> Void) {}
        func show(_ scenario: Scenario) {}
        func sendToAnalytics(_ exposures: [Exposure], then done: @escaping () -> Void) {}

        """

    func testEveryReadmeSwiftSnippetCompiles() throws {
        // The README and the pages under docs/ that it sends readers to.
        let docs = RulecBinary.packageRoot.appendingPathComponent("docs")
        let readmeAndDocs =
            ["README.md"]
            + (try FileManager.default.contentsOfDirectory(atPath: docs.path)).filter { $0.hasSuffix(".md") }.sorted()
            .map { "docs/" + $0 }
        // The DocC articles too (the catalogs' own snippets).
        let articles = ["Sources/RuleRuntime/RuleRuntime.docc", "Sources/RuleLang/RuleLang.docc"].flatMap { catalog in
            ((try? FileManager.default.contentsOfDirectory(
                atPath: RulecBinary.packageRoot.appendingPathComponent(catalog).path)) ?? []).filter {
                    $0.hasSuffix(".md")
                }.sorted().map { catalog + "/" + $0 }
        }
        XCTAssertGreaterThanOrEqual(articles.count, 10)
        let pages = readmeAndDocs + articles
        XCTAssertGreaterThanOrEqual(pages.count, 8)
        let readme = try pages.map {
            try String(contentsOf: RulecBinary.packageRoot.appendingPathComponent($0), encoding: .utf8)
        }.joined(separator: "\n")
        let (snippets, skipped) = Self.snippets(readme)
        XCTAssertGreaterThanOrEqual(snippets.count, 4)
        XCTAssertEqual(skipped, 7, "the peers' APIs, a generated excerpt, two manifests, a main.swift and SwiftUI")
        TemporaryFiles.watch()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("readme-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: directory) }
        let rulesFile = directory.appendingPathComponent("readme.rules")
        try Self.rules.write(to: rulesFile, atomically: true, encoding: .utf8)
        let names = directory.appendingPathComponent("Names.swift")
        let generated = try RulecBinary.run(["gen", "swift", "-o", names.path, rulesFile.path])
        XCTAssertEqual(generated.status, 0, generated.stderr)
        var files = [names.path]
        var helpers = Self.helpers
        for (number, snippet) in snippets.enumerated() {
            if snippet.contains("\nimport ") || snippet.hasPrefix("import ") {
                let file = directory.appendingPathComponent("Snippet\(number).swift")
                try snippet.write(to: file, atomically: true, encoding: .utf8)
                files.append(file.path)
            } else {
                // A statement snippet runs inside a main-actor function with an engine at hand.
                helpers += "@MainActor func snippet\(number)(engine: RuleEngine) async throws {\n\(snippet)\n}\n\n"
            }
        }
        let helperFile = directory.appendingPathComponent("Helpers.swift")
        try helpers.write(to: helperFile, atomically: true, encoding: .utf8)
        files.append(helperFile.path)
        let modules = RulecBinary.url.deletingLastPathComponent().appendingPathComponent("Modules")
        let result = try Subprocess.tool(
            "swiftc",
            ["-typecheck", "-swift-version", "6", "-I", modules.path] + cModuleFlags + files,
            in: directory)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr + "\n" + helpers)
    }

    /// The README is a quick start: about 200 lines at most (215 with the app's whole manifest and
    /// `main.swift`, which a test builds as a package), the rest under docs/.
    func testTheReadmeStartsShort() throws {
        let readme = try String(
            contentsOf: RulecBinary.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        XCTAssertLessThanOrEqual(readme.split(separator: "\n", omittingEmptySubsequences: false).count, 215)
        for section in ["Changing rules after release", "App extensions", "Editors"] {
            XCTAssertTrue(readme.contains("\n## \(section)\n"), section)
        }
        for page in ["docs/rulec.md", "docs/speed.md", "docs/architecture.md", "docs/app-extensions.md", "grammar.md"] {
            XCTAssertTrue(readme.contains("(\(page))"), "the README links \(page)")
        }
    }

    /// The README's dependency lines name the package as its manifest does, in the form the
    /// plugin example uses from a folder of another name (CI builds it from a clone named `main`).
    func testTheReadmeDependencyNamesThePackage() throws {
        func read(_ path: String) throws -> String {
            try String(contentsOf: RulecBinary.packageRoot.appendingPathComponent(path), encoding: .utf8)
        }
        let readme = try read("README.md")
        let manifest = try read("Package.swift")
        let example = try read("examples/PluginApp/Package.swift")
        XCTAssertTrue(manifest.contains("name: \"Rules\""))
        for form in [".package(name: \"Rules\", path: ", ".product(name: \"RuleRuntime\", package: \"Rules\")"] {
            XCTAssertTrue(readme.contains(form), form)
            XCTAssertTrue(example.contains(form), form)
        }
        XCTAssertTrue(readme.contains(".package(url: "))
    }

    /// The README's "In an app" as a user copies it: its manifest, `AppRules.swift` and
    /// `main.swift`, taken from the README's own text, with the rules of Sources/ReadmeApp, built
    /// as a package of its own against this checkout (the manifest's dependency line swapped for
    /// its path form) and run on a fresh HOME. (The manifest had no resources and no plugin, and
    /// the code looked in `Bundle.main`: 14 errors.)
    func testTheReadmeAppBuildsAndRunsAsAPackage() throws {
        let root = RulecBinary.packageRoot
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        var blocks: [String] = []
        var current: [Substring]?
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```swift" {
                current = []
            } else if let lines = current, line == "```" {
                blocks.append(lines.joined(separator: "\n") + "\n")
                current = nil
            } else if current != nil {
                current!.append(line)
            }
        }
        let manifest = try XCTUnwrap(blocks.first { $0.contains("let package = Package(") })
        let appRules = try XCTUnwrap(blocks.first { $0.contains("final class AppRules") })
        let main = try XCTUnwrap(blocks.first { $0.contains("MainActor.assumeIsolated") && $0.contains("AppRules(") })
        let remote = ".package(url: \"https://github.com/OWNER/rules.git\", from: \"\(RulesLibrary.version)\")"
        XCTAssertTrue(manifest.contains(remote), manifest)
        let directory = scratchFolder("readme-package")
        let sources = directory.appendingPathComponent("Sources/App")
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        try manifest.replacingOccurrences(of: remote, with: ".package(name: \"Rules\", path: \"\(root.path)\")")
            .write(to: directory.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        try appRules.write(to: sources.appendingPathComponent("AppRules.swift"), atomically: true, encoding: .utf8)
        try main.write(to: sources.appendingPathComponent("main.swift"), atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(
            at: root.appendingPathComponent("Sources/ReadmeApp/app.rules"),
            to: sources.appendingPathComponent("app.rules"))
        let scratch = directory.appendingPathComponent(".build")
        let build = try Subprocess.tool(
            "swift", ["build", "--package-path", directory.path, "--scratch-path", scratch.path], in: directory)
        XCTAssertEqual(build.status, 0, build.stdout + build.stderr)
        let home = directory.appendingPathComponent("home")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        let (status, output) = try FreshHome.run(scratch.appendingPathComponent("debug/App"), home: home)
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.contains("min_events 5: 1 so far"), output)
        XCTAssertFalse(output.contains("error"), output)
    }

    /// The README's one line that installs `rulec` is the line CI runs (it greps the README for
    /// it, runs it in a home of its own and runs the installed `rulec`).
    func testTheInstallLineIsTheOneCIRuns() throws {
        let root = RulecBinary.packageRoot
        let line =
            "swift build -c release --product rulec && mkdir -p ~/.local/bin && cp .build/release/rulec ~/.local/bin/"
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        XCTAssertTrue(readme.contains("```sh\n" + line + "\n```\n"))
        let ci = try String(contentsOf: root.appendingPathComponent(".ci/run"), encoding: .utf8)
        XCTAssertTrue(ci.contains("grep -x '" + line + "' README.md"))
    }

    /// A string literal never picks a deprecated overload: calls with literals typecheck with
    /// warnings as errors (`count("launch", scope: .install)` took the deprecated `String` form).
    func testAStringLiteralNeverPicksADeprecatedOverload() throws {
        let directory = scratchFolder("readme")
        let file = directory.appendingPathComponent("Literals.swift")
        try """
        import RuleRuntime

        func literals(_ engine: RuleEngine) throws {
            engine.trigger("launch")
            engine.trigger("purchase", properties: ["amount": 12])
            _ = engine.count("launch", scope: .install)
            _ = engine.count("launch")
            _ = engine.tryToExecute("Ask")
            _ = engine.canExecute("Ask")
            engine.recordExecution("Ask")
            _ = engine.explain("Ask")
            _ = engine.present("Ask")
            try engine.recordOutcome(.later, of: "Ask")
            _ = engine.executions(of: "Ask", scope: .session)
            engine.reset("Ask")
            _ = engine.isHeldOut("Ask")
            _ = engine.controlExposures(of: "Ask")
        }
        """.write(to: file, atomically: true, encoding: .utf8)
        let modules = RulecBinary.url.deletingLastPathComponent().appendingPathComponent("Modules")
        let result = try Subprocess.tool(
            "swiftc",
            ["-typecheck", "-swift-version", "6", "-warnings-as-errors", "-I", modules.path] + cModuleFlags
                + [file.path],
            in: directory)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
    }

    /// One version: `rulec --version`, the README's dependency line and the CHANGELOG's newest
    /// heading give the library's (`RulesLibrary.version`). They said 0.1.0, 1.2.0 and "version 3".
    func testOneVersionEverywhere() throws {
        let version = RulesLibrary.version
        let root = RulecBinary.packageRoot
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        XCTAssertTrue(readme.contains(".package(url: \"https://github.com/OWNER/rules.git\", from: \"\(version)\")"))
        let changelog = try String(contentsOf: root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let heading = changelog.split(separator: "\n").first { $0.hasPrefix("## ") }
        XCTAssertEqual(heading.map { $0.hasPrefix("## \(version)") }, true, "\(heading ?? "")")
        let printed = try RulecBinary.run(["--version"])
        XCTAssertEqual(printed.status, 0)
        XCTAssertEqual(printed.stdout, "rulec \(version) (rules language \(LanguageVersion.current))\n")
    }

    /// The README's rule snippets (``` blocks with no language that are not a command's output,
    /// which starts with `$`) are in `rulec fmt`'s form, so what a reader copies formats as is.
    func testTheReadmeRuleSnippetsAreFormatted() throws {
        TemporaryFiles.watch()
        let readme = try String(
            contentsOf: RulecBinary.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        var blocks: [String] = []
        var current: [Substring]?
        var inOther = false
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil && !inOther && line.hasPrefix("```") {
                if line == "```" { current = [] } else { inOther = true }
            } else if line == "```" {
                if let block = current, block.first?.hasPrefix("$") == false {
                    blocks.append(block.joined(separator: "\n"))
                }
                current = nil
                inOther = false
            } else if current != nil {
                current!.append(line)
            }
        }
        XCTAssertEqual(blocks.count, 2, "the first example and the tour")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("readme-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for (index, block) in blocks.enumerated() {
            let file = directory.appendingPathComponent("snippet\(index).rules")
            try (block + "\n").write(to: file, atomically: true, encoding: .utf8)
            let formatted = try RulecBinary.run(["fmt", file.path])
            XCTAssertEqual(formatted.status, 0, formatted.stderr)
            XCTAssertEqual(formatted.stdout, block + "\n", "README rule snippet \(index) is not in rulec fmt's form")
        }
    }

    /// The README's ```swift blocks, and how many were marked as not compiled.
    static func snippets(_ text: String) -> (snippets: [String], skipped: Int) {
        var snippets: [String] = []
        var skipped = 0
        var current: [Substring]?
        var skipNext = false
        var previous: Substring = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```swift" {
                skipNext = previous.hasPrefix("<!-- not compiled:")
                current = []
            } else if current != nil, line == "```" {
                if skipNext { skipped += 1 } else { snippets.append(current!.joined(separator: "\n")) }
                current = nil
            } else if current != nil {
                current!.append(line)
            }
            previous = line
        }
        return (snippets, skipped)
    }
}
