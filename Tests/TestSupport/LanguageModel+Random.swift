import Foundation

/// A clause as `explain` (the language's printer) writes it; `names` are the scenarios' current
/// names, by index.
func clauseText(_ clause: ModelClause, _ names: [String]) -> String {
    func source(_ s: ModelSource) -> String {
        switch s {
        case .stream(let name, let filter): return name + (filter.map { " where " + $0.text } ?? "")
        case .outcome(let index, let word): return "\(names[index]): \(word)"
        case .crash: return "crash"
        case .problem: return "problem"
        }
    }
    func expr(_ e: ModelExpr) -> String {
        switch e {
        case .count(let s, let scope, let atMost, let n):
            return "count(\(source(s))\(scope.text)) \(atMost ? "<=" : ">=") \(n)"
        case .sinceFirst(let s, let d): return "since_first(\(source(s))) >= \(modelDuration(d))"
        case .sinceLast(let s, let d): return "since_last(\(source(s))) >= \(modelDuration(d))"
        case .executions(let index, let scope, let n):
            return "executions(\(index.map { names[$0] } ?? "G")\(scope.text)) <= \(n)"
        case .activeDays(let stream, let filter, let days, let n):
            return "active_days(\(source(.stream(stream, filter))) within \(days)d) >= \(n)"
        case .bucket(let salt, let n): return "(bucket(\"\(salt)\") < \(n))"
        case .sum(let stream, let filter, let scope, let n):
            return "sum(\(stream).amount\(filter.map { " where " + $0.text } ?? "")\(scope.text)) >= \(n)"
        case .upgraded(let yes): return yes ? "upgraded" : "not upgraded"
        case .todo(let name, let yes): return yes ? "todo(\(name))" : "not todo(\(name))"
        case .param(let n): return "p >= \(n)"
        case .all(let parts): return parts.map(expr).joined(separator: " and ")
        case .any(let parts): return parts.map(expr).joined(separator: " or ")
        }
    }
    func clock(_ minute: Int) -> String { String(format: "%02d:%02d", minute / 60, minute % 60) }
    func date(_ day: Int) -> String {
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        let parts = utc.dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: Double(day) * 86_400))
        return String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
    }
    switch clause {
    case .minEvents(let n, let scope): return "min_events \(n)\(scope.text)"
    case .minEventsWhere(let n, let filter, let scope): return "min_events \(n) where \(filter.text)\(scope.text)"
    case .maxEvents(let n, let scope): return "max_events \(n)\(scope.text)"
    case .maxExec(let n, let scope): return "max_exec \(n)\(scope.text)"
    case .maxExecCalendar(let n, let week): return "max_exec \(n) per \(week ? "week" : "day")"
    case .sinceFirst(let d): return "since_first " + modelDuration(d)
    case .sinceLast(let d): return "since_last " + modelDuration(d)
    case .between(let gaps): return "between " + gaps.map(modelDuration).joined(separator: ", ")
    case .minDays(let n, let days): return "min_days \(n) within \(days)d"
    case .days(let set):
        // Foundation's weekday numbers (1 Sunday) in the language's order (Monday first).
        let names = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
        return "days " + [2, 3, 4, 5, 6, 7, 1].filter(set.contains).map { names[$0 - 1] }.joined(separator: ", ")
    case .during(let a, let b, let not): return (not ? "not " : "") + "during \(clock(a))-\(clock(b))"
    case .from(let day): return "from " + date(day)
    case .until(let day): return "until " + date(day)
    case .afterWait(let word, let d): return "after \(word) " + modelDuration(d)
    case .afterNone(let word, let scope):
        return "after \(word) " + (scope == .session ? "next session" : scope == .version ? "next version" : "never")
    case .holdout(let share, let salt): return "holdout \(share)% \"\(salt)\""
    case .contexts(let names, let not): return (not ? "not " : "") + "in " + names.joined(separator: ", ")
    case .when(let e): return "when " + expr(e)
    }
}

extension LanguageModel {
    /// The scenarios' names now (after the swap, `S` is `S2`).
    var names: [String] { rules.scenarios.map { swappedIn && $0.name == "S" ? "S2" : $0.name } }
    /// The names a call may use now: every scenario's (after the swap, `S2` for `S`).
    public var currentNames: [String] { names }
}

extension ModelRules {
    /// Random rules of a random language version (1.0, 1.1, 1.2), every construct of that
    /// version possible; `start` places `from` and `until` dates near the history.
    public static func random(_ random: inout ModelRandom, start: Double) -> ModelRules {
        let version = random.pick(["1.0", "1.1", "1.1", "1.2", "1.2", "1.2", "1.3", "1.3", "1.3"])
        let v11 = version != "1.0"
        let v12 = version >= "1.2"
        let v13 = version >= "1.3"
        let properties = v12 && random.chance(2)
        let durations: [Double] = [1_800, 3_600, 5 * 3_600, 86_400, 2 * 86_400 + 7]
        let scopes: [ModelScope] = [.install, .version, .session, .within(3_600), .within(86_400), .within(3 * 86_400)]
        let startDay = Int((start / 86_400).rounded(.down))
        // Minutes kept clear of 02:00-03:00, which a summer-time change skips or repeats.
        let minutes = [0, 6 * 60, 8 * 60, 9 * 60 + 30, 12 * 60, 18 * 60, 22 * 60]
        var salts = 0
        let grouped = random.chance(2)
        var readsCrash = false
        let filters: [ModelFilter] = [.amountAtLeast(5), .plan("pro"), .both(3, "pro"), .planNot("free")]
        func filter() -> ModelFilter? { properties && random.chance(2) ? random.pick(filters) : nil }
        func scope() -> ModelScope { random.pick(scopes) }

        /// One `when` atom for scenario `index` (its own outcomes only).
        func atom(_ index: Int, streams: [String]) -> ModelExpr {
            let stream = random.pick(streams)
            switch random.next(v12 ? 15 : v11 ? 9 : 8) {
            case 0: return .count(.stream(stream, filter()), scope(), atMost: random.chance(2), random.next(4))
            case 1: return .sinceFirst(.stream(stream, filter()), random.pick(durations))
            case 2: return .sinceLast(.stream(stream, filter()), random.pick(durations))
            case 3: return .executions(grouped && random.chance(2) ? nil : index, scope(), random.next(3))
            case 4: return .upgraded(random.chance(2))
            case 5: return .todo("a", random.chance(2))
            case 6: return .param(1 + random.next(3))
            case 7: return .count(.stream(stream, nil), .within(random.pick(durations)), atMost: true, random.next(3))
            case 8: return .activeDays(stream, filter(), days: 2 + random.next(4), 1 + random.next(3))
            case 9: return .bucket("b\(random.next(3))", random.pick([10, 50, 90]))
            case 10 where properties:
                return .sum(random.pick(["a", "b"]), filter(), scope(), random.pick([1, 10, 30]))
            case 11:
                let word = random.pick(["declined", "later", "accepted", "dismissed"])
                switch random.next(3) {
                case 0: return .count(.outcome(index, word), scope(), atMost: random.chance(2), random.next(3))
                case 1: return .sinceFirst(.outcome(index, word), random.pick(durations))
                default: return .sinceLast(.outcome(index, word), random.pick(durations))
                }
            case 12:
                readsCrash = true
                return random.chance(2)
                    ? .sinceLast(.crash, random.pick(durations))
                    : .count(.crash, .within(random.pick(durations)), atMost: true, random.next(2))
            case 13: return .count(.problem, scope(), atMost: random.chance(2), random.next(2))
            default: return .count(.stream(stream, nil), scope(), atMost: false, random.next(4))
            }
        }
        func when(_ index: Int, streams: [String]) -> ModelClause {
            let parts = (0..<(1 + random.next(3))).map { _ in atom(index, streams: streams) }
            return .when(parts.count == 1 ? parts[0] : random.chance(2) ? .all(parts) : .any(parts))
        }
        func window() -> ModelClause {
            switch random.next(4) {
            case 0:
                let a = random.pick(minutes)
                var b = random.pick(minutes)
                if b == a { b = (a + 60) % 1_440 }
                return .during(a, b, not: random.chance(2))
            case 1: return .days(Set((1...7).filter { _ in random.next(3) != 0 }).union([1 + random.next(7)]))
            case 2: return .from(startDay + random.next(5))
            default: return .until(startDay + 2 + random.next(8))
            }
        }
        func gaps() -> [Double] {
            let count = v11 ? 1 + random.next(3) : 1
            var gaps: [Double] = []
            for _ in 0..<count { gaps.append((gaps.last ?? 0) + random.pick(durations)) }
            return gaps
        }
        /// `in` / `not in` over one or two of three contexts.
        func contexts() -> ModelClause {
            let names = ["home", "checkout", "pin"].filter { _ in random.chance(2) }
            return .contexts(names.isEmpty ? [random.pick(["home", "checkout", "pin"])] : names, not: random.chance(2))
        }
        func clause(_ index: Int, streams: [String], on: Bool) -> ModelClause {
            if v13 && random.next(5) == 0 { return contexts() }
            if v12 && random.chance(3) {
                switch random.next(7) {
                case 0: return .maxExecCalendar(random.next(3), week: random.chance(2))
                case 1:
                    salts += 1
                    return .holdout(1 + random.next(60), salt: "h\(salts)")
                case 2: return window()
                case 3: return .afterWait(random.pick(["later", "declined"]), random.pick(durations))
                case 4:
                    return .afterNone(
                        random.pick(["accepted", "dismissed"]), random.pick([.install, .version, .session]))
                case 5 where properties && on: return .minEventsWhere(random.next(4), random.pick(filters), scope())
                default: return when(index, streams: streams)
                }
            }
            switch random.next(v11 ? 9 : 8) {
            case 0: return .maxExec(random.next(4), scope())
            case 1: return .between(gaps())
            case 2: return .minEvents(random.next(5), scope())
            case 3: return .maxEvents(random.next(5), scope())
            case 4: return .sinceFirst(random.pick(durations))
            case 5: return .sinceLast(random.pick(durations))
            case 6, 7: return random.chance(3) ? when(index, streams: streams) : .minEvents(random.next(3), scope())
            default: return .minDays(1 + random.next(3), days: 2 + random.next(6))
            }
        }
        func groupClause() -> ModelClause {
            if v13 && random.next(4) == 0 { return contexts() }
            switch random.next(v12 ? 6 : 3) {
            case 0: return .maxExec(random.next(4), scope())
            case 1: return .between(gaps())
            case 2: return when(0, streams: ["a", "b"])
            case 3: return .maxExecCalendar(1 + random.next(2), week: random.chance(2))
            case 4: return window()
            default:
                salts += 1
                return .holdout(1 + random.next(60), salt: "h\(salts)")
            }
        }

        // The scenarios in the file's order: [G { S, T }], U, R.
        let sOn = properties || random.chance(2)
        let sStreams = sOn ? random.pick([["a"], ["b"], ["a", "b"]]) : ["S"]
        var scenarios: [ModelScenario] = []
        let sClauses = (0..<(1 + random.next(4))).map { _ in clause(0, streams: sStreams, on: sOn) }
        scenarios.append(
            ModelScenario(
                name: "S", clauses: sClauses, streams: sStreams, on: sOn,
                priority: random.chance(2) ? random.next(3) : nil, inGroup: grouped, retired: false))
        /// Language 1.3's `counts after D visible` (one reached after the presentation's hour:
        /// it never counts) and `defer up to D`, now and then.
        func screenClauses(_ scenario: inout ModelScenario) {
            guard v13 else { return }
            if random.chance(2) { scenario.countsAfter = random.pick([60, 60, 1_800, 5_400]) }
            if random.chance(2) { scenario.deferral = random.pick([1_800, 86_400]) }
        }
        screenClauses(&scenarios[0])
        let group = grouped ? (0..<random.next(3)).map { _ in groupClause() } : nil
        if grouped {
            scenarios.append(
                ModelScenario(
                    name: "T", clauses: [], streams: ["b"], on: true, priority: nil, inGroup: true, retired: false))
        }
        if random.chance(2) {
            let uOn = properties || random.chance(2)
            let streams = uOn ? ["a"] : ["U"]
            let index = scenarios.count
            let clauses = (0..<(1 + random.next(2))).map { _ in clause(index, streams: streams, on: uOn) }
            scenarios.append(
                ModelScenario(
                    name: "U", clauses: clauses, streams: streams, on: uOn, priority: random.next(3), inGroup: false,
                    retired: false))
            screenClauses(&scenarios[scenarios.count - 1])
        }
        if v12 && random.chance(3) {
            scenarios.append(
                ModelScenario(
                    name: "R", clauses: [], streams: [], on: false, priority: nil, inGroup: false, retired: true))
        }
        // Windows that share no day, or an empty `from`-`until` span, are errors; the caller
        // asks for other rules when the checker refuses these.
        var rules = ModelRules(
            text: "", scenarios: scenarios, group: group, version: version, properties: properties, swapped: nil,
            readsCrash: readsCrash)
        rules.text = rules.write(renamed: false)
        if v11 && sOn && random.chance(3) { rules.swapped = rules.write(renamed: true) }
        return rules
    }

    /// The file: `renamed` writes `S` as `S2 was S` and retires `U` (language 1.2).
    func write(renamed: Bool) -> String {
        var names = scenarios.map(\.name)
        if renamed { names[0] = "S2" }
        var lines: [String] = []
        if version != "1.0" { lines.append("# language \(version)") }
        let all = scenarios.flatMap(\.clauses) + (group ?? [])
        let texts = all.map { clauseText($0, names) }
        if texts.contains(where: { $0.contains("p >= ") }) { lines.append("param p: int = 0") }
        if properties { lines.append("event a(amount: int, plan: string), b(amount: int, plan: string)") }
        func body(_ index: Int) -> String {
            let s = scenarios[index]
            var parts: [String] = []
            if s.on { parts.append("on " + s.streams.joined(separator: ", ")) }
            parts += s.clauses.map { clauseText($0, names) }
            if let p = s.priority { parts.append("priority \(p)") }
            if let d = s.countsAfter { parts.append("counts after \(modelDuration(d)) visible") }
            if let d = s.deferral { parts.append("defer up to \(modelDuration(d))") }
            let was = renamed && index == 0 ? " was S" : ""
            return "scenario \(names[index])\(was) < " + parts.joined(separator: "; ") + " >"
        }
        for (index, s) in scenarios.enumerated() {
            if s.retired || (renamed && s.name == "U" && version >= "1.2") {
                lines.append("retired scenario \(s.name)")
                continue
            }
            if s.name == "S" && s.inGroup {
                let shared = (group ?? []).map { clauseText($0, names) }.joined(separator: "; ")
                lines.append("group G < \(shared) > {")
                lines.append("    " + body(0))
                continue
            }
            if s.name == "T" {
                lines.append("    " + body(index))
                lines.append("}")
                continue
            }
            lines.append(body(index))
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

extension LanguageModel {
    /// A random step for this model's rules, at this point of its history. `floor`: the earliest
    /// time the clock may be set back to (a timeline's start).
    public func randomStep(_ random: inout ModelRandom, floor: Double? = nil) -> ModelStep {
        let steps: [Double] = [0, 60, 1_800, 3_600, 5 * 3_600, 86_399, 86_400, 2 * 86_400 + 7, -1_800, -86_460]
        let zones = ["Europe/Paris", "America/New_York", "Asia/Kathmandu", "UTC", "Australia/Sydney"]
        var asked = names
        if swappedIn { asked.append("S") }  // the former name
        let streams = Set(rules.scenarios.flatMap(\.streams)).union(["a", "b"]).sorted()
        switch random.next(20) {
        case 0:
            let versions = ["1", "1", "2", "3"]
            return .launch(random.pick(versions))
        case 1, 2, 3, 4:
            let stream = random.pick(streams)
            let withProperties = rules.properties && (stream == "a" || stream == "b") && random.next(5) != 0
            return .trigger(
                stream,
                withProperties ? ModelProperties(amount: random.next(23) - 2, plan: random.pick(["pro", "free"])) : nil)
        case 5: return random.chance(2) ? .todo("a") : .done("a")
        case 6 where rules.text.contains("param p"): return .set(random.next(4))
        case 7, 8: return .tryToExecute(random.pick(asked))
        case 9:
            // While a wish is kept, every scenario competes with it.
            if rules.scenarios.indices.contains(where: { wishPending($0) }) { return .next(asked) }
            let among = asked.filter { _ in random.chance(2) }
            return among.isEmpty ? .next(asked) : .next(among)
        case 10:
            let name = random.pick(asked)
            if isOpen(name) {
                // Not yet counted once seen: on screen first, more often than not.
                if let index = scenario(named: name), let c = counting[index], !c.visible, random.next(3) != 0 {
                    return .visible(name)
                }
                return .finish(name, random.pick(["accepted", "declined", "later", "dismissed"]))
            }
            return .present(name)
        case 11:
            return .outcome(
                random.pick(asked.filter { $0 != "R" && !($0 == "U" && swappedIn) }),
                random.pick(["accepted", "declined", "later", "dismissed"]))
        case 12: return random.chance(3) ? .crash : .problem
        case 13 where random.chance(4): return .timezone(random.pick(zones))
        // (A `where` binds to the last pattern alone: one for each.)
        case 13 where rules.version >= "1.3", 15 where rules.version >= "1.3":
            let context = random.pick(["home", "checkout", "pin", "feed"])
            return contexts.contains(context) ? .leave(context) : .enter(context)
        case 14 where rules.swapped != nil && !swappedIn && random.chance(3): return .swap
        case 16 where rules.version >= "1.3", 17 where rules.version >= "1.3", 18 where rules.version >= "1.3":
            let name = random.pick(asked)
            if isOpen(name) { return random.next(3) == 0 ? .hidden(name) : .visible(name) }
            return inBackground ? .foreground : random.chance(3) ? .background : .present(name)
        default:
            let d = random.pick(steps)
            if let floor, now + d < floor { return .advance(0) }
            return .advance(d)
        }
    }
}
