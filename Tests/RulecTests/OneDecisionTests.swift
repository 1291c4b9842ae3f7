import Foundation
import RuleLang
import RuleTimeline
import TestSupport
import XCTest

@testable import RuleRuntime

/// Every path that answers "would this scenario run now" gives one answer: `canExecute`, the
/// observers (``RuleEngine/updates(for:)-(Scenario)`` and ``ScenarioStatus``), `explain`, the
/// decision log, an engine loaded from the saved state as `rulec explain --state` loads it, and
/// the simulator's `try`. Seeded random histories over rules using every construct that decides
/// (clauses of every kind, a group, holdouts, a presentation's hold, overrides, retirement,
/// local windows, outcomes, properties, the crash stream).
final class OneDecisionTests: XCTestCase {
    static let rules = """
        # language 1.2
        event visit, launch, purchase(amount: int)
        group Prompts < max_exec 2 within 1d; between 30m; holdout 20% "prompts" > {
            scenario Rate < on launch; min_events 2; after later 2h; after declined next version;
                when since_last(crash) >= 1h >
            scenario Tip < on visit; during 09:00-21:00; max_exec 3 per session >
        }
        scenario Offer < on visit; min_events 2; max_exec 3; between 1h; holdout 30% "offer"; days mon-fri >
        scenario Buyer < on purchase; min_events 1 where amount >= 100; since_first 1h; max_events 4 within 2h >
        scenario Gap < on visit; between 10m, 1h, 4h; min_days 2 within 7d >
        scenario Spend < on visit; when sum(purchase.amount) >= 300 and (bucket("spend") < 60); not during 00:00-06:00 >
        retired scenario Legacy
        scenario Forced < on visit; min_events 50 >
        """

    /// Checked once: every engine of the test runs these.
    static let checked = RuleCompiler.check([SourceFile(path: "<rules>", text: rules)])

    static let names = ["Rate", "Tip", "Offer", "Buyer", "Gap", "Spend", "Legacy", "Forced"]

    /// One random step: what it does to the engine, and its timeline line.
    enum Step {
        case wait(Int)
        case trigger(String)
        case purchase(Int)
        case launch(String)
        case crash
        case tryScenario(String)
        case present(String)
        case finish(String, Outcome)
        case zone(String)

        var line: String {
            switch self {
            case .wait: return ""
            case .trigger(let name): return "trigger \(name)"
            case .purchase(let amount): return "trigger purchase amount=\(amount)"
            case .launch(let version): return "launch \(version)"
            case .crash: return "crash"
            case .tryScenario(let name): return "try \(name)"
            case .present(let name): return "present \(name)"
            case .finish(let name, let outcome): return "finish \(name) \(outcome.rawValue)"
            case .zone(let zone): return "timezone \(zone)"
            }
        }
    }

    static func history(_ random: inout SeededGenerator, length: Int) -> [Step] {
        let outcomes: [Outcome] = [.accepted, .declined, .later, .dismissed]
        return (0..<length).map { _ in
            switch random.next(100) {
            case 0..<22: return .wait([60, 600, 1_800, 3_600, 7_200, 21_600, 86_400][random.next(7)])
            case 22..<42: return .trigger(["visit", "launch"][random.next(2)])
            case 42..<50: return .purchase([50, 100, 250][random.next(3)])
            case 50..<54: return .launch(["1.0", "1.1"][random.next(2)])
            case 54..<57: return .crash
            case 57..<77: return .tryScenario(names[random.next(names.count)])
            case 77..<85: return .present(["Rate", "Tip", "Offer"][random.next(3)])
            case 85..<95: return .finish(["Rate", "Tip", "Offer"][random.next(3)], outcomes[random.next(4)])
            default: return .zone(["UTC", "Asia/Tokyo", "America/New_York"][random.next(3)])
            }
        }
    }

    /// Options of one install: its buckets (so that every arm of each holdout is played) and
    /// sometimes an override.
    static func options(_ random: inout SeededGenerator) -> RuleEngine.Options {
        var options = RuleEngine.Options(logSubsystem: nil, timeZone: TimeZone(identifier: "UTC"))
        options.installID = "install-\(random.next(1_000_000))"
        options.bucketOverrides = ["prompts": random.next(100), "offer": random.next(100)]
        if random.next(4) == 0 {
            options.overrides = [names[random.next(names.count)]: random.next(2) == 0]
        }
        return options
    }

    func testEveryPathGivesOneAnswer() throws {
        let histories = ProcessInfo.processInfo.environment["RULES_DECISION_HISTORIES"].flatMap(Int.init) ?? 1_000
        var steps = 0
        for seed in 0..<UInt64(histories) {
            steps += try play(seed: seed)
            if (testRun?.failureCount ?? 0) > 0 { break }  // one history's failures are enough
        }
        XCTAssertGreaterThan(steps, histories * 10)
    }

    /// Plays one history; returns the number of answers compared.
    func play(seed: UInt64) throws -> Int {
        var random = SeededGenerator(seed: seed)
        let options = Self.options(&random)
        let history = Self.history(&random, length: 24)
        let clock = ManualClock(TimelineRunner.start)
        let store = InMemoryStore()
        let engine = try RuleEngine(checked: Self.checked, store: store, clock: clock, options: options)
        let logged = Locked<[String: Bool]>([:])
        engine.decisionHandler = { decision in
            if decision.call == .canExecute, let name = decision.scenario {
                logged.withValue { $0[name] = decision.answer }
            }
        }
        // The observers: a status (with its explanation) per scenario.
        let observed = Locked<[String: Bool]>([:])
        var ids: [Int] = []
        for name in Self.names {
            ids.append(
                engine.addStatusObserver(for: Scenario(name)) { value, _ in observed.withValue { $0[name] = value } })
        }
        defer { for id in ids { engine.removeObserver(id) } }
        var compared = 0
        var timeline: [String] = []
        var offset: Int64 = 0
        for step in history {
            switch step {
            case .wait(let seconds):
                clock.advance(by: TimeInterval(seconds))
                offset += Int64(seconds)
            case .trigger(let name): engine.trigger(Event(name))
            case .purchase(let amount): engine.trigger("purchase", properties: ["amount": .int(Int64(amount))])
            case .launch(let version):
                engine.prepareForSuspension()
                engine.startSession(version: version)
            case .crash: engine.relaunchAfterCrash()
            case .tryScenario(let name): _ = engine.tryToExecute(Scenario(name))
            case .present(let name): _ = engine.present(Scenario(name))
            case .finish(let name, let outcome):
                // Only a presentation that is open is finished (a timeline's `finish` needs one).
                guard let open = engine.openPresentation(of: name) else { continue }
                try engine.finish(open, outcome)
            case .zone(let zone): engine.timeZone = TimeZone(identifier: zone)!
            }
            if case .wait = step {} else { timeline.append("\(offset)s \(step.line)") }
            // A fresh engine over the state as saved, as `rulec explain --state` loads it (the
            // install's id, zone and buckets given as its options).
            var loadedOptions = options
            loadedOptions.timeZone = engine.timeZone
            let loaded = try RuleEngine(
                checked: Self.checked, store: InMemoryStore(try store.load()), clock: ManualClock(clock.now()),
                options: loadedOptions)
            for name in Self.names {
                let scenario = Scenario(name)
                let can = engine.canExecute(scenario)
                let explained = engine.explain(scenario)
                let context = "seed \(seed), \(name) after \(timeline.last ?? "-"): \(explained.reason)"
                XCTAssertEqual(explained.wouldRun, can, "explain, " + context)
                XCTAssertEqual(observed.withValue { $0[name] }, can, "the observer, " + context)
                XCTAssertEqual(logged.withValue { $0[name] }, can, "the decision log, " + context)
                XCTAssertEqual(loaded.explain(scenario).wouldRun, can, "the saved state, " + context)
                XCTAssertEqual(loaded.canExecute(scenario), can, "the saved state, " + context)
                compared += 1
            }
        }
        // The simulator, fed the same history and a `try` of one scenario at its end, answers as
        // this engine's `canExecute` does (the override, buckets and install id alike).
        for name in Self.names {
            let expected = engine.canExecute(Scenario(name))
            let text = (timeline + ["\(offset)s try \(name)"]).joined(separator: "\n")
            let line = try simulate(text, options: options).last ?? ""
            XCTAssertEqual(line.hasSuffix(" \(name) yes"), expected, "the simulator, seed \(seed): \(line)\n\(text)")
        }
        return compared
    }

    /// The lines a timeline prints when ``TimelineRunner`` plays it with `options`.
    func simulate(_ text: String, options: RuleEngine.Options) throws -> [String] {
        var parser = TimelineParser(
            file: SourceFile(path: "history.timeline", text: text), program: Self.checked.program)
        let steps = parser.parse()
        XCTAssertEqual(parser.diagnostics.map(\.message), [], text)
        let clock = ManualClock(TimelineRunner.start)
        let engine = try RuleEngine(checked: Self.checked, store: InMemoryStore(), clock: clock, options: options)
        return TimelineRunner.run(steps, on: engine, clock: clock)
    }

    /// A held-out install: each path says not eligible (the observers once said eligible).
    func testEveryPathAppliesTheHoldout() throws {
        var options = RuleEngine.Options(logSubsystem: nil)
        options.bucketOverrides = ["offer": 3]
        let engine = try RuleEngine(
            source: "# language 1.2\nscenario Offer < holdout 30% \"offer\" >", clock: ManualClock(), options: options)
        let observed = Locked<Bool?>(nil)
        let id = engine.addStatusObserver(for: "Offer") { value, _ in observed.withValue { $0 = value } }
        defer { engine.removeObserver(id) }
        XCTAssertFalse(engine.canExecute("Offer"))
        XCTAssertEqual(observed.withValue { $0 }, false)
        XCTAssertFalse(engine.explain("Offer").wouldRun)
        let stream = engine.updates(for: "Offer")
        let first = Locked<Bool?>(nil)
        let read = expectation(description: "the stream's first value")
        Task {
            for await value in stream {
                first.withValue { $0 = value }
                break
            }
            read.fulfill()
        }
        wait(for: [read], timeout: 10)
        XCTAssertEqual(first.withValue { $0 }, false)
        XCTAssertFalse(engine.tryToExecute("Offer"))
        XCTAssertEqual(engine.controlExposures(of: "Offer"), 1)
    }

    /// An override decides alone, holdout included: every path shows a forced scenario.
    func testAnOverrideDecidesAloneEverywhere() throws {
        var options = RuleEngine.Options(logSubsystem: nil)
        options.bucketOverrides = ["offer": 3]
        options.overrides = ["Offer": true]
        let engine = try RuleEngine(
            source: "# language 1.2\nscenario Offer < min_events 3; holdout 30% \"offer\" >", clock: ManualClock(),
            options: options)
        let observed = Locked<Bool?>(nil)
        let id = engine.addStatusObserver(for: "Offer") { value, _ in observed.withValue { $0 = value } }
        defer { engine.removeObserver(id) }
        XCTAssertTrue(engine.canExecute("Offer"))
        XCTAssertEqual(observed.withValue { $0 }, true)
        XCTAssertEqual(engine.explain("Offer").reason, "yes")
        XCTAssertTrue(engine.tryToExecute("Offer"))
        XCTAssertEqual(engine.controlExposures(of: "Offer"), 0)
    }
}

/// Holdouts, like `bucket`, need the install's id: rules with only a holdout make one and keep
/// it, so that an install is placed by its own id (with none, every install read bucket 0 and
/// was held out of every holdout).
final class HoldoutInstallIDTests: XCTestCase {
    func testRulesWithOnlyAHoldoutMakeAnInstallID() throws {
        let store = InMemoryStore()
        let rules = "# language 1.2\nscenario Offer < holdout 10% \"offer\" >"
        let engine = try RuleEngine(source: rules, store: store, clock: ManualClock())
        let id = try XCTUnwrap(engine.installID, "an id is made")
        XCTAssertEqual(engine.isHeldOut("Offer"), InstallBucket.bucket(salt: "offer", installID: id) < 10)
        let again = try RuleEngine(source: rules, store: store, clock: ManualClock())
        XCTAssertEqual(again.installID, id, "and kept")
    }
}
