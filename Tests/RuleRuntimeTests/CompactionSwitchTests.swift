import Foundation
import XCTest

@testable import RuleRuntime

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A background compaction's switch puts the new file in place by swapping the two names'
/// files (one step, cheaper under the store's lock than a rename over the old file), then
/// removes the old file, now at the new file's former name, once the lock is let go. Where the
/// files cannot be swapped, it renames, as before. Either way nothing is left beside the file.
final class CompactionSwitchTests: XCTestCase {
    let rules = "scenario S < on x; min_events 1 >"

    /// The calls a switch makes, recorded; `exchange` fails with `EINVAL` when `swaps` is false.
    final class SwitchCalls: @unchecked Sendable {
        let lock = NSLock()
        var exchanged: [(String, String)] = []
        var renamed: [(String, String)] = []
        let swaps: Bool

        init(swaps: Bool) { self.swaps = swaps }

        var calls: FileSystemCalls {
            var calls = FileSystemCalls.live
            let live = FileSystemCalls.live
            calls.exchange = { a, b in
                self.lock.lock()
                defer { self.lock.unlock() }
                self.exchanged.append((a, b))
                guard self.swaps else {
                    errno = EINVAL
                    return -1
                }
                return live.exchange(a, b)
            }
            calls.rename = { a, b in
                self.lock.lock()
                defer { self.lock.unlock() }
                self.renamed.append((a, b))
                return live.rename(a, b)
            }
            return calls
        }
    }

    /// Triggers until `store` has switched files twice; returns the triggers made.
    private func compactTwice(_ store: FileStore, _ engine: RuleEngine) -> Int {
        var triggers = 0
        while store.compactions < 2 && triggers < 20_000 {
            engine.trigger("x")
            triggers += 1
            if triggers % 50 == 0 { store.waitForCompaction() }
        }
        store.waitForCompaction()
        return triggers
    }

    private func check(shared: Bool, swaps: Bool) throws {
        let url = temporaryURL("switch.state")
        defer { removeFolder(of: url) }
        let recorded = SwitchCalls(swaps: swaps)
        let label = "shared \(shared), swaps \(swaps)"
        // The first file, held open here: once switched away from, no name may hold it.
        var first: Int32 = -1
        defer { if first >= 0 { close(first) } }
        var triggers = 0
        var compactions = 0
        let path: String
        do {
            // 16 KiB: a shared file four times over compacts in place, which this is not about.
            let store = FileStore(
                url: url, options: .init(compactionThreshold: 16 << 10, shared: shared), system: recorded.calls)
            let engine = try RuleEngine(source: rules, store: store, clock: ManualClock())
            engine.trigger("x")
            first = open(url.path, O_RDONLY | O_CLOEXEC)
            XCTAssertGreaterThanOrEqual(first, 0)
            triggers = 1 + compactTwice(store, engine)
            compactions = store.compactions
            path = store.realPath
            XCTAssertEqual(engine.count("x"), triggers, label)
        }
        XCTAssertGreaterThanOrEqual(compactions, 2, label)
        recorded.lock.lock()
        let (exchanged, renamed) = (recorded.exchanged, recorded.renamed)
        recorded.lock.unlock()
        // Each switch asked to swap its new file with the file; a rename only where it could not.
        XCTAssertEqual(exchanged.count, compactions, label)
        XCTAssertTrue(exchanged.allSatisfy { $0.1 == path && $0.0.hasPrefix(path + ".compacting") }, label)
        XCTAssertEqual(renamed.count, swaps ? 0 : compactions, label)
        XCTAssertTrue(renamed.allSatisfy { $0.1 == path && $0.0.hasPrefix(path + ".compacting") }, label)
        var info = stat()
        XCTAssertEqual(fstat(first, &info), 0)
        XCTAssertEqual(info.st_nlink, 0, "the first file is removed: \(label)")
        let left = try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)
        XCTAssertEqual(left.filter { $0.contains(".compacting") }, [], "\(label): \(left)")
        let reopened = try RuleEngine(
            source: rules, store: FileStore(url: url, options: .init(shared: shared)), clock: ManualClock())
        XCTAssertEqual(reopened.count("x"), triggers, label)
    }

    func testAnExclusiveSwitchSwapsTheFilesAndRemovesTheOldOne() throws {
        try check(shared: false, swaps: true)
    }

    func testASharedSwitchSwapsTheFilesAndRemovesTheOldOne() throws {
        try check(shared: true, swaps: true)
    }

    /// A file system that cannot swap (`EINVAL`), or a system without the call: a rename.
    func testASwitchWhereTheFilesCannotBeSwappedRenamesAsBefore() throws {
        try check(shared: false, swaps: false)
        try check(shared: true, swaps: false)
    }

    /// The call itself, on this machine's file system: each name holds the other's file.
    func testExchangePathsSwapsTwoFiles() throws {
        let url = temporaryURL("swap-a")
        defer { removeFolder(of: url) }
        let other = url.deletingLastPathComponent().appendingPathComponent("swap-b")
        try Data("a".utf8).write(to: url)
        try Data("b".utf8).write(to: other)
        let result = FileSystemCalls.exchangePaths(url.path, other.path)
        #if os(Linux) || canImport(Darwin)
            XCTAssertEqual(result, 0, "errno \(errno)")
            XCTAssertEqual(try String(contentsOf: url, encoding: .utf8), "b")
            XCTAssertEqual(try String(contentsOf: other, encoding: .utf8), "a")
        #endif
        // A missing file: nothing moves.
        let missing = url.deletingLastPathComponent().appendingPathComponent("missing")
        XCTAssertEqual(FileSystemCalls.exchangePaths(url.path, missing.path), -1)
        XCTAssertFalse(FileManager.default.fileExists(atPath: missing.path))
        XCTAssertTrue(FileManager.default.fileExists(atPath: url.path))
    }
}

/// An app lets go of an exclusive store while a background compaction switches its files: the
/// compaction's thread holds the store until the switch is done, so the file stays locked a
/// moment longer. An engine opened at once on the same file waits for that, and opens.
final class ReleaseDuringSwitchTests: XCTestCase {
    let rules = "scenario S < on x; min_events 1 >"

    func testAnOpenRightAfterTheReleaseWaitsForTheSwitchAndOpens() throws {
        try reopenDuringSwitch(shared: false)
    }

    /// The same, the file opened again shared (as `rulec trigger` or an app extension would).
    func testASharedOpenRightAfterTheReleaseWaitsForTheSwitchAndOpens() throws {
        try reopenDuringSwitch(shared: true)
    }

    /// An open made while another store of this process reads its file (it holds the file's
    /// lock and has not finished its load) waits for that store as it would after a release,
    /// rather than failing at once and naming another process.
    func testAnOpenDuringAnotherStoresLoadWaitsForIt() throws {
        let url = temporaryURL("loading.state")
        defer { removeFolder(of: url) }
        let entered = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        var calls = FileSystemCalls.live
        let live = FileSystemCalls.live
        // The first store's load of its new file stops at the header's sync, until the test says.
        let first = Protected(true)
        calls.fsync = { descriptor in
            let stop = first.withLock { first in
                defer { first = false }
                return first
            }
            if stop {
                entered.signal()
                proceed.wait()
            }
            return live.fsync(descriptor)
        }
        let (rules, system) = (self.rules, calls)
        DispatchQueue.global().async {
            // Loaded, one event recorded, then released.
            let engine = try? RuleEngine(
                source: rules, store: FileStore(url: url, options: .init(), system: system), clock: ManualClock())
            engine?.trigger("x")
            done.signal()
        }
        XCTAssertEqual(entered.wait(timeout: .now() + 30), .success, "the first store reached its load's sync")
        // The load goes on once the open below waits for it.
        let waitsBefore = signalOnceAnOpenWaits(proceed)
        let reopened = Result { try RuleEngine(source: rules, store: FileStore(url: url), clock: ManualClock()) }
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(try reopened.get().count("x"), 1)
        XCTAssertGreaterThan(ProcessHolds.waits.withLock { $0 }, waitsBefore)
    }

    /// Signals `proceed` from another thread once an open of this process waits for one of its
    /// stores (or after 10 s, so that a build without the wait fails rather than hangs). Returns
    /// the count of waits before.
    private func signalOnceAnOpenWaits(_ proceed: DispatchSemaphore) -> Int {
        let before = ProcessHolds.waits.withLock { $0 }
        DispatchQueue.global().async {
            let deadline = DispatchTime.now() + 10
            while ProcessHolds.waits.withLock({ $0 }) == before && DispatchTime.now() < deadline { usleep(100) }
            proceed.signal()
        }
        return before
    }

    /// Another process's store holds the file: an open here, exclusive or shared, fails at once
    /// and names another process (the wait is for this process's stores only); once that
    /// process has let go, the file opens with its records.
    func testAStoreOfAnotherProcessIsRefusedAtOnce() throws {
        let url = temporaryURL("other.state")
        defer { removeFolder(of: url) }
        let other = try FixtureProcess(["fault-writer", url.path, "exclusive"], input: true)
        XCTAssertEqual(other.readLine(), "ready")
        other.send("t 3")
        XCTAssertEqual(other.readLine(), "acked 3")
        let waitsBefore = ProcessHolds.waits.withLock { $0 }
        XCTAssertThrowsError(try RuleEngine(source: rules, store: FileStore(url: url))) { error in
            XCTAssertTrue("\(error)".contains("is another process using it?"), "\(error)")
        }
        XCTAssertThrowsError(try RuleEngine(source: rules, store: FileStore(url: url, options: .init(shared: true)))) {
            error in XCTAssertTrue("\(error)".contains(FileStore.heldExclusively), "\(error)")
        }
        XCTAssertEqual(ProcessHolds.waits.withLock { $0 }, waitsBefore, "no wait for another process")
        other.send("q")
        XCTAssertEqual(other.readLine(), "bye")
        other.process.waitUntilExit()
        XCTAssertEqual(try RuleEngine(source: rules, store: FileStore(url: url)).count("x"), 3)
    }

    private func reopenDuringSwitch(shared: Bool) throws {
        let url = temporaryURL("release.state")
        defer { removeFolder(of: url) }
        let entered = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        var calls = FileSystemCalls.live
        let live = FileSystemCalls.live
        // The first switch stops at the old file's close, after the store's lock is let go and
        // before the compaction lets go of the store, until the test says.
        let stage = Protected(0)
        calls.exchange = { a, b in
            stage.withLock { $0 = max($0, 1) }
            return live.exchange(a, b)
        }
        calls.close = { descriptor in
            let first = stage.withLock { stage in
                defer { if stage == 1 { stage = 2 } }
                return stage == 1
            }
            if first {
                entered.signal()
                proceed.wait()
            }
            return live.close(descriptor)
        }
        var triggers = 0
        do {
            let store = FileStore(url: url, options: .init(compactionThreshold: 4 << 10), system: calls)
            let engine = try RuleEngine(source: rules, store: store, clock: ManualClock())
            while !store.lock.withLock({ store.compacting }) && triggers < 10_000 {
                engine.trigger("x")
                triggers += 1
            }
            XCTAssertEqual(entered.wait(timeout: .now() + 30), .success, "the compaction reached its switch")
        }
        // The app holds neither the engine nor the store now; the switch holds the store, and
        // goes on once the open below waits for it.
        let waitsBefore = signalOnceAnOpenWaits(proceed)
        let reopened = Result {
            try RuleEngine(
                source: rules, store: FileStore(url: url, options: .init(shared: shared)), clock: ManualClock())
        }
        XCTAssertEqual(try reopened.get().count("x"), triggers)
        XCTAssertGreaterThan(ProcessHolds.waits.withLock { $0 }, waitsBefore)
    }
}
