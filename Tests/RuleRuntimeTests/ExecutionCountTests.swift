import Foundation
import RuleRuntime
import XCTest

/// `executions(of:scope:)`: a scenario's execution count, held to a plain list of executions
/// (time, session, version) and to the rule expression `executions(S ...)`.
final class ExecutionCountTests: XCTestCase {
    func testExecutionCountsMatchAPlainListInEveryScope() throws {
        let (engine, clock) = try makeEngine(
            "# language 1.1\nscenario S was Old < max_exec 1000 >\nscenario T < max_exec 1000 >")
        let start = clock.now()
        var executions: [(time: Double, session: Int, version: Int)] = []
        var session = 0
        var version = 0
        var seed: UInt64 = 42
        func random(_ bound: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(bound))
        }
        engine.startSession(version: "1")
        for _ in 0..<400 {
            clock.advance(by: TimeInterval(random(6 * 3_600)))
            switch random(10) {
            case 0:
                session += 1
                engine.startSession(version: "\(version + 1)")
            case 1:
                session += 1
                version += 1
                engine.startSession(version: "\(version + 1)")
            case 2, 3, 4:
                XCTAssertTrue(engine.tryToExecute(random(2) == 0 ? "S" : "Old"))
                executions.append((clock.now().timeIntervalSince(start), session, version))
            case 5:
                engine.recordExecution("T")
            default:
                break
            }
            let now = clock.now().timeIntervalSince(start)
            let day = executions.filter { now - $0.time < 86_400 }.count
            XCTAssertEqual(engine.executions(of: "S"), executions.count)
            XCTAssertEqual(engine.executions(of: "Old"), executions.count, "a former name answers")
            XCTAssertEqual(
                engine.executions(of: "S", scope: .version), executions.filter { $0.version == version }.count)
            XCTAssertEqual(
                engine.executions(of: "S", scope: .session), executions.filter { $0.session == session }.count)
            XCTAssertEqual(engine.executions(of: "S", scope: .within(86_400)), day)
            XCTAssertEqual(engine.executions(of: Scenario("S"), scope: .within(86_400)), day)
            XCTAssertTrue(try engine.check("executions(S within 1d) == \(day)"))
            XCTAssertTrue(
                try engine.check("executions(S per session) == \(engine.executions(of: "S", scope: .session))"))
        }
        XCTAssertGreaterThan(executions.count, 50)
    }

    func testAnUnknownScenarioCountsZeroAndIsListed() throws {
        let (engine, _) = try makeEngine("scenario S < max_exec 2 >")
        XCTAssertTrue(engine.tryToExecute("S"))
        XCTAssertEqual(engine.executions(of: "s"), 0)
        XCTAssertEqual(engine.executions(of: Scenario("Nope")), 0)
        XCTAssertEqual(Set(engine.unknownNames.map(\.name)), ["s", "Nope"])
    }
}
