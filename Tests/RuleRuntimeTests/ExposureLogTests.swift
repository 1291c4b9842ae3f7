import Foundation
import RuleLang
import RuleRuntime
import TestSupport
import XCTest

/// Language 1.3's exposure log (grammar.md, "Exposures, once"): every execution and control
/// exposure, with a stable id, until the app acknowledges it; across engines on one state.
final class ExposureLogTests: XCTestCase {
    let rules = """
        # language 1.3
        scenario Rate < between 1m >
        scenario Banner < counts after 2s visible >
        scenario Held < holdout 99% "all" >
        """

    func testExposuresAreKeptUntilAcknowledgedAcrossEngines() throws {
        let clock = ManualClock()
        let url = temporaryURL("exposures.state")
        func store() -> FileStore { FileStore(url: url, options: .init(shared: true)) }
        var options = RuleEngine.Options()
        options.installID = "install-1"
        let engine = try RuleEngine(source: rules, store: store(), clock: clock, options: options)
        XCTAssertTrue(engine.tryToExecute("Rate"))
        XCTAssertEqual(engine.exposures(), [], "the log starts at its first drain")
        clock.advance(by: 60)
        XCTAssertTrue(engine.tryToExecute("Rate"))
        let banner = try XCTUnwrap(engine.present("Banner"))
        try engine.visible(banner)
        clock.advance(by: 1)
        XCTAssertEqual(engine.exposures().count, 1, "the banner has not counted yet")
        clock.advance(by: 1)
        let control = engine.isHeldOut("Held")
        _ = engine.tryToExecute("Held")
        let drained = engine.exposures()
        XCTAssertEqual(drained.map(\.scenario), ["Rate", "Banner", "Held"])
        XCTAssertEqual(drained.map(\.kind), [.execution, .execution, control ? .control : .execution])
        XCTAssertEqual(drained[1].time, clock.now(), "the moment the banner counted")
        XCTAssertEqual(Set(drained.map(\.id)).count, 3)
        XCTAssertEqual(drained.map(\.id), drained.map(\.id).sorted(), "ids sort in recorded order")
        XCTAssertEqual(engine.exposures(), drained, "leased to it: given again until acknowledged")
        // Another engine on the state (an extension's; a shared file) is not given them while
        // the lease lasts, then is, with the same ids (the first died before acknowledging).
        let other = try RuleEngine(source: rules, store: store(), clock: clock, options: options)
        XCTAssertEqual(other.exposures(), [])
        clock.advance(by: 60)
        XCTAssertEqual(other.exposures(), drained)
        XCTAssertEqual(engine.exposures(), [], "now the other's")
        other.acknowledge(Array(drained.prefix(2)))
        clock.advance(by: 60)
        XCTAssertEqual(engine.exposures(), [drained[2]])
        clock.advance(by: 60)
        let again = try RuleEngine(source: rules, store: store(), clock: clock, options: options)
        XCTAssertEqual(again.exposures(), [drained[2]], "stored: a relaunch delivers what was not acknowledged")
        again.acknowledge(drained)
        again.acknowledge(drained)  // twice: ignored
        XCTAssertEqual(again.exposures(), [])
        XCTAssertEqual(again.droppedExposures, 0)
    }

    func testTheLogIsBounded() throws {
        let clock = ManualClock()
        let engine = try RuleEngine(source: "# language 1.3\nscenario A < >\n", clock: clock)
        _ = engine.exposures()
        for _ in 0..<(RuleEngine.exposureLimit + 5) {
            XCTAssertTrue(engine.tryToExecute("A"))
            clock.advance(by: 0.001)
        }
        let pending = engine.exposures()
        XCTAssertEqual(pending.count, RuleEngine.exposureLimit)
        XCTAssertEqual(engine.droppedExposures, 5)
        XCTAssertEqual(Set(pending.map(\.id)).count, RuleEngine.exposureLimit)
        XCTAssertEqual(pending.map(\.id), pending.map(\.id).sorted())
        XCTAssertEqual(engine.executions(of: "A"), RuleEngine.exposureLimit + 5)
    }
}
