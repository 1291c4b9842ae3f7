import Foundation
import RuleLang

/// The one decision: every answer about a scenario (`canExecute`, `tryToExecute`, `present`,
/// `executeNext`, the observers, ``ScenarioStatus``, `explain` and the decision log, and so the
/// tools built on them) is ``EngineCore/decide(_:now:_:)``. It reads, in this order:
///
/// 1. an override (``RuleEngine/Options/overrides``): it decides alone, holdout included;
/// 2. retirement (`retired scenario`): no;
/// 3. the scenario's clauses, then its group's (``EngineCore/judge(_:of:now:for:)``);
/// 4. a presentation holding its group (``EngineCore/hold(of:now:)``);
/// 5. its holdouts (its own and its group's): the control arm is never shown.
///
/// What it finds goes to a ``DecisionFindings``: ``FirstRefusal`` stops at the first clause
/// that fails and builds no text (the calls' answers), ``Findings`` takes every clause with
/// its numbers and earliest time (an explanation). Both run the same code, specialized.
enum Verdict: Equatable {
    /// A clause, the group, a hold, retirement or an override refuses it.
    case refused
    /// Everything passes, but the install is in a holdout's control arm: not shown (a call that
    /// would show it records a control exposure).
    case heldOut
    /// It would run now.
    case shows
}

/// Where ``EngineCore/decide(_:now:_:)`` puts what it finds.
protocol DecisionFindings {
    /// True: every finding, with its words and earliest time; false: the answer alone, ended by
    /// the first refusal.
    static var detailed: Bool { get }
    /// One finding. `text` is asked only when ``detailed``; `window`: a local window's clause
    /// (windows bound the earliest time together, not each by its own opening).
    mutating func add(
        _ text: @autoclosure () -> String, group: String?, _ result: EngineCore.Assessment,
        window: @autoclosure () -> LocalWindow?)
}

/// The answer alone: nothing is kept. Not empty: every value of an empty type shares one
/// address, so the `inout` accesses of decisions on different threads (different engines)
/// were one variable's to the exclusivity checks, a race to ThreadSanitizer (CI's TSan run).
struct FirstRefusal: DecisionFindings {
    private var unused: UInt8 = 0
    static var detailed: Bool { false }
    @inline(__always)
    mutating func add(
        _ text: @autoclosure () -> String, group: String?, _ result: EngineCore.Assessment,
        window: @autoclosure () -> LocalWindow?
    ) {}
}

/// Every finding, for an explanation.
struct Findings: DecisionFindings {
    static var detailed: Bool { true }
    var clauses: [ClauseExplanation] = []
    /// A presentation's hold, listed first whatever the order it was judged in.
    var hold: ClauseExplanation?
    /// The latest time a time-based finding passes from (nil: one never does by waiting).
    var earliest: Double?
    var windows: [LocalWindow] = []

    init(now time: Double) { earliest = time }

    mutating func add(
        _ text: @autoclosure () -> String, group: String?, _ result: EngineCore.Assessment,
        window: @autoclosure () -> LocalWindow?
    ) {
        let clause = ClauseExplanation(clause: text(), group: group, passes: result.passes, detail: result.detail)
        if clause.clause == Findings.showing { hold = clause } else { clauses.append(clause) }
        if let window = window() {
            windows.append(window)
            return
        }
        switch result.readyAt {
        case .now: break
        case .at(let when): earliest = earliest.map { max($0, when) }
        case .never: earliest = nil
        }
    }

    /// The clause text of a presentation's hold.
    static let showing = "showing"

    /// The explanation of `name` these findings make, with `verdict`.
    func explanation(of name: String, _ verdict: Verdict, zone: () -> TimeZone) -> Explanation {
        var earliest = earliest
        if let start = earliest, !windows.isEmpty {
            earliest = LocalWindow.firstTime(all: windows, from: start, in: LocalClock(zone: zone()))
        }
        return Explanation(
            scenario: name, isKnown: true, wouldRun: verdict == .shows, clauses: (hold.map { [$0] } ?? []) + clauses,
            earliest: earliest.map { Date(timeIntervalSince1970: $0) }, timeZone: zone())
    }
}

extension EngineCore {
    /// Scenario `index`'s verdict at `time`; what it finds goes to `found`. The only place a
    /// scenario is decided (see ``Verdict``).
    @inline(__always)
    mutating func decide<F: DecisionFindings>(_ index: Int, now time: Double, _ found: inout F) -> Verdict {
        let detailed = F.detailed
        // The state is looked over at every decision when the clock reads earlier than it did,
        // whatever decides it: an answer never depends on which scenario was asked first.
        rebaseAheadIfNeeded(to: time)
        if !forced.isEmpty, let forced = forced[index] {
            let result = Assessment(
                passes: forced, detail: detailed ? "forced by override to \(forced ? "pass" : "fail")" : "",
                readyAt: forced ? .now : .never)
            found.add("override", group: nil, result, window: nil)
            return forced ? .shows : .refused
        }
        let flags = clauses.flags[index]
        if flags & ClauseTables.retired != 0 {
            let result = Assessment(
                passes: false, detail: detailed ? "switched off by these rules; its history is kept" : "",
                readyAt: .never)
            found.add("retired", group: nil, result, window: nil)
            return .refused
        }
        buildView(index)
        let group = Int(clauses.groupOf[index])
        // Read in place, checked: through `withUnsafeBufferPointer` (this and the clauses' reads
        // in `judgeTallies`) it took 7 instructions fewer of about 1,070 a refused shared
        // `tryToExecute` (callgrind of `rulebench profile shared-try`, 200,000 calls: 214.7M
        // against 216.1M), below what a timed line can show.
        let ahead = views[index].isAhead(of: time)
        if ahead || (group >= 0 && budgets[group].isAhead(of: time)) {
            rebase(index, to: time)
        }
        // Each clause is read in place (a copy of one holding a window retains its arrays); its
        // text and window are asked only for an explanation.
        var passes = true
        let scenarioTexts = detailed ? texts(scenario: index) : []
        let own = clauses.range(ofScenario: index)
        for k in own {
            let clause = clauses.clauses[k]
            let result =
                clause.readsTallies
                ? Self.judge(
                    clause, events: views[index].events, executions: views[index].executions, now: time,
                    in: meta.epoch, for: F.self)
                : clause.readsOutcomes
                    ? Self.judgeOutcome(
                        clause, tallies: tallies, streams: streams, now: time, in: meta.epoch, for: F.self)
                    : judge(clause, of: .scenario(index), now: time, for: F.self)
            found.add(scenarioTexts[k - own.lowerBound], group: nil, result, window: Self.window(clauses.clauses[k]))
            guard result.passes || detailed else { return .refused }
            passes = passes && result.passes
        }
        if group >= 0 {
            let groupTexts = detailed ? texts(group: group) : []
            let groupName = detailed ? rules.groups[group].name : nil
            let shared = clauses.range(ofGroup: group)
            for k in shared {
                let clause = clauses.clauses[k]
                let result =
                    clause.readsTallies
                    ? Self.judge(
                        clause, events: .empty, executions: budgets[group], now: time, in: meta.epoch, for: F.self)
                    : judge(clause, of: .group(group), now: time, for: F.self)
                found.add(
                    groupTexts[k - shared.lowerBound], group: groupName, result, window: Self.window(clauses.clauses[k])
                )
                guard result.passes || detailed else { return .refused }
                passes = passes && result.passes
            }
        }
        // A presentation on screen holds its group: nothing else of it shows meanwhile. Asked
        // after the clauses, so that an answer they already refuse pays nothing for it.
        if let hold = hold(of: index, now: time), let expires = hold.expires {
            var result = Assessment(passes: false, readyAt: .at(expires))
            if detailed {
                let showing = hold.info?["scenario"] ?? rules.scenarios[index].name
                result.detail =
                    "\(showing) is showing (for \(DurationText.human(time - hold.created)); "
                    + "it ends when finished, or in \(DurationText.human(expires - time)))"
            }
            found.add(Findings.showing, group: nil, result, window: nil)
            guard detailed else { return .refused }
            passes = false
        }
        let heldOut = flags & ClauseTables.holdout != 0 && judgeHoldouts(index, &found)
        return !passes ? .refused : heldOut ? .heldOut : .shows
    }

    /// True when the install is in the control arm of one of scenario `index`'s holdouts. Out
    /// of line: most scenarios have none, and the decision stays small enough for its clauses
    /// to be inlined into it.
    @inline(never)
    private mutating func judgeHoldouts<F: DecisionFindings>(_ index: Int, _ found: inout F) -> Bool {
        var heldOut = false
        for holdout in rules.scenarios[index].holdouts {
            let (held, bucket) = arm(of: holdout)
            heldOut = heldOut || held
            var result = Assessment(passes: !held, readyAt: held ? .never : .now)
            if F.detailed { result.detail = "bucket \(bucket): " + (held ? "the control arm, never shown" : "shown") }
            found.add("holdout \(holdout.share)% " + Printer.string(holdout.salt), group: nil, result, window: nil)
            if held && !F.detailed { break }
        }
        return heldOut
    }

    /// The local window `clause` is, if it is one.
    @inline(__always)
    static func window(_ clause: CompiledClause) -> LocalWindow? {
        if case .local(let window) = clause { return window }
        return nil
    }

    /// Scenario `index`'s verdict at `time`, the answer alone.
    @inline(__always)
    mutating func verdict(_ index: Int, now time: Double) -> Verdict {
        var found = FirstRefusal()
        return decide(index, now: time, &found)
    }

    /// True when scenario `index` would run at `time`: what `canExecute` answers and the
    /// observers deliver.
    @inline(__always)
    mutating func wouldShow(_ index: Int, now time: Double) -> Bool {
        verdict(index, now: time) == .shows
    }

    /// Says, clause by clause, why scenario `index` would or would not run now.
    mutating func explain(_ index: Int) -> Explanation {
        let time = now()
        var found = Findings(now: time)
        let verdict = decide(index, now: time, &found)
        var explanation = found.explanation(of: rules.scenarios[index].name, verdict) { zone() }
        // Language 1.3's clauses that judge nothing, but say where a presentation and a wish stand.
        if let line = countLine(of: index, now: time) { explanation.clauses.append(line) }
        if let (line, until) = wishLine(of: index, now: time) {
            explanation.clauses.append(line)
            explanation.deferredUntil = until.map { Date(timeIntervalSince1970: $0) }
        }
        return explanation
    }
}
