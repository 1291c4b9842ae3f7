import Foundation
import XCTest

@testable import RuleRuntime

/// Section 3 of the authoring issue: exact semantics at the edges found by replaying against the peers.
final class EdgeSemanticsTests: XCTestCase {
    func testTheFirstEventIsTheOneRecordedFirst() throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 3_600))
        let engine = try RuleEngine(source: "scenario S < since_first 1h >", clock: clock)
        engine.trigger("S")
        clock.set(Date(timeIntervalSince1970: 0))  // set back an hour
        engine.trigger("S")
        clock.set(Date(timeIntervalSince1970: 3_600))
        XCTAssertFalse(engine.canExecute("S"), "the first event was recorded at 1h: it is 0s old")
        clock.advance(by: .hour)
        XCTAssertTrue(engine.canExecute("S"))
        var tally = Tally()
        tally.record(at: 100, in: SessionMeta().epoch, keep: 4)
        tally.record(at: 50, in: SessionMeta().epoch, keep: 4)
        XCTAssertEqual(tally.first, 100)
        XCTAssertEqual(tally.last, 100)
        XCTAssertEqual(tally.recent, [50, 100])
    }

    func testNamesSwiftConsidersEqualAreOneNameAcrossARestart() throws {
        // As grammar.md says: `é` precomposed and e + U+0301 are one stream, stored under the
        // spelling used first; a rule naming one counts the other.
        let store = InMemoryStore()
        var engine = try RuleEngine(source: "scenario Ask < on \"é\"; min_events 2 >", store: store)
        engine.trigger("e\u{301}")
        engine.trigger("é")
        XCTAssertEqual(engine.count("e\u{301}"), 2)
        XCTAssertTrue(engine.canExecute("Ask"))
        XCTAssertEqual(try store.load().keys.filter { $0.hasPrefix("e:") }, ["e:é"])
        engine = try RuleEngine(source: "scenario Ask < on \"é\"; min_events 2 >", store: store)
        XCTAssertEqual(engine.count("e\u{301}"), 2)
        XCTAssertTrue(engine.unknownNames.isEmpty, "\(engine.unknownNames)")
    }

    func testAStreamListedTwiceIsCountedOnce() throws {
        // The duplicate is a warning; the scenario counts the stream once, and so does every
        // other scenario listing it.
        let source = "scenario A < on a, b, a; min_events 2 >\nscenario B < on b, a, b, a; min_events 2 >"
        let engine = try RuleEngine(source: source, store: InMemoryStore())
        engine.trigger("a")
        XCTAssertFalse(engine.canExecute("A"), engine.explain("A").description)
        XCTAssertFalse(engine.canExecute("B"), engine.explain("B").description)
        engine.trigger("b")
        XCTAssertTrue(engine.canExecute("A"))
        XCTAssertTrue(engine.canExecute("B"))
    }

    func testAnExpiredToDoStaysExpiredWhenTheClockIsSetBackEvenAfterARestart() throws {
        let store = InMemoryStore()
        let clock = ManualClock(Date(timeIntervalSince1970: 0))
        var engine = try RuleEngine(source: "scenario S < when todo(sale) >", store: store, clock: clock)
        XCTAssertTrue(engine.toDo("sale", scope: .until(.hour)))
        clock.set(Date(timeIntervalSince1970: 7_200))
        XCTAssertFalse(engine.needToDo("sale"))
        clock.set(Date(timeIntervalSince1970: 1_800))
        XCTAssertFalse(engine.needToDo("sale"), "set back: still expired")
        XCTAssertFalse(engine.canExecute("S"))
        engine = try RuleEngine(source: "scenario S < when todo(sale) >", store: store, clock: clock)
        XCTAssertFalse(engine.needToDo("sale"), "the expiry was stored")
        XCTAssertTrue(engine.toDo("sale", scope: .until(.hour)), "a new one may be added")
        XCTAssertTrue(engine.needToDo("sale"))
    }

    func testAToDoWithoutInfoHasNoneAndEmptyInfoStaysEmpty() throws {
        let store = InMemoryStore()
        var engine = try RuleEngine(source: "scenario S < >", store: store)
        engine.toDo("plain")
        engine.toDo("empty", info: [:])
        engine.toDo("full", info: ["k": "v"])
        XCTAssertNil(engine.info(forToDo: "plain"))
        XCTAssertEqual(engine.info(forToDo: "empty"), [:])
        XCTAssertEqual(engine.info(forToDo: "full"), ["k": "v"])
        engine = try RuleEngine(source: "scenario S < >", store: store)
        XCTAssertNil(engine.info(forToDo: "plain"), "kept through the store")
        XCTAssertEqual(engine.info(forToDo: "empty"), [:])
        XCTAssertEqual(engine.info(forToDo: "full"), ["k": "v"])
    }

    func testAToDoEntryFromBeforeTheFlagReadsEmptyInfoAsNone() throws {
        // A version-1 entry: created, expires, the pairs, and no flag after them.
        var writer = ByteWriter()
        writer.u8(1)
        writer.double(10)
        writer.optionalDouble(nil)
        writer.varint(0)
        var withPairs = ByteWriter()
        withPairs.u8(1)
        withPairs.double(10)
        withPairs.optionalDouble(nil)
        withPairs.varint(1)
        withPairs.string("a")
        withPairs.string("b")
        let state = try EngineState(entries: ["t:old": writer.bytes, "t:kept": withPairs.bytes])
        XCTAssertNil(state.todos["old"]?.info)
        XCTAssertNotNil(state.todos["old"])
        XCTAssertEqual(state.todos["kept"]?.info, ["a": "b"])
    }

    func testAZeroLengthWindowCountsNothingEvenTimesLaterThanNow() throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 3_600))
        let engine = try RuleEngine(source: "scenario S < on tap >", clock: clock)
        engine.trigger("tap")
        clock.set(Date(timeIntervalSince1970: 0))
        XCTAssertEqual(engine.count(Event("tap"), scope: .within(0)), 0)
        XCTAssertFalse(engine.beenDone("tap", scope: .within(0)))
        XCTAssertEqual(engine.count(Event("tap"), scope: .within(1)), 1)
        XCTAssertEqual(try engine.check("count(tap within 0s) == 0"), true)
    }
}

/// A clock set back re-bases what the rules read of streams and holds, as it does views: a
/// presentation, a `later` outcome and a crash recorded while the clock was a year ahead wait
/// their own durations from the correction, not for the size of the jump, and the re-based
/// times are kept across a restart.
final class ClockCorrectionTests: XCTestCase {
    let rules = """
        # language 1.2
        scenario Rate < after later 3d >
        scenario Tip < >
        scenario Calm < when since_last(crash) >= 2d and count(crash within 7d) == 0 >
        """
    let day = 86_400.0

    func testAClockSetBackBoundsEveryLockOut() throws {
        let store = InMemoryStore()
        let clock = ManualClock(Date(timeIntervalSince1970: 400 * day))
        var engine = try RuleEngine(source: rules, store: store, clock: clock)
        engine.startSession(version: "1")
        engine.relaunchAfterCrash()
        let rate = try XCTUnwrap(engine.present("Rate"))
        try engine.finish(rate, .later)
        _ = try XCTUnwrap(engine.present("Tip"))
        let timeout = engine.presentationTimeout
        clock.set(Date(timeIntervalSince1970: 1 * day))
        XCTAssertFalse(engine.canExecute("Tip"), "held by the open presentation")
        XCTAssertEqual(engine.explain("Tip").earliest?.timeIntervalSince1970, 1 * day + timeout)
        XCTAssertEqual(engine.explain("Rate").earliest?.timeIntervalSince1970, 4 * day)
        XCTAssertFalse(engine.canExecute("Calm"))
        clock.advance(by: timeout)
        XCTAssertTrue(engine.canExecute("Tip"), "the hold ends a timeout after the correction")
        clock.set(Date(timeIntervalSince1970: 4 * day - 1))
        XCTAssertFalse(engine.canExecute("Rate"))
        engine.trigger("x")  // a write: the re-based times are stored with it
        // A restart keeps the re-based times.
        engine = try RuleEngine(source: rules, store: store, clock: clock)
        clock.advance(by: 1)
        XCTAssertTrue(engine.canExecute("Rate"), "three days after the correction")
        XCTAssertFalse(engine.canExecute("Calm"))
        clock.set(Date(timeIntervalSince1970: 8 * day))
        XCTAssertTrue(engine.canExecute("Calm"), "a week after the correction")
    }

    /// Times another process on the file recorded while its clock was ahead, which this one never
    /// read the clock at, are re-based at this process's next session.
    func testTimesAnotherProcessRecordedAheadAreRebasedAtTheNextSession() throws {
        let url = temporaryURL("ahead.state")
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let here = ManualClock(Date(timeIntervalSince1970: 1 * day))
        let there = ManualClock(Date(timeIntervalSince1970: 400 * day))
        let engine = try RuleEngine(
            source: rules, store: FileStore(url: url, options: .init(shared: true)), clock: here)
        let other = try RuleEngine(
            source: rules, store: FileStore(url: url, options: .init(shared: true)), clock: there)
        XCTAssertTrue(engine.canExecute("Rate"))
        try other.recordOutcome(.later, of: "Rate")
        here.set(Date(timeIntervalSince1970: 4 * day))
        XCTAssertFalse(engine.canExecute("Rate"), "recorded at day 400 by the other process")
        engine.startSession(version: "1")
        XCTAssertFalse(engine.canExecute("Rate"), "re-based to the session's start, day 4")
        here.set(Date(timeIntervalSince1970: 7 * day))
        XCTAssertTrue(engine.canExecute("Rate"), "three days after the session that re-based it")
    }
}
