import Foundation
import RuleLang
@_spi(Benchmarks) import RuleRuntime

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

// MARK: - Per-call, file store and front-end benchmarks

/// Where the limit's work goes, so that the optimizer keeps it. `@unchecked Sendable`: `value`
/// is written only by the benchmark's one thread (under the limit's lock) and never read
/// concurrently; it exists to be written.
final class LimitSink: @unchecked Sendable {
    var value = 0.0
}

/// The limit for a refused tryToExecute: a lock, a clock read and one string-keyed lookup.
func refusedCallLimit() -> () -> Void {
    let lock = NSLock()
    let clock = SystemClock()
    let table = Dictionary(uniqueKeysWithValues: (0..<50).map { ("Scenario\($0)", $0) } + [("AskToSubscribe", 50)])
    let sink = LimitSink()
    return {
        lock.lock()
        sink.value += clock.now().timeIntervalSince1970 + Double(table["AskToSubscribe"] ?? 0)
        lock.unlock()
    }
}

/// The per-call figures: the limit of a refused tryToExecute, tryToExecute by a literal, by a
/// kept handle and by a handle made per call, an in-memory trigger. Returns the warmed engine.
func callBenchmarks(_ goals: inout [Goal]) throws -> RuleEngine {
    let limit = refusedCallLimit()
    let warm = try RuleEngine(source: card)
    for _ in 0..<3 { warm.trigger("AskToSubscribe") }
    let handle = Scenario(resolvingOnce: "AskToSubscribe")
    let name = String(card.prefix(0)) + "AskToSubscribe"
    // Interleaved: each round times the limit, then each call, so a burst of load on this
    // shared machine falls on all three; a goal's ratio is the median of the rounds' ratios.
    let rounds = interleaved(
        batch: 20_000,
        [
            limit,
            { _ = warm.tryToExecute("AskToSubscribe") },
            { _ = warm.tryToExecute(handle) },
            // A handle made per call from a name held in a variable (`Scenario(name)`): it
            // remembers nothing, so it allocates nothing (printed, not a goal).
            { _ = warm.tryToExecute(Scenario(name)) },
        ])
    line("limit: lock + clock + one lookup", rounds.samples[0].summary)
    line("tryToExecute (answers no), by name (a literal)", rounds.samples[1].summary)
    line("tryToExecute (answers no), by handle", rounds.samples[2].summary)
    let byName = rounds.ratio(1, to: 0)
    let byHandle = rounds.ratio(2, to: 0)
    line("  by name / limit, per round", byName.ratioSummary)
    line("  by handle / limit, per round", byHandle.ratioSummary)
    line("tryToExecute (no), Scenario(name) per call", rounds.samples[3].summary)
    line("  handle made per call / limit, per round", rounds.ratio(3, to: 0).ratioSummary)
    goals.append(Goal(key: "try_no_vs_limit", value: byName.median, unit: "x", limit: 1.5, atMost: true))
    goals.append(Goal(key: "try_handle_vs_limit", value: byHandle.median, unit: "x", limit: 1.0, atMost: true))

    // The in-memory trigger beside the same limit, in the same rounds: an absolute figure
    // flipped with the CPU (187-200 ns on one machine, 343-630 ns on another for one code),
    // so the goal is the ratio; the absolute median is printed beside it.
    let triggers = interleaved(batch: 20_000, [limit, { warm.trigger("AskToSubscribe") }])
    line("trigger, in-memory store", triggers.samples[1].summary)
    let triggerRatio = triggers.ratio(1, to: 0)
    line("  trigger / limit, per round", triggerRatio.ratioSummary)
    goals.append(Goal(key: "trigger_memory_vs_limit", value: triggerRatio.median, unit: "x", limit: 4, atMost: true))
    line("trigger_memory_ns (printed, not a goal)", String(format: "%.0f", triggers.samples[1].median))
    return warm
}

/// The file store's trigger against one `write(2)` of its record: the median, and the tail
/// over 1,000,000 calls (the background compaction's share included).
func fileBenchmarks(_ goals: inout [Goal]) throws {
    // One write(2) of a record the size of a trigger's, the file store's limit: the record of
    // a trigger as measured below, once the stream keeps its full number of recent times.
    let filePath = temporaryPath("trigger.state")
    let fileStore = FileStore(url: filePath)
    let fileEngine = try RuleEngine(source: card, store: fileStore)
    for _ in 0..<RuleEngine.Options().recentLimit + 1 { fileEngine.trigger("AskToSubscribe") }
    let before = (try? FileManager.default.attributesOfItem(atPath: filePath.path)[.size] as? Int) ?? 0
    fileEngine.trigger("AskToSubscribe")
    let after = (try? FileManager.default.attributesOfItem(atPath: filePath.path)[.size] as? Int) ?? 0
    let recordSize = max(1, after - before)
    let rawPath = temporaryPath("raw")
    let raw = open(rawPath.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
    let record = [UInt8](repeating: 7, count: recordSize)
    // A record's checksum, each way, in the same rounds.
    let methods = FileStore.ChecksumMethod.allCases
    let sums = interleaved(
        batch: 20_000,
        methods.map { method in
            { _ = record.withUnsafeBytes { FileStore.checksum($0, by: method) } }
        })
    line("checksum of \(recordSize) B: zlib's crc32", sums.samples[0].summary)
    line(
        "  the same, by sixteen tables",
        sums.samples[1].summary + String(format: "; %.2fx zlib", sums.ratio(1, to: 0).median))
    line(
        "  the same, folded\(FileStore.checksumFolds ? "" : " (no hardware: the tables)")",
        sums.samples[2].summary + String(format: "; %.2fx zlib", sums.ratio(2, to: 0).median))
    // The trigger and its limit in the same rounds, so that a burst of load falls on both.
    let writes = interleaved(
        batch: 20_000,
        [
            { _ = record.withUnsafeBytes { write(raw, $0.baseAddress, recordSize) } },
            { fileEngine.trigger("AskToSubscribe") },
        ])
    line("limit: one write(2) of \(recordSize) B", writes.samples[0].summary)
    line("trigger, file store", writes.samples[1].summary)
    let fileRatio = writes.ratio(1, to: 0)
    line("  file trigger / write, per round", fileRatio.ratioSummary)
    goals.append(Goal(key: "trigger_file_vs_write", value: fileRatio.median, unit: "x", limit: 2, atMost: true))

    // The tail: 1,000,000 triggers, each timed, against 1,000,000 raw writes, in alternating
    // rounds of 10,000 so that a burst of load on this shared machine falls on both (measured
    // one after the other, the raw writes' own p99.9 moved between 14 and 33 µs from run to run).
    let tailPath = temporaryPath("tail.state")
    let tailStore = FileStore(url: tailPath)
    let tailEngine = try RuleEngine(source: card, store: tailStore)
    // A third kind of call, as long as a trigger and with no engine in it: the same write(2),
    // then the clock read in a loop for as long as a trigger takes beyond a write (the medians
    // above). The machine's pauses land in a call about as often as the call is long, so this
    // is the tail a call of a trigger's length gets from the machine alone.
    // How long the loop runs is set again after each round, from that round's medians (timed
    // one call at a time, a trigger takes longer beside a write than in the batches above).
    var extra = max(0, writes.samples[1].median - writes.samples[0].median)
    var rawTimes: [Double] = []
    var triggerTimes: [Double] = []
    var paddedTimes: [Double] = []
    var padTotal = 0.0
    for _ in 0..<100 {
        let rawRound = eachCall(10_000) { _ = record.withUnsafeBytes { write(raw, $0.baseAddress, recordSize) } }
        let triggerRound = eachCall(10_000) { tailEngine.trigger("AskToSubscribe") }
        let pad = extra
        padTotal += pad
        let paddedRound = eachCall(10_000) {
            _ = record.withUnsafeBytes { write(raw, $0.baseAddress, recordSize) }
            let start = nanoseconds()
            while Double(nanoseconds() - start) < pad {}
        }
        // The loop's overshoot (a clock read or two) is in the padded round's median.
        extra = max(0, pad + triggerRound.median - paddedRound.median)
        rawTimes += rawRound.values
        triggerTimes += triggerRound.values
        paddedTimes += paddedRound.values
    }
    let rawTail = Samples(rawTimes)
    let tail = Samples(triggerTimes)
    let paddedTail = Samples(paddedTimes)
    line("raw write(2), each of 1,000,000", rawTail.summary)
    line("file trigger, each of 1,000,000", tail.summary + "; \(tailStore.compactions) compactions")
    line(String(format: "write(2) + %.0f ns (mean), each of 1,000,000", padTotal / 100), paddedTail.summary)
    line(
        "  p99.9 / write(2)'s: trigger, padded write",
        String(
            format: "%.2fx, %.2fx", tail.percentile(0.999) / rawTail.percentile(0.999),
            paddedTail.percentile(0.999) / rawTail.percentile(0.999)))
    // How many calls the goal's tail is made of: slower than twice raw write(2)'s p99.9 (a
    // p99.9 hides 1,000), the file trigger's and raw write(2)'s.
    let slow = 2 * rawTail.percentile(0.999)
    line(
        "  calls over twice write(2)'s p99.9",
        "\(triggerTimes.filter { $0 > slow }.count); raw writes: \(rawTimes.filter { $0 > slow }.count)")
    // The longest call outside pauses that are not the call's (`longestUnpaused`): 1,000,000
    // more of each, in alternating rounds of 10,000, each bracketed by the thread's counters
    // and CPU time (system calls, so timed apart from the above). Raw write(2) shows what the
    // machine alone does to a call.
    let compactionsBefore = tailStore.compactions
    var rawLongest = Unpaused()
    var longest = Unpaused()
    for _ in 0..<100 {
        rawLongest.add(
            longestUnpaused(10_000) { _ = record.withUnsafeBytes { write(raw, $0.baseAddress, recordSize) } })
        longest.add(longestUnpaused(10_000) { tailEngine.trigger("AskToSubscribe") })
    }
    close(raw)
    line("  raw write(2), not paused", rawLongest.summary)
    line("    counted over 0.5 ms", "\(rawLongest.slow)")
    line(
        "  file trigger, not paused",
        longest.summary + "; \(tailStore.compactions - compactionsBefore) compactions")
    line("    counted over 0.5 ms", "\(longest.slow)")
    goals.append(Goal(key: "trigger_file_max_ms", value: longest.max / 1e6, unit: "ms", limit: 1, atMost: true))
    goals.append(
        Goal(
            key: "trigger_file_p999_vs_write", value: tail.percentile(0.999) / rawTail.percentile(0.999), unit: "x",
            limit: 2, atMost: true))
}

/// The front end against JSONDecoder on the same 10,000 scenarios (`rulebench front`).
func frontEndBenchmarks(_ goals: inout [Goal]) throws {
    struct ClauseJSON: Codable {
        var kind: String
        var number: Int64?
        var scope: String?
        var seconds: Int64?
    }
    struct ScenarioJSON: Codable {
        var name: String
        var on: [String]
        var clauses: [ClauseJSON]
    }
    // The same information as `frontEndSources()`, scenario by scenario.
    var scenarios: [ScenarioJSON] = []
    for k in 0..<10_000 {
        scenarios.append(
            ScenarioJSON(
                name: "B\(k)", on: ["launch", "e\(k)"],
                clauses: [
                    ClauseJSON(kind: "min_events", number: Int64(k % 9), scope: "session"),
                    ClauseJSON(kind: "since_first", seconds: 604_800),
                    ClauseJSON(kind: "max_exec", number: 4, scope: "within", seconds: 604_800),
                    ClauseJSON(kind: "between", seconds: 172_800),
                ]))
    }
    let json = try JSONEncoder().encode(scenarios)
    let sources = frontEndSources()
    guard !RuleCompiler.check(sources).hasErrors else { throw RuleEngineError.invalidRules([]) }
    // Interleaved, as the per-call figures: the goal is the median of the rounds' ratios.
    let front = interleaved(
        rounds: 11, batch: 1,
        [
            { _ = try? JSONDecoder().decode([ScenarioJSON].self, from: json) },
            { _ = RuleCompiler.check(sources) },
            { _ = try? RuleEngine(sources: sources) },
        ])
    let (decode, check, build) = (front.samples[0], front.samples[1], front.samples[2])
    let bytes = sources.reduce(0) { $0 + $1.bytes.count }
    line("JSONDecoder, 10,000 scenarios (\(json.count / 1024) KiB)", "median \(format(decode.median))")
    line("parse + check, same (\(bytes / 1024) KiB)", "median \(format(check.median))")
    line("engine from source, same", "median \(format(build.median))")
    let checkRatio = front.ratio(0, to: 1)
    let buildRatio = Samples(front.perRound.map { ($0[2] - $0[1]) / $0[1] })
    line("  JSONDecoder / parse + check, per round", checkRatio.ratioSummary)
    line("  (engine - check) / check, per round", buildRatio.ratioSummary)
    goals.append(Goal(key: "check_vs_jsondecoder", value: checkRatio.median, unit: "x", limit: 5, atMost: false))
    goals.append(Goal(key: "engine_build_vs_check", value: buildRatio.median, unit: "x", limit: 1.5, atMost: true))
}
