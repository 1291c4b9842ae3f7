import Foundation
import RuleLang
import RuleServer

// A worker process of RuleServerTests: `rule-server-worker DATABASE WORKER THREADS ROUNDS INSTALLS`
// tries the scenario `Offer` from THREADS threads, ROUNDS calls each, over INSTALLS installs, and
// prints, one line each, the installs it was told yes for (`INSTALL COUNT`), then `done`.

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count == 5, let worker = Int(arguments[1]), let threads = Int(arguments[2]),
    let rounds = Int(arguments[3]), let installs = Int(arguments[4])
else {
    FileHandle.standardError.write(Data("usage: rule-server-worker DATABASE WORKER THREADS ROUNDS INSTALLS\n".utf8))
    exit(2)
}
let rules = [SourceFile(path: "offer.rules", text: "scenario Offer < max_exec 3 within 1d; between 1h >")]
// `yes` and `failure` are read and written under `lock` only, until every thread has ended.
let lock = NSLock()
nonisolated(unsafe) var yes: [String: Int] = [:]
nonisolated(unsafe) var failure: String?
let start = Date(timeIntervalSince1970: 1_767_225_600)
DispatchQueue.concurrentPerform(iterations: threads) { thread in
    do {
        let server = try RuleServer(sources: rules, database: arguments[0], options: .init(connections: 1))
        let seed = worker * 1_000 + thread
        for round in 0..<rounds {
            let install = "user-\((seed * 7_919 + round * 104_729) % installs)"
            // Ten phases of an hour: `between 1h` lets an install through once a phase at most.
            let time = start.addingTimeInterval(Double(round / 40) * 3_600)
            if try server.tryToExecute(install: install, "Offer", at: time) {
                lock.withLock { yes[install, default: 0] += 1 }
            }
        }
    } catch {
        lock.withLock { failure = "\(error)" }
    }
}
if let failure {
    print("failed: \(failure)")
    exit(1)
}
for (install, count) in yes.sorted(by: { $0.key < $1.key }) { print("\(install) \(count)") }
print("done")
