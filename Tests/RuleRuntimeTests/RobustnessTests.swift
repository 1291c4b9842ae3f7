import Foundation
import XCTest

@_spi(Tools) @testable import RuleRuntime

/// Regression tests for the adversarial run: no accepted program traps, no name is
/// lost, stored state fits changed rules, and time corrections stay bounded.
final class RobustnessTests: XCTestCase {
    // MARK: - Crashes

    func testMaxExecZeroWithinAWindowNeverTraps() throws {
        for source in [
            "scenario S < max_exec 0 within 1h >",
            "group G < max_exec 0 within 1d > { scenario S < > }",
        ] {
            let (engine, _) = try makeEngine(source)
            engine.trigger("S")
            XCTAssertFalse(engine.canExecute("S"), source)
            XCTAssertFalse(engine.tryToExecute("S"), source)
            XCTAssertNil(engine.executeNext(), source)
            let explanation = engine.explain("S")
            XCTAssertFalse(explanation.wouldRun, source)
            XCTAssertNil(explanation.earliest, "waiting never lets it run: \(source)")
        }
    }

    func testStoredCountsAtTheLimitSaturate() throws {
        var tally = Tally()
        tally.total = .max
        tally.counts.sessionCount = .max
        tally.counts.versionCount = .max
        var writer = ByteWriter()
        writer.u8(EngineState.format)
        tally.encode(&writer)
        let store = InMemoryStore(["e:S": writer.bytes, "e:T": writer.bytes])
        let (engine, _) = try makeEngine("scenario S < on S, T; min_events 1 >", store: store)
        engine.trigger("S")
        engine.markDone("T")
        XCTAssertEqual(engine.count("S"), Int(clamping: Int64.max))
        XCTAssertTrue(engine.tryToExecute("S"), "the merged view of two saturated streams saturates too")
    }

    func testNaNTimesNeitherStickNorTrap() throws {
        let clock = NaNClock()
        let engine = try RuleEngine(source: "scenario S < since_first 1h >", clock: clock)
        engine.trigger("S")
        clock.reading = .nan
        engine.trigger("S")
        XCTAssertEqual(engine.count("S"), 2)
        clock.reading = 1_000_000 + .hour
        XCTAssertTrue(engine.canExecute("S"), "a NaN reading counts as the last good time")
        XCTAssertTrue(engine.toDo("banner", scope: .until(.nan)))
        XCTAssertFalse(engine.needToDo("banner"), "a NaN duration expires at once, not never")
        XCTAssertEqual(engine.count(Event("S"), scope: .within(.nan)), 0)
    }

    func testNegativeDurationsHaveADescription() {
        XCTAssertEqual(ParamValue.duration(-5).description, "-5s")
        XCTAssertEqual(ParamValue.duration(-90_000).description, "-1d1h")
    }

    // MARK: - Names

    func testNamesStartingWithCombiningMarksRoundTripInEveryStore() throws {
        let names = ["\u{301}", "\u{200D}x", "\u{FE0F}", "e\u{301}", "\u{301}\u{301}tag", "日本"]
        let suite = "rules-tests-\(UUID().uuidString)"
        let defaults = try XCTUnwrap(UserDefaults(suiteName: suite))
        defer { defaults.removePersistentDomain(forName: suite) }
        let stores: [() -> RuleStore] = [
            { InMemoryStore() }, { FileStore(url: temporaryURL("state")) },
            { UserDefaultsStore(defaults: defaults, prefix: "u.") },
        ]
        for make in stores {
            let store = make()
            do {
                let (engine, _) = try makeEngine("scenario S < >", store: store)
                for name in names {
                    engine.markDone(name)
                    XCTAssertTrue(engine.toDo("todo" + name + "|" + name))
                }
            }
            let (engine, _) = try makeEngine("scenario S < >", store: store)
            for name in names {
                XCTAssertEqual(engine.count(Event(name)), 1, "\(type(of: store)): \(name.unicodeScalars.map(\.value))")
                XCTAssertTrue(engine.needToDo("todo" + name + "|" + name))
            }
            let keys = try store.load().keys
            XCTAssertTrue(keys.contains("e:\u{301}"), "\(type(of: store))")
        }
    }

    // MARK: - Custom stores

    func testACustomStoresErrorIsKeptWithItsDescription() throws {
        struct Boom: Error, CustomStringConvertible { var description: String { "the disk said no" } }
        final class Failing: RuleStore, @unchecked Sendable {
            func load() throws -> [String: [UInt8]] { [:] }
            func apply(_ changes: [StoreChange]) throws { throw Boom() }
        }
        let (engine, _) = try makeEngine("scenario S < >", store: Failing())
        engine.trigger("S")
        let error = try XCTUnwrap(engine.lastStoreError)
        guard case .other(let underlying) = error else { return XCTFail("\(error)") }
        XCTAssertTrue(underlying is Boom)
        XCTAssertEqual(error.description, "the disk said no")
        final class FailingLoad: RuleStore, @unchecked Sendable {
            func load() throws -> [String: [UInt8]] { throw Boom() }
            func apply(_ changes: [StoreChange]) throws {}
        }
        XCTAssertThrowsError(try makeEngine("scenario S < >", store: FailingLoad())) { error in
            XCTAssertEqual("\(error)", "the disk said no")
        }
    }

    // MARK: - UserDefaults

    func testUserDefaultsIgnoresForeignKeysUnderItsPrefixAndNeverDeletesThem() throws {
        let suite = "rules-tests-\(UUID().uuidString)"
        let defaults = try XCTUnwrap(UserDefaults(suiteName: suite))
        defer { defaults.removePersistentDomain(forName: suite) }
        defaults.set(true, forKey: "rules.enabled")
        defaults.set("x", forKey: "rules.e:wrong-type")
        defaults.set(Data([1, 2]), forKey: "rules.settings")
        let store = UserDefaultsStore(defaults: defaults)
        let (engine, _) = try makeEngine("scenario S < >", store: store)
        engine.trigger("S")
        engine.clearAll()
        XCTAssertEqual(defaults.object(forKey: "rules.enabled") as? Bool, true)
        XCTAssertEqual(defaults.object(forKey: "rules.settings") as? Data, Data([1, 2]))
        XCTAssertEqual(defaults.object(forKey: "rules.e:wrong-type") as? String, "x")
    }

    /// A child process triggers through `UserDefaultsStore` and exits normally without
    /// calling `synchronize()`; a new process sees every trigger.
    func testUserDefaultsStoreIsDurableAcrossARestart() throws {
        let suite = "rules-tests-\(UUID().uuidString)"
        defer { UserDefaults(suiteName: suite)?.removePersistentDomain(forName: suite) }
        let first = try FixtureProcess(["defaults-trigger", suite, "5"])
        XCTAssertEqual(first.readToEnd().trimmingCharacters(in: .whitespacesAndNewlines), "5")
        let second = try FixtureProcess(["defaults-trigger", suite, "0"])
        XCTAssertEqual(second.readToEnd().trimmingCharacters(in: .whitespacesAndNewlines), "5")
    }

    // MARK: - Rules changed over an existing store

    private func reopen(_ source: String, _ store: RuleStore, _ clock: ManualClock) throws -> RuleEngine {
        try RuleEngine(source: source, store: store, clock: clock)
    }

    func testAScenarioWhoseOnListChangedIsRebuiltFromItsStreams() throws {
        let store = InMemoryStore()
        let clock = ManualClock()
        do {
            let engine = try reopen("scenario S < on a; min_events 3 >", store, clock)
            for _ in 0..<2 { engine.trigger("a") }
            for _ in 0..<4 { engine.trigger("b") }
            XCTAssertTrue(engine.tryToExecute("S") == false)
            engine.trigger("a")
            XCTAssertTrue(engine.tryToExecute("S"))
        }
        let engine = try reopen("scenario S < on b; min_events 4; max_exec 2 >", store, clock)
        XCTAssertEqual(engine.explain("S").clauses.first?.detail, "4 so far", "counts stream b's history now")
        XCTAssertEqual(engine.explain("S").clauses.last?.detail, "1 so far", "executions are kept")
        engine.trigger("a")
        XCTAssertEqual(engine.explain("S").clauses.first?.detail, "4 so far", "'a' is no longer counted")
        let again = try reopen("scenario S < on b; min_events 4; max_exec 2 >", store, clock)
        XCTAssertEqual(again.explain("S").clauses.first?.detail, "4 so far", "the rebuilt view was stored")
    }

    func testEveryKindOfRuleChangeKeepsTheHistoryItShould() throws {
        let store = InMemoryStore()
        let clock = ManualClock()
        do {
            let engine = try reopen("scenario S < min_events 2 >\nparam p: int", store, clock)
            for _ in 0..<3 { engine.trigger("S") }
            XCTAssertTrue(engine.tryToExecute("S"))
            try engine.set("p", to: 7)
        }
        // Clause added, threshold changed: evaluated against the kept counts.
        var engine = try reopen("scenario S < min_events 5; max_exec 2 >\nparam p: int", store, clock)
        XCTAssertEqual(engine.explain("S").reason, "min_events 5: 3 so far")
        // Clause removed.
        engine = try reopen("scenario S < max_exec 2 >\nparam p: int", store, clock)
        XCTAssertTrue(engine.canExecute("S"))
        // Scenario removed, then added again: its history comes back.
        engine = try reopen("scenario Other < >\nparam p: int", store, clock)
        XCTAssertEqual(engine.count("S"), 3, "the stream is kept while no scenario counts it")
        engine = try reopen("scenario S < max_exec 1 >\nparam p: int", store, clock)
        XCTAssertEqual(engine.explain("S").reason, "max_exec 1: 1 so far")
        // Moved into a group: its own executions stay; the group's budget starts empty.
        engine = try reopen("group G < max_exec 1 > { scenario S < max_exec 2 > }\nparam p: int", store, clock)
        XCTAssertTrue(engine.tryToExecute("S"))
        XCTAssertEqual(engine.explain("S").reason, "max_exec 2: 2 so far; group G: max_exec 1: 1 so far")
        // Param type changed: the stored int is ignored, with a located warning.
        engine = try reopen("scenario S < >\nparam p: string = \"x\"", store, clock)
        XCTAssertEqual(engine.paramValue(named: "p"), .string("x"))
        let warning = try XCTUnwrap(engine.warnings.first { $0.id == .storedValueIgnored })
        XCTAssertEqual(warning.location.line, 2)
        XCTAssertTrue(warning.message.contains("'int'"), warning.message)
        // ... and comes back if the type does.
        engine = try reopen("scenario S < >\nparam p: int", store, clock)
        XCTAssertEqual(engine.paramValue(named: "p"), .int(7))
    }

    // MARK: - Clock corrections

    func testAClockThatWasAheadLocksOutOnlyForTheCoolDown() throws {
        let (engine, clock) = try makeEngine("scenario S < between 2d >")
        let correct = clock.now()
        clock.advance(by: 365 * .day)
        XCTAssertTrue(engine.tryToExecute("S"))
        clock.set(correct)
        let explanation = engine.explain("S")
        XCTAssertEqual(explanation.reason, "between 2d: 2d left")
        XCTAssertEqual(explanation.earliest, correct + 2 * .day, "the words and the earliest time agree")
        clock.advance(by: 2 * .day - 1)
        XCTAssertFalse(engine.tryToExecute("S"), "a clock set back never makes it run early")
        clock.advance(by: 1)
        XCTAssertTrue(engine.tryToExecute("S"), "not a year later")
    }

    /// A rebase found by a read is stored with the next write; a process that ends before any
    /// write re-bases again at its next read (reads write nothing).
    func testARebaseIsStoredWithTheNextWrite() throws {
        let clock = ManualClock()
        let correct = clock.now()
        /// An execution recorded a year ahead, then the clock corrected and read; with `write`,
        /// one more call that writes. Returns the store, and the clock two days after the correction.
        func executedAhead(write: Bool) throws -> InMemoryStore {
            let store = InMemoryStore()
            clock.set(correct)
            let engine = try reopen("scenario S < between 2d >", store, clock)
            clock.advance(by: 365 * .day)
            XCTAssertTrue(engine.tryToExecute("S"))
            clock.set(correct)
            XCTAssertFalse(engine.canExecute("S"))
            if write { engine.trigger("other") }  // the re-based execution is stored with it
            clock.advance(by: 2 * .day)
            return store
        }
        XCTAssertTrue(try reopen("scenario S < between 2d >", executedAhead(write: true), clock).canExecute("S"))
        let reopened = try reopen("scenario S < between 2d >", executedAhead(write: false), clock)
        XCTAssertFalse(reopened.canExecute("S"), "nothing was stored: the next read re-bases to its own time")
        clock.advance(by: 2 * .day)
        XCTAssertTrue(reopened.canExecute("S"), "and the lock-out is still bounded by 'between'")
    }

    // MARK: - Retention

    func testOneLargeWindowDoesNotMakeEveryStreamKeepThatMany() throws {
        let store = InMemoryStore()
        let (engine, _) = try makeEngine(
            "scenario Big < on big; max_exec 10000 within 1w; min_events 500 within 1d >\nscenario Small < on small >",
            store: store)
        for _ in 0..<1_000 {
            engine.trigger("small")
            engine.trigger("big")
        }
        let entries = try store.load()
        let small = try XCTUnwrap(entries["e:small"]).count
        let big = try XCTUnwrap(entries["e:big"]).count
        XCTAssertLessThan(small, 300, "a stream no windowed clause counts keeps the API's 16 times")
        XCTAssertGreaterThan(big, 500 * 8, "a stream a windowed clause counts keeps what it needs")
        XCTAssertLessThan(try XCTUnwrap(entries["s:Small"]).count, 600)
    }

    // MARK: - Evaluation cost

    func testMergedViewsAreBuiltOnceNotPerCall() throws {
        let names = (0..<2_000).map { "s\($0)" }
        let store = InMemoryStore()
        let clock = ManualClock()
        do {
            // History recorded before the scenario that counts it existed.
            let before = try reopen("scenario Other < >", store, clock)
            for name in names { before.markDone(name) }
        }
        let calls = Array(repeating: "executions(Wide) >= 0", count: 256).joined(separator: " and ")
        let source = "scenario Wide < on \(names.joined(separator: ", ")) >\nscenario S < when \(calls) >"
        let engine = try reopen(source, store, clock)
        for _ in 0..<100 { XCTAssertTrue(engine.canExecute("S")) }
        XCTAssertEqual(engine.locked { $0.merges }, 1, "one merge, not one per call")
        XCTAssertEqual(engine.explain("Wide").isKnown, true)
    }
}

/// A clock whose reading the test sets, NaN included.
final class NaNClock: RuleClock, @unchecked Sendable {
    var reading: Double = 1_000_000
    func now() -> Date { Date(timeIntervalSince1970: reading) }
}
