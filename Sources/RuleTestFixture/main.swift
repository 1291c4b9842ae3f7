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

// rule-test-fixture: child processes for the persistence tests.
//
//   rule-test-fixture trigger-loop STATE STREAM [COMPACTION_BYTES]
//       triggers STREAM forever, printing the stream's count after each returned call
//       (the SIGKILL tests kill it at random moments, compaction included)
//   rule-test-fixture defaults-trigger SUITE N
//       triggers 'S' N times through UserDefaultsStore and prints its count
//   rule-test-fixture lock-loop STATE ROUNDS
//       ROUNDS times: open the store (skipping a round when another process holds it),
//       trigger 'x' 20 times, close; prints how many triggers were acknowledged
//   rule-test-fixture shared-trigger STATE N
//       opens STATE shared; N times: trigger 'x', tryToExecute 'Budget'; prints "done E"
//       (E: executions granted here), waits for a line on standard input, prints count('x')
//   rule-test-fixture fetch URL LIMIT
//       fetches URL through a RuleDelivery of maximumSize LIMIT (in a folder of its own);
//       prints what happened and how much its peak memory grew, in bytes
//   rule-test-fixture fault-writer STATE [exclusive]
//       opens STATE shared (or exclusive) (small compaction threshold), prints "ready"; then per input line:
//       `t N` triggers 'x' N times and prints "acked A" (its triggers acknowledged so far: no
//       store error but a fault written over); `q` releases the engine, prints "bye", exits
//   rule-test-fixture shared-count STATE N
//       opens STATE shared; triggers 'x' N times and exits (rulebench contended times it)
//   rule-test-fixture shared-loop STATE
//       opens STATE shared (small compaction threshold); triggers 'x' forever, printing how
//       many of its own triggers have returned
//   rule-test-fixture serve STATE
//       opens STATE shared with a manual clock; answers one command per input line:
//       `T t NAME` trigger, `T x NAME` tryToExecute, `T c NAME` canExecute, `T r NAME` reset,
//       `T s NAME VALUE` set an int param, `T n NAME` count, `T e NAME` explain (T: the time)
//   rule-test-fixture shared-rules
//       prints the rules the shared commands use (the tests' model engines use them too)
//   rule-test-fixture rename-loop STATE
//       forever: opens STATE (shared) with rules naming the scenario 'A' (formerly 'B'), triggers it,
//       releases it, opens it with rules naming it 'B' (formerly 'A'), triggers it: every open
//       moves the history. Prints the number of triggers acknowledged after each
//   rule-test-fixture stage-loop DIR
//       forever: stages one of two sealed rules files into DIR through RuleDelivery, printing
//       how many stagings have returned
//   rule-test-fixture reenter provider|clock|store-error
//       calls the engine from inside that callback (which runs under the engine's lock): the
//       process must stop at once with a message, never hang
//   rule-test-fixture hold-lock STATE
//       takes STATE's shared lock, leaves a torn record, prints "locked" and waits to be killed
//   rule-test-fixture try-lock STATE
//       prints "free" when STATE's and STATE.shm's locks (flock, fcntl and, on Linux, the
//       region's mutex) can all be taken now

//   rule-test-fixture app-run STATE foreground|suspended|resumed|clean|exit
//       opens STATE (shared) with ``promptRules`` and plays one run of the app: starts a session,
//       then foreground: stays in the foreground; suspended: prepares for suspension; resumed:
//       prepares for suspension and comes back to the foreground; prints "ready" and waits to
//       be killed. clean: prepares for suspension and exits; exit: exits in the foreground
//   rule-test-fixture present STATE SCENARIO
//       opens STATE (shared) with ``promptRules`` and a manual clock, presents SCENARIO, prints
//       "shown" (or "refused"), then per input line: `f OUTCOME` finishes it and prints "finished"

let card = "scenario AskToSubscribe < min_events 5; since_first 7d; max_exec 4; between 2d >"

func store(_ path: String, compaction: Int) -> FileStore {
    FileStore(url: URL(fileURLWithPath: path), options: .init(compactionThreshold: compaction))
}

func triggerLoop(_ path: String, _ stream: String, compaction: Int) -> Never {
    do {
        let engine = try RuleEngine(source: card, store: store(path, compaction: compaction))
        while true {
            engine.trigger(Event(stream))
            if let error = engine.lastStoreError {
                FileHandle.standardError.write(Data("store error: \(error)\n".utf8))
                exit(2)
            }
            FileHandle.standardOutput.write(Data("\(engine.count(Event(stream)))\n".utf8))
        }
    } catch {
        FileHandle.standardError.write(Data("\(error)\n".utf8))
        exit(1)
    }
}

func lockLoop(_ path: String, rounds: Int) -> Never {
    var acknowledged = 0
    var attempted = 0
    for _ in 0..<rounds {
        guard let engine = try? RuleEngine(source: card, store: store(path, compaction: 512)) else { continue }
        for _ in 0..<20 { engine.trigger("x") }
        attempted += 20
        if engine.lastStoreError == nil { acknowledged += 20 }
    }
    print("\(acknowledged) \(attempted)")
    exit(0)
}

/// The rename kill test's two versions of one scenario: each moves the other's history.
let renamedRules = [
    "# language 1.1\nscenario A was B < min_events 1 >\nevent e was f\nscenario E < on e >",
    "# language 1.1\nscenario B was A < min_events 1 >\nevent f was e\nscenario F < on f >",
]

func renameLoop(_ path: String) -> Never {
    var acknowledged = 0
    var round = 0
    while true {
        let version = round % 2
        let (own, stream) = version == 0 ? ("A", "e") : ("B", "f")
        do {
            // Shared: compactions run in place under the lock, so kills land in them too.
            let store = FileStore(
                url: URL(fileURLWithPath: path), options: .init(compactionThreshold: 4096, shared: true))
            let opened = try RuleEngine(source: renamedRules[version], store: store, clock: ManualClock())
            let engine = opened
            if let error = engine.lastStoreError { fail("store error: \(error)") }
            engine.trigger(Event(own))
            engine.trigger(Event(stream))
            if let error = engine.lastStoreError { fail("store error: \(error)") }
            acknowledged += 1
            say("\(acknowledged)")
        } catch {
            fail("\(error)")
        }
        round += 1
    }
}

func stageLoop(_ directory: String) -> Never {
    let versions = (0..<2).map { k in
        Data(
            RuleDelivery.seal(
                Array("scenario A < min_events \(k + 1) >\n# \(String(repeating: "x", count: 4000 * k))\n".utf8)))
    }
    let delivery = RuleDelivery(directory: URL(fileURLWithPath: directory), bundled: [], maximumSize: 1 << 20)
    var staged = 0
    while true {
        do {
            try delivery.stage(versions[staged % 2], version: "v\(staged)")
        } catch {
            fail("\(error)")
        }
        staged += 1
        say("\(staged)")
    }
}

/// A clock that calls back into its engine. `@unchecked Sendable`: `engine` is set once, before
/// the engine's first call, by the one thread of this child process; nothing else changes.
final class CallingClock: RuleClock, @unchecked Sendable {
    var engine: RuleEngine?
    func now() -> Date {
        _ = engine?.canExecute("Ask")
        return Date(timeIntervalSince1970: 1_767_225_600)
    }
}

/// A store whose writes fail. `@unchecked Sendable`: it holds nothing that changes.
final class FailingStore: RuleStore, @unchecked Sendable {
    struct Failure: Error {}
    func load() throws -> [String: [UInt8]] { [:] }
    func apply(_ changes: [StoreChange]) throws { throw Failure() }
}

func reenter(_ kind: String) -> Never {
    let rules = "param level: int = 0\nscenario Ask < when level >= 0 >"
    do {
        switch kind {
        case "provider":
            let engine = try RuleEngine(source: rules, clock: ManualClock())
            try engine.provide("level") { () -> Int in engine.count("x") }
            _ = engine.canExecute("Ask")
        case "clock":
            let clock = CallingClock()
            let engine = try RuleEngine(source: rules, clock: clock)
            clock.engine = engine
            engine.trigger("x")
        case "store-error":
            let engine = try RuleEngine(source: rules, store: FailingStore(), clock: ManualClock())
            engine.storeErrorHandler = { _ in _ = engine.lastStoreError }
            engine.trigger("x")
        default:
            fail("unknown callback \(kind)")
        }
    } catch {
        fail("\(error)")
    }
    say("returned")
    exit(0)
}

/// Takes the shared region's lock of STATE as a writer does (the robust mutex on Linux, the
/// region file's `flock` elsewhere), leaves a record cut short at the end of STATE, prints
/// "locked" and waits to be killed: a writer that died in the middle of an append.
func holdLock(_ path: String) -> Never {
    let descriptor = open(path + ".shm", O_RDWR | O_CLOEXEC)
    guard descriptor >= 0 else { fail("open \(path).shm: \(errno)") }
    #if canImport(Glibc)
        guard let page = mmap(nil, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0), page != MAP_FAILED
        else { fail("map: \(errno)") }
        let result = pthread_mutex_lock((page + 64).assumingMemoryBound(to: pthread_mutex_t.self))
        guard result == 0 || result == EOWNERDEAD else { fail("lock: \(result)") }
    #else
        guard flock(descriptor, LOCK_EX) == 0 else { fail("lock: \(errno)") }
    #endif
    let state = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)
    guard state >= 0, write(state, [UInt8](repeating: 1, count: 3), 3) == 3 else { fail("write: \(errno)") }
    say("locked")
    while true { pause() }
}

/// "free" when every lock of STATE and STATE.shm can be taken at once by this process.
func tryLock(_ path: String) -> Never {
    var free = true
    for file in [path, path + ".shm"] {
        let descriptor = open(file, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { fail("open \(file): \(errno)") }
        if flock(descriptor, LOCK_EX | LOCK_NB) != 0 { free = false } else { flock(descriptor, LOCK_UN) }
        var region = flock()
        region.l_type = Int16(F_WRLCK)
        region.l_whence = Int16(SEEK_SET)
        if fcntl(descriptor, F_SETLK, &region) != 0 { free = false }
        #if canImport(Glibc)
            // Linux: the region's lock is a robust mutex at offset 64 of the mapped page.
            if file.hasSuffix(".shm"), let page = mmap(nil, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0),
                page != MAP_FAILED
            {
                let mutex = (page + 64).assumingMemoryBound(to: pthread_mutex_t.self)
                switch pthread_mutex_trylock(mutex) {
                case 0: pthread_mutex_unlock(mutex)
                case EOWNERDEAD:
                    pthread_mutex_consistent(mutex)
                    pthread_mutex_unlock(mutex)
                default: free = false
                }
                munmap(page, 4096)
            }
        #endif
        close(descriptor)
    }
    say(free ? "free" : "held")
    exit(0)
}

/// Rules of the crash and presentation tests (language 1.2).
let promptRules = """
    # language 1.2
    group Prompts < > {
        scenario RateApp < when since_last(crash) >= 3d; after declined next version >
        scenario Subscribe < after later 1d >
    }
    """

func appRun(_ path: String, _ mode: String) -> Never {
    guard let engine = try? RuleEngine(source: promptRules, store: sharedStore(path)) else { fail("open") }
    engine.startSession(version: "1")
    switch mode {
    case "foreground": break
    case "suspended": engine.prepareForSuspension()
    case "resumed":
        engine.prepareForSuspension()
        engine.enteredForeground()
    case "clean":
        engine.prepareForSuspension()
        exit(0)
    case "exit": exit(0)
    default: fail("mode \(mode)")
    }
    say("ready")
    while true { pause() }
}

func present(_ path: String, _ scenario: String) -> Never {
    let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
    guard let engine = try? RuleEngine(source: promptRules, store: sharedStore(path), clock: clock) else {
        fail("open")
    }
    guard let shown = engine.present(Scenario(scenario)) else {
        say("refused")
        exit(0)
    }
    say("shown")
    while let line = readLine() {
        let words = line.split(separator: " ")
        if words.first == "f", words.count == 2, let outcome = Outcome(rawValue: String(words[1])) {
            do {
                try engine.finish(shown, outcome)
                say("finished")
            } catch {
                say("error \(error)")
            }
        }
    }
    exit(0)
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch (arguments.first, arguments.count) {
case ("trigger-loop", 3), ("trigger-loop", 4):
    triggerLoop(arguments[1], arguments[2], compaction: arguments.count == 4 ? Int(arguments[3]) ?? 1 << 20 : 1 << 20)
case ("defaults-trigger", 3):
    // Triggers 'S' N times through a UserDefaultsStore of suite SUITE, prints the count and
    // exits normally without calling synchronize().
    guard let defaults = UserDefaults(suiteName: arguments[1]),
        let engine = try? RuleEngine(source: card, store: UserDefaultsStore(defaults: defaults))
    else { exit(1) }
    for _ in 0..<(Int(arguments[2]) ?? 0) { engine.trigger("S") }
    print(engine.count("S"))
    exit(0)
case ("lock-loop", 3):
    lockLoop(arguments[1], rounds: Int(arguments[2]) ?? 100)
case ("shared-trigger", 3):
    sharedTrigger(arguments[1], Int(arguments[2]) ?? 0)
case ("shared-loop", 2):
    sharedLoop(arguments[1])
case ("fetch", 3):
    fetchBounded(arguments[1], limit: Int(arguments[2]) ?? 0)
case ("fault-writer", 2):
    faultWriter(arguments[1], shared: true)
case ("fault-writer", 3) where arguments[2] == "exclusive":
    faultWriter(arguments[1], shared: false)
case ("shared-count", 3):
    sharedCount(arguments[1], Int(arguments[2]) ?? 0)
case ("serve", 2):
    serve(arguments[1])
case ("serve", 3):
    serve(arguments[1], rulesPath: arguments[2])
case ("shared-rules", 1):
    say(sharedRules)
    exit(0)
case ("rename-loop", 2):
    renameLoop(arguments[1])
case ("stage-loop", 2):
    stageLoop(arguments[1])
case ("reenter", 2):
    reenter(arguments[1])
case ("hold-lock", 2):
    holdLock(arguments[1])
case ("try-lock", 2):
    tryLock(arguments[1])
case ("app-run", 3):
    appRun(arguments[1], arguments[2])
case ("present", 3):
    present(arguments[1], arguments[2])
default:
    FileHandle.standardError.write(
        Data("usage: rule-test-fixture trigger-loop STATE STREAM [BYTES] | lock-loop STATE ROUNDS\n".utf8))
    exit(64)
}
