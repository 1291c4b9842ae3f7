import Foundation
import XCTest

@testable import RuleRuntime

/// Every call from many threads at once; run under ThreadSanitizer in CI.
final class ConcurrencyTests: XCTestCase {
    let rules = """
        scenario Shared < on tap; max_exec 5 >
        group G < max_exec 3 > { scenario A < on tap > scenario B < on tap > }
        scenario Mine < on mine >
        """

    func testEveryCallMixedOnEightThreadsKeepsExactTotals() throws {
        let url = temporaryURL("concurrent.state")
        let store = FileStore(url: url, options: .init(compactionThreshold: 8_192))
        let engine = try RuleEngine(
            source: rules, store: store)
        // Phase 1: everything at once, clearAll and reset included (TSan looks for races here).
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for k in 0..<300 {
                engine.trigger("tap")
                engine.markDone("t\(thread)")
                _ = engine.beenDone("t\(thread)")
                _ = engine.tryToExecute(k % 2 == 0 ? "Shared" : "A")
                _ = engine.explain("B").description
                _ = engine.canExecute("Mine")
                if k % 50 == 0 { engine.reset(thread % 2 == 0 ? "Shared" : "G") }
                if k == 150 && thread == 0 { engine.clearAll() }
                _ = engine.toDo("todo\(thread)")
                _ = engine.needToDo("todo\(thread)")
            }
        }
        engine.clearAll()
        // Phase 2: exact totals.
        let successes = ManualBox(0)
        let lock = NSLock()
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for _ in 0..<500 {
                engine.trigger("tap")
                engine.markDone("t\(thread)")
                if engine.tryToExecute("Shared") {
                    lock.lock()
                    successes.value += 1
                    lock.unlock()
                }
                _ = engine.executeNext(among: ["A", "B"])
                _ = engine.explain("A")
            }
        }
        XCTAssertEqual(engine.count("tap"), 4_000)
        for thread in 0..<8 { XCTAssertEqual(engine.count("t\(thread)"), 500) }
        XCTAssertEqual(successes.value, 5, "max_exec 5, exactly, from any number of threads")
        XCTAssertEqual(engine.explain("A").clauses.map(\.description), ["group G: max_exec 3: 3 so far"])
        XCTAssertNil(engine.lastStoreError)
        let copy = temporaryURL("copy")
        // Copied once no compaction is replacing the file (a copy of a file renamed over
        // mid-copy can wait forever for bytes the new, shorter file does not have).
        store.waitForCompaction()
        try FileManager.default.copyItem(at: url, to: copy)
        let reopened = try RuleEngine(source: rules, store: FileStore(url: copy))
        XCTAssertEqual(reopened.count("tap"), 4_000)
        XCTAssertEqual(reopened.explain("Shared").reason, "max_exec 5: 5 so far")
    }

    /// A store released while its background compaction switches files: the compaction closes
    /// no descriptor a second time. It used to ask twice whether the store was still there;
    /// released in between, it closed the new file once more after the store had, and a file
    /// opened meanwhile (another store's, anything of the app's) lost its descriptor.
    func testAStoreReleasedAsItsCompactionSwitchesClosesEachDescriptorOnce() throws {
        final class Watch: @unchecked Sendable {
            let lock = NSLock()
            var closed: [Int32] = []
            var armed = false
            var waited = false
            /// The test let go of the store (the last reference unless the compaction holds one).
            var released = false
            weak var store: FileStore?
            let caller = pthread_self()
            /// Signalled by the test once the engine is released; the compaction waits for it
            /// after writing its file, before switching (the engine's release takes the lock).
            let go = DispatchSemaphore(value: 0)
            let switching = DispatchSemaphore(value: 0)

            /// True once, on the compaction's thread, while armed.
            func fire() -> Bool {
                guard pthread_equal(pthread_self(), caller) == 0 else { return false }
                return lock.withLock { armed }
            }
        }
        let watch = Watch()
        var calls = FileSystemCalls.live
        let live = FileSystemCalls.live
        calls.close = { descriptor in
            watch.lock.withLock { watch.closed.append(descriptor) }
            return live.close(descriptor)
        }
        calls.fsync = { descriptor in
            if watch.fire(), watch.lock.withLock({ !watch.waited }) {
                watch.lock.withLock { watch.waited = true }
                watch.go.wait()
            }
            return live.fsync(descriptor)
        }
        // The directory synced after the switch (syncEveryWrite), under the store's lock: the
        // test lets go of the store then, and the sync returns once it has (or once the store
        // is released, when the test's was the last reference: its deinit waits for the lock).
        calls.syncDirectory = { directory in
            guard watch.fire() else { return live.syncDirectory(directory) }
            watch.lock.withLock { watch.armed = false }
            watch.switching.signal()
            while watch.store != nil && !watch.lock.withLock({ watch.released }) { sched_yield() }
            return live.syncDirectory(directory)
        }
        let url = temporaryURL("released.state")
        var store: FileStore? = FileStore(
            url: url, options: .init(syncEveryWrite: true, compactionThreshold: 256), system: calls)
        var engine: RuleEngine? = try RuleEngine(source: rules, store: store!)
        watch.store = store
        let queue = store!.compactionQueue
        watch.lock.withLock { watch.armed = true }
        // Triggers until a compaction starts; the compaction then waits for `go`.
        var triggers = 0
        repeat {
            engine!.trigger("tap")
            triggers += 1
        } while !store!.lock.withLock { store!.compacting } && triggers < 10_000
        engine = nil
        watch.go.signal()
        XCTAssertEqual(watch.switching.wait(timeout: .now() + 30), .success, "a compaction switched files")
        watch.lock.withLock { watch.closed = [] }
        store = nil
        watch.lock.withLock { watch.released = true }
        queue.sync {}
        let closed = watch.lock.withLock { watch.closed }
        XCTAssertEqual(closed.count, Set(closed).count, "descriptors closed: \(closed)")
        XCTAssertFalse(closed.isEmpty)
        // Everything acknowledged is in the file.
        let reopened = try RuleEngine(source: rules, store: FileStore(url: url))
        XCTAssertEqual(reopened.count("tap"), triggers)
    }
}
