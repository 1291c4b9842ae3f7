import Foundation
import TestSupport
import XCTest

@testable import RuleRuntime

#if canImport(Glibc)
    import Glibc
#endif

/// A background compaction runs below the app's threads: on Linux, where libdispatch gives the
/// compaction queue's QoS no priority, on a thread of its own at nice 19; the threads it leaves
/// (the caller's, the queue's) keep theirs.
final class CompactionPriorityTests: XCTestCase {
    #if os(Linux)
        func testACompactionRunsAtTheLowestPriorityAndLeavesTheOtherThreadsAsTheyWere() throws {
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
            let before = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
            let store = FileStore(url: url, options: .init(compactionThreshold: 256), system: calls)
            let engine = try RuleEngine(source: "scenario S < on x; min_events 1 >", store: store, clock: ManualClock())
            for _ in 0..<60 { engine.trigger("x") }
            store.waitForCompaction()
            let nices = seen.withValue { $0 }
            XCTAssertFalse(nices.isEmpty, "a compaction ran")
            XCTAssertEqual(Set(nices), [19])
            XCTAssertEqual(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0), before, "this thread's")
            // A thread of the compaction queue, once it is done, runs at the priority it had.
            let queueNice = store.compactionQueue.sync { getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) }
            XCTAssertEqual(queueNice, before, "the queue's thread")
            XCTAssertEqual(engine.count("x"), 60)
        }
    #endif
}
