import Foundation
import RuleLang
import RuleRuntime

/// Swapping rules in a running engine (issue 20): against building a new engine from the same
/// rules over the same state, and what a trigger on another thread waits meanwhile.
func swapBenchmarks(_ goals: inout [Goal]) throws {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("examples/app.rules")
    let sources = [SourceFile(path: url.path, bytes: [UInt8](try Data(contentsOf: url)))]
    // A state of 1,000 streams: the rules' own, and app-named ones up to 1,000.
    let store = InMemoryStore()
    do {
        let filler = try RuleEngine(sources: sources, store: store, clock: ManualClock())
        for name in filler.program.knownStreams { for _ in 0..<3 { filler.trigger(Event(name)) } }
        var k = 0
        while (try StateSnapshot(entries: store.load())).streams.count < 1_000 {
            filler.markDone("stream\(k)")
            k += 1
        }
    }
    let options = RuleEngine.Options(logSubsystem: nil)
    let running = try RuleEngine(sources: sources, store: store, clock: ManualClock(), options: options)
    let rounds = interleaved(
        rounds: 41, batch: 5,
        [
            { _ = try? RuleEngine(sources: sources, store: store, clock: ManualClock(), options: options) },
            { _ = try? running.replaceRules(sources: sources) },
        ])
    let ratio = rounds.ratio(1, to: 0)
    line("build an engine, app.rules over 1,000 streams", rounds.samples[0].summary)
    line("swap the same rules into a running engine", rounds.samples[1].summary)
    line("  swap / build, per round", ratio.ratioSummary)
    goals.append(Goal(key: "swap_vs_build", value: ratio.median, unit: "x", limit: 1.2, atMost: true))

    // Triggers on another thread while this one swaps, over an exclusive file of 100,000
    // streams: only the triggers that overlap a swap count (most triggers overlap none, so a
    // line over all of them could not fail). The swap decodes the state outside the engine's
    // lock; a trigger waits for the rest.
    let bigPath = temporaryPath("swap-100k.state")
    try? FileManager.default.removeItem(at: bigPath)
    do {
        let seed = try RuleEngine(sources: sources, store: FileStore(url: bigPath), clock: ManualClock())
        for k in 0..<100_000 { seed.markDone("stream\(k)") }
    }
    try FileStore(url: bigPath).compact()
    let big = try RuleEngine(sources: sources, store: FileStore(url: bigPath), clock: ManualClock(), options: options)
    // The triggers come on a schedule, one every 100 µs, as an app's do (not back to back), and
    // each is timed from when it was due: a trigger held up by the lock delays the ones due
    // after it, and they count that wait. The thread's preemptions are read after each trigger:
    // with the swap's thread and this spinning one, two cores are busy, and the scheduler takes
    // a core from one of them for a tick (4 ms) now and then (a pause that is not the engine's,
    // which made every trigger due meanwhile late too).
    let interval: UInt64 = 100_000
    let stop = Locked(false)
    let spans = Locked<[(due: UInt64, end: UInt64, preemptions: Int)]>([])
    let triggering = Thread {
        var local: [(due: UInt64, end: UInt64, preemptions: Int)] = []
        local.reserveCapacity(1 << 16)
        let before = preemptions()
        var due = nanoseconds()
        while !stop.value {
            while nanoseconds() < due {}
            big.trigger("launch")
            local.append((due, nanoseconds(), preemptions() - before))
            due += interval
        }
        spans.value = local
    }
    triggering.start()
    var swapSpans: [(start: UInt64, end: UInt64)] = []
    for _ in 0..<30 {
        let start = nanoseconds()
        _ = try? big.replaceRules(sources: sources)
        swapSpans.append((start, nanoseconds()))
        usleep(2_000)
    }
    stop.value = true
    while spans.value.isEmpty { usleep(1_000) }
    let all = spans.value
    // A trigger overlaps a swap when their spans meet (both in time order). It was preempted
    // when the thread's count of preemptions moved between its due time and its end: since the
    // end of the last trigger that ended before it was due.
    var overlapping: [Double] = []
    var unpreempted: [Double] = []
    var s = 0
    var first = 0
    for (k, trigger) in all.enumerated() {
        while first < k && all[first].end <= trigger.due { first += 1 }
        let preemptedBefore = first == 0 ? 0 : all[first - 1].preemptions
        while s < swapSpans.count && swapSpans[s].end < trigger.due { s += 1 }
        if s < swapSpans.count && swapSpans[s].start <= trigger.end {
            let wait = Double(trigger.end - trigger.due)
            overlapping.append(wait)
            if trigger.preemptions == preemptedBefore { unpreempted.append(wait) }
        }
    }
    let waits = Samples(overlapping.isEmpty ? [0] : overlapping)
    let calm = Samples(unpreempted.isEmpty ? [0] : unpreempted)
    let swapTimes = Samples(swapSpans.map { Double($0.end - $0.start) })
    line("swap over 100,000 streams (exclusive file)", swapTimes.summary)
    line("trigger during those swaps (\(overlapping.count) of \(all.count))", waits.summary)
    line("  the same, not preempted (\(unpreempted.count))", calm.summary)
    goals.append(
        Goal(
            key: "trigger_during_swap_100k_p99_ms", value: calm.percentile(0.99) / 1e6, unit: "ms", limit: 1.0,
            atMost: true))
    try? FileManager.default.removeItem(at: bigPath)
}

/// A value read and written under a lock, across threads. `@unchecked Sendable`: `lock` guards
/// `stored`, its one changing field.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get {
            lock.lock()
            defer { lock.unlock() }
            return stored
        }
        set {
            lock.lock()
            stored = newValue
            lock.unlock()
        }
    }
}
