import Foundation
import TestSupport
import XCTest

/// Directory links, timelines and large inputs that must not loop, repeat or pass silently.
final class HostileInputCLITests: XCTestCase {
    private func directory() throws -> URL {
        TemporaryFiles.watch()
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("rulec-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    func testDirectoryLinksAreFollowedOnceAndCyclesEnd() throws {
        let root = try directory()
        let sub = root.appendingPathComponent("sub")
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        try "scenario A < min_event 1 >\n".write(
            to: sub.appendingPathComponent("a.rules"), atomically: true, encoding: .utf8)
        // A link to itself, a link back to the root, and a second link to the same directory.
        try FileManager.default.createSymbolicLink(
            atPath: sub.appendingPathComponent("self").path, withDestinationPath: ".")
        try FileManager.default.createSymbolicLink(
            atPath: sub.appendingPathComponent("up").path, withDestinationPath: "..")
        try FileManager.default.createSymbolicLink(
            atPath: root.appendingPathComponent("again").path, withDestinationPath: "sub")
        let result = try RulecBinary.run(["check", root.path])
        XCTAssertEqual(result.status, 1)
        let output = result.stdout + result.stderr
        XCTAssertEqual(output.components(separatedBy: "unknown clause 'min_event'").count - 1, 1, output)
        XCTAssertTrue(output.contains("checked 1 file"), output)
    }

    private func simulate(_ rules: String, _ timeline: String) throws -> CommandResult {
        let dir = try directory()
        try rules.write(to: dir.appendingPathComponent("t.rules"), atomically: true, encoding: .utf8)
        try timeline.write(to: dir.appendingPathComponent("t.timeline"), atomically: true, encoding: .utf8)
        return try RulecBinary.run([
            "simulate", dir.appendingPathComponent("t.rules").path, dir.appendingPathComponent("t.timeline").path,
        ])
    }

    func testAnUnterminatedQuoteInATimelineIsALocatedError() throws {
        let result = try simulate("scenario S < >", "0 trigger \"share sheet\n1h trigger S\n")
        XCTAssertEqual(result.status, 1)
        let output = result.stdout + result.stderr
        XCTAssertTrue(output.contains("t.timeline:1:11: error: unterminated string"), output)
    }

    func testEveryInt64CanBeSetFromATimeline() throws {
        let rules = "param n: int\nscenario S < when (n < 0) >"
        let valid = try simulate(rules, "0 set n -9223372036854775808\n0 try S\n1s set n 9223372036854775807\n")
        XCTAssertEqual(valid.status, 0, valid.stderr)
        XCTAssertEqual(valid.stdout, "0 S yes\n")
        let overflow = try simulate(rules, "0 set n 9223372036854775808\n")
        XCTAssertTrue(
            (overflow.stdout + overflow.stderr).contains("1:9: error: '9223372036854775808' is not an 'int'"),
            overflow.stdout + overflow.stderr)
    }
}
