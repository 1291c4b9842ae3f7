import RuleLang
import RuleTimeline
import XCTest

/// The library form of `rulec simulate`, for apps' own tests.
final class TimelineRunnerTests: XCTestCase {
    let rules = SourceFile(
        path: "app.rules", text: "scenario Onboarding < on launch; max_exec 1 >\nscenario Ask < min_events 2 >")

    func testAppTestsReplayATimelineAndAssertTheAnswers() throws {
        let timeline = SourceFile(
            path: "t.timeline",
            text: "0 trigger launch\n0 try Onboarding\n1d try Onboarding\n2d trigger Ask\n2d try Ask\n")
        XCTAssertEqual(
            try TimelineRunner.replay(rules: [rules], timeline: timeline),
            ["0 Onboarding yes", "1d Onboarding no: max_exec 1: 1 so far", "2d Ask no: min_events 2: 1 so far"])
    }

    func testErrorsAreLocatedWithDistinctIDs() throws {
        let timeline = SourceFile(path: "t.timeline", text: "soon trigger launch\n0 tirgger launch\n")
        XCTAssertThrowsError(try TimelineRunner.replay(rules: [rules], timeline: timeline)) { error in
            let failure = error as? TimelineRunner.Failure
            XCTAssertEqual(failure?.diagnostics.map(\.id), [.invalidTime, .unknownStep])
            XCTAssertTrue("\(error)".contains("t.timeline:2:3: error: unknown step 'tirgger'"), "\(error)")
        }
    }
}
