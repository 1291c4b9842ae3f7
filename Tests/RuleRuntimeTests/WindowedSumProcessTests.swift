import Foundation
import TestSupport
import XCTest

@testable import RuleRuntime

/// Windowed sums (`sum(EVENT.PROPERTY within D)`) over one shared file written by several
/// processes, and over a file something else deletes: each trigger's units are its time kept
/// as many times as its value (at most the number compared with, and one), so every process
/// answers from the same list of units.
final class WindowedSumProcessTests: XCTestCase {
    let rules = """
        # language 1.2
        event purchase(amount: int, plan: string)
        scenario Big < when sum(purchase.amount within 2d) >= 50 >
        scenario Pro < when sum(purchase.amount where plan == "pro" within 1d) >= 30 >
        """

    /// The answers of a list of the triggers, at `now`.
    private func expected(_ triggers: [(time: Double, amount: Int64, pro: Bool)], now: Double) -> [String: Bool] {
        func sum(within seconds: Double, proOnly: Bool) -> Int64 {
            triggers.filter { now - $0.time < seconds && (!proOnly || $0.pro) }.reduce(0) { $0 + $1.amount }
        }
        return ["Big": sum(within: 2 * 86_400, proOnly: false) >= 50, "Pro": sum(within: 86_400, proOnly: true) >= 30]
    }

    /// Two child processes and this one trigger purchases on one shared file (the children
    /// compact it every 2 KiB) at times moving on by up to 10 hours; after each, every process
    /// answers both scenarios as the list of the triggers does.
    func testProcessesOnOneFileAnswerAsTheListOfTheirTriggers() throws {
        let url = temporaryURL("sums.state")
        defer { removeFolder(of: url) }
        let rulesFile = url.deletingLastPathComponent().appendingPathComponent("sums.rules")
        try rules.write(to: rulesFile, atomically: true, encoding: .utf8)
        let children = try (0..<2).map { _ in try FixtureProcess(["serve", url.path, rulesFile.path], input: true) }
        defer { for child in children { child.input?.closeFile() } }
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let here = try RuleEngine(source: rules, store: FileStore(url: url, options: .init(shared: true)), clock: clock)
        var random = SeededGenerator(seed: 2_026)
        var triggers: [(time: Double, amount: Int64, pro: Bool)] = []
        var seen: [String: Set<Bool>] = [:]
        var now = 1_800_000_000.0
        for step in 0..<200 {
            now += Double(Int.random(in: 0...36_000, using: &random))
            clock.set(Date(timeIntervalSince1970: now))
            let amount = [Int64(0), 1, 4, 9, 15, 30, 49, 60, -3].randomElement(using: &random)!
            let pro = Bool.random(using: &random)
            let plan = pro ? "pro" : "free"
            let who = Int.random(in: 0...2, using: &random)
            if who == 2 {
                here.trigger("purchase", properties: ["amount": .int(amount), "plan": .string(plan)])
            } else {
                // The fixture's `p` takes int properties only, so a child's purchase has no
                // plan: it counts in every sum, and never passes `plan == "pro"`.
                children[who].send("\(Int(now)) p purchase amount=\(amount)")
                XCTAssertEqual(children[who].readLine(), "ok")
            }
            if amount > 0 { triggers.append((now, amount, pro && who == 2)) }
            let answers = expected(triggers, now: now)
            for (scenario, answer) in answers {
                XCTAssertEqual(here.canExecute(Scenario(scenario)), answer, "step \(step): \(scenario), this process")
                for (k, child) in children.enumerated() {
                    child.send("\(Int(now)) c \(scenario)")
                    XCTAssertEqual(child.readLine(), "\(answer)", "step \(step): \(scenario), child \(k)")
                }
                seen[scenario, default: []].insert(answer)
            }
        }
        XCTAssertEqual(seen.values.map(\.count), [2, 2], "both answers for each: \(seen)")
    }

    /// The shared file deleted under two engines between their triggers: the one that writes it
    /// again keeps every unit, and a fresh engine answers as the list does.
    func testAFileDeletedUnderTwoEnginesKeepsEveryUnit() throws {
        let url = temporaryURL("sums-deleted.state")
        defer { removeFolder(of: url) }
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let engines = try (0..<2).map { _ in
            try RuleEngine(source: rules, store: FileStore(url: url, options: .init(shared: true)), clock: clock)
        }
        var triggers: [(time: Double, amount: Int64, pro: Bool)] = []
        var now = 1_800_000_000.0
        for step in 0..<12 {
            now += 3_600
            clock.set(Date(timeIntervalSince1970: now))
            let amount: Int64 = step % 3 == 0 ? 20 : 7
            engines[step % 2].trigger("purchase", properties: ["amount": .int(amount), "plan": "pro"])
            triggers.append((now, amount, true))
            if step == 5 { try FileManager.default.removeItem(at: url) }
        }
        for engine in engines { engine.prepareForSuspension() }
        let fresh = try RuleEngine(
            source: rules, store: FileStore(url: url, options: .init(shared: true)), clock: clock)
        let answers = expected(triggers, now: now)
        XCTAssertEqual(answers, ["Big": true, "Pro": true])
        for (scenario, answer) in answers {
            XCTAssertEqual(fresh.canExecute(Scenario(scenario)), answer, scenario)
            for engine in engines { XCTAssertEqual(engine.canExecute(Scenario(scenario)), answer, scenario) }
        }
        // Moved on past the day: only the last day's pro purchases count.
        now += 20 * 3_600
        clock.set(Date(timeIntervalSince1970: now))
        let later = expected(triggers, now: now)
        for (scenario, answer) in later {
            XCTAssertEqual(fresh.canExecute(Scenario(scenario)), answer, "later: \(scenario)")
        }
    }
}
