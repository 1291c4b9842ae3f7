import Foundation
import RuleRuntime
import TestSupport
import XCTest

/// Typed event properties at run time: a trigger's properties feed the filtered streams the
/// rules read, checked against a plain list of the triggers and the filters written in Swift.
final class PropertyTests: XCTestCase {
    static let rules = """
        # language 1.2
        event purchase(amount: int, plan: string, trial: bool), launch
        scenario Big < on launch; when count(purchase where amount >= 10) >= 100 >
        scenario Pro < on launch; when count(purchase where plan == "pro" and not trial within 7d) >= 100 >
        scenario Other < on launch; when since_last(purchase where amount < 5 or plan != "pro") >= 1d >
        """

    /// A trigger as the model keeps it.
    struct Purchase {
        var time: Double
        var properties: [String: PropertyValue]
    }

    /// The filters, written from grammar.md: a property missing or of another type fails.
    static func big(_ p: [String: PropertyValue]) -> Bool {
        guard case .int(let amount)? = p["amount"] else { return false }
        return amount >= 10
    }
    static func pro(_ p: [String: PropertyValue]) -> Bool {
        guard case .string(let plan)? = p["plan"], case .bool(let trial)? = p["trial"] else { return false }
        return plan == "pro" && !trial
    }
    static func other(_ p: [String: PropertyValue]) -> Bool {
        guard case .int(let amount)? = p["amount"], case .string(let plan)? = p["plan"] else { return false }
        return amount < 5 || plan != "pro"
    }

    func testFilteredCountsMatchAListOfTheTriggers() throws {
        var random = SeededGenerator(seed: 2026)
        let (engine, clock) = try makeEngine(Self.rules)
        var purchases: [Purchase] = []
        let plans: [PropertyValue?] = [.string("pro"), .string("free"), .string("Pro"), nil, .int(3)]
        let amounts: [PropertyValue?] = [.int(0), .int(4), .int(5), .int(9), .int(10), .int(500), nil, .string("10")]
        let trials: [PropertyValue?] = [.bool(true), .bool(false), nil, .string("false")]
        for step in 0..<400 {
            clock.advance(by: Double(Int.random(in: 600...40_000, using: &random)))
            var properties: [String: PropertyValue] = [:]
            properties["amount"] = amounts.randomElement(using: &random)!
            properties["plan"] = plans.randomElement(using: &random)!
            properties["trial"] = trials.randomElement(using: &random)!
            if step % 7 == 0 { properties["coupon"] = .string("x") }  // undeclared: ignored
            if step % 11 == 0 {
                engine.trigger("purchase")  // no properties: the event only
                purchases.append(Purchase(time: clock.now().timeIntervalSince1970, properties: [:]))
            } else {
                engine.trigger("purchase", properties: properties)
                purchases.append(Purchase(time: clock.now().timeIntervalSince1970, properties: properties))
            }
            if step % 3 == 0 { engine.trigger("launch", properties: ["amount": 50]) }  // no filters of its own
            let now = clock.now().timeIntervalSince1970
            let big = purchases.filter { Self.big($0.properties) }.count
            let pro = purchases.filter { $0.time > now - 7 * 86_400 && Self.pro($0.properties) }.count
            let lastOther = purchases.last { Self.other($0.properties) }?.time
            XCTAssertEqual(engine.count("purchase"), purchases.count)
            XCTAssertTrue(try engine.check("count(purchase where amount >= 10) == \(big)"), "step \(step)")
            XCTAssertTrue(
                try engine.check("count(purchase where plan == \"pro\" and not trial within 7d) == \(pro)"),
                "step \(step)")
            if let lastOther {
                let seconds = Int(now - lastOther)
                XCTAssertTrue(
                    try engine.check("since_last(purchase where amount < 5 or plan != \"pro\") == \(seconds)s"),
                    "step \(step)")
            }
        }
        XCTAssertGreaterThan(purchases.filter { Self.big($0.properties) }.count, 50)
    }

    /// Filtered counts are stored: a new engine over the same store reads them, and a filter
    /// that a later rules file adds starts from nothing (no trigger's properties are kept).
    func testFilteredCountsAreStoredAndANewFilterStartsEmpty() throws {
        let store = InMemoryStore()
        let clock = ManualClock()
        do {
            let engine = try RuleEngine(source: Self.rules, store: store, clock: clock)
            for amount in [3, 12, 40, 7] { engine.trigger("purchase", properties: ["amount": .int(Int64(amount))]) }
        }
        let later = Self.rules + "\nscenario Huge < on launch; when count(purchase where amount >= 30) >= 1 >\n"
        let engine = try RuleEngine(source: later, store: store, clock: clock)
        XCTAssertTrue(try engine.check("count(purchase where amount >= 10) == 2"))
        XCTAssertTrue(try engine.check("count(purchase where amount >= 30) == 0"), "new: from nothing")
        XCTAssertFalse(engine.canExecute("Huge"))
        engine.trigger("purchase", properties: ["amount": 31])
        XCTAssertTrue(engine.canExecute("Huge"))
        XCTAssertEqual(engine.count("purchase"), 5)
    }

    /// Rules swapped in while the app runs: their new filter counts from the swap on, the
    /// filters both rules read keep their counts, and a filter the new rules drop stops counting.
    func testASwapStartsNewFiltersAndKeepsTheOthers() throws {
        let (engine, _) = try makeEngine(Self.rules)
        for amount in [3, 12, 40] { engine.trigger("purchase", properties: ["amount": .int(Int64(amount))]) }
        let swapped = """
            # language 1.2
            event purchase(amount: int, plan: string, trial: bool), launch
            scenario Big < on launch; when count(purchase where amount >= 10) >= 100 >
            scenario Small < on launch; when count(purchase where amount < 10) >= 100 >
            """
        XCTAssertFalse(try engine.replaceRules(source: swapped).contains { $0.severity == .error })
        engine.trigger("purchase", properties: ["amount": 4])
        engine.trigger("purchase", properties: ["amount": 11])
        XCTAssertTrue(try engine.check("count(purchase where amount >= 10) == 3"), "kept across the swap")
        XCTAssertTrue(try engine.check("count(purchase where amount < 10) == 1"), "from the swap on")
        XCTAssertEqual(engine.count("purchase"), 5)
    }

    /// `min_events N where FILTER within D` over two `on` events, against the list of triggers:
    /// N (20) above the recent times a stream keeps by default (16), so the window is exact only
    /// if the filtered streams keep N+1; triggers of either event count, and a restart keeps them.
    func testMinEventsWhereCountsTheOnEventsTriggersThatPass() throws {
        let rules = """
            # language 1.2
            event purchase(amount: int, plan: string), gift(amount: int, plan: string), launch
            scenario Loyal < on purchase, gift; min_events 20 where plan == "pro" and amount >= 10 within 30d >
            scenario Session < on purchase; min_events 2 where amount >= 10 per session >
            """
        var random = SeededGenerator(seed: 1202)
        let store = InMemoryStore()
        let clock = ManualClock()
        var engine = try RuleEngine(source: rules, store: store, clock: clock)
        engine.startSession(version: "1.0")
        var passing: [Double] = []
        var inSession = 0
        var sawLoyal = (yes: 0, no: 0)
        for step in 0..<600 {
            clock.advance(by: Double(Int.random(in: 60...(16 * 3_600), using: &random)))
            let event = Int.random(in: 0..<8, using: &random) == 0 ? "gift" : "purchase"
            let amount = Int64.random(in: 0..<20, using: &random)
            let plan = ["pro", "free"].randomElement(using: &random)!
            engine.trigger(Event(event), properties: ["amount": .int(amount), "plan": .string(plan)])
            let now = clock.now().timeIntervalSince1970
            if plan == "pro" && amount >= 10 { passing.append(now) }
            if event == "purchase" && amount >= 10 { inSession += 1 }
            if step % 100 == 99 {
                engine = try RuleEngine(source: rules, store: store, clock: clock)  // a restart, a new session
                engine.startSession(version: "1.0")
                inSession = 0
            }
            let window = passing.filter { $0 > now - 30 * 86_400 }.count
            XCTAssertEqual(engine.canExecute("Loyal"), window >= 20, "step \(step): \(window) in the window")
            if window >= 20 { sawLoyal.yes += 1 } else { sawLoyal.no += 1 }
            XCTAssertEqual(engine.canExecute("Session"), inSession >= 2, "step \(step)")
        }
        XCTAssertTrue(passing.count > 100)
        XCTAssertTrue(sawLoyal.yes > 50 && sawLoyal.no > 50, "both answers, often: \(sawLoyal)")
    }

    /// `sum(EVENT.PROPERTY [where FILTER] [scope])` against the list of triggers: values above zero
    /// added, a trigger whose value is missing, of another type or failing the filter adding
    /// nothing, sessions and versions starting from zero, and the sums stored across a restart.
    func testSumsMatchAListOfTheTriggers() throws {
        let rules = """
            # language 1.2
            event purchase(amount: int, plan: string), launch
            scenario S < on launch; when sum(purchase.amount) >= 0 and sum(purchase.amount where plan == "pro" per session) >= 0 >
            scenario V < on launch; when sum(purchase.amount per version) >= 0 >
            """
        var random = SeededGenerator(seed: 3512)
        let store = InMemoryStore()
        let clock = ManualClock()
        var engine = try RuleEngine(source: rules, store: store, clock: clock)
        var version = "1.0"
        engine.startSession(version: version)
        var all: Int64 = 0
        var proInSession: Int64 = 0
        var inVersion: Int64 = 0
        for step in 0..<500 {
            clock.advance(by: Double(Int.random(in: 60...7_200, using: &random)))
            let amounts: [PropertyValue?] = [.int(0), .int(1), .int(250), .int(-40), .int(9_999), nil, .string("12")]
            let amount = amounts.randomElement(using: &random)!
            let plan = ["pro", "free"].randomElement(using: &random)!
            var properties: [String: PropertyValue] = ["plan": .string(plan)]
            properties["amount"] = amount
            engine.trigger("purchase", properties: properties)
            if case .int(let value)? = amount, value > 0 {
                all += value
                inVersion += value
                if plan == "pro" { proInSession += value }
            }
            switch step % 97 {
            case 50:
                engine = try RuleEngine(source: rules, store: store, clock: clock)  // a restart, a new session
                engine.startSession(version: version)
                proInSession = 0
            case 96:
                version = version == "1.0" ? "2.0" : "1.0"
                engine.startSession(version: version)
                proInSession = 0
                inVersion = 0
            default: break
            }
            XCTAssertTrue(try engine.check("sum(purchase.amount) == \(all)"), "step \(step)")
            XCTAssertTrue(
                try engine.check("sum(purchase.amount where plan == \"pro\" per session) == \(proInSession)"),
                "step \(step)")
            XCTAssertTrue(try engine.check("sum(purchase.amount per version) == \(inVersion)"), "step \(step)")
        }
        XCTAssertGreaterThan(all, 100_000)
    }

    /// Sums saturate on every path that adds (grammar.md): the largest amount twice, in memory,
    /// across a restart and in a windowed sum, keeps the total at 2^63-1 and the session's and
    /// version's sums at 4,294,967,295, and never traps (it did in the session's sum).
    func testSumsOfTheLargestAmountsSaturate() throws {
        let rules = """
            # language 1.2
            event purchase(amount: int), launch
            scenario S < on launch; when sum(purchase.amount) >= 0 and sum(purchase.amount per session) >= 0 >
            scenario V < on launch; when sum(purchase.amount per version) >= 0 and sum(purchase.amount within 1d) >= 0 >
            """
        let store = InMemoryStore()
        let clock = ManualClock()
        var engine = try RuleEngine(source: rules, store: store, clock: clock)
        engine.startSession(version: "1.0")
        for _ in 0..<3 {
            engine.trigger("purchase", properties: ["amount": .int(.max)])
            clock.advance(by: 60)
        }
        func expectSaturated(_ engine: RuleEngine, _ note: String) throws {
            XCTAssertTrue(try engine.check("sum(purchase.amount) == 9223372036854775807"), note)
            XCTAssertTrue(try engine.check("sum(purchase.amount per session) == 4294967295"), note)
            XCTAssertTrue(try engine.check("sum(purchase.amount per version) == 4294967295"), note)
            XCTAssertTrue(try engine.check("sum(purchase.amount within 1d) > 0"), note)
        }
        try expectSaturated(engine, "in memory")
        engine = try RuleEngine(source: rules, store: store, clock: clock)
        engine.startSession(version: "1.0")
        engine.trigger("purchase", properties: ["amount": .int(.max)])
        XCTAssertTrue(try engine.check("sum(purchase.amount) == 9223372036854775807"), "after a restart")
        XCTAssertTrue(try engine.check("sum(purchase.amount per version) == 4294967295"), "after a restart")
    }

    /// `sum(EVENT.PROPERTY within D) OP N` against the list of triggers: the values above zero
    /// whose triggers are younger than D, added up and compared; at every step, through restarts,
    /// for each comparison, with values below, at and above the number (each kept as that many
    /// units of its time, at most N+1).
    func testWindowedSumsMatchAListOfTheTriggers() throws {
        let rules = """
            # language 1.2
            event purchase(amount: int, plan: string), launch
            scenario AtLeast < on launch; when sum(purchase.amount within 3d) >= 100 >
            scenario Over < on launch; when (40 < (sum(purchase.amount where plan == "pro" within 1d))) >
            scenario Exactly < on launch; when sum(purchase.amount within 12h) == 7 or sum(purchase.amount within 12h) != 7 and false >
            """
        var random = SeededGenerator(seed: 7_351)
        let store = InMemoryStore()
        let clock = ManualClock()
        var engine = try RuleEngine(source: rules, store: store, clock: clock)
        var triggers: [(time: Date, amount: Int64, pro: Bool)] = []
        func sum(within seconds: Double, proOnly: Bool) -> Int64 {
            let now = clock.now()
            return triggers.filter { now.timeIntervalSince($0.time) < seconds && (!proOnly || $0.pro) }
                .reduce(0) { $0 + $1.amount }
        }
        var seen: [String: Set<Bool>] = [:]
        for step in 0..<600 {
            clock.advance(by: Double(Int.random(in: 0...30_000, using: &random)))
            let amount = [Int64(0), 1, 3, 7, 25, 60, 99, 100, 250, -5].randomElement(using: &random)!
            let pro = Bool.random(using: &random)
            engine.trigger("purchase", properties: ["amount": .int(amount), "plan": .string(pro ? "pro" : "free")])
            if amount > 0 { triggers.append((clock.now(), amount, pro)) }
            if step % 101 == 100 { engine = try RuleEngine(source: rules, store: store, clock: clock) }
            let expected = [
                "AtLeast": sum(within: 3 * 86_400, proOnly: false) >= 100,
                "Over": 40 < sum(within: 86_400, proOnly: true),
                "Exactly": sum(within: 43_200, proOnly: false) == 7,
            ]
            for (scenario, answer) in expected {
                XCTAssertEqual(engine.canExecute(Scenario(scenario)), answer, "step \(step): \(scenario)")
                seen[scenario, default: []].insert(answer)
            }
        }
        XCTAssertEqual(seen.values.map(\.count), [2, 2, 2], "both answers for each: \(seen)")
    }
}
