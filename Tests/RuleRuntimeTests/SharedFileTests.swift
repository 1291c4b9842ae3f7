import Foundation
import TestSupport
import XCTest

@testable import RuleRuntime

/// One state file shared by several processes (an app and its extensions): every process sees
/// every acknowledged write, budgets are spent once, no lock is held between calls, and killed
/// writers lose nothing.
final class SharedFileTests: XCTestCase {
    /// The rules the fixture's shared commands use, as it prints them.
    let rules = (try? FixtureProcess(["shared-rules"]).readToEnd()) ?? ""

    private func shared(_ url: URL, compaction: Int = 1 << 20) -> FileStore {
        FileStore(url: url, options: .init(compactionThreshold: compaction, shared: true))
    }

    /// A writer killed while it holds the lock (in the middle of an append) stops no one: the
    /// next call takes the lock, cuts off what the writer left, and counts right.
    func testAProcessKilledHoldingTheLockBlocksNoOne() throws {
        let url = temporaryURL("dead-holder.state")
        defer { removeFolder(of: url) }
        let engine = try RuleEngine(source: rules, store: shared(url))
        engine.trigger("x")
        let child = try FixtureProcess(["hold-lock", url.path])
        XCTAssertEqual(child.readLine(), "locked")
        kill(child.process.processIdentifier, SIGKILL)
        child.process.waitUntilExit()
        let returned = expectation(description: "the trigger returns")
        DispatchQueue.global().async {
            engine.trigger("x")
            returned.fulfill()
        }
        wait(for: [returned], timeout: 20)
        XCTAssertEqual(engine.count("x"), 2)
        XCTAssertEqual(try RuleEngine(source: rules, store: shared(url)).count("x"), 2)
    }

    func testFourProcessesTriggeringAtOnceCountExactlyAndSpendABudgetOnce() throws {
        let url = temporaryURL("four.state")
        defer { removeFolder(of: url) }
        let children = try (0..<4).map { _ in try FixtureProcess(["shared-trigger", url.path, "2000"], input: true) }
        var granted = 0
        for child in children {
            let line = child.readLine() ?? ""
            XCTAssertTrue(line.hasPrefix("done "), line)
            granted += Int(line.dropFirst(5)) ?? -1000
        }
        XCTAssertEqual(granted, 100, "max_exec 100 is spent exactly once across processes")
        // Every process, after all are done, sees every trigger.
        for child in children {
            child.send("")
            XCTAssertEqual(child.readLine(), "8000")
            _ = child.readToEnd()
        }
        let fresh = try RuleEngine(source: rules, store: shared(url))
        XCTAssertEqual(fresh.count("x"), 8000)
        XCTAssertEqual(fresh.explain("Budget").reason, "max_exec 100: 100 so far")
        XCTAssertFalse(fresh.tryToExecute("Budget"))
    }

    /// 100 SIGKILLs of three writers at random moments (compactions included): a fresh open
    /// counts every trigger any of them saw return, and at most one more per killed process.
    func testRandomKillsOfSharedWritersLoseNothingAcknowledged() throws {
        let url = temporaryURL("kills.state")
        defer { removeFolder(of: url) }
        var generator = SeededGenerator(seed: UInt64(ProcessInfo.processInfo.environment["RULES_SEED"] ?? "") ?? 0x5A4E)
        print("shared kill cycles seed: \(generator.seed)")
        var writers = try (0..<3).map { _ in try FixtureProcess(["shared-loop", url.path]) }
        var acknowledged = 0
        var lifetimes = 0
        func stop(_ writer: FixtureProcess) {
            writer.kill()
            // Every line printed before the kill: the last is this process's returned triggers.
            let rest = writer.readToEnd().split(separator: "\n").compactMap { Int($0) }
            acknowledged += rest.last ?? writer.lastCount
            lifetimes += 1
        }
        for _ in 0..<100 {
            let k = Int.random(in: 0..<writers.count, using: &generator)
            _ = writers[k].readCounts(until: writers[k].lastCount + Int.random(in: 1...25, using: &generator))
            stop(writers[k])
            writers[k] = try FixtureProcess(["shared-loop", url.path])
        }
        for writer in writers { stop(writer) }
        let fresh = try RuleEngine(source: rules, store: shared(url))
        XCTAssertGreaterThanOrEqual(fresh.count("x"), acknowledged)
        XCTAssertLessThanOrEqual(fresh.count("x"), acknowledged + lifetimes)
        XCTAssertGreaterThan(acknowledged, 300)
    }

    /// Calls interleaved at random between two processes on one shared file answer exactly as
    /// one engine in memory given the same calls at the same times.
    func testTwoProcessesInterleavedAnswerAsOneEngineInMemory() throws {
        for seed: UInt64 in [1, 2, 3, 4, 5, 6] {
            let url = temporaryURL("pair.state")
            defer { removeFolder(of: url) }
            let pair = try (0..<2).map { _ in try FixtureProcess(["serve", url.path], input: true) }
            let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
            let model = try RuleEngine(source: rules, clock: clock)
            var generator = SeededGenerator(seed: seed)
            var time = 1_800_000_000.0
            for step in 0..<250 {
                time += [0, 1, 60, 3600, 40_000][Int.random(in: 0..<5, using: &generator)]
                clock.set(Date(timeIntervalSince1970: time))
                let name = ["x", "y", "Budget", "Five", "A", "B", "Prompts", "level"].randomElement(using: &generator)!
                let command = ["t", "x", "c", "r", "s", "n", "e"].randomElement(using: &generator)!
                let value = Int.random(in: 0...3, using: &generator)
                let expected: String
                switch command {
                case "t":
                    model.trigger(Event(name))
                    expected = "ok"
                case "x": expected = "\(model.tryToExecute(Scenario(name)))"
                case "c": expected = "\(model.canExecute(Scenario(name)))"
                case "r": expected = "\(model.reset(Scenario(name)))"
                case "s": expected = (try? model.set(Param<Int>(name), to: value)) == nil ? "error" : "ok"
                case "n": expected = "\(model.count(Event(name)))"
                default:
                    expected = model.explain(Scenario(name)).description.replacingOccurrences(of: "\n", with: " | ")
                }
                let child = pair[Int.random(in: 0...1, using: &generator)]
                child.send("\(Int(time)) \(command) \(name)" + (command == "s" ? " \(value)" : ""))
                XCTAssertEqual(child.readLine(), expected, "seed \(seed) step \(step): \(command) \(name)")
            }
            for child in pair {
                child.input?.closeFile()
                _ = child.readToEnd()
            }
        }
    }

    func testNoLockIsHeldBetweenCalls() throws {
        let url = temporaryURL("unlocked.state")
        defer { removeFolder(of: url) }
        let engine = try RuleEngine(source: rules, store: shared(url, compaction: 512), clock: ManualClock())
        func assertFree(_ after: String) throws {
            let probe = try FixtureProcess(["try-lock", url.path])
            XCTAssertEqual(probe.readToEnd(), "free\n", "after \(after)")
        }
        try assertFree("opening")
        let updates = engine.updates(for: Scenario("Five"))
        try assertFree("updates(for:)")
        for k in 0..<40 { engine.trigger(k % 2 == 0 ? "x" : "y") }
        try assertFree("triggers and compactions")
        XCTAssertTrue(engine.tryToExecute("Five"))
        XCTAssertFalse(engine.tryToExecute("Five"))
        try engine.set(Param<Int>("level"), to: 3)
        _ = engine.explain("B")
        try assertFree("tryToExecute, set, explain")
        withExtendedLifetime(updates) {}
    }

    /// A trigger in another process reaches this process's `updates(for:)` stream without any
    /// call here (inotify on Linux).
    func testAnotherProcessesWriteReachesObservers() throws {
        #if os(Linux)
            let url = temporaryURL("observed.state")
            defer { removeFolder(of: url) }
            let engine = try RuleEngine(source: rules, store: shared(url))
            let seen = expectation(description: "A became eligible")
            let values = Locked<[Bool]>([])
            let task = Task {
                for await value in engine.updates(for: Scenario("A")) {
                    values.withValue { $0.append(value) }
                    if value { seen.fulfill() }
                }
            }
            let child = try FixtureProcess(["shared-trigger", url.path, "3"], input: true)
            XCTAssertEqual(child.readLine()?.hasPrefix("done"), true)
            wait(for: [seen], timeout: 20)
            XCTAssertEqual(values.withValue { $0 }, [false, true])
            child.send("")
            _ = child.readToEnd()
            task.cancel()
        #endif
    }

    /// `compact()` keeps what another store wrote since this engine last read the file, and the
    /// engine reads it at its next call.
    func testACompactionKeepsWhatAnotherStoreWroteAndTheEngineSeesIt() throws {
        let url = temporaryURL("compact.state")
        defer { removeFolder(of: url) }
        // Two stores of one process lock each other out as two processes would (flock is per open file).
        let mine = shared(url)
        let engine = try RuleEngine(source: rules, store: mine, clock: ManualClock())
        engine.trigger("y")
        let other = try RuleEngine(source: rules, store: shared(url), clock: ManualClock())
        for _ in 0..<3 { other.trigger("x") }
        try mine.compact()
        XCTAssertEqual(mine.compactions, 1)
        XCTAssertEqual(engine.count("x"), 3)
        XCTAssertEqual(engine.count("y"), 1)
        other.trigger("x")
        XCTAssertEqual(engine.count("x"), 4)
        let fresh = try RuleEngine(source: rules, store: shared(url), clock: ManualClock())
        XCTAssertEqual(fresh.count("x"), 4)
        XCTAssertEqual(fresh.count("y"), 1)
    }

    /// A shared file compacts off the caller's path: the append that crosses the threshold
    /// starts it, and the first append after the new file is written switches to it.
    func testASharedCompactionIsWrittenInTheBackgroundAndSwitchedAtTheNextAppend() throws {
        let url = temporaryURL("background.state")
        defer { removeFolder(of: url) }
        let store = shared(url, compaction: 512)
        let engine = try RuleEngine(source: rules, store: store, clock: ManualClock())
        var triggers = 0
        while !store.lock.withLock({ store.compacting }) && triggers < 1_000 {
            engine.trigger("x")
            triggers += 1
        }
        XCTAssertTrue(store.lock.withLock { store.compacting }, "a compaction started")
        store.waitForCompaction()
        XCTAssertEqual(store.compactions, 0, "written, not switched to, off the caller's path")
        let before = try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int ?? 0
        engine.trigger("x")
        XCTAssertEqual(store.compactions, 1)
        let after = try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int ?? 0
        XCTAssertLessThan(after, before)
        XCTAssertEqual(try RuleEngine(source: rules, store: shared(url), clock: ManualClock()).count("x"), triggers + 1)
    }

    /// A process that calls a few times and exits (a widget's) lets its background compaction
    /// go with it: the next store to append to a file already over the threshold compacts it
    /// in place, so the file never grows without end.
    func testAStoreOpeningAFileOverTheThresholdCompactsItAtItsFirstAppend() throws {
        let url = temporaryURL("short-lived.state")
        defer { removeFolder(of: url) }
        var triggers = 0
        do {
            let store = shared(url, compaction: 512)
            let engine = try RuleEngine(source: rules, store: store, clock: ManualClock())
            while !store.lock.withLock({ store.compacting }) && triggers < 1_000 {
                engine.trigger("x")
                triggers += 1
            }
            store.waitForCompaction()
            XCTAssertEqual(store.compactions, 0)
        }
        let size = { (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? 0 }
        let before = size()
        for round in 1...3 {
            let store = shared(url, compaction: 512)
            let engine = try RuleEngine(source: rules, store: store, clock: ManualClock())
            engine.trigger("x")
            if round == 1 { XCTAssertEqual(store.compactions, 1, "in place, at once") }
            XCTAssertEqual(engine.count("x"), triggers + round)
        }
        XCTAssertLessThan(size(), before)
        let left = try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)
        XCTAssertEqual(left.filter { $0.contains(".compacting") }, [], "\(left)")
    }

    /// The file deleted, or cut short, from outside between a background compaction's
    /// writing and its switch: nothing acknowledged is lost (the switch copies from the file
    /// this store holds, or drops the compaction and the file is written again from memory).
    func testAFileChangedFromOutsideBeforeTheSwitchLosesNothing() throws {
        for fault in ["deleted", "truncated"] {
            let url = temporaryURL("outside.state")
            defer { removeFolder(of: url) }
            let clock = ManualClock()
            let store = shared(url, compaction: 512)
            let engine = try RuleEngine(source: rules, store: store, clock: clock)
            var triggers = 0
            while !store.lock.withLock({ store.compacting }) && triggers < 1_000 {
                engine.trigger("x")
                triggers += 1
            }
            store.waitForCompaction()
            if fault == "deleted" {
                XCTAssertEqual(unlink(url.path), 0)
            } else {
                XCTAssertEqual(truncate(url.path, 0), 0)
            }
            for _ in 0..<3 {
                engine.trigger("x")
                triggers += 1
                // A look at the path at the next append, whatever the coarse clock reads.
                store.lock.withLock {
                    store.lastIdentityCheck = 0
                    store.lastPathCheck = 0
                }
            }
            store.waitForCompaction()
            let fresh = try RuleEngine(source: rules, store: shared(url), clock: clock)
            XCTAssertEqual(fresh.count("x"), triggers, fault)
            XCTAssertEqual(engine.count("x"), triggers, fault)
        }
    }

    /// Two stores compacting one shared file at once (as two processes would) lose nothing:
    /// the first to switch wins, the other drops its new file; a fresh engine and each engine
    /// count every trigger after every step. No compaction's file is left behind, and those of
    /// a process that died compacting are removed by the next compaction.
    func testStoresCompactingOneSharedFileAtOnceLoseNothing() throws {
        let url = temporaryURL("both.state")
        defer { removeFolder(of: url) }
        let dead = try FixtureProcess(["shared-rules"])
        _ = dead.readToEnd()
        dead.process.waitUntilExit()
        let leftover = url.path + ".compacting-\(dead.process.processIdentifier)-1"
        XCTAssertTrue(FileManager.default.createFile(atPath: leftover, contents: Data([1, 2, 3])))
        var random = SeededGenerator(seed: 32)
        do {
            let stores = [shared(url, compaction: 512), shared(url, compaction: 512)]
            let engines = try stores.map { try RuleEngine(source: rules, store: $0, clock: ManualClock()) }
            for step in 1...600 {
                let k = Int.random(in: 0..<2, using: &random)
                engines[k].trigger("x")
                if Int.random(in: 0..<4, using: &random) == 0 { stores[1 - k].waitForCompaction() }
                XCTAssertEqual(engines[1 - k].count("x"), step)
                XCTAssertEqual(engines[k].count("x"), step)
            }
            XCTAssertGreaterThan(stores[0].compactions + stores[1].compactions, 10)
            for engine in engines { XCTAssertNil(engine.lastStoreError) }
            XCTAssertEqual(try RuleEngine(source: rules, store: shared(url), clock: ManualClock()).count("x"), 600)
            for store in stores { store.waitForCompaction() }
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)
        XCTAssertEqual(left.filter { $0.contains(".compacting") }, [], "\(left)")
    }

    /// A view stored by reference reads as its stream: a record that holds only the stream
    /// (as a writer that does not write such a view again appends) moves it along in an
    /// engine that takes it in, which answers as one engine would.
    func testAViewStoredByReferenceFollowsItsStreamWrittenElsewhere() throws {
        let url = temporaryURL("reference.state")
        defer { removeFolder(of: url) }
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let reader = try RuleEngine(source: rules, store: shared(url), clock: clock)
        let writer = try RuleEngine(source: rules, store: shared(url), clock: clock)
        let model = try RuleEngine(source: rules, clock: clock)
        // The first event writes the stream and the view (by reference).
        writer.trigger("x")
        model.trigger("x")
        XCTAssertEqual(reader.explain("Five").description, model.explain("Five").description)
        let raw = shared(url)
        for step in 2...12 {
            clock.advance(by: 60)
            model.trigger("x")
            let tally = model.locked { $0.tallies[$0.streams.index["x"]!] }
            try raw.apply([EngineState.change(key: StoreKey.stream("x"), tally)])
            XCTAssertEqual(reader.explain("Five").description, model.explain("Five").description, "step \(step)")
            XCTAssertEqual(reader.canExecute("Five"), model.canExecute("Five"), "step \(step)")
        }
        let fresh = try RuleEngine(source: rules, store: shared(url), clock: clock)
        XCTAssertEqual(fresh.explain("Five").description, model.explain("Five").description)
    }

    func testAStoreReleasedMidCompactionCanBeOpenedAgainAtOnce() throws {
        let url = temporaryURL("reopen.state")
        defer { removeFolder(of: url) }
        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        var calls = FileSystemCalls.live
        let live = FileSystemCalls.live
        // The background compaction's fsync of its new file waits until the store is gone.
        calls.fsync = { fd in
            if !Thread.isMainThread {
                started.signal()
                gate.wait()
            }
            return live.fsync(fd)
        }
        do {
            let store = FileStore(url: url, options: .init(compactionThreshold: 256), system: calls)
            let engine = try RuleEngine(source: rules, store: store, clock: ManualClock())
            for _ in 0..<40 { engine.trigger("x") }
            XCTAssertEqual(started.wait(timeout: .now() + 10), .success, "a compaction started")
        }
        // Released while its compaction waits: its lock went with it.
        let again = try RuleEngine(source: rules, store: FileStore(url: url), clock: ManualClock())
        XCTAssertEqual(again.count("x"), 40)
        gate.signal()
    }
}

/// Removes the temporary folder `temporaryURL` made for `url`.
func removeFolder(of url: URL) {
    try? FileManager.default.removeItem(at: url.deletingLastPathComponent())
}

/// Conflicts read only what is new: two engines on one shared file, triggering and executing
/// from two threads at once, never read the file whole after opening it.
final class ContentionTests: XCTestCase {
    func testCallsRacingOnOneFileReadOnlyWhatIsNew() throws {
        let url = temporaryURL("race.state")
        defer { removeFolder(of: url) }
        let rules = "param level: int = 0\nscenario Budget < max_exec 50 >\nscenario Five < on x; min_events 5 >"
        let stores = (0..<2).map { _ in FileStore(url: url, options: .init(compactionThreshold: 64 << 20, shared: true))
        }
        let engines = try stores.map { try RuleEngine(source: rules, store: $0) }
        let granted = ErrorCount()
        DispatchQueue.concurrentPerform(iterations: 2) { k in
            for n in 0..<2_000 {
                engines[k].trigger("x")
                if n % 10 == 0, engines[k].tryToExecute("Budget") { granted.add("yes") }
                if n % 100 == 0 {
                    do { try engines[k].set(Param<Int>("level"), to: n) } catch { granted.add("\(error)") }
                }
            }
        }
        XCTAssertEqual(engines[0].count("x"), 4_000)
        XCTAssertEqual(engines[1].count("x"), 4_000)
        XCTAssertEqual(granted.all.count, 50, "max_exec 50 is spent exactly once")
        for store in stores {
            XCTAssertEqual(store.lock.withLock { store.wholeReads }, 1, "read whole only when opened")
        }
    }
}
