import Foundation
import XCTest

@testable import RuleRuntime

/// Sessions and versions when an app and its extensions share a state file: only the app
/// begins them; and stored ids that cannot grow are re-based.
final class SessionOwnerTests: XCTestCase {
    let rules = """
        scenario WhatsNew < max_exec 1 per version >
        scenario Daily < max_exec 1 per session >
        scenario Welcome < when upgraded; max_exec 1 >
        scenario Tapped < on tap; min_events 3 per session >
        """

    /// A week of launches, the app's and the widget's in turn (the widget with a version string
    /// of its own): each is a new engine on the shared file, as a new process would be.
    func testAppAndWidgetLaunchesOverAWeek() throws {
        let url = temporaryURL("week.state")
        defer { removeFolder(of: url) }
        let clock = ManualClock()
        func launch(_ role: ProcessRole, version: String) throws -> RuleEngine {
            let engine = try RuleEngine(
                source: rules, store: FileStore(url: url, options: .init(shared: true)), clock: clock,
                options: .init(role: role))
            engine.startSession(version: version)
            return engine
        }
        var whatsNew = 0
        var welcome = 0
        for day in 0..<7 {
            let version = day < 4 ? "1.0" : "1.1"
            for launchOfDay in 0..<3 {
                clock.advance(by: 3 * 3600)
                let app = try launch(.app, version: version)
                if app.tryToExecute("WhatsNew") { whatsNew += 1 }
                if app.tryToExecute("Welcome") { welcome += 1 }
                XCTAssertTrue(app.tryToExecute("Daily"), "day \(day) launch \(launchOfDay): a new app session")
                clock.advance(by: 600)
                // The widget, launched while the app's session runs, joins it.
                let widget = try launch(.appExtension, version: "widget-\(day)-\(launchOfDay)")
                XCTAssertEqual(widget.currentVersion, version)
                XCTAssertFalse(widget.tryToExecute("WhatsNew"))
                XCTAssertFalse(widget.tryToExecute("Daily"), "the app's session: its cap holds")
                XCTAssertEqual(try widget.check("upgraded"), day >= 4)
                // Taps in the widget count in the app's session.
                widget.trigger("tap")
                widget.trigger("tap")
                app.trigger("tap")
                XCTAssertTrue(app.canExecute("Tapped"))
                XCTAssertEqual(app.count(Event("tap"), scope: .session), 3)
            }
            XCTAssertEqual(whatsNew, day < 4 ? 1 : 2, "day \(day): once per version")
            XCTAssertEqual(welcome, day < 4 ? 0 : 1, "day \(day): after the upgrade only")
        }
    }

    /// Stored session and version ids at `Int64.max`, or negative: re-based at the next session
    /// so that `per session` and `per version` work again, keeping the current version's count.
    func testSaturatedAndNegativeIdsAreRebased() throws {
        for extreme: Int64 in [.max, .max - 1, -5] {
            let url = temporaryURL("ids.state")
            defer { removeFolder(of: url) }
            let store = FileStore(url: url)
            var meta = SessionMeta()
            meta.sessionID = extreme
            meta.versionID = extreme
            meta.version = "1.0"
            meta.firstVersion = "1.0"
            try store.apply([EngineState.change(meta: meta)])
            let engine = try RuleEngine(source: rules, store: store)
            // Shown in the stored version, before any session of this launch.
            XCTAssertTrue(engine.tryToExecute("WhatsNew"), "\(extreme)")
            for session in 0..<3 {
                engine.startSession(version: "1.0")
                XCTAssertTrue(engine.tryToExecute("Daily"), "\(extreme): session \(session)")
                XCTAssertFalse(engine.tryToExecute("Daily"), "\(extreme): session \(session)")
                XCTAssertFalse(engine.tryToExecute("WhatsNew"), "\(extreme): the same version")
            }
            engine.startSession(version: "2.0")
            XCTAssertTrue(engine.tryToExecute("WhatsNew"), "\(extreme)")
            XCTAssertTrue(engine.tryToExecute("Daily"), "\(extreme)")
            XCTAssertNil(engine.lastStoreError)
        }
    }
}
