import Foundation
import RuleLang
import RuleRuntime
import RuleServer
import TestSupport
import XCTest

/// A batch of events, the campaign question and state files, each against an independent tally
/// or a device engine.
final class RuleServerManyTests: XCTestCase {
    let start = Date(timeIntervalSince1970: 1_767_225_600)

    func testABatchOfEventsCountsAsTheirTriggersOneByOne() throws {
        let pg = try throwawayPostgres()
        defer { pg.stop() }
        try RuleServer.migrate(database: pg.conninfo)
        let rules = "scenario Offer < on a, b; min_events 3; max_events 5 within 1h >"
        let server = try RuleServer(sources: [SourceFile(path: "r.rules", text: rules)], database: pg.conninfo)
        var random = SeededGenerator(seed: 7)
        var events: [RuleServer.BatchEvent] = []
        for k in 0..<60 {
            events.append(
                .init(
                    install: "u\(random.next(5))", event: random.next(2) == 0 ? "a" : "b",
                    at: start.addingTimeInterval(Double(k * 120))))
        }
        try server.trigger(batch: events)
        for install in (0..<5).map({ "u\($0)" }) {
            let clock = ManualClock(start)
            let device = try RuleEngine(source: rules, clock: clock)
            for event in events where event.install == install {
                clock.set(event.time)
                device.trigger(Event(event.event))
            }
            let end = start.addingTimeInterval(7_200)
            clock.set(end)
            XCTAssertEqual(try server.explain(install: install, "Offer", at: end), device.explain("Offer"), install)
        }
    }

    /// A batch is one transaction: one install it cannot store (an id PostgreSQL refuses) fails it
    /// whole, so the installs before that one keep nothing, and the batch retried without it counts
    /// each event once.
    func testABatchThatFailsKeepsNothingAndItsRetryCountsOnce() throws {
        let pg = try throwawayPostgres()
        defer { pg.stop() }
        try RuleServer.migrate(database: pg.conninfo)
        let rules = "scenario Offer < on a; min_events 2 >"
        let server = try RuleServer(sources: [SourceFile(path: "r.rules", text: rules)], database: pg.conninfo)
        let good = (0..<3).map { RuleServer.BatchEvent(install: "u\($0 % 2)", event: "a", at: start) }
        XCTAssertThrowsError(try server.trigger(batch: good + [.init(install: "bad\u{0}id", event: "a", at: start)]))
        func device(_ events: Int) throws -> Explanation {
            let engine = try RuleEngine(source: rules, clock: ManualClock(start))
            for _ in 0..<events { engine.trigger("a") }
            return engine.explain("Offer")
        }
        for install in ["u0", "u1"] {
            XCTAssertEqual(try server.explain(install: install, "Offer", at: start), try device(0), install)
        }
        try server.trigger(batch: good)
        XCTAssertEqual(try server.explain(install: "u0", "Offer", at: start), try device(2))
        XCTAssertEqual(try server.explain(install: "u1", "Offer", at: start), try device(1))
    }

    /// Batches append to the inbox while calls fold it, from four threads at once: no event is
    /// lost or counted twice (a call removes exactly the events it read, not one a batch
    /// committed meanwhile), and export and `eligible` see events not folded yet.
    func testBatchedEventsAreFoldedOnceWhileCallsRun() throws {
        let pg = try throwawayPostgres()
        defer { pg.stop() }
        try RuleServer.migrate(database: pg.conninfo)
        let rules = "scenario Offer < on a; min_events 40 >"
        let server = try RuleServer(
            sources: [SourceFile(path: "r.rules", text: rules)], database: pg.conninfo, options: .init(connections: 4))
        let installs = (0..<4).map { "u\($0)" }
        let sent = Locked([String: Int]())
        let start = self.start
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            var random = SeededGenerator(seed: UInt64(worker + 1))
            for round in 0..<20 {
                if worker < 2 {
                    let batch = (0..<5).map { _ in
                        RuleServer.BatchEvent(install: installs[random.next(4)], event: "a", at: start)
                    }
                    do {
                        try server.trigger(batch: batch)
                        sent.withValue { counts in for item in batch { counts[item.install, default: 0] += 1 } }
                    } catch {
                        XCTFail("\(error)")
                    }
                } else {
                    do {
                        _ = try server.canExecute(install: installs[(round + worker) % 4], "Offer", at: start)
                    } catch {
                        XCTFail("\(error)")
                    }
                }
            }
        }
        let counts = sent.withValue { $0 }
        XCTAssertEqual(counts.values.reduce(0, +), 200)
        func device(_ events: Int) throws -> Explanation {
            let engine = try RuleEngine(source: rules, clock: ManualClock(start))
            for _ in 0..<events { engine.trigger("a") }
            return engine.explain("Offer")
        }
        // Export folds what is left: the state file has every event.
        let exported = try server.exportState(install: "u0")
        let fromFile = try RuleEngine(source: rules, store: InMemoryStore(exported), clock: ManualClock(start))
        XCTAssertEqual(fromFile.explain("Offer"), try device(counts["u0"] ?? 0))
        // A batch not folded yet counts for eligible.
        try server.trigger(batch: (0..<40).map { _ in .init(install: "fresh", event: "a", at: start) })
        var found: [String] = []
        try server.eligible("Offer", at: start) { found.append($0) }
        XCTAssertEqual(found.sorted(), (["fresh"] + installs.filter { (counts[$0] ?? 0) >= 40 }).sorted())
        for install in installs {
            XCTAssertEqual(try server.explain(install: install, "Offer", at: start), try device(counts[install] ?? 0))
        }
    }

    /// Install ids and property values with a tab, a newline, a backslash and a quote go through
    /// the batch's COPY as they go through a call: the same install, the same filtered counts.
    func testABatchKeepsAwkwardIDsAndPropertiesExact() throws {
        let pg = try throwawayPostgres()
        defer { pg.stop() }
        try RuleServer.migrate(database: pg.conninfo)
        let rules = #"""
            # language 1.2
            event a(amount: int, plan: string)
            scenario Offer < on a; min_events 2 where plan == "pro \"x\" \\" >
            """#
        let server = try RuleServer(sources: [SourceFile(path: "r.rules", text: rules)], database: pg.conninfo)
        let plan = PropertyValue.string(#"pro "x" \"#)
        for install in ["tab\there", "line\nbreak", "back\\slash\\N", "plain"] {
            let events = (0..<2).map { k in
                RuleServer.BatchEvent(
                    install: install, event: "a", properties: ["amount": .int(Int64(-k)), "plan": plan], at: start)
            }
            try server.trigger(batch: events)
            try server.trigger(install: install + "-direct", "a", properties: ["amount": 0, "plan": plan], at: start)
            try server.trigger(install: install + "-direct", "a", properties: ["amount": -1, "plan": plan], at: start)
            let batched = try server.explain(install: install, "Offer", at: start)
            XCTAssertTrue(batched.wouldRun, "\(install): \(batched)")
            XCTAssertEqual(batched, try server.explain(install: install + "-direct", "Offer", at: start))
            XCTAssertEqual(
                try server.exportState(install: install), try server.exportState(install: install + "-direct"))
        }
    }

    /// `eligible` judges each install in the zone its state last saw, as its calls do.
    func testEligibleJudgesEachInstallInItsOwnZone() throws {
        let pg = try throwawayPostgres()
        defer { pg.stop() }
        try RuleServer.migrate(database: pg.conninfo)
        let rules = "# language 1.2\nscenario Evening < during 21:00-23:30 >\n"
        let server = try RuleServer(
            sources: [SourceFile(path: "r.rules", text: rules)], database: pg.conninfo,
            options: .init(engine: .init(timeZone: TimeZone(identifier: "UTC")!)))
        try server.setTimeZone(install: "tokyo", TimeZone(identifier: "Asia/Tokyo")!, at: start)
        try server.setTimeZone(install: "paris", TimeZone(identifier: "Europe/Paris")!, at: start)
        // 2026-01-01 13:00 UTC: 22:00 in Tokyo, 14:00 in Paris and UTC.
        let at = start.addingTimeInterval(13 * 3_600)
        XCTAssertTrue(try server.canExecute(install: "tokyo", "Evening", at: at))
        XCTAssertFalse(try server.canExecute(install: "paris", "Evening", at: at))
        var found: [String] = []
        try server.eligible("Evening", at: at) { found.append($0) }
        XCTAssertEqual(found, ["tokyo"])
    }

    func testEligibleStreamsExactlyTheInstallsThatWouldRun() throws {
        let pg = try throwawayPostgres()
        defer { pg.stop() }
        try RuleServer.migrate(database: pg.conninfo)
        let server = try RuleServer(
            sources: [SourceFile(path: "r.rules", text: "scenario Winback < on a; min_events 2; max_exec 1 >")],
            database: pg.conninfo)
        var random = SeededGenerator(seed: 11)
        var counts: [String: Int] = [:]
        var events: [RuleServer.BatchEvent] = []
        for k in 0..<90 {
            let install = "user-\(random.next(40))"
            counts[install, default: 0] += 1
            events.append(.init(install: install, event: "a", at: start.addingTimeInterval(Double(k))))
        }
        try server.trigger(batch: events)
        // One of them already shown: max_exec 1 refuses it.
        let shown = counts.first { $0.value >= 2 }!.key
        XCTAssertTrue(try server.tryToExecute(install: shown, "Winback", at: start.addingTimeInterval(100)))
        let expected = Set(counts.filter { $0.value >= 2 && $0.key != shown }.keys)
        var found: [String] = []
        try server.eligible("Winback", at: start.addingTimeInterval(200), batch: 7) { found.append($0) }
        XCTAssertEqual(Set(found), expected)
        XCTAssertEqual(found.count, expected.count, "each once")
        // Restricted to a list, and to a bucket range (the buckets from grammar.md's hash).
        let some = Array(expected.sorted().prefix(3)) + ["nobody"]
        var listed: [String] = []
        try server.eligible("Winback", at: start.addingTimeInterval(200), installs: some) { listed.append($0) }
        XCTAssertEqual(Set(listed), Set(some.dropLast()))
        var bucketed: [String] = []
        try server.eligible("Winback", at: start.addingTimeInterval(200), buckets: ("campaign", 0..<50)) {
            bucketed.append($0)
        }
        XCTAssertEqual(Set(bucketed), expected.filter { LanguageModel.bucket("campaign", $0) < 50 })
    }

    func testAStateFileImportsIntoRowsAndExportsBack() throws {
        let pg = try throwawayPostgres()
        defer { pg.stop() }
        try RuleServer.migrate(database: pg.conninfo)
        let rules = "# language 1.2\nscenario Ask < on launch; min_events 2; between 1d; after declined 3d >"
        let server = try RuleServer(sources: [SourceFile(path: "r.rules", text: rules)], database: pg.conninfo)
        let folder = scratchFolder("rules-server-state")
        defer { try? FileManager.default.removeItem(at: folder) }
        let clock = ManualClock(start)
        let phoneStore = FileStore(url: folder.appendingPathComponent("phone.state"))
        let phone = try RuleEngine(source: rules, store: phoneStore, clock: clock)
        phone.startSession(version: "1")
        phone.trigger("launch")
        phone.trigger("launch")
        XCTAssertTrue(phone.tryToExecute("Ask"))
        try phone.recordOutcome(.declined, of: "Ask")
        clock.set(start.addingTimeInterval(86_400 * 2))
        let entries = try phoneStore.load()
        try server.importState(install: "user-42", entries: entries)
        let now = start.addingTimeInterval(86_400 * 2)
        XCTAssertEqual(try server.explain(install: "user-42", "Ask", at: now), phone.explain("Ask"))
        // And back into a new state file: a second phone answers as the first.
        let copy = FileStore(url: folder.appendingPathComponent("copy.state"))
        try copy.apply(try server.exportState(install: "user-42").map { StoreChange(key: $0.key, value: $0.value) })
        let second = try RuleEngine(source: rules, store: copy, clock: clock)
        XCTAssertEqual(second.explain("Ask"), phone.explain("Ask"))
        XCTAssertEqual(try server.exportState(install: "nobody"), [:])
    }
}

/// `rulec-server`, the tool: each command once, as a shell script would run them.
final class RulecServerToolTests: XCTestCase {
    func testEveryCommandFromAShell() throws {
        let pg = try throwawayPostgres()
        defer { pg.stop() }
        let folder = scratchFolder("rules-server-tool")
        defer { try? FileManager.default.removeItem(at: folder) }
        let rules = folder.appendingPathComponent("app.rules").path
        try "scenario Offer < on a; min_events 2; max_exec 1 >\n".write(
            toFile: rules, atomically: true, encoding: .utf8)
        func run(_ arguments: [String], rulec: Bool = false, path: String? = nil) throws -> (
            status: Int32, out: String, err: String
        ) {
            let process = Process()
            // `rulec server ...` runs the same tool: rulec finds it beside itself.
            process.executableURL = Bundle.main.bundleURL.appendingPathComponent(rulec ? "rulec" : "rulec-server")
            process.arguments = rulec ? ["server"] + arguments : arguments
            if let path { process.environment = ["PATH": path] }
            let (out, err) = (Pipe(), Pipe())
            process.standardOutput = out
            process.standardError = err
            try process.run()
            let o = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let e = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return (process.terminationStatus, o, e)
        }
        let db = ["--db", pg.conninfo]
        let noSchema = try run(["try", rules, "--install", "u1", "Offer"] + db)
        XCTAssertEqual(noSchema.status, 1)
        XCTAssertTrue(noSchema.err.contains("migrate"), noSchema.err)
        XCTAssertEqual(try run(["migrate"] + db).out, "created the schema (version 2)\n")
        XCTAssertEqual(try run(["migrate"] + db).out, "the schema was there (version 2)\n")
        for _ in 0..<2 {
            XCTAssertEqual(try run(["trigger", rules, "--install", "u1", "a", "--at", "100"] + db).status, 0)
        }
        XCTAssertEqual(try run(["trigger", rules, "--install", "u2", "a", "--at", "100"] + db, rulec: true).status, 0)
        XCTAssertEqual(try run(["eligible", rules, "Offer", "--at", "200"] + db, rulec: true).out, "u1\n")
        XCTAssertEqual(try run(["fold", rules] + db, rulec: true).out, "folded 0 installs\n")
        let viaRulec = try run(["try", rules, "Offer"] + db, rulec: true)
        XCTAssertEqual(viaRulec.status, 64)
        XCTAssertTrue(viaRulec.err.hasPrefix("rulec server: 'try' needs '--install ID'"), viaRulec.err)
        // rulec alone (copied where no rulec-server is, with an empty PATH) says what to build.
        let alone = folder.appendingPathComponent("alone")
        try FileManager.default.createDirectory(at: alone, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: Bundle.main.bundleURL.appendingPathComponent("rulec"), to: alone.appendingPathComponent("rulec"))
        let lonely = Process()
        lonely.executableURL = alone.appendingPathComponent("rulec")
        lonely.arguments = ["server", "migrate"] + db
        lonely.environment = ["PATH": ""]
        let lonelyErr = Pipe()
        lonely.standardError = lonelyErr
        try lonely.run()
        let lonelyText = String(decoding: lonelyErr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        lonely.waitUntilExit()
        XCTAssertEqual(lonely.terminationStatus, 1)
        XCTAssertTrue(lonelyText.contains("swift build --product rulec-server"), lonelyText)
        let explained = try run(["explain", rules, "--install", "u1", "Offer", "--at", "200"] + db)
        XCTAssertTrue(explained.out.contains("min_events 2: 2 so far"), explained.out)
        XCTAssertEqual(try run(["try", rules, "--install", "u1", "Offer", "--at", "200"] + db).out, "yes\n")
        let no = try run(["try", rules, "--install", "u1", "Offer", "--at", "300"] + db)
        XCTAssertEqual(no.status, 1)
        XCTAssertEqual(no.out, "no\n")
        // u1's rows into a state file, and that file made u3's rows: u3 answers as u1.
        let state = folder.appendingPathComponent("u1.state").path
        XCTAssertEqual(try run(["export", rules, "--install", "u1", state] + db).status, 0)
        XCTAssertEqual(try run(["import", rules, "--install", "u3", state] + db).status, 0)
        let copied = try run(["explain", rules, "--install", "u3", "Offer", "--at", "300"] + db)
        XCTAssertTrue(copied.out.contains("max_exec 1: 1 so far"), copied.out)
        let misuse = try run(["try", rules, "Offer"] + db)
        XCTAssertEqual(misuse.status, 64)
        XCTAssertTrue(misuse.err.contains("--install"), misuse.err)
    }
}

/// A presentation on the server: it holds its group across calls (each a new engine), and
/// finishing it lets go and records the outcome, as on a device.
final class RuleServerPresentationTests: XCTestCase {
    func testAPresentationHoldsItsGroupUntilFinished() throws {
        let pg = try throwawayPostgres()
        defer { pg.stop() }
        try RuleServer.migrate(database: pg.conninfo)
        let rules = """
            # language 1.2
            group Prompts < > {
                scenario Rate < after declined never >
                scenario Offer < max_exec 5 >
            }
            """
        let server = try RuleServer(sources: [SourceFile(path: "r.rules", text: rules)], database: pg.conninfo)
        let start = Date(timeIntervalSince1970: 1_767_225_600)
        let clock = ManualClock(start)
        let device = try RuleEngine(source: rules, clock: clock)
        let token = try XCTUnwrap(try server.present(install: "u", "Rate", at: start))
        let shown = try XCTUnwrap(device.present(Scenario("Rate")))
        let later = start.addingTimeInterval(60)
        clock.set(later)
        XCTAssertNil(try server.present(install: "u", "Offer", at: later))
        XCTAssertNil(device.present(Scenario("Offer")))
        XCTAssertEqual(
            try server.explain(install: "u", "Offer", at: later).failing.map(\.clause),
            device.explain("Offer").failing.map(\.clause))
        try server.finish(install: "u", "Rate", token: token, .declined, at: later, requestID: "f1")
        try server.finish(install: "u", "Rate", token: token, .declined, at: later, requestID: "f1")
        try device.finish(shown, .declined)
        XCTAssertEqual(try server.explain(install: "u", "Rate", at: later), device.explain("Rate"))
        XCTAssertEqual(try server.explain(install: "u", "Offer", at: later), device.explain("Offer"))
        XCTAssertNotNil(try server.present(install: "u", "Offer", at: later))
    }
}
