import Foundation
import TestSupport
import XCTest

@testable import RuleRuntime

#if canImport(Observation)
    import Observation

    /// ``ScenarioStatus``: SwiftUI's Observation over the engine's updates, time included.
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    final class ScenarioStatusTests: XCTestCase {
        func testTheStatusFollowsCallsAndTimeAndIsReleasedWithItsView() throws {
            let (engine, clock) = try makeEngine("scenario Ask < min_events 2; between 1d; max_exec 5 >")
            var status: ScenarioStatus? = engine.status(of: "Ask")
            XCTAssertEqual(status?.isEligible, false)
            XCTAssertEqual(status?.explanation.reason, "min_events 2: 0 so far")
            let changes = Locked(0)
            func track() {
                withObservationTracking {
                    _ = status?.isEligible
                } onChange: {
                    changes.withValue { $0 += 1 }
                }
            }
            track()
            engine.trigger("Ask")
            XCTAssertEqual(changes.withValue { $0 }, 0, "still not eligible: isEligible did not change")
            XCTAssertEqual(status?.explanation.reason, "min_events 2: 1 so far", "the explanation follows")
            engine.trigger("Ask")
            XCTAssertEqual(changes.withValue { $0 }, 1)
            XCTAssertEqual(status?.isEligible, true)
            track()
            XCTAssertTrue(engine.tryToExecute("Ask"))
            XCTAssertEqual(status?.isEligible, false)
            XCTAssertEqual(changes.withValue { $0 }, 2)
            // Time alone: the engine's wake-up at the end of `between` updates it, with no call.
            track()
            clock.advance(by: 86_400)
            XCTAssertEqual(status?.isEligible, true)
            XCTAssertEqual(changes.withValue { $0 }, 3)
            XCTAssertEqual(engine.locked { $0.hooks.observers.count }, 1)
            status = nil
            XCTAssertEqual(engine.locked { $0.hooks.observers.count }, 0, "released with its view")
        }

        /// A presentation holds its group's statuses: off while it shows, on again when it is
        /// finished, or when it expires by time alone.
        func testAPresentationShowsInTheStatusOfItsGroup() throws {
            let clock = ManualClock()
            var options = RuleEngine.Options()
            options.presentationTimeout = 600
            let engine = try RuleEngine(
                source: "# language 1.2\ngroup P < > {\n    scenario A < >\n    scenario B < >\n}\n", clock: clock,
                options: options)
            let status = engine.status(of: "B")
            XCTAssertTrue(status.isEligible)
            let shown = try XCTUnwrap(engine.present("A"))
            XCTAssertFalse(status.isEligible)
            XCTAssertTrue(status.explanation.reason.hasPrefix("showing: A is showing"), status.explanation.reason)
            try engine.finish(shown, .dismissed)
            XCTAssertTrue(status.isEligible)
            _ = try XCTUnwrap(engine.present("A"))
            XCTAssertFalse(status.isEligible)
            clock.advance(by: 600)
            XCTAssertTrue(status.isEligible, "expired: the wake-up at its end updates the status")
        }

        /// Read on one thread while another thread's calls change it (run under ThreadSanitizer
        /// in CI: the `@Observable` form stored its properties unguarded).
        func testReadWhileAnotherThreadChangesIt() throws {
            let (engine, clock) = try makeEngine("scenario Ask < min_events 2; between 1h >")
            let status = engine.status(of: "Ask")
            let done = Locked(false)
            let writer = Thread {
                for _ in 0..<500 {
                    engine.trigger("Ask")
                    _ = engine.tryToExecute("Ask")
                    clock.advance(by: 1_800)
                }
                done.withValue { $0 = true }
            }
            writer.start()
            var reads = 0
            while !done.withValue({ $0 }) || reads == 0 {
                _ = status.isEligible
                _ = status.explanation.reason
                reads += 1
            }
            XCTAssertGreaterThan(reads, 0)
            XCTAssertEqual(status.isEligible, engine.canExecute("Ask"), "it ends where the engine is")
        }

        func testAnUnknownScenarioIsNotEligibleUntilASwapBringsIt() throws {
            let (engine, _) = try makeEngine("scenario A < min_events 1 >")
            let status = engine.status(of: "B")
            XCTAssertFalse(status.isEligible)
            XCTAssertFalse(status.explanation.isKnown)
            try engine.replaceRules(source: "scenario A < min_events 1 >\nscenario B < >")
            XCTAssertTrue(status.isEligible)
        }
    }
#endif
