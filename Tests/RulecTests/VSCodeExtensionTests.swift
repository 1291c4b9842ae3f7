import Foundation
import XCTest

/// The VS Code extension run under Node (`editors/vscode-rules/test/check.js`): a stub of the
/// `vscode` API, a real `rulec lsp`; diagnostics, hover, completion and formatting through the
/// providers the extension registers. CI sets RULES_NODE=required; elsewhere the test is
/// skipped when no Node.js is installed.
final class VSCodeExtensionTests: XCTestCase {
    func testTheExtensionRunsUnderNodeAgainstRulecLSP() throws {
        let (status, output, errors) = try check([])
        XCTAssertEqual(status, 0, errors)
        XCTAssertEqual(output, "vscode check: diagnostics, hover, completion and formatting as expected\n", errors)
    }

    /// A `rules.rulecPath` that names no program (resolved against the workspace folder, as a
    /// relative path with a slash is): the user is told why, and the providers answer nothing.
    /// Before, Node's unhandled 'error' event (`spawn rulec ENOENT`) took the extension down silently.
    func testAMissingRulecIsReported() throws {
        let (status, output, errors) = try check(["missing"])
        XCTAssertEqual(status, 0, errors)
        XCTAssertEqual(output, "vscode check: a missing rulec is reported\n", errors)
    }

    private func check(_ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
        let node = try ExternalTool.node()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: node)
        process.arguments =
            [RulecBinary.packageRoot.appendingPathComponent("editors/vscode-rules/test/check.js").path] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["RULEC": RulecBinary.url.path]) { $1 }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output, errors)
    }
}
