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
}
