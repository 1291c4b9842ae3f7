import Foundation
import RuleRuntime
import XCTest

/// Every clause computed straight from grammar.md's definitions (section 4, "Local days", the
/// scopes) over plain arrays of times, and compared with the engine on 10,000 seeded random
/// histories: `canExecute`, `tryToExecute` and `explain`'s earliest time, after every step.
/// Sessions and versions, windows, stacked caps, groups, growing gaps, and local days across
/// zones and daylight-saving changes (the histories start four days before Europe's change),
/// and a clock set back now and then. Language 1.2 too: caps on the local calendar (`per day`,
/// `per week`), `days`, outcomes (`after`), the crash stream, holdouts.
final class ClauseModelTests: XCTestCase {
    /// A history's random numbers (a fixed seed per history).
    struct Random {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        mutating func pick<T>(_ values: [T]) -> T { values[next(values.count)] }
    }

    enum Scope: Equatable {
        case install, version, session
        case within(Double)
        var text: String {
            switch self {
            case .install: return ""
            case .version: return " per version"
            case .session: return " per session"
            case .within(let d): return " within \(Int(d))s"
            }
        }
    }

    enum Clause {
        case minEvents(Int, Scope)
        case maxEvents(Int, Scope)
        case maxExec(Int, Scope)
        case sinceFirst(Double)
        case sinceLast(Double)
        case between([Double])
        case minDays(Int, days: Int)
        /// `max_exec N per day` / `per week`.
        case maxExecCalendar(Int, week: Bool)
        /// `days ...`: the weekdays (1 Sunday ... 7 Saturday, as Foundation numbers them).
        case days(Set<Int>)
        /// `after OUTCOME D`, `after OUTCOME next session|next version|never` (scope: install).
        case afterWait(String, Double)
        case afterNone(String, Scope)
        /// `when since_last(crash) >= D`.
        case crashQuiet(Double)
        /// `holdout N% "SALT"`, the install in bucket `bucket` of it.
        case holdout(Int, salt: String, bucket: Int)
        var text: String {
            switch self {
            case .minEvents(let n, let scope): return "min_events \(n)\(scope.text)"
            case .maxEvents(let n, let scope): return "max_events \(n)\(scope.text)"
            case .maxExec(let n, let scope): return "max_exec \(n)\(scope.text)"
            case .sinceFirst(let d): return "since_first \(Int(d))s"
            case .sinceLast(let d): return "since_last \(Int(d))s"
            case .between(let gaps): return "between " + gaps.map { "\(Int($0))s" }.joined(separator: ", ")
            case .minDays(let n, let days): return "min_days \(n) within \(days)d"
            case .maxExecCalendar(let n, let week): return "max_exec \(n) per \(week ? "week" : "day")"
            case .days(let set):
                let names = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
                return "days " + set.sorted().map { names[$0 - 1] }.joined(separator: ", ")
            case .afterWait(let outcome, let d): return "after \(outcome) \(Int(d))s"
            case .afterNone(let outcome, let scope):
                return "after \(outcome) "
                    + (scope == .session ? "next session" : scope == .version ? "next version" : "never")
            case .crashQuiet(let d): return "when since_last(crash) >= \(Int(d))s"
            case .holdout(let share, let salt, _): return "holdout \(share)% \"\(salt)\""
            }
        }
    }

    /// A time with the session, version and zone current when it was recorded. `time` is as the
    /// scenario reads it (re-based to now when the clock was set back below it); `recorded` as
    /// recorded (a local day is the date it was recorded on).
    struct Stamp {
        var time: Double
        var recorded: Double
        /// Its place in the order of recording.
        var order: Int
        var session: Int
        var version: Int
        var zone: TimeZone

        func rebased(to now: Double) -> Stamp {
            var stamp = self
            stamp.time = min(time, now)
            return stamp
        }
    }

    /// The model's state: every event and execution, kept whole.
    struct History {
        var events: [String: [Stamp]] = [:]
        /// S's executions (its view's), and its group's (S's and T's: the budget).
        var executions: [Stamp] = []
        var budget: [Stamp] = []
        /// S's outcomes by word, and the crashes.
        var outcomes: [String: [Stamp]] = [:]
        var crashes: [Stamp] = []
        var session = 0
        var version = 0
        var zone: TimeZone
        var now: Double
    }

    static func count(_ stamps: [Stamp], _ scope: Scope, _ h: History) -> Int {
        switch scope {
        case .install: return stamps.count
        case .version: return stamps.filter { $0.version == h.version }.count
        case .session: return stamps.filter { $0.session == h.session }.count
        // "A window of D counts times whose age (never negative) is less than D."
        case .within(let d): return stamps.filter { max(0, h.now - $0.time) < d }.count
        }
    }

    /// The local date of `time` in `zone`, as a day number.
    static func day(_ time: Double, _ zone: TimeZone) -> Int {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: time))
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        return Int((utc.date(from: parts)!.timeIntervalSince1970 / 86_400).rounded())
    }

    /// The ISO 8601 calendar (weeks from Monday) in `zone`.
    static func calendar(_ zone: TimeZone) -> Calendar {
        var calendar = Calendar(identifier: .iso8601)
        calendar.timeZone = zone
        return calendar
    }

    /// Whether `clause` holds, and from when it would hold by waiting alone: `now` when it is
    /// not time-based or holds already, a time, or nil (never by waiting). A `days` clause's
    /// time is found with the others' (``earliestDay(_:from:_:)``): here it is `now`.
    static func model(
        _ clause: Clause, events: [Stamp], executions: [Stamp], _ h: History
    ) -> (passes: Bool, ready: Double?) {
        let now = h.now
        /// The time at which enough counted times leave window `d` for `allowed` to remain.
        func windowReady(_ stamps: [Stamp], _ scope: Scope, allowed: Int) -> Double? {
            guard case .within(let d) = scope else { return now }
            if allowed < 0 { return nil }
            let inside = stamps.map(\.time).filter { max(0, now - $0) < d }.sorted()
            let excess = inside.count - allowed
            return excess > 0 ? inside[excess - 1] + d : now
        }
        // "At least D old": ages are never negative (a time ahead of the clock is re-based to now).
        func atLeast(_ at: Double, _ d: Double) -> (passes: Bool, ready: Double?) {
            let age = max(0, now - at)
            return (age >= d, age >= d ? now : at + d)
        }
        switch clause {
        case .minEvents(let n, let scope):
            return (count(events, scope, h) >= n, now)
        case .maxEvents(let n, let scope):
            let passes = count(events, scope, h) <= n
            return (passes, passes ? now : windowReady(events, scope, allowed: n))
        case .maxExec(let n, let scope):
            let passes = count(executions, scope, h) < n
            return (passes, passes ? now : windowReady(executions, scope, allowed: n - 1))
        case .sinceFirst(let d):
            // The first event is the one recorded first, not the earliest time.
            guard let first = events.min(by: { $0.order < $1.order }) else { return (false, nil) }
            return atLeast(first.time, d)
        case .sinceLast(let d):
            // The last never moves backwards: the latest time.
            guard let last = events.map(\.time).max() else { return (true, now) }
            return atLeast(last, d)
        case .between(let gaps):
            // After the k-th execution the k-th gap applies (the last one from then on).
            guard let last = executions.map(\.time).max() else { return (true, now) }
            return atLeast(last, gaps[min(executions.count, gaps.count) - 1])
        case .minDays(let n, let days):
            // Distinct local dates (each event's in the zone it was recorded in) among the
            // `days` dates ending today (in the zone now); a date after today does not count.
            let today = day(now, h.zone)
            let active = Set(events.map { day($0.recorded, $0.zone) }.filter { $0 <= today && $0 > today - days })
            return (active.count >= n, active.count >= n ? now : nil)
        case .maxExecCalendar(let n, let week):
            // Executions since the local day (ISO week) began; ready when the next one begins.
            let period = calendar(h.zone).dateInterval(
                of: week ? .weekOfYear : .day, for: Date(timeIntervalSince1970: now))!
            let count = executions.filter { $0.time >= period.start.timeIntervalSince1970 }.count
            if count < n { return (true, now) }
            return (false, n <= 0 ? nil : period.end.timeIntervalSince1970)
        case .days(let set):
            let weekday = calendar(h.zone).component(.weekday, from: Date(timeIntervalSince1970: now))
            return (set.contains(weekday), now)
        case .afterWait(let outcome, let d):
            guard let last = h.outcomes[outcome]?.map(\.time).max() else { return (true, now) }
            return atLeast(last, d)
        case .afterNone(let outcome, let scope):
            let none = count(h.outcomes[outcome] ?? [], scope, h) == 0
            return (none, none ? now : nil)
        case .crashQuiet(let d):
            // A `when` bounds no earliest time.
            guard let last = h.crashes.map(\.time).max() else { return (true, now) }
            return (atLeast(last, d).passes, now)
        case .holdout(let share, _, let bucket):
            return (bucket >= share, bucket >= share ? now : nil)
        }
    }

    /// The first time from `start` at which every `days` clause holds: `start` itself, or the
    /// first local midnight of a day all allow, within two weeks (nil: none ever does).
    static func earliestDay(_ sets: [Set<Int>], from start: Double, _ zone: TimeZone) -> Double? {
        guard !sets.isEmpty else { return start }
        let allowed = sets.reduce(Set(1...7)) { $0.intersection($1) }
        let calendar = calendar(zone)
        var time = start
        for _ in 0..<15 {
            if allowed.contains(calendar.component(.weekday, from: Date(timeIntervalSince1970: time))) { return time }
            time = calendar.dateInterval(of: .day, for: Date(timeIntervalSince1970: time))!.end.timeIntervalSince1970
        }
        return nil
    }

    struct Rules {
        var text: String
        var own: [Clause]
        var streams: [String]
        var group: [Clause]?
    }

    static func makeRules(_ random: inout Random) -> Rules {
        let scopes: [Scope] = [.install, .version, .session, .within(3_600), .within(86_400), .within(3 * 86_400)]
        let durations: [Double] = [1_800, 3_600, 86_400, 2 * 86_400 + 7]
        var salts = 0
        func clause(group: Bool) -> Clause {
            // Language 1.2's clauses, a third of the time.
            if random.next(3) == 0 {
                switch random.next(group ? 3 : 6) {
                case 0: return .maxExecCalendar(random.next(3), week: random.next(2) == 0)
                case 1:
                    salts += 1
                    return .holdout(1 + random.next(60), salt: "h\(salts)", bucket: random.next(100))
                case 2: return .days(Set((1...7).filter { _ in random.next(3) != 0 }).union([1 + random.next(7)]))
                case 3: return .afterWait(random.pick(["later", "declined"]), random.pick(durations))
                case 4:
                    return .afterNone(
                        random.pick(["accepted", "dismissed"]), random.pick([.install, .version, .session]))
                default: return .crashQuiet(random.pick(durations))
                }
            }
            switch random.next(group ? 2 : 7) {
            case 0: return .maxExec(random.next(4), random.pick(scopes))
            case 1:
                let count = 1 + random.next(3)
                var gaps: [Double] = []
                for _ in 0..<count { gaps.append((gaps.last ?? 0) + random.pick(durations)) }
                return .between(gaps)
            case 2: return .minEvents(random.next(5), random.pick(scopes))
            case 3: return .maxEvents(random.next(5), random.pick(scopes))
            case 4: return .sinceFirst(random.pick(durations))
            case 5: return .sinceLast(random.pick(durations))
            default: return .minDays(1 + random.next(3), days: 2 + random.next(6))
            }
        }
        let own = (0..<(1 + random.next(4))).map { _ in clause(group: false) }
        let streams = random.pick([["S"], ["a"], ["a", "b"]])
        let on = streams == ["S"] ? "" : "on " + streams.joined(separator: ", ") + "; "
        let body = "scenario S < \(on)" + own.map(\.text).joined(separator: "; ") + " >"
        guard random.next(2) == 0 else { return Rules(text: "# language 1.2\n\(body)\n", own: own, streams: streams) }
        let shared = (0..<(1 + random.next(2))).map { _ in clause(group: true) }
        let text = """
            # language 1.2
            group G < \(shared.map(\.text).joined(separator: "; ")) > {
                \(body)
                scenario T < on b >
            }

            """
        return Rules(text: text, own: own, streams: streams, group: shared)
    }

    func testEveryClauseMatchesItsDefinitionOverRandomHistories() throws {
        let start = 1_774_440_000.0  // 2026-03-25T12:00:00Z: Europe moves its clocks 4 days later
        let zones = ["Europe/Paris", "America/New_York", "Asia/Kathmandu", "UTC"].map { TimeZone(identifier: $0)! }
        // Now and then the clock is set back (a device's clock corrected): the times ahead of it
        // are re-based to now when the scenario is read (grammar.md, section 7).
        let steps: [Double] = [0, 60, 1_800, 3_600, 5 * 3_600, 86_399, 86_400, 2 * 86_400 + 7, -1_800, -86_400 - 60]
        var compared = 0
        var histories = 0
        var refused = 0
        var seed = 0
        while histories < 10_000 {
            seed += 1
            var random = Random(state: UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 &+ 1)
            let rules = Self.makeRules(&random)
            let clock = ManualClock(Date(timeIntervalSince1970: start))
            var h = History(zone: random.pick(zones), now: start)
            var options = RuleEngine.Options(recentLimit: 64, logSubsystem: nil, timeZone: h.zone)
            for case .holdout(_, let salt, let bucket) in rules.own + (rules.group ?? []) {
                options.bucketOverrides[salt] = bucket
            }
            // Now and then a tester's override: it decides alone (grammar.md, "Overrides").
            let forced: Bool? = random.next(20) == 0 ? random.next(2) == 0 : nil
            if let forced { options.overrides = ["S": forced] }
            // The checker refuses clauses that can never hold together: another seed.
            guard
                let engine = try? RuleEngine(source: rules.text, store: InMemoryStore(), clock: clock, options: options)
            else {
                refused += 1
                continue
            }
            histories += 1
            var versionName = 1
            engine.startSession(version: "\(versionName)")
            var recorded = 0
            func stamp() -> Stamp {
                recorded += 1
                return Stamp(
                    time: h.now, recorded: h.now, order: recorded, session: h.session, version: h.version, zone: h.zone)
            }
            /// What reading S (or recording its execution) does to the times it reads: any ahead of
            /// now is now, in its view (events and executions) and its group's budget.
            func rebase() {
                let now = h.now
                for key in h.events.keys { h.events[key] = h.events[key]!.map { $0.rebased(to: now) } }
                for key in h.outcomes.keys { h.outcomes[key] = h.outcomes[key]!.map { $0.rebased(to: now) } }
                h.crashes = h.crashes.map { $0.rebased(to: now) }
                h.executions = h.executions.map { $0.rebased(to: now) }
                h.budget = h.budget.map { $0.rebased(to: now) }
            }
            /// Whether S would run (`passes`), whether its clauses pass but for its holdouts
            /// (`clauses`: a call then records an execution, shown or a control exposure), and
            /// the earliest time.
            func expected() -> (passes: Bool, clauses: Bool, earliest: Double?) {
                rebase()
                let events = rules.streams.flatMap { h.events[$0] ?? [] }
                let own = h.executions
                let budget = h.budget
                var clauses = true
                var held = false
                var days: [Set<Int>] = []
                var earliest: Double? = h.now
                let all = rules.own.map { ($0, own) } + (rules.group ?? []).map { ($0, budget) }
                for (clause, executions) in all {
                    let result = Self.model(clause, events: events, executions: executions, h)
                    if case .holdout = clause {
                        held = held || !result.passes
                    } else {
                        clauses = clauses && result.passes
                    }
                    // Local windows bound the earliest time together, from the others' time.
                    if case .days(let set) = clause {
                        days.append(set)
                        continue
                    }
                    earliest = earliest.flatMap { e in result.ready.map { max(e, $0) } }
                }
                if let start = earliest { earliest = Self.earliestDay(days, from: start, h.zone) }
                if let forced { return (forced, forced, forced ? h.now : nil) }
                return (clauses && !held, clauses, earliest)
            }
            for step in 0..<24 {
                switch random.next(12) {
                case 0:
                    h.session += 1
                    if random.next(2) == 0 {
                        h.version += 1
                        versionName += 1
                    }
                    engine.startSession(version: "\(versionName)")
                case 1, 2, 3:
                    let stream = random.pick(["S", "a", "b"])
                    engine.trigger(Event(stream))
                    h.events[stream, default: []].append(stamp())
                case 4:
                    let name = rules.group != nil && random.next(3) == 0 ? "T" : "S"
                    // Recording an execution re-bases what it reads first, as a read does (T's
                    // view is not modelled; its group's budget is).
                    engine.recordExecution(Scenario(name))
                    if name == "S" {
                        rebase()
                    } else {
                        let now = h.now
                        h.budget = h.budget.map { $0.rebased(to: now) }
                    }
                    let executed = stamp()
                    if name == "S" { h.executions.append(executed) }
                    h.budget.append(executed)
                case 5:
                    let want = expected()
                    XCTAssertEqual(engine.tryToExecute("S"), want.passes, "seed \(seed) step \(step): \(rules.text)")
                    // Shown, or held out: a control exposure is an execution too.
                    if want.clauses {
                        let executed = stamp()
                        h.executions.append(executed)
                        h.budget.append(executed)
                    }
                case 7:
                    let word = random.pick(["later", "declined", "accepted", "dismissed"])
                    try engine.recordOutcome(Outcome(rawValue: word)!, of: "S")
                    h.outcomes[word, default: []].append(stamp())
                case 8 where random.next(3) == 0:
                    // A crash and the launch after it: a session of the same version.
                    engine.relaunchAfterCrash()
                    h.session += 1
                    h.crashes.append(stamp())
                case 6 where random.next(8) == 0:
                    // The device travels: dates recorded stay; "today" is in the new zone.
                    h.zone = random.pick(zones)
                    engine.timeZone = h.zone
                default:
                    h.now += random.pick(steps)
                    clock.set(Date(timeIntervalSince1970: h.now))
                }
                // Not read after every step: a read re-bases the times ahead of the clock, so a
                // clock set back and an event recorded before the next read keep "first" the
                // first recorded and "last" the latest.
                guard random.next(3) != 0 else { continue }
                let want = expected()
                let explanation = engine.explain("S")
                XCTAssertEqual(engine.canExecute("S"), want.passes, "seed \(seed) step \(step): \(rules.text)")
                XCTAssertEqual(explanation.wouldRun, want.passes, "seed \(seed) step \(step): \(explanation)")
                XCTAssertEqual(
                    explanation.earliest?.timeIntervalSince1970, want.earliest,
                    "seed \(seed) step \(step): \(explanation)")
                compared += 1
                if compared % 50_000 == 0, testRun?.failureCount ?? 0 > 20 { return }
            }
        }
        XCTAssertGreaterThan(compared, 150_000)
        XCTAssertLessThan(refused, 2_000, "most random rules are valid")
    }
}
