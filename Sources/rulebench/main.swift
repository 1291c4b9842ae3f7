import Foundation
import RuleLang
import RuleRuntime

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

// rulebench: the speed and size numbers quoted in the README.
//
//   swift run -c release rulebench               run every benchmark, print medians

let card = "scenario AskToSubscribe < min_events 5; since_first 7d; max_exec 4; between 2d >"

func nanoseconds() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// Median nanoseconds per operation over `rounds` rounds of `batch` operations.
func measure(rounds: Int = 31, batch: Int, _ body: () -> Void) -> Double {
    var samples: [Double] = []
    for _ in 0..<rounds {
        let start = nanoseconds()
        for _ in 0..<batch { body() }
        samples.append(Double(nanoseconds() - start) / Double(batch))
    }
    samples.sort()
    return samples[samples.count / 2]
}

func temporaryPath(_ name: String) -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rulebench-\(getpid())")
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory.appendingPathComponent(name)
}

func format(_ ns: Double) -> String {
    ns >= 1_000_000
        ? String(format: "%.2f ms", ns / 1_000_000)
        : ns >= 1_000 ? String(format: "%.2f µs", ns / 1_000) : String(format: "%.0f ns", ns)
}

/// The process's resident set size (Linux only), for the memory line.
func residentBytes() -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

func runBenchmarks() throws {
    print("rulebench: medians of 31 rounds (\(ProcessInfo.processInfo.activeProcessorCount) cores)")
    print(String(repeating: "-", count: 64))

    // Memory first, while the process's heap is fresh: resident growth for 10,000 streams.
    if let before = residentBytes() {
        let store = InMemoryStore()
        let engine = try RuleEngine(source: card, store: store)
        for stream in 0..<10_000 {
            for _ in 0..<3 { engine.trigger("m\(stream)") }
        }
        if let after = residentBytes() {
            let stored = try store.load().values.reduce(0) { $0 + $1.count }
            print(
                "memory: 10,000 streams: resident +\((after - before) / 1024) KiB (engine and store), encoded \(stored / 1024) KiB"
            )
        }
    }
    // tryToExecute answering no on a warm engine with the card's scenario.
    let warm = try RuleEngine(source: card)
    for _ in 0..<3 { warm.trigger("AskToSubscribe") }
    _ = warm.tryToExecute("AskToSubscribe")
    let tryNo = measure(batch: 100_000) { _ = warm.tryToExecute("AskToSubscribe") }
    print("tryToExecute (answers no), in-memory store   \(format(tryNo))")

    // The worst accepted program (grammar.md, "Cost of a call"): a scenario counting 10,000
    // streams with history, and a 'when' calling executions() 256 times (the operator limit
    // allows 512 operators), evaluated with a 10,000-time window.
    let worstStreams = (0..<10_000).map { "s\($0)" }
    let history = InMemoryStore()
    do {
        let before = try RuleEngine(source: "scenario Other < >", store: history)
        for name in worstStreams { before.markDone(name) }
    }
    let calls = Array(repeating: "executions(Wide) >= 0", count: 256).joined(separator: " and ")
    let worst = try RuleEngine(
        source: "scenario Wide < on \(worstStreams.joined(separator: ", ")); min_events 10000 within 1w >\n"
            + "scenario Worst < when \(calls); max_exec 1 >", store: history)
    let firstStart = nanoseconds()
    _ = worst.canExecute("Worst")
    let firstCall = Double(nanoseconds() - firstStart)
    let worstTry = measure(rounds: 11, batch: 1_000) { _ = worst.canExecute("Worst") }
    print("worst accepted program: first call (merges)  \(format(firstCall)); later calls \(format(worstTry))")

    let memoryTrigger = measure(batch: 20_000) { warm.trigger("AskToSubscribe") }
    print("trigger, in-memory store                      \(format(memoryTrigger))")

    // trigger with the file store.
    let filePath = temporaryPath("trigger.state")
    let fileEngine = try RuleEngine(source: card, store: FileStore(url: filePath))
    let fileTrigger = measure(batch: 2_000) { fileEngine.trigger("AskToSubscribe") }
    print("trigger, file store (write(2), no fsync)      \(format(fileTrigger))")
    let syncedPath = temporaryPath("synced.state")
    let synced = try RuleEngine(source: card, store: FileStore(url: syncedPath, options: .init(syncEveryWrite: true)))
    let syncedTrigger = measure(rounds: 11, batch: 20) { synced.trigger("AskToSubscribe") }
    print("trigger, file store with syncEveryWrite       \(format(syncedTrigger))")

    let explain = measure(batch: 2_000) { _ = warm.explain("AskToSubscribe") }
    print("explain                                       \(format(explain))")

    // Cold start: parse 50 scenarios and load a store of 1,000 streams.
    var rules = ""
    for k in 0..<50 {
        rules +=
            "scenario S\(k) < on launch, e\(k); min_events \(k % 7); since_first \(k)d; max_exec 4 within 7d; between 2d; when count(e\(k + 1) per session) >= 1 >\n"
    }
    let coldPath = temporaryPath("cold.state")
    func seedColdStore() throws {
        let seed = try RuleEngine(source: rules, store: FileStore(url: coldPath))
        for stream in 0..<1_000 {
            for _ in 0..<3 { seed.trigger("e\(stream)") }
        }
    }
    try seedColdStore()  // the engine and its file lock are released on return
    try FileStore(url: coldPath).compact()
    var coldSamples: [Double] = []
    for _ in 0..<31 {
        let start = nanoseconds()
        let engine = try RuleEngine(source: rules, store: FileStore(url: coldPath))
        coldSamples.append(Double(nanoseconds() - start))
        _ = engine.canExecute("S0")
    }
    coldSamples.sort()
    let coldSize = (try? FileManager.default.attributesOfItem(atPath: coldPath.path)[.size] as? Int) ?? 0
    print("cold start: 50 scenarios + 1,000 streams      \(format(coldSamples[15]))  (state file \(coldSize) bytes)")

    // The front end on a file near the 1 MiB limit.
    var big = ""
    var k = 0
    while big.utf8.count < 1_000_000 - 200 {
        big += "scenario B\(k) < on launch, e\(k); min_events \(k % 9) per session; since_first 7d; "
        big += "max_exec 4 within 7d; between 2d; when count(e\(k + 1)) >= 1 and not todo(\"x\") >\n"
        k += 1
    }
    let bigFile = SourceFile(path: "big.rules", text: big)
    let check = measure(rounds: 11, batch: 1) { _ = RuleCompiler.check([bigFile]) }
    print("check a \(bigFile.bytes.count / 1024) KiB file (\(k) scenarios)      \(format(check))")

    // Storage stays bounded: one stream triggered 10 times vs 1,000,000 times.
    func storedBytes(_ triggers: Int) throws -> Int {
        let store = InMemoryStore()
        let engine = try RuleEngine(source: card, store: store)
        for _ in 0..<triggers { engine.trigger("AskToSubscribe") }
        return try store.load().values.reduce(0) { $0 + $1.count }
    }
    let small = try storedBytes(10)
    let large = try storedBytes(1_000_000)
    print(
        "stored bytes: 10 triggers \(small), 1,000,000 triggers \(large) (ratio \(String(format: "%.2f", Double(large) / Double(small))))"
    )
    print(String(repeating: "-", count: 64))
    print(
        String(
            format: "ratios: trigger file/memory %.1fx; tryToExecute no vs 1 µs budget %.2f",
            fileTrigger / memoryTrigger, tryNo / 1_000))
    try? FileManager.default.removeItem(at: filePath.deletingLastPathComponent())
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    try runBenchmarks()
} catch {
    FileHandle.standardError.write(Data("rulebench: \(error)\n".utf8))
    exit(1)
}
