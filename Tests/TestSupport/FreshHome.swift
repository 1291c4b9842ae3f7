import Foundation

/// An app run as on a fresh install: `executable` with `HOME` set to `home` (and no
/// `XDG_DATA_HOME`, so that its Application Support folder is under that home).
public enum FreshHome {
    /// Runs `executable` in `home` and returns its exit status and its output (standard output
    /// and standard error, as one).
    public static func run(_ executable: URL, home: URL) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = executable
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = home.path
        environment["XDG_DATA_HOME"] = nil
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
