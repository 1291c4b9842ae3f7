import Foundation
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
