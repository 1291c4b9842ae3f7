import Foundation
import XCTest

@testable import RuleRuntime

/// The state file deleted, replaced or cut short by something else while engines hold it:
/// nothing acknowledged is lost, each fault is reported once, and a file no process wrote is
/// never adopted.
final class FileFaultTests: XCTestCase {
    let rules = "scenario S < min_events 1 >\nscenario Cap < max_exec 3 >"

    private func engine(_ url: URL, shared: Bool, clock: ManualClock? = nil) throws -> RuleEngine {
        let store = FileStore(url: url, options: .init(shared: shared))
        if let clock { return try RuleEngine(source: rules, store: store, clock: clock) }
        return try RuleEngine(source: rules, store: store)
    }

    /// Two engines on one shared file; `fault` done to it between their calls. Returns what a
    /// fresh engine counts, how many triggers were acknowledged (their call reported no error
    /// other than a fault written over), and the faults reported.
    private func sharedPair(fault: (URL) throws -> Void) throws -> (count: Int, acknowledged: Int, [RuleStoreError]) {
        let url = temporaryURL("pair.state")
        defer { removeFolder(of: url) }
        let a = try engine(url, shared: true)
        let b = try engine(url, shared: true)
        let log = ErrorLog()
        a.storeErrorHandler = { log.add($0) }
        b.storeErrorHandler = { log.add($0) }
        var acknowledged = 0
        func trigger(_ engine: RuleEngine) {
            let before = log.failures
            engine.trigger("x")
            if log.failures == before { acknowledged += 1 }
        }
        for _ in 0..<5 {
            trigger(a)
            trigger(b)
        }
        XCTAssertTrue(a.tryToExecute("Cap"))
        try fault(url)
        for _ in 0..<5 {
            trigger(a)
            trigger(b)
        }
        XCTAssertTrue(b.tryToExecute("Cap"))
        XCTAssertEqual(a.count("x"), b.count("x"))
        let fresh = try engine(url, shared: true)
        // Two executions of three: one more is allowed, then none.
        XCTAssertTrue(fresh.tryToExecute("Cap"))
        XCTAssertFalse(fresh.tryToExecute("Cap"))
        return (fresh.count("x"), acknowledged, log.faults)
    }

    func testASharedFileDeletedUnderTwoEnginesLosesNothing() throws {
        let (count, acknowledged, errors) = try sharedPair { try FileManager.default.removeItem(at: $0) }
        XCTAssertEqual(acknowledged, 20)
        XCTAssertEqual(count, 20)
        XCTAssertTrue(errors.contains { if case .replaced = $0 { return true } else { return false } })
    }

    func testASharedFileReplacedByAnOlderCopyLosesNothing() throws {
        var copy: URL?
        let (count, acknowledged, errors) = try sharedPair { url in
            // An older copy: the file as it was after one trigger.
            let older = url.deletingLastPathComponent().appendingPathComponent("older.state")
            let engine = try RuleEngine(source: rules, store: FileStore(url: older))
            engine.trigger("x")
            copy = older
            _ = engine
            try FileManager.default.removeItem(at: url)
            try FileManager.default.moveItem(at: older, to: url)
        }
        XCTAssertEqual(acknowledged, 20)
        XCTAssertEqual(count, 20)
        XCTAssertNotNil(copy)
        XCTAssertTrue(errors.contains { if case .replaced = $0 { return true } else { return false } })
    }

    func testASharedFileTruncatedToZeroLosesNothing() throws {
        let (count, acknowledged, errors) = try sharedPair { url in
            let handle = try FileHandle(forWritingTo: url)
            try handle.truncate(atOffset: 0)
            try handle.close()
        }
        XCTAssertEqual(count, acknowledged)
        XCTAssertGreaterThanOrEqual(acknowledged, 19)
        XCTAssertTrue(errors.contains { if case .truncated = $0 { return true } else { return false } })
    }

    func testASharedFileTruncatedMidRecordLosesNothing() throws {
        let (count, acknowledged, _) = try sharedPair { url in
            let size = try FileManager.default.attributesOfItem(atPath: url.path)[.size] as! Int
            let handle = try FileHandle(forWritingTo: url)
            try handle.truncate(atOffset: UInt64(size - 7))
            try handle.close()
        }
        XCTAssertEqual(count, acknowledged)
        XCTAssertGreaterThanOrEqual(acknowledged, 19)
    }

    /// Cuts the file at `url` to `length` bytes in place (its device and inode stay: the file
    /// recorded in `PATH.shm`, as when a file deleted is followed by a new one that reuses the
    /// inode number).
    private func cut(_ url: URL, to length: UInt64) throws {
        let handle = try FileHandle(forWritingTo: url)
        try handle.truncate(atOffset: length)
        try handle.close()
    }

    func testASharedFileCutShortWhileNobodyHoldsItIsOpenedAsItIs() throws {
        // Before: the opener waited 200 ms for a holder to write it again (there was none), and
        // its first append reported `truncated` ("while in use") against the length `PATH.shm`
        // recorded for a file no process held.
        for length in [0, RecordFormat.headerSize] {
            let url = temporaryURL("left.state")
            defer { removeFolder(of: url) }
            do {
                let engine = try engine(url, shared: true)
                for _ in 0..<7 { engine.trigger("x") }
            }
            try cut(url, to: UInt64(length))
            let store = FileStore(url: url, options: .init(shared: true))
            let log = ErrorLog()
            do {
                let engine = try RuleEngine(source: rules, store: store)
                engine.storeErrorHandler = { log.add($0) }
                // A look at the file before the first append (which would record its own length).
                engine.prepareForSuspension()
                for _ in 0..<3 { engine.trigger("x") }
                engine.prepareForSuspension()
                XCTAssertEqual(engine.count("x"), 3, "cut to \(length)")
                XCTAssertNil(engine.lastStoreError, "cut to \(length)")
            }
            XCTAssertEqual(store.restoreWaits, 0, "cut to \(length)")
            XCTAssertEqual(log.faults, [], "cut to \(length)")
            XCTAssertEqual(try engine(url, shared: true).count("x"), 3, "cut to \(length)")
        }
    }

    func testOpeningAFileCutShortUnderAHolderWaitsAndTheHolderWritesItAgain() throws {
        let url = temporaryURL("held.state")
        defer { removeFolder(of: url) }
        let holder = try engine(url, shared: true)
        for _ in 0..<7 { holder.trigger("x") }
        try cut(url, to: 0)
        let store = FileStore(url: url, options: .init(shared: true))
        let opener = try RuleEngine(source: rules, store: store)
        // Nobody wrote it again within the wait (the holder calls only now): opened as it is.
        XCTAssertEqual(store.restoreWaits, 1)
        holder.trigger("x")
        XCTAssertEqual(holder.lastStoreError, .truncated(path: url.path))
        opener.trigger("x")
        XCTAssertEqual(opener.count("x"), 9)
        XCTAssertEqual(try engine(url, shared: true).count("x"), 9)
    }

    /// The two cases above across processes: a child holds the file shared, triggers, and is
    /// killed (its slot left in `PATH.shm`) or stays; the file is cut short; this process opens it.
    func testAFileCutShortAfterAChildWasKilledOpensAtOnceAndUnderALiveChildWaits() throws {
        for killed in [true, false] {
            let url = temporaryURL("child.state")
            defer { removeFolder(of: url) }
            let child = try FixtureProcess(["serve", url.path], input: true)
            // A child left waiting for input (a step above threw) is stopped.
            defer { if child.process.isRunning { child.kill() } }
            for _ in 0..<7 {
                child.send("1800000000 t x")
                XCTAssertEqual(child.readLine(), "ok")
            }
            if killed { child.kill() }
            try cut(url, to: 0)
            let store = FileStore(url: url, options: .init(shared: true))
            let log = ErrorLog()
            let opener = try RuleEngine(source: rules, store: store)
            opener.storeErrorHandler = { log.add($0) }
            if killed {
                // A dead holder writes nothing again: no wait, no fault, the file as it is.
                XCTAssertEqual(store.restoreWaits, 0)
                for _ in 0..<3 { opener.trigger("x") }
                XCTAssertEqual(opener.count("x"), 3)
                XCTAssertEqual(log.faults, [])
                XCTAssertNil(opener.lastStoreError)
                XCTAssertEqual(try engine(url, shared: true).count("x"), 3)
            } else {
                // The opener waited for the live child, which writes the file again at its next
                // call (it read every record); nothing the child counted is lost.
                XCTAssertEqual(store.restoreWaits, 1)
                child.send("1800000001 t x")
                XCTAssertEqual(child.readLine(), "ok")
                opener.trigger("x")
                XCTAssertEqual(opener.count("x"), 9)
                child.send("1800000002 n x")
                XCTAssertEqual(child.readLine(), "9")
                XCTAssertEqual(try engine(url, shared: true).count("x"), 9)
                child.input?.closeFile()
                XCTAssertEqual(child.readToEnd(), "")
            }
        }
    }

    func testAnExclusiveFileTruncatedIsWrittenAgainFromMemory() throws {
        let url = temporaryURL("alone.state")
        defer { removeFolder(of: url) }
        do {
            let engine = try RuleEngine(source: rules, store: FileStore(url: url))
            for _ in 0..<7 { engine.trigger("x") }
            let handle = try FileHandle(forWritingTo: url)
            try handle.truncate(atOffset: 3)
            try handle.close()
            engine.prepareForSuspension()
            XCTAssertEqual(engine.lastStoreError, .truncated(path: url.path))
            engine.trigger("x")
            XCTAssertEqual(engine.count("x"), 8)
        }
        let fresh = try RuleEngine(source: rules, store: FileStore(url: url))
        XCTAssertEqual(fresh.count("x"), 8)
    }

}

/// The errors engines reported: the faults written over (``RuleStoreError/replaced(path:)``,
/// ``RuleStoreError/truncated(path:)``), and how many others (calls not saved).
final class ErrorLog: @unchecked Sendable {
    private let lock = NSLock()
    private var reported: [RuleStoreError] = []

    func add(_ error: RuleStoreError) { lock.withLock { reported.append(error) } }

    var faults: [RuleStoreError] {
        lock.withLock { reported.filter(ErrorLog.isFault) }
    }

    var failures: Int {
        lock.withLock { reported.filter { !ErrorLog.isFault($0) }.count }
    }

    static func isFault(_ error: RuleStoreError) -> Bool {
        switch error {
        case .replaced, .truncated: return true
        default: return false
        }
    }
}

/// An exclusive and a shared store on one file: whichever opens second fails, naming the file
/// and the mode that holds it, and writes nothing.
final class OpenModeTests: XCTestCase {
    let rules = "scenario S < min_events 1 >"

    private func reason(_ error: Error) -> String {
        guard case .unusable(_, let reason) = error as? RuleStoreError else { return "\(error)" }
        return reason
    }

    func testASharedOpenBesideAnExclusiveStoreFails() throws {
        let url = temporaryURL("mix.state")
        defer { removeFolder(of: url) }
        let exclusive = FileStore(url: url)
        let engine = try RuleEngine(source: rules, store: exclusive)
        engine.trigger("x")
        let shared = FileStore(url: url, options: .init(shared: true))
        XCTAssertThrowsError(try shared.load()) {
            XCTAssertEqual(self.reason($0), FileStore.heldExclusively)
        }
        engine.trigger("x")
        XCTAssertNil(engine.lastStoreError)
        XCTAssertEqual(engine.count("x"), 2)
    }

    func testAnExclusiveOpenBesideASharedStoreFailsAndASecondSharedOneOpens() throws {
        let url = temporaryURL("mix.state")
        defer { removeFolder(of: url) }
        let engine = try RuleEngine(source: rules, store: FileStore(url: url, options: .init(shared: true)))
        engine.trigger("x")
        XCTAssertThrowsError(try FileStore(url: url).load()) {
            XCTAssertTrue(self.reason($0).contains("process \(getpid()) holds it open shared"), self.reason($0))
        }
        let second = try RuleEngine(source: rules, store: FileStore(url: url, options: .init(shared: true)))
        second.trigger("x")
        engine.trigger("x")
        XCTAssertEqual(engine.count("x"), 3)
        XCTAssertNil(engine.lastStoreError)
    }

    func testAnExclusiveStoreOpensOnceTheSharedOnesAreReleased() throws {
        let url = temporaryURL("mix.state")
        defer { removeFolder(of: url) }
        do {
            let engine = try RuleEngine(source: rules, store: FileStore(url: url, options: .init(shared: true)))
            engine.trigger("x")
        }
        let engine = try RuleEngine(source: rules, store: FileStore(url: url))
        XCTAssertEqual(engine.count("x"), 1)
    }

    /// A process killed holding the file shared leaves its slot behind: it does not count.
    func testASharedHolderKilledDoesNotBlockAnExclusiveOpen() throws {
        let url = temporaryURL("mix.state")
        defer { removeFolder(of: url) }
        let child = try FixtureProcess(["shared-loop", url.path])
        _ = child.readCounts(until: 3)
        child.kill()
        _ = child.readToEnd()
        let engine = try RuleEngine(source: rules, store: FileStore(url: url))
        XCTAssertGreaterThanOrEqual(engine.count("x"), 3)
    }
}

/// `PATH.shm`, the lock and counters of a shared file, deleted, cut short, replaced or grown
/// by something else while engines hold it: no crash, no lost write.
final class LockFileFaultTests: XCTestCase {
    let rules = "scenario S < min_events 1 >\nscenario Cap < max_exec 3 >"

    private func open(_ url: URL) throws -> RuleEngine {
        try RuleEngine(source: rules, store: FileStore(url: url, options: .init(shared: true)))
    }

    /// Two engines, a fault to `PATH.shm`, a third engine opened after it; all trigger in turn.
    private func run(_ fault: (String) throws -> Void, check: ((RuleEngine) -> Void)? = nil) throws {
        let url = temporaryURL("lock.state")
        defer { removeFolder(of: url) }
        let a = try open(url)
        let b = try open(url)
        for _ in 0..<5 {
            a.trigger("x")
            b.trigger("x")
        }
        try fault(url.path + ".shm")
        if let check {
            check(a)
            check(b)
        }
        let c = try open(url)
        for _ in 0..<5 {
            a.trigger("x")
            b.trigger("x")
            c.trigger("x")
        }
        XCTAssertTrue(c.tryToExecute("Cap"))
        XCTAssertTrue(a.tryToExecute("Cap"))
        XCTAssertTrue(b.tryToExecute("Cap"))
        XCTAssertFalse(c.tryToExecute("Cap"))
        for engine in [a, b, c] { XCTAssertEqual(engine.count("x"), 25) }
        XCTAssertEqual(try open(url).count("x"), 25)
    }

    func testDeleted() throws {
        try run { XCTAssertEqual(unlink($0), 0) }
    }

    /// Read by its holders before anyone opens it again: without the guard, SIGBUS.
    func testCutToZero() throws {
        try run({ XCTAssertEqual(truncate($0, 0), 0) }, check: { XCTAssertEqual($0.count("x"), 10) })
    }

    func testReplacedByAnotherFile() throws {
        try run { path in
            let other = path + ".other"
            XCTAssertTrue(FileManager.default.createFile(atPath: other, contents: Data(repeating: 0xAB, count: 4096)))
            XCTAssertEqual(rename(other, path), 0)
        }
    }

    func testGrown() throws {
        try run { path in
            let handle = try XCTUnwrap(FileHandle(forWritingAtPath: path))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(repeating: 1, count: 1 << 20))
            try handle.close()
        }
    }

    /// Both of its names deleted: each holder finds out at its next check (at most 100 ms apart
    /// on appends; here the one `prepareForSuspension` makes) and joins the region a later
    /// opener makes.
    func testBothNamesDeleted() throws {
        try run(
            { path in
                XCTAssertEqual(unlink(path), 0)
                XCTAssertEqual(unlink(path + ".keep"), 0)
            },
            check: { $0.prepareForSuspension() })
    }
}

/// The look an append takes at most once a millisecond: the open file's `fstat` alone finds it
/// deleted, replaced by a rename over its name, or cut short; a look at the path, at most every
/// 50 ms (``FileStore/pathCheckInterval``), finds it renamed away too. Each test makes the next
/// append look (the coarse clock is not the test's to move), with or without the path.
final class AppendLookTests: XCTestCase {
    let rules = "scenario S < min_events 1 >"

    /// An engine's 5 triggers (exclusive, or `shared`), `fault` done to its file, then one
    /// trigger whose look reaches the path only when `path` is true. Returns the fault that
    /// trigger reported and what a fresh engine at the path counts (0 when nothing is there).
    private func afterFault(
        shared: Bool = false, path: Bool, _ fault: (String) throws -> Void
    ) throws -> (RuleStoreError?, Int) {
        let url = temporaryURL("look.state")
        defer { removeFolder(of: url) }
        var reported: RuleStoreError?
        do {
            let store = FileStore(url: url, options: .init(shared: shared))
            let engine = try RuleEngine(source: rules, store: store)
            for _ in 0..<5 { engine.trigger("x") }
            try fault(url.path)
            store.lock.withLock {
                store.lastIdentityCheck = 0
                store.lastPathCheck = path ? 0 : FileStore.checkClock()
            }
            engine.trigger("x")
            // The path the fault names left out: the cases are compared.
            switch engine.lastStoreError {
            case .replaced?: reported = .replaced(path: "")
            case .truncated?: reported = .truncated(path: "")
            case let other: reported = other
            }
            XCTAssertEqual(engine.count("x"), 6, "shared: \(shared), path: \(path)")
        }
        guard FileManager.default.fileExists(atPath: url.path) else { return (reported, 0) }
        let fresh = try RuleEngine(source: rules, store: FileStore(url: url, options: .init(shared: shared)))
        return (reported, fresh.count("x"))
    }

    func testTheOpenFileAloneShowsItDeleted() throws {
        for path in [false, true] {
            let (reported, count) = try afterFault(path: path) { XCTAssertEqual(unlink($0), 0) }
            XCTAssertEqual(reported, .replaced(path: ""), "path: \(path)")
            XCTAssertEqual(count, 6, "path: \(path)")
        }
    }

    func testTheOpenFileAloneShowsItReplacedByARenameOverIt() throws {
        for path in [false, true] {
            let (reported, count) = try afterFault(path: path) { target in
                let other = target + ".new"
                XCTAssertTrue(FileManager.default.createFile(atPath: other, contents: Data("junk".utf8)))
                XCTAssertEqual(rename(other, target), 0)
            }
            XCTAssertEqual(reported, .replaced(path: ""), "path: \(path)")
            XCTAssertEqual(count, 6, "path: \(path)")
        }
    }

    func testTheOpenFileAloneShowsItCutShort() throws {
        for path in [false, true] {
            let (reported, count) = try afterFault(path: path) { XCTAssertEqual(truncate($0, 3), 0) }
            XCTAssertEqual(reported, .truncated(path: ""), "path: \(path)")
            XCTAssertEqual(count, 6, "path: \(path)")
        }
    }

    /// Renamed away, the file keeps its link: only the path shows it gone. Without a look at the
    /// path the trigger goes to the renamed file, which holds every record, and the store's
    /// release looks at the path and writes the file there again; with one, the trigger does.
    func testALookAtThePathShowsItRenamedAway() throws {
        let (unseen, unseenCount) = try afterFault(path: false) { XCTAssertEqual(rename($0, $0 + ".aside"), 0) }
        XCTAssertNil(unseen)
        XCTAssertEqual(unseenCount, 6)
        let (seen, seenCount) = try afterFault(path: true) { XCTAssertEqual(rename($0, $0 + ".aside"), 0) }
        XCTAssertEqual(seen, .replaced(path: ""))
        XCTAssertEqual(seenCount, 6)
    }
}

extension AppendLookTests {
    /// The same faults under a shared store (an app and its extensions): each look finds what an
    /// exclusive store's finds, with and without the path, and the next engine at the path
    /// counts every trigger.
    func testSharedStoresSeeTheSameFaults() throws {
        let deleted = RuleStoreError.replaced(path: "")
        let cut = RuleStoreError.truncated(path: "")
        let faults: [(name: String, found: [RuleStoreError?], fault: (String) throws -> Void)] = [
            ("deleted", [deleted, deleted], { XCTAssertEqual(unlink($0), 0) }),
            (
                "renamed over", [deleted, deleted],
                { target in
                    XCTAssertTrue(FileManager.default.createFile(atPath: target + ".new", contents: Data("junk".utf8)))
                    XCTAssertEqual(rename(target + ".new", target), 0)
                }
            ),
            ("cut short", [cut, cut], { XCTAssertEqual(truncate($0, 3), 0) }),
            // Found only by a look at the path (the renamed file keeps its link).
            ("renamed away", [nil, deleted], { XCTAssertEqual(rename($0, $0 + ".aside"), 0) }),
        ]
        for (name, found, fault) in faults {
            for (path, expected) in zip([false, true], found) {
                let (reported, count) = try afterFault(shared: true, path: path, fault)
                XCTAssertEqual(reported, expected, "\(name), path: \(path)")
                XCTAssertEqual(count, 6, "\(name), path: \(path)")
            }
        }
    }
}
