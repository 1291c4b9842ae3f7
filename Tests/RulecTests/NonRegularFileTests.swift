import Foundation
import TestSupport
import XCTest

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A FIFO named `*.rules` (or `.rulecignore`) in a `rulec check DIR` tree or an LSP workspace is
/// skipped with a warning and never opened: opening it would wait for a writer forever.
final class NonRegularFileTests: XCTestCase {
    /// A folder with one good file, a FIFO named like rules and a FIFO `.rulecignore` below it.
    private func folderWithFIFOs() throws -> URL {
        let root = scratchFolder("rulec-fifo")
        try "scenario A < min_events 1 >\n".write(
            to: root.appendingPathComponent("good.rules"), atomically: true, encoding: .utf8)
        XCTAssertEqual(mkfifo(root.appendingPathComponent("pipe.rules").path, 0o644), 0)
        let below = root.appendingPathComponent("below")
        try FileManager.default.createDirectory(at: below, withIntermediateDirectories: true)
        XCTAssertEqual(mkfifo(below.appendingPathComponent(".rulecignore").path, 0o644), 0)
        try "scenario B < min_events 1 >\n".write(
            to: below.appendingPathComponent("b.rules"), atomically: true, encoding: .utf8)
        return root
    }

    /// Runs `rulec ARGUMENTS`, killed after 20 s (a hang fails the test instead of the suite).
    private func run(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String, hung: Bool) {
        let process = Process()
        process.executableURL = RulecBinary.url
        process.arguments = arguments
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("rulec-out-\(UUID())")
        let err = FileManager.default.temporaryDirectory.appendingPathComponent("rulec-err-\(UUID())")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: out)
            try? FileManager.default.removeItem(at: err)
        }
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        let hung = process.isRunning
        if hung {
            process.terminate()
            process.waitUntilExit()
        }
        return (
            process.terminationStatus, try String(contentsOf: out, encoding: .utf8),
            try String(contentsOf: err, encoding: .utf8), hung
        )
    }

    func testCheckOfATreeSkipsAFIFOWithAWarning() throws {
        TemporaryFiles.watch()
        let root = try folderWithFIFOs()
        let result = try run(["check", root.path])
        XCTAssertFalse(result.hung, "rulec check hung on a FIFO")
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        // below/ has a `.rulecignore` (a FIFO, not read): the whole folder is skipped, as an
        // unreadable one is.
        XCTAssertTrue(result.stderr.contains("checked 1 file:"), result.stderr)
        XCTAssertTrue(
            result.stderr.contains("pipe.rules: warning: skipped: a FIFO, not a regular file"), result.stderr)
    }

    func testTheLanguageServerSkipsAFIFOInItsWorkspace() throws {
        TemporaryFiles.watch()
        let root = try folderWithFIFOs()
        let client = try LSPTestClient(root: root)
        // The workspace is checked at 'initialized': the good files' diagnostics (none) come back.
        let symbols = try client.result(
            "textDocument/documentSymbol",
            ["textDocument": ["uri": client.uri(root.appendingPathComponent("good.rules"))]])
        XCTAssertEqual(((symbols as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String }, ["A"])
        XCTAssertEqual(try client.shutDown(), 0)
    }
}
