import Foundation
import XCTest

@testable import RuleRuntime

/// One name, one key: stored keys are in NFC, and a file holding several spellings of one
/// name is merged once at load, losing no count, durably.
final class CanonicalNameTests: XCTestCase {
    let composed = "caf\u{E9}"
    let decomposed = "cafe\u{301}"

    private func tally(_ times: [Double]) -> [UInt8] {
        var tally = Tally()
        for time in times { tally.record(at: time, in: Epoch(sessionID: 0, versionID: 0), keep: 16) }
        return EngineState.change(key: "e:x", tally).value!
    }

    /// The keys the file holds, as stored (a dictionary would make two spellings one).
    private func keys(_ url: URL) throws -> [String] {
        let entries = try FileStore(url: url).loadEntries()
        return entries.index.live.map { String(decoding: entries.bytes[$0.key], as: UTF8.self) }.sorted()
    }

    /// A swap takes the store's state as a start does: a second spelling written into the store
    /// while the engine ran is merged and written once, in the canonical spelling.
    func testASwapMergesSpellingsAsAStartDoes() throws {
        let store = InMemoryStore()
        let rules = "scenario S < on \"\(composed)\"; min_events 5 >"
        let engine = try RuleEngine(source: rules, store: store)
        for _ in 0..<3 { engine.trigger(Event(composed)) }
        try store.apply([StoreChange(storedKey: "e:" + decomposed, value: tally([15, 25]))])
        try engine.replaceRules(source: rules + "\nscenario T < min_events 1 >")
        XCTAssertEqual(engine.count(Event(composed)), 5)
        let entries = try store.loadEntries()
        let streams = Array(
            entries.index.live.map { Array(entries.bytes[$0.key]) }.filter { $0.starts(with: Array("e:".utf8)) })
        XCTAssertEqual(streams, [Array(("e:" + composed).utf8)], "one key, the canonical one")
    }

    func testTwoSpellingsOfAStreamAreMergedOnceLosingNoCount() throws {
        let url = temporaryURL("spellings.state")
        defer { removeFolder(of: url) }
        try FileStore(url: url).apply([
            StoreChange(storedKey: "e:" + composed, value: tally([10, 20, 30])),
            StoreChange(storedKey: "e:" + decomposed, value: tally([15, 25])),
        ])
        XCTAssertEqual(try keys(url).count, 2)
        let rules = "scenario S < on \"\(decomposed)\"; min_events 5 >"
        do {
            let engine = try RuleEngine(source: rules, store: FileStore(url: url))
            XCTAssertEqual(engine.count(Event(composed)), 5)
            XCTAssertEqual(engine.count(Event(decomposed)), 5)
            XCTAssertTrue(engine.canExecute("S"))
            XCTAssertNil(engine.lastStoreError)
        }
        // Durable: the file now holds the canonical key only, with the merged tally.
        let stored = try keys(url).filter { $0.hasPrefix("e:") }
        XCTAssertEqual(stored.map { Array($0.utf8) }, [Array(("e:" + composed).utf8)])
        do {
            let engine = try RuleEngine(source: rules, store: FileStore(url: url))
            XCTAssertEqual(engine.count(Event(composed)), 5)
            engine.trigger(Event(decomposed))
            XCTAssertEqual(engine.count(Event(composed)), 6)
        }
        XCTAssertEqual(
            try keys(url).filter { $0.hasPrefix("e:") }.map { Array($0.utf8) }, [Array(("e:" + composed).utf8)])
    }

    /// Names from the rules and from the app (streams, to-dos), in either spelling, are stored in NFC.
    func testKeysAreWrittenInTheCanonicalSpelling() throws {
        let url = temporaryURL("nfc.state")
        defer { removeFolder(of: url) }
        let rules = "scenario S < on \"\(decomposed)\", \"t\(composed)\"; min_events 2 >"
        do {
            let engine = try RuleEngine(source: rules, store: FileStore(url: url))
            engine.trigger("t\(decomposed)")
            engine.trigger(Event(decomposed))
            XCTAssertTrue(engine.toDo("x\(decomposed)"))
            XCTAssertTrue(engine.tryToExecute("S"))
        }
        let stored = try keys(url)
        XCTAssertEqual(stored.count, 4, "\(stored)")
        for key in stored {
            XCTAssertEqual(Array(key.utf8), Array(key.precomposedStringWithCanonicalMapping.utf8), key)
        }
        let engine = try RuleEngine(source: rules, store: FileStore(url: url))
        XCTAssertEqual(engine.count("t\(composed)"), 1)
        XCTAssertEqual(engine.count(Event(composed)), 1)
        XCTAssertFalse(engine.toDo("x\(composed)"))
    }
}
