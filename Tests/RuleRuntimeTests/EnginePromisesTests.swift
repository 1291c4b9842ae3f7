import Foundation
import RuleLang
import TestSupport
import XCTest

@_spi(Tools) @testable import RuleRuntime

/// The promises an app developer relies on: reads write nothing, any stored value is safe.
final class EnginePromisesTests: XCTestCase {
    /// A store that counts the writes it is given.
    final class CountingStore: RuleStore, @unchecked Sendable {
        let inner = InMemoryStore()
        private let lock = NSLock()
        private var applied = 0
        var writes: Int {
            lock.lock()
            defer { lock.unlock() }
            return applied
        }
        func load() throws -> [String: [UInt8]] { try inner.load() }
        func apply(_ changes: [StoreChange]) throws {
            lock.lock()
            applied += 1
            lock.unlock()
            try inner.apply(changes)
        }
    }

    let rules = """
        event launch
        param level: int = 0
        scenario Ask < on launch; min_events 2; max_exec 3; between 1d >
        group Prompts < max_exec 2 within 7d > {
            scenario Rate < on launch; min_events 1; since_last 1h >
        }
        """

    func testReadsWriteNothingWhateverTheClockDoes() throws {
        let store = CountingStore()
        let clock = ManualClock()
        let engine = try RuleEngine(source: rules, store: store, clock: clock)
        engine.startSession(version: "1.0")
        for _ in 0..<3 { engine.trigger("launch") }
        XCTAssertTrue(engine.tryToExecute("Ask"))
        clock.advance(by: 2 * 3600)
        XCTAssertTrue(engine.tryToExecute("Rate"))
        let written = store.writes
        var stream = engine.updates(for: Scenario("Ask")).makeAsyncIterator()
        _ = stream
        // The clock corrected back by two days, then forward, then back again.
        for offset: TimeInterval in [-2 * 86_400, 86_400, 3 * 86_400, -5 * 86_400] {
            clock.advance(by: offset)
            for name in ["Ask", "Rate", "Nope"] {
                _ = engine.canExecute(Scenario(name))
                _ = engine.explain(Scenario(name))
                _ = engine.canExecute(Scenario(name))
                _ = engine.explain(Scenario(name))
            }
            _ = engine.count(Event("launch"), scope: .session)
            _ = engine.paramValue(named: "level")
            _ = engine.beenDone("launch", scope: .since(3600))
            _ = engine.lastDone("launch")
            _ = engine.needToDo("launch")
            _ = try engine.check("executions(Prompts within 7d) < 2")
            _ = engine.unknownNames
            _ = engine.warnings
            _ = engine.activeRules
            XCTAssertEqual(store.writes, written, "reads wrote at offset \(offset)")
        }
        stream = engine.updates(for: Scenario("Rate")).makeAsyncIterator()
        _ = stream
        XCTAssertEqual(store.writes, written)
        // The next write stores the views re-based by the reads, with its own change.
        engine.trigger("launch")
        XCTAssertEqual(store.writes, written + 1)
        let stored = try StateSnapshot(entries: store.load())
        let now = clock.now().timeIntervalSince1970
        XCTAssertLessThanOrEqual(stored.scenarios["Ask"]!.executions.last!, now, "re-based, then stored")
        XCTAssertLessThanOrEqual(stored.groups["Prompts"]!.last!, now)
    }

    func testExtremeStoredValuesLoadAndWorkWithoutATrap() throws {
        // Counts, ids and times at their limits, as a hand-edited or restored store may hold.
        for extreme in [Int64.max, Int64.min, 0, -1] {
            let store = InMemoryStore()
            do {
                let engine = try RuleEngine(source: rules, store: store, clock: ManualClock())
                engine.startSession(version: "1.0")
                engine.trigger("launch")
                XCTAssertFalse(engine.tryToExecute("Ask"))
            }
            var entries = try store.load()
            var reader = ByteReader(entries["m:"]!, from: 1)
            var meta = try SessionMeta.decode(&reader)
            meta.sessionID = extreme
            meta.versionID = extreme
            entries["m:"] = EngineState.change(meta: meta).value!
            let engine = try RuleEngine(source: rules, store: InMemoryStore(entries), clock: ManualClock())
            engine.startSession(version: "1.0")
            engine.startSession(version: "2.0")
            engine.trigger("launch")
            _ = engine.tryToExecute("Ask")
            _ = engine.explain("Rate")
            _ = engine.count(Event("launch"), scope: .session)
            _ = engine.count(Event("launch"), scope: .version)
            XCTAssertGreaterThanOrEqual(engine.count("launch"), 1, "id \(extreme)")
        }
    }

    // MARK: - Callbacks

    /// Each callback that runs under the engine's lock and calls the engine: the child process
    /// stops at once with a message naming the call and the callback, never hangs.
    func testACallbackCallingTheEngineStopsWithAMessageInsteadOfHanging() throws {
        for (kind, site) in [
            ("provider", "the provide closure of param 'level'"), ("clock", "the clock's now()"),
            ("store-error", "the store error handler"),
        ] {
            let process = Process()
            process.executableURL = FixtureProcess.executable
            process.arguments = ["reenter", kind]
            let errors = Pipe()
            process.standardError = errors
            process.standardOutput = Pipe()
            try process.run()
            let deadline = Date().addingTimeInterval(20)
            while process.isRunning && Date() < deadline { usleep(10_000) }
            if process.isRunning {
                process.terminate()
                XCTFail("\(kind): the child hung")
                continue
            }
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            XCTAssertEqual(process.terminationReason, .uncaughtSignal, kind)
            XCTAssertTrue(message.contains("was called from \(site), which runs under the engine's lock"), message)
        }
    }

    /// The decision handler runs after the lock is released: calling the engine from it works.
    func testTheDecisionHandlerMayCallTheEngine() throws {
        let (engine, _) = try makeEngine("scenario Ask < min_events 1 >")
        let counts = Locked<[Int]>([])
        engine.decisionHandler = { [weak engine] _ in
            let count = engine?.count("Ask") ?? -1
            counts.withValue { $0.append(count) }
        }
        _ = engine.canExecute("Ask")
        engine.trigger("Ask")
        _ = engine.tryToExecute("Ask")
        XCTAssertEqual(counts.withValue { $0 }, [0, 1])
    }

    // MARK: - A file deleted under the engine

    func scratch() -> URL { scratchFolder("rules-promises").appendingPathComponent("rules.state") }

    /// Triggers recorded right after the file is deleted (within the millisecond appends do not
    /// check) survive the engine's release.
    func testAFileDeletedUnderTheEngineIsWrittenAgainAtRelease() throws {
        let url = scratch()
        let clock = ManualClock()
        do {
            let engine = try RuleEngine(
                source: "scenario Ask < min_events 9 >", store: FileStore(url: url), clock: clock)
            for _ in 0..<3 { engine.trigger("Ask") }
            try FileManager.default.removeItem(at: url)
            for _ in 0..<2 { engine.trigger("Ask") }
        }
        let reopened = try RuleEngine(source: "scenario Ask < min_events 9 >", store: FileStore(url: url), clock: clock)
        XCTAssertEqual(reopened.count("Ask"), 5)
    }

    func testPrepareForSuspensionWritesADeletedFileAgain() throws {
        let url = scratch()
        let engine = try RuleEngine(
            source: "scenario Ask < min_events 9 >", store: FileStore(url: url), clock: ManualClock())
        engine.trigger("Ask")
        try FileManager.default.removeItem(at: url)
        engine.trigger("Ask")
        engine.prepareForSuspension()
        XCTAssertEqual(engine.lastStoreError, .replaced(path: url.path))
        // Read from a copy: the engine holds the file exclusively, and a shared store beside it
        // is refused.
        let copy = url.appendingPathExtension("copy")
        try FileManager.default.copyItem(at: url, to: copy)
        let snapshot = try StateSnapshot(entries: FileStore(url: copy).load())
        XCTAssertEqual(snapshot.streams["Ask"]?.total, 2, "on disk before the app is suspended")
    }
}
