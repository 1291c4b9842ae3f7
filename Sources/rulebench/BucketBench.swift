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
    let byParam: Scenario = "ByParam"
    let byBucket: Scenario = "ByBucket"
    let byCount: Scenario = "ByCount"
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
