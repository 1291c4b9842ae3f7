import Foundation
import TestSupport
import XCTest

final class CheckCommandTests: XCTestCase {
    func testExamplesDirectoryIsClean() throws {
        let result = try RulecBinary.run(["check", "examples"])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertEqual(result.stdout, "")
        XCTAssertTrue(result.stderr.contains(": 0 errors, 0 warnings"), result.stderr)
    }

    func testOtherToolsRulesFilesAreSkippedWithANoteUnlessListedInRulecignore() throws {
        TemporaryFiles.watch()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("firebase-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: directory) }
        try "rules_version = '2';\nservice cloud.firestore {\n  match /databases/{db}/documents {}\n}\n".write(
            to: directory.appendingPathComponent("firestore.rules"), atomically: true, encoding: .utf8)
        try "// Storage\nservice firebase.storage {\n}\n".write(
            to: directory.appendingPathComponent("storage.rules"), atomically: true, encoding: .utf8)
        try "scenario A < max_exec 1 >\n".write(
            to: directory.appendingPathComponent("app.rules"), atomically: true, encoding: .utf8)
        var result = try RulecBinary.run(["check", directory.path])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        let notes = result.stderr.split(separator: "\n").filter { $0.contains("note: skipped") }
        XCTAssertEqual(notes.count, 2, result.stderr)
        XCTAssertTrue(
            result.stderr.contains(
                "firestore.rules: note: skipped: a Firebase Security Rules file, not rules of this language; "
                    + "to skip it silently, list 'firestore.rules' in a '.rulecignore' file beside it"),
            result.stderr)
        XCTAssertTrue(result.stderr.contains("checked 1 file: 0 errors"), result.stderr)
        // Named on the command line, a file is checked whatever it holds.
        result = try RulecBinary.run(["check", directory.appendingPathComponent("firestore.rules").path])
        XCTAssertEqual(result.status, 1)
        // Listed in .rulecignore: skipped silently; the directory's other files are still checked.
        try "# Firebase\nfirestore.rules\nstorage.rules\n".write(
            to: directory.appendingPathComponent(".rulecignore"), atomically: true, encoding: .utf8)
        result = try RulecBinary.run(["check", directory.path])
        XCTAssertEqual(result.status, 0)
        XCTAssertFalse(result.stderr.contains("note: skipped"), result.stderr)
        XCTAssertTrue(result.stderr.contains("checked 1 file"), result.stderr)
    }

    func testJSONOutputIsOneObjectPerDiagnostic() throws {
        let result = try RulecBinary.run(["check", "--json", "examples/invalid/bare_duration.rules"])
        XCTAssertEqual(result.status, 1)
        let lines = result.stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, 2)
        let object = try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any]
        XCTAssertEqual(object?["id"] as? String, "bare-duration")
        XCTAssertEqual(object?["severity"] as? String, "error")
        let position = object?["position"] as? [String: Any]
        XCTAssertEqual(position?["line"] as? Int, 2)
        XCTAssertEqual(position?["column"] as? Int, 53)
        let fix = (object?["fixIts"] as? [[String: Any]])?.first
        XCTAssertEqual(fix?["replacement"] as? String, "7d")
    }

    func testWarningsAsErrors() throws {
        TemporaryFiles.watch()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("warn-\(UUID()).rules")
        try "scenario Muted < max_exec 0 >\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let plain = try RulecBinary.run(["check", file.path])
        XCTAssertEqual(plain.status, 0)
        XCTAssertTrue(plain.stdout.contains(":1:18: warning: 'max_exec 0' means the scenario never runs"), plain.stdout)
        let strict = try RulecBinary.run(["check", "--warnings-as-errors", file.path])
        XCTAssertEqual(strict.status, 1)
        XCTAssertTrue(strict.stdout.contains(":1:18: error: 'max_exec 0'"), strict.stdout)
    }

    func testStampIsWrittenOnlyWhenThereIsNoError() throws {
        TemporaryFiles.watch()
        let stamp = FileManager.default.temporaryDirectory.appendingPathComponent("stamp-\(UUID())")
        let failed = try RulecBinary.run(["check", "--stamp", stamp.path, "examples/invalid/unknown_clause.rules"])
        XCTAssertEqual(failed.status, 1)
        XCTAssertFalse(FileManager.default.fileExists(atPath: stamp.path))
        let passed = try RulecBinary.run(["check", "--stamp", stamp.path, "examples/app.rules"])
        XCTAssertEqual(passed.status, 0)
        XCTAssertTrue(FileManager.default.fileExists(atPath: stamp.path))
        XCTAssertEqual(try RulecBinary.run(["check", "examples", "--stamp"]).status, 64)
    }

    func testMisuseExits64WithUsage() throws {
        for arguments in [
            ["check"], ["check", "--bogus", "examples"], ["chek", "examples"], [],
            ["check", "no/such/path.rules"],
        ] {
            let result = try RulecBinary.run(arguments)
            XCTAssertEqual(result.status, 64, "\(arguments)")
            XCTAssertTrue(result.stderr.hasPrefix("error: "), "\(arguments): \(result.stderr)")
        }
        let suggestion = try RulecBinary.run(["chek"])
        XCTAssertTrue(suggestion.stderr.contains("did you mean 'check'?"), suggestion.stderr)
        XCTAssertTrue(try RulecBinary.run(["check", "--bogus"]).stderr.contains("Usage: rulec check"))
    }

    func testHelp() throws {
        for arguments in [["--help"], ["check", "--help"]] {
            let result = try RulecBinary.run(arguments)
            XCTAssertEqual(result.status, 0)
            XCTAssertTrue(result.stdout.contains("Usage: rulec"))
        }
    }

    func testNoColorWhenPiped() throws {
        let result = try RulecBinary.run(["check", "examples/invalid/unknown_clause.rules"])
        XCTAssertFalse(result.stdout.contains("\u{1B}["))
    }
}
