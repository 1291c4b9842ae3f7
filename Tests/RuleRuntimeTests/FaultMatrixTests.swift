import Foundation
import XCTest

@testable import RuleRuntime

/// Every fault something outside can do to a state file, with 1, 2 and 4 processes writing it
/// (and one exclusive writer, where the fault applies to it): nothing acknowledged is lost, or,
/// where the path is unusable, an error is reported and nothing crashes. Each writer counts
/// its own acknowledged triggers; a fresh engine must count their sum.
final class FaultMatrixTests: XCTestCase {
    enum Fault: CaseIterable {
        case deleted, truncatedToZero, truncatedMidRecord, replacedByOlderCopy, lockFileDeleted, lockFileTruncated

        var appliesToExclusive: Bool {
            switch self {
            case .lockFileDeleted, .lockFileTruncated: return false
            default: return true
            }
        }
    }

    private func writers(_ n: Int, _ url: URL, exclusive: Bool = false) throws -> [FixtureProcess] {
        try (0..<n).map { _ in
            let writer = try FixtureProcess(["fault-writer", url.path] + (exclusive ? ["exclusive"] : []), input: true)
            XCTAssertEqual(writer.readLine(), "ready")
            return writer
        }
    }

    /// One round: every writer triggers `count` times at once; returns their acknowledged totals.
    private func round(_ writers: [FixtureProcess], _ count: Int) -> [Int] {
        for writer in writers { writer.send("t \(count)") }
        return writers.map { writer in
            let line = writer.readLine() ?? ""
            XCTAssertTrue(line.hasPrefix("acked "), line)
            return Int(line.dropFirst(6)) ?? -1_000_000
        }
    }

    private func stop(_ writers: [FixtureProcess]) {
        for writer in writers { writer.send("q") }
        for writer in writers {
            XCTAssertEqual(writer.readLine(), "bye")
            writer.process.waitUntilExit()
            XCTAssertEqual(writer.process.terminationStatus, 0)
        }
    }

    private func apply(_ fault: Fault, to url: URL, older: URL) throws {
        let path = url.path
        switch fault {
        case .deleted: XCTAssertEqual(unlink(path), 0)
        case .truncatedToZero: XCTAssertEqual(truncate(path, 0), 0)
        case .truncatedMidRecord:
            // Sized and cut through one descriptor: a compaction may rename a shorter file in
            // meanwhile, which cutting by path to an older size would lengthen with zeros.
            let descriptor = open(path, O_WRONLY)
            defer { close(descriptor) }
            var info = stat()
            XCTAssertEqual(fstat(descriptor, &info), 0)
            XCTAssertEqual(ftruncate(descriptor, info.st_size - 7), 0)
        case .replacedByOlderCopy: XCTAssertEqual(rename(older.path, path), 0)
        case .lockFileDeleted: XCTAssertEqual(unlink(path + ".shm"), 0)
        case .lockFileTruncated: XCTAssertEqual(truncate(path + ".shm", 0), 0)
        }
    }

    private func run(_ fault: Fault, processes n: Int, exclusive: Bool = false) throws {
        let url = temporaryURL("matrix.state")
        defer { removeFolder(of: url) }
        let older = url.deletingLastPathComponent().appendingPathComponent("older.state")
        let writers = try self.writers(n, url, exclusive: exclusive)
        _ = round(writers, 40)
        try FileManager.default.copyItem(at: url, to: older)
        _ = round(writers, 40)
        try apply(fault, to: url, older: older)
        var acknowledged = round(writers, 40)
        acknowledged = round(writers, 40)
        stop(writers)
        let label = "\(fault), \(n) \(exclusive ? "exclusive" : "shared") process(es)"
        let fresh: RuleEngine
        do {
            fresh = try RuleEngine(
                source: "scenario S < min_events 1 >", store: FileStore(url: url, options: .init(shared: !exclusive)))
        } catch {
            return XCTFail("\(label): \(error)")
        }
        XCTAssertEqual(fresh.count("x"), acknowledged.reduce(0, +), label)
        // Calls may fail while another process writes the file again (reported, not saved).
        XCTAssertGreaterThanOrEqual(acknowledged.reduce(0, +), n * 80, label)
    }

    func testEveryFaultWithOneTwoAndFourSharedWriters() throws {
        for fault in Fault.allCases {
            for n in [1, 2, 4] { try run(fault, processes: n) }
        }
    }

    func testEveryFaultWithAnExclusiveWriter() throws {
        for fault in Fault.allCases where fault.appliesToExclusive { try run(fault, processes: 1, exclusive: true) }
    }

    /// A directory where the file was: it cannot be written again there. Every writer reports
    /// errors and exits normally; opening the path says what is wrong with it.
    func testReplacedByADirectory() throws {
        for n in [1, 2, 4] {
            let url = temporaryURL("matrix.state")
            defer { removeFolder(of: url) }
            let writers = try self.writers(n, url)
            var acknowledged = round(writers, 40)
            XCTAssertEqual(unlink(url.path), 0)
            XCTAssertEqual(mkdir(url.path, 0o755), 0)
            // A writer looks at the path at most once a tick of the coarse clock (1-4 ms), so a
            // round may fall within the tick of its last look: rounds go on until every writer
            // has reported a call it could not save (100 rounds take far longer than a tick).
            var unsaved = Array(repeating: 0, count: n)
            for _ in 0..<100 where unsaved.contains(0) {
                let after = round(writers, 40)
                for k in 0..<n { unsaved[k] += acknowledged[k] + 40 - after[k] }
                acknowledged = after
            }
            for k in 0..<n { XCTAssertGreaterThan(unsaved[k], 0, "writer \(k) of \(n): calls that could not be saved") }
            stop(writers)
            XCTAssertThrowsError(try FileStore(url: url, options: .init(shared: true)).load()) {
                XCTAssertTrue("\($0)".contains(url.path), "\($0)")
            }
        }
    }

    /// Writers killed (SIGKILL) in the middle of a round: a fresh engine counts every trigger
    /// acknowledged before, and at most the round's beyond.
    func testKilledMidRound() throws {
        for n in [1, 2, 4] {
            let url = temporaryURL("matrix.state")
            defer { removeFolder(of: url) }
            let writers = try self.writers(n, url)
            let acknowledged = round(writers, 40).reduce(0, +)
            for writer in writers { writer.send("t 100000") }
            for writer in writers { writer.kill() }
            let count = try RuleEngine(
                source: "scenario S < min_events 1 >", store: FileStore(url: url, options: .init(shared: true))
            ).count("x")
            XCTAssertGreaterThanOrEqual(count, acknowledged)
            XCTAssertLessThanOrEqual(count, acknowledged + n * 100_000)
        }
    }

    /// An exclusive and shared writers on one file, in either order: the second to open fails,
    /// the first goes on, and nothing it acknowledged is lost.
    func testExclusiveAndSharedWriters() throws {
        for n in [1, 2, 4] {
            let url = temporaryURL("matrix.state")
            defer { removeFolder(of: url) }
            let exclusive = try writers(1, url, exclusive: true)
            for _ in 0..<n {
                let late = try FixtureProcess(["fault-writer", url.path])
                let said = late.readToEnd()
                XCTAssertEqual(late.process.terminationStatus, 1)
                XCTAssertTrue(said.isEmpty)
            }
            let acknowledged = round(exclusive, 40)
            stop(exclusive)
            let shared = try writers(n, url)
            let late = try FixtureProcess(["fault-writer", url.path, "exclusive"])
            _ = late.readToEnd()
            XCTAssertEqual(late.process.terminationStatus, 1)
            let more = round(shared, 40)
            stop(shared)
            let fresh = try RuleEngine(source: "scenario S < min_events 1 >", store: FileStore(url: url))
            XCTAssertEqual(fresh.count("x"), acknowledged.reduce(0, +) + more.reduce(0, +))
        }
    }
}
