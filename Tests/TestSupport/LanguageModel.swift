import Foundation

// An independent model of the rules language, written from grammar.md alone (sections 4 to 7,
// "Local hours, days and dates", "Prompts and outcomes", "Event properties", "Stable buckets",
// "Renames", "Retiring"): it keeps every event, execution and outcome whole, in plain arrays,
// and computes each answer from the definitions. It shares no code with the engine.
//
// Two tests use it: `ClauseModelTests` drives the engine's calls with its histories, and
// `ConformanceTests` writes them as timelines into `conformance/cases.json`, with the answers
// it computes as the expectations.

/// A history's random numbers (a fixed seed per history).
public struct ModelRandom {
    var state: UInt64
    public init(seed: Int) { state = UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 &+ 1 }
    public mutating func next(_ bound: Int) -> Int {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((state >> 33) % UInt64(bound))
    }
    public mutating func pick<T>(_ values: [T]) -> T { values[next(values.count)] }
    public mutating func chance(_ oneIn: Int) -> Bool { next(oneIn) == 0 }
}

/// A duration as the language's printer writes it: `1d2h`, `30m`, `2d7s`.
public func modelDuration(_ seconds: Double) -> String {
    var rest = Int(seconds)
    if rest == 0 { return "0s" }
    var text = ""
    for (unit, size) in [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)] where rest >= size {
        text += "\(rest / size)\(unit)"
        rest %= size
    }
    return text
}

public enum ModelScope: Equatable {
    case install, version, session
    case within(Double)
    var text: String {
        switch self {
        case .install: return ""
        case .version: return " per version"
        case .session: return " per session"
        case .within(let d): return " within " + modelDuration(d)
        }
    }
}

/// A trigger's properties (every property-bearing event declares `amount: int, plan: string`).
public struct ModelProperties: Equatable {
    public var amount: Int
    public var plan: String
}

/// A filter over an event's properties.
public enum ModelFilter {
    case amountAtLeast(Int)
    case plan(String)
    case both(Int, String)
    case planNot(String)
    var text: String {
        switch self {
        case .amountAtLeast(let n): return "amount >= \(n)"
        case .plan(let p): return "plan == \"\(p)\""
        case .both(let n, let p): return "amount >= \(n) and plan == \"\(p)\""
        case .planNot(let p): return "plan != \"\(p)\""
        }
    }
    /// A trigger without properties passes no filter.
    func passes(_ properties: ModelProperties?) -> Bool {
        guard let p = properties else { return false }
        switch self {
        case .amountAtLeast(let n): return p.amount >= n
        case .plan(let plan): return p.plan == plan
        case .both(let n, let plan): return p.amount >= n && p.plan == plan
        case .planNot(let plan): return p.plan != plan
        }
    }
}

/// What a function reads: an event's stream (filtered or not), a scenario's outcomes, or the
/// engine's `crash` and `problem` streams.
public enum ModelSource {
    case stream(String, ModelFilter?)
    /// Scenario (its index) and outcome.
    case outcome(Int, String)
    case crash
    case problem
}

public indirect enum ModelExpr {
    /// `count(SOURCE [scope]) >= N` (`<=` when `atMost`).
    case count(ModelSource, ModelScope, atMost: Bool, Int)
    case sinceFirst(ModelSource, Double)
    case sinceLast(ModelSource, Double)
    /// `executions(NAME [scope]) <= N`: a scenario's (index) or the group's (nil).
    case executions(Int?, ModelScope, Int)
    case activeDays(String, ModelFilter?, days: Int, Int)
    /// `(bucket("SALT") < N)`.
    case bucket(String, Int)
    /// `sum(a.amount [where F] [scope]) >= N`.
    case sum(String, ModelFilter?, ModelScope, Int)
    case upgraded(Bool)
    case todo(String, Bool)
    /// `p >= N`.
    case param(Int)
    case all([ModelExpr])
    case any([ModelExpr])
}

public enum ModelClause {
    case minEvents(Int, ModelScope)
    case minEventsWhere(Int, ModelFilter, ModelScope)
    case maxEvents(Int, ModelScope)
    case maxExec(Int, ModelScope)
    /// `max_exec N per day` / `per week`.
    case maxExecCalendar(Int, week: Bool)
    case sinceFirst(Double)
    case sinceLast(Double)
    case between([Double])
    case minDays(Int, days: Int)
    /// `days ...`: the weekdays (1 Sunday ... 7 Saturday, as Foundation numbers them).
    case days(Set<Int>)
    /// `[not] during A-B`, in minutes of the day.
    case during(Int, Int, not: Bool)
    /// `from DATE` / `until DATE`: a day number (days since 1970-01-01).
    case from(Int)
    case until(Int)
    /// `after OUTCOME D`, `after OUTCOME next session|next version|never`.
    case afterWait(String, Double)
    case afterNone(String, ModelScope)
    case holdout(Int, salt: String)
    /// `in A, B` / `not in A, B` (language 1.3): where the app says the user is.
    case contexts([String], not: Bool)
    case when(ModelExpr)

    var isWindow: Bool {
        switch self {
        case .days, .during, .from, .until: return true
        default: return false
        }
    }
}

public struct ModelScenario {
    public var name: String
    public var clauses: [ModelClause]
    /// The streams it counts (its own name's when the rules give no `on`).
    public var streams: [String]
    public var on: Bool
    public var priority: Int?
    public var inGroup: Bool
    public var retired: Bool
    /// `counts after D visible` and `defer up to D` (language 1.3).
    public var countsAfter: Double? = nil
    public var deferral: Double? = nil
}

/// Random rules: scenario `S` always; `T` with it in group `G`, `U` with a priority and a
/// retired `R` now and then. `text` is the file; `swapped`, when there is one, the same rules
/// with `S` renamed `S2` (`was S`) and `U` retired, for a swap in the middle of a history.
public struct ModelRules {
    public var text: String
    public var scenarios: [ModelScenario]
    public var group: [ModelClause]?
    public var version: String
    public var properties: Bool
    public var swapped: String?
    public var readsCrash: Bool

    public func index(_ name: String) -> Int? { scenarios.firstIndex { $0.name == name } }
}

/// One step of a history, as a timeline writes it (grammar.md, "Timelines").
public enum ModelStep {
    case advance(Double)
    case launch(String)
    case trigger(String, ModelProperties?)
    case done(String)
    case todo(String)
    case set(Int)
    case tryToExecute(String)
    case next([String])
    case present(String)
    case finish(String, String)
    case outcome(String, String)
    case crash
    case problem
    case timezone(String)
    case swap
    /// The app enters / leaves a context (language 1.3).
    case enter(String)
    case leave(String)
    /// The scenario's open presentation is on screen / no longer (language 1.3).
    case visible(String)
    case hidden(String)
    /// The app is suspended / comes back without a launch.
    case background
    case foreground

    /// The step's text in a timeline, without its time.
    public var timelineText: String {
        switch self {
        case .advance: return ""
        case .launch(let v): return "launch \(v)"
        case .trigger(let s, let p):
            guard let p else { return "trigger \(s)" }
            return "trigger \(s) amount=\(p.amount) plan=\(p.plan)"
        case .done(let t): return "done \(t)"
        case .todo(let t): return "todo \(t)"
        case .set(let n): return "set p \(n)"
        case .tryToExecute(let s): return "try \(s)"
        case .next(let names): return "next " + names.joined(separator: " ")
        case .present(let s): return "present \(s)"
        case .finish(let s, let o): return "finish \(s) \(o)"
        case .outcome(let s, let o): return "outcome \(s) \(o)"
        case .crash: return "crash"
        case .problem: return "problem"
        case .timezone(let z): return "timezone \(z)"
        case .swap: return "rules swapped.rules"
        case .enter(let c): return "enter \(c)"
        case .leave(let c): return "leave \(c)"
        case .visible(let s): return "visible \(s)"
        case .hidden(let s): return "hidden \(s)"
        case .background: return "background"
        case .foreground: return "foreground"
        }
    }
}

/// What a step answered: `yes`/`no` (`shown` for a presentation), a name or `none` for `next`;
/// for a `no`, the failing clauses as `explain` lists them.
public struct ModelAnswer: Equatable {
    public var result: String
    public var failing: [String]
    public init(result: String, failing: [String]) {
        self.result = result
        self.failing = failing
    }
}

/// One scenario judged: its verdict, every clause (text, passes, count so far) and the
/// earliest time.
public struct ModelJudgement {
    public var shows: Bool
    /// The clauses pass (shown, or held out: a call then records a control exposure).
    public var clausesPass: Bool
    public var clauses: [(text: String, passes: Bool, count: Int?)]
    public var earliest: Double?
    public var failing: [String] { clauses.filter { !$0.passes }.map(\.text) }
}

public struct LanguageModel {
    struct Stamp {
        var time: Double
        var recorded: Double
        var order: Int
        var session: Int
        var version: Int
        var zone: TimeZone
        var properties: ModelProperties?
    }

    public let rules: ModelRules
    public let installID: String
    public var now: Double
    public var zone: TimeZone
    /// Renamed and retired by the swap.
    public private(set) var swappedIn = false
    var events: [String: [Stamp]] = [:]
    var executions: [Int: [Stamp]] = [:]
    var budget: [Stamp] = []
    var outcomes: [String: [Stamp]] = [:]
    var crashes: [Stamp] = []
    var problems: [Stamp] = []
    var session = 0
    var version = 0
    var versionName: String?
    var firstVersion: String?
    var todos: Set<String> = []
    var param = 0
    /// The presentations' holds, by what they hold (the group, or a scenario outside one): the
    /// scenario shown and when the hold ends.
    var holds: [String: (scenario: Int, expires: Double)] = [:]
    /// The contexts the app is in (grammar.md, "Contexts"): the process's, never stored.
    public var contexts: Set<String> = []
    /// The presentations of `counts after D visible` scenarios not counted yet, by scenario
    /// (grammar.md, "Counted exposure"): when each expires, the seconds on screen in its closed
    /// spans, whether the app says it is on screen, and the start of the span counting now.
    var counting: [Int: (expires: Double, seen: Double, visible: Bool, since: Double?)] = [:]
    /// Between `background` and `foreground` (or a launch).
    var inBackground = false
    /// The wishes `defer up to D` keeps, by scenario: when each was made and the time it lasts
    /// until (grammar.md, "Deferral"). Stored: a crash keeps them.
    var wishes: [Int: (made: Double, until: Double)] = [:]
    /// How many presentations counted once seen, and how many wishes were made (for a test to
    /// show that its histories reach them).
    public private(set) var countedOnScreen = 0
    public private(set) var wishesMade = 0
    var recorded = 0
    /// A tester's override of `S` (engine only: a timeline has none).
    public var forced: Bool?
    public static let presentationTimeout = 3_600.0

    public init(rules: ModelRules, start: Double, zone: TimeZone, installID: String) {
        self.rules = rules
        now = start
        self.zone = zone
        self.installID = installID
    }

    // MARK: - Names

    /// The scenario a call's name means: after the swap, `S2` and its former name `S` are S.
    public func scenario(named name: String) -> Int? {
        if name == "S2" { return swappedIn ? rules.index("S") : nil }
        return rules.index(name)
    }

    func retired(_ index: Int) -> Bool {
        rules.scenarios[index].retired || (swappedIn && rules.version >= "1.2" && rules.scenarios[index].name == "U")
    }

    /// What a presentation of scenario `index` holds: its group, or itself.
    func holdKey(_ index: Int) -> String { rules.scenarios[index].inGroup ? "G" : "s\(index)" }

    // MARK: - Stable buckets (grammar.md: FNV-1a 64 over SALT ":" ID, then MurmurHash3's finalizer)

    public static func bucket(_ salt: String, _ id: String) -> Int {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in Array(salt.utf8) + [0x3A] + Array(id.utf8) {
            h ^= UInt64(byte)
            h = h &* 0x0000_0100_0000_01b3
        }
        h ^= h >> 33
        h = h &* 0xff51_afd7_ed55_8ccd
        h ^= h >> 33
        h = h &* 0xc4ce_b9fe_1a85_ec53
        h ^= h >> 33
        return Int(h % 100)
    }

    // MARK: - Local time

    static func calendar(_ zone: TimeZone) -> Calendar {
        var calendar = Calendar(identifier: .iso8601)
        calendar.timeZone = zone
        return calendar
    }

    /// The local date of `time` in `zone`, as a day number.
    static func day(_ time: Double, _ zone: TimeZone) -> Int {
        let parts = calendar(zone).dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: time))
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        return Int((utc.date(from: parts)!.timeIntervalSince1970 / 86_400).rounded())
    }

    /// Local midnight starting day number `day` in `zone`.
    static func midnight(_ day: Int, _ zone: TimeZone) -> Double {
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        let parts = utc.dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: Double(day) * 86_400))
        return calendar(zone).date(from: parts)!.timeIntervalSince1970
    }

    /// Whether window clause `clause` holds at `time`.
    func windowHolds(_ clause: ModelClause, at time: Double) -> Bool {
        let calendar = Self.calendar(zone)
        let date = Date(timeIntervalSince1970: time)
        switch clause {
        case .days(let set): return set.contains(calendar.component(.weekday, from: date))
        case .during(let a, let b, let not):
            let parts = calendar.dateComponents([.hour, .minute], from: date)
            let minute = parts.hour! * 60 + parts.minute!
            let inside = b > a ? (minute >= a && minute < b) : (minute >= a || minute < b)
            return inside != not
        case .from(let d): return Self.day(time, zone) >= d
        case .until(let d): return Self.day(time, zone) <= d
        default: return true
        }
    }

    /// The first moment from `start` at which every window holds: `start`, or a local midnight,
    /// or a window's opening minute, searched over the days a week and a day past the last
    /// `from` (grammar.md: none then means none).
    func firstTime(_ windows: [ModelClause], from start: Double) -> Double? {
        if windows.allSatisfy({ windowHolds($0, at: start) }) { return start }
        let first = Self.day(start, zone)
        var last = first + 9
        for case .from(let d) in windows { last = max(last, d + 9) }
        let calendar = Self.calendar(zone)
        for d in first...last {
            let base = Self.midnight(d, zone)
            var candidates = [base]
            for case .during(let a, let b, let not) in windows {
                let minute = not ? b : a
                var parts = calendar.dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: base))
                parts.hour = minute / 60
                parts.minute = minute % 60
                if let date = calendar.date(from: parts) { candidates.append(date.timeIntervalSince1970) }
            }
            for time in candidates.sorted() where time > start {
                if windows.allSatisfy({ windowHolds($0, at: time) }) { return time }
            }
        }
        return nil
    }

    // MARK: - Counting

    func count(_ stamps: [Stamp], _ scope: ModelScope) -> Int {
        switch scope {
        case .install: return stamps.count
        case .version: return stamps.filter { $0.version == version }.count
        case .session: return stamps.filter { $0.session == session }.count
        case .within(let d): return stamps.filter { max(0, now - $0.time) < d }.count
        }
    }

    func stamps(_ source: ModelSource) -> [Stamp] {
        switch source {
        case .stream(let name, let filter):
            let all = events[name] ?? []
            guard let filter else { return all }
            return all.filter { filter.passes($0.properties) }
        case .outcome(let index, let word): return outcomes["\(word):\(index)"] ?? []
        case .crash: return crashes
        case .problem: return problems
        }
    }

    /// The events scenario `index` counts.
    func viewEvents(_ index: Int) -> [Stamp] {
        rules.scenarios[index].streams.flatMap { events[$0] ?? [] }
    }

    /// Distinct local dates (each event's in the zone it was recorded in) among the `days`
    /// dates ending today (in the zone now); a date after today does not count.
    func activeDays(_ stamps: [Stamp], days: Int) -> Int {
        let today = Self.day(now, zone)
        return Set(stamps.map { Self.day($0.recorded, $0.zone) }.filter { $0 <= today && $0 > today - days }).count
    }

    func evaluate(_ expr: ModelExpr) -> Bool {
        switch expr {
        case .count(let source, let scope, let atMost, let n):
            let c = count(stamps(source), scope)
            return atMost ? c <= n : c >= n
        case .sinceFirst(let source, let d):
            // The first recorded; none: 0s, so `>= D` is false.
            guard let first = stamps(source).min(by: { $0.order < $1.order }) else { return false }
            return max(0, now - first.time) >= d
        case .sinceLast(let source, let d):
            guard let last = stamps(source).map(\.time).max() else { return true }
            return max(0, now - last) >= d
        case .executions(let index, let scope, let n):
            return count(index.map { executions[$0] ?? [] } ?? budget, scope) <= n
        case .activeDays(let stream, let filter, let days, let n):
            return activeDays(stamps(.stream(stream, filter)), days: days) >= n
        case .bucket(let salt, let n): return Self.bucket(salt, installID) < n
        case .sum(let stream, let filter, let scope, let n):
            let counted = (events[stream] ?? []).filter { filter?.passes($0.properties) ?? ($0.properties != nil) }
            let inScope: [Stamp]
            switch scope {
            case .install: inScope = counted
            case .version: inScope = counted.filter { $0.version == version }
            case .session: inScope = counted.filter { $0.session == session }
            case .within(let d): inScope = counted.filter { max(0, now - $0.time) < d }
            }
            return inScope.reduce(0) { $0 + max(0, $1.properties!.amount) } >= n
        case .upgraded(let yes):
            let upgraded = versionName != nil && versionName != firstVersion
            return upgraded == yes
        case .todo(let name, let yes): return todos.contains(name) == yes
        case .param(let n): return param >= n
        case .all(let parts): return parts.allSatisfy { evaluate($0) }
        case .any(let parts): return parts.contains { evaluate($0) }
        }
    }

    /// Whether `clause` holds for scenario `index` (its executions, or the group's budget for a
    /// group clause), and from when it would by waiting alone (nil: never by waiting).
    func judge(_ clause: ModelClause, _ index: Int, group: Bool) -> (passes: Bool, ready: Double?, count: Int?) {
        let events = viewEvents(index)
        let executions = group ? budget : (executions[index] ?? [])
        func windowReady(_ stamps: [Stamp], _ scope: ModelScope, allowed: Int) -> Double? {
            guard case .within(let d) = scope else { return now }
            if allowed < 0 { return nil }
            let inside = stamps.map(\.time).filter { max(0, now - $0) < d }.sorted()
            let excess = inside.count - allowed
            return excess > 0 ? inside[excess - 1] + d : now
        }
        func atLeast(_ at: Double, _ d: Double) -> (passes: Bool, ready: Double?, count: Int?) {
            let age = max(0, now - at)
            return (age >= d, age >= d ? now : at + d, nil)
        }
        switch clause {
        case .minEvents(let n, let scope):
            let c = count(events, scope)
            return (c >= n, now, c)
        case .minEventsWhere(let n, let filter, let scope):
            let c = count(events.filter { filter.passes($0.properties) }, scope)
            return (c >= n, now, c)
        case .maxEvents(let n, let scope):
            let c = count(events, scope)
            return (c <= n, c <= n ? now : windowReady(events, scope, allowed: n), c)
        case .maxExec(let n, let scope):
            let c = count(executions, scope)
            return (c < n, c < n ? now : windowReady(executions, scope, allowed: n - 1), c)
        case .maxExecCalendar(let n, let week):
            let period = Self.calendar(zone).dateInterval(
                of: week ? .weekOfYear : .day, for: Date(timeIntervalSince1970: now))!
            let c = executions.filter { $0.time >= period.start.timeIntervalSince1970 }.count
            if c < n { return (true, now, nil) }
            return (false, n <= 0 ? nil : period.end.timeIntervalSince1970, nil)
        case .sinceFirst(let d):
            // The first event is the one recorded first, not the earliest time.
            guard let first = events.min(by: { $0.order < $1.order }) else { return (false, nil, nil) }
            return atLeast(first.time, d)
        case .sinceLast(let d):
            guard let last = events.map(\.time).max() else { return (true, now, nil) }
            return atLeast(last, d)
        case .between(let gaps):
            // After the k-th execution the k-th gap applies (the last one from then on).
            guard let last = executions.map(\.time).max() else { return (true, now, nil) }
            return atLeast(last, gaps[min(executions.count, gaps.count) - 1])
        case .minDays(let n, let days):
            let active = activeDays(events, days: days)
            return (active >= n, active >= n ? now : nil, nil)
        case .days, .during, .from, .until:
            // Their earliest time is found with the others' (`firstTime`).
            return (windowHolds(clause, at: now), now, nil)
        case .afterWait(let word, let d):
            guard let last = stamps(.outcome(index, word)).map(\.time).max() else { return (true, now, nil) }
            return atLeast(last, d)
        case .afterNone(let word, let scope):
            let none = count(stamps(.outcome(index, word)), scope) == 0
            return (none, none ? now : nil, nil)
        case .holdout(let share, let salt):
            let held = Self.bucket(salt, installID) < share
            return (!held, held ? nil : now, nil)
        case .contexts(let names, let not):
            // Waiting alone changes no context: a failing one is never ready by waiting.
            let inOne = names.contains { contexts.contains($0) }
            let passes = inOne != not
            return (passes, passes ? now : nil, nil)
        case .when(let expr):
            // A `when` bounds no earliest time.
            return (evaluate(expr), now, nil)
        }
    }

    /// Scenario `index` judged now, in `explain`'s order: a hold first, the scenario's clauses,
    /// its group's, its holdouts.
    public func judge(_ index: Int) -> ModelJudgement {
        // Language 1.3's clauses that judge nothing: explain lists them last, passing.
        var notes: [(text: String, passes: Bool, count: Int?)] = []
        if let needed = rules.scenarios[index].countsAfter, !retired(index) {
            notes.append(("counts after \(modelDuration(needed)) visible", true, nil))
        }
        if let deferral = rules.scenarios[index].deferral, !retired(index) {
            notes.append(("defer up to \(modelDuration(deferral))", true, nil))
        }
        if rules.scenarios[index].name == "S", let forced {
            return ModelJudgement(
                shows: forced, clausesPass: forced, clauses: [("override", forced, nil)] + notes,
                earliest: forced ? now : nil)
        }
        if retired(index) {
            return ModelJudgement(shows: false, clausesPass: false, clauses: [("retired", false, nil)], earliest: nil)
        }
        let scenario = rules.scenarios[index]
        let names = self.names
        var all: [(ModelClause, Bool)] = scenario.clauses.map { ($0, false) }
        if scenario.inGroup { all += (rules.group ?? []).map { ($0, true) } }
        var clauses: [(text: String, passes: Bool, count: Int?)] = []
        var holdouts: [(text: String, passes: Bool, count: Int?)] = []
        var pass = true
        var held = false
        var earliest: Double? = now
        var windows: [ModelClause] = []
        for (clause, group) in all {
            let result = judge(clause, index, group: group)
            let text = clauseText(clause, names)
            if case .holdout = clause {
                held = held || !result.passes
                holdouts.append((text, result.passes, nil))
                continue
            }
            clauses.append((text, result.passes, result.count))
            pass = pass && result.passes
            if clause.isWindow {
                windows.append(clause)
                continue
            }
            earliest = earliest.flatMap { e in result.ready.map { max(e, $0) } }
        }
        // A presentation on screen holds its group (outside a group, its scenario).
        if let hold = holds[holdKey(index)], hold.expires > now {
            clauses.insert(("showing", false, nil), at: 0)
            pass = false
            earliest = earliest.map { max($0, hold.expires) }
        }
        // Holdouts bound nothing by waiting: a held-out install is never shown.
        if held { earliest = nil }
        if let start = earliest { earliest = firstTime(windows, from: start) }
        return ModelJudgement(
            shows: pass && !held, clausesPass: pass, clauses: clauses + holdouts + notes, earliest: earliest)
    }

    // MARK: - Steps

    mutating func stamp(_ properties: ModelProperties? = nil) -> Stamp {
        recorded += 1
        return Stamp(
            time: now, recorded: now, order: recorded, session: session, version: version, zone: zone,
            properties: properties)
    }

    /// What an evaluation does to the times it reads: any ahead of now is now.
    public mutating func rebase() {
        let now = self.now
        func move(_ stamps: inout [Stamp]) {
            for k in stamps.indices where stamps[k].time > now { stamps[k].time = now }
        }
        for key in events.keys { move(&events[key]!) }
        for key in outcomes.keys { move(&outcomes[key]!) }
        for key in executions.keys { move(&executions[key]!) }
        move(&budget)
        move(&crashes)
        move(&problems)
        for (key, h) in holds {
            if h.expires - Self.presentationTimeout > now {
                // Created ahead of the clock: created now, its expiry moved by as much.
                holds[key] = (h.scenario, now + Self.presentationTimeout)
            } else if h.expires <= now {
                // A read deletes an expired hold, so that it stays expired when the clock goes back.
                holds[key] = nil
            }
        }
    }

    mutating func execute(_ index: Int, at time: Double? = nil) {
        var s = stamp()
        if let time { s.time = time }
        executions[index, default: []].append(s)
        if rules.scenarios[index].inGroup { budget.append(s) }
        // An execution grants the scenario's wish.
        wishes[index] = nil
    }

    // MARK: - Counted exposure and deferral (language 1.3)

    /// When scenario `index`'s presentation counts if it stays on screen: nil while no span
    /// counts, or when that would be after its expiry.
    func due(_ index: Int) -> Double? {
        guard let c = counting[index], let since = c.since else { return nil }
        let reached = since + rules.scenarios[index].countsAfter! - c.seen
        return reached <= c.expires ? reached : nil
    }

    /// Records each presentation whose time on screen was reached by now, at the moment reached.
    mutating func settle() {
        for index in counting.keys.sorted() {
            if let reached = due(index), reached <= now {
                counting[index] = nil
                execute(index, at: reached)
                countedOnScreen += 1
            }
        }
    }

    /// Closes the span counting for scenario `index` now (clipped at its expiry; a clock set
    /// back counts no time).
    mutating func pause(_ index: Int) {
        guard var c = counting[index], let since = c.since else { return }
        c.seen += max(0, min(now, c.expires) - since)
        c.since = nil
        counting[index] = c
    }

    /// Opens the span of each presentation on screen before its expiry: the app is in the foreground.
    mutating func resume() {
        inBackground = false
        for index in counting.keys
        where counting[index]!.visible && counting[index]!.since == nil
            && now < counting[index]!.expires
        {
            counting[index]!.since = now
        }
    }

    func wishPending(_ index: Int) -> Bool {
        guard rules.scenarios[index].deferral != nil, !retired(index), let wish = wishes[index] else { return false }
        return now < wish.until
    }

    /// A call that would show scenario `index` was refused (its judgement `judgement`): with
    /// `defer up to D`, when only contexts and local windows refused it, a wish lasting D.
    mutating func noteRefusal(_ index: Int, _ judgement: ModelJudgement) {
        guard let deferral = rules.scenarios[index].deferral, !retired(index), !wishPending(index) else { return }
        if rules.scenarios[index].name == "S" && forced != nil { return }
        if let hold = holds[holdKey(index)], hold.expires > now { return }
        let scenario = rules.scenarios[index]
        var all: [(ModelClause, Bool)] = scenario.clauses.map { ($0, false) }
        if scenario.inGroup { all += (rules.group ?? []).map { ($0, true) } }
        for (clause, group) in all where !judge(clause, index, group: group).passes {
            switch clause {
            case .contexts, .days, .during, .from, .until: continue
            default: return
            }
        }
        wishes[index] = (now, now + deferral)
        wishesMade += 1
    }

    /// The time scenario `index`'s wish lasts until, while it is pending (what `explain` gives).
    public func deferredUntil(_ index: Int) -> Double? {
        wishPending(index) ? wishes[index]!.until : nil
    }

    /// Applies `step`; returns what it answers, if it answers.
    public mutating func apply(_ step: ModelStep) -> ModelAnswer? {
        // Every call that reads the clock deletes the to-dos expired by then (a hold among them),
        // so that one stays expired when the clock goes back.
        switch step {
        case .advance, .set, .timezone, .swap, .enter, .leave: break
        default: holds = holds.filter { $0.value.expires > now }
        }
        // A presentation on screen long enough counted at the moment reached: the clock woke
        // the engine then (or its next call saw it).
        settle()
        switch step {
        case .advance(let d):
            now += d
            settle()
        case .enter(let context): contexts.insert(context)
        case .leave(let context): contexts.remove(context)
        case .visible(let name):
            let index = scenario(named: name)!
            if var c = counting[index], !c.visible {
                c.visible = true
                if !inBackground && now < c.expires { c.since = now }
                counting[index] = c
            }
        case .hidden(let name):
            let index = scenario(named: name)!
            if counting[index]?.visible == true {
                pause(index)
                counting[index]!.visible = false
            }
        case .background:
            for index in counting.keys { pause(index) }
            inBackground = true
        case .foreground: resume()
        case .launch(let name):
            // A launch is in the foreground (the spans on screen split at it, nothing lost).
            if inBackground { resume() }
            session += 1
            if name != versionName { version += 1 }
            versionName = name
            if firstVersion == nil { firstVersion = name }
        case .trigger(let stream, let properties):
            events[stream, default: []].append(stamp(properties))
        case .done(let name):
            events[name, default: []].append(stamp())
            todos.remove(name)
        case .todo(let name): todos.insert(name)
        case .set(let n): param = n
        case .tryToExecute(let name), .present(let name):
            let index = scenario(named: name)!
            rebase()
            let judgement = judge(index)
            let presents: Bool = { if case .present = step { return true } else { return false } }()
            // A presentation that counts once seen is not counted when made (a control exposure is).
            let counted = presents && judgement.shows && rules.scenarios[index].countsAfter != nil
            if judgement.clausesPass && !counted { execute(index) }
            if !judgement.clausesPass { noteRefusal(index, judgement) }
            guard judgement.shows else { return ModelAnswer(result: "no", failing: judgement.failing) }
            if presents {
                holds[holdKey(index)] = (index, now + Self.presentationTimeout)
                if counted {
                    counting[index] = (now + Self.presentationTimeout, 0, false, nil)
                } else {
                    counting[index] = nil
                }
                return ModelAnswer(result: "shown", failing: [])
            }
            return ModelAnswer(result: "yes", failing: [])
        case .next(let names):
            rebase()
            // A pending wish first, then the highest priority, then declaration order.
            let order = names.compactMap { scenario(named: $0) }.enumerated().sorted {
                let (w0, w1) = (wishPending($0.element), wishPending($1.element))
                if w0 != w1 { return w0 }
                let (p0, p1) = (rules.scenarios[$0.element].priority ?? 0, rules.scenarios[$1.element].priority ?? 0)
                return p0 != p1 ? p0 > p1 : $0.element < $1.element
            }
            for (position, index) in order {
                let judgement = judge(index)
                if judgement.clausesPass { execute(index) } else { noteRefusal(index, judgement) }
                if judgement.shows { return ModelAnswer(result: names[position], failing: []) }
            }
            return ModelAnswer(result: "none", failing: [])
        case .finish(let name, let word):
            let index = scenario(named: name)!
            counting[index] = nil
            holds[holdKey(index)] = nil
            outcomes["\(word):\(index)", default: []].append(stamp())
            return ModelAnswer(result: word, failing: [])
        case .outcome(let name, let word):
            let index = scenario(named: name)!
            outcomes["\(word):\(index)", default: []].append(stamp())
        case .crash:
            // The run ends uncleanly; the launch after it (same version) records the crash when the
            // rules read `crash`.
            session += 1
            if rules.readsCrash { crashes.append(stamp()) }
            // What the run had on screen never counts; the launch after it is in the foreground.
            counting = [:]
            inBackground = false
        case .problem: problems.append(stamp())
        case .timezone(let name): zone = TimeZone(identifier: name)!
        case .swap:
            swappedIn = true
            return ModelAnswer(result: "swapped", failing: [])
        }
        return nil
    }

    /// True when `finish NAME` has a presentation to end: its hold is the one kept for what it
    /// holds (expired or not).
    public func isOpen(_ name: String) -> Bool {
        guard let index = scenario(named: name) else { return false }
        return holds[holdKey(index)]?.scenario == index
    }
}
