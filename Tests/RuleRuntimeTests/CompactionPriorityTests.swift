import Foundation
import TestSupport
import XCTest

@testable import RuleRuntime

#if canImport(Glibc)
    import Glibc
#endif

/// A background compaction runs below the app's threads: on Linux, where libdispatch gives the
/// compaction queue's QoS little priority (nice 2), it writes and syncs the new file on a thread
/// of its own at nice 19; the threads it leaves (the caller's, the queue's) keep theirs. What
/// takes the store's lock (the copy of the records appended meanwhile, the switch to the new
/// file) runs on the queue's thread, at its priority: a trigger waiting for the lock never
/// waits for a thread at nice 19.
final class CompactionPriorityTests: XCTestCase {
    #if os(Linux)
        func testACompactionWritesAtTheLowestPrioritySwitchesAtTheQueuesAndLeavesTheThreadsAsTheyWere() throws {
            let url = temporaryURL("priority.state")
            defer { removeFolder(of: url) }
            let seen = Locked<[Int32]>([])
            // Descriptors of new files once synced, and the nice values of the writes to them
            // after that (the copy of the records appended meanwhile, made in the background).
            let synced = Locked<Set<Int32>>([])
            let copiedAt = Locked<[Int32]>([])
            // The first compaction's fsync waits until this thread has appended more than a
            // round of copying (16 KiB) behind it.
            let appended = DispatchSemaphore(value: 0)
            let firstSync = Locked(true)
            var calls = FileSystemCalls.live
            let live = FileSystemCalls.live
            @Sendable func nice() -> Int32 {
                errno = 0
                let value = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
                return errno == 0 ? value : -100
            }
            // The compaction's fsync of its new file: asked the nice value of the thread it runs on.
            calls.fsync = { fd in
                if !Thread.isMainThread {
                    seen.withValue { $0.append(nice()) }
                    let first = firstSync.withValue { first in
                        defer { first = false }
                        return first
                    }
                    if first {
                        _ = appended.wait(timeout: .now() + 20)
                    }
                }
                let result = live.fsync(fd)
                if !Thread.isMainThread { synced.withValue { _ = $0.insert(fd) } }
                return result
            }
            calls.write = { fd, bytes, count in
                if !Thread.isMainThread, synced.withValue({ $0.contains(fd) }) {
                    copiedAt.withValue { $0.append(nice()) }
                }
                return live.write(fd, bytes, count)
            }
            calls.close = { fd in
                synced.withValue { _ = $0.remove(fd) }
                return live.close(fd)
            }
            // The swap of the new file with the old one (or the rename over it), which the switch
            // makes under the lock.
            let renamedAt = Locked<[Int32]>([])
            calls.rename = { from, to in
                renamedAt.withValue { $0.append(nice()) }
                return live.rename(from, to)
            }
            calls.exchange = { a, b in
                renamedAt.withValue { $0.append(nice()) }
                return live.exchange(a, b)
            }
            let before = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
            let store = FileStore(url: url, options: .init(compactionThreshold: 256), system: calls)
            // The 30 KB appended behind the held compaction stay behind it (not compacted in place).
            store.burstFactor = 1 << 20
            // A thread of the compaction queue, asked from a block that runs on one (`sync` may
            // run the block on the calling thread): libdispatch on Linux gives a utility queue's
            // threads a nice value of their own (2 here).
            func queueNice() -> Int32 {
                let asked = Locked<Int32>(-100)
                let done = DispatchSemaphore(value: 0)
                store.compactionQueue.async {
                    asked.withValue { $0 = nice() }
                    done.signal()
                }
                done.wait()
                return asked.withValue { $0 }
            }
            let queueBefore = queueNice()
            XCTAssertLessThan(queueBefore, 19)
            let engine = try RuleEngine(source: "scenario S < on x; min_events 1 >", store: store, clock: ManualClock())
            let triggers = try appendPastTheFirstSync(engine, url)
            appended.signal()
            store.waitForCompaction()
            let nices = seen.withValue { $0 }
            XCTAssertFalse(nices.isEmpty, "a compaction ran")
            XCTAssertEqual(Set(nices), [19])
            XCTAssertEqual(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0), before, "this thread's")
            let renames = renamedAt.withValue { $0 }
            XCTAssertEqual(renames.count, store.compactions, "each switch swapped once")
            XCTAssertEqual(Set(renames), [queueBefore], "the switch, under the store's lock, at the queue's priority")
            // A thread of the compaction queue, once it is done, runs at the priority it had.
            XCTAssertEqual(queueNice(), queueBefore, "the queue's thread")
            let copies = copiedAt.withValue { $0 }
            XCTAssertFalse(copies.isEmpty, "the records appended meanwhile were copied")
            XCTAssertEqual(Set(copies), [queueBefore], "the copy, which reads the length under the lock")
            XCTAssertEqual(engine.count("x"), triggers)
        }

        /// The copy rounds read how far the file has grown without the store's lock: a trigger
        /// never waits for the queue's thread there, only at the switch. Here the test holds the
        /// lock (as a long trigger would) while the first compaction copies what was appended
        /// after its snapshot; the copy goes on, and the switch waits for the lock.
        func testTheCopyRoundsRunWhileTheStoresLockIsHeld() throws {
            let url = temporaryURL("copy-rounds.state")
            defer { removeFolder(of: url) }
            let synced = Locked<Set<Int32>>([])
            let copied = DispatchSemaphore(value: 0)
            let appended = DispatchSemaphore(value: 0)
            let firstSync = Locked(true)
            var calls = FileSystemCalls.live
            let live = FileSystemCalls.live
            calls.fsync = { fd in
                if !Thread.isMainThread {
                    let first = firstSync.withValue { first in
                        defer { first = false }
                        return first
                    }
                    if first { _ = appended.wait(timeout: .now() + 20) }
                }
                let result = live.fsync(fd)
                if !Thread.isMainThread { synced.withValue { _ = $0.insert(fd) } }
                return result
            }
            calls.write = { fd, bytes, count in
                if !Thread.isMainThread, synced.withValue({ $0.contains(fd) }) { copied.signal() }
                return live.write(fd, bytes, count)
            }
            calls.close = { fd in
                synced.withValue { _ = $0.remove(fd) }
                return live.close(fd)
            }
            let store = FileStore(url: url, options: .init(compactionThreshold: 256), system: calls)
            store.burstFactor = 1 << 20  // as above
            let engine = try RuleEngine(source: "scenario S < on x; min_events 1 >", store: store, clock: ManualClock())
            let triggers = try appendPastTheFirstSync(engine, url)
            store.lock.lock()
            appended.signal()
            let copiedWhileHeld = copied.wait(timeout: .now() + 20) == .success
            store.lock.unlock()
            XCTAssertTrue(copiedWhileHeld, "the records appended meanwhile were copied while the lock was held")
            store.waitForCompaction()
            XCTAssertGreaterThanOrEqual(store.compactions, 1)
            XCTAssertEqual(engine.count("x"), triggers)
        }

        /// Triggers past the threshold, so that the first compaction starts and waits to sync;
        /// then 30 KB more, which it copies once it has synced. Returns the triggers made.
        private func appendPastTheFirstSync(_ engine: RuleEngine, _ url: URL) throws -> Int {
            func length() throws -> Int {
                try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int ?? 0
            }
            var triggers = 60
            for _ in 0..<triggers { engine.trigger("x") }
            let waiting = try length()
            while try length() < waiting + 30_000 {
                engine.trigger("x")
                triggers += 1
            }
            return triggers
        }
    #endif
}
