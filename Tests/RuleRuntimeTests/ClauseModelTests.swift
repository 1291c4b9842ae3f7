import Foundation
import RuleRuntime
import TestSupport
import XCTest

/// The whole language held to an independent model (`TestSupport`'s `LanguageModel`, written
/// from grammar.md alone over plain arrays of times) on 10,000 seeded random histories: rules of
/// languages 1.0, 1.1 and 1.2 using every clause keyword, function, scope and 1.2 construct
/// (outcomes, presentations, crashes and problems, event properties and `sum`, local windows,
/// calendar caps, buckets and holdouts, language 1.3's contexts, deferral and exposure counted when
/// seen (with the app's visibility and background steps), a retired scenario, a rename and a
/// retirement swapped in,
/// priorities and `executeNext`, a tester's override), a few recent times kept or many, in
/// zones that change and across Europe's summer-time change. After each step the engine's
/// answers are compared with the model's: every call's answer, and, for every scenario,
/// `canExecute`, `explain`'s verdict, its clauses (each clause's text, whether it passes, the
/// count it words) and its earliest time.
final class ClauseModelTests: XCTestCase {
    /// How many histories (`RULES_MODEL_HISTORIES`, default 10,000).
    static var histories: Int {
        ProcessInfo.processInfo.environment["RULES_MODEL_HISTORIES"].flatMap(Int.init) ?? 10_000
    }

    static var onlySeed: Int? { ProcessInfo.processInfo.environment["RULES_MODEL_SEED"].flatMap(Int.init) }

    func testTheEngineAnswersAsTheModelOverRandomHistories() throws {
        let start = 1_774_440_000.0  // 2026-03-25T12:00:00Z: Europe moves its clocks 4 days later
        let zones = ["Europe/Paris", "America/New_York", "Asia/Kathmandu", "UTC"]
        var histories = 0
        var refused = 0
        var compared = 0
        var seed = 0
        var seen: Set<String> = []
        var (countedOnScreen, wishesMade) = (0, 0)
        while histories < Self.histories && seed < (Self.onlySeed ?? .max) {
            seed += 1
            // `RULES_MODEL_SEED=N`: that history alone, to follow a failure.
            if let only = Self.onlySeed, seed != only { continue }
            if let only = Self.onlySeed, seed > only { break }
            var random = ModelRandom(seed: seed)
            let rules = ModelRules.random(&random, start: start)
            let zone = TimeZone(identifier: random.pick(zones))!
            let clock = ManualClock(Date(timeIntervalSince1970: start))
            // A few recent times kept, or many: a clause's window keeps N+1 whatever the limit, so
            // its answers are exact. A window a `when` counts keeps the limit (grammar.md,
            // "Storage": a lower bound past it), so those rules keep many.
            let windowInWhen = rules.text.split(separator: "\n").contains {
                $0.contains("when") && $0.contains("within")
            }
            let recentLimit = windowInWhen ? 64 : random.pick([2, 16, 64])
            var options = RuleEngine.Options(recentLimit: recentLimit, logSubsystem: nil, timeZone: zone)
            options.installID = "install-\(seed)"
            var model = LanguageModel(rules: rules, start: start, zone: zone, installID: "install-\(seed)")
            // Now and then a tester's override: it decides alone (grammar.md, "Overrides").
            if rules.swapped == nil, random.chance(20) {
                model.forced = random.chance(2)
                options.overrides = ["S": model.forced!]
            }
            // The checker refuses rules that can never pass (windows sharing no day): another seed.
            guard
                let engine = try? RuleEngine(source: rules.text, store: InMemoryStore(), clock: clock, options: options)
            else {
                refused += 1
                continue
            }
            histories += 1
            var trace: [String] = []
            let context = { "seed \(seed):\n\(rules.text)" + trace.joined(separator: "\n") }
            _ = model.apply(.launch("1"))
            engine.prepareForSuspension()
            engine.startSession(version: "1")
            for step in 0..<30 {
                let action = model.randomStep(&random)
                seen.insert(String(action.timelineText.prefix { $0 != " " }))
                let answer = try Self.run(action, on: engine, clock: clock, model.now, rules)
                let expected = model.apply(action)
                trace.append("\(Int(model.now - start))s \(action.timelineText)")

                if case .advance = action {
                    clock.set(Date(timeIntervalSince1970: model.now))
                }
                XCTAssertEqual(answer, expected, "step \(step) \(action.timelineText): \(context())")
                // Not read after every step: a read re-bases the times ahead of the clock, so a
                // clock set back and an event recorded before the next read keep "first" the
                // first recorded and "last" the latest.
                guard random.next(3) != 0 else { continue }
                trace[trace.count - 1] += " (read)"
                model.rebase()
                for name in model.currentNames {
                    let index = model.scenario(named: name)!
                    let want = model.judge(index)
                    let explanation = engine.explain(name)
                    let place = "step \(step), \(name): \(explanation)\n\(context())"
                    XCTAssertEqual(engine.canExecute(name), want.shows, place)
                    XCTAssertEqual(explanation.wouldRun, want.shows, place)
                    XCTAssertEqual(explanation.clauses.map(\.clause), want.clauses.map(\.text), place)
                    XCTAssertEqual(explanation.clauses.map(\.passes), want.clauses.map(\.passes), place)
                    for (clause, wanted) in zip(explanation.clauses, want.clauses) {
                        // A window keeps the times its clause needs (N+1): past them, the count
                        // `explain` words is a lower bound, whatever the verdict.
                        guard let count = wanted.count, recentLimit == 64 || !clause.clause.contains("within") else {
                            continue
                        }
                        XCTAssertTrue(clause.detail.hasPrefix("\(count) so far"), "\(clause.detail) " + place)
                    }
                    XCTAssertEqual(explanation.earliest?.timeIntervalSince1970, want.earliest, place)
                    XCTAssertEqual(explanation.deferredUntil?.timeIntervalSince1970, model.deferredUntil(index), place)
                    compared += 1
                }
                if testRun?.failureCount ?? 0 > 10 { return }
            }
            countedOnScreen += model.countedOnScreen
            wishesMade += model.wishesMade
        }
        // Every step kind was taken.
        XCTAssertEqual(
            seen,
            [
                "", "launch", "trigger", "done", "todo", "set", "try", "next", "present", "finish", "outcome", "crash",
                "problem", "timezone", "rules", "enter", "leave", "visible", "hidden", "background", "foreground",
            ])
        XCTAssertGreaterThan(compared, Self.histories * 15)
        // Language 1.3's counts and wishes are reached, not only written.
        XCTAssertGreaterThan(countedOnScreen, Self.histories / 200, "presentations counted once seen")
        XCTAssertGreaterThan(wishesMade, Self.histories / 100, "wishes kept")
        print("model histories: \(countedOnScreen) presentations counted once seen, \(wishesMade) wishes")
        XCTAssertLessThan(refused, Self.histories / 5, "most random rules are valid")
    }

    /// Runs `step` on `engine` as a timeline does (grammar.md, "Timelines"); returns what it
    /// answered, worded as the model words it.
    static func run(
        _ step: ModelStep, on engine: RuleEngine, clock: ManualClock, _ now: Double, _ rules: ModelRules
    ) throws -> ModelAnswer? {
        // Explained before the call, as a timeline does: a held-out `no` records an exposure.
        func refused(_ name: String, _ before: Explanation) -> ModelAnswer {
            ModelAnswer(result: "no", failing: before.failing.map(\.clause))
        }
        switch step {
        case .advance: break
        case .launch(let version):
            engine.prepareForSuspension()
            engine.startSession(version: version)
        case .trigger(let stream, let properties):
            if let properties {
                engine.trigger(
                    Event(stream),
                    properties: ["amount": .int(Int64(properties.amount)), "plan": .string(properties.plan)])
            } else {
                engine.trigger(Event(stream))
            }
        case .done(let name): engine.markDone(name)
        case .todo(let name): _ = engine.toDo(name)
        case .set(let n): try engine.set("p", to: .int(Int64(n)))
        case .tryToExecute(let name):
            let before = engine.explain(name)
            return engine.tryToExecute(name) ? ModelAnswer(result: "yes", failing: []) : refused(name, before)
        case .present(let name):
            let before = engine.explain(name)
            return engine.present(Scenario(name)) != nil
                ? ModelAnswer(result: "shown", failing: []) : refused(name, before)
        case .finish(let name, let word):
            let open = try XCTUnwrap(engine.openPresentation(of: name), "no presentation of \(name) open")
            try engine.finish(open, Outcome(rawValue: word)!)
            return ModelAnswer(result: word, failing: [])
        case .next(let names):
            return ModelAnswer(result: engine.executeNext(among: names) ?? "none", failing: [])
        case .outcome(let name, let word): try engine.recordOutcome(Outcome(rawValue: word)!, of: name)
        case .crash: engine.relaunchAfterCrash()
        case .problem: engine.recordProblem()
        case .timezone(let name): engine.timeZone = TimeZone(identifier: name)!
        case .enter(let context): engine.enter(context)
        case .leave(let context): engine.leave(context)
        case .visible(let name):
            try engine.visible(XCTUnwrap(engine.openPresentation(of: name), "no presentation of \(name) open"))
        case .hidden(let name):
            try engine.hidden(XCTUnwrap(engine.openPresentation(of: name), "no presentation of \(name) open"))
        case .background: engine.prepareForSuspension()
        case .foreground: engine.enteredForeground()
        case .swap:
            // Rules with errors throw.
            _ = try engine.replaceRules(source: rules.swapped!)
            return ModelAnswer(result: "swapped", failing: [])
        }
        return nil
    }
}
