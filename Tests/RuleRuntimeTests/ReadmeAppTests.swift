import Foundation
import TestSupport
import XCTest

/// The README's "In an app" snippet is `Sources/ReadmeApp/AppRules.swift`, verbatim; the
/// `readme-app` target compiles it (with the names RulesPlugin generates) and this test runs
/// it as a first launch: a fresh home directory in which no folder exists yet.
final class ReadmeAppTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    func testTheREADMEShowsTheCompiledSnippetVerbatim() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let snippet = try String(
            contentsOf: Self.root.appendingPathComponent("Sources/ReadmeApp/AppRules.swift"), encoding: .utf8)
        XCTAssertTrue(
            readme.contains("```swift\n" + snippet + "```\n"), "README's 'In an app' differs from AppRules.swift")
    }

    func testFirstLaunchOnAFreshHomeCreatesTheStateAndRemembersIt() throws {
        TemporaryFiles.watch()
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("home-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: false)
        addTeardownBlock { try? FileManager.default.removeItem(at: home) }
        let first = try run(home: home)
        XCTAssertEqual(first.status, 0, first.output)
        let statePath = home.path + "/.local/share/readme-app/rules.state"
        XCTAssertTrue(first.output.contains("state \(statePath)"), first.output)
        XCTAssertTrue(first.output.contains("FAIL  min_events 5: 1 so far"), first.output)
        XCTAssertTrue(FileManager.default.fileExists(atPath: statePath))
        // The second launch reads what the first wrote.
        let second = try run(home: home)
        XCTAssertEqual(second.status, 0, second.output)
        XCTAssertTrue(second.output.contains("FAIL  min_events 5: 2 so far"), second.output)
    }

    private func run(home: URL) throws -> (status: Int32, output: String) {
        try FreshHome.run(
            FixtureProcess.executable.deletingLastPathComponent().appendingPathComponent("readme-app"), home: home)
    }
}
