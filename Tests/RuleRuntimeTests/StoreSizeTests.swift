import Foundation
import RuleLang
import XCTest

@testable import RuleRuntime

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file store never acknowledges a write it cannot keep readable: a burst of appends that
/// outgrows the background compaction is compacted in place, a record that would take the file
/// past its size limit is refused with an error once compacting cannot make room, and a
/// filtered stream's stored name stays short whatever the filter's length.
final class StoreSizeTests: XCTestCase {
    /// File calls whose `fsync` blocks on every thread but the test's until `release()`: a
    /// background compaction that never finishes while the test appends.
    final class StalledCompactions: @unchecked Sendable {
        // Invariant: `released` is read and written under `lock` only; `gate` is signalled once.
        private let lock = NSLock()
        private var released = false
        private let gate = DispatchSemaphore(value: 0)
        private let testThread = pthread_self()

        var calls: FileSystemCalls {
            var calls = FileSystemCalls.live
            let live = FileSystemCalls.live
            calls.fsync = { fd in
                if pthread_equal(pthread_self(), self.testThread) == 0 {
                    self.lock.lock()
                    let go = self.released
                    self.lock.unlock()
                    if !go {
                        self.gate.wait()
                        self.gate.signal()
                    }
                }
                return live.fsync(fd)
            }
            return calls
        }

        func release() {
            lock.lock()
            released = true
            lock.unlock()
            gate.signal()
        }
    }

    private func fileSize(_ url: URL) -> Int {
        var info = stat()
        return stat(url.path, &info) == 0 ? Int(info.st_size) : -1
    }

    /// An exclusive store whose background compaction never ends: 400 records of 64 KiB (25 MiB)
    /// keep the file within four times the threshold (and a record), and every record is read
    /// back. Before, an exclusive store compacted only in the background and the file grew by
    /// every record.
    func testABurstThatOutgrowsTheBackgroundCompactionIsCompactedInPlace() throws {
        let url = temporaryURL("burst.state")
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let stalled = StalledCompactions()
        defer { stalled.release() }
        let threshold = 256 << 10
        do {
            let store = FileStore(url: url, options: .init(compactionThreshold: threshold), system: stalled.calls)
            _ = try store.load()
            var largest = 0
            for n in 0..<400 {
                let value = [UInt8](repeating: UInt8(n % 251), count: 64 << 10)
                try store.apply([
                    StoreChange(key: "p:big", value: value), StoreChange(key: "p:n\(n % 3)", value: [UInt8(n % 256)]),
                ])
                largest = max(largest, fileSize(url))
            }
            XCTAssertLessThanOrEqual(largest, 4 * threshold + 2 * (64 << 10) + 4096, "the file outgrew its compactions")
            stalled.release()
            store.waitForCompaction()
        }
        let reopened = try FileStore(url: url).load()
        XCTAssertEqual(reopened["p:big"], [UInt8](repeating: UInt8(399 % 251), count: 64 << 10))
        XCTAssertEqual(reopened["p:n0"], [UInt8(399 % 256)])
        XCTAssertEqual(reopened["p:n1"], [UInt8(397 % 256)])
        XCTAssertEqual(reopened["p:n2"], [UInt8(398 % 256)])
    }

    /// Live entries that outgrow the size limit (here 1 MiB): the first record that cannot fit
    /// after compacting is refused (`EFBIG`), nothing after the acknowledged records is kept,
    /// and the file opens again with every acknowledged entry. Before, the write was
    /// acknowledged and the next open refused the whole file.
    func testARecordThatWouldPassTheSizeLimitIsRefusedAndTheFileStaysReadable() throws {
        for shared in [false, true] {
            let url = temporaryURL("full.state")
            defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
            var acknowledged: [String: [UInt8]] = [:]
            do {
                let store = FileStore(url: url, options: .init(shared: shared))
                store.sizeLimit = 1 << 20
                _ = try store.load()
                var refused: RuleStoreError?
                for n in 0..<40 {
                    let change = StoreChange(key: "p:k\(n)", value: [UInt8](repeating: UInt8(n), count: 40_000))
                    do {
                        try store.apply([change])
                        acknowledged[change.key] = change.value
                    } catch let error as RuleStoreError {
                        refused = error
                        break
                    }
                    XCTAssertLessThanOrEqual(fileSize(url), 1 << 20, "shared: \(shared)")
                }
                XCTAssertEqual(refused, .io(path: url.path, operation: "write", errno: EFBIG), "shared: \(shared)")
                XCTAssertEqual(acknowledged.count, 26, "shared: \(shared)")
                // An overwrite of a live entry still fits once the superseded values are compacted.
                try store.apply([StoreChange(key: "p:k0", value: [7])])
                acknowledged["p:k0"] = [7]
                store.waitForCompaction()
            }
            XCTAssertEqual(
                try FileStore(url: url, options: .init(shared: shared)).load(), acknowledged, "shared: \(shared)")
        }
    }

    /// A filter's text of 100 KB makes a stream name of at most a few hundred bytes, distinct
    /// for distinct texts, and the same for the same text (so every process finds it).
    func testAFilteredStreamsStoredNameIsBounded() throws {
        let long = "plan == \"" + String(repeating: "é", count: 50_000) + "\""
        let other = "plan == \"" + String(repeating: "é", count: 49_999) + "e\""
        let name = EngineStream.filtered("purchase", long)
        XCTAssertLessThanOrEqual(name.utf8.count, 7 + 8 + 1 + 64 + 3 + 1 + 16)
        XCTAssertEqual(name, EngineStream.filtered("purchase", long))
        XCTAssertNotEqual(name, EngineStream.filtered("purchase", other))
        XCTAssertTrue(name.hasPrefix("@where:purchase:plan == \""))
        let sum = EngineStream.sum("purchase", "amount:" + long)
        XCTAssertLessThanOrEqual(sum.utf8.count, 5 + 9 + 64 + 3 + 1 + 16)
        // Up to the bound a name is the text itself, as before.
        let short = "amount >= 10"
        XCTAssertEqual(EngineStream.filtered("purchase", short), "@where:purchase:amount >= 10")
    }

    /// The case that lost a file: a filter whose literal is 100 KB, then triggers that pass it,
    /// on an exclusive file: the file stays small and reads back every trigger.
    func testTriggersThatPassAHugeFilterKeepTheFileSmall() throws {
        let url = temporaryURL("filter.state")
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let literal = String(repeating: "x", count: 100_000)
        let rules = """
            # language 1.2
            event purchase(plan: string), launch
            scenario S < on launch; when count(purchase where plan == "\(literal)") >= 1 >
            """
        let clock = ManualClock()
        do {
            let engine = try RuleEngine(source: rules, store: FileStore(url: url), clock: clock)
            for _ in 0..<300 {
                engine.trigger("purchase", properties: ["plan": .string(literal)])
                clock.advance(by: 1)
            }
            XCTAssertLessThan(fileSize(url), 1 << 20)
        }
        let engine = try RuleEngine(source: rules, store: FileStore(url: url), clock: clock)
        XCTAssertTrue(try engine.check("count(purchase where plan == \"\(literal)\") == 300"))
    }
}
