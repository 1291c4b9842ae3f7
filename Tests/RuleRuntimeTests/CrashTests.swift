import Foundation
import TestSupport
import XCTest

@testable import RuleRuntime

/// Killed processes, competing processes and failing system calls: nothing acknowledged is lost.
final class CrashTests: XCTestCase {
    let rules = "scenario AskToSubscribe < min_events 5 >"

    /// 200 cycles of: a child triggers with a tiny compaction threshold (so kills land in
    /// compactions too) and is killed at a random moment; every acknowledged trigger survives.
    func testSIGKILLCyclesIncludingDuringCompactionLoseNothing() throws {
        let url = temporaryURL("cycles.state")
        var generator = SeededGenerator(seed: UInt64(ProcessInfo.processInfo.environment["RULES_SEED"] ?? "") ?? 0x5EED)
        print("SIGKILL cycles seed: \(generator.seed)")
        var acknowledged = 0
        var killedWhileCompacting = 0
        for cycle in 0..<200 {
            let child = try FixtureProcess(["trigger-loop", url.path, "x", "600"])
            acknowledged = max(
                acknowledged, child.readCounts(until: acknowledged + Int.random(in: 1...40, using: &generator)))
            child.kill()
            let siblings = try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)
            if siblings.contains(url.lastPathComponent + ".compacting") { killedWhileCompacting += 1 }
            let store = FileStore(url: url)
            let engine = try RuleEngine(source: rules, store: store)
            XCTAssertGreaterThanOrEqual(engine.count("x"), acknowledged, "cycle \(cycle)")
            if engine.count("x") < acknowledged { return }
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: url.path + ".tmp"))
        print("SIGKILL cycles: \(killedWhileCompacting) of 200 kills landed during a compaction")
        XCTAssertGreaterThan(killedWhileCompacting, 0, "some kills land in a compaction")
        let left = try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)
        XCTAssertFalse(left.contains { $0.contains(".compacting") }, "leftovers are removed at open")
    }

    /// Two processes open, trigger and close the same file in a loop, compacting often;
    /// a lock on a file that compaction replaced would lose writes.
    func testTwoProcessesNeverHoldTheLockAtOnce() throws {
        let url = temporaryURL("shared.state")
        let children = try (0..<2).map { _ in try FixtureProcess(["lock-loop", url.path, "150"]) }
        var acknowledged = 0
        var attempted = 0
        for child in children {
            let parts = child.readToEnd().split(separator: " ").compactMap {
                Int($0.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            XCTAssertEqual(parts.count, 2)
            acknowledged += parts.first ?? 0
            attempted += parts.last ?? 0
        }
        let engine = try RuleEngine(source: rules, store: FileStore(url: url))
        XCTAssertGreaterThan(acknowledged, 0)
        XCTAssertGreaterThanOrEqual(engine.count("x"), acknowledged)
        XCTAssertLessThanOrEqual(engine.count("x"), attempted)
    }

    // MARK: - Fault injection

    enum Call: String, CaseIterable { case write, fsync, rename, exchange, truncate, syncDirectory }

    /// System calls that succeed until the `failAt`-th one of `kind`; then that call fails
    /// (`stop == false`), or it and every later call of any kind fail as if the process had
    /// died there (`stop == true`; a write then hands only half its bytes to the file).
    final class Faults: @unchecked Sendable {
        let lock = NSLock()
        var counts: [Call: Int] = [:]
        let kind: Call
        let failAt: Int
        let stop: Bool
        var dead = false
        var fired = false

        init(_ kind: Call, at index: Int, stop: Bool) {
            (self.kind, self.failAt, self.stop) = (kind, index, stop)
        }

        /// What a failed call returns: -1, with `errno` EIO.
        static func ioError() -> Int32 {
            errno = EIO
            return -1
        }

        /// True when call `call` must fail now.
        func fails(_ call: Call) -> Bool {
            lock.lock()
            defer { lock.unlock() }
            if dead { return true }
            counts[call, default: 0] += 1
            guard call == kind, counts[call] == failAt else { return false }
            fired = true
            if stop { dead = true }
            return true
        }

        var calls: FileSystemCalls {
            let live = FileSystemCalls.live
            return FileSystemCalls(
                write: { fd, bytes, count in
                    guard self.fails(.write) else { return live.write(fd, bytes, count) }
                    if self.stop && count > 1 { _ = live.write(fd, bytes, count / 2) }
                    return Int(Faults.ioError())
                },
                fsync: { fd in
                    self.fails(.fsync) ? Faults.ioError() : live.fsync(fd)
                },
                rename: { a, b in
                    self.fails(.rename) ? Faults.ioError() : live.rename(a, b)
                },
                exchange: { a, b in
                    self.fails(.exchange) ? Faults.ioError() : live.exchange(a, b)
                },
                truncate: { fd, n in
                    self.fails(.truncate) ? Faults.ioError() : live.truncate(fd, n)
                },
                syncDirectory: { d in
                    self.fails(.syncDirectory) ? Faults.ioError() : live.syncDirectory(d)
                },
                writeAside: live.writeAside)
        }
    }

    /// For each kind of call and each of its first occurrences, fail it (or die there) during
    /// appends and compactions; reopening with real calls yields every acknowledged change.
    func testEveryFailedOrStoppedSystemCallKeepsEveryAcknowledgedChange() throws {
        for (sync, shared) in [(false, false), (true, false), (false, true), (true, true)] {
            try checkEveryFault(options: .init(syncEveryWrite: sync, compactionThreshold: 300, shared: shared))
        }
    }

    private func checkEveryFault(options: FileStore.Options) throws {
        var scenarios = 0
        for kind in Call.allCases {
            for index in 1...12 {
                for stop in [false, true] {
                    let url = temporaryURL("faults.state")
                    defer { removeFolder(of: url) }
                    let faults = Faults(kind, at: index, stop: stop)
                    let acknowledged = appendWithFaults(url, faults, options: options)
                    guard faults.fired else { continue }
                    scenarios += 1
                    let reopened = FileStore(url: url, options: .init(shared: options.shared))
                    let entries = try reopened.load()
                    for (key, allowed) in acknowledged {
                        // The acknowledged value, or one of a later call that failed but reached the file.
                        XCTAssertTrue(
                            allowed.contains(entries[key] ?? []),
                            "\(kind) #\(index) stop \(stop) \(options): \(key)")
                    }
                }
            }
        }
        XCTAssertGreaterThan(scenarios, 60, "faults were injected in appends and compactions")
    }

    /// Found in review: with `syncEveryWrite`, an `fsync` failing after its `write` succeeded
    /// left the durable length behind the file, so the next compaction, or the cut-off after the
    /// next failed write, dropped a later acknowledged record (`e:k7`).
    func testAFailedFsyncNeverCostsALaterAcknowledgedRecord() throws {
        for shared in [false, true] {
            for thenWriteFails in [false, true] {
                let url = temporaryURL("fsync.state")
                defer { removeFolder(of: url) }
                let fsyncs = Locked(0)
                let failWrites = Locked(false)
                var calls = FileSystemCalls.live
                let live = FileSystemCalls.live
                calls.fsync = { fd in
                    // The fsync of the 5th record fails (one fsync came before, for the header).
                    let count = fsyncs.withValue { value -> Int in
                        value += 1
                        return value
                    }
                    if count == 6 {
                        errno = EIO
                        return -1
                    }
                    return live.fsync(fd)
                }
                calls.write = { fd, bytes, count in
                    // With `thenWriteFails`, the write after the last acknowledged record fails.
                    if failWrites.withValue({ $0 }) {
                        errno = ENOSPC
                        return -1
                    }
                    return live.write(fd, bytes, count)
                }
                var acknowledged: [String: [UInt8]] = [:]
                do {
                    let store = FileStore(
                        url: url, options: .init(syncEveryWrite: true, shared: shared), system: calls)
                    _ = try store.load()
                    try store.didLoad()
                    for k in 0..<8 {
                        let change = StoreChange(key: "e:k\(k)", value: Array("value \(k)".utf8))
                        if (try? store.apply([change])) != nil { acknowledged[change.key] = change.value }
                    }
                    XCTAssertEqual(acknowledged["e:k7"], Array("value 7".utf8))
                    if thenWriteFails {
                        failWrites.withValue { $0 = true }
                        XCTAssertThrowsError(try store.apply([StoreChange(key: "e:k8", value: [8])]))
                    } else {
                        try store.compact()
                    }
                }
                let entries = try FileStore(url: url, options: .init(shared: shared)).load()
                for (key, value) in acknowledged {
                    XCTAssertEqual(entries[key], value, "\(key), shared \(shared), then write fails \(thenWriteFails)")
                }
            }
        }
    }

    /// Keys built to collide under the hash without its per-process seed load in linear time.
    func testAStateFileBuiltToCollideKeysLoadsInLinearTime() throws {
        let url = temporaryURL("collide.state")
        defer { removeFolder(of: url) }
        let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15
        var keys: [[UInt8]] = []
        for n in 0..<20_000 {
            // 16-byte keys: the second word cancels the first, so the unseeded state after both
            // words (and so the hash) is the same for every key.
            let first = UInt64(UInt8(ascii: "z")) | UInt64(UInt8(ascii: ":")) << 8 | UInt64(n) << 16
            var state = ((16 &* multiplier) ^ first) &* multiplier
            state ^= state >> 32
            let second = state ^ 0x1234_5678
            keys.append(
                withUnsafeBytes(of: first.littleEndian) { Array($0) }
                    + withUnsafeBytes(of: second.littleEndian) { Array($0) })
        }
        let unseeded = Set(keys.map { key in key.withUnsafeBytes { NameTable.hashAndASCII($0, seed: 0).hash } })
        XCTAssertEqual(unseeded.count, 1, "the keys collide without the seed")
        var writer = RecordWriter(count: keys.count)
        for key in keys { writer.add(key[...], [1][...]) }
        try Data(RecordFormat.header() + writer.finish(version: RecordFormat.version)).write(to: url)
        let entries = try FileStore(url: url).loadEntries()
        XCTAssertEqual(entries.index.liveCount, keys.count)
        let probes = entries.bytes.withUnsafeBytes { entries.index.probeLength(in: $0) }
        XCTAssertLessThan(probes, 4 * keys.count, "probes for \(keys.count) keys")
    }

    /// 60 changes to 7 keys through a store with `faults`; returns, per acknowledged key,
    /// the values the file may hold: the last acknowledged one and those of later failed calls.
    /// The store is released (its lock too) on return.
    private func appendWithFaults(_ url: URL, _ faults: Faults, options: FileStore.Options) -> [String: [[UInt8]]] {
        let store = FileStore(url: url, options: options, system: faults.calls)
        var allowed: [String: [[UInt8]]] = [:]
        guard (try? store.load()) != nil else { return allowed }
        for k in 0..<60 {
            let change = StoreChange(key: "e:k\(k % 7)", value: Array("value \(k)".utf8))
            do {
                try store.apply([change])
                allowed[change.key] = [change.value!]
                // Compactions run in the background: finish each so faults land in them deterministically.
                store.waitForCompaction()
            } catch {
                allowed[change.key]?.append(change.value!)
                if faults.dead { break }
            }
        }
        return allowed
    }
}
