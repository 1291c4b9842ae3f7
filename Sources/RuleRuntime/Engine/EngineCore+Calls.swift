import Foundation
import RuleLang

/// Sessions, events, views, executions and params: what the engine's calls do to its state.
extension EngineCore {
    // MARK: - Sessions

    mutating func startSession(version: String) {
        verifyStore()
        // An extension joins the app's session and version (read from the shared file).
        // The role not given is read from the main bundle once, at the first session.
        if hooks.role == nil { hooks.role = ProcessRole.current }
        if hooks.role == .appExtension { return }
        if shared { _ = lockFileForWriting() }
        rebaseEpochsIfNeeded()
        // Other processes on the file may have recorded times this one never read the clock at:
        // the next evaluation looks over the state for times ahead (once a launch).
        latestRecorded = .infinity
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
        save([EngineState.change(meta: meta)] + zoneChange())
        noteLastRun()
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
        if slot + 1 >= listenerStart.count { noteUnknownEvent(slot) }
        tallies.record(slot, at: time, in: meta.epoch, keep: keep(slot))
        if slot < dayCounted.count && dayCounted[slot] { recordDay(slot, at: time) }
        writeStreamEntry(slot)
        for k in listeners {
            let index = Int(listenerList[k])
            let info = triggerInfo[index]
            views[index].events.record(at: time, in: meta.epoch, keep: info.eventKeep)
            // A view whose events are exactly the stream's (a scenario counting this one stream,
            // not reset since) is stored by reference: the record carries the tally once. Worked
            // out outside the closure below: inside it, an array of the core was retained and
            // released on every trigger (about 4% of an in-memory trigger, `perf`).
            let same = info.countsOneStream && tallies.equals(slot, views[index].events)
            // Already stored as this stream, which the record carries: nothing else changed.
            if same && storedAsStream[index] { continue }
            EngineCore.write(view: index, key: info.key, eventsOf: same ? slot : nil, views, streams, to: record)
            // Shared: written again on every event, so that a process of a library that
            // does not move such views along (``viewsFollowing(_:except:)``) never reads one stale.
            storedAsStream[index] = same && !shared
        }
    }

    /// A trigger of a sum's stream (`sum(purchase.amount)`): `amount` added (nothing below 1;
    /// the counts saturate). No scenario counts such a stream (`on` names events), and no day is kept.
    mutating func recordSum(_ slot: Int, _ amount: Int64, at time: Double) {
        guard amount > 0 else { return }
        if shared { _ = lockFileForWriting() }
        tallies.record(slot, at: time, in: meta.epoch, keep: keep(slot), adding: amount)
        writeStreamEntry(slot)
    }

    /// Writes the view of scenario `index` under `key` into `record`, its events given as the
    /// stream in `slot`'s when it is named, read in place through a pointer (a copy of the view
    /// would retain its arrays). Static, its parts passed borrowed: a closure in the mutating
    /// caller captured the core and retained and released four of its references on every
    /// shared trigger (about 5% of the samples of `rulebench profile shared`), and a
    /// non-mutating method would be handed a copy of the whole core in a debug build.
    @inline(__always)
    static func write(
        view index: Int, key: UnsafeRawBufferPointer, eventsOf slot: Int?, _ views: [ScenarioState],
        _ streams: StreamTable, to record: ChangeRecord
    ) {
        views.withUnsafeBufferPointer { views in
            let view = views.baseAddress! + index
            if let slot {
                streams.withName(slot) { record.set(key, view: view, eventsFrom: $0) }
            } else {
                record.set(key, view: view, eventsFrom: nil)
            }
        }
    }

    /// Writes the entry of the stream in `slot` (`e:NAME`) into ``record``, its name and tally
    /// read in place. Not mutating: the closures borrow the core, and retain nothing.
    @inline(__always)
    func writeStreamEntry(_ slot: Int) {
        streams.withName(slot) { name in
            record.reserve(stream: name, recentCount: tallies.recentCount(slot))
            tallies.withTally(slot) { record.set(stream: name, $0, recent: $1) }
        }
    }

    /// One event on the stream in `slot`, in one record.
    @inline(__always)
    mutating func trigger(_ slot: Int) {
        recordEvent(slot, at: now())
        commit()
    }

    /// The event, and each filtered stream of it (`count(EVENT where ...)`) whose filter its
    /// properties pass, at one time and in one record.
    mutating func trigger(_ slot: Int, properties: [String: PropertyValue]) {
        let time = now()
        recordEvent(slot, at: time)
        for position in rules.filterPositions(ofEvent: slot) {
            let filter = rules.filters[Int(position)]
            guard filter.passes(properties) else { continue }
            if let adds = filter.adds {
                // `passes` made sure the property is there, an int.
                if case .int(let amount)? = properties[adds] { recordSum(filter.stream, amount, at: time) }
            } else {
                recordEvent(filter.stream, at: time)
            }
        }
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
        rebaseAheadIfNeeded(to: time)
        buildView(index)
        let events = views[index].events.rebase(to: time)
        var changed = views[index].executions.rebase(to: time) || events
        if let group = rules.scenarios[index].group, budgets[group].rebase(to: time) { changed = true }
        if changed {
            storedAsStream[index] = false
            if !rebasedUnsaved.contains(index) { rebasedUnsaved.append(index) }
        }
    }

    /// Re-bases, when the clock reads earlier than a time the state may hold, every stream's
    /// times recorded later than `time` and every to-do created later (a hold, a to-do with an
    /// expiry, the run's mark: created at `time`, its expiry moved by as much): what the rules
    /// read of them directly (`after later 3d`, `since_last(crash)`, `count(x within 7d)`, a
    /// presentation's hold) then waits from the correction, as a view does, not for the size
    /// of the jump. In memory only, stored with the next write, as views are. Asked where views
    /// are re-based, before a scenario is judged: the state is looked over once per correction.
    @inline(__always)
    mutating func rebaseAheadIfNeeded(to time: Double) {
        if time < latestRecorded { rebaseAhead(to: time) }
    }

    /// ``rebaseAheadIfNeeded(to:)``'s look over the state, off the evaluation's inlined path.
    @inline(never)
    private mutating func rebaseAhead(to time: Double) {
        latestRecorded = time
        for slot in tallies.indices where tallies.rebase(slot, to: time) { rebasedStreams.insert(slot) }
        // Every view built so far and every budget too, not only the judged scenario's: a view
        // merged before the correction would otherwise keep times its streams no longer hold,
        // and a scenario's answer would depend on whether it had been asked before (found by
        // `ClauseModelTests`).
        for index in views.indices where built[index] {
            let events = views[index].events.rebase(to: time)
            if views[index].executions.rebase(to: time) || events {
                storedAsStream[index] = false
                if !rebasedUnsaved.contains(index) { rebasedUnsaved.append(index) }
            }
        }
        for group in budgets.indices where budgets[group].rebase(to: time) {
            if let member = rules.scenarios.indices.first(where: { rules.scenarios[$0].group == group }),
                !rebasedUnsaved.contains(member)
            {
                rebasedUnsaved.append(member)
            }
        }
        var movedExpiry = false
        for (key, item) in todos where item.created > time {
            var moved = item
            let shift = item.created - time
            moved.created = time
            if let expires = item.expires {
                moved.expires = expires - shift
                movedExpiry = true
            }
            todos[key] = moved
            rebasedToDos.insert(key)
        }
        if movedExpiry { nextExpiry = todos.values.compactMap(\.expires).min() ?? .infinity }
    }

    /// Adds to ``record`` the views, budgets, streams and to-dos re-based since the last write.
    mutating func addRebased() {
        for index in rebasedUnsaved {
            record.add(EngineState.change(key: rules.scenarios[index].key, views[index]))
            // Written whole, after any entry this call wrote for it by its stream: the next
            // event must write it again (else a swap or another process reads it without that
            // event; found by `ClauseModelTests`, a rename swapped in after a clock correction).
            storedAsStream[index] = false
            if let group = rules.scenarios[index].group {
                record.add(EngineState.change(key: rules.groups[group].key, budgets[group]))
            }
        }
        rebasedUnsaved.removeAll()
        for slot in rebasedStreams.sorted() where slot < tallies.count {
            record.add(EngineState.change(key: StoreKey.stream(streams.name(slot)), tallies[slot]))
        }
        rebasedStreams.removeAll()
        for key in rebasedToDos.sorted() {
            record.add(EngineState.change(todo: key, todos[key]))
        }
        rebasedToDos.removeAll()
    }

    // MARK: - Executions

    mutating func tryToExecute(_ index: Int) -> Bool {
        let time = now()
        var verdict = verdict(index, now: time)
        guard verdict != .refused else {
            noteRefusal(index, now: time)
            return false
        }
        if shared && lockFileForWriting() { verdict = self.verdict(index, now: time) }
        switch verdict {
        case .refused:
            noteRefusal(index, now: time)
            return false
        case .heldOut:
            recordControlExposure(index, at: time)
            return false
        case .shows:
            recordExecution(index, at: time)
            commit()
            return true
        }
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
        // A wish kept by `defer up to` comes first, then the highest priority, then declaration
        // order. Wishes are looked up only when some to-do is stored at all.
        let wished = todos.isEmpty ? [] : candidates.filter { isWished($0, now: time) }
        let ordered = candidates.sorted {
            if !wished.isEmpty, wished.contains($0) != wished.contains($1) { return wished.contains($0) }
            let (a, b) = (rules.scenarios[$0].priority, rules.scenarios[$1].priority)
            return a != b ? a > b : $0 < $1
        }
        if shared && ordered.contains(where: { verdict($0, now: time) != .refused }) { _ = lockFileForWriting() }
        for index in ordered {
            let verdict = verdict(index, now: time)
            if verdict == .refused {
                noteRefusal(index, now: time)
                continue
            }
            if verdict == .heldOut {
                recordControlExposure(index, at: time)
                continue
            }
            recordExecution(index, at: time)
            commit()
            return index
        }
        return nil
    }

    /// Records an execution of scenario `index` (and its group), and the changes in ``record``.
    mutating func recordExecution(_ index: Int, at time: Double, kind: Exposure.Kind = .execution) {
        let scenario = rules.scenarios[index]
        logExposure(index, at: time, kind)
        if scenario.deferral > 0 { grantWish(index) }
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
        let index = try param(name, type)
        providers[index] = provider
        hooks.providers[rules.params[index].name] = (type, provider)
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
