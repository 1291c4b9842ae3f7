import RuleLang

extension CompiledRules {
    /// The tables of ``CompiledRules`` while they are made: `init` lowers a program step by step,
    /// and the fingerprints of long `on` lists may be stored after it (a start computes them on
    /// another thread while it decodes the state); ``CompiledRules/init(_:)`` then takes them.
    struct Builder: NameIndexes {
        let program: RuleProgram
        var scenarios: [CompiledScenario] = []
        let scenarioIndex: NameTable
        /// Former names (`was`) that no declaration uses now, to the scenario, group or param that
        /// carries them (an app built against older rules still calls them), and for events the
        /// stream's name now.
        var formerScenarios: [String: Int] = [:]
        var formerGroups: [String: Int] = [:]
        var formerParams: [String: Int] = [:]
        var formerStreams: [String: String] = [:]
        var groups: [CompiledGroup] = []
        let groupIndex: NameTable
        var params: [CompiledParam] = []
        let paramIndex: NameTable
        var conditions: [CompiledExpr] = []
        /// By slot: true for a stream whose local days are kept (empty when no rule counts days).
        var dayCounted: [Bool] = []
        /// The gaps of each `between` with several, in seconds.
        var gapLists: [[Double]] = []
        /// True when a condition reads `bucket`: the engine then keeps an install id.
        var readsBuckets = false
        /// The filtered streams (``StreamFilter``): by event slot, the positions of its filters are
        /// `filterOrder[filterStart[slot]..<filterStart[slot + 1]]` (``filterPositions(ofEvent:)``).
        var filters: [StreamFilter] = []
        var filterStart: [Int32] = []
        var filterOrder: [Int32] = []
        /// While compiling: the filter of each filtered stream, and the lowered filters by text and
        /// types, shared by the events that read the same filter (dropped once compiled).
        var filterOfStream: [Int: Int] = [:]
        var loweredFilters: [String: LoweredFilter] = [:]
        /// The recent times a filtered stream that a window reads keeps: the default, or N+1 for
        /// `min_events N where ... within D`.
        var filterKeep: [Int: Int] = [:]
        /// By scenario: the to-do that a presentation of it holds, `@showing:GROUP` (or
        /// `@showing:SCENARIO` outside a group). Every scenario of a group shares its group's.
        var holdKeys: [String] = []
        /// The contexts named by `in` and `not in` clauses, and the clauses' lists of them.
        var contextNames: [String] = []
        var contextIndex: [String: Int] = [:]
        var contextLists: [Int32] = []
        /// By scenario: its hold's store key, `t:@showing:GROUP`.
        var holdStoreKeys: [String] = []

        /// The streams the rules name; slot `i` of every engine is `streams.names[i]`.
        var streams = StreamTable()
        /// By slot: the scenarios counting the stream, `listenerList[listenerStart[slot]..<listenerStart[slot + 1]]`
        /// (one list for all: no array per stream), and the recent times it keeps.
        var listenerStart: [Int32] = [0]
        var listenerList: [Int32] = []
        var streamKeep: [Int32] = []
        /// By scenario: what a trigger reads, in plain values (no reference counting on its way).
        var triggerInfo: [TriggerInfo] = []
        /// Recent timestamps kept per tally: the API cap, or more for a tally that a windowed
        /// clause counts. Each tally keeps only what its own clauses need.
        let recentLimit: Int

        /// Scenarios whose fingerprints ``fingerprintInBackground()`` is still to compute.
        private var pendingFingerprints: [Int] = []

        /// Lowers `program`. With `fingerprintsLater`, the fingerprints of scenarios counting at
        /// least ``CompiledRules/longList`` streams are left for ``fingerprintInBackground()``, and
        /// stored by ``storeFingerprints(_:)`` before the rules are made. With `listed`, the program's `on` lists take
        /// their slots from there (made from the same files) instead of storing their names again.
        init(
            program: RuleProgram, recentLimit: Int, fingerprintsLater: Bool = false,
            listed listedStreams: ListedStreams? = nil
        ) {
            if let listedStreams { streams = listedStreams.table }
            self.program = program
            self.recentLimit = recentLimit
            var paramIndex = NameTable()
            for param in program.params {
                guard let type = param.type else { continue }
                var value = ParamValue.zero(type)
                switch param.defaultValue?.kind {
                case .integer(let n)?: value = type == .duration ? .duration(Double(n)) : .int(n)  // `= 0`
                case .duration(let seconds)?: value = .duration(Double(seconds))
                case .string(let text)?: value = .string(text)
                case .bool(let flag)?: value = .bool(flag)
                default: break
                }
                // Names are unique in a checked program: the position is the next index.
                guard paramIndex.insert(param.name.text) == params.count else { continue }
                params.append(
                    CompiledParam(
                        name: param.name.text, key: StoreKey.param(NameTable.canonical(param.name.text)), type: type,
                        defaultValue: value))
            }
            self.paramIndex = paramIndex
            var groupIndex = NameTable()
            for group in program.groups { groupIndex.insert(group.name.text) }
            self.groupIndex = groupIndex
            var scenarioIndex = NameTable()
            for info in program.scenarios {
                scenarioIndex.insert(info.name)
                scenarios.append(
                    CompiledScenario(name: info.name, group: info.group.flatMap { groupIndex[$0] }, keep: recentLimit))
            }
            self.scenarioIndex = scenarioIndex
            for rename in program.renames {
                for former in rename.formerNames.map(\.text) {
                    switch rename.kind {
                    case .scenario:
                        if scenarioIndex[former] == nil && groupIndex[former] == nil {
                            formerScenarios[former] = scenarioIndex[rename.name.text]
                        }
                    case .group:
                        if scenarioIndex[former] == nil && groupIndex[former] == nil {
                            formerGroups[former] = groupIndex[rename.name.text]
                        }
                    case .param: if paramIndex[former] == nil { formerParams[former] = paramIndex[rename.name.text] }
                    case .event: break  // once the streams have their slots, below
                    }
                }
            }
            // Clauses after every name has its index: a `when` may name any scenario or group.
            // A group is made whole: its members are the scenarios that name it.
            var members = Array(repeating: [Int](), count: program.groups.count)
            for (index, scenario) in scenarios.enumerated() {
                if let group = scenario.group { members[group].append(index) }
            }
            for (index, group) in program.groups.enumerated() {
                var (events, executions) = (recentLimit, recentLimit)
                let clauses = compile(group.clauses, of: nil, &events, &executions)
                groups.append(
                    CompiledGroup(
                        name: group.name.text, clauses: clauses, declared: group.clauses, members: members[index],
                        executionKeep: executions))
            }
            // Room for every name the scenarios list at once (a table grown name by name rehashes
            // every name about twice over: 8% of loading rules that list 100,000 streams).
            var listedNames = program.events.count
            for info in program.scenarios {
                var listed = 1
                for clause in info.decl.clauses { if case .on(let list) = clause.kind { listed = list.count } }
                listedNames += listed
            }
            streams.index.reserveCapacity(listedNames)
            // Which scenario last counted each slot: a name listed twice is counted once.
            var countedBy: [Int] = []
            countedBy.reserveCapacity(listedNames)
            for (index, info) in program.scenarios.enumerated() {
                var listed: [Name]?
                var listedAt = 0
                for clause in info.decl.clauses {
                    if case .on(let list) = clause.kind { (listed, listedAt) = (list, clause.range.lowerBound) }
                    if case .priority(let n) = clause.kind { scenarios[index].priority = n.value }
                    if case .countsAfter(let d) = clause.kind { scenarios[index].countsAfter = Double(d.seconds) }
                    if case .deferral(let d) = clause.kind { scenarios[index].deferral = Double(d.seconds) }
                    if case .holdout(let n, let salt) = clause.kind {
                        scenarios[index].holdouts.append((Int(n.value), salt.text))
                    }
                }
                // Then the group's holdouts, which hold out each of its scenarios: `explain`
                // lists a scenario's own first, then its group's, as it lists their clauses.
                if let group = scenarios[index].group {
                    for clause in program.groups[group].clauses {
                        if case .holdout(let n, let salt) = clause.kind {
                            scenarios[index].holdouts.append((Int(n.value), salt.text))
                        }
                    }
                }
                let listedSlots: [Int]
                if let listed {
                    listedSlots =
                        listedStreams?.slots[ListedStreams.Key(info.file, listedAt)]
                        ?? listed.map { streams.slot($0.text) }
                } else {
                    listedSlots = [streams.slot(info.name)]
                }
                var slots: [Int] = []
                slots.reserveCapacity(listedSlots.count)
                for slot in listedSlots {
                    while countedBy.count <= slot { countedBy.append(-1) }
                    guard countedBy[slot] != index else { continue }
                    countedBy[slot] = index
                    slots.append(slot)
                }
                var (events, executions) = (recentLimit, recentLimit)
                // A retired scenario runs as one that can never run (`max_exec 0`); `explain` says why.
                let clauses = info.decl.effectiveClauses
                scenarios[index].retired = info.decl.retired != nil
                scenarios[index].clauses = compile(clauses, of: info.name, &events, &executions)
                scenarios[index].declared = clauses
                scenarios[index].streams = slots
                scenarios[index].eventKeep = events
                scenarios[index].executionKeep = executions
                if fingerprintsLater && slots.count >= CompiledRules.longList {
                    pendingFingerprints.append(index)
                } else {
                    let table = streams
                    scenarios[index].fingerprint = CompiledScenario.fingerprint(slots.lazy.map { table.name($0) })
                }
            }
            holdKeys = scenarios.map { scenario in
                CompiledRules.holdPrefix + NameTable.canonical(scenario.group.map { groups[$0].name } ?? scenario.name)
            }
            holdStoreKeys = holdKeys.map(StoreKey.todo)
            // Declared events are known streams even when no rule counts them (``RuleEngine/unknownNames``).
            for name in program.events { _ = streams.slot(name.text) }
            indexFilters()
            for rename in program.renames where rename.kind == .event {
                for former in rename.formerNames.map(\.text) where streams.index[former] == nil {
                    formerStreams[former] = rename.name.text
                    // The event's filtered streams are renamed with it (the filter's text is the same).
                    let event = streams.index[rename.name.text]
                    for filter in filters where filter.event == event {
                        formerStreams[filter.streamName(of: former)] = filter.streamName(of: rename.name.text)
                    }
                }
            }
            streamKeep = Array(repeating: Int32(clamping: recentLimit), count: streams.count)
            // A filtered stream keeps one recent time unless a window reads it (the counts per
            // install, session and version, and the first and last times, need no more): at 100,000
            // events with one filter each, 16 B an event less (`rulebench`, `bytes_per_aggregate_100k`).
            for filter in filters { streamKeep[filter.stream] = Int32(clamping: filterKeep[filter.stream] ?? 1) }
            var counts = [Int32](repeating: 0, count: streams.count + 1)
            for scenario in scenarios {
                for slot in scenario.streams {
                    counts[slot + 1] += 1
                    streamKeep[slot] = max(streamKeep[slot], Int32(clamping: scenario.eventKeep))
                }
            }
            for slot in 0..<streams.count { counts[slot + 1] += counts[slot] }
            listenerStart = counts
            listenerList = [Int32](repeating: 0, count: Int(counts[streams.count]))
            for (index, scenario) in scenarios.enumerated() {
                for slot in scenario.streams {
                    listenerList[Int(counts[slot])] = Int32(index)
                    counts[slot] += 1
                }
            }
            triggerInfo = scenarios.map {
                TriggerInfo(eventKeep: $0.eventKeep, countsOneStream: $0.streams.count == 1, key: $0.keyBytes)
            }
            // The streams whose days are kept: those of scenarios with `min_days`, and those
            // `active_days` names.
            var counted = [Bool](repeating: false, count: streams.count)
            for scenario in scenarios
            where scenario.clauses.contains(where: { if case .minDays = $0 { return true } else { return false } }) {
                for slot in scenario.streams { counted[slot] = true }
            }
            func visit(_ expr: CompiledExpr) {
                switch expr {
                case .activeDays(let slot, _): if slot < counted.count { counted[slot] = true }
                case .not(let x): visit(x)
                case .and(let x, let y), .or(let x, let y), .compare(_, let x, let y):
                    visit(x)
                    visit(y)
                default: break
                }
            }
            for condition in conditions { visit(condition) }
            dayCounted = counted.contains(true) ? counted : []
        }

        /// Starts computing the fingerprints left for later on another thread; the call it returns
        /// waits for them, for ``storeFingerprints(_:)`` (none when none were left).
        func fingerprintInBackground() -> () -> [UInt64] {
            guard !pendingFingerprints.isEmpty else { return { [] } }
            let table = streams
            let lists = pendingFingerprints.map { scenarios[$0].streams }
            let work = BackgroundWork {
                lists.map { slots in CompiledScenario.fingerprint(slots.lazy.map { table.name($0) }) }
            }
            return { work.wait() }
        }

        /// Stores the fingerprints ``fingerprintInBackground()`` computed.
        mutating func storeFingerprints(_ fingerprints: [UInt64]) {
            for (index, fingerprint) in zip(pendingFingerprints, fingerprints) {
                scenarios[index].fingerprint = fingerprint
            }
            pendingFingerprints = []
        }

        /// Lowers clauses (of scenario `scenario`, or of a group), raising `events` and `executions`
        /// to what windowed clauses need.
        private mutating func compile(
            _ clauses: [Clause], of scenario: String?, _ events: inout Int, _ executions: inout Int
        ) -> [CompiledClause] {
            var compiled: [CompiledClause] = []
            compiled.reserveCapacity(clauses.count)
            func needs(_ n: IntLiteral, _ scope: Scope, _ keep: inout Int) {
                switch scope.kind {
                case .within, .day, .week:
                    keep = max(keep, Int(min(max(n.value, 0), Limits.maxWindowedThreshold)) + 1)
                case .install, .version, .session: break
                }
            }
            for clause in clauses {
                let lowered: CompiledClause
                switch clause.kind {
                case .minEvents(let n, let scope):
                    needs(n, scope, &events)
                    lowered = .minEvents(n.value, CountScope(scope.kind))
                case .minEventsWhere(let n, let filter, let scope):
                    // The sum of the `on` events' filtered counts, at least N: a condition.
                    var keep = 0
                    needs(n, scope, &keep)
                    var slots: [Int32] = []
                    for case .on(let names) in clauses.map(\.kind) {
                        for name in names {
                            let stream = EngineStream.filtered(name.text, filter)
                            addFilter(event: name.text, filter, adds: nil, stream: stream)
                            let slot = streams.slot(stream)
                            slots.append(Int32(slot))
                            if keep > 0 { filterKeep[slot] = max(filterKeep[slot] ?? 1, keep, recentLimit) }
                        }
                    }
                    conditions.append(
                        .compare(
                            .greaterEqual, .countOf(slots: slots, CountScope(scope.kind)), .constant(.int(n.value))))
                    lowered = .when(conditions.count - 1)
                case .maxEvents(let n, let scope):
                    needs(n, scope, &events)
                    lowered = .maxEvents(n.value, CountScope(scope.kind))
                case .maxExec(let n, let scope) where scope.kind == .day || scope.kind == .week:
                    needs(n, scope, &executions)
                    lowered = .maxExecLocal(n.value, week: scope.kind == .week)
                case .maxExec(let n, let scope):
                    needs(n, scope, &executions)
                    lowered = .maxExec(n.value, CountScope(scope.kind))
                case .sinceFirst(let d): lowered = .sinceFirst(Double(d.seconds))
                case .sinceLast(let d): lowered = .sinceLast(Double(d.seconds))
                case .between(let d): lowered = .between(Double(d.seconds))
                case .minDays(let n, let d): lowered = .minDays(n.value, d.seconds / 86_400)
                case .growingBetween(let gaps):
                    lowered = .growingBetween(gapLists.count)
                    gapLists.append(gaps.map { Double($0.seconds) })
                case .when(let expr):
                    // Moved out while `lower` adds to it, so that adding does not copy the table.
                    var table = StreamTable()
                    swap(&table, &streams)
                    let condition = CompiledRules.lower(expr, self, slot: { table.slot($0) })
                    swap(&table, &streams)
                    conditions.append(condition)
                    for read in CompiledRules.filteredStreams(in: expr) {
                        addFilter(event: read.event, read.filter, adds: read.adds, stream: read.stream)
                        if read.windowed {
                            // A windowed sum keeps one unit more than the number it is compared with
                            // (a trigger's value is that many copies of its time): exact for the comparison.
                            let sumKeep = read.compared.map { Int(min(max($0, 0), Limits.maxWindowedThreshold)) + 1 }
                            let keep = read.adds == nil ? recentLimit : sumKeep ?? 1
                            let slot = streams.slot(read.stream)
                            filterKeep[slot] = max(filterKeep[slot] ?? 0, keep)
                        }
                    }
                    if condition.readsBucket { readsBuckets = true }
                    lowered = .when(conditions.count - 1)
                case .after(let word, let wait):
                    // The checker allows `after` in scenarios only.
                    guard let scenario, let outcome = Outcome(rawValue: word.text) else { continue }
                    let slot = streams.slot(EngineStream.outcome(outcome, of: scenario))
                    switch wait {
                    case .duration(let d): lowered = .afterDuration(slot: slot, Double(d.seconds))
                    case .next(let scope, _): lowered = .afterNone(slot: slot, CountScope(scope))
                    case .never: lowered = .afterNone(slot: slot, .install)
                    }
                case .during, .days, .from, .until:
                    guard let window = LocalWindow(clause.kind) else { continue }
                    lowered = .local(window)
                case .contexts(let names, let outside):
                    let start = Int32(contextLists.count)
                    for name in names {
                        let index =
                            contextIndex[name.text]
                            ?? {
                                contextNames.append(name.text)
                                contextIndex[name.text] = contextNames.count - 1
                                return contextNames.count - 1
                            }()
                        contextLists.append(Int32(index))
                    }
                    lowered = .contexts(start: start, end: Int32(contextLists.count), outside: outside)
                case .on, .priority, .holdout, .countsAfter, .deferral: continue
                }
                compiled.append(lowered)
            }
            return compiled
        }

        /// Adds the filter `filter` of `event` that records on `stream` (adding property `adds` for a
        /// sum), once per stream. Events reading the same filter over properties of the same types
        /// share its lowered form (with the index by event below: 1,130 B an event down to 806 B at
        /// 100,000 events with one filter each, `rulebench`).
        private mutating func addFilter(event: String, _ filter: Expr?, adds: String?, stream: String) {
            let eventSlot = streams.slot(event)
            let streamSlot = streams.slot(stream)
            guard filterOfStream[streamSlot] == nil else { return }
            filterOfStream[streamSlot] = filters.count
            let declared = program.properties[event] ?? []
            var names = filter.map(CompiledFilter.names) ?? []
            if let adds, !names.contains(adds) { names.append(adds) }
            let reads = names.compactMap { name in
                declared.first { $0.name.text == name }?.type.map { (name: name, type: $0) }
            }
            let text = adds.map { EngineStream.sumTail($0, filter) } ?? filter.map(Printer.expression) ?? ""
            let key = text + "\u{0}" + reads.map(\.type.rawValue).joined(separator: ",") + (adds == nil ? "" : "+")
            if let shared = loweredFilters[key] {
                filters.append(StreamFilter(event: eventSlot, stream: streamSlot, lowered: shared))
                return
            }
            let test =
                filter.map { CompiledFilter($0) { name in reads.firstIndex { $0.name == name } } } ?? .constant(true)
            let lowered = LoweredFilter(text: text, adds: adds, test: test, reads: reads)
            loweredFilters[key] = lowered
            filters.append(StreamFilter(event: eventSlot, stream: streamSlot, lowered: lowered))
        }

        /// Orders the filters by event (``filterPositions(ofEvent:)``) and drops the tables of compiling.
        private mutating func indexFilters() {
            filterOfStream = [:]
            loweredFilters = [:]
            guard !filters.isEmpty else { return }
            // Up to the last event with a filter (not every stream, the filtered ones among them).
            let events = (filters.lazy.map(\.event).max() ?? 0) + 1
            var counts = [Int32](repeating: 0, count: events + 1)
            for filter in filters { counts[filter.event + 1] += 1 }
            for slot in 0..<events { counts[slot + 1] += counts[slot] }
            filterStart = counts
            filterOrder = [Int32](repeating: 0, count: filters.count)
            for (position, filter) in filters.enumerated() {
                filterOrder[Int(counts[filter.event])] = Int32(position)
                counts[filter.event] += 1
            }
        }
    }
}
