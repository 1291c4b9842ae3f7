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

// The shared file's modes (and the helpers every mode uses: `fail`, `say`): processes that
// trigger, count, loop, write faults and answer calls over one shared state file.

/// Rules for the shared-file tests: a stream, a budget shared by processes, a group, a param.
let sharedRules = """
    param level: int = 0
    scenario Budget < max_exec 100 >
    scenario Five < on x; min_events 5; max_exec 3; between 1h >
    group Prompts < max_exec 2 within 1d > {
        scenario A < on x, y; min_events 2 >
        scenario B < on y; when level >= 2 >
    }
    """

func sharedStore(_ path: String, compaction: Int = 1 << 20) -> FileStore {
    FileStore(url: URL(fileURLWithPath: path), options: .init(compactionThreshold: compaction, shared: true))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("\(message)\n".utf8))
    exit(1)
}

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func sharedTrigger(_ path: String, _ count: Int) -> Never {
    do {
        let engine = try RuleEngine(source: sharedRules, store: sharedStore(path, compaction: 8192))
        var executions = 0
        for _ in 0..<count {
            engine.trigger("x")
            if engine.tryToExecute("Budget") { executions += 1 }
            if let error = engine.lastStoreError { fail("store error: \(error)") }
        }
        say("done \(executions)")
        _ = readLine()
        say("\(engine.count("x"))")
        exit(0)
    } catch {
        fail("\(error)")
    }
}

/// `VmRSS` or `VmHWM` of this process, in bytes (Linux; 0 elsewhere).
func memoryFigure(_ field: String) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }
    return 0
}

/// Fetches URL through a RuleDelivery with a limit of LIMIT bytes; prints what happened and how
/// much the process's peak memory grew over what it held before the fetch, in bytes.
func fetchBounded(_ address: String, limit: Int) -> Never {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fetch-\(getpid())")
    defer { try? FileManager.default.removeItem(at: directory) }
    let delivery = RuleDelivery(directory: directory, bundled: [], maximumSize: limit)
    let done = DispatchSemaphore(value: 0)
    let before = memoryFigure("VmRSS")
    nonisolated(unsafe) var outcome = ""
    Task {
        do {
            outcome = "fetched: \(try await delivery.fetch(from: URL(string: address)!))"
        } catch {
            outcome = "refused: \(error)"
        }
        done.signal()
    }
    done.wait()
    say("\(outcome); memory grew by \(memoryFigure("VmHWM") - before)")
    try? FileManager.default.removeItem(at: directory)
    exit(0)
}

/// Errors a store reported: fault reports (the file written again) apart from failed calls.
/// `@unchecked Sendable`: `lock` guards `failed`, its one changing field.
final class Failures: @unchecked Sendable {
    private let lock = NSLock()
    private var failed = 0

    func add(_ error: RuleStoreError) {
        switch error {
        case .replaced, .truncated: return
        default: lock.withLock { failed += 1 }
        }
    }

    var count: Int { lock.withLock { failed } }
}

/// The fault matrix's writer: `t N` triggers `x` N times and prints how many of its triggers
/// so far were acknowledged (returned with no error but a fault report); `q` releases the
/// engine and exits.
func faultWriter(_ path: String, shared: Bool) -> Never {
    let failures = Failures()
    var acknowledged = 0
    do {
        let store =
            shared
            ? sharedStore(path, compaction: 4096)
            : FileStore(url: URL(fileURLWithPath: path), options: .init(compactionThreshold: 4096))
        var engine: RuleEngine? = try RuleEngine(source: sharedRules, store: store)
        engine?.storeErrorHandler = { failures.add($0) }
        say("ready")
        while let line = readLine() {
            let parts = line.split(separator: " ")
            if parts.first == "q" {
                engine = nil
                say("bye")
                exit(0)
            }
            guard parts.count == 2, parts[0] == "t", let n = Int(parts[1]) else { fail("bad command: \(line)") }
            for _ in 0..<n {
                let before = failures.count
                engine?.trigger("x")
                if failures.count == before { acknowledged += 1 }
            }
            say("acked \(acknowledged)")
        }
        exit(0)
    } catch {
        fail("error: \(error)")
    }
}

/// Triggers `x` `count` times on the shared file at `path` (default compaction), then exits.
func sharedCount(_ path: String, _ count: Int) -> Never {
    do {
        let engine = try RuleEngine(source: sharedRules, store: sharedStore(path))
        for _ in 0..<count { engine.trigger("x") }
        if let error = engine.lastStoreError { fail("store error: \(error)") }
        exit(0)
    } catch {
        fail("\(error)")
    }
}

func sharedLoop(_ path: String) -> Never {
    do {
        let engine = try RuleEngine(source: sharedRules, store: sharedStore(path, compaction: 4096))
        var returned = 0
        while true {
            engine.trigger("x")
            if let error = engine.lastStoreError { fail("store error: \(error)") }
            returned += 1
            say("\(returned)")
        }
    } catch {
        fail("\(error)")
    }
}

/// Answers calls read from standard input over the shared file at `path`, with `sharedRules` or
/// the rules in the file `rulesPath`.
func serve(_ path: String, rulesPath: String? = nil) -> Never {
    let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
    let engine: RuleEngine
    do {
        let rules = try rulesPath.map { try String(contentsOfFile: $0, encoding: .utf8) } ?? sharedRules
        engine = try RuleEngine(source: rules, store: sharedStore(path, compaction: 2048), clock: clock)
    } catch {
        fail("\(error)")
    }
    while let line = readLine() {
        let parts = line.split(separator: " ").map(String.init)
        guard parts.count >= 3, let time = Double(parts[0]) else { fail("bad command: \(line)") }
        clock.set(Date(timeIntervalSince1970: time))
        let name = parts[2]
        switch parts[1] {
        case "t":
            engine.trigger(Event(name))
            say("ok")
        case "p":
            // `p EVENT NAME=INT ...`: a trigger with int properties.
            var properties: [String: PropertyValue] = [:]
            for pair in parts.dropFirst(3) {
                let sides = pair.split(separator: "=", maxSplits: 1).map(String.init)
                guard sides.count == 2, let value = Int64(sides[1]) else { fail("bad property: \(pair)") }
                properties[sides[0]] = .int(value)
            }
            engine.trigger(Event(name), properties: properties)
            say("ok")
        case "x": say("\(engine.tryToExecute(Scenario(name)))")
        case "c": say("\(engine.canExecute(Scenario(name)))")
        case "r": say("\(engine.reset(Scenario(name)))")
        case "s":
            do {
                try engine.set(Param<Int>(name), to: Int(parts[3]) ?? 0)
                say("ok")
            } catch {
                say("error")
            }
        case "n":
            // A name with spaces: a filter's stream.
            say("\(engine.count(Event(parts[2...].joined(separator: " "))))")
        case "w":
            // `w RULES-PATH`: a swap to the rules in that file.
            do {
                try engine.replaceRules(source: try String(contentsOfFile: name, encoding: .utf8))
                say("ok")
            } catch {
                say("error \(error)")
            }
        case "e": say(engine.explain(Scenario(name)).description.replacingOccurrences(of: "\n", with: " | "))
        default: fail("bad command: \(line)")
        }
    }
    exit(0)
}
