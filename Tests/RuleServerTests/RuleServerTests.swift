import Foundation
import RuleLang
import RuleRuntime
import RuleServer
import TestSupport
import XCTest

/// The rules over many installs' state in a throwaway PostgreSQL (`ThrowawayPostgres`): the
/// device engine's answers, caps kept under concurrent workers, a request applied once, faults.
/// They skip when PostgreSQL is not installed, unless `RULES_POSTGRES=required` (CI sets it).
final class RuleServerTests: XCTestCase {
    let start = Date(timeIntervalSince1970: 1_767_225_600)

    func testMigrateCreatesTheSchemaOnceAndAServerRefusesADatabaseWithout() throws {
        let pg = try throwawayPostgres()
        defer { pg.stop() }
        let rules = [SourceFile(path: "r.rules", text: "scenario S < max_exec 1 >")]
        XCTAssertThrowsError(try RuleServer(sources: rules, database: pg.conninfo)) { error in
            guard case RuleServerError.schema(let message)? = error as? RuleServerError else {
                return XCTFail("\(error)")
            }
            XCTAssertTrue(message.contains("migrate"), message)
        }
        XCTAssertEqual(try RuleServer.migrate(database: pg.conninfo), 0)
        XCTAssertEqual(try RuleServer.migrate(database: pg.conninfo), 2)
        XCTAssertNoThrow(try RuleServer(sources: rules, database: pg.conninfo))
    }

    /// A database of schema version 1 (tables, no lock functions) is refused, then upgraded by
    /// `migrate` and served, its rows kept.
    func testMigrateUpgradesAVersionOneDatabase() throws {
        let pg = try throwawayPostgres()
        defer { pg.stop() }
        let rules = [SourceFile(path: "r.rules", text: "scenario S < max_exec 1 >")]
        XCTAssertEqual(try RuleServer.migrate(database: pg.conninfo, toVersion: 1), 0)
        XCTAssertThrowsError(try RuleServer(sources: rules, database: pg.conninfo)) { error in
            XCTAssertEqual(
                error as? RuleServerError,
                .schema("version 1 is older than this library's 2: run 'rulec-server migrate'"))
        }
        XCTAssertEqual(try RuleServer.migrate(database: pg.conninfo), 1)
        let server = try RuleServer(sources: rules, database: pg.conninfo)
        XCTAssertTrue(try server.tryToExecute(install: "u", "S", at: start))
        XCTAssertFalse(try server.tryToExecute(install: "u", "S", at: start))
        XCTAssertEqual(try RuleServer.migrate(database: pg.conninfo), 2)
    }

    /// Seeded random histories of the whole-language model's rules, each step run on a device
    /// engine and on the server for one install (a few installs in turn): every answer, and
    /// every scenario's explanation after each step, the same.
    func testTheServerAnswersAsADeviceEngine() throws {
        let pg = try throwawayPostgres()
        defer { pg.stop() }
        try RuleServer.migrate(database: pg.conninfo)
        let begin = 1_774_440_000.0
        var compared = 0
        var seed = 0
        var histories = 0
        // 40 in the default run; RULES_SERVER_HISTORIES=10000 for the long run (docs/server.md).
        let wanted = ProcessInfo.processInfo.environment["RULES_SERVER_HISTORIES"].flatMap { Int($0) } ?? 40
        while histories < wanted {
            seed += 1
            var random = ModelRandom(seed: 50_000 + seed)
            let rules = ModelRules.random(&random, start: begin)
            // Steps a server call makes: no swap (the server swaps for every install at once),
            // no presentations (not served yet).
            guard
                let server = try? RuleServer(
                    sources: [SourceFile(path: "r.rules", text: rules.text)], database: pg.conninfo)
            else { continue }
            histories += 1
            let install = "install-\(seed)"
            let clock = ManualClock(Date(timeIntervalSince1970: begin))
            var options = RuleEngine.Options(logSubsystem: nil)
            options.installID = install
            let device = try RuleEngine(source: rules.text, clock: clock, options: options)
            var model = LanguageModel(
                rules: rules, start: begin, zone: TimeZone(identifier: "UTC")!, installID: install)
            for _ in 0..<20 {
                let step = model.randomStep(&random)
                let now = Date(timeIntervalSince1970: model.now)
                switch step {
                case .advance: break
                case .launch(let version):
                    device.startSession(version: version)
                    try server.startSession(install: install, version: version, at: now)
                case .trigger(let stream, nil):
                    device.trigger(Event(stream))
                    // Every other one through a batch: the inbox, folded by the next call.
                    if random.next(2) == 0 {
                        try server.trigger(install: install, stream, at: now)
                    } else {
                        try server.trigger(batch: [.init(install: install, event: stream, at: now)])
                    }
                case .trigger(let stream, let properties?):
                    let values: [String: PropertyValue] = [
                        "amount": .int(Int64(properties.amount)), "plan": .string(properties.plan),
                    ]
                    device.trigger(Event(stream), properties: values)
                    try server.trigger(install: install, stream, properties: values, at: now)
                case .tryToExecute(let name) where !name.hasPrefix("S2"):
                    XCTAssertEqual(
                        try server.tryToExecute(install: install, name, at: now), device.tryToExecute(name),
                        "seed \(seed): \(rules.text)")
                case .outcome(let name, let word):
                    try device.recordOutcome(Outcome(rawValue: word)!, of: name)
                    try server.recordOutcome(install: install, Outcome(rawValue: word)!, of: name, at: now)
                default: continue
                }
                _ = model.apply(step)
                clock.set(Date(timeIntervalSince1970: model.now))
                for name in rules.scenarios.map(\.name) {
                    XCTAssertEqual(
                        try server.explain(install: install, name, at: Date(timeIntervalSince1970: model.now)),
                        device.explain(name), "seed \(seed): \(rules.text)")
                    compared += 1
                }
            }
            if testRun?.failureCount ?? 0 > 5 { return }
        }
        XCTAssertGreaterThan(compared, 500)
    }

    /// 64 workers on threads, each with its own server (and so its own connection), try one
    /// scenario on the same 1,000 installs at once: no install ever runs more than the cap, and the
    /// yes answers are exactly the executions the database holds.
    func testConcurrentWorkersNeverExceedACap() throws {
        let pg = try throwawayPostgres()
        defer { pg.stop() }
        try RuleServer.migrate(database: pg.conninfo)
        let rules = [SourceFile(path: "r.rules", text: "scenario Offer < max_exec 3 within 1d; between 1h >")]
        let installs = (0..<1_000).map { "user-\($0)" }
        let yes = Locked([String: Int]())
        let failures = Locked([String]())
        let (database, start) = (pg.conninfo, start)
        DispatchQueue.concurrentPerform(iterations: 64) { worker in
            do {
                let server = try RuleServer(sources: rules, database: database, options: .init(connections: 1))
                for round in 0..<400 {
                    let install = installs[(worker * 7_919 + round * 104_729) % installs.count]
                    // Ten phases of an hour: `between 1h` lets an install through once a phase at most.
                    let time = start.addingTimeInterval(Double(round / 40) * 3_600)
                    if try server.tryToExecute(install: install, "Offer", at: time) {
                        yes.withValue { $0[install, default: 0] += 1 }
                    }
                }
            } catch {
                failures.withValue { $0.append("\(error)") }
            }
        }
        XCTAssertEqual(failures.withValue { $0 }, [])
        let server = try RuleServer(sources: rules, database: pg.conninfo)
        let counts = yes.withValue { $0 }
        for install in installs {
            let shown = counts[install, default: 0]
            XCTAssertLessThanOrEqual(shown, 3, install)
            let explanation = try server.explain(install: install, "Offer", at: start.addingTimeInterval(12 * 3_600))
            XCTAssertTrue(explanation.description.contains("max_exec 3 within 1d: \(shown) so far"), "\(explanation)")
        }
        XCTAssertGreaterThan(counts.values.filter { $0 == 3 }.count, 100, "the cap is reached often")
    }

    /// Four worker processes of 16 threads each (64 workers, each with its own connection) try
    /// one scenario on the same 1,000 installs at once: no install runs more than its cap, and
    /// the yes answers the processes count are exactly the executions the database holds.
    func testFourProcessesOfWorkersNeverExceedACap() throws {
        let pg = try throwawayPostgres()
        defer { pg.stop() }
        try RuleServer.migrate(database: pg.conninfo)
        let worker = Bundle.main.bundleURL.appendingPathComponent("rule-server-worker")
        var children: [(Process, Pipe)] = []
        for k in 0..<4 {
            let process = Process()
            process.executableURL = worker
            process.arguments = [pg.conninfo, "\(k)", "16", "400", "1000"]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            children.append((process, output))
        }
        var yes: [String: Int] = [:]
        for (process, output) in children {
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            XCTAssertEqual(process.terminationStatus, 0, text)
            XCTAssertTrue(text.hasSuffix("done\n"), text)
            for line in text.split(separator: "\n") where line != "done" {
                let parts = line.split(separator: " ")
                yes[String(parts[0]), default: 0] += Int(parts[1]) ?? 0
            }
        }
        let server = try RuleServer(
            sources: [SourceFile(path: "r.rules", text: "scenario Offer < max_exec 3 within 1d; between 1h >")],
            database: pg.conninfo)
        let later = start.addingTimeInterval(12 * 3_600)
        for install in (0..<1_000).map({ "user-\($0)" }) {
            let shown = yes[install, default: 0]
            XCTAssertLessThanOrEqual(shown, 3, install)
            let explanation = try server.explain(install: install, "Offer", at: later)
            XCTAssertTrue(explanation.description.contains("max_exec 3 within 1d: \(shown) so far"), "\(explanation)")
            if testRun?.failureCount ?? 0 > 5 { return }
        }
        XCTAssertGreaterThan(yes.values.filter { $0 == 3 }.count, 100, "the cap is reached often")
    }

    /// A call retried with its request id is applied once, and answers what it answered.
    func testARequestIDIsAppliedOnce() throws {
        let pg = try throwawayPostgres()
        defer { pg.stop() }
        try RuleServer.migrate(database: pg.conninfo)
        let server = try RuleServer(
            sources: [SourceFile(path: "r.rules", text: "scenario Offer < on a; max_exec 1 >")], database: pg.conninfo)
        try server.trigger(install: "u", "a", at: start, requestID: "t1")
        try server.trigger(install: "u", "a", at: start, requestID: "t1")
        XCTAssertTrue(try server.tryToExecute(install: "u", "Offer", at: start, requestID: "r1"))
        XCTAssertTrue(try server.tryToExecute(install: "u", "Offer", at: start, requestID: "r1"), "the same answer")
        XCTAssertFalse(try server.tryToExecute(install: "u", "Offer", at: start, requestID: "r2"))
        let explanation = try server.explain(install: "u", "Offer", at: start)
        XCTAssertEqual(explanation.clauses.map(\.detail), ["1 so far"], "\(explanation)")
    }

    /// The database stopped: a call fails at once with a connection error, nothing is kept; the
    /// database back, the next call connects again and works.
    func testTheDatabaseDownFailsFastAndTheNextCallReconnects() throws {
        let pg = try throwawayPostgres()
        defer { pg.stop() }
        try RuleServer.migrate(database: pg.conninfo)
        let server = try RuleServer(
            sources: [SourceFile(path: "r.rules", text: "scenario Offer < on a; max_exec 5 >")], database: pg.conninfo)
        try server.trigger(install: "u", "a", at: start)
        pg.kill()
        let began = Date()
        XCTAssertThrowsError(try server.tryToExecute(install: "u", "Offer", at: start)) { error in
            guard case RuleServerError.connection? = error as? RuleServerError else { return XCTFail("\(error)") }
        }
        XCTAssertLessThan(Date().timeIntervalSince(began), 5)
        try pg.start()
        XCTAssertTrue(try server.tryToExecute(install: "u", "Offer", at: start))
        XCTAssertEqual(try server.explain(install: "u", "Offer", at: start).clauses.map(\.detail), ["1 so far"])
    }

    /// docs/server.md's walkthrough, as written there (the database's name aside).
    func testTheWalkthrough() throws {
        let pg = try throwawayPostgres()
        defer { pg.stop() }
        let rulesText = "scenario WinBack < on purchase; max_exec 1 within 7d >"
        try RuleServer.migrate(database: pg.conninfo)
        let server = try RuleServer(
            sources: [SourceFile(path: "app.rules", text: rulesText)], database: pg.conninfo)
        try server.trigger(install: "user-42", "purchase", at: Date())
        var sent = 0
        if try server.tryToExecute(install: "user-42", "WinBack", at: Date(), requestID: "push-9f2c") {
            sent += 1
        }
        XCTAssertEqual(sent, 1)
        XCTAssertFalse(try server.explain(install: "user-42", "WinBack", at: Date()).wouldRun)
    }

    func testAnUnknownScenarioIsATypedError() throws {
        let pg = try throwawayPostgres()
        defer { pg.stop() }
        try RuleServer.migrate(database: pg.conninfo)
        let server = try RuleServer(
            sources: [SourceFile(path: "r.rules", text: "scenario Offer < >")], database: pg.conninfo)
        XCTAssertThrowsError(try server.tryToExecute(install: "u", "Ofer", at: start)) { error in
            XCTAssertEqual(error as? RuleServerError, .unknownScenario("Ofer"))
        }
    }
}

/// The database killed (`SIGKILL`) and started again in the middle of a load: every call
/// acknowledged is kept, every call that failed says so, and retrying a failed call with its
/// request id never counts it twice.
final class RuleServerFaultTests: XCTestCase {
    func testAKilledDatabaseLosesNoAcknowledgedCallAndCountsNoRetryTwice() throws {
        let pg = try throwawayPostgres()
        defer { pg.stop() }
        try RuleServer.migrate(database: pg.conninfo)
        let server = try RuleServer(
            sources: [SourceFile(path: "r.rules", text: "scenario Offer < on a; min_events 0 >")],
            database: pg.conninfo,
            options: .init(connections: 2, statementTimeout: 2))
        let start = Date(timeIntervalSince1970: 1_767_225_600)
        let installs = (0..<5).map { "user-\($0)" }
        var sent: [String: Int] = [:]
        var failed: [Int] = []
        for k in 0..<300 {
            let install = installs[k % installs.count]
            // The database killed before the 100th call and back before the 130th.
            if k == 100 { pg.kill() }
            if k == 130 { try pg.start() }
            do {
                try server.trigger(install: install, "a", at: start, requestID: "event-\(k)")
                sent[install, default: 0] += 1
            } catch RuleServerError.connection {
                failed.append(k)
            }
        }
        // Every call while it was down failed and said so; a pipeline retries them with their ids
        // (twice here: the second changes nothing).
        XCTAssertEqual(failed, Array(100..<130))
        for k in failed {
            let install = installs[k % installs.count]
            try server.trigger(install: install, "a", at: start, requestID: "event-\(k)")
            sent[install, default: 0] += 1
            try server.trigger(install: install, "a", at: start, requestID: "event-\(k)")
        }
        let failures = failed.count
        XCTAssertGreaterThanOrEqual(failures, 30)
        for install in installs {
            let explanation = try server.explain(install: install, "Offer", at: start)
            XCTAssertEqual(explanation.clauses.map(\.detail), ["\(sent[install, default: 0]) so far"], install)
        }
        XCTAssertEqual(sent.values.reduce(0, +), 300)
    }
}
