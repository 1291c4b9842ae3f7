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
    /// What the app attached: clock, store, handlers, providers, observers, options.
    var hooks: EngineHooks
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
    let streamKeep: [Int32]
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
    /// By param: ``EngineHooks/providers`` that fit these rules, looked up once.
    var providers: [(@Sendable () -> ParamValue)?]
    /// The slots of ``EngineHooks/unknownEvents``, checked on every trigger of a stream the
    /// rules do not count.
    var unknownEventSlots: [Int] = []
    /// By scenario and outcome (`index * Outcome.allCases.count + outcome`): the slot of its
    /// outcome stream once looked up, else -1 (empty until the first outcome).
    var outcomeSlots: [Int32] = []
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

    /// The earliest expiry among pending `until` to-dos (infinity when none).
    var nextExpiry = Double.infinity
    /// How many views were merged from streams (tests check it stays one per scenario).
    var merges = 0
    /// ``RuleEngine/Options/overrides`` by scenario index (nil: not overridden).
    var forced: [Bool?] = []
    /// True when a decision has somewhere to go (checked on every answer).
    var logsDecisions: Bool { hooks.decisionHandler != nil || hooks.logger?.isActive == true }
    /// Importers that ran on this store, with their reports (JSON).
    var imports: [String: String] = [:]
    /// Clause texts for explanations, by scenario and by group, printed when first asked for.
    var scenarioTexts: [[String]?] = []
    var groupTexts: [[String]?] = []
    /// Distinguishes these rules of this engine in handles' caches (new at each swap).
    var serial = EngineSerial.next()
    /// While a swap decodes the stored state outside the lock: what this core wrote or took in
    /// since (``RuleEngine/replaceRules(checked:origin:version:)``).
    var journal: SwapJournal?
    /// Tests: other processes' records are always decoded as a whole state
    /// (``apply(written:_:droppingOtherTypes:)``), never entry by entry
    /// (``applyDirectly(written:_:)``); and how many were taken in entry by entry.
    var catchesUpWhole = false
    var directCatchUps = 0
    /// By change of the last record taken in entry by entry (two per change: its key's name,
    /// and the stream a view refers to): the position its name had in its table, or -1. The
    /// next record, nearly always of the same keys, is checked against these first.
    var directPositions: [Int] = []
    /// By generated occurrence type (``EventOccurrence``) seen with these rules, where in
    /// ``occurrenceFilters`` its event's filters are, as it tests them
    /// (``occurrenceTests(_:slot:)``).
    var occurrenceMatches: [Range<Int>] = []
    var occurrenceFilters: [OccurrenceFilter] = []
    var occurrenceMatchIndex: [PropertyLayout.Key: Int] = [:]
    /// The app's code the engine is running under its lock, if any: named when that code calls
    /// the engine (which would deadlock) before the process stops.
    var callback = CallbackSite.none
    /// By slot, the local days of streams a day clause counts (``CompiledRules/dayCounted``).
    var days: [Int: DayBits] = [:]
    /// Scenarios whose view (and group budget) a read re-based in memory, stored with the next write.
    var rebasedUnsaved: [Int] = []
    /// No time the state holds is later than this clock reading (as far as this process can
    /// tell): infinity until an evaluation first looks (``rebaseAheadIfNeeded(to:)``), and again
    /// at each session's start (other processes on the file may have recorded times this one
    /// never read the clock at).
    var latestRecorded = Double.infinity
    /// Streams and to-dos a read re-based in memory (the clock went back), stored with the next write.
    /// (Sets: a correction may re-base every stream, and a list's membership test made that quadratic.)
    var rebasedStreams: Set<Int> = []
    var rebasedToDos: Set<String> = []
    /// ``RuleEngine/warnings``.
    var warnings: [Diagnostic] = []
    /// Which rules these are (``RuleEngine/activeRules``).
    var active: ActiveRules?
    /// The active rules the state records (entry `a:`), as ``ActiveRules/description`` words them.
    var storedActive: String?
    /// The install's id as stored (`u:`), made the first time a rule reads `bucket`.
    var storedInstallID: String?
    /// The zone the state records (`z:`), written by the app when it differs from its own.
    var storedZone: String?
    /// By context index (``CompiledRules/contextNames``): true while the app is in it.
    var inContext: [Bool] = []
    /// The buckets hashed so far (``bucket(_:)``), for the install's id they were hashed with.
    var bucketMemo: (id: String?, buckets: [(salt: String, bucket: Int)]) = (nil, [])
    /// The program's declarations, collected once for `check(String)`.
    lazy var expressions = ExpressionChecker(program: rules.program)

    /// A core running `rules` over the stored `state`, with `hooks`: the only way one is made
    /// (an engine's start and a swap both come through ``prepare(rules:state:hooks:)``).
    /// The providers, observers, overrides and unknown names of `hooks` are fitted to `rules`.
    init(rules: CompiledRules, hooks: EngineHooks, stored state: EngineState) {
        self.rules = rules
        self.hooks = hooks
        records = hooks.store as? RecordStore
        shared = (hooks.store as? FileStore)?.options.shared == true
        sharedFile = shared ? hooks.store as? FileStore : nil
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
        fitHooks()
    }

    /// The contexts the hooks hold, by the rules' indices.
    mutating func placeContexts() {
        inContext = rules.contextNames.map { hooks.contexts.contains($0) }
    }

    /// Fits the hooks to the rules: providers whose param is declared with the type it had,
    /// observers to their scenario (nil: gone, answering false), overrides, and the unknown
    /// events these rules still do not count.
    mutating func fitHooks() {
        for (name, provider) in hooks.providers {
            guard let index = rules.paramIndex[name], rules.params[index].type == provider.type else { continue }
            providers[index] = provider.provide
        }
        for id in hooks.observers.keys {
            let name = hooks.observers[id]!.name
            hooks.observers[id]!.index = rules.scenarioIndex[name] ?? rules.formerScenarios[name]
        }
        applyOverrides(hooks.overrides)
        placeContexts()
        let events = hooks.unknownEvents
        hooks.unknownEvents = []
        unknownEventSlots = []
        for name in events {
            let slot = slot(name)
            if slot + 1 >= listenerStart.count { noteUnknownEvent(slot) }
        }
    }

    /// A core made over the stored `state` for `rules`, and what its start must still write
    /// (``PreparedCore/finish(hooks:journal:active:diagnostics:)``): an engine's start and a
    /// swap both come this way. The state is handed over, not copied: the core's tables are
    /// then its own, and later changes write them in place (a copy of 100,000 streams'
    /// tallies otherwise).
    static func prepare(rules: CompiledRules, state: consuming EngineState, hooks: EngineHooks) -> PreparedCore {
        let moves = state.moveRenamed(rules)
        let respelled = state.respelled
        return PreparedCore(
            core: EngineCore(rules: rules, hooks: hooks, stored: consume state), moves: moves, respelled: respelled)
    }

    /// Takes in a swap's journal entries, in order, as one record.
    mutating func apply(journal: [SwapJournal.Entry]) throws {
        let (bytes, changes) = SwapJournal.joined(journal)
        try apply(written: bytes, changes, droppingOtherTypes: false)
    }

    /// Takes `state` as the whole stored state (at init, and when another process replaced the
    /// shared file): decoded into this engine's stream table, so every slot keeps its stream.
    mutating func load(_ state: EngineState) {
        latestRecorded = .infinity
        rebasedStreams = []
        rebasedToDos = []
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
        storedInstallID = state.installID
        storedZone = state.zone
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

    /// The clock's time in seconds since 1970, deleting the to-dos expired by then; a NaN or
    /// infinite reading counts as the last good one.
    mutating func now() -> Double {
        guard let time = readClock() else { return hooks.lastTime }
        if time >= nextExpiry { expireToDos(at: time) }
        return time
    }

    /// The clock's reading, kept as the last good one and the latest seen; nil when it is NaN or
    /// infinite. Deletes nothing (the clock's own wake-up reads it so: `settleCountsIfDue`).
    @inline(__always)
    mutating func readClock() -> Double? {
        callback = .clock
        let time = hooks.clock.now().timeIntervalSince1970
        callback = .none
        guard time.isFinite else { return nil }
        hooks.lastTime = time
        if time > latestRecorded { latestRecorded = time }
        return time
    }

    /// Asks the store to check that its file is in place and whole, writing it from memory if not.
    mutating func verifyStore() {
        do { try hooks.store.verify() } catch { handle(error) }
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
        if !rebasedUnsaved.isEmpty || !rebasedStreams.isEmpty || !rebasedToDos.isEmpty { addRebased() }
        if !staleAliases.isEmpty { moveAliasedHistory() }
        record.finish()
        // A swap under way keeps the record (a file store frames it in place), and counts it.
        let kept = journal == nil ? nil : [UInt8](record.bytes)
        if kept != nil { journal?.handed += 1 }
        do {
            // Called through the optional rather than bound: a bound copy is retained and
            // released on every call, the slow way for a store a background compaction holds
            // weakly (FileStore).
            if records != nil {
                try records?.append(record: record.bytes)
            } else {
                try hooks.store.apply(record.changes())
            }
            if let kept { journal?.add(record: kept) }
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
        hooks.failure = error
        callback = .storeErrorHandler
        hooks.failureHandler?(error)
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
        if let slot = event.cache?.index(for: serial) { return slot }
        let slot = slot(event.name)
        event.cache?.remember(slot, for: serial)
        return slot
    }

    /// The slot of stream `name` (or of the stream an event's former name is called now), if any.
    func streamSlot(named name: String) -> Int? {
        if !formerStreams.isEmpty, let now = formerStreams[name] { return streams.index[now] }
        if let slot = streams.index[name] { return slot }
        // `crash` and `problem`: the engine's streams, as the rules and `rulec state` name them
        // (an app's own stream of that name, from rules before language 1.2, comes first).
        return EngineStream.builtin(name).flatMap { streams.index[$0] }
    }

    /// Gives slots to the streams of `table` this engine does not have yet.
    mutating func adopt(_ table: StreamTable) {
        for name in table.names.dropFirst(streams.count) { _ = slot(name) }
    }

    /// `e:NAME`, the store's key for the stream in `slot` (made when needed, not kept per stream).
    func streamKey(_ slot: Int) -> String { StoreKey.stream(streams.name(slot)) }

    /// Recent times kept for the stream in `slot`.
    func keep(_ slot: Int) -> Int { slot < streamKeep.count ? Int(streamKeep[slot]) : rules.recentLimit }

    func count(_ slot: Int?, _ scope: CountScope, now time: Double) -> Int64 {
        guard let slot else { return 0 }
        return tallies.count(slot, scope, now: time, in: meta.epoch)
    }
}

/// A core made over a stored state, before its start writes anything
/// (``EngineCore/prepare(rules:state:hooks:)``).
struct PreparedCore {
    var core: EngineCore
    /// Histories to move under the rules' names (`was`), and names stored in several spellings.
    let moves: [StoreChange]
    let respelled: [String]

    /// Whether a swap's journal `entries` can be applied: changes written while histories are
    /// moved under other names would meet them under the names they had (the swap then reads
    /// the store again under the lock).
    func canApply(_ entries: [SwapJournal.Entry]) -> Bool {
        entries.isEmpty || (moves.isEmpty && respelled.isEmpty)
    }

    /// Starts the core: takes `hooks` (a swap's, as they are at its last step) and `journal` (what
    /// was written since the state was read), then writes in one record the histories moved
    /// under former names, the rules recorded as active (`active`, at the clock's time) and the
    /// names stored in several spellings, written once in the canonical one; then rebuilds views
    /// of changed `on` lists, ignores stored values that no longer fit, and gathers the warnings
    /// after `diagnostics`.
    mutating func finish(
        hooks: EngineHooks?, journal: [SwapJournal.Entry], active: (Date) -> ActiveRules, diagnostics: [Diagnostic]
    ) throws {
        if let hooks {
            core.hooks = hooks
            core.fitHooks()
        }
        if !journal.isEmpty { try core.apply(journal: journal) }
        var changes = moves + core.activate(active(core.hooks.clock.now())) + core.makeInstallID()
        if !respelled.isEmpty {
            changes = core.image() + respelled.map { StoreChange(storedKey: $0, value: nil) } + changes
        }
        if !changes.isEmpty { core.save(changes) }
        core.warnings = diagnostics + core.reconcile()
    }
}
