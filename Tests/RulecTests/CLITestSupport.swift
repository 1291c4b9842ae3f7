import Foundation
import XCTest

/// Runs the built `rulec` binary and captures its output and exit status.
struct CommandResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

enum RulecBinary {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    static var url: URL {
        #if os(macOS)
            for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
                return bundle.bundleURL.deletingLastPathComponent().appendingPathComponent("rulec")
            }
        #endif
        return Bundle.main.bundleURL.appendingPathComponent("rulec")
    }

    /// Runs `rulec ARGUMENTS` with the package root as working directory.
    static func run(_ arguments: [String]) throws -> CommandResult {
        try Subprocess.run(url, arguments, in: packageRoot)
    }
}

/// Child processes of the tests: `rulec`, `swiftc`, `swift build`.
enum Subprocess {
    /// Runs `executable ARGUMENTS` in `directory` and captures its output and exit status.
    static func run(_ executable: URL, _ arguments: [String], in directory: URL) throws -> CommandResult {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Read both pipes fully before waiting, so a large output cannot block the child.
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return CommandResult(
            status: process.terminationStatus,
            stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }

    /// A tool of the toolchain on PATH (`swiftc`, `swift`), through `/usr/bin/env`.
    static func tool(_ name: String, _ arguments: [String], in directory: URL) throws -> CommandResult {
        try run(URL(fileURLWithPath: "/usr/bin/env"), [name] + arguments, in: directory)
    }
}

/// Tools the editor and browser checks run on, from Debian's packages in CI.
enum ExternalTool {
    /// The first of `candidates` installed. When none is: fails the test where
    /// `RULES_<VARIABLE>=required` (CI installs them), else skips it.
    static func find(_ candidates: [String], variable: String, what: String) throws -> String {
        if let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) { return found }
        if ProcessInfo.processInfo.environment[variable] == "required" {
            XCTFail("\(variable)=required and no \(what) found")
        }
        throw XCTSkip("no \(what) installed (CI installs Debian's)")
    }

    static func node() throws -> String {
        try find(["/usr/bin/node", "/usr/bin/nodejs", "/usr/local/bin/node"], variable: "RULES_NODE", what: "Node.js")
    }

    static func chromium() throws -> String {
        let given = ProcessInfo.processInfo.environment["CHROMIUM"].map { [$0] } ?? []
        return try find(
            given + ["/usr/bin/chromium", "/usr/bin/chromium-browser"], variable: "RULES_BROWSER", what: "chromium")
    }
}
