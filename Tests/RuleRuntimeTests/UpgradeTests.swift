import Foundation
import RuleLang
import TestSupport
import XCTest

@testable import RuleRuntime

/// The built-in `upgraded`: a fresh install is not an upgrade; a later version is.
final class UpgradeTests: XCTestCase {
    let rules = """
        event launch
        scenario WhatsNew < when upgraded; max_exec 1 per version >
        scenario Welcome < when not upgraded; max_exec 1 >
        """

    func testAFreshInstallIsNotAnUpgradeAndALaterVersionIs() throws {
        let store = InMemoryStore()
        let clock = ManualClock(Date(timeIntervalSince1970: 1_000_000))
        var engine = try RuleEngine(source: rules, store: store, clock: clock)
        XCTAssertNil(engine.firstVersion)
        XCTAssertFalse(engine.canExecute("WhatsNew"), "before any session")
        engine.startSession(version: "1.0")
        XCTAssertEqual(engine.firstVersion, "1.0")
        XCTAssertFalse(engine.tryToExecute("WhatsNew"), "first launch of a fresh install")
        XCTAssertTrue(engine.tryToExecute("Welcome"))
        engine.startSession(version: "1.0")
        XCTAssertFalse(engine.tryToExecute("WhatsNew"), "second launch of a fresh install")
        // The app is updated: a new engine on the same store, as at the next launch.
        engine = try RuleEngine(source: rules, store: store, clock: clock)
        engine.startSession(version: "1.1")
        XCTAssertEqual(engine.firstVersion, "1.0")
        XCTAssertTrue(engine.tryToExecute("WhatsNew"))
        XCTAssertFalse(engine.tryToExecute("WhatsNew"), "once per version")
        engine.startSession(version: "1.2")
        XCTAssertTrue(engine.tryToExecute("WhatsNew"))
        XCTAssertTrue(try engine.check("upgraded"))
    }

    func testStateFromBeforeTheFirstVersionWasRecordedTakesTheVersionItLastSaw() throws {
        // A version-1 state entry: the session meta without the first version.
        var meta = SessionMeta()
        meta.sessionID = 3
        meta.versionID = 1
        meta.version = "2.0"
        let store = InMemoryStore()
        try store.apply([EngineState.change(meta: meta)])
        let engine = try RuleEngine(source: rules, store: store)
        engine.startSession(version: "2.0")
        XCTAssertEqual(engine.firstVersion, "2.0")
        XCTAssertFalse(engine.canExecute("WhatsNew"))
        engine.startSession(version: "2.1")
        XCTAssertTrue(engine.canExecute("WhatsNew"))
    }

    func testTheFirstVersionSurvivesAFileStore() throws {
        TemporaryFiles.watch()
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("upgrade-\(UUID()).state")
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        do {
            let engine = try RuleEngine(source: rules, store: FileStore(url: url))
            engine.startSession(version: "3.0")
        }
        let engine = try RuleEngine(source: rules, store: FileStore(url: url))
        XCTAssertEqual(engine.firstVersion, "3.0")
        engine.startSession(version: "3.1")
        XCTAssertTrue(engine.canExecute("WhatsNew"))
    }

    func testADeclaredParamShadowsTheBuiltIn() throws {
        let engine = try RuleEngine(source: "param upgraded: bool = true\nscenario A < when upgraded >")
        engine.startSession(version: "1.0")
        XCTAssertTrue(engine.canExecute("A"))
        XCTAssertFalse(RuleCompiler.check(text: "scenario A < when upgraded and upgraded >").hasErrors)
        XCTAssertEqual(
            RuleCompiler.check(text: "scenario A < when upgraded == 1 >").diagnostics.map(\.id), [.typeMismatch])
    }
}
