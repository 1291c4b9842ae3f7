import Foundation
import TestSupport
import XCTest

@_spi(Tools) @testable import RuleRuntime

final class PersistenceTests: XCTestCase {
    let rules = "scenario AskToSubscribe < min_events 5; since_first 7d; max_exec 4; between 2d >\nparam p: string"

    private func reopen(_ url: URL, _ clock: ManualClock, recovery: FileStore.Recovery = .strict) throws -> RuleEngine {
        try RuleEngine(source: rules, store: FileStore(url: url, options: .init(recovery: recovery)), clock: clock)
    }

    func testFileStoreRoundTripsEverything() throws {
        let url = temporaryURL("state")
        let clock = ManualClock()
        do {
            let engine = try reopen(url, clock)
            engine.startSession(version: "2.0")
            for _ in 0..<5 { engine.trigger("AskToSubscribe") }
            clock.advance(by: 7 * .day)
            XCTAssertTrue(engine.tryToExecute("AskToSubscribe"))
            try engine.set("p", to: "hello")
            _ = engine.toDo("banner", scope: .until(.hour), info: ["a": "b"])
        }
        let engine = try reopen(url, clock)
        XCTAssertEqual(engine.count("AskToSubscribe"), 5)
        XCTAssertEqual(engine.count(Event("AskToSubscribe"), scope: .version), 5)
        XCTAssertEqual(engine.currentVersion, "2.0")
        XCTAssertEqual(engine.paramValue(named: "p"), .string("hello"))
        XCTAssertEqual(engine.info(forToDo: "banner"), ["a": "b"])
        XCTAssertEqual(engine.explain("AskToSubscribe").reason, "between 2d: 2d left")
    }

    /// The store keeps no copy of the entries once the engine has them: a later `load`
    /// replays the file, and sees every write made since the first one.
    func testLoadAfterWritesReplaysTheFile() throws {
        let url = temporaryURL("state")
        let store = FileStore(url: url)
        XCTAssertEqual(try store.load(), [:])
        try store.didLoad()
        try store.apply([StoreChange(key: "e:a", value: [1, 2, 3]), StoreChange(key: "e:b", value: [4])])
        XCTAssertEqual(try store.load(), ["e:a": [1, 2, 3], "e:b": [4]])
        // Without didLoad in between, what the first load returned must not be served again.
        try store.apply([StoreChange(key: "e:a", value: nil), StoreChange(key: "e:c", value: [])])
        XCTAssertEqual(try store.load(), ["e:b": [4], "e:c": []])
        try store.compact()
        XCTAssertEqual(try store.load(), ["e:b": [4], "e:c": []])
    }

    /// A view whose events equal the stream it counts is stored by reference (format 3), in
    /// full otherwise; either way it reloads exactly, and a reference to a stream that is not
    /// stored is reported, not read as an empty history.
    func testViewsStoredByReferenceReloadExactly() throws {
        let source = "scenario S < min_events 3; max_exec 2 >\nscenario T < on S, other; min_events 1 >"
        let store = InMemoryStore()
        let clock = ManualClock()
        do {
            let engine = try RuleEngine(source: source, store: store, clock: clock)
            for _ in 0..<3 {
                engine.trigger("S")
                clock.advance(by: 60)
            }
            var entries = try store.load()
            XCTAssertEqual(entries["s:S"]?.first, 3, "S counts only its own stream: by reference")
            XCTAssertEqual(entries["s:T"]?.first, 2, "T counts two streams: in full")
            // An execution rewrites the view in full (only an event's record holds the stream too).
            XCTAssertTrue(engine.tryToExecute("S"))
            XCTAssertEqual(try store.load()["s:S"]?.first, 2)
            engine.trigger("S")
            entries = try store.load()
            XCTAssertEqual(entries["s:S"]?.first, 3)
        }
        var entries = try store.load()
        let reloaded = try RuleEngine(source: source, store: store, clock: clock)
        XCTAssertEqual(
            reloaded.explain("S").description,
            "S: would run\n  pass  min_events 3: 4 so far\n  pass  max_exec 2: 1 so far")
        XCTAssertEqual(reloaded.count("S"), 4)
        // After a reset the view no longer equals the stream: stored in full.
        reloaded.reset("S")
        reloaded.trigger("S")
        entries = try store.load()
        XCTAssertEqual(entries["s:S"]?.first, 2)
        XCTAssertEqual(
            try RuleEngine(source: source, store: store, clock: clock).explain("S").clauses.first?.detail, "1 so far")
        // Clearing the stream (Ecno's clearDone) keeps what the scenario saw.
        let cleared = InMemoryStore()
        do {
            let engine = try RuleEngine(source: source, store: cleared, clock: clock)
            for _ in 0..<3 { engine.trigger("S") }
            engine.clearDone("S")
        }
        XCTAssertNil(try cleared.load()["e:S"])
        XCTAssertEqual(
            try RuleEngine(source: source, store: cleared, clock: clock).explain("S").clauses.first?.detail, "3 so far")
        // A reference to a stream that is not stored: a located error.
        var damaged = entries
        damaged["e:S"] = nil
        damaged["s:S"] = try XCTUnwrap(
            EngineState.change(key: "s:S", ScenarioState(), eventsFrom: "S").value)
        XCTAssertThrowsError(try RuleEngine(source: source, store: InMemoryStore(damaged), clock: clock)) { error in
            XCTAssertTrue("\(error)".contains("s:S"), "\(error)")
            XCTAssertTrue("\(error)".contains("'S'"), "\(error)")
        }
    }

    /// A trigger that leaves a view equal to the one stream it counts, with the view already
    /// stored as that stream, writes the stream only. Any other write of the view, or a write
    /// that failed, makes the next trigger store the view again. Reloads are exact throughout.
    func testATriggerRewritesAViewStoredAsItsStreamOnlyWhenNeeded() throws {
        final class LoggingStore: RuleStore, @unchecked Sendable {
            var entries: [String: [UInt8]] = [:]
            var writes: [[String]] = []
            var failNext = false
            func load() throws -> [String: [UInt8]] { entries }
            func apply(_ changes: [StoreChange]) throws {
                if failNext {
                    failNext = false
                    throw RuleStoreError.io(path: "disk", operation: "write", errno: EIO)
                }
                writes.append(changes.map(\.key).sorted())
                for change in changes { entries[change.key] = change.value }
            }
        }
        let source = "scenario S < min_events 3; max_exec 3 >\nscenario T < on S, other >"
        let store = LoggingStore()
        let clock = ManualClock()
        let engine = try RuleEngine(source: source, store: store, clock: clock)
        func assertReloadsExactly(_ line: UInt = #line) throws {
            let reloaded = try RuleEngine(source: source, store: InMemoryStore(store.entries), clock: clock)
            for name in ["S", "T"] {
                XCTAssertEqual(
                    reloaded.explain(Scenario(name)).description, engine.explain(Scenario(name)).description, line: line
                )
            }
        }
        for _ in 0..<3 {
            engine.trigger("S")
            clock.advance(by: 60)
        }
        // T counts two streams: stored in full at every trigger.
        XCTAssertEqual(store.writes.suffix(3), [["e:S", "s:S", "s:T"], ["e:S", "s:T"], ["e:S", "s:T"]])
        try assertReloadsExactly()
        XCTAssertTrue(engine.tryToExecute("S"))
        engine.trigger("S")
        engine.trigger("S")
        XCTAssertEqual(store.writes.suffix(3), [["s:S"], ["e:S", "s:S", "s:T"], ["e:S", "s:T"]])
        try assertReloadsExactly()
        // A lost write: the next trigger stores the view again (it was stored in full last).
        XCTAssertTrue(engine.tryToExecute("S"))
        store.failNext = true
        engine.trigger("S")
        engine.trigger("S")
        XCTAssertEqual(store.writes.last, ["e:S", "s:S", "s:T"])
        try assertReloadsExactly()
        // A reset writes the view in full; the next trigger finds it different from the stream.
        engine.reset("S")
        engine.trigger("S")
        engine.trigger("S")
        XCTAssertEqual(store.writes.suffix(2), [["e:S", "s:S", "s:T"], ["e:S", "s:S", "s:T"]])
        try assertReloadsExactly()
    }

    /// A clock set back re-bases a view's executions and stores the view in full, by another
    /// path than a trigger's: the next trigger stores it as its stream again.
    func testATriggerAfterAClockCorrectionStoresTheViewAgain() throws {
        let source = "scenario S < min_events 1; max_exec 1 >"
        let store = InMemoryStore()
        let clock = ManualClock(Date(timeIntervalSince1970: 1_000))
        let engine = try RuleEngine(source: source, store: store, clock: clock)
        engine.trigger("S")
        clock.set(Date(timeIntervalSince1970: 3_000))
        XCTAssertTrue(engine.tryToExecute("S"))
        clock.set(Date(timeIntervalSince1970: 2_500))
        engine.trigger("S")
        XCTAssertFalse(engine.tryToExecute("S"), "max_exec 1, after the execution is re-based to now")
        clock.set(Date(timeIntervalSince1970: 2_600))
        engine.trigger("S")
        let reloaded = try RuleEngine(source: source, store: store, clock: clock)
        XCTAssertEqual(reloaded.explain("S").description, engine.explain("S").description)
        XCTAssertEqual(reloaded.count("S"), 3)
    }

    func testCompactionKeepsStateAndShrinksTheFile() throws {
        let url = temporaryURL("state")
        let clock = ManualClock()
        do {
            let store = FileStore(url: url, options: .init(compactionThreshold: 4_096))
            let engine = try RuleEngine(source: rules, store: store, clock: clock)
            // Compaction runs in the background: let each one finish before the file is measured.
            for _ in 0..<100 {
                for _ in 0..<20 { engine.trigger("AskToSubscribe") }
                store.waitForCompaction()
            }
            XCTAssertGreaterThan(store.compactions, 10)
        }
        let size = try FileManager.default.attributesOfItem(atPath: url.path)[.size] as! Int
        XCTAssertLessThan(size, 8_192, "compacted as it grew")
        let engine = try RuleEngine(source: rules, store: FileStore(url: url), clock: clock)
        XCTAssertEqual(engine.count("AskToSubscribe"), 2_000)
    }

    func testTheDefaultCompactionThresholdIsSixMiBExclusiveAndFourMiBShared() throws {
        XCTAssertEqual(FileStore.Options().compactionThreshold, 6 << 20)
        XCTAssertEqual(FileStore.Options(shared: true).compactionThreshold, 4 << 20)
        var options = FileStore.Options()
        options.shared = true
        XCTAssertEqual(options.compactionThreshold, 4 << 20, "the default follows the mode set later")
        options.compactionThreshold = 300
        options.shared = false
        XCTAssertEqual(options.compactionThreshold, 300, "a threshold set stays")
        XCTAssertEqual(FileStore.Options(compactionThreshold: 5_000, shared: true).compactionThreshold, 5_000)

        // An exclusive file of 5 MiB, all but a few hundred bytes superseded, is not compacted
        // yet; a shared one is (in the background, switched to by a later append).
        for shared in [false, true] {
            let url = temporaryURL(shared ? "default-shared.state" : "default.state")
            defer { removeFolder(of: url) }
            let store = FileStore(url: url, options: .init(shared: shared))
            let engine = try RuleEngine(source: rules, store: store, clock: ManualClock())
            var size = 0
            while size < 5 << 20 {
                for _ in 0..<1_000 { engine.trigger("AskToSubscribe") }
                size = try FileManager.default.attributesOfItem(atPath: url.path)[.size] as! Int
                if shared && store.compactions > 0 { break }
                store.waitForCompaction()
            }
            store.waitForCompaction()
            if shared {
                XCTAssertGreaterThan(store.compactions, 0, "shared: compacted past 4 MiB")
            } else {
                XCTAssertEqual(store.compactions, 0, "exclusive: not compacted below 6 MiB")
            }
        }
    }

    /// A state file holding three triggers, closed.
    private func fileWithThreeTriggers() throws -> (URL, ManualClock) {
        let url = temporaryURL("state")
        let clock = ManualClock()
        let engine = try reopen(url, clock)
        for _ in 0..<3 { engine.trigger("AskToSubscribe") }
        return (url, clock)
    }

    func testALeftoverCompactionIsRemovedAtOpenAndTheStateKept() throws {
        let url = temporaryURL("leftover.state")
        let clock = ManualClock()
        do {
            let engine = try reopen(url, clock)
            for _ in 0..<7 { engine.trigger("AskToSubscribe") }
        }
        // What a process killed while compacting leaves: a partial new file beside the old one.
        let leftover = url.path + ".compacting"
        try Data(RecordFormat.header() + [1, 2, 3]).write(to: URL(fileURLWithPath: leftover))
        try Data("junk".utf8).write(to: URL(fileURLWithPath: url.path + ".tmp"))
        let engine = try reopen(url, clock)
        XCTAssertEqual(engine.count("AskToSubscribe"), 7)
        XCTAssertFalse(FileManager.default.fileExists(atPath: leftover))
        XCTAssertFalse(FileManager.default.fileExists(atPath: url.path + ".tmp"))
    }

    func testABackgroundCompactionWritesOverALeftoverOnlyOnceItHoldsItsLock() throws {
        let url = temporaryURL("locked-leftover.state")
        let store = FileStore(url: url, options: .init(compactionThreshold: 1_024))
        let engine = try RuleEngine(source: rules, store: store, clock: ManualClock())
        // Someone else holds a lock on the compaction file: the compaction gives up and
        // leaves that file as it is; the triggers are kept.
        let leftover = url.path + ".compacting"
        let holder = open(leftover, O_RDWR | O_CREAT, 0o644)
        XCTAssertGreaterThanOrEqual(holder, 0)
        defer { close(holder) }
        XCTAssertEqual(flock(holder, LOCK_EX | LOCK_NB), 0)
        XCTAssertEqual(write(holder, "kept", 4), 4)
        for _ in 0..<200 { engine.trigger("AskToSubscribe") }
        store.waitForCompaction()
        engine.trigger("AskToSubscribe")  // reports the compaction's failure
        XCTAssertTrue(
            "\(String(describing: engine.lastStoreError))".contains("lock"),
            "\(String(describing: engine.lastStoreError))")
        XCTAssertEqual(try String(contentsOfFile: leftover, encoding: .utf8), "kept")
        XCTAssertEqual(engine.count("AskToSubscribe"), 201)
    }

    func testTornTailIsDroppedReportedAndKeptAside() throws {
        let (url, clock) = try fileWithThreeTriggers()
        var bytes = try Data(contentsOf: url)
        let whole = bytes.count
        bytes.append(contentsOf: [0x40, 0, 0, 0, 1, 2])  // a record header promising 64 bytes, cut short
        try bytes.write(to: url)
        let store = FileStore(url: url)
        let engine = try RuleEngine(source: rules, store: store, clock: clock)
        XCTAssertEqual(engine.count("AskToSubscribe"), 3)
        let report = try XCTUnwrap(store.recoveryReport)
        XCTAssertTrue(report.contains("cut short"), report)
        let kept = try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)
            .filter { $0.contains(".damaged-") }
        XCTAssertEqual(kept.count, 1)
        XCTAssertEqual(
            try Data(contentsOf: url.deletingLastPathComponent().appendingPathComponent(kept[0])), bytes.suffix(6),
            "the dropped bytes are kept aside")
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int, whole)
        engine.trigger("AskToSubscribe")
        XCTAssertEqual(try reopenCount(url, clock, after: engine), 4)
    }

    private func reopenCount(_ url: URL, _ clock: ManualClock, after engine: RuleEngine) throws -> Int {
        // The first engine holds the file's lock: read through a copy.
        let copy = url.deletingLastPathComponent().appendingPathComponent("copy")
        try? FileManager.default.removeItem(at: copy)
        try FileManager.default.copyItem(at: url, to: copy)
        return try reopen(copy, clock).count("AskToSubscribe")
    }

    func testTruncationAtEveryOffsetNeverLosesAcknowledgedRecords() throws {
        let url = temporaryURL("state")
        let clock = ManualClock()
        var boundaries: [Int] = []
        do {
            let engine = try reopen(url, clock)
            boundaries.append(try Data(contentsOf: url).count)
            for _ in 0..<4 {
                engine.trigger("AskToSubscribe")
                boundaries.append(try Data(contentsOf: url).count)
            }
        }
        let full = try Data(contentsOf: url)
        for cut in RecordFormat.headerSize...full.count {
            let copy = temporaryURL("cut")
            try full.prefix(cut).write(to: copy)
            let engine = try reopen(copy, clock)
            let complete = boundaries.lastIndex { $0 <= cut }!
            XCTAssertEqual(engine.count("AskToSubscribe"), complete, "cut at \(cut)")
        }
    }

    func testCorruptionIsReportedAndTheFileLeftUntouched() throws {
        let (url, clock) = try fileWithThreeTriggers()
        var bytes = try Data(contentsOf: url)
        let middle = RecordFormat.headerSize + 12
        bytes[middle] ^= 0xFF
        try bytes.write(to: url)
        XCTAssertThrowsError(try reopen(url, clock)) { error in
            guard case RuleEngineError.store(.corrupt(_, let offset, let reason, _)) = error else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual(offset, RecordFormat.headerSize)
            XCTAssertTrue(reason.contains("checksum"), reason)
            XCTAssertTrue("\(error)".contains("is corrupt at byte 12"), "\(error)")
        }
        XCTAssertEqual(try Data(contentsOf: url), bytes, "strict recovery never rewrites")
        // Salvage keeps what precedes the damage and moves the damaged file aside.
        let store = FileStore(url: url, options: .init(recovery: .salvage))
        let engine = try RuleEngine(source: rules, store: store, clock: clock)
        XCTAssertEqual(engine.count("AskToSubscribe"), 0, "the damage is in the first record")
        XCTAssertNotNil(store.recoveryReport)
        XCTAssertTrue(
            try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)
                .contains { $0.contains(".damaged-") })
    }

    func testGarbageAndNewerFormatsAreClearErrors() throws {
        let garbage = temporaryURL("garbage")
        try Data("not a state file at all".utf8).write(to: garbage)
        XCTAssertThrowsError(try reopen(garbage, ManualClock())) { error in
            XCTAssertTrue("\(error)".contains("bad header"), "\(error)")
        }
        let newer = temporaryURL("newer")
        try Data(Array("RULESTAT".utf8) + [9, 0, 0, 0]).write(to: newer)
        XCTAssertThrowsError(try reopen(newer, ManualClock())) { error in
            guard case RuleEngineError.store(.unsupportedVersion(_, 9)) = error else { return XCTFail("\(error)") }
        }
        var rng = SeededGenerator(
            seed: UInt64(ProcessInfo.processInfo.environment["RULES_SEED"] ?? "") ?? UInt64.random(in: 1...(1 << 40)))
        print("random state files seed: \(rng.seed) (replay with RULES_SEED)")
        for _ in 0..<200 {
            let random = temporaryURL("random")
            var bytes = RecordFormat.header()
            bytes += (0..<Int.random(in: 0..<200, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            try Data(bytes).write(to: random)
            _ = try? reopen(random, ManualClock())  // must throw or load, never trap
        }
    }

    /// A store of this process that the app still holds never lets go: the second open fails
    /// after waiting for it (``ProcessHolds``), and names this process's store.
    func testSecondOpenOfTheSameFileIsRefused() throws {
        let url = temporaryURL("state")
        let first = try reopen(url, ManualClock())
        XCTAssertThrowsError(try reopen(url, ManualClock())) { error in
            XCTAssertTrue("\(error)".contains("another store of this process holds it open"), "\(error)")
        }
        _ = first
    }

    func testStorageStaysBounded() throws {
        func bytes(after triggers: Int) throws -> Int {
            let store = InMemoryStore()
            let engine = try RuleEngine(source: rules, store: store, clock: ManualClock())
            for _ in 0..<triggers { engine.trigger("AskToSubscribe") }
            return try store.load().values.reduce(0) { $0 + $1.count }
        }
        let ten = try bytes(after: 10)
        let many = try bytes(after: 100_000)
        XCTAssertLessThan(Double(many), 2.0 * Double(ten), "\(ten) vs \(many)")
    }

    func testWindowedClausesKeepWhatTheyNeed() throws {
        let (engine, clock) = try makeEngine("scenario S < min_events 40 within 1d >")
        for _ in 0..<40 {
            engine.trigger("S")
            clock.advance(by: 60)
        }
        XCTAssertTrue(engine.canExecute("S"), "40 events in the window are all kept (more than the API cap)")
    }

    func testUserDefaultsStoreRoundTrips() throws {
        let suite = "rules-tests-\(UUID().uuidString)"
        let defaults = try XCTUnwrap(UserDefaults(suiteName: suite))
        defer { defaults.removePersistentDomain(forName: suite) }
        let clock = ManualClock()
        do {
            let engine = try RuleEngine(
                source: rules, store: UserDefaultsStore(defaults: defaults, prefix: "app."), clock: clock)
            for _ in 0..<5 { engine.trigger("AskToSubscribe") }
            engine.clearDone("other")
        }
        let engine = try RuleEngine(
            source: rules, store: UserDefaultsStore(defaults: defaults, prefix: "app."), clock: clock)
        XCTAssertEqual(engine.count("AskToSubscribe"), 5)
        XCTAssertEqual(try UserDefaultsStore(defaults: defaults, prefix: "other.").load().count, 0)
    }

    func testStoreFailuresAreReportedAndTheEngineKeepsWorking() throws {
        final class FailingStore: RuleStore, @unchecked Sendable {
            func load() throws -> [String: [UInt8]] { [:] }
            func apply(_ changes: [StoreChange]) throws {
                throw RuleStoreError.io(path: "disk", operation: "write", errno: ENOSPC)
            }
        }
        let engine = try RuleEngine(source: rules, store: FailingStore(), clock: ManualClock())
        let reported = ManualBox(0)
        engine.storeErrorHandler = { _ in reported.value += 1 }
        engine.trigger("AskToSubscribe")
        XCTAssertEqual(engine.count("AskToSubscribe"), 1, "the call's effect stays in memory")
        XCTAssertEqual(reported.value, 1)
        XCTAssertEqual(engine.lastStoreError, .io(path: "disk", operation: "write", errno: ENOSPC))
    }

    func testRecentLimitMakesWindowCountsALowerBound() throws {
        let engine = try RuleEngine(source: "scenario S < >", clock: ManualClock(), options: .init(recentLimit: 4))
        for _ in 0..<10 { engine.markDone("x") }
        XCTAssertEqual(engine.count("x"), 10)
        XCTAssertEqual(engine.count(Event("x"), scope: .within(60)), 4, "only the 4 most recent times are kept")
    }

    func testConcurrentTriggersLoseNoCount() throws {
        let url = temporaryURL("state")
        let engine = try RuleEngine(source: rules, store: FileStore(url: url))
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for k in 0..<1_000 {
                engine.trigger("AskToSubscribe")
                if k % 100 == 0 {
                    _ = engine.tryToExecute("AskToSubscribe")
                    _ = engine.explain("AskToSubscribe")
                }
                engine.markDone("thread\(thread)")
            }
        }
        XCTAssertEqual(engine.count("AskToSubscribe"), 8_000)
        XCTAssertEqual(try reopenCount(url, ManualClock(), after: engine), 8_000)
    }

    /// A child process triggers in a loop and acknowledges each returned call;
    /// after SIGKILL, every acknowledged trigger is in the file.
    func testEveryAcknowledgedTriggerSurvivesSIGKILL() throws {
        let url = temporaryURL("killed.state")
        let child = try FixtureProcess(["trigger-loop", url.path, "AskToSubscribe"])
        let acknowledged = child.readCounts(until: 3_000)
        child.kill()
        XCTAssertGreaterThanOrEqual(acknowledged, 3_000)
        let engine = try RuleEngine(source: rules, store: FileStore(url: url))
        XCTAssertGreaterThanOrEqual(engine.count("AskToSubscribe"), acknowledged)
    }
}
