import Foundation
import RuleRuntime

// The goals of issue 32: a shared file's triggers under contention.

/// The shared trigger while three other processes trigger on the same file, beside the same
/// trigger alone, in alternating rounds; then two debug-built processes against one.
func contentionBenchmarks(_ goals: inout [Goal]) throws {
    let path = temporaryPath("contended.state")
    let engine = try RuleEngine(source: card, store: FileStore(url: path, options: .init(shared: true)))
    let others = try (0..<3).map { _ in try ContendingProcess(path: path.path) }
    defer { for other in others { other.stop() } }
    let batch = 2_000
    var alone: [Double] = []
    var contended: [Double] = []
    var ratios: [Double] = []
    for _ in 0..<15 {
        let soloTimes = eachCall(batch) { engine.trigger("x") }
        for other in others { other.start(batch) }
        let busyTimes = eachCall(batch) { engine.trigger("x") }
        for other in others { try other.wait() }
        alone.append(soloTimes.median)
        contended.append(busyTimes.median)
        ratios.append(busyTimes.median / soloTimes.median)
    }
    line("shared trigger alone (median of a round)", Samples(alone).summary)
    line("shared trigger beside 3 processes triggering", Samples(contended).summary)
    let ratio = Samples(ratios)
    line("  contended / alone, per round", ratio.ratioSummary)
    goals.append(
        Goal(key: "trigger_shared_contended_vs_alone", value: ratio.median, unit: "x", limit: 3, atMost: true))
    try debugProcesses(&goals)
}

/// Two debug-built processes x 3,000 triggers on one shared file against one doing 6,000
/// (`.build/debug/rule-test-fixture shared-count`, built by `swift build`): the path every
/// app's own tests and debug builds run. Skipped, with a line saying so, when it is not built.
func debugProcesses(_ goals: inout [Goal]) throws {
    let fixture = URL(fileURLWithPath: ".build/debug/rule-test-fixture")
    guard FileManager.default.isExecutableFile(atPath: fixture.path) else {
        line("debug processes", "skipped: build .build/debug/rule-test-fixture with `swift build` first")
        return
    }
    func run(_ processes: Int, _ each: Int, round: Int) throws -> Double {
        let state = temporaryPath("debug-\(processes)-\(round).state").path
        let start = nanoseconds()
        let children = try (0..<processes).map { _ in
            let child = Process()
            child.executableURL = fixture
            child.arguments = ["shared-count", state, "\(each)"]
            try child.run()
            return child
        }
        for child in children { child.waitUntilExit() }
        guard children.allSatisfy({ $0.terminationStatus == 0 }) else {
            throw RuleEngineError.unreadable(path: "rule-test-fixture shared-count")
        }
        return Double(nanoseconds() - start)
    }
    var ratios: [Double] = []
    var one: [Double] = []
    var two: [Double] = []
    for round in 0..<5 {
        one.append(try run(1, 6_000, round: round))
        two.append(try run(2, 3_000, round: round))
        ratios.append(two.last! / one.last!)
    }
    line("1 debug process x 6,000 triggers", Samples(one).summary)
    line("2 debug processes x 3,000 triggers", Samples(two).summary)
    let ratio = Samples(ratios)
    line("  two / one, per round", ratio.ratioSummary)
    goals.append(Goal(key: "debug_two_processes_vs_one", value: ratio.median, unit: "x", limit: 3, atMost: true))
}

/// `rulebench contend PATH`: for each line `N` read, triggers `x` N times on the shared file
/// at PATH, then prints `done`.
func contendChild(_ path: String) throws -> Never {
    let engine = try RuleEngine(
        source: card, store: FileStore(url: URL(fileURLWithPath: path), options: .init(shared: true)))
    while let line = readLine(), let count = Int(line) {
        for _ in 0..<count { engine.trigger("x") }
        FileHandle.standardOutput.write(Data("done\n".utf8))
    }
    exit(0)
}

/// A `rulebench contend` child.
final class ContendingProcess {
    private let process = Process()
    private let input = Pipe()
    private let reader: LineReader

    init(path: String) throws {
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = ["contend", path]
        process.standardInput = input
        process.standardOutput = output
        reader = LineReader(output.fileHandleForReading)
        try process.run()
    }

    func start(_ count: Int) { input.fileHandleForWriting.write(Data("\(count)\n".utf8)) }

    func wait() throws {
        guard reader.next() == "done" else { throw RuleEngineError.unreadable(path: "rulebench contend") }
    }

    func stop() {
        input.fileHandleForWriting.closeFile()
        process.waitUntilExit()
    }
}
