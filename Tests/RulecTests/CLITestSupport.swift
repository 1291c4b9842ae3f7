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
    static func run(_ arguments: [String], input: String? = nil) throws -> CommandResult {
        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        process.currentDirectoryURL = packageRoot
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
}
