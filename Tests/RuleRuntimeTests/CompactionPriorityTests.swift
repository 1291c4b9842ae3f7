import Foundation
import TestSupport
import XCTest

@testable import RuleRuntime

#if canImport(Glibc)
    import Glibc
#endif

/// A background compaction runs below the app's threads: on Linux, where libdispatch gives the
/// compaction queue's QoS no priority, on a thread of its own at nice 19; the threads it leaves
/// (the caller's, the queue's) keep theirs. The switch to the new file holds the store's lock,
/// so it runs on the queue's thread, at its priority: a trigger waiting for the lock never
/// waits for a thread at nice 19.
final class CompactionPriorityTests: XCTestCase {
    #if os(Linux)
        func testACompactionWritesAtTheLowestPrioritySwitchesAtTheQueuesAndLeavesTheThreadsAsTheyWere() throws {
            let url = temporaryURL("priority.state")
            defer { removeFolder(of: url) }
            let seen = Locked<[Int32]>([])
            var calls = FileSystemCalls.live
            let live = FileSystemCalls.live
            // The compaction's fsync of its new file: asked the nice value of the thread it runs on.
            calls.fsync = { fd in
                if !Thread.isMainThread {
                    errno = 0
                    let nice = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
                    seen.withValue { $0.append(errno == 0 ? nice : -100) }
                }
                return live.fsync(fd)
            }
            // The rename of the new file over the old one, which the switch makes under the lock.
            let renamedAt = Locked<[Int32]>([])
            calls.rename = { from, to in
                errno = 0
                let nice = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
                renamedAt.withValue { $0.append(errno == 0 ? nice : -100) }
                return live.rename(from, to)
            }
            let before = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
            let store = FileStore(url: url, options: .init(compactionThreshold: 256), system: calls)
            // A thread of the compaction queue, asked from a block that runs on one (`sync` may
            // run the block on the calling thread): libdispatch on Linux gives a utility queue's
            // threads a nice value of their own (2 here).
            func queueNice() -> Int32 {
                let asked = Locked<Int32>(-100)
                let done = DispatchSemaphore(value: 0)
                store.compactionQueue.async {
                    errno = 0
                    let nice = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
                    asked.withValue { $0 = errno == 0 ? nice : -100 }
                    done.signal()
                }
                done.wait()
                return asked.withValue { $0 }
            }
            let queueBefore = queueNice()
            XCTAssertLessThan(queueBefore, 19)
            let engine = try RuleEngine(source: "scenario S < on x; min_events 1 >", store: store, clock: ManualClock())
            for _ in 0..<60 { engine.trigger("x") }
            store.waitForCompaction()
            let nices = seen.withValue { $0 }
            XCTAssertFalse(nices.isEmpty, "a compaction ran")
            XCTAssertEqual(Set(nices), [19])
            XCTAssertEqual(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0), before, "this thread's")
            let renames = renamedAt.withValue { $0 }
            XCTAssertEqual(renames.count, store.compactions, "each switch renamed once")
            XCTAssertEqual(Set(renames), [queueBefore], "the switch, under the store's lock, at the queue's priority")
            // A thread of the compaction queue, once it is done, runs at the priority it had.
            XCTAssertEqual(queueNice(), queueBefore, "the queue's thread")
            XCTAssertEqual(engine.count("x"), 60)
        }
    #endif
}
