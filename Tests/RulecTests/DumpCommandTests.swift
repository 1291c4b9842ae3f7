import Foundation
import XCTest

/// `rulec dump --json`: the checked program as one JSON document.
final class DumpCommandTests: XCTestCase {
    /// Language 1.2: an `after` clause's outcome and wait, a call's outcome, the engine's `crash`.
    func testOutcomesAndTheEnginesStreamsAreDumped() throws {
        let result = try RulecBinary.run(["dump", "--json", "examples/prompts/review.rules"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let document = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let scenarios = try XCTUnwrap(document["scenarios"] as? [[String: Any]])
        let clauses = try XCTUnwrap(scenarios.first?["clauses"] as? [[String: Any]])
        let afters = clauses.filter { $0["keyword"] as? String == "after" }
        XCTAssertEqual(afters.map { $0["outcome"] as? String }, ["later", "declined", "accepted", "unknown"])
        XCTAssertEqual(afters[0]["seconds"] as? Int, 604_800)
        XCTAssertEqual(afters[1]["scope"] as? [String: String], ["kind": "version"])
        XCTAssertEqual(afters[2]["scope"] as? [String: String], ["kind": "install"])
        let when = try XCTUnwrap(clauses.first { $0["keyword"] as? String == "when" }?["condition"] as? [String: Any])
        let call = try XCTUnwrap(when["left"] as? [String: Any])
        XCTAssertEqual(call["argument"] as? String, "@crash")
        XCTAssertTrue(call["outcome"] is NSNull)
    }

    /// Language 1.2: `min_events N where FILTER`, its filter typed over the `on` event's properties.
    func testAFilteredMinEventsIsDumpedWithItsTypedFilter() throws {
        let result = try RulecBinary.run(["dump", "--json", "examples/offers/purchase.rules"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let document = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let scenarios = try XCTUnwrap(document["scenarios"] as? [[String: Any]])
        let thanks = try XCTUnwrap(scenarios.first { $0["name"] as? String == "ProThanks" })
        let clause = try XCTUnwrap(
            (thanks["clauses"] as? [[String: Any]])?.first { $0["keyword"] as? String == "min_events" })
        XCTAssertEqual(clause["value"] as? Int, 3)
        let scope = try XCTUnwrap(clause["scope"] as? [String: Any])
        XCTAssertEqual(scope["kind"] as? String, "within")
        XCTAssertEqual(scope["seconds"] as? Int, 2_592_000)
        let filter = try XCTUnwrap(clause["filter"] as? [String: Any])
        XCTAssertEqual(filter["operator"] as? String, "and")
        let plan = try XCTUnwrap((filter["left"] as? [String: Any])?["left"] as? [String: Any])
        XCTAssertEqual(plan["kind"] as? String, "property")
        XCTAssertEqual(plan["type"] as? String, "string")
    }

    func testAppRulesDumpHasEveryDeclarationWithTypesAndRanges() throws {
        let result = try RulecBinary.run(["dump", "--json", "examples/app.rules"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let document = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(document["version"] as? Int, 1)
        XCTAssertEqual(document["files"] as? [String], ["examples/app.rules"])
        let events = try XCTUnwrap(document["events"] as? [[String: Any]]).map { $0["name"] as? String }
        XCTAssertEqual(events, ["launch", "article_read", "shared", "purchase completed", "sale banner"])
        let params = try XCTUnwrap(document["params"] as? [[String: Any]])
        XCTAssertEqual(params.map { $0["type"] as? String }, ["bool", "string", "int", "duration"])
        let plan = try XCTUnwrap(params.first { $0["name"] as? String == "plan" })
        XCTAssertEqual((plan["default"] as? [String: Any])?["value"] as? String, "free")
        let scenarios = try XCTUnwrap(document["scenarios"] as? [[String: Any]])
        XCTAssertEqual(scenarios.count, 8)
        let rate = try XCTUnwrap(scenarios.first { $0["name"] as? String == "RateApp" })
        XCTAssertEqual(rate["group"] as? String, "Prompts")
        let clauses = try XCTUnwrap(rate["clauses"] as? [[String: Any]])
        XCTAssertEqual(clauses[0]["keyword"] as? String, "on")
        XCTAssertEqual(clauses[0]["events"] as? [String], ["launch", "purchase completed"])
        XCTAssertEqual(clauses[2]["keyword"] as? String, "min_events")
        XCTAssertEqual(clauses[2]["scope"] as? [String: String], ["kind": "session"])
        XCTAssertEqual(clauses[4]["seconds"] as? Int, 129_600)
        let range = try XCTUnwrap(clauses[0]["range"] as? [String: String])
        XCTAssertEqual(range["start"], "27:9")
        let when = try XCTUnwrap(clauses.first { $0["keyword"] as? String == "when" }?["condition"] as? [String: Any])
        XCTAssertEqual(when["kind"] as? String, "or")
        XCTAssertEqual(when["type"] as? String, "bool")
        let left = try XCTUnwrap(when["left"] as? [String: Any])
        XCTAssertEqual(left["kind"] as? String, "compare")
        XCTAssertEqual((left["left"] as? [String: Any])?["type"] as? String, "int")
        XCTAssertEqual((left["left"] as? [String: Any])?["function"] as? String, "executions")
        let groups = try XCTUnwrap(document["groups"] as? [[String: Any]])
        XCTAssertEqual(groups.first?["members"] as? [String], ["Upgrade", "RateApp", "InviteFriends"])
    }

    func testErrorsStopItAndMisuseExits64() throws {
        let result = try RulecBinary.run(["dump", "--json", "examples/invalid/unknown_clause.rules"])
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(result.stdout, "")
        XCTAssertTrue(result.stderr.contains("error: unknown clause"), result.stderr)
        XCTAssertEqual(try RulecBinary.run(["dump", "examples/app.rules"]).status, 64)
        XCTAssertEqual(try RulecBinary.run(["dump", "--json"]).status, 64)
    }
}
