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

    func database() throws -> ThrowawayPostgres {
        do {
            return try ThrowawayPostgres()
        } catch let missing as ThrowawayPostgres.Unavailable
            where ProcessInfo.processInfo.environment["RULES_POSTGRES"] != "required"
        {
            throw XCTSkip("PostgreSQL is not installed here: \(missing)")
        }
    }

    func testABatchOfEventsCountsAsTheirTriggersOneByOne() throws {
        let pg = try database()
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

    func testEligibleStreamsExactlyTheInstallsThatWouldRun() throws {
        let pg = try database()
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
        let pg = try database()
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
