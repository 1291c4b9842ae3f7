import Foundation
import XCTest

/// The VS Code extension run under Node (`editors/vscode-rules/test/check.js`): a stub of the
/// `vscode` API, a real `rulec lsp`; diagnostics, hover, completion and formatting through the
/// providers the extension registers. CI sets RULES_NODE=required; elsewhere the test is
/// skipped when no Node.js is installed.
final class VSCodeExtensionTests: XCTestCase {
    func testTheExtensionRunsUnderNodeAgainstRulecLSP() throws {
        let node = try ExternalTool.node()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: node)
        process.arguments = [RulecBinary.packageRoot.appendingPathComponent("editors/vscode-rules/test/check.js").path]
        process.environment = ProcessInfo.processInfo.environment.merging(["RULEC": RulecBinary.url.path]) { $1 }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, errors)
        XCTAssertEqual(output, "vscode check: diagnostics, hover, completion and formatting as expected\n", errors)
    }
}
