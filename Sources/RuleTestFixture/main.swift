import Foundation
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

let card = "scenario AskToSubscribe < min_events 5; since_first 7d; max_exec 4; between 2d >"

func store(_ path: String, compaction: Int) -> FileStore {
    FileStore(url: URL(fileURLWithPath: path), options: .init(compactionThreshold: compaction))
}

func triggerLoop(_ path: String, _ stream: String, compaction: Int) -> Never {
    do {
        let engine = try RuleEngine(source: card, store: store(path, compaction: compaction))
        while true {
            engine.trigger(stream)
            if let error = engine.lastStoreError {
                FileHandle.standardError.write(Data("store error: \(error)\n".utf8))
                exit(2)
            }
            FileHandle.standardOutput.write(Data("\(engine.count(stream))\n".utf8))
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
default:
    FileHandle.standardError.write(
        Data("usage: rule-test-fixture trigger-loop STATE STREAM [BYTES] | lock-loop STATE ROUNDS\n".utf8))
    exit(64)
}
