import Foundation
import TestSupport
import XCTest

@testable import RuleRuntime

/// Typed occurrences (`engine.trigger(.purchase(amount: 12, plan: "pro"))`, the types `rulec gen
/// swift` writes) count as the same properties in a dictionary do: checked against a plain list
/// of the triggers and the filters written in Swift (``PropertyTests``), with layouts in another
/// order, with a property missing or of another type (rules changed after release), and across a
/// swap.
final class OccurrenceTests: XCTestCase {
    /// As generated for `event purchase(amount: int, plan: string, trial: bool)`.
    struct Purchase: EventOccurrence {
        static let layout = PropertyLayout(
            "purchase", [("amount", Int.self), ("plan", String.self), ("trial", Bool.self)])
        var amount: Int
        var plan: String
        var trial: Bool
        func property(at position: Int) -> PropertyValue {
            switch position {
            case 0: return .int(Int64(amount))
            case 1: return .string(plan)
            default: return .bool(trial)
            }
        }
    }

    /// Generated from rules that declared the properties in another order.
    struct Reordered: EventOccurrence {
        static let layout = PropertyLayout(
            "purchase", [("trial", Bool.self), ("amount", Int.self), ("plan", String.self)])
        var trial: Bool
        var amount: Int
        var plan: String
        func property(at position: Int) -> PropertyValue {
            switch position {
            case 0: return .bool(trial)
            case 1: return .int(Int64(amount))
            default: return .string(plan)
            }
        }
    }

    /// Generated from older rules: `amount` a string, no `trial`; its layout made at each call.
    struct Older: EventOccurrence {
        static var layout: PropertyLayout {
            PropertyLayout("purchase", [("plan", String.self), ("amount", String.self)])
        }
        var plan: String
        var amount: String
        func property(at position: Int) -> PropertyValue { position == 0 ? .string(plan) : .string(amount) }
    }

    private func dictionary(_ occurrence: some EventOccurrence) -> [String: PropertyValue] {
        let names = type(of: occurrence).layout.names
        return Dictionary(uniqueKeysWithValues: names.indices.map { (names[$0], occurrence.property(at: $0)) })
    }

    func testTypedTriggersMatchAListOfTheTriggers() throws {
        var random = SeededGenerator(seed: 35)
        let (engine, clock) = try makeEngine(PropertyTests.rules)
        var purchases: [PropertyTests.Purchase] = []
        let plans = ["pro", "free", "Pro"]
        for step in 0..<400 {
            clock.advance(by: Double(Int.random(in: 600...40_000, using: &random)))
            let amount = [0, 4, 5, 9, 10, 500].randomElement(using: &random)!
            let plan = plans.randomElement(using: &random)!
            let trial = Bool.random(using: &random)
            let occurrence: any EventOccurrence
            switch step % 3 {
            case 0: occurrence = Purchase(amount: amount, plan: plan, trial: trial)
            case 1: occurrence = Reordered(trial: trial, amount: amount, plan: plan)
            default: occurrence = Older(plan: plan, amount: String(amount))
            }
            engine.trigger(occurrence)
            purchases.append(.init(time: clock.now().timeIntervalSince1970, properties: dictionary(occurrence)))
            let now = clock.now().timeIntervalSince1970
            let big = purchases.filter { PropertyTests.big($0.properties) }.count
            let pro = purchases.filter { $0.time > now - 7 * 86_400 && PropertyTests.pro($0.properties) }.count
            XCTAssertEqual(engine.count("purchase"), purchases.count)
            XCTAssertTrue(try engine.check("count(purchase where amount >= 10) == \(big)"), "step \(step)")
            XCTAssertTrue(
                try engine.check("count(purchase where plan == \"pro\" and not trial within 7d) == \(pro)"),
                "step \(step)")
            if let last = purchases.last(where: { PropertyTests.other($0.properties) })?.time {
                XCTAssertTrue(
                    try engine.check("since_last(purchase where amount < 5 or plan != \"pro\") == \(Int(now - last))s"),
                    "step \(step)")
            }
        }
        XCTAssertGreaterThan(purchases.filter { PropertyTests.big($0.properties) }.count, 50)
        XCTAssertEqual(engine.locked { $0.occurrenceMatches.count }, 3, "one match per layout, made once")
    }

    /// After a swap the layouts are matched with the new rules: here `amount` became a string, so
    /// a filter on it counts the older layout's triggers and no longer the others'.
    func testASwapMatchesTheLayoutsAgain() throws {
        let (engine, _) = try makeEngine(PropertyTests.rules)
        engine.trigger(Purchase(amount: 12, plan: "pro", trial: false))
        engine.trigger(Older(plan: "pro", amount: "12"))
        XCTAssertTrue(try engine.check("count(purchase where amount >= 10) == 1"))
        let swapped = """
            # language 1.2
            event purchase(amount: string, plan: string), launch
            scenario Twelve < on launch; when count(purchase where amount == "12") >= 1 >
            """
        XCTAssertFalse(try engine.replaceRules(source: swapped).contains { $0.severity == .error })
        engine.trigger(Purchase(amount: 12, plan: "pro", trial: false))
        XCTAssertTrue(try engine.check("count(purchase where amount == \"12\") == 0"))
        engine.trigger(Older(plan: "pro", amount: "12"))
        XCTAssertTrue(try engine.check("count(purchase where amount == \"12\") == 1"))
        XCTAssertEqual(engine.count("purchase"), 4)
    }

    /// A sum through a typed occurrence: the property read by its position in the layout, and
    /// nothing added when the layout holds it with another type.
    func testTypedTriggersAddToSums() throws {
        let rules = """
            # language 1.2
            event purchase(amount: int, plan: string, trial: bool), launch
            scenario S < on launch; when sum(purchase.amount where not trial) >= 1000 >
            """
        let (engine, _) = try makeEngine(rules)
        engine.trigger(Purchase(amount: 700, plan: "pro", trial: false))
        engine.trigger(Reordered(trial: true, amount: 500, plan: "pro"))
        engine.trigger(Older(plan: "pro", amount: "900"))
        XCTAssertFalse(engine.canExecute("S"))
        engine.trigger(Reordered(trial: false, amount: 300, plan: "free"))
        XCTAssertTrue(try engine.check("sum(purchase.amount where not trial) == 1000"))
        XCTAssertTrue(engine.canExecute("S"))
    }
}
