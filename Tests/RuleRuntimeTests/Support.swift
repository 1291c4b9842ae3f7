import Foundation
import RuleRuntime
import TestSupport
import XCTest

let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

/// An engine over `source` with a manual clock at a fixed start and an in-memory store.
func makeEngine(
    _ source: String, store: RuleStore = InMemoryStore(),
    file: StaticString = #filePath, line: UInt = #line
) throws -> (RuleEngine, ManualClock) {
    let clock = ManualClock()
    return (try RuleEngine(source: source, store: store, clock: clock), clock)
}

/// An engine over one of `examples/`.
func exampleEngine(_ relative: String) throws -> (RuleEngine, ManualClock) {
    let clock = ManualClock()
    let engine = try RuleEngine(contentsOf: packageRoot.appendingPathComponent("examples/" + relative), clock: clock)
    return (engine, clock)
}

func temporaryURL(_ name: String) -> URL {
    TemporaryFiles.watch()
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rules-tests-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory.appendingPathComponent(name)
}

/// A child process of `rule-test-fixture`, its standard output read line by line.
final class FixtureProcess {
    let process = Process()
    private let output: FileHandle
    private var buffer = Data()

    static var executable: URL {
        var url = Bundle.main.bundleURL.appendingPathComponent("rule-test-fixture")
        #if os(macOS)
            for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
                url = bundle.bundleURL.deletingLastPathComponent().appendingPathComponent("rule-test-fixture")
            }
        #endif
        return url
    }

    /// Standard input, when the child was started with one to write to.
    private(set) var input: FileHandle?

    init(_ arguments: [String], input wantsInput: Bool = false) throws {
        process.executableURL = FixtureProcess.executable
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        output = pipe.fileHandleForReading
        if wantsInput {
            let inputPipe = Pipe()
            process.standardInput = inputPipe
            input = inputPipe.fileHandleForWriting
        }
        try process.run()
    }

    /// Writes one line to the child's standard input.
    func send(_ line: String) {
        input?.write(Data((line + "\n").utf8))
    }

    /// The next line the child prints (nil once it has stopped).
    func readLine() -> String? {
        while true {
            if let end = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<end], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...end)
                return line
            }
            let chunk = output.availableData
            if chunk.isEmpty { return nil }
            buffer.append(chunk)
        }
    }

    /// Reads the numbers the child prints until one reaches `target` (or the child stops);
    /// returns the last one read.
    /// The last number ``readCounts(until:)`` read.
    private(set) var lastCount = 0

    func readCounts(until target: Int) -> Int {
        var last = lastCount
        while last < target {
            let chunk = output.availableData
            if chunk.isEmpty { break }
            buffer.append(chunk)
            if let end = buffer.lastIndex(of: UInt8(ascii: "\n")) {
                let lines = String(decoding: buffer[..<end], as: UTF8.self).split(separator: "\n")
                last = lines.last.flatMap { Int($0) } ?? last
                buffer.removeSubrange(...end)
            }
        }
        lastCount = last
        return last
    }

    /// Everything the child prints until it exits.
    func readToEnd() -> String {
        let data = output.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: buffer + data, as: UTF8.self)
    }

    func kill() {
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
