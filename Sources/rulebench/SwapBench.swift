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
        for name in filler.program.knownStreams { for _ in 0..<3 { filler.trigger(name) } }
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

    // Triggers on another thread while this one swaps: each timed on its own.
    let stop = Locked(false)
    let waits = Locked<[Double]>([])
    let triggering = Thread {
        var local: [Double] = []
        while !stop.value {
            let start = nanoseconds()
            running.trigger("launch")
            local.append(Double(nanoseconds() - start))
        }
        waits.value = local
    }
    triggering.start()
    let swaps = eachCall(200) { _ = try? running.replaceRules(sources: sources) }
    stop.value = true
    while waits.value.isEmpty { usleep(1_000) }
    let triggers = Samples(waits.value)
    line("trigger during swaps (\(triggers.values.count) calls)", triggers.summary)
    line("swap, meanwhile", swaps.summary)
    line("  trigger p99 / swap median", String(format: "%.2fx", triggers.percentile(0.99) / swaps.median))
    goals.append(
        Goal(
            key: "trigger_during_swap_p99_vs_swap", value: triggers.percentile(0.99) / swaps.median, unit: "x",
            limit: 1.0, atMost: true))
}

/// A value read and written under a lock, across threads.
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
