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
        // Taken out while in use, so that changing it does not copy it.
        var positions = directPositions
        directPositions = []
        if positions.count < 2 * changes.count { positions = Array(repeating: -1, count: 2 * changes.count) }
        // Loops over indices, not over the arrays of tuples: a debug build iterates those
        // through an unspecialized iterator, a tenth of this method there.
        let decoded = bytes.withUnsafeBytes { raw in
            for c in 0..<changes.count {
                let change = changes[c]
                guard let value = change.value, let kind = StoreKey.kind(of: bytes, change.key) else { return false }
                let name = UnsafeRawBufferPointer(rebasing: raw[change.key.lowerBound + 2..<change.key.upperBound])
                var reader = ByteReader(bytes, from: value.lowerBound, to: value.upperBound)
                var guess = (positions[2 * c], positions[2 * c + 1])
                let taken = try? entries.decode(kind, name, raw, &reader, in: tables, positions: &guess.0, &guess.1)
                guard taken == true else { return false }
                (positions[2 * c], positions[2 * c + 1]) = guess
            }
            return true
        }
        directPositions = positions
        guard decoded else { return false }
        // A view's events given by reference are its stream's tally, written in the same record.
        for k in 0..<entries.views.count where entries.viewReferences[k] >= 0 {
            var last = entries.streamSlots.count - 1
            while last >= 0 && entries.streamSlots[last] != entries.viewReferences[k] { last -= 1 }
            guard last >= 0 else { return false }
            entries.views[k].events = entries.streamTallies[last]
        }
        while tallies.count < streams.count { tallies.append() }
        let following = viewsFollowing(entries.streamSlots, except: entries.viewIndexes)
        for k in 0..<entries.streamSlots.count { tallies[entries.streamSlots[k]] = entries.streamTallies[k] }
        for k in 0..<following.count { views[following[k].index].events = tallies[following[k].slot] }
        for k in 0..<entries.views.count {
            views[entries.viewIndexes[k]] = entries.views[k]
            built[entries.viewIndexes[k]] = true
        }
        for k in 0..<entries.budgets.count { budgets[entries.budgetIndexes[k]] = entries.budgets[k] }
        for k in 0..<entries.days.count { days[entries.daySlots[k]] = entries.days[k] }
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
///
/// Arrays side by side, not arrays of tuples: a debug build reads and appends to an array of
/// tuples through unspecialized generic code, and has copies of `[Int]`'s made in advance.
private struct DirectEntries {
    var streamSlots: [Int] = []
    var streamTallies: [Tally] = []
    var viewIndexes: [Int] = []
    var views: [ScenarioState] = []
    /// By view: the slot of the stream whose tally its events are (format 3), else -1.
    var viewReferences: [Int] = []
    var budgetIndexes: [Int] = []
    var budgets: [Tally] = []
    var daySlots: [Int] = []
    var days: [DayBits] = []
    var meta: SessionMeta?

    /// The names the entries' keys are looked up in.
    struct Tables {
        let streams: NameTable
        let scenarios: NameTable
        let groups: NameTable
    }

    /// Decodes the entry of `kind` named `name` (bytes inside `raw`, which `reader` reads too),
    /// its value in `reader`; false when it is not one the direct path takes (a name these rules
    /// do not know or not in ASCII, a format it does not read). `guess` and `referenceGuess`:
    /// where its name and the stream its view refers to were in the last record (checked, and
    /// set to where they are).
    mutating func decode(
        _ kind: StoreKey.Kind, _ name: UnsafeRawBufferPointer, _ raw: UnsafeRawBufferPointer,
        _ reader: inout ByteReader, in tables: Tables, positions guess: inout Int, _ referenceGuess: inout Int
    ) throws -> Bool {
        let format = try reader.u8()
        guard format >= 1 && format <= EngineState.newestFormat(of: kind) else { return false }
        func position(in table: NameTable, of name: UnsafeRawBufferPointer, _ guess: inout Int) -> Int? {
            // Bytes equal to the name stored there are that name in the spelling the table
            // keeps (its canonical one): no other spelling to merge, as for an ASCII name.
            if table.holds(name, at: guess) { return guess }
            let (hash, ascii) = NameTable.hashAndASCII(name)
            guard ascii, let found = table.position(of: name, hash: hash, ascii: true) else { return nil }
            guess = found
            return found
        }
        switch kind {
        case .stream:
            guard let slot = position(in: tables.streams, of: name, &guess) else { return false }
            streamTallies.append(try Tally.decode(&reader))
            streamSlots.append(slot)
        case .scenario:
            guard let index = position(in: tables.scenarios, of: name, &guess) else { return false }
            let (state, reference) = try EngineState.decodeView(&reader, format: format)
            var slot = -1
            if let reference {
                let bytes = UnsafeRawBufferPointer(rebasing: raw[reference])
                guard let found = position(in: tables.streams, of: bytes, &referenceGuess) else { return false }
                slot = found
            }
            viewIndexes.append(index)
            views.append(state)
            viewReferences.append(slot)
        case .group:
            guard let index = position(in: tables.groups, of: name, &guess) else { return false }
            budgets.append(try Tally.decode(&reader))
            budgetIndexes.append(index)
        case .days:
            guard let slot = position(in: tables.streams, of: name, &guess) else { return false }
            days.append(try DayBits.decode(&reader))
            daySlots.append(slot)
        case .meta:
            guard name.isEmpty else { return false }
            meta = try SessionMeta.decode(&reader)
        default:
            return false
        }
        return true
    }
}
