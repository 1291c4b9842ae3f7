import Foundation
import RuleLang
import RuleRuntime

// MARK: - Stable buckets (issue 35)

/// `rulebench buckets`: `canExecute` of a scenario whose condition compares the install's bucket
/// against the same scenario comparing a param (in-memory, both answering yes); and the param's
/// comparison against a count clause (`max_exec`), which guards `when` against the copy of the
/// whole engine it made for each comparison until 2026-11-27 (804-993 ns against 188-192 ns).
func bucketBenchmarks(_ goals: inout [Goal]) throws {
    let rules = """
        # language 1.2
        param share: int = 10
        scenario ByParam < when (share < 100) >
        scenario ByBucket < when (bucket("paywall-2026") < 100) >
        scenario ByCount < max_exec 1000000000 >
        """
    var options = RuleEngine.Options()
    options.installID = "3f2c8e1a-5b7d-4c9e-8a1f-2d6b9e0c4a7f"
    let engine = try RuleEngine(source: rules, options: options)
    guard engine.canExecute("ByParam"), engine.canExecute("ByBucket"), engine.canExecute("ByCount") else {
        throw RuleEngineError.invalidExpression([])
    }
    let byParam = Scenario(resolvingOnce: "ByParam")
    let byBucket = Scenario(resolvingOnce: "ByBucket")
    let byCount = Scenario(resolvingOnce: "ByCount")
    let answers = interleaved(
        batch: 20_000,
        [
            { _ = engine.canExecute(byParam) }, { _ = engine.canExecute(byBucket) },
            { _ = engine.canExecute(byCount) },
        ])
    line("canExecute, when (PARAM < 100)", answers.samples[0].summary)
    line("canExecute, when (bucket(\"SALT\") < 100)", answers.samples[1].summary)
    let ratio = answers.ratio(1, to: 0)
    line("  bucket / param, per round", ratio.ratioSummary)
    goals.append(Goal(key: "bucket_vs_param", value: ratio.median, unit: "x", limit: 1.2, atMost: true))
    line("canExecute, max_exec N", answers.samples[2].summary)
    let whenRatio = answers.ratio(0, to: 2)
    line("  when (PARAM < 100) / max_exec N, per round", whenRatio.ratioSummary)
    goals.append(Goal(key: "when_compare_vs_clause", value: whenRatio.median, unit: "x", limit: 2, atMost: true))
}

// MARK: - Contexts (language 1.3)

/// `rulebench contexts`: `canExecute` of a scenario whose one clause is `not in checkout, pin`
/// (the app in another context) against one whose one clause is `max_exec N` (in-memory, both
/// answering yes): what reading where the user is costs a decision.
func contextBenchmarks(_ goals: inout [Goal]) throws {
    let rules = """
        # language 1.3
        scenario Plain < max_exec 1000000000 >
        scenario OffScreens < not in checkout, pin >
        """
    let engine = try RuleEngine(source: rules)
    engine.enter("home")
    guard engine.canExecute("Plain"), engine.canExecute("OffScreens") else {
        throw RuleEngineError.invalidExpression([])
    }
    let plain = Scenario(resolvingOnce: "Plain")
    let context = Scenario(resolvingOnce: "OffScreens")
    let answers = interleaved(batch: 20_000, [{ _ = engine.canExecute(plain) }, { _ = engine.canExecute(context) }])
    line("canExecute, max_exec N", answers.samples[0].summary)
    line("canExecute, not in checkout, pin", answers.samples[1].summary)
    let ratio = answers.ratio(1, to: 0)
    line("  context / plain clause, per round", ratio.ratioSummary)
    goals.append(Goal(key: "context_clause_vs_plain", value: ratio.median, unit: "x", limit: 1.2, atMost: true))
}

// MARK: - Event properties (issue 35)

/// `rulebench properties`: a filtered count against a plain count of the same event (`canExecute`,
/// both answering yes); a trigger carrying two properties against a plain trigger, over rules
/// whose filter does not count it (what carrying and testing properties costs), and, printed
/// beside it, one whose filter counts it (a second stream recorded, as a second event would be).
func propertyBenchmarks(_ goals: inout [Goal]) throws {
    let rules = """
        # language 1.2
        event purchase(amount: int, plan: string), open
        scenario Plain < on open; when (count(purchase) < 1000000000) >
        scenario Filtered < on open; when (count(purchase where amount >= 10 within 30d) < 1000000000) >
        scenario Unmatched < on open; when (count(purchase where amount >= 1000000) < 1) >
        """
    let engine = try RuleEngine(source: rules)
    for _ in 0..<20 { engine.trigger("purchase", properties: ["amount": 12, "plan": "pro"]) }
    guard engine.canExecute("Plain"), engine.canExecute("Filtered") else {
        throw RuleEngineError.invalidExpression([])
    }
    let plain = Scenario(resolvingOnce: "Plain")
    let filtered = Scenario(resolvingOnce: "Filtered")
    let answers = interleaved(
        batch: 20_000, [{ _ = engine.canExecute(plain) }, { _ = engine.canExecute(filtered) }])
    line("canExecute, when (count(EVENT) < N)", answers.samples[0].summary)
    line("canExecute, when (count(EVENT where P >= 10 within 30d) < N)", answers.samples[1].summary)
    let countRatio = answers.ratio(1, to: 0)
    line("  filtered / plain, per round", countRatio.ratioSummary)
    goals.append(Goal(key: "filtered_count_vs_count", value: countRatio.median, unit: "x", limit: 1.5, atMost: true))

    // Each trigger its own engine's: they record on streams of the same length. The typed call
    // (what `rulec gen swift` writes) against the plain call through a handle; the dictionary
    // call printed beside them.
    let bare = try RuleEngine(source: rules)
    let carrying = try RuleEngine(source: rules)
    let counted = try RuleEngine(source: rules.replacingOccurrences(of: "amount >= 1000000", with: "amount >= 0"))
    let named = try RuleEngine(source: rules)
    let purchase = Event(resolvingOnce: "purchase")
    let triggers = interleaved(
        batch: 5_000,
        [
            { bare.trigger(purchase) },
            { carrying.trigger(.purchase(amount: 5, plan: "pro")) },
            { counted.trigger(.purchase(amount: 5, plan: "pro")) },
            { named.trigger("purchase", properties: ["amount": 5, "plan": "pro"]) },
        ])
    line("trigger(.purchase), in-memory", triggers.samples[0].summary)
    line("trigger(.purchase(amount:plan:)), no filter counts it", triggers.samples[1].summary)
    line("trigger(.purchase(amount:plan:)), a filter counts it", triggers.samples[2].summary)
    line("trigger(\"purchase\", properties: [...]), no filter counts it", triggers.samples[3].summary)
    let carried = triggers.ratio(1, to: 0)
    line("  typed properties / plain, per round", carried.ratioSummary)
    line("  typed properties, counted / plain, per round", triggers.ratio(2, to: 0).ratioSummary)
    line("  dictionary / plain, per round", triggers.ratio(3, to: 0).ratioSummary)
    goals.append(Goal(key: "trigger_properties_vs_plain", value: carried.median, unit: "x", limit: 1.3, atMost: true))
}

/// What `rulec gen swift` writes for `event purchase(amount: int, plan: string)`.
struct PurchaseOccurrence: EventOccurrence {
    static let layout = PropertyLayout("purchase", [("amount", Int.self), ("plan", String.self)])
    var amount: Int
    var plan: String

    func property(at position: Int) -> PropertyValue {
        switch position {
        case 0: return .int(Int64(amount))
        default: return .string(plan)
        }
    }
}

extension EventOccurrence where Self == PurchaseOccurrence {
    static func purchase(amount: Int, plan: String) -> Self { Self(amount: amount, plan: plan) }
}
