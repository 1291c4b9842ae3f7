import Foundation
import RuleLang

/// An engine over a file other processes write too (``FileStore/Options/shared``): each call
/// first takes in what they wrote, and a call whose append finds the file changed meanwhile
/// runs again on the state read anew, under the file's lock.
extension EngineCore {
    /// Takes in what other processes wrote since this engine last read the file.
    mutating func catchUp(with store: FileStore) {
        do {
            switch try store.changesElsewhere() {
            case .none: break
            case .changes(let bytes, let changes): try apply(written: bytes, changes)
            case .all(let entries): try reload(entries)
            }
        } catch let needed as StoreNeedsRestore {
            restore(needed)
        } catch is StoreWaiting {
            // Another process writes the file again; the call's append finds out whether it has.
        } catch {
            report(error)
        }
    }

    /// Shared file: takes the file's lock before this call changes anything, and takes in what
    /// other processes wrote since this engine last read it, so that the call's append cannot
    /// conflict (a conflict reads the file whole). True when it took something in: the caller
    /// decides again on the state now held. The lock is let go when the call ends.
    mutating func lockFileForWriting() -> Bool {
        do {
            // Through the optional, not bound: no retain and release on the common path.
            guard try sharedFile?.lockForAppend() == true else { return false }
        } catch {
            report(error)
            return false
        }
        if let sharedFile { catchUp(with: sharedFile) }
        return true
    }

    /// After a conflicting append (the file's lock held): reads every entry again.
    mutating func reloadAfterConflict(with store: FileStore) {
        do {
            try reload(try store.reloadAll())
        } catch {
            handle(error)
        }
    }

    /// Replaces the state with the stored `entries`, as a new engine over them would hold it.
    mutating func reload(_ entries: StoredEntries) throws {
        journal?.broken = true
        let state = try EngineState(entries, streams: streams)
        load(state)
        _ = takeInAliased(state, streamAliases())
        // Views stored from other streams than the rules count now: stored again when next written.
        _ = remergeViewsOfOtherStreams()
        dropStoredParamsOfAnotherType()
    }

    /// Applies the changes of records another process appended, in order (`changes` are key
    /// and value ranges in `bytes`; a nil value deletes). Everything is decoded before anything
    /// changes, so an entry that cannot be decoded leaves the state as it was.
    /// `droppingOtherTypes`: false for a swap's journal, whose new core warns of them as a restart does.
    mutating func apply(
        written bytes: [UInt8], _ changes: [(key: Range<Int>, value: Range<Int>?)], droppingOtherTypes: Bool = true
    ) throws {
        if applyDirectly(written: bytes, changes) { return }
        var latest: [String: Range<Int>?] = [:]
        for change in changes { latest[String(decoding: bytes[change.key], as: UTF8.self)] = change.value }
        var present: [String: [UInt8]] = [:]
        var deleted: [String] = []
        for (key, value) in latest {
            if let value { present[key] = Array(bytes[value]) } else { deleted.append(key) }
        }
        // Decoded with a stream table of their own: decoding them into this engine's table would
        // copy it, and make a tally for each of its streams (milliseconds at 100,000 streams).
        let written = try EngineState(StoredEntries(present), streams: StreamTable())
        // By stream `written` holds: this engine's slot for it (made if new).
        let slots = (0..<written.streams.count).map { streams.slot(written.streams.name($0)) }
        while tallies.count < streams.count { tallies.append() }
        let storedSlots = written.storedStreams.indices.filter { written.storedStreams[$0] }
        let following = viewsFollowing(storedSlots.map { slots[$0] })
        for (key, old) in written.renamed { renamed[key] = old }
        for from in storedSlots { tallies[slots[from]] = written.tallies[from] }
        // A stream another process's rules call otherwise (a rename one side has and the other
        // has not) is this engine's stream: its history is taken in under this engine's name,
        // and the deletion of the other key that came with it is not a reset.
        let aliases = streamAliases()
        if !aliases.isEmpty {
            let taken = takeInAliased(written, aliases)
            for from in storedSlots where taken[slots[from]] == nil {
                staleAliases[slots[from]] = nil  // written under its own name again
            }
            deleted.removeAll { key in
                guard let (kind, name) = StoreKey.parse(key), kind == .stream || kind == .days,
                    let slot = streams.index[aliases[name] ?? name]
                else { return false }
                if let other = taken[slot] { return other != name }
                // The other name's key gone: nothing left to move.
                if aliases[name] != nil {
                    if staleAliases[slot] == name { staleAliases[slot] = nil }
                    return true
                }
                return false
            }
        }
        for (index, slot) in following where written.scenarios[rules.scenarios[index].name] == nil {
            views[index].events = tallies[slot]
        }
        for (name, view) in written.scenarios {
            guard let index = rules.scenarioIndex[name] else {
                orphans.insert(StoreKey.scenario(name))
                continue
            }
            views[index] = view
            built[index] = true
        }
        for (name, tally) in written.groups {
            if let index = rules.groupIndex[name] {
                budgets[index] = tally
            } else {
                orphans.insert(StoreKey.group(name))
            }
        }
        for (name, value) in written.params {
            if let index = rules.paramIndex[name] { stored[index] = value }
        }
        for (name, item) in written.todos { todos[name] = item }
        for (name, bits) in written.days { days[slot(aliases[name] ?? name)] = bits }
        if let rules = written.activeRules { storedActive = rules }
        if let id = written.installID { storedInstallID = id }
        if let zone = written.zone { storedZone = zone }
        if present[EngineState.metaKey] != nil { meta = written.meta }
        for (name, report) in written.imports { imports[name] = report }
        for key in deleted { delete(key) }
        nextExpiry = todos.values.compactMap(\.expires).min() ?? .infinity
        if droppingOtherTypes { dropStoredParamsOfAnotherType() }
        forgetViewsStoredAsStreams()
        journal?.add(written: bytes, changes)
    }

    /// The views, among those counting one of the streams written (`slots`, this engine's) and
    /// not written themselves (`written`, by scenario), whose events are that stream's tally
    /// now, by scenario, with the stream's slot. A view stored by reference (its events written as its stream's name) reads
    /// as its stream: a record holding only the stream (what a writer that does not write such a
    /// view again would append; this library writes it on every event in a shared file) moves it
    /// along.
    ///
    /// Declared `mutating`, though it changes nothing, so that a debug build passes the core in
    /// place: called from a mutating method, a non-mutating one was handed a copy of the whole
    /// core (a tenth of taking in a record, built for debugging).
    ///
    /// Loops over ranges of indices, and no `contains`: a debug build iterates an array and runs
    /// `contains` generically, unspecialized, a third of this method there.
    mutating func viewsFollowing(_ slots: [Int], except written: [Int] = []) -> [(index: Int, slot: Int)] {
        var following: [(index: Int, slot: Int)] = []
        for s in 0..<slots.count {
            let slot = slots[s]
            guard slot < tallies.count && slot + 1 < listenerStart.count else { continue }
            for k in Int(listenerStart[slot])..<Int(listenerStart[slot + 1]) {
                let index = Int(listenerList[k])
                guard triggerInfo[index].countsOneStream, built[index] else { continue }
                var isWritten = false
                for w in 0..<written.count where written[w] == index { isWritten = true }
                if isWritten { continue }
                let events = views[index].events
                if events.recent.withUnsafeBufferPointer({ tallies.equals(slot, events.counts, $0) }) {
                    following.append((index, slot))
                }
            }
        }
        return following
    }

    /// Stream names other rules use for this engine's streams, to the name this engine uses: an
    /// event's former names (these rules renamed it), and, from the renames the state records,
    /// a newer name these rules do not know for a stream they know by a former one (the rules of
    /// an app's extension, bundled, beside an app that took delivered rules).
    func streamAliases() -> [String: String] {
        if renamed.isEmpty { return formerStreams }
        var aliases = formerStreams
        for (key, formers) in renamed {
            if let (kind, new, old) = EngineState.renameBack(key, formers, for: rules), kind == .event {
                aliases[new] = old
                for filter in rules.filters(of: old) {
                    aliases[filter.streamName(of: new)] = filter.streamName(of: old)
                }
            }
        }
        return aliases
    }

    /// Takes in the history `state` holds under another name for one of this engine's streams
    /// (`aliases`, from ``streamAliases()``), under this engine's name, unless `state` holds that
    /// name too (it then wins: a file written by a library before this one). The other name's
    /// key is deleted at the next write (``staleAliases``). Returns, by slot taken in, the
    /// other name.
    mutating func takeInAliased(_ state: EngineState, _ aliases: [String: String]) -> [Int: String] {
        var taken: [Int: String] = [:]
        // Whether `state` (whose stream table may be its own) holds a stored tally for `name`.
        func storedIn(_ name: String) -> Int? {
            guard let from = state.streams.index[name], from < state.storedStreams.count, state.storedStreams[from]
            else { return nil }
            return from
        }
        for (name, own) in aliases {
            guard let from = storedIn(name), storedIn(own) == nil else { continue }
            let target = slot(own)
            tallies[target] = state.tallies[from]
            if let source = streams.index[name], source != target {
                tallies[source] = Tally()
                if let bits = days.removeValue(forKey: source) { days[target] = bits }
            }
            staleAliases[target] = name
            taken[target] = name
        }
        return taken
    }

    /// Writes the history the file holds under another name (``staleAliases``) under this
    /// engine's name, and deletes the other name's keys, in this call's record: one key per
    /// history again, whichever rules read it next.
    mutating func moveAliasedHistory() {
        for (slot, other) in staleAliases.sorted(by: { $0.key < $1.key }) {
            record.set(streamKey(slot), tallies[slot])
            record.delete(StoreKey.stream(other))
            if let bits = days[slot] { record.add(EngineState.change(daysOf: streams.name(slot), bits)) }
            record.delete(StoreKey.days(other))
        }
        staleAliases = [:]
    }

    /// Forgets the entry `key` another process deleted.
    private mutating func delete(_ key: String) {
        guard let (kind, name) = StoreKey.parse(key) else { return }
        switch kind {
        case .stream: if let slot = streams.index[name] { tallies[slot] = Tally() }
        case .scenario:
            if let index = rules.scenarioIndex[name] {
                views[index] = ScenarioState()
                built[index] = false
            }
            orphans.remove(key)
        case .group:
            if let index = rules.groupIndex[name] { budgets[index] = Tally() }
            orphans.remove(key)
        case .param: if let index = rules.paramIndex[name] { stored[index] = nil }
        case .todo: todos[name] = nil
        case .days: if let slot = streams.index[name] { days[slot] = nil }
        case .activeRules: storedActive = nil
        case .install: storedInstallID = nil
        case .zone: storedZone = nil
        case .meta: meta = SessionMeta()
        case .importReport: imports[name] = nil
        case .rename: renamed[key] = nil
        }
    }

    /// A stored value of another type than its param declares is ignored, as at load.
    mutating func dropStoredParamsOfAnotherType() {
        for index in stored.indices where stored[index] != nil && stored[index]!.type != rules.params[index].type {
            stored[index] = nil
        }
    }
}

/// Writing the file again from memory, after something else cut it short.
extension EngineCore {
    /// Every entry the engine holds, as a store would hold them: what a file written from
    /// memory contains (entries of names these rules do not know are not held: a restore keeps
    /// those that survive in the file).
    func image() -> [StoreChange] {
        var changes: [StoreChange] = []
        for slot in 0..<streams.count where slot < tallies.count && !tallies.isBlank(slot) {
            changes.append(EngineState.change(key: streamKey(slot), tallies[slot]))
        }
        for (index, scenario) in rules.scenarios.enumerated() where built[index] {
            changes.append(EngineState.change(key: scenario.key, views[index]))
        }
        for (index, group) in rules.groups.enumerated() where !budgets[index].isBlank {
            changes.append(EngineState.change(key: group.key, budgets[index]))
        }
        for (index, param) in rules.params.enumerated() {
            if let value = stored[index] { changes.append(EngineState.change(key: param.key, value)) }
        }
        for (name, item) in todos { changes.append(EngineState.change(todo: name, item)) }
        for (slot, bits) in days { changes.append(EngineState.change(daysOf: streams.name(slot), bits)) }
        if let storedActive { changes.append(EngineState.change(activeRules: storedActive)) }
        if let storedInstallID { changes.append(EngineState.change(installID: storedInstallID)) }
        if let storedZone { changes.append(EngineState.change(zone: storedZone)) }
        for (peer, report) in imports { changes.append(EngineState.change(importMarker: peer, report: report)) }
        for (key, old) in renamed { changes.append(EngineState.change(rename: key, was: old)) }
        changes.append(EngineState.change(meta: meta))
        return changes
    }

    /// After ``StoreNeedsRestore``: writes the whole state to a new file and reports the fault.
    mutating func restore(_ needed: StoreNeedsRestore) {
        journal?.broken = true
        guard let file = hooks.store as? FileStore else { return report(needed.fault) }
        do {
            try file.restore(from: image())
            report(needed.fault)
        } catch {
            report(error)
        }
    }
}
