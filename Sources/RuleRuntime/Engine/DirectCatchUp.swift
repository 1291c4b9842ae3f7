import RuleLang

/// Another process's record, taken in entry by entry: the common record of a call of an engine
/// on the same rules (streams, views, budgets, days and sessions these rules name, in ASCII,
/// none deleted), without building a state of it first as ``apply(written:_:droppingOtherTypes:)``
/// does. Two debug-built processes triggering on one file take in one record on almost every
/// call: decoding it as a whole state with dictionaries took 60% of their time (rulebench
/// `debug_two_processes_vs_one`).
extension EngineCore {
    /// Takes in the changes of a record another process appended, as
    /// ``apply(written:_:droppingOtherTypes:)`` would, when each is one this path takes (any
    /// other record: false, and nothing changed). Every entry is decoded before anything changes.
    mutating func applyDirectly(written bytes: [UInt8], _ changes: [(key: Range<Int>, value: Range<Int>?)]) -> Bool {
        // Renames in the rules or the state make another name mean one of these streams.
        guard !catchesUpWhole, formerStreams.isEmpty, renamed.isEmpty else { return false }
        var entries = DirectEntries()
        let tables = DirectEntries.Tables(
            streams: streams.index, scenarios: rules.scenarioIndex, groups: rules.groupIndex)
        for change in changes {
            guard let value = change.value, let kind = StoreKey.kind(of: bytes, change.key) else { return false }
            let name = change.key.lowerBound + 2..<change.key.upperBound
            for k in name where bytes[k] >= 0x80 { return false }
            var reader = ByteReader(bytes, from: value.lowerBound, to: value.upperBound)
            guard (try? entries.decode(kind, bytes, name, &reader, in: tables)) == true else { return false }
        }
        // A view's events given by reference are its stream's tally, written in the same record.
        for k in entries.views.indices where entries.views[k].reference >= 0 {
            guard let last = entries.streams.lastIndex(where: { $0.slot == entries.views[k].reference }) else {
                return false
            }
            entries.views[k].state.events = entries.streams[last].tally
        }
        while tallies.count < streams.count { tallies.append() }
        var streamSlots: [Int] = []
        var viewIndexes: [Int] = []
        for entry in entries.streams { streamSlots.append(entry.slot) }
        for entry in entries.views { viewIndexes.append(entry.index) }
        let following = viewsFollowing(streamSlots, except: viewIndexes)
        for (slot, tally) in entries.streams { tallies[slot] = tally }
        for (index, slot) in following { views[index].events = tallies[slot] }
        for (index, state, _) in entries.views {
            views[index] = state
            built[index] = true
        }
        for (index, tally) in entries.budgets { budgets[index] = tally }
        for (slot, bits) in entries.days { days[slot] = bits }
        if let meta = entries.meta { self.meta = meta }
        // No to-do and no param is among the entries: `nextExpiry` and the stored params stand.
        forgetViewsStoredAsStreams()
        journal?.add(written: bytes, changes)
        directCatchUps += 1
        return true
    }
}

/// The entries of one record, decoded for ``EngineCore/applyDirectly(written:_:)``,
/// in the record's order (a key written twice: the later wins).
private struct DirectEntries {
    var streams: [(slot: Int, tally: Tally)] = []
    /// `reference`: the slot of the stream whose tally its events are (format 3), else -1.
    var views: [(index: Int, state: ScenarioState, reference: Int)] = []
    var budgets: [(index: Int, tally: Tally)] = []
    var days: [(slot: Int, bits: DayBits)] = []
    var meta: SessionMeta?

    /// The names the entries' keys are looked up in.
    struct Tables {
        let streams: NameTable
        let scenarios: NameTable
        let groups: NameTable
    }

    /// Decodes the entry of `kind` named `bytes[name]`, its value in `reader`; false when it is
    /// not one the direct path takes (a name these rules do not know, a format it does not read).
    mutating func decode(
        _ kind: StoreKey.Kind, _ bytes: [UInt8], _ name: Range<Int>, _ reader: inout ByteReader, in tables: Tables
    ) throws -> Bool {
        let format = try reader.u8()
        guard format >= 1 && format <= EngineState.newestFormat(of: kind) else { return false }
        func position(in table: NameTable, of name: Range<Int>) -> Int? {
            bytes.withUnsafeBytes { table.position(of: UnsafeRawBufferPointer(rebasing: $0[name])) }
        }
        switch kind {
        case .stream:
            guard let slot = position(in: tables.streams, of: name) else { return false }
            streams.append((slot, try Tally.decode(&reader)))
        case .scenario:
            guard let index = position(in: tables.scenarios, of: name) else { return false }
            let (state, reference) = try EngineState.decodeView(&reader, format: format)
            var slot = -1
            if let reference {
                guard let found = position(in: tables.streams, of: reference) else { return false }
                slot = found
            }
            views.append((index, state, slot))
        case .group:
            guard let index = position(in: tables.groups, of: name) else { return false }
            budgets.append((index, try Tally.decode(&reader)))
        case .days:
            guard let slot = position(in: tables.streams, of: name) else { return false }
            days.append((slot, try DayBits.decode(&reader)))
        case .meta:
            guard name.isEmpty else { return false }
            meta = try SessionMeta.decode(&reader)
        default:
            return false
        }
        return true
    }
}
