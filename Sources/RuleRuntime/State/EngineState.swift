/// Everything the engine persists, decoded; and the encoding of each entry.
///
/// Stores see only string keys and byte values: `e:NAME` a stream, `s:NAME` a
/// scenario, `g:NAME` a group, `p:NAME` a param, `t:NAME` a to-do, `m:` the
/// session and version, `a:` the rules a delivery or a swap made active. Keys are split as bytes (the kind is the first byte), so a
/// name holding any Unicode, a leading combining mark included, round-trips exactly.
/// Every value starts with a format byte: 1, or for a scenario view 2 (it records which
/// streams it was built from) or 3 (as 2, with its events given by reference: the name of
/// a stream whose stored tally they equal, written in the same record).
struct EngineState {
    /// Stream slots: the rules' streams first (as given to `init`), then any stored only.
    var streams: StreamTable
    /// By slot; blank for a stream with no stored entry.
    var tallies: StreamTallies
    /// By slot: true where a stored entry was decoded.
    var storedStreams: [Bool]
    var scenarios: [String: ScenarioState] = [:]
    var groups: [String: Tally] = [:]
    var params: [String: ParamValue] = [:]
    var todos: [String: ToDoItem] = [:]
    var meta = SessionMeta()
    /// `i:PEER`: the report of an importer that ran on this store (JSON), its marker.
    var imports: [String: String] = [:]
    /// `a:`: which rules a delivery or a swap made active (``ActiveRules/description``).
    var activeRules: String?
    /// `u:`: the install's id (``RuleEngine/installID``).
    var installID: String?
    /// `z:`: the device's time zone as the app last saw it (its identifier).
    var zone: String?
    /// `d:NAME`: the local days a stream had events on (streams a day clause counts).
    var days: [String: DayBits] = [:]
    /// `w:KIND:NAME`: the renames this state went through (the key, and the former name).
    var renamed: [String: String] = [:]
    /// Stored keys spelt otherwise than their canonical spelling (NFC): their values were merged
    /// into the canonical entry's (``mergeSpellings(of:)``); the engine writes it and deletes these.
    var respelled: [String] = []

    static let format: UInt8 = 1
    static let scenarioFormat: UInt8 = 3
    static let metaKey = StoreKey.meta

    /// The newest format of an entry of `kind` this library reads (it reads every one from 1).
    static func newestFormat(of kind: StoreKey.Kind) -> UInt8 { kind == .scenario ? scenarioFormat : format }

    /// A view's value after its format byte (`format`, 1 to 3): the view, with no events when
    /// they are given by reference (format 3), and then where in the reader's bytes lies the name
    /// of the stream whose tally they are.
    static func decodeView(_ reader: inout ByteReader, format: UInt8) throws -> (
        view: ScenarioState, reference: Range<Int>?
    ) {
        var view = ScenarioState()
        var reference: Range<Int>?
        if format == 3 { reference = try reader.stringRange() } else { view.events = try Tally.decode(&reader) }
        view.executions = try Tally.decode(&reader)
        if format >= 2 { view.streams = try reader.u64() }
        return (view, reference)
    }

    /// Decodes stored entries (as ``RuleStore/load()`` returns them).
    init(entries: [String: [UInt8]]) throws {
        try self.init(StoredEntries(entries), streams: StreamTable())
    }

    /// The tallies of the streams in `stored`, decoded in the order the store holds them
    /// (before any rules give them slots: an engine does this on another thread while it parses
    /// its rules), or nil when one of them cannot be decoded (left for ``init(_:streams:staged:)``
    /// to report). ``StagedStreams/place(in:)`` then moves them to their slots.
    static func stage(_ stored: StoredEntries) -> StagedStreams? {
        var tallies = StreamTallies()
        tallies.reserveCapacity(stored.index.liveCount)
        let bytes = stored.bytes
        for entry in stored.index.live where isStream(entry, in: bytes) {
            var reader = ByteReader(bytes, from: entry.valueStart, to: entry.valueStart + entry.valueCount)
            guard let format = try? reader.u8(), format >= 1 && format <= EngineState.format else { return nil }
            tallies.append()
            do { try tallies.decode(tallies.count - 1, from: &reader) } catch { return nil }
        }
        return StagedStreams(entries: stored, tallies: tallies)
    }

    /// By stream of `stored`, in the order the store holds them: its slot in `table`, or -1
    /// where the table does not have it. A batch of names at a time (``NameTable/lookUp(_:)``),
    /// in plain loops (a nested function that captured the batch and the slots boxed them, and
    /// every access paid a dynamic exclusivity check: a fifth of the lookups' time).
    static func slots(of stored: StoredEntries, in table: NameTable) -> [Int] {
        var slots: [Int] = []
        var batch = NameTable.LookupBatch()
        stored.bytes.withUnsafeBytes { raw in
            var live = stored.index.live.makeIterator()
            var more = true
            while more {
                while batch.keys.count < NameTable.LookupBatch.size {
                    guard let entry = live.next() else {
                        more = false
                        break
                    }
                    guard isStream(entry, in: stored.bytes) else { continue }
                    batch.keys.append(
                        UnsafeRawBufferPointer(rebasing: raw[entry.keyStart + 2..<entry.keyStart + entry.keyCount]))
                }
                table.lookUp(&batch)
                slots += batch.positions
                batch.keys.removeAll(keepingCapacity: true)
            }
        }
        return slots
    }

    /// True for an `e:` entry, a stream's.
    @inline(__always)
    private static func isStream(_ entry: RecordIndex.Entry, in bytes: [UInt8]) -> Bool {
        StoreKey.kind(of: bytes, entry.keyStart..<entry.keyStart + entry.keyCount) == .stream
    }

    /// Decodes stored entries, each stream's tally straight into its slot of `streams` (the
    /// rules' table, extended with the streams stored only). Keys of an unknown kind are
    /// ignored (written by a newer version). `staged`: the streams' tallies as ``stage(_:)``
    /// decoded them from these entries and ``StagedStreams/place(in:)`` moved them to the slots
    /// of `table`'s first names, taken as they are; the streams it left out are decoded here.
    init(_ stored: StoredEntries, streams table: StreamTable, staged: StagedStreams? = nil) throws {
        streams = table
        // Room for every stored entry being a stream the rules do not know, at most: the rules'
        // streams are in the table already (reserving their count twice rehashed every name:
        // 7% of loading 100,000 streams).
        streams.index.reserveCapacity(max(table.count, stored.index.liveCount))
        let placed = staged.flatMap {
            !$0.slots.isEmpty && $0.isFrom(stored) && $0.listedCount <= table.count ? $0 : nil
        }
        // The staged streams whose names the rules do not list: decoded already, given their
        // slots here, in the order the store holds them.
        var unlisted: [StreamTallies.Head] = []
        if let placed {
            tallies = placed.tallies
            unlisted = tallies.removeTail(from: placed.listedCount)
            while tallies.count < table.count { tallies.append() }
            storedStreams = Array(repeating: false, count: table.count)
            for slot in placed.slots where slot >= 0 { storedStreams[slot] = true }
        } else {
            tallies = StreamTallies(count: table.count)
            tallies.reserveCapacity(max(table.count, stored.index.liveCount))
            storedStreams = Array(repeating: false, count: table.count)
        }
        var byReference: [(scenario: String, stream: String)] = []
        let bytes = stored.bytes
        // By stream entry: its slot when placed by ``StagedStreams/place(in:)``, or -1.
        let placedSlots = placed?.slots ?? []
        var streamNumber = 0
        var unlistedNumber = 0
        for entry in stored.index.live {
            let key = entry.key
            guard let kind = StoreKey.kind(of: bytes, key) else { continue }
            let nameBytes = key.lowerBound + 2..<key.upperBound
            if kind == .stream && !placedSlots.isEmpty {
                // Staged streams are decoded already: in their slots, or given one now.
                defer { streamNumber += 1 }
                if placedSlots[streamNumber] >= 0 { continue }
                let slot = bytes.withUnsafeBytes {
                    streams.slot(bytes: UnsafeRawBufferPointer(rebasing: $0[nameBytes]))
                }
                tallies.put(unlisted[unlistedNumber], at: slot)
                unlistedNumber += 1
                while storedStreams.count <= slot { storedStreams.append(false) }
                storedStreams[slot] = true
                continue
            }
            let value = entry.value!
            var reader = ByteReader(bytes, from: value.lowerBound, to: value.upperBound)
            do {
                let format = try reader.u8()
                let newest = EngineState.newestFormat(of: kind)
                guard format >= 1 && format <= newest else {
                    throw DecodeError(
                        description: "entry format \(format) is not one this library reads (1...\(newest))")
                }
                if kind == .stream {
                    let slot = bytes.withUnsafeBytes {
                        streams.slot(bytes: UnsafeRawBufferPointer(rebasing: $0[nameBytes]))
                    }
                    while tallies.count <= slot {
                        tallies.append()
                        storedStreams.append(false)
                    }
                    try tallies.decode(slot, from: &reader)
                    storedStreams[slot] = true
                    continue
                }
                let name = String(decoding: bytes[nameBytes], as: UTF8.self)
                switch kind {
                case .scenario:
                    let (view, reference) = try EngineState.decodeView(&reader, format: format)
                    if let reference { byReference.append((name, String(decoding: bytes[reference], as: UTF8.self))) }
                    scenarios[name] = view
                case .group: groups[name] = try Tally.decode(&reader)
                case .param: params[name] = try ParamValue.decode(&reader)
                case .todo: todos[name] = try ToDoItem.decode(&reader)
                case .meta: meta = try SessionMeta.decode(&reader)
                case .importReport: imports[name] = try reader.string()
                case .activeRules: activeRules = try reader.string()
                case .install: installID = try reader.string()
                case .zone: zone = try reader.string()
                case .days: days[name] = try DayBits.decode(&reader)
                case .rename: renamed[StoreKey.key(.rename, name)] = try reader.string()
                case .stream: continue  // decoded above
                }
            } catch let error as DecodeError {
                throw RuleStoreError.undecodableEntry(
                    key: String(decoding: bytes[key], as: UTF8.self), reason: error.description)
            }
        }
        for (scenario, stream) in byReference {
            // Written only beside the stream's own tally, and rewritten in full before that
            // tally is ever deleted: a missing one is damage, not an empty history.
            guard let slot = streams.index[stream], slot < storedStreams.count, storedStreams[slot] else {
                throw RuleStoreError.undecodableEntry(
                    key: StoreKey.scenario(scenario),
                    reason: "its events refer to stream '\(stream)', which is not stored")
            }
            scenarios[scenario]?.events = tallies[slot]
        }
        try mergeSpellings(of: stored)
    }

    /// Keys whose name is not in its canonical spelling (NFC), from a release whose rules or
    /// app spelt a name in another Unicode form: every spelling of one name is merged into one
    /// value, so that no count is lost. Streams, views and budgets: the union of their tallies
    /// (totals added, the earliest first time, the latest last time, the recent times of both);
    /// days: the union of the days; a param: the canonical spelling's value, else the last
    /// spelling's in key order; a to-do: the earliest. Only keys holding a byte above 0x7F are
    /// looked at (one pass over the keys' bytes).
    private mutating func mergeSpellings(of stored: StoredEntries) throws {
        let bytes = stored.bytes
        var spellings: [String: [(key: String, value: Range<Int>)]] = [:]
        bytes.withUnsafeBytes { raw in
            for entry in stored.index.live
            where !NameTable.hashAndASCII(UnsafeRawBufferPointer(rebasing: raw[entry.key])).ascii {
                let key = String(decoding: bytes[entry.key], as: UTF8.self)
                spellings[NameTable.canonical(key), default: []].append((key, entry.value!))
            }
        }
        for (canonical, group) in spellings.sorted(by: { $0.key < $1.key }) {
            let odd = group.filter { Array($0.key.utf8) != Array(canonical.utf8) }.map(\.key)
            if odd.isEmpty { continue }
            respelled += odd
            // One spelling only: decoded as it is; written again under the canonical key.
            if group.count == 1 { continue }
            let name = String(canonical.dropFirst(2))
            let values = group.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }.map(\.value)
            func reader(_ range: Range<Int>) throws -> ByteReader {
                var reader = ByteReader(bytes, from: range.lowerBound, to: range.upperBound)
                _ = try reader.u8()
                return reader
            }
            func union(_ ranges: [Range<Int>]) throws -> Tally {
                let decoded = try ranges.map { range -> Tally in
                    var r = try reader(range)
                    return try Tally.decode(&r)
                }
                return Tally.merged(decoded, keep: decoded.map(\.recent.count).reduce(0, +), in: meta.epoch)
            }
            do {
                switch StoreKey.parse(canonical)?.kind {
                case .stream:
                    guard let slot = streams.index[name] else { continue }
                    tallies[slot] = try union(values)
                case .scenario:
                    var events: [Tally] = []
                    var executions: [Tally] = []
                    var fingerprint: UInt64?
                    for range in values {
                        var r = ByteReader(bytes, from: range.lowerBound, to: range.upperBound)
                        let (view, reference) = try EngineState.decodeView(&r, format: try r.u8())
                        if let reference {
                            let stream = String(decoding: bytes[reference], as: UTF8.self)
                            events.append(streams.index[stream].map { tallies[$0] } ?? Tally())
                        } else {
                            events.append(view.events)
                        }
                        executions.append(view.executions)
                        if view.streams != nil { fingerprint = view.streams }
                    }
                    let keep = { (t: [Tally]) in t.map(\.recent.count).reduce(0, +) }
                    scenarios[name] = ScenarioState(
                        events: Tally.merged(events, keep: keep(events), in: meta.epoch),
                        executions: Tally.merged(executions, keep: keep(executions), in: meta.epoch),
                        streams: fingerprint)
                case .group: groups[name] = try union(values)
                case .days:
                    var union = DayBits()
                    for range in values {
                        var r = try reader(range)
                        union.formUnion(try DayBits.decode(&r))
                    }
                    days[name] = union
                case .param:
                    let chosen = group.first { Array($0.key.utf8) == Array(canonical.utf8) }?.value ?? values.last!
                    var r = try reader(chosen)
                    params[name] = try ParamValue.decode(&r)
                case .todo:
                    let items = try values.map { range -> ToDoItem in
                        var r = try reader(range)
                        return try ToDoItem.decode(&r)
                    }
                    todos[name] = items.min { $0.created < $1.created }
                default: continue
                }
            } catch let error as DecodeError {
                throw RuleStoreError.undecodableEntry(key: odd[0], reason: error.description)
            }
        }
    }

    /// Every stored stream's tally, by name.
    var storedTallies: [String: Tally] {
        var result: [String: Tally] = [:]
        for slot in storedStreams.indices where storedStreams[slot] { result[streams.name(slot)] = tallies[slot] }
        return result
    }

    // MARK: - Changes

    static func change(key: String, _ tally: Tally?) -> StoreChange {
        StoreChange(key: key, value: tally.map { t in encode(capacity: t.encodedSize) { write(t, to: &$0) } })
    }

    /// A view's entry; with `eventsFrom`, its events are stored as that stream's name (the
    /// caller has checked they equal the tally it writes for the stream in the same record).
    static func change(key: String, _ state: ScenarioState?, eventsFrom stream: String? = nil) -> StoreChange {
        StoreChange(
            key: key,
            value: state.map { s in
                encode(capacity: s.events.encodedSize + s.executions.encodedSize + 16) {
                    write(s, eventsFrom: stream, to: &$0)
                }
            })
    }

    /// A stream's or a group's value: the format byte, then the tally.
    static func write<W: ByteSink>(_ tally: Tally, to writer: inout W) {
        tally.recent.withUnsafeBufferPointer { write(tally.counts, recent: $0, to: &writer) }
    }

    /// As ``write(_:to:)``, from a tally's counts and recent times (a stream keeps them apart).
    @inline(__always)
    static func write<W: ByteSink>(_ counts: TallyCounts, recent: UnsafeBufferPointer<Double>, to writer: inout W) {
        writer.u8(format)
        Tally.encode(counts, recent: recent, to: &writer)
    }

    /// The bytes ``write(_:eventsFrom:to:)`` writes for the view at `state`.
    @inline(__always)
    static func encodedLength(_ state: UnsafePointer<ScenarioState>, eventsFrom stream: UnsafeRawBufferPointer?) -> Int
    {
        let events: Int
        if let stream {
            let count = stream.count
            events = Tally.varintLength(UInt64(count)) + count
        } else {
            events = Tally.encodedLength(state.pointee.events.counts, recentCount: state.pointee.events.recent.count)
        }
        let executions = Tally.encodedLength(
            state.pointee.executions.counts, recentCount: state.pointee.executions.recent.count)
        return 1 + events + executions + 8
    }

    /// A view's value: format 2, or 3 with its events given as the name of a stream.
    static func write<W: ByteSink>(_ state: ScenarioState, eventsFrom stream: String?, to writer: inout W) {
        withUnsafePointer(to: state) { state in
            guard let stream else { return write(state, eventsFrom: nil, to: &writer) }
            NameTable.withBytes(of: stream) { write(state, eventsFrom: $0, to: &writer) }
        }
    }

    /// As ``write(_:eventsFrom:to:)``, reading the view in place.
    @inline(__always)
    static func write<W: ByteSink>(
        _ state: UnsafePointer<ScenarioState>, eventsFrom stream: UnsafeRawBufferPointer?, to writer: inout W
    ) {
        if let stream {
            writer.u8(3)
            writer.string(bytes: stream)
        } else {
            writer.u8(2)
            state.pointee.events.encode(&writer)
        }
        state.pointee.executions.encode(&writer)
        writer.u64(state.pointee.streams ?? 0)
    }

    static func change(key: String, _ value: ParamValue?) -> StoreChange {
        StoreChange(key: key, value: value.map { v in encode { v.encode(&$0) } })
    }

    static func change(todo name: String, _ item: ToDoItem?) -> StoreChange {
        StoreChange(key: StoreKey.todo(name), value: item.map { i in encode { i.encode(&$0) } })
    }

    /// Writes the to-do entry of store key `key` (`t:NAME`, canonical) into `record`: the
    /// change ``change(todo:_:)`` makes, without its intermediate bytes (a presentation's hold
    /// is written and deleted on every `present` and `finish`).
    static func write(todoKey key: String, _ item: ToDoItem?, into record: ChangeRecord) {
        guard let item else { return record.delete(key) }
        record.set(key) { record in
            var sink = record
            sink.u8(format)
            item.encode(&sink)
        }
    }

    /// `d:NAME`: the days stream NAME had events on.
    static func change(daysOf stream: String, _ bits: DayBits?) -> StoreChange {
        StoreChange(key: StoreKey.days(stream), value: bits.map { b in encode { b.encode(&$0) } })
    }

    /// `a:`: the rules made active, as ``ActiveRules/description`` words them.
    static func change(installID id: String) -> StoreChange {
        StoreChange(key: StoreKey.install, value: encode { $0.string(id) })
    }

    /// `z:`: the device's time zone (its identifier).
    static func change(zone identifier: String) -> StoreChange {
        StoreChange(key: StoreKey.zone, value: encode { $0.string(identifier) })
    }

    static func change(activeRules text: String) -> StoreChange {
        StoreChange(key: StoreKey.activeRules, value: encode { $0.string(text) })
    }

    static func change(importMarker peer: String, report json: String) -> StoreChange {
        StoreChange(key: StoreKey.importReport(peer), value: encode { $0.string(json) })
    }

    static func change(meta: SessionMeta) -> StoreChange {
        StoreChange(key: metaKey, value: encode { meta.encode(&$0) })
    }

    /// A value written by `body`, which writes its own format byte.
    private static func encode(capacity: Int, _ body: (inout ByteWriter) -> Void) -> [UInt8] {
        var writer = ByteWriter()
        writer.bytes.reserveCapacity(capacity + 1)
        body(&writer)
        return writer.bytes
    }

    /// A value of format 1 written by `body`.
    static func encode(_ body: (inout ByteWriter) -> Void) -> [UInt8] {
        encode(capacity: 64) { writer in
            writer.u8(format)
            body(&writer)
        }
    }
}
