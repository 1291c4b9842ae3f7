/// Semantic checks over a whole program: names, types, impossible and duplicate clauses.
struct Checker {
    let files: [RuleFile]
    private(set) var program: RuleProgram
    var diagnostics: [Diagnostic] = []
    var paramTypes: [String: ValueType] = [:]
    var scenarioNames: Set<String> = []
    var groupNames: Set<String> = []
    /// Streams `was` moves (an event's former names, and those of a scenario that counts its
    /// own stream) to the name they move to; and scenarios' and groups' former names.
    var movedStreams: [String: String] = [:]
    var formerScenariosAndGroups: [String: String] = [:]
    /// Declared events and where each is first declared; empty when the program declares none.
    var declaredEvents: [String: SourceSpan] = [:]
    var usedEvents: Set<String> = []
    /// While a filter is checked (`count(EVENT where ...)`): the event, and its properties' types,
    /// which the filter's names are.
    var filterEvent: String?
    var filterProperties: [String: ValueType] = [:]
    /// `checkBody`'s tables, emptied and reused from body to body (no allocation per scenario).
    var bodyTables = BodyTables()

    struct BodyTables: Sendable {
        var single = SmallMap<String, SourceRange>()
        /// The strictest value of each scope and the position of its clause in the body.
        var minimums = SmallMap<ScopeKind, (value: Int64, clause: Int)>()
        var maximums = SmallMap<ScopeKind, (value: Int64, clause: Int)>()
        /// An `on` list's names, with the first range of each (emptied before each list).
        var names = SmallMap<String, SourceRange>()
    }

    /// The first since_first, since_last and between clause (its position in the body), with
    /// the largest duration seen: three values, not an array allocated per body.
    struct TimeClauses {
        private var slots:
            ((clause: Int, largest: Int64)?, (clause: Int, largest: Int64)?, (clause: Int, largest: Int64)?) =
                (nil, nil, nil)

        subscript(slot: Int) -> (clause: Int, largest: Int64)? {
            get { slot == 0 ? slots.0 : slot == 1 ? slots.1 : slots.2 }
            set {
                switch slot {
                case 0: slots.0 = newValue
                case 1: slots.1 = newValue
                default: slots.2 = newValue
                }
            }
        }
    }
    lazy var eventList = Array(declaredEvents.keys)
    /// Suggestions left to look for: past the error cap nobody reads them.
    private(set) var suggestionsLeft = Limits.maxErrorsPerFile
    /// Candidate lists, built once.
    lazy var paramList = Array(paramTypes.keys)
    lazy var scenarioAndGroupList = Array(scenarioNames.union(groupNames))
    lazy var scenarioList = Array(scenarioNames)

    /// Closest of `candidates` to `name`, while the budget lasts.
    mutating func suggest(_ name: String, _ candidates: [String]) -> [String] {
        guard suggestionsLeft > 0 else { return [] }
        suggestionsLeft -= 1
        return Suggestions.closest(to: name, in: candidates)
    }

    init(files: [RuleFile]) {
        self.files = files
        self.suggestionsLeft = Limits.maxErrorsPerFile * max(1, files.count)
        self.program = RuleProgram(files: files, scenarios: [], groups: [], params: [])
    }

    mutating func run() -> [Diagnostic] {
        collectDeclarations()
        for rename in program.renames {
            for former in rename.formerNames.map(\.text) {
                switch rename.kind {
                case .event: movedStreams[former] = rename.name.text
                case .scenario:
                    formerScenariosAndGroups[former] = rename.name.text
                    if rename.countsOwnStream { movedStreams[former] = rename.name.text }
                case .group: formerScenariosAndGroups[former] = rename.name.text
                case .param: break
                }
            }
        }
        for file in files {
            for declaration in file.declarations {
                switch declaration {
                case .event: break
                case .param(let param): checkParam(param, file.source)
                case .scenario(let scenario): checkBody(scenario.clauses, inGroup: false, file.source)
                case .group(let group):
                    checkBody(group.clauses, inGroup: true, file.source)
                    for member in group.members {
                        checkBody(member.clauses, inGroup: false, file.source, groupClauses: group.clauses)
                    }
                }
            }
        }
        for (name, span) in declaredEvents.sorted(by: { $0.value.range.lowerBound < $1.value.range.lowerBound })
        where !usedEvents.contains(name) {
            warning(Message.unusedEvent(name), span.file, span.range)
        }
        return diagnostics
    }

    /// Once the program declares events, `name` (a stream named by `on` or a function) must
    /// be one of them or a scenario's own stream.
    /// True when `name` is written as a string (`"@crash"`), not a word (`crash`, which a 1.2
    /// file reads as the engine's stream).
    static func isQuoted(_ name: Name, in file: SourceFile) -> Bool {
        name.range.lowerBound < file.bytes.count && file.bytes[name.range.lowerBound] == UInt8(ascii: "\"")
    }

    mutating func checkStream(_ name: Name, _ file: SourceFile) {
        if EngineStream.isReserved(name.text) {
            // `crash` in a 1.2 file is the engine's stream; a quoted `"@x"` is nobody's.
            if Checker.isQuoted(name, in: file) {
                error(Message.reservedName(name.text), file, name.range)
            }
            return
        }
        // A stream `was` moved, read by its old name: it holds no events any more.
        if !movedStreams.isEmpty, let new = movedStreams[name.text], declaredEvents[name.text] == nil,
            !scenarioNames.contains(name.text)
        {
            error(
                Message.readsMovedName(name.text, new, what: "events"), file, name.range,
                fixIts: [FixIt(range: name.range, replacement: Printer.name(new))])
            return
        }
        guard !declaredEvents.isEmpty else { return }
        usedEvents.insert(name.text)
        if declaredEvents[name.text] != nil || scenarioNames.contains(name.text) { return }
        let suggestions = suggest(name.text, eventList)
        // The event meant is not also reported as unused: one diagnostic per mistake.
        if let meant = suggestions.first { usedEvents.insert(meant) }
        let replacement = suggestions.first.map(Printer.name)
        error(
            Message.unknown(.unknownEvent, "event", name.text, suggestions), file, name.range,
            notes: [
                DiagnosticNote("this program declares its events; declare it with 'event \(Printer.name(name.text))'")
            ],
            fixIts: replacement.map { [FixIt(range: name.range, replacement: $0)] } ?? [])
    }

    /// A `min_days` or `active_days` window: whole days, from 1 day to ``Limits/maxDayWindow``.
    mutating func checkDayWindow(_ seconds: Int64, _ range: SourceRange, _ file: SourceFile) -> Bool {
        if seconds % 86_400 != 0 || seconds == 0 {
            error(Message.wholeDays(DurationText.format(seconds)), file, range)
            return false
        }
        if seconds / 86_400 > Limits.maxDayWindow {
            error(Message.dayWindowTooLong(seconds / 86_400), file, range)
            return false
        }
        return true
    }

    /// Collects the declarations, for ``checkStandalone(_:_:)`` to use many times.
    mutating func collectOnce() {
        collectDeclarations()
        diagnostics = []
    }

    /// Type-checks a lone condition against the declarations ``collectOnce()`` collected.
    mutating func checkStandalone(_ expr: Expr, _ file: SourceFile) -> [Diagnostic] {
        diagnostics = []
        suggestionsLeft = Limits.maxErrorsPerFile
        if let type = typeOf(expr, file), type != .bool {
            error(Message.conditionNotBool(type), file, expr.range)
        }
        return diagnostics
    }

    // MARK: - Reporting

    mutating func report(
        _ severity: Severity, _ problem: DiagnosticMessage, _ file: SourceFile, _ range: SourceRange,
        notes: [DiagnosticNote] = [], fixIts: [FixIt] = []
    ) {
        diagnostics.append(Diagnostic(problem, severity, at: SourceSpan(file, range), notes: notes, fixIts: fixIts))
    }

    mutating func error(
        _ problem: DiagnosticMessage, _ file: SourceFile, _ range: SourceRange,
        notes: [DiagnosticNote] = [], fixIts: [FixIt] = []
    ) {
        report(.error, problem, file, range, notes: notes, fixIts: fixIts)
    }

    mutating func warning(
        _ problem: DiagnosticMessage, _ file: SourceFile, _ range: SourceRange, notes: [DiagnosticNote] = []
    ) {
        report(.warning, problem, file, range, notes: notes)
    }

    // MARK: - Declarations

    mutating func collectDeclarations() {
        var firstParam: [String: SourceSpan] = [:]
        var firstScenarioOrGroup: [String: SourceSpan] = [:]
        // Reserved once: a large program would otherwise rehash these tables many times.
        let declarations = files.reduce(0) { total, file in
            total
                + file.declarations.reduce(0) {
                    if case .group(let group) = $1 { return $0 + 1 + group.members.count }
                    return $0 + 1
                }
        }
        firstScenarioOrGroup.reserveCapacity(declarations)
        scenarioNames.reserveCapacity(declarations)
        program.scenarios.reserveCapacity(declarations)
        func claim(
            _ table: inout [String: SourceSpan], _ kind: String, _ name: Name, _ file: SourceFile,
            _ checker: inout Checker
        ) -> Bool {
            if let first = table[name.text] {
                checker.error(
                    Message.duplicateDeclaration(kind, name.text), file, name.range,
                    notes: [DiagnosticNote("'\(name.text)' is first declared here", at: first)])
                return false
            }
            table[name.text] = SourceSpan(file, name.range)
            return true
        }
        for file in files {
            // By index: a loop over the array copied each declaration (retaining its names and
            // clauses) only to copy it again into the program.
            for index in file.declarations.indices {
                switch file.declarations[index] {
                case .event(let event):
                    for (k, name) in event.names.enumerated() {
                        let properties = k < event.properties.count ? event.properties[k] : []
                        checkProperties(properties, of: name, file.source)
                        if EngineStream.isReserved(name.text) {
                            error(
                                Checker.isQuoted(name, in: file.source)
                                    ? Message.reservedName(name.text)
                                    : Message.builtinStreamDeclared(EngineStream.word(for: name.text) ?? name.text),
                                file.source, name.range)
                            continue
                        }
                        if let first = declaredEvents[name.text] {
                            if !properties.isEmpty, program.properties[name.text].map({ same($0, properties) }) != true
                            {
                                error(Message.otherProperties(name.text), file.source, name.range)
                            }
                            warning(
                                Message.duplicateEventDeclaration(name.text), file.source,
                                name.range,
                                notes: [DiagnosticNote("'\(name.text)' is first declared here", at: first)])
                        } else {
                            declaredEvents[name.text] = SourceSpan(file.source, name.range)
                            program.events.append(name)
                            if !properties.isEmpty { program.properties[name.text] = properties }
                        }
                    }
                case .param(let param):
                    if claim(&firstParam, "param", param.name, file.source, &self) {
                        program.params.append(param)
                        if let type = param.type { paramTypes[param.name.text] = type }
                    }
                case .scenario(let scenario):
                    if claim(&firstScenarioOrGroup, "scenario", scenario.name, file.source, &self) {
                        program.scenarios.append(ScenarioInfo(decl: scenario, group: nil, file: file.source))
                        scenarioNames.insert(scenario.name.text)
                    }
                case .group(let group):
                    if claim(&firstScenarioOrGroup, "group", group.name, file.source, &self) {
                        program.groups.append(group)
                        groupNames.insert(group.name.text)
                    }
                    for member in group.members
                    where claim(&firstScenarioOrGroup, "scenario", member.name, file.source, &self) {
                        program.scenarios.append(ScenarioInfo(decl: member, group: group.name.text, file: file.source))
                        scenarioNames.insert(member.name.text)
                    }
                }
            }
        }
    }

    mutating func checkParam(_ param: ParamDecl, _ file: SourceFile) {
        guard let value = param.defaultValue, let declared = param.type else { return }
        let actual: ValueType
        switch value.kind {
        case .integer: actual = .int
        case .duration: actual = .duration
        case .string: actual = .string
        case .bool: actual = .bool
        case .invalid: return
        default:
            error(Message.defaultNotLiteral, file, value.range)
            return
        }
        if actual == declared { return }
        if actual == .int && declared == .duration, case .integer(let seconds) = value.kind {
            // As in clauses, a bare 0 is a duration; any other number needs a unit.
            if seconds == 0 { return }
            let fix = DurationText.format(seconds)
            error(
                Message.bareDuration(file.text(value.range), fix), file, value.range,
                fixIts: [FixIt(range: value.range, replacement: fix)])
            return
        }
        error(Message.defaultType(param.name.text, actual, declared), file, value.range)
    }

    // MARK: - Clauses

    /// `groupClauses`: for a group's member, the group's own (read by the checks that look at both).
    mutating func checkBody(_ clauses: [Clause], inGroup: Bool, _ file: SourceFile, groupClauses: [Clause] = []) {
        // Taken out of `bodyTables` (and put back, emptied, at the end) so that the tables
        // keep their storage from body to body.
        var tables = BodyTables()
        swap(&tables, &bodyTables)
        defer {
            tables.single.removeAll()
            tables.minimums.removeAll()
            tables.maximums.removeAll()
            swap(&tables, &bodyTables)
        }
        // The strictest min_events and max_events of each scope are `minimums` and `maximums`.
        // The first since_first, since_last and between clause, with the largest duration seen.
        var times = TimeClauses()
        // The days of the week every `days` clause allows, and the latest `from` and the
        // earliest `until`: a body that leaves no day never runs.
        var days: UInt8?
        var dates: (from: CalendarDate?, until: CalendarDate?) = (nil, nil)
        for position in clauses.indices {
            let clause = clauses[position]
            let keyword = clause.kind.keyword
            if inGroup {
                // Every kind is listed (no `default`): a new clause kind is placed here on purpose.
                switch clause.kind {
                case .maxExec, .between, .growingBetween, .when, .during, .days, .from, .until, .holdout, .contexts:
                    break
                case .minEvents, .minEventsWhere, .maxEvents, .sinceFirst, .sinceLast, .on, .priority, .minDays, .after,
                    .countsAfter, .deferral:
                    error(Message.clauseNotInGroup(keyword), file, clause.range)
                    continue
                }
            }
            // Duplicates found by meaning, not by printing every clause, among the earlier
            // clauses (a body is short): by index, the keyword first, which copies no clause
            // and rejects nearly every one.
            let word = clause.kind.word
            if let earlier = (0..<position).first(where: {
                clauses[$0].kind.word == word && clauses[$0].kind.means(clause.kind)
            }) {
                let first = clauses[earlier]
                warning(
                    Message.duplicateClause(Printer.clause(clause.kind)), file, clause.range,
                    notes: [DiagnosticNote("first written here", at: SourceSpan(file, first.range))])
                continue
            }
            switch clause.kind {
            case .on, .priority, .countsAfter, .deferral:
                if let first = tables.single[keyword] {
                    error(
                        Message.duplicateSingleClause(keyword), file, clause.range,
                        notes: [DiagnosticNote("first written here", at: SourceSpan(file, first))])
                }
                tables.single[keyword] = clause.range
                if case .countsAfter(let d) = clause.kind, d.seconds <= 0 {
                    error(Message.zeroWait(Printer.clause(clause.kind)), file, d.range)
                } else if case .deferral(let d) = clause.kind {
                    if d.seconds <= 0 {
                        error(Message.zeroWait(Printer.clause(clause.kind)), file, d.range)
                    } else if !(clauses + groupClauses).contains(where: { $0.kind.isDeferrable }) {
                        warning(Message.nothingToDefer, file, clause.range)
                    }
                }
                if case .on(let names) = clause.kind {
                    tables.names.removeAll()
                    tables.names.reserveCapacity(names.count)
                    for name in names {
                        checkStream(name, file)
                        if let first = tables.names.insertIfAbsent(name.text, name.range) {
                            warning(
                                Message.duplicateEvent(name.text), file, name.range,
                                notes: [DiagnosticNote("first written here", at: SourceSpan(file, first))])
                        }
                    }
                }
            case .minEvents(let n, let scope):
                checkWindow(n, scope, file)
                if n.value > tables.minimums[scope.kind]?.value ?? .min {
                    tables.minimums[scope.kind] = (n.value, position)
                }
            case .minEventsWhere(let n, let filter, let scope):
                checkWindow(n, scope, file)
                // The filter is read over each `on` event's properties.
                let events = clauses.lazy.compactMap { clause -> [Name]? in
                    if case .on(let names) = clause.kind { return names }
                    return nil
                }.first
                if let events, !events.isEmpty {
                    for event in events where !checkFilter(filter, of: event, file) { break }
                } else {
                    error(Message.filterNeedsOn, file, clause.range)
                }
            case .maxEvents(let n, let scope):
                checkWindow(n, scope, file)
                if n.value < tables.maximums[scope.kind]?.value ?? .max {
                    tables.maximums[scope.kind] = (n.value, position)
                }
            case .maxExec(let n, let scope):
                checkWindow(n, scope, file)
                if n.value == 0 { warning(Message.neverRuns, file, clause.range) }
            case .when(let expr):
                if let type = typeOf(expr, file), type != .bool {
                    error(Message.conditionNotBool(type), file, expr.range)
                }
                checkWindowedSums(in: expr, file)
            case .after:
                break  // its outcome was checked as it was parsed
            case .holdout(let share, _):
                if share.value >= 100 {
                    error(Message.holdoutAll(share.value), file, share.range)
                } else if share.value == 0 {
                    warning(Message.holdoutNone, file, clause.range)
                }
            case .contexts(let names, let outside):
                var seen: Set<String> = []
                for name in names where !seen.insert(name.text).inserted {
                    warning(Message.duplicateContext(name.text), file, name.range)
                }
                // `in a; not in a`: nothing left where it may run.
                if !outside {
                    let refused = Set(
                        clauses[..<position].flatMap { earlier -> [String] in
                            if case .contexts(let other, true) = earlier.kind { return other.map(\.text) }
                            return []
                        }
                            + clauses[(position + 1)...].flatMap { later -> [String] in
                                if case .contexts(let other, true) = later.kind { return other.map(\.text) }
                                return []
                            })
                    if !names.isEmpty && names.allSatisfy({ refused.contains($0.text) }) {
                        error(Message.contextsExcludeAll(names.map(\.text).joined(separator: ", ")), file, clause.range)
                    }
                }
            case .during(let from, let to, _):
                if from.minutes % 1440 == to.minutes % 1440 {
                    error(Message.emptyHours(Printer.clause(clause.kind)), file, clause.range)
                }
            case .days(let names):
                // Reported once, at the clause that leaves no day.
                let before = days
                days = (before ?? 0x7F) & Weekday.mask(names)
                if days == 0 && before != 0 { error(Message.noDays, file, clause.range) }
            case .from(let date):
                if let until = dates.until, date.dayNumber > until.dayNumber {
                    error(Message.neverOpen(date.text, until.text), file, clause.range)
                }
                if dates.from.map({ date.dayNumber > $0.dayNumber }) ?? true { dates.from = date }
            case .until(let date):
                if let from = dates.from, from.dayNumber > date.dayNumber {
                    error(Message.neverOpen(from.text, date.text), file, clause.range)
                }
                if dates.until.map({ date.dayNumber < $0.dayNumber }) ?? true { dates.until = date }
            case .minDays(let n, let d):
                if checkDayWindow(d.seconds, d.range, file), n.value > d.seconds / 86_400 {
                    error(Message.moreDaysThanWindow(n.value, d.seconds / 86_400), file, n.range)
                }
            case .growingBetween(let gaps):
                // A list that shrinks: a later "not now" would wait less than an earlier one.
                for (earlier, later) in zip(gaps, gaps.dropFirst()) where later.seconds < earlier.seconds {
                    warning(
                        Message.shrinkingGaps(DurationText.format(earlier.seconds), DurationText.format(later.seconds)),
                        file, later.range)
                    break
                }
            case .sinceFirst(let d), .sinceLast(let d), .between(let d):
                // Each is "at least D": of two, only the larger matters.
                let slot: Int
                switch clause.kind {
                case .sinceFirst: slot = 0
                case .sinceLast: slot = 1
                default: slot = 2
                }
                if let first = times[slot] {
                    let larger = max(d.seconds, first.largest)
                    times[slot]!.largest = larger
                    warning(
                        Message.twoTimeClauses(keyword, DurationText.format(larger)), file,
                        clause.range,
                        notes: [DiagnosticNote("the other is here", at: SourceSpan(file, clauses[first.clause].range))])
                } else {
                    times[slot] = (position, d.seconds)
                }
            }
        }
        // A minimum above a maximum over the same events, or over more of them (a narrower
        // scope's events are among a wider one's): `min_events 3 within 1d; max_events 2 within 2d`.
        if tables.maximums.isEmpty { return }
        for (scope, low) in tables.minimums.entries.sorted(by: {
            $0.value.clause < $1.value.clause
        }) {
            let candidates = tables.maximums.entries.filter {
                Checker.scope(scope, isWithin: $0.key) && low.value > $0.value.value
            }
            guard
                let (wide, high) = candidates.min(by: {
                    $0.value.clause < $1.value.clause
                })
            else { continue }
            let message =
                wide == scope
                ? Message.impossible(
                    Printer.clause(clauses[low.clause].kind), Printer.clause(clauses[high.clause].kind),
                    Printer.scope(scope))
                : Message.impossibleAcross(
                    Printer.clause(clauses[low.clause].kind), Printer.clause(clauses[high.clause].kind),
                    Printer.scope(scope),
                    Printer.scope(wide))
            error(
                message, file, clauses[low.clause].range,
                notes: [DiagnosticNote("the maximum is here", at: SourceSpan(file, clauses[high.clause].range))])
        }
        // `since_first D` needs an event; `max_events 0` (per install) allows none.
        if let sinceFirst = times[0].map({ clauses[$0.clause] }), let none = tables.maximums[.install], none.value == 0
        {
            error(
                Message.sinceFirstWithoutEvents(Printer.clause(sinceFirst.kind)), file,
                sinceFirst.range,
                notes: [DiagnosticNote("the maximum is here", at: SourceSpan(file, clauses[none.clause].range))])
        }
    }
}
