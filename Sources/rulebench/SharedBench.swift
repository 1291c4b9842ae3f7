import Foundation
import RuleRuntime

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

// The goals of issue 21: one state file shared by several processes.

/// A trigger and a refused tryToExecute over a shared file, each beside its limit measured in
/// the same rounds; then how soon another process sees a trigger.
func sharedBenchmarks(_ goals: inout [Goal]) throws {
    let path = temporaryPath("shared.state")
    let store = FileStore(url: path, options: .init(shared: true))
    let engine = try RuleEngine(source: card, store: store)
    for _ in 0..<RuleEngine.Options().recentLimit + 1 { engine.trigger("AskToSubscribe") }
    let before = (try? FileManager.default.attributesOfItem(atPath: path.path)[.size] as? Int) ?? 0
    engine.trigger("AskToSubscribe")
    let after = (try? FileManager.default.attributesOfItem(atPath: path.path)[.size] as? Int) ?? 0
    let recordSize = max(1, after - before)
    let rawPath = temporaryPath("shared-raw")
    let raw = open(rawPath.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
    defer { close(raw) }
    let record = [UInt8](repeating: 7, count: recordSize)
    let writes = interleaved(
        batch: 5_000,
        [
            { _ = record.withUnsafeBytes { write(raw, $0.baseAddress, recordSize) } },
            { engine.trigger("AskToSubscribe") },
        ])
    line("limit: one write(2) of \(recordSize) B", writes.samples[0].summary)
    line("trigger, shared file store", writes.samples[1].summary + "; \(store.compactions) compactions")
    let triggerRatio = writes.ratio(1, to: 0)
    line("  shared trigger / write, per round", triggerRatio.ratioSummary)
    goals.append(
        Goal(key: "trigger_shared_vs_write", value: triggerRatio.median, unit: "x", limit: 2.5, atMost: true))

    // A refused tryToExecute when no other process wrote: one load of the shared counter more.
    _ = engine.tryToExecute("AskToSubscribe")
    let tries = interleaved(batch: 20_000, [refusedCallLimit(), { _ = engine.tryToExecute("AskToSubscribe") }])
    line("tryToExecute (answers no), shared file", tries.samples[1].summary)
    let tryRatio = tries.ratio(1, to: 0)
    line("  shared tryToExecute / limit, per round", tryRatio.ratioSummary)
    goals.append(Goal(key: "try_shared_vs_limit", value: tryRatio.median, unit: "x", limit: 1.5, atMost: true))

    try visibility(&goals)
}

/// Another process triggers; this one calls `count` until it sees it. Every call that began
/// after the other process's trigger returned must see it (goal: the next call).
func visibility(_ goals: inout [Goal]) throws {
    let path = temporaryPath("visible.state")
    let engine = try RuleEngine(source: card, store: FileStore(url: path, options: .init(shared: true)))
    let child = Process()
    child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    child.arguments = ["shared-child", path.path]
    let input = Pipe()
    let output = Pipe()
    child.standardInput = input
    child.standardOutput = output
    try child.run()
    defer {
        input.fileHandleForWriting.closeFile()
        child.waitUntilExit()
    }
    let reader = LineReader(output.fileHandleForReading)
    guard reader.next() == "ready" else { throw RuleEngineError.unreadable(path: "shared-child") }
    var visible: [Double] = []
    var late = 0
    var seen = engine.count("x")
    for _ in 0..<500 {
        input.fileHandleForWriting.write(Data("go\n".utf8))
        var starts: [UInt64] = []
        var seenAt: UInt64 = 0
        while true {
            let start = nanoseconds()
            let count = engine.count("x")
            if count > seen {
                seen = count
                seenAt = nanoseconds()
                break
            }
            starts.append(start)
        }
        let parts = (reader.next() ?? "").split(separator: " ").compactMap { UInt64($0) }
        guard parts.count == 2 else { throw RuleEngineError.unreadable(path: "shared-child") }
        // Calls that began after the trigger returned and still did not see it.
        late += starts.filter { $0 > parts[1] }.count
        visible.append(Double(seenAt &- parts[0]))
    }
    let samples = Samples(visible)
    line("visible in another process, from its trigger", samples.summary + "; \(late) later calls missed it")
    goals.append(Goal(key: "visible_ms", value: samples.median / 1e6, unit: "ms", limit: 1, atMost: true))
    goals.append(Goal(key: "visible_p99_ms", value: samples.percentile(0.99) / 1e6, unit: "ms", limit: 5, atMost: true))
    goals.append(Goal(key: "visible_missed_calls", value: Double(late), unit: "", limit: 0, atMost: true))
}

/// `rulebench shared-child PATH`: for each line read, triggers `x` on the shared file at PATH
/// and prints the times (uptime nanoseconds) before the trigger and after it returned.
func sharedChild(_ path: String) throws -> Never {
    let engine = try RuleEngine(
        source: card, store: FileStore(url: URL(fileURLWithPath: path), options: .init(shared: true)))
    FileHandle.standardOutput.write(Data("ready\n".utf8))
    while readLine() != nil {
        let start = nanoseconds()
        engine.trigger("x")
        let end = nanoseconds()
        FileHandle.standardOutput.write(Data("\(start) \(end)\n".utf8))
    }
    exit(0)
}

/// Lines read from a pipe.
final class LineReader {
    private let handle: FileHandle
    private var buffer = Data()

    init(_ handle: FileHandle) { self.handle = handle }

    func next() -> String? {
        while true {
            if let end = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<end], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...end)
                return line
            }
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            buffer.append(chunk)
        }
    }
}
