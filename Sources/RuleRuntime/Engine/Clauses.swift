import Foundation
import RuleLang

/// What each clause means: the one switch over clause kinds. It answers whether a clause
/// passes and, when asked (`detailed`), its numbers and the earliest time at which waiting
/// alone makes it pass. ``EngineCore/passes(_:now:)`` asks for the answer only (the strings
/// are then never built: the switch is inlined with `detailed` false), ``EngineCore/explain(_:)``
/// for everything; `ClauseModelTests` holds both to grammar.md's definitions.
extension EngineCore {
    /// Whose clause: a scenario's (its view) or a group's (its budget, and no events).
    enum ClauseOwner {
        case scenario(Int)
        case group(Int)
    }

    enum ReadyAt {
        /// Passes now, or is not time-based.
        case now
        /// A time-based clause that passes from this time on, if nothing else happens.
        case at(Double)
        /// Cannot pass by waiting alone.
        case never
    }

    struct Assessment {
        var passes: Bool
        var detail: String = ""
        var readyAt: ReadyAt = .now
    }

    /// What `clause` of `owner` means at `time`. Reads the view or budget in place (a copy of a
    /// view retains its four arrays).
    @inline(__always)
    mutating func judge<F: DecisionFindings>(
        _ clause: CompiledClause, of owner: ClauseOwner, now time: Double, for findings: F.Type
    ) -> Assessment {
        switch clause {
        case .minEvents, .maxEvents, .maxExec, .sinceFirst, .sinceLast, .between:
            return judgeTallies(clause, of: owner, now: time, for: F.self)
        case .contexts(let start, let end, let outside):
            return judgeContexts(start, end, outside: outside, for: F.self)
        case .when, .growingBetween, .minDays, .afterDuration, .afterNone, .local, .maxExecLocal:
            return judgeWithTables(clause, of: owner, now: time, for: F.self)
        }
    }

    /// The clauses that read the engine's tables (conditions, streams, the zone).
    @inline(__always)
    private mutating func judgeWithTables<F: DecisionFindings>(
        _ clause: CompiledClause, of owner: ClauseOwner, now time: Double, for findings: F.Type
    ) -> Assessment {
        let detailed = F.detailed
        switch clause {
        case .when(let condition):
            let passes = evaluate(rules.conditions[condition], now: time) == .bool(true)
            guard detailed else { return Assessment(passes: passes) }
            // `min_events N where ...` (a sum of filtered counts): the count so far, as `min_events`.
            if case .compare(_, let counted, _) = rules.conditions[condition], case .countOf = counted,
                case .int(let count) = evaluate(counted, now: time)
            {
                return Assessment(passes: passes, detail: "\(count) so far")
            }
            return Assessment(passes: passes, detail: passes ? "true" : "false")
        case .minDays(let n, let window):
            // Local days of the streams the scenario counts. Waiting alone adds no active day:
            // a failing one is never ready by waiting.
            guard case .scenario(let index) = owner else { return Assessment(passes: false) }
            let active = activeDays(of: rules.scenarios[index].streams, window: window, now: time)
            let passes = active >= n
            guard detailed else { return Assessment(passes: passes) }
            let detail = "active on \(active) of the last \(window) days" + (passes ? "" : "; needs \(n)")
            return Assessment(passes: passes, detail: detail, readyAt: passes ? .now : .never)
        case .growingBetween(let list):
            // The gap for the executions so far, judged as a plain `between` of that gap.
            let total = executions(of: owner).total
            guard let gap = rules.gap(list, after: total) else {
                return Assessment(passes: true, detail: detailed ? "never executed" : "")
            }
            var result = judgeTallies(.between(gap.seconds), of: owner, now: time, for: F.self)
            if detailed {
                let after = "after the \(EngineCore.ordinal(Int(clamping: total))) execution"
                result.detail = "\(DurationText.human(gap.seconds)) (\(after)): " + result.detail
            }
            return result
        case .afterDuration, .afterNone:
            return Self.judgeOutcome(clause, tallies: tallies, streams: streams, now: time, in: meta.epoch, for: F.self)
        case .local(let window):
            let clock = LocalClock(zone: zone())
            let (day, second) = clock.local(time)
            let passes = window.holds(day: day, second: second)
            guard detailed else { return Assessment(passes: passes) }
            let detail: String
            switch window {
            case .hours: detail = "local time " + ClockTime.text(Int(second / 60))
            case .days: detail = "local day " + Weekday.of(dayNumber: day).name
            case .from, .until: detail = "local date " + CalendarDate.text(dayNumber: day)
            }
            if passes { return Assessment(passes: true, detail: detail) }
            guard let opens = window.nextOpening(after: time, in: clock) else {
                return Assessment(passes: false, detail: detail + "; closed for good", readyAt: .never)
            }
            let at = clock.local(opens)
            let when =
                at.day == day
                ? ClockTime.text(Int(at.second / 60))
                : CalendarDate.text(dayNumber: at.day) + " " + ClockTime.text(Int(at.second / 60))
            return Assessment(passes: false, detail: detail + "; opens at " + when, readyAt: .at(opens))
        case .maxExecLocal(let n, let week):
            // Executions since the local day (ISO week, from Monday) began; a later time (the
            // clock went back) counts as now. Waiting ends the day: ready at the next one's start.
            let clock = LocalClock(zone: zone())
            let (start, next) = Self.calendarPeriod(week: week, at: time, clock)
            let recent = executions(of: owner).recent
            var first = recent.count
            while first > 0 && recent[first - 1] >= start { first -= 1 }
            let count = Int64(recent.count - first)
            let passes = count < n
            guard detailed else { return Assessment(passes: passes) }
            let detail = "\(count) \(week ? "this week" : "today")"
            return Assessment(passes: passes, detail: detail, readyAt: passes ? .now : n <= 0 ? .never : .at(next))
        case .contexts(let start, let end, let outside):
            return judgeContexts(start, end, outside: outside, for: F.self)
        case .minEvents, .maxEvents, .maxExec, .sinceFirst, .sinceLast, .between:
            return judgeTallies(clause, of: owner, now: time, for: F.self)
        }
    }

    /// `in A, B` passes while the app is in one of them; `not in A, B` while it is in none.
    /// Waiting alone changes neither: a failing one has no earliest time. Out of line: inlined,
    /// it grew `judge` past the size at which `judgeWithTables` is inlined into it, and a `when`
    /// paid 38 instructions more (callgrind of `rulebench profile when`, 200,000 calls: 217.3M
    /// against 208.9M before contexts; out of line 209.5M); `context_clause_vs_plain` 1.14-1.15x.
    @inline(never)
    func judgeContexts<F: DecisionFindings>(_ start: Int32, _ end: Int32, outside: Bool, for findings: F.Type)
        -> Assessment
    {
        var found = -1
        for position in Int(start)..<Int(end) {
            let index = Int(rules.contextLists[position])
            if index < inContext.count && inContext[index] {
                found = index
                break
            }
        }
        let passes = (found >= 0) != outside
        guard F.detailed else { return Assessment(passes: passes) }
        let detail = found >= 0 ? "in \(rules.contextNames[found])" : "in none of them"
        return Assessment(passes: passes, detail: detail, readyAt: passes ? .now : .never)
    }

    /// `after OUTCOME D` and `after OUTCOME next ...|never` over the outcome streams' tallies,
    /// read in place (static, so that the decision inlines it as it does the count clauses).
    @inline(__always)
    static func judgeOutcome<F: DecisionFindings>(
        _ clause: CompiledClause, tallies: StreamTallies, streams: StreamTable, now time: Double, in epoch: Epoch,
        for findings: F.Type
    ) -> Assessment {
        let detailed = F.detailed
        switch clause {
        case .afterDuration(let slot, let d):
            // `since_last` over the outcome's stream: none yet passes.
            let last = tallies.counts(slot).last
            let word = detailed ? EngineCore.outcomeWord(streams.name(slot)) : ""
            var result = Self.since(last, d, word, none: true, noneDetail: "none yet", now: time, detailed: detailed)
            if detailed && !result.passes, let last {
                result.detail = "\(word) \(DurationText.human(max(0, time - last))) ago; " + result.detail
            }
            return result
        case .afterNone(let slot, let scope):
            // None in the scope passes; waiting alone never ends a version, a session or forever.
            let passes = tallies.count(slot, scope, now: time, in: epoch) == 0
            guard detailed else { return Assessment(passes: passes) }
            let word = EngineCore.outcomeWord(streams.name(slot))
            let ago = tallies.counts(slot).last.map { "\(word) \(DurationText.human(max(0, time - $0))) ago" }
            let this = scope == .version ? "version" : "session"
            if passes {
                let none = scope == .install ? "none yet" : "none this \(this)"
                return Assessment(passes: true, detail: ago.map { "\($0), \(none)" } ?? none)
            }
            let quiet = scope == .install ? "quiet for good" : "quiet until the next \(this)"
            return Assessment(passes: false, detail: "\(ago ?? word); \(quiet)", readyAt: .never)
        default:
            return Assessment(passes: false)  // not an outcome clause
        }
    }

    /// The first instant of the local day (or ISO week, Monday first) holding `time`, and of the
    /// next one, on `clock`.
    static func calendarPeriod(week: Bool, at time: Double, _ clock: LocalClock) -> (start: Double, next: Double) {
        let today = clock.local(time).day
        // Day 0 (1970-01-01) was a Thursday: Monday is 3 days before.
        let first = week ? today - ((today % 7 + 7 + 3) % 7) : today
        let length: Int64 = week ? 7 : 1
        let start = clock.firstInstant(ofLocalDay: first, after: time - Double(length + 2) * 86_400)
        return (start, clock.firstInstant(ofLocalDay: first + length, after: time))
    }

    /// The outcome an outcome stream's name is of (`declined` for `@declined:RateApp`).
    static func outcomeWord(_ stream: String) -> String {
        EngineStream.parseOutcome(stream)?.outcome.rawValue ?? stream
    }

    /// ``judge(_:events:executions:now:in:for:)`` over `owner`'s view or budget, read in
    /// place (not a recursion of ``judge(_:of:now:for:)``, so that it is inlined).
    @inline(__always)
    private func judgeTallies<F: DecisionFindings>(
        _ clause: CompiledClause, of owner: ClauseOwner, now time: Double, for findings: F.Type
    ) -> Assessment {
        let epoch = meta.epoch
        switch owner {
        case .scenario(let index):
            return Self.judge(
                clause, events: views[index].events, executions: views[index].executions, now: time, in: epoch,
                for: F.self)
        case .group(let group):
            return Self.judge(
                clause, events: .empty, executions: budgets[group], now: time, in: epoch, for: F.self)
        }
    }

    /// The executions `owner` counts: its view's, or its budget.
    private func executions(of owner: ClauseOwner) -> Tally {
        switch owner {
        case .scenario(let index): return views[index].executions
        case .group(let group): return budgets[group]
        }
    }

    /// What a clause over counts and times means (any but `when`, `min_days` and a growing
    /// `between`, which ``judge(_:of:now:for:)`` answers) for these tallies at `time`.
    /// Thresholds are inclusive; ages are never negative: a time later than now (the clock
    /// went back) counts as just now, so a clause waits until the clock passes that time plus
    /// D, never less.
    @inline(__always)
    static func judge<F: DecisionFindings>(
        _ clause: CompiledClause, events: Tally, executions: Tally, now time: Double, in epoch: Epoch,
        for findings: F.Type
    ) -> Assessment {
        let detailed = F.detailed
        /// When enough of the times counted in a window leave it for at most `allowed` to be left.
        /// Other scopes are not time-based: they do not bound the earliest time.
        func windowReady(_ tally: Tally, _ scope: CountScope, allowed: Int64) -> ReadyAt {
            guard case .within(let window) = scope else { return .now }
            // `max_exec 0 within D` allows nothing, however long one waits.
            guard allowed >= 0 else { return .never }
            let first = tally.firstIndex(inWindow: window, now: time)
            let excess = Int64(tally.recent.count - first) - allowed
            guard excess > 0 else { return .now }
            return .at(tally.recent[first + Int(excess) - 1] + window)
        }
        func since(_ at: Double?, _ d: Double, _ which: String, none: Bool, noneDetail: String) -> Assessment {
            Self.since(at, d, which, none: none, noneDetail: noneDetail, now: time, detailed: detailed)
        }
        switch clause {
        case .minEvents(let n, let scope):
            let count = events.count(scope, now: time, in: epoch)
            return Assessment(passes: count >= n, detail: detailed ? "\(count) so far" : "")
        case .maxEvents(let n, let scope):
            let count = events.count(scope, now: time, in: epoch)
            let passes = count <= n
            guard detailed else { return Assessment(passes: passes) }
            return Assessment(
                passes: passes, detail: "\(count) so far",
                readyAt: passes ? .now : windowReady(events, scope, allowed: n))
        case .maxExec(let n, let scope):
            let count = executions.count(scope, now: time, in: epoch)
            let passes = count < n
            guard detailed else { return Assessment(passes: passes) }
            return Assessment(
                passes: passes, detail: "\(count) so far",
                readyAt: passes ? .now : windowReady(executions, scope, allowed: n - 1))
        case .sinceFirst(let d):
            // Nothing recorded yet: fails, and waiting cannot help.
            return since(events.first, d, "first", none: false, noneDetail: "no event yet")
        case .sinceLast(let d):
            return since(events.last, d, "last", none: true, noneDetail: "no event yet")
        case .between(let d):
            return since(executions.last, d, "last", none: true, noneDetail: "never executed")
        case .when, .growingBetween, .minDays, .afterDuration, .afterNone, .local, .maxExecLocal, .contexts:
            return Assessment(passes: false)  // answered by the engine, which holds the tables
        }
    }

    /// "At least `d` since `at`" at `time` (absent: `none` passes or not): `since_first`,
    /// `since_last`, `between` and `after OUTCOME D`.
    @inline(__always)
    static func since(
        _ at: Double?, _ d: Double, _ which: String, none: Bool, noneDetail: String, now time: Double, detailed: Bool
    ) -> Assessment {
        guard let at else {
            guard detailed else { return Assessment(passes: none) }
            return Assessment(passes: none, detail: noneDetail, readyAt: none ? .now : .never)
        }
        let age = max(0, time - at)
        let passes = age >= d
        guard detailed else { return Assessment(passes: passes) }
        if passes { return Assessment(passes: true, detail: "\(which) \(DurationText.human(age)) ago") }
        return Assessment(passes: false, detail: "\(DurationText.human(d - age)) left", readyAt: .at(at + d))
    }

    /// `1st`, `2nd`, `3rd`, `4th`, `11th`, `21st`.
    static func ordinal(_ n: Int) -> String {
        let suffix: String
        switch (n % 10, n % 100) {
        case (_, 11...13): suffix = "th"
        case (1, _): suffix = "st"
        case (2, _): suffix = "nd"
        case (3, _): suffix = "rd"
        default: suffix = "th"
        }
        return "\(n)\(suffix)"
    }
}
