import Foundation
import RuleLang

/// Everything an engine call reads or changes, and every operation on it. Only
/// ``RuleEngine`` holds one, and only inside its lock: whatever is in here runs locked.
///
/// State lives in arrays indexed as the compiled rules are: views by scenario, budgets
/// by group, values by param, tallies by stream slot. A name is looked up once, at the
/// API boundary.
struct EngineCore {
    let rules: CompiledRules
    let clock: RuleClock
    let store: RuleStore
    /// `store`, when it takes a call's changes as one record.
    let records: RecordStore?
    /// True when the store is a file other processes write too (``FileStore/Options/shared``):
    /// views are then always written beside their stream, never left to a stored reference.
    let shared: Bool
    /// The store when ``shared``: found once (a cast of the store on every call cost about a
    /// tenth of a shared trigger).
    let sharedFile: FileStore?
    /// Set when an append found the shared file changed since this engine read it: nothing was
    /// written, and the call runs again on the state read anew (``RuleEngine/locked(_:)``).
    var conflicted = false
    /// The current call's changes, encoded as they are made; ``commit()`` stores them.
    let record = ChangeRecord()
    /// The rules' tables a trigger reads (``CompiledRules/listenerStart`` and the rest), held
    /// here so that reading them does not go through the rules object.
    let listenerStart: [Int32]
    let listenerList: [Int32]
    let streamKeep: [Int]
    let triggerInfo: [TriggerInfo]
    /// ``CompiledRules/clauseTables()``, read by every answer: held here, reading a scenario's
    /// clauses retains nothing (through the rules object it took two atomic retains and two
    /// releases a call, a third of a refused `tryToExecute` on a CPU where atomics are slow).
    let clauses: ClauseTables
    /// ``CompiledRules/scenarioIndex``, held here for the same reason (read through the rules
    /// object, its arrays were retained and released on every call by name).
    let scenarioIndex: NameTable
    /// ``CompiledRules/dayCounted``, read by every trigger.
    let dayCounted: [Bool]

    /// Stream slots: the rules' streams first, then any the app names.
    var streams: StreamTable
    /// By slot; a blank tally for a stream nothing was recorded on.
    var tallies: StreamTallies
    /// By scenario: its view of events and its executions, valid where `built` is true
    /// (a view is merged from the streams when first needed). Not optional, so that a
    /// call reads a view in place rather than copying it out of an `Optional`.
    var views: [ScenarioState]
    var built: [Bool]
    /// By scenario: true when the store holds its view with its events as the name of the one
    /// stream it counts, and its executions and streams as they are now. A trigger that leaves
    /// the view equal to that stream's tally then writes the stream only. False whenever the
    /// view is written otherwise, or a write may not have reached the store.
    var storedAsStream: [Bool]
    /// By group: its shared executions (empty until the first).
    var budgets: [Tally]
    /// By param: the value set with `set`, and the provider registered with `provide`.
    var stored: [ParamValue?]
    var providers: [(@Sendable () -> ParamValue)?]
    var todos: [String: ToDoItem]
    var meta: SessionMeta
    /// Stored scenarios and groups the rules no longer declare: kept, and forgotten by `clearAll`.
    var orphans: Set<String> = []
    /// Events' former names to their names now (``CompiledRules/formerStreams``), checked first
    /// when one is looked up by name.
    let formerStreams: [String: String]
    /// The renames the state records (`w:KIND:NEW`, to the former name), kept for a restore.
    var renamed: [String: String] = [:]
    /// Shared file, another process on rules with other names for a stream: by slot, the
    /// other name whose key (`e:`, `d:`) holds this stream's history in the file. The next
    /// write moves it under this engine's name (``moveAliasedHistory()``).
    var staleAliases: [Int: String] = [:]

    var failure: RuleStoreError?
    var failureHandler: (@Sendable (RuleStoreError) -> Void)?
    /// The last finite clock reading: a NaN or infinite one is replaced by it.
    var lastTime: Double = 0
    /// The earliest expiry among pending `until` to-dos (infinity when none).
    var nextExpiry = Double.infinity
    /// How many views were merged from streams (tests check it stays one per scenario).
    var merges = 0
    /// Names the app used that the rules do not know, in first-use order (``RuleEngine/unknownNames``).
    var unknownEventSlots: [Int] = []
    var unknownScenarios: [String] = []
    /// ``RuleEngine/updates(for:)-(Scenario)`` streams, by id, and the wake-up already asked of the clock.
    var observers: [Int: Observer] = [:]
    var nextObserverID = 0
    /// Tells of other processes' writes to a shared file while there are observers.
    var watcher: ChangeWatcher?
    /// ``RuleEngine/Options/overrides`` by scenario index (nil: not overridden).
    var forced: [Bool?] = []
    /// Where decisions go: the app's handler and, on Apple platforms, `os.Logger`.
    var decisionHandler: (@Sendable (Decision) -> Void)?
    var logger: DecisionLogger?
    /// True when a decision has somewhere to go (checked on every answer).
    var logsDecisions: Bool { decisionHandler != nil || logger?.isActive == true }
    /// Importers that ran on this store, with their reports (JSON).
    var imports: [String: String] = [:]
    var scheduledWakeUp: Double?
    /// Clause texts for explanations, by scenario and by group, printed when first asked for.
    var scenarioTexts: [[String]?] = []
    var groupTexts: [[String]?] = []
    /// Distinguishes these rules of this engine in handles' caches (new at each swap).
    var serial = EngineSerial.next()
    /// The app's code the engine is running under its lock, if any: named when that code calls
    /// the engine (which would deadlock) before the process stops.
    var callback = CallbackSite.none
    /// By slot, the local days of streams a day clause counts (``CompiledRules/dayCounted``).
    var days: [Int: DayBits] = [:]
    /// The device's time zone, which decides where a local day begins (``RuleEngine/timeZone``);
    /// nil until first needed, then the current one (reading it loads the zone data: an engine
    /// that counts no days never pays for it; 2.2 MB resident here).
    var timeZone: TimeZone?
    /// The app, which begins sessions, or an extension, which joins the app's.
    var role: ProcessRole?
    /// Scenarios whose view (and group budget) a read re-based in memory, stored with the next write.
    var rebasedUnsaved: [Int] = []
    /// ``RuleEngine/Options/overrides`` as given, applied again to rules swapped in.
    var overrides: [String: Bool] = [:]
    /// ``RuleEngine/warnings``.
    var warnings: [Diagnostic] = []
    /// Which rules these are (``RuleEngine/activeRules``).
    var active: ActiveRules?
    /// The active rules the state records (entry `a:`), as ``ActiveRules/description`` words them.
    var storedActive: String?
    /// The program's declarations, collected once for `check(String)`.
    lazy var expressions = ExpressionChecker(program: rules.program)

    /// Builds the state from stored entries; returns it with warnings about stored
    /// values the rules no longer fit.
    init(rules: CompiledRules, clock: RuleClock, store: RuleStore, stored state: EngineState) {
        self.rules = rules
        self.clock = clock
        self.store = store
        records = store as? RecordStore
        shared = (store as? FileStore)?.options.shared == true
        sharedFile = shared ? store as? FileStore : nil
        formerStreams = rules.formerStreams
        listenerStart = rules.listenerStart
        listenerList = rules.listenerList
        streamKeep = rules.streamKeep
        triggerInfo = rules.triggerInfo
        clauses = rules.clauseTables()
        scenarioIndex = rules.scenarioIndex
        dayCounted = rules.dayCounted
        streams = state.streams
        tallies = state.tallies
        views = []
        built = []
        storedAsStream = []
        budgets = []
        scenarioTexts = Array(repeating: nil, count: rules.scenarios.count)
        groupTexts = Array(repeating: nil, count: rules.groups.count)
        self.stored = []
        providers = Array(repeating: nil, count: rules.params.count)
        todos = [:]
        meta = SessionMeta()
        load(state)
    }

    /// Takes `state` as the whole stored state (at init, and when another process replaced the
    /// shared file): decoded into this engine's stream table, so every slot keeps its stream.
    mutating func load(_ state: EngineState) {
        streams = state.streams
        tallies = state.tallies
        while tallies.count < streams.count { tallies.append() }
        views = Array(repeating: ScenarioState(), count: rules.scenarios.count)
        built = Array(repeating: false, count: rules.scenarios.count)
        storedAsStream = Array(repeating: false, count: rules.scenarios.count)
        budgets = Array(repeating: Tally(), count: rules.groups.count)
        stored = Array(repeating: nil, count: rules.params.count)
        todos = state.todos
        meta = state.meta
        imports = state.imports
        renamed = state.renamed
        orphans = []
        nextExpiry = todos.values.compactMap(\.expires).min() ?? .infinity
        storedActive = state.activeRules
        days = [:]
        for (name, bits) in state.days {
            if let slot = streams.index[name] { days[slot] = bits }
        }
        for (name, view) in state.scenarios {
            if let index = rules.scenarioIndex[name] {
                views[index] = view
                built[index] = true
            } else {
                orphans.insert(StoreKey.scenario(name))
            }
        }
        for (name, tally) in state.groups {
            if let index = rules.groupIndex[name] {
                budgets[index] = tally
            } else {
                orphans.insert(StoreKey.group(name))
            }
        }
        for (name, value) in state.params {
            if let index = rules.paramIndex[name] { self.stored[index] = value }
        }
    }

    // MARK: - Time and saving

    /// The clock's time in seconds since 1970; a NaN or infinite reading counts as the last good one.
    mutating func now() -> Double {
        callback = .clock
        let time = clock.now().timeIntervalSince1970
        callback = .none
        if time.isFinite {
            lastTime = time
            if time >= nextExpiry { expireToDos(at: time) }
            return time
        }
        return lastTime
    }

    /// Asks the store to check that its file is in place and whole, writing it from memory if not.
    mutating func verifyStore() {
        do { try store.verify() } catch { handle(error) }
    }

    /// A store's failure: a file to write again from memory is written; anything else reported.
    mutating func handle(_ error: Error) {
        switch error {
        case let needed as StoreNeedsRestore: restore(needed)
        case let waiting as StoreWaiting: report(waiting.error)
        default: report(error)
        }
    }

    /// Persists one call's changes (with any already in ``record``).
    mutating func save(_ changes: [StoreChange]) {
        // Changes made elsewhere may include views: none is known to be stored as a stream.
        forgetViewsStoredAsStreams()
        for change in changes { record.add(change) }
        commit()
    }

    mutating func forgetViewsStoredAsStreams() {
        for index in storedAsStream.indices where storedAsStream[index] { storedAsStream[index] = false }
    }

    /// Hands the store this call's record and empties it: one `apply` per call. A failure is
    /// kept and reported; the change stays in memory.
    mutating func commit() {
        if record.isEmpty { return }
        if conflicted {
            // The call runs again on the state read anew: this record is void.
            record.reset()
            return
        }
        if !rebasedUnsaved.isEmpty { addRebased() }
        if !staleAliases.isEmpty { moveAliasedHistory() }
        record.finish()
        do {
            // Called through the optional rather than bound: a bound copy is retained and
            // released on every call, the slow way for a store a background compaction holds
            // weakly (FileStore).
            if records != nil {
                try records?.append(record: record.bytes)
            } else {
                try store.apply(record.changes())
            }
        } catch is StoreConflict {
            conflicted = true
        } catch let needed as StoreNeedsRestore {
            // The state in memory, this call's change included, is written whole.
            restore(needed)
        } catch let waiting as StoreWaiting {
            report(waiting.error)
            forgetViewsStoredAsStreams()
        } catch {
            report(error)
            forgetViewsStoredAsStreams()
        }
        record.reset()
    }

    mutating func report(_ error: Error) {
        let error = error as? RuleStoreError ?? .other(error)
        failure = error
        callback = .storeErrorHandler
        failureHandler?(error)
        callback = .none
    }

    // MARK: - Fitting stored state to the rules

    /// Rebuilds views built from other streams than the scenario counts now (executions kept),
    /// and ignores stored param values of another type than declared, with a warning each.
    mutating func reconcile() -> [Diagnostic] {
        let changes = remergeViewsOfOtherStreams().map {
            EngineState.change(key: rules.scenarios[$0].key, views[$0])
        }
        if !changes.isEmpty { save(changes) }
        var warnings: [Diagnostic] = []
        for file in rules.program.files {
            for case .param(let param) in file.declarations {
                guard let index = rules.paramIndex[param.name.text], let value = stored[index],
                    value.type != rules.params[index].type
                else { continue }
                stored[index] = nil
                warnings.append(
                    Diagnostic(
                        .storedValueIgnored(param.name.text, stored: value.type, declared: rules.params[index].type),
                        .warning, at: SourceSpan(file.source, param.name.range)))
            }
        }
        return warnings
    }

    /// Merges again, in memory, the views built from other streams than their scenarios count
    /// now (executions kept); returns their indices.
    mutating func remergeViewsOfOtherStreams() -> [Int] {
        var remerged: [Int] = []
        for (index, scenario) in rules.scenarios.enumerated() {
            guard built[index], let from = views[index].streams, from != scenario.fingerprint else { continue }
            views[index].events = mergedEvents(index)
            views[index].streams = scenario.fingerprint
            remerged.append(index)
        }
        return remerged
    }

    // MARK: - Streams

    /// The slot of stream `name`, made if new.
    mutating func slot(_ name: String) -> Int {
        // An event's former name (`was`): its events go to the stream it is called now (the
        // engine's table may still hold the old name, from before a swap).
        if !formerStreams.isEmpty, let now = formerStreams[name], let slot = streams.index[now] { return slot }
        if let slot = streams.index[name] { return slot }
        let slot = streams.slot(name)
        tallies.append()
        return slot
    }

    /// The slot of `event`'s stream (made if new), remembered by the handle.
    @inline(__always)
    mutating func slot(_ event: Event, serial: UInt32) -> Int {
        if let slot = event.cache.index(for: serial) { return slot }
        let slot = slot(event.name)
        event.cache.remember(slot, for: serial)
        return slot
    }

    /// The slot of stream `name` (or of the stream an event's former name is called now), if any.
    func streamSlot(named name: String) -> Int? {
        if !formerStreams.isEmpty, let now = formerStreams[name] { return streams.index[now] }
        return streams.index[name]
    }

    /// Gives slots to the streams of `table` this engine does not have yet.
    mutating func adopt(_ table: StreamTable) {
        for name in table.names.dropFirst(streams.count) { _ = slot(name) }
    }

    /// `e:NAME`, the store's key for the stream in `slot` (made when needed, not kept per stream).
    func streamKey(_ slot: Int) -> String { StoreKey.stream(streams.name(slot)) }

    /// Recent times kept for the stream in `slot`.
    func keep(_ slot: Int) -> Int { slot < streamKeep.count ? streamKeep[slot] : rules.recentLimit }

    func count(_ slot: Int?, _ scope: CountScope, now time: Double) -> Int64 {
        guard let slot else { return 0 }
        return tallies.count(slot, scope, now: time, in: meta.epoch)
    }

    // MARK: - Sessions

    mutating func startSession(version: String) {
        verifyStore()
        // An extension joins the app's session and version (read from the shared file).
        // The role not given is read from the main bundle once, at the first session.
        if role == nil { role = ProcessRole.current }
        if role == .appExtension { return }
        if shared { _ = lockFileForWriting() }
        rebaseEpochsIfNeeded()
        let time = now()
        meta.sessionID.saturatingIncrement()
        meta.sessionStart = time
        // The first session records the install's version; state from before this was
        // recorded takes the version it last saw (an upgrade after it is then seen as one).
        if meta.firstVersion == nil { meta.firstVersion = meta.version ?? version }
        if meta.version != version {
            meta.versionID.saturatingIncrement()
            meta.version = version
            meta.versionStart = time
        }
        save([EngineState.change(meta: meta)])
    }

    /// Session or version ids that cannot grow any more (saturated at `Int64.max`, or negative:
    /// damaged, or written by hand) are re-based before a session begins: the current session
    /// and version become 1 and every other 0, in every tally; the whole state is written again.
    mutating func rebaseEpochsIfNeeded() {
        let ceiling = Int64.max - 1
        guard meta.sessionID < 0 || meta.sessionID >= ceiling || meta.versionID < 0 || meta.versionID >= ceiling
        else { return }
        let old = meta.epoch
        func rebase(_ counts: inout TallyCounts) {
            if counts.sessionID == old.sessionID {
                counts.sessionID = 1
            } else {
                counts.sessionID = 0
                counts.sessionCount = 0
            }
            if counts.versionID == old.versionID {
                counts.versionID = 1
            } else {
                counts.versionID = 0
                counts.versionCount = 0
            }
        }
        for slot in 0..<tallies.count { tallies.updateCounts(slot, rebase) }
        for index in views.indices {
            rebase(&views[index].events.counts)
            rebase(&views[index].executions.counts)
        }
        for index in budgets.indices { rebase(&budgets[index].counts) }
        meta.sessionID = 1
        meta.versionID = 1
        save(image())
    }

    // MARK: - Events

    /// Records one event on the stream in `slot`, in every scenario counting it, and the
    /// changes in ``record``.
    mutating func recordEvent(_ slot: Int, at time: Double) {
        // Shared: the file's lock first, and what other processes wrote (slots are kept).
        if shared { _ = lockFileForWriting() }
        // The scenarios counting the stream, read from tables of plain values.
        let listeners =
            slot + 1 < listenerStart.count ? Int(listenerStart[slot])..<Int(listenerStart[slot + 1]) : 0..<0
        // A scenario seen for the first time starts from the streams' history (before this event).
        for k in listeners { buildView(Int(listenerList[k])) }
        if slot + 1 >= listenerStart.count, unknownEventSlots.count < UnknownName.limit,
            !unknownEventSlots.contains(slot)
        {
            unknownEventSlots.append(slot)
        }
        tallies.record(slot, at: time, in: meta.epoch, keep: keep(slot))
        if slot < dayCounted.count && dayCounted[slot] { recordDay(slot, at: time) }
        let name = streams.name(slot)
        record.reserve(stream: name, recentCount: tallies.recentCount(slot))
        tallies.withTally(slot) { record.set(stream: name, $0, recent: $1) }
        for k in listeners {
            let index = Int(listenerList[k])
            let info = triggerInfo[index]
            views[index].events.record(at: time, in: meta.epoch, keep: info.eventKeep)
            // Read in place through a pointer: a copy of the view would retain its arrays.
            views.withUnsafeBufferPointer { views in
                let view = views.baseAddress! + index
                // A view whose events are exactly the stream's (a scenario counting this one stream,
                // not reset since) is stored by reference: the record carries the tally once.
                let same =
                    info.countsOneStream
                    && view.pointee.events.recent.withUnsafeBufferPointer {
                        tallies.equals(slot, view.pointee.events.counts, $0)
                    }
                // Already stored as this stream, which the record carries: nothing else changed.
                if same && storedAsStream[index] { return }
                record.set(info.key, view: view, eventsFrom: same ? streams.name(slot) : nil)
                // Shared: written again on every event, so that a process of a library that
                // does not move such views along (``viewsFollowing(_:)``) never reads one stale.
                storedAsStream[index] = same && !shared
            }
        }
    }

    mutating func trigger(_ name: String) {
        let slot = slot(name)
        let time = now()
        recordEvent(slot, at: time)
        commit()
    }

    // MARK: - Views

    /// Scenario `index`'s view, merged from its streams the first time and kept in memory
    /// (a merged view equals what merging again would give, so it need not be stored).
    mutating func view(_ index: Int) -> ScenarioState {
        buildView(index)
        return views[index]
    }

    /// Merges scenario `index`'s view from its streams if it has none yet.
    @inline(__always)
    mutating func buildView(_ index: Int) {
        if built[index] { return }
        views[index] = newView(index)
        built[index] = true
    }

    mutating func newView(_ index: Int) -> ScenarioState {
        ScenarioState(events: mergedEvents(index), streams: rules.scenarios[index].fingerprint)
    }

    mutating func mergedEvents(_ index: Int) -> Tally {
        let scenario = rules.scenarios[index]
        let merged = scenario.streams.map { tallies[$0] }.filter { !$0.isBlank }
        if merged.isEmpty { return Tally() }
        merges += 1
        return Tally.merged(merged, keep: scenario.eventKeep, in: meta.epoch)
    }

    /// Re-bases times recorded later than `time` (a clock that was ahead and has been
    /// corrected) in what scenario `index` reads: the scenario then waits its own cool-down
    /// from the correction, not until the wrong date. In memory only: a read writes nothing,
    /// and the next call that writes stores the re-based view and budget with its own changes.
    mutating func rebase(_ index: Int, to time: Double) {
        buildView(index)
        let events = views[index].events.rebase(to: time)
        var changed = views[index].executions.rebase(to: time) || events
        if let group = rules.scenarios[index].group, budgets[group].rebase(to: time) { changed = true }
        if changed {
            storedAsStream[index] = false
            if !rebasedUnsaved.contains(index) { rebasedUnsaved.append(index) }
        }
    }

    /// Adds to ``record`` the views and budgets re-based since the last write.
    mutating func addRebased() {
        for index in rebasedUnsaved {
            record.add(EngineState.change(key: rules.scenarios[index].key, views[index]))
            if let group = rules.scenarios[index].group {
                record.add(EngineState.change(key: rules.groups[group].key, budgets[group]))
            }
        }
        rebasedUnsaved.removeAll()
    }

    // MARK: - Executions

    mutating func tryToExecute(_ index: Int) -> Bool {
        let time = now()
        guard passes(index, now: time) else { return false }
        if shared && lockFileForWriting() && !passes(index, now: time) { return false }
        recordExecution(index, at: time)
        commit()
        return true
    }

    /// An execution recorded by the app after it showed the scenario (the two-phase form).
    mutating func recordExecution(_ index: Int) {
        if shared { _ = lockFileForWriting() }
        let time = now()
        rebase(index, to: time)
        recordExecution(index, at: time)
        commit()
    }

    mutating func executeNext(among candidates: [Int]) -> Int? {
        let time = now()
        let ordered = candidates.sorted {
            let (a, b) = (rules.scenarios[$0].priority, rules.scenarios[$1].priority)
            return a != b ? a > b : $0 < $1
        }
        if shared && ordered.contains(where: { passes($0, now: time) }) { _ = lockFileForWriting() }
        for index in ordered where passes(index, now: time) {
            recordExecution(index, at: time)
            commit()
            return index
        }
        return nil
    }

    /// Records an execution of scenario `index` (and its group), and the changes in ``record``.
    mutating func recordExecution(_ index: Int, at time: Double) {
        let scenario = rules.scenarios[index]
        buildView(index)
        views[index].executions.record(at: time, in: meta.epoch, keep: scenario.executionKeep)
        views.withUnsafeBufferPointer { record.set(scenario.keyBytes, view: $0.baseAddress! + index, eventsFrom: nil) }
        storedAsStream[index] = false
        if let group = scenario.group {
            budgets[group].record(at: time, in: meta.epoch, keep: rules.groups[group].executionKeep)
            record.set(rules.groups[group].key, budgets[group])
        }
    }

    mutating func reset(_ name: String) -> Bool {
        if shared { _ = lockFileForWriting() }
        if let index = rules.scenarioIndex[name] ?? rules.formerScenarios[name] {
            let empty = ScenarioState(streams: rules.scenarios[index].fingerprint)
            views[index] = empty
            built[index] = true
            save([EngineState.change(key: rules.scenarios[index].key, empty)])
            return true
        }
        if let index = rules.groupIndex[name] ?? rules.formerGroups[name] {
            budgets[index] = Tally()
            save([EngineState.change(key: rules.groups[index].key, nil as Tally?)])
            return true
        }
        return false
    }

    // MARK: - Params

    func param(_ name: String, _ type: ValueType) throws -> Int {
        guard let index = rules.paramIndex[name] ?? rules.formerParams[name] else {
            throw RuleEngineError.unknownParam(name)
        }
        let declared = rules.params[index].type
        guard declared == type else { throw RuleEngineError.typeMismatch(param: name, declared: declared, given: type) }
        return index
    }

    mutating func set(_ name: String, to value: ParamValue) throws {
        let index = try param(name, value.type)
        if shared { _ = lockFileForWriting() }
        stored[index] = value
        save([EngineState.change(key: rules.params[index].key, value)])
    }

    mutating func provide(_ name: String, _ type: ValueType, _ provider: @escaping @Sendable () -> ParamValue) throws {
        providers[try param(name, type)] = provider
    }

    /// Param `index`'s value now: provider, else stored value, else default (its type's zero if none).
    mutating func value(_ index: Int) -> ParamValue {
        if let provider = providers[index] {
            callback = .provider(index)
            defer { callback = .none }
            return provider()
        }
        return stored[index] ?? rules.params[index].defaultValue
    }
}

/// App code an engine runs under its lock.
enum CallbackSite {
    case none, clock, storeErrorHandler
    case provider(Int)

    /// `the provide closure of param 'level'`.
    func describe(_ rules: CompiledRules) -> String {
        switch self {
        case .none: return "code running under the engine's lock"
        case .clock: return "the clock's now()"
        case .storeErrorHandler: return "the store error handler"
        case .provider(let index): return "the provide closure of param '\(rules.params[index].name)'"
        }
    }
}
