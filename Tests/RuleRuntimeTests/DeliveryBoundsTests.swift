import Foundation
import RuleLang
import TestSupport
import XCTest

@testable import RuleRuntime

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Delivery bounded by its own limit, and bad input at its edges: each refused with a clear
/// reason, losing no state.
final class DeliveryBoundsTests: XCTestCase {
    let rules = "scenario Ask < min_events 3 >\n"

    func delivery(_ directory: URL, limit: Int = 512 * 1024) -> RuleDelivery {
        RuleDelivery(
            directory: directory, bundled: [SourceFile(path: "app.rules", text: rules)], maximumSize: limit)
    }

    func sealed(_ text: String) -> [UInt8] { RuleDelivery.seal(Array(text.utf8)) }

    /// 16 GiB against a limit of 512 KiB, with and without a `Content-Length`: refused as too
    /// large, the body kept to about the limit, and the transfer cancelled before its end. How
    /// much memory the fetching process grew by is printed, not asserted: 15-28 MB here when the
    /// machine is quiet (the URL session's own), but Linux's URL session may have buffered far
    /// more by the time the cancel takes effect (200 MB and 404 MB seen under load), where the
    /// whole body read first grew it by 1 GB. The body was 512 MiB, which loopback sent whole
    /// once under load before the cancel took effect (a CI run): 16 GiB cannot be, in the time
    /// a cancel takes, and uncancelled it would take a minute and more.
    func testAFetchStopsReadingPastTheLimit() throws {
        let size = 16 << 30
        for sayLength in [true, false] {
            let server = try LoopbackServer { _ in .init(status: 200, streamed: size, sayLength: sayLength) }
            defer { server.stop() }
            let child = try FixtureProcess(["fetch", server.url.absoluteString, "\(512 * 1024)"])
            let said = child.readToEnd()
            print("16 GiB body, Content-Length \(sayLength ? "given" : "absent"): \(said)")
            XCTAssertTrue(said.hasPrefix("refused: the rules are "), said)
            XCTAssertTrue(said.contains("over the limit of 524288"), said)
            if sayLength {
                XCTAssertTrue(said.contains("the rules are \(size) bytes"), "refused at the headers: \(said)")
            } else {
                let kept = Int(said.split(separator: " ")[4]) ?? .max
                XCTAssertLessThan(kept, 2 * 524288, "the body kept: \(said)")
            }
            XCTAssertLessThan(server.bodyBytesSent, size / 4, "the body was read to its end")
        }
    }

    /// A body refused as too large ends the fetch then, not when the transfer has stopped (a CI
    /// run saw a cancelled 16 GiB transfer read to its end first). The server here answers only
    /// when let go: the refusal, of data over the limit handed to the fetch's delegate, must end
    /// the fetch while the request still waits. The server is let go after 20 s at the latest,
    /// so that the test ends either way.
    func testARefusalEndsTheFetchBeforeTheTransferEnds() async throws {
        let arrived = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let answered = Protected(false)
        let server = try LoopbackServer { _ in
            arrived.signal()
            _ = gate.wait(timeout: .now() + 20)
            answered.withLock { $0 = true }
            return .init(status: 204)
        }
        defer {
            gate.signal()
            server.stop()
        }
        let receiver = BoundedReceiver(limit: 10, host: "127.0.0.1", redirectsToOtherHosts: false)
        let session = URLSession(configuration: .ephemeral, delegate: receiver, delegateQueue: nil)
        defer { session.invalidateAndCancel() }
        async let fetched = receiver.run(URLRequest(url: server.url), in: session)
        // The request is at the server: the fetch waits for its answer.
        await Task.detached { arrived.wait() }.value
        // Handed as if on the fetch's task; a task of a session of its own, never started, whose
        // cancel reaches no delegate of the fetch.
        let spare = URLSession(configuration: .ephemeral)
        defer { spare.invalidateAndCancel() }
        receiver.urlSession(session, dataTask: spare.dataTask(with: server.url), didReceive: Data(count: 11))
        do {
            _ = try await fetched
            XCTFail("data over the limit was taken")
        } catch {
            XCTAssertTrue("\(error)".contains("over the limit of 10"), "\(error)")
        }
        XCTAssertFalse(answered.withLock { $0 }, "the fetch ended only when the server answered")
    }

    func testA304WithNothingStagedIsAnError() async throws {
        let server = try LoopbackServer { _ in .init(status: 304) }
        defer { server.stop() }
        let subject = delivery(scratchFolder("bounds"))
        do {
            _ = try await subject.fetch(from: server.url)
            XCTFail("a 304 with nothing staged was taken as not modified")
        } catch {
            XCTAssertTrue("\(error)".contains("no rules are staged"), "\(error)")
        }
        XCTAssertFalse(server.requestHeaders.first?.lowercased().contains("if-none-match") ?? true)
    }

    /// A redirect to another host is refused unless allowed; one to the same host is followed.
    func testRedirectsToAnotherHostAreRefusedUnlessAllowed() async throws {
        let body = sealed(rules)
        let target = try LoopbackServer { _ in .init(status: 200, headers: ["ETag": "\"v9\""], body: body) }
        defer { target.stop() }
        let other = "http://localhost:\(target.port)/rules"
        let server = try LoopbackServer { _ in .init(status: 302, headers: ["Location": other]) }
        defer { server.stop() }
        let subject = delivery(scratchFolder("bounds"))
        do {
            _ = try await subject.fetch(from: server.url)
            XCTFail("a redirect to another host was followed")
        } catch {
            XCTAssertTrue("\(error)".contains("a redirect to another host ('localhost') was refused"), "\(error)")
        }
        XCTAssertNil(subject.stagedVersion)
        let result = try await subject.fetch(from: server.url, redirectsToOtherHosts: true)
        XCTAssertEqual(result, .staged(version: "\"v9\""))
    }

    /// A directory, a FIFO or a link to a device at the staged path: the bundled rules run,
    /// `lastProblem` names it, nothing hangs, and the next staging replaces it.
    func testSomethingElseAtTheStagedPathFallsBackAndNeverBlocksStaging() throws {
        for kind in ["directory", "fifo", "device"] {
            let directory = scratchFolder("bounds")
            let subject = delivery(directory)
            switch kind {
            case "directory":
                try FileManager.default.createDirectory(at: subject.stagedURL, withIntermediateDirectories: true)
            case "fifo": XCTAssertEqual(mkfifo(subject.stagedURL.path, 0o644), 0)
            default:
                try FileManager.default.createSymbolicLink(
                    atPath: subject.stagedURL.path, withDestinationPath: "/dev/zero")
            }
            let engine = try subject.makeEngine(store: InMemoryStore(), clock: ManualClock())
            XCTAssertEqual(engine.activeRules?.origin, .bundled, kind)
            XCTAssertTrue(
                subject.lastProblem?.contains("is not a regular file") == true,
                "\(kind): \(subject.lastProblem ?? "nil")")
            XCTAssertNil(subject.stagedVersion)
            XCTAssertNoThrow(try subject.stage(Data(sealed("scenario Ask < min_events 2 >\n")), version: "v2"), kind)
            XCTAssertEqual(try subject.makeEngine(store: InMemoryStore()).activeRules?.origin, .delivered, kind)
            XCTAssertEqual(subject.stagedVersion, "v2", kind)
        }
    }

    /// A staged file over the limit (put there by something else) is refused unread.
    func testAStagedFileOverTheLimitIsNotRead() throws {
        let directory = scratchFolder("bounds")
        let subject = delivery(directory, limit: 1024)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(repeating: 0x23, count: 300 << 20).write(to: subject.stagedURL)
        let engine = try subject.makeEngine(store: InMemoryStore())
        XCTAssertEqual(engine.activeRules?.origin, .bundled)
        XCTAssertTrue(
            subject.lastProblem?.contains("the rules are 314572800 bytes, over the limit of 1024") == true,
            subject.lastProblem ?? "nil")
    }

    /// Stagings at once from several threads: every one succeeds, and the file left is whole,
    /// with its own version.
    func testConcurrentStagingsUseTheirOwnTemporaryFiles() throws {
        let directory = scratchFolder("bounds")
        let subject = delivery(directory)
        let files = (0..<2).map { Data(sealed("scenario Ask < min_events \($0 + 5) >\n")) }
        let failures = ErrorCount()
        DispatchQueue.concurrentPerform(iterations: 200) { k in
            do { try subject.stage(files[k % 2], version: "v\(k % 2)") } catch { failures.add("\(error)") }
        }
        XCTAssertEqual(failures.all, [])
        let staged = try Data(contentsOf: subject.stagedURL)
        let which = try XCTUnwrap(files.firstIndex(of: staged))
        XCTAssertEqual(subject.stagedVersion, "v\(which)")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
            $0.contains(".tmp")
        }
        XCTAssertEqual(leftovers, [])
    }
}

extension DeliveryBoundsTests {
    /// Two processes staging at once, over and over, killed at random: every staging they
    /// report returned, and the staged file left is whole and sealed.
    func testTwoProcessesStagingAtOnce() throws {
        let directory = scratchFolder("bounds")
        for cycle in 0..<6 {
            let children = try (0..<2).map { _ in try FixtureProcess(["stage-loop", directory.path]) }
            for child in children { XCTAssertGreaterThanOrEqual(child.readCounts(until: 10 + cycle), 10 + cycle) }
            for child in children { child.kill() }
            let data = try Data(contentsOf: directory.appendingPathComponent("delivered.rules"))
            XCTAssertNoThrow(try RuleDelivery.verifySeal([UInt8](data)), "cycle \(cycle)")
        }
        // What the killed ones left half written is removed by the next staging.
        try delivery(directory).stage(Data(sealed(rules)))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
            $0.contains(".tmp")
        }
        XCTAssertEqual(leftovers, [])
    }
}

final class ErrorCount: @unchecked Sendable {
    private let lock = NSLock()
    private var errors: [String] = []
    func add(_ error: String) { lock.withLock { errors.append(error) } }
    var all: [String] { lock.withLock { errors } }
}
