// libFuzzer harness: valid encodings of every kind of entry, with numbers chosen by the
// fuzzer (favouring Int64.min and .max, 0, -1, NaN, infinities and huge times), loaded through
// an InMemoryStore and driven through every API call. Nothing may trap.
// Built by Fuzz/run.sh with the runtime's sources; not part of `swift build`.
import Foundation

private let rules = """
    # language 1.3
    param p: int = 1
    param d: duration = 1h
    scenario S < on x, y; min_events 2 within 1d; max_exec 3 per session; between 1h; since_first 1m >
    scenario T < min_events 1 per version; max_events 5; since_last 1s; when p >= 1 and count(x) < 9; after later 1d;
        not in pin; defer up to 30m >
    group G < max_exec 2 within 7d; between 1h > {
        scenario U < on y; when executions(S per session) >= 0 and since_last(x) >= 0s; after declined next version;
            counts after 3s visible >
        scenario V < when since_last(crash) >= 1h and count(U: later within 1d) == 0 >
    }
    """

/// Reads the fuzzer's bytes as numbers, each one of a few extremes or the bytes themselves.
private struct Numbers {
    var bytes: [UInt8]
    var at = 0

    mutating func byte() -> UInt8 {
        defer { at += 1 }
        return at < bytes.count ? bytes[at] : 0
    }

    mutating func int() -> Int64 {
        switch byte() % 8 {
        case 0: return .max
        case 1: return .min
        case 2: return 0
        case 3: return -1
        case 4: return Int64(byte())
        default:
            var value: UInt64 = 0
            for _ in 0..<8 { value = value << 8 | UInt64(byte()) }
            return Int64(bitPattern: value)
        }
    }

    mutating func time() -> Double {
        switch byte() % 8 {
        case 0: return .nan
        case 1: return .infinity
        case 2: return -.infinity
        case 3: return .greatestFiniteMagnitude
        case 4: return -.greatestFiniteMagnitude
        case 5: return 1_767_225_600 + Double(int() % 1_000_000)
        default: return Double(int())
        }
    }

    mutating func tally() -> Tally {
        var counts = TallyCounts()
        counts.total = int()
        counts.first = byte() % 4 == 0 ? nil : time()
        counts.last = byte() % 4 == 0 ? nil : time()
        counts.sessionID = int()
        counts.sessionCount = int()
        counts.versionID = int()
        counts.versionCount = int()
        let recent = (0..<Int(byte() % 20)).map { _ in time() }
        return Tally(counts: counts, recent: recent)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEntries(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var n = Numbers(bytes: Array(UnsafeBufferPointer(start: data, count: size)))
    var changes: [StoreChange] = []
    for stream in ["x", "y", "S", "T", "U"] where n.byte() % 3 != 0 {
        changes.append(EngineState.change(key: "e:" + stream, n.tally()))
    }
    for scenario in ["S", "T", "U"] where n.byte() % 3 != 0 {
        var view = ScenarioState(events: n.tally(), executions: n.tally(), streams: nil)
        if n.byte() % 2 == 0 { view.streams = UInt64(bitPattern: n.int()) }
        changes.append(EngineState.change(key: "s:" + scenario, view))
    }
    if n.byte() % 2 == 0 { changes.append(EngineState.change(key: "g:G", n.tally())) }
    if n.byte() % 2 == 0 { changes.append(EngineState.change(key: "p:p", .int(n.int()))) }
    if n.byte() % 2 == 0 { changes.append(EngineState.change(key: "p:d", .duration(n.time()))) }
    if n.byte() % 2 == 0 {
        let expires: Double? = n.byte() % 2 == 0 ? nil : n.time()
        changes.append(EngineState.change(todo: "x", ToDoItem(created: n.time(), expires: expires, info: nil)))
    }
    // The engine's own to-dos (a presentation's hold, the run's mark) and outcome streams, as
    // another process or a damaged file may have left them.
    if n.byte() % 2 == 0 {
        let expires: Double? = n.byte() % 2 == 0 ? nil : n.time()
        let info: [String: String]? = n.byte() % 2 == 0 ? nil : ["scenario": "U", "token": "t"]
        changes.append(EngineState.change(todo: "@showing:G", ToDoItem(created: n.time(), expires: expires, info: info)))
    }
    if n.byte() % 2 == 0 {
        changes.append(EngineState.change(todo: "@running", ToDoItem(created: n.time(), expires: nil, info: nil)))
    }
    // Language 1.3's: a wish (its end a number or not), the exposure log's flag and exposures.
    if n.byte() % 2 == 0 {
        let until = n.byte() % 3 == 0 ? "soon" : String(n.time())
        changes.append(
            EngineState.change(todo: "@wish:T", ToDoItem(created: n.time(), expires: nil, info: ["until": until])))
    }
    if n.byte() % 2 == 0 {
        let dropped = n.byte() % 2 == 0 ? String(n.int()) : "many"
        changes.append(
            EngineState.change(todo: "@exposures", ToDoItem(created: n.time(), expires: nil, info: ["dropped": dropped])))
        for k in 0..<Int(n.byte() % 4) {
            let info: [String: String]? =
                n.byte() % 3 == 0
                ? nil : ["scenario": "S", "kind": k % 2 == 0 ? "control" : "?", "lease": "x", "leased": String(n.time())]
            changes.append(EngineState.change(todo: "@exposure:\(k)", ToDoItem(created: n.time(), expires: nil, info: info)))
        }
    }
    for stream in ["@later:T", "@declined:U", "@crash"] where n.byte() % 3 == 0 {
        changes.append(EngineState.change(key: "e:" + stream, n.tally()))
    }
    var meta = SessionMeta()
    meta.sessionID = n.int()
    meta.versionID = n.int()
    meta.version = n.byte() % 2 == 0 ? "1.0" : nil
    meta.sessionStart = n.byte() % 2 == 0 ? nil : n.time()
    meta.versionStart = n.byte() % 2 == 0 ? nil : n.time()
    changes.append(EngineState.change(meta: meta))
    var entries: [String: [UInt8]] = [:]
    for change in changes { entries[change.key] = change.value }
    let clock = ManualClock(Date(timeIntervalSince1970: n.time().isFinite ? 1_767_225_600 : 0))
    guard let engine = try? RuleEngine(source: rules, store: InMemoryStore(entries), clock: clock) else { return 0 }
    var shown: [Presentation] = []
    for step in 0..<24 {
        switch n.byte() % 25 {
        case 0: engine.trigger(["x", "y", "S"][step % 3])
        case 1: _ = engine.tryToExecute(["S", "T", "U"][step % 3])
        case 2: _ = engine.canExecute(["S", "T", "U"][step % 3])
        case 3: _ = engine.explain(["S", "T", "U"][step % 3]).description
        case 4: engine.startSession(version: step % 2 == 0 ? "1.0" : "2.0")
        case 5: _ = engine.recordExecution("S")
        case 6: _ = engine.reset(step % 2 == 0 ? "S" : "G")
        case 7: _ = engine.executeNext()
        case 8: for scope in [CountScope.install, .session, .version, .since(3600)] { _ = engine.count("x", scope: scope) }
        case 9: _ = engine.beenDone("x", scope: .since(60), times: .moreThan(1))
        case 10: _ = engine.needToDo("x"); _ = engine.lastDone("x"); _ = engine.info(forToDo: "x")
        case 11: try? engine.setParam(named: "p", to: .int(n.int()))
        case 12: _ = try? engine.check("count(x per session) >= 1 or executions(G within 1d) < 2")
        case 13: clock.advance(by: Double(n.int() % 1_000_000))
        case 14: engine.markDone("x"); _ = engine.toDo("x", scope: .until(3600))
        case 15: if let presented = engine.present(["U", "T", "S"][step % 3]) { shown.append(presented) }
        case 16: if let last = shown.popLast() { try? engine.finish(last, Outcome.allCases[step % 5]) }
        case 17: try? engine.recordOutcome(Outcome.allCases[step % 5], of: ["T", "U", "Z"][step % 3])
        case 18: engine.prepareForSuspension(); engine.enteredForeground()
        case 19: engine.recordProblem(); _ = engine.showing("U")
        case 20: if let last = shown.last { try? engine.visible(last) }
        case 21: if let last = shown.last { try? engine.hidden(last) }
        case 22:
            let drained = engine.exposures(lease: n.time())
            if n.byte() % 2 == 0 { engine.acknowledge(drained) }
            _ = engine.droppedExposures
        case 23:
            if n.byte() % 2 == 0 { engine.enter("pin") } else { engine.leave("pin") }
            _ = engine.explain("T").deferredUntil
        case 24: clock.advance(by: n.time())
        default: _ = engine.paramValue(named: "d")
        }
    }
    return 0
}
