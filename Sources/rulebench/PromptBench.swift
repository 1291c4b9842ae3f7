import Foundation
import RuleLang
import RuleRuntime

// MARK: - Prompts and outcomes (issue 34)

/// `rulebench prompts`: a scenario with an outcome clause against the same scenario without it
/// (in-memory, both answering yes, so every clause is evaluated), and `present` + `finish`
/// against `tryToExecute` + `trigger` on the file store (each pair writes twice; neither scenario
/// is in a group, so neither writes a group's budget).
func promptBenchmarks(_ goals: inout [Goal]) throws {
    let body = "on launch; min_events 3; since_first 1d; max_exec 1000000000 per version; between 0s"
    let rules = """
        # language 1.2
        event launch
        scenario Plain < \(body) >
        scenario WithOutcome < \(body); after declined next version >
        """
    let clock = ManualClock()
    let engine = try RuleEngine(source: rules, clock: clock)
    engine.startSession(version: "1")
    for _ in 0..<5 { engine.trigger("launch") }
    // A decline in the version before: the outcome clause reads a stream that has history.
    try engine.recordOutcome(.declined, of: "WithOutcome")
    clock.advance(by: 2 * 86_400)
    engine.startSession(version: "2")
    guard engine.canExecute("Plain"), engine.canExecute("WithOutcome") else {
        throw RuleEngineError.invalidExpression([])
    }
    let plain = Scenario(resolvingOnce: "Plain")
    let withOutcome = Scenario(resolvingOnce: "WithOutcome")
    let answers = interleaved(
        batch: 20_000, [{ _ = engine.canExecute(plain) }, { _ = engine.canExecute(withOutcome) }])
    line("canExecute, 5 clauses (answers yes)", answers.samples[0].summary)
    line("  the same and 'after declined next version'", answers.samples[1].summary)
    let outcomeRatio = answers.ratio(1, to: 0)
    line("  with the outcome clause / without, per round", outcomeRatio.ratioSummary)
    goals.append(Goal(key: "outcome_clause_vs_plain", value: outcomeRatio.median, unit: "x", limit: 1.3, atMost: true))

    let fileRules = """
        # language 1.2
        event x
        scenario Shown < >
        scenario Tried < >
        """
    let fileEngine = try RuleEngine(source: fileRules, store: FileStore(url: temporaryPath("prompts.state")))
    let pairs = interleaved(
        batch: 5_000,
        [
            {
                _ = fileEngine.tryToExecute("Tried")
                fileEngine.trigger("x")
            },
            {
                if let shown = fileEngine.present("Shown") { try? fileEngine.finish(shown, .later) }
            },
        ])
    line("tryToExecute + trigger, file store", pairs.samples[0].summary)
    line("present + finish, file store", pairs.samples[1].summary)
    let pairRatio = pairs.ratio(1, to: 0)
    line("  present + finish / tryToExecute + trigger, per round", pairRatio.ratioSummary)
    guard (try? fileEngine.check("count(Shown: later) > 0")) == true else {
        throw RuleEngineError.invalidExpression([])
    }
    goals.append(Goal(key: "present_finish_vs_try_trigger", value: pairRatio.median, unit: "x", limit: 2, atMost: true))

    // Language 1.3's counted exposure: present, visible, the clock past the second it needs
    // (its wake-up records the execution), finish; against tryToExecute + trigger, both on the
    // file store and a manual clock.
    let countedRules = """
        # language 1.3
        event x
        scenario Banner < counts after 1s visible >
        scenario Tried < >
        """
    let countedClock = ManualClock()
    let countedEngine = try RuleEngine(
        source: countedRules, store: FileStore(url: temporaryPath("counted.state")), clock: countedClock)
    let counted = interleaved(
        batch: 5_000,
        [
            {
                _ = countedEngine.tryToExecute("Tried")
                countedEngine.trigger("x")
            },
            {
                if let shown = countedEngine.present("Banner") {
                    try? countedEngine.visible(shown)
                    countedClock.advance(by: 1)
                    try? countedEngine.finish(shown, .dismissed)
                }
            },
        ])
    line("tryToExecute + trigger, file store, manual clock", counted.samples[0].summary)
    line("present + visible + 1s on screen + finish, file store", counted.samples[1].summary)
    let countedRatio = counted.ratio(1, to: 0)
    line("  counted / tryToExecute + trigger, per round", countedRatio.ratioSummary)
    // Every presentation counted once seen: as many executions as presentations finished.
    guard
        (try? countedEngine.check("executions(Banner) > 0 and executions(Banner) == count(Banner: dismissed)")) == true
    else {
        throw RuleEngineError.invalidExpression([])
    }
    goals.append(
        Goal(
            key: "present_visible_finish_vs_try_trigger", value: countedRatio.median, unit: "x", limit: 2.5,
            atMost: true))
}
