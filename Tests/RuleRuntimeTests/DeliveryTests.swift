import Foundation
import RuleLang
import TestSupport
import XCTest

@testable import RuleRuntime

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Rules delivered after release: refused with a reason, staged whole, activated, fallen back from.
final class DeliveryTests: XCTestCase {
    let bundledText =
        "event launch\nscenario Ask < on launch; min_events 3 >\nscenario Rate < on launch; min_events 9 >\n"
    let nextText =
        "# language 1.1\nevent open was launch\nscenario Ask < on open; min_events 2 >\nscenario Rate < on open; min_events 9 >\n"

    func folder() -> URL { scratchFolder("rules-delivery") }

    func delivery(_ directory: URL, integrity: (@Sendable (Data) -> Bool)? = nil, limit: Int = 4096) -> RuleDelivery {
        let bundled = [SourceFile(path: "app.rules", text: bundledText)]
        let required = [
            RequiredName(.scenario, "Ask", declaredAt: "app.rules:2"),
            RequiredName(.scenario, "Rate", declaredAt: "app.rules:3"),
        ]
        return RuleDelivery(
            directory: directory, bundled: bundled, requiredNames: required, maximumSize: limit,
            integrityCheck: integrity)
    }

    func sealed(_ text: String) -> Data { Data(RuleDelivery.seal(Array(text.utf8))) }

    func testEachBadInputIsRefusedWithItsReasonAndNothingIsStaged() throws {
        let directory = folder()
        let subject = delivery(directory, integrity: { !$0.starts(with: Array("# tampered".utf8)) })
        let good = sealed(nextText)
        let cases: [(Data, String)] = [
            (Data(repeating: UInt8(ascii: "#"), count: 5000), "over the limit of 4096"),
            (Data([0x23, 0x20, 0xFF, 0x0A]), "not UTF-8 (byte 2)"),
            (sealed("# tampered\n" + nextText), "integrity check refused"),
            (Data(nextText.utf8), "no '# sealed crc32=... bytes=...' last line"),
            (good.prefix(good.count - 30) + Data("\n".utf8), "incomplete"),
            (Data(good[0..<40]) + Data(good[60...]), "the seal says"),
            (sealed("# language 1.9\nscenario Ask < min_events 1 >\n"), "needs rules language 1.9"),
            (sealed("scenario Ask < min_event 1 >\nscenario Rate < min_events 1 >\n"), "unknown clause 'min_event'"),
            (sealed("scenario Ask < min_events 1 >\n"), "scenario 'Rate' (used by the app, declared at app.rules:3)"),
        ]
        for (data, reason) in cases {
            XCTAssertThrowsError(try subject.stage(data, version: "x")) { error in
                XCTAssertTrue("\(error)".contains(reason), "\(error) should say \(reason)")
            }
            XCTAssertFalse(FileManager.default.fileExists(atPath: subject.stagedURL.path), reason)
        }
        XCTAssertEqual(subject.rulesForLaunch().origin, .bundled)
        XCTAssertNil(subject.lastProblem, "no staged file is not a problem")
    }

    func testStagedRulesBecomeActiveAtTheNextLaunchWithTheirHistory() throws {
        let directory = folder()
        let store = InMemoryStore()
        let clock = ManualClock()
        var engine = try delivery(directory).makeEngine(store: store, clock: clock)
        XCTAssertEqual(engine.activeRules?.origin, .bundled)
        engine.trigger("launch")
        engine.trigger("launch")
        try delivery(directory).stage(sealed(nextText), version: "v2")
        XCTAssertFalse(engine.canExecute("Ask"), "not active before the next launch")
        engine = try delivery(directory).makeEngine(store: store, clock: clock)
        XCTAssertEqual(engine.activeRules?.origin, .delivered)
        XCTAssertEqual(engine.activeRules?.version, "v2")
        XCTAssertEqual(engine.activeRules?.language, LanguageVersion(1, 1))
        XCTAssertTrue(engine.canExecute("Ask"), "the renamed event's history counts under the new rules")
        XCTAssertEqual(engine.count("open"), 2)
        let stored = try StateSnapshot(entries: store.load()).activeRules ?? ""
        XCTAssertTrue(
            stored.hasPrefix("delivered ") && stored.contains("version v2"), "rulec state shows it: \(stored)")
    }

    /// The active rules are recorded when they change, not at every launch.
    func testTheActiveRulesAreWrittenOnlyWhenTheyChange() throws {
        let directory = folder()
        let store = EnginePromisesTests.CountingStore()
        _ = try delivery(directory).makeEngine(store: store, clock: ManualClock())
        let first = store.writes
        XCTAssertEqual(try StateSnapshot(entries: store.load()).activeRules?.hasPrefix("bundled "), true)
        _ = try delivery(directory).makeEngine(store: store, clock: ManualClock())
        XCTAssertEqual(store.writes, first, "the same rules again: nothing written")
        try delivery(directory).stage(sealed(nextText), version: "v2")
        _ = try delivery(directory).makeEngine(store: store, clock: ManualClock())
        XCTAssertEqual(store.writes, first + 1, "the new rules: one record")
        XCTAssertEqual(try StateSnapshot(entries: store.load()).activeRules?.hasPrefix("delivered "), true)
    }

    func testActivatingAtOnceSwapsTheRunningEngine() throws {
        let directory = folder()
        let subject = delivery(directory)
        let engine = try subject.makeEngine(store: InMemoryStore(), clock: ManualClock())
        engine.trigger("launch")
        engine.trigger("launch")
        XCTAssertFalse(engine.canExecute("Ask"))
        try subject.stage(sealed(nextText), version: "v2", activatingIn: engine)
        XCTAssertTrue(engine.canExecute("Ask"))
        XCTAssertEqual(engine.activeRules?.origin, .delivered)
        XCTAssertTrue(engine.activeRules?.description.hasPrefix("delivered ") == true)
        let logged = Locked<[Decision]>([])
        engine.decisionHandler = { decision in logged.withValue { $0.append(decision) } }
        _ = engine.canExecute("Ask")
        XCTAssertTrue(
            logged.withValue { $0.first?.rules?.contains("delivered") } == true, "the decision log names the rules")
        XCTAssertTrue(logged.withValue { $0.first?.rules?.contains("version v2") } == true)
    }

    func testAStagedFileDamagedOrDeletedBetweenLaunchesFallsBackToTheBundledRules() throws {
        let directory = folder()
        let subject = delivery(directory)
        try subject.stage(sealed(nextText), version: "v2")
        var bytes = try Data(contentsOf: subject.stagedURL)
        bytes[bytes.count / 2] ^= 0x20
        try bytes.write(to: subject.stagedURL)
        let store = InMemoryStore()
        var engine = try subject.makeEngine(store: store, clock: ManualClock())
        XCTAssertEqual(engine.activeRules?.origin, .bundled)
        XCTAssertTrue(subject.lastProblem?.contains("the seal says") == true, "\(subject.lastProblem ?? "nil")")
        try FileManager.default.removeItem(at: subject.stagedURL)
        engine = try subject.makeEngine(store: store, clock: ManualClock())
        XCTAssertEqual(engine.activeRules?.origin, .bundled)
        XCTAssertNil(subject.lastProblem)
        // A version file left without its rules (a kill between the two writes) names nothing.
        XCTAssertNil(subject.stagedVersion)
    }

    func testSealRoundTripsAndReplacesAnOldSeal() throws {
        let once = RuleDelivery.seal(Array("scenario A < min_events 1 >".utf8))
        XCTAssertNoThrow(try RuleDelivery.verifySeal(once))
        XCTAssertEqual(RuleDelivery.seal(once), once)
        XCTAssertEqual(RuleCompiler.check([SourceFile(path: "s", bytes: once)]).diagnostics.count, 0, "a comment")
    }

    /// A delivered file with two seal lines is refused, naming them: an older seal left in the
    /// middle (a sealed file edited and sealed by hand) would let a download cut right after it
    /// pass as the older rules.
    func testMoreThanOneSealLineIsRefused() throws {
        let older = RuleDelivery.seal(Array("scenario A < min_events 1 >\n".utf8))
        var twice = older + Array("scenario B < min_events 2 >\n".utf8)
        let body = twice
        twice += Array("# sealed crc32=\(CRC32.hex(of: [body[...]])) bytes=\(body.count)\n".utf8)
        XCTAssertThrowsError(try RuleDelivery.verifySeal(twice)) {
            XCTAssertTrue("\($0)".contains("2 seal lines (lines 2, 4)"), "\($0)")
        }
        XCTAssertThrowsError(try delivery(folder()).stage(Data(twice)))
        // Sealing it again leaves one, last, which passes.
        let resealed = RuleDelivery.seal(twice)
        XCTAssertEqual(RuleDelivery.sealLines(resealed), [3])
        XCTAssertNoThrow(try RuleDelivery.verifySeal(resealed))
    }

    /// A process killed at any moment while staging leaves the old staged file or the new one, whole.
    func testKillsWhileStagingLeaveAWholeFile() throws {
        let directory = folder()
        var generator = SeededGenerator(seed: 0xDE11)
        for cycle in 0..<20 {
            let child = try FixtureProcess(["stage-loop", directory.path])
            _ = child.readCounts(until: Int.random(in: 1...30, using: &generator))
            child.kill()
            let data = try Data(contentsOf: directory.appendingPathComponent("delivered.rules"))
            XCTAssertNoThrow(try RuleDelivery.verifySeal([UInt8](data)), "cycle \(cycle)")
        }
    }

    // MARK: - Fetching

    func testFetchUsesAConditionalGetAndStagesOnlyWholeRules() async throws {
        let directory = folder()
        let subject = delivery(directory)
        let body = sealed(nextText)
        let server = try LoopbackServer { request in
            if request.contains("/cut") {
                return .init(status: 200, headers: ["ETag": "\"v3\""], body: [UInt8](body.prefix(body.count - 10)))
            }
            if request.lowercased().contains("if-none-match: \"v2\"") { return .init(status: 304) }
            return .init(status: 200, headers: ["ETag": "\"v2\""], body: [UInt8](body))
        }
        defer { server.stop() }
        let url = URL(string: "http://127.0.0.1:\(server.port)/rules")!
        let first = try await subject.fetch(from: url)
        XCTAssertEqual(first, .staged(version: "\"v2\""))
        let second = try await subject.fetch(from: url)
        XCTAssertEqual(second, .notModified)
        do {
            _ = try await subject.fetch(from: URL(string: "http://127.0.0.1:\(server.port)/cut")!)
            XCTFail("a cut body is refused")
        } catch {
            XCTAssertTrue("\(error)".contains("incomplete"), "\(error)")
        }
        XCTAssertEqual(subject.stagedVersion, "\"v2\"", "the last good rules stay staged")
        XCTAssertEqual(server.requestHeaders.count, 3)
    }
}
