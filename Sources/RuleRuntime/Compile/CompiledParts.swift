import RuleLang

/// One clause, lowered: numbers and scopes resolved; a `when` is an index into
/// ``CompiledRules/conditions``. Copying one copies no reference.
enum CompiledClause: Sendable {
    case minEvents(Int64, CountScope)
    case maxEvents(Int64, CountScope)
    case maxExec(Int64, CountScope)
    case sinceFirst(Double)
    case sinceLast(Double)
    case between(Double)
    /// `between 1d, 3d, 1w`: an index into ``CompiledRules/gapLists``; evaluated by the engine,
    /// which takes the gap for the executions so far.
    case growingBetween(Int)
    /// `min_days N within D`: N, D in days; evaluated by the engine over its streams' days.
    case minDays(Int64, Int64)
    case when(Int)
    /// `after OUTCOME D`: at least D since the last outcome of that kind, whose stream is in `slot`.
    case afterDuration(slot: Int, Double)
    /// `after OUTCOME next version|next session|never`: no outcome of that kind in the scope.
    case afterNone(slot: Int, CountScope)
    /// `during`, `days`, `from`, `until`: judged on the engine's local clock.
    case local(LocalWindow)
    /// `max_exec N per day` / `per week`: fewer than N executions since the local day (ISO week)
    /// began; judged on the engine's local clock.
    case maxExecLocal(Int64, week: Bool)
    /// `in A, B` / `not in A, B` (`outside`): the contexts
    /// `CompiledRules.contextLists[start..<end]` (indices into `contextNames`).
    case contexts(start: Int32, end: Int32, outside: Bool)
}

extension CompiledClause {
    /// True for `after OUTCOME ...`, answered from the outcome streams' tallies.
    var readsOutcomes: Bool {
        switch self {
        case .afterDuration, .afterNone: return true
        default: return false
        }
    }

    /// True for the clauses over counts and times alone, which
    /// ``EngineCore/judge(_:events:executions:now:in:for:)`` answers from two tallies.
    var readsTallies: Bool {
        switch self {
        case .minEvents, .maxEvents, .maxExec, .sinceFirst, .sinceLast, .between: return true
        case .growingBetween, .minDays, .when, .afterDuration, .afterNone, .local, .maxExecLocal, .contexts:
            return false
        }
    }
}

extension CompiledExpr {
    /// True when the expression calls `bucket`.
    var readsBucket: Bool {
        switch self {
        case .bucket: return true
        case .not(let operand): return operand.readsBucket
        case .and(let left, let right), .or(let left, let right), .compare(_, let left, let right):
            return left.readsBucket || right.readsBucket
        default: return false
        }
    }
}

/// A checked expression with every name resolved: params, scenarios and groups to their
/// indices, streams to their slots, functions to ``BuiltinFunction``s.
indirect enum CompiledExpr: Sendable {
    case constant(ParamValue)
    case param(Int)
    case not(CompiledExpr)
    case and(CompiledExpr, CompiledExpr)
    case or(CompiledExpr, CompiledExpr)
    case compare(BinaryOperator, CompiledExpr, CompiledExpr)
    case count(slot: Int, CountScope)
    /// The sum of the streams' counts (`min_events N where ...` over several `on` events).
    case countOf(slots: [Int32], CountScope)
    case scenarioExecutions(Int, CountScope)
    case groupExecutions(Int, CountScope)
    case sinceFirst(slot: Int)
    case sinceLast(slot: Int)
    /// `active_days(EVENT within D)`: D in days.
    case activeDays(slot: Int, days: Int64)
    case todo(String)
    /// `bucket("salt")`: the install's bucket for the salt.
    case bucket(String)
    /// ``BuiltinValue/upgraded``.
    case upgraded
}

/// What a trigger needs of a scenario counting its stream. `@unchecked Sendable` for `key`, a
/// pointer into bytes its ``CompiledScenario`` owns and never changes (what they buy is measured
/// at ``CompiledScenario/keyBytes``).
struct TriggerInfo: @unchecked Sendable {
    /// Recent times its view of events keeps.
    var eventKeep: Int
    /// It counts this one stream only (its view may then be stored as the stream's).
    var countsOneStream: Bool
    /// Its store key's UTF-8, owned by the ``CompiledScenario``.
    var key: UnsafeRawBufferPointer
}

/// A class: the engine reads a scenario's fields on every call, and reading them through a
/// reference copies nothing. Built by ``CompiledRules/Builder``, then never changed.
/// `@unchecked Sendable`: `keyBytes` is an unsafe buffer (what it buys is measured below) and
/// its `var`s are written only while the rules are built (by ``CompiledRules/Builder``).
final class CompiledScenario: @unchecked Sendable {
    // Written only while ``CompiledRules`` is built (checked accesses: see ``CompiledRules``).
    let name: String
    /// Its key in the store: `s:NAME`.
    let key: String
    /// `retired scenario NAME`: it answers no; its history is kept.
    var retired = false
    /// `key`'s UTF-8, for the record every call writes (no reference counting on the way).
    /// Measured 2026-11-27 against the checked form (a `[UInt8]` read through `withUnsafeBytes`
    /// at the two call sites), four paired `rulebench calls` rounds: the in-memory trigger
    /// (which writes a listening scenario's view under this key) 301-310 ns against 318-323 ns in
    /// the three quiet rounds, `trigger_memory_vs_limit` 3.60-3.63x against 3.74-3.75x (about 3.5%;
    /// the fourth round, under load, 4.73x against 4.83x). It stays.
    let keyBytes: UnsafeRawBufferPointer
    /// The slots of the streams it counts: its `on` list, or its own name.
    var streams: [Int]
    var clauses: [CompiledClause]
    /// The clauses as declared (`on` and `priority` included), for explanations.
    var declared: [Clause] = []
    var group: Int?
    var priority: Int64
    /// `counts after D visible` (language 1.3): seconds on screen before a presentation counts;
    /// 0: it counts when presented.
    var countsAfter: Double = 0
    /// `defer up to D` (language 1.3): how long a wish refused by a context or a local window
    /// is kept; 0: none is.
    var deferral: Double = 0
    /// `holdout N% "SALT"` of its own and of its group's: the shares and salts of its control arms.
    var holdouts: [(share: Int, salt: String)] = []
    /// Recent times kept in its view of events and of executions.
    var eventKeep: Int
    var executionKeep: Int
    /// Identifies its stream names as a set; a stored view built from other streams is rebuilt.
    var fingerprint: UInt64

    init(name: String, group: Int?, keep: Int) {
        self.name = name
        key = StoreKey.scenario(NameTable.canonical(name))
        keyBytes = CompiledScenario.bytes(of: key)
        streams = []
        clauses = []
        self.group = group
        priority = 0
        eventKeep = keep
        executionKeep = keep
        fingerprint = 0
    }

    deinit { keyBytes.deallocate() }

    /// A copy of `text`'s UTF-8, owned by the caller.
    static func bytes(of text: String) -> UnsafeRawBufferPointer {
        let utf8 = Array(text.utf8)
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: max(utf8.count, 1), alignment: 1)
        copy.copyBytes(from: utf8)
        return UnsafeRawBufferPointer(rebasing: copy[0..<utf8.count])
    }

    /// FNV-1a over the sorted names' bytes, each followed by 0xFF (never in UTF-8).
    static func fingerprint<Names: RandomAccessCollection<String>>(_ streams: Names) -> UInt64
    where Names.Index == Int {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for position in byteOrder(streams) {
            NameTable.withBytes(of: streams[position]) { bytes in
                for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
            }
            hash = (hash ^ 0xFF) &* 0x100_0000_01B3
        }
        return hash
    }

    /// The positions of `names` in the order of their UTF-8 bytes. Sorted on each name's first
    /// eight bytes as one number (zero-padded, big-endian: the same order), the whole names
    /// compared only on a tie. A long list is sorted by those numbers a byte at a time (a
    /// radix sort, skipping bytes every name shares), then each run of equal numbers by the
    /// whole names: a list of 100,000 names sorts without a comparison each.
    static func byteOrder<Names: RandomAccessCollection<String>>(_ names: Names) -> [Int] where Names.Index == Int {
        var keys: [(prefix: UInt64, position: Int)] = names.enumerated().map { position, name in
            NameTable.withBytes(of: name) { bytes in
                var prefix: UInt64 = 0
                for k in 0..<min(8, bytes.count) { prefix |= UInt64(bytes[k]) << UInt64(56 - 8 * k) }
                return (prefix, position)
            }
        }
        func precedes(_ a: (prefix: UInt64, position: Int), _ b: (prefix: UInt64, position: Int)) -> Bool {
            a.prefix != b.prefix
                ? a.prefix < b.prefix : names[a.position].utf8.lexicographicallyPrecedes(names[b.position].utf8)
        }
        guard keys.count > 64 else {
            keys.sort(by: precedes)
            return keys.map(\.position)
        }
        var other = keys
        var counts = [Int](repeating: 0, count: 256)
        for shift in stride(from: UInt64(0), to: 64, by: 8) {
            let moved = keys.withUnsafeBufferPointer { keys in
                other.withUnsafeMutableBufferPointer { other in
                    counts.withUnsafeMutableBufferPointer { counts in
                        counts.update(repeating: 0)
                        for key in keys { counts[Int(truncatingIfNeeded: key.prefix >> shift) & 0xFF] += 1 }
                        if counts.contains(keys.count) { return false }  // every name has this byte
                        var start = 0
                        for k in counts.indices { (counts[k], start) = (start, start + counts[k]) }
                        for key in keys {
                            let digit = Int(truncatingIfNeeded: key.prefix >> shift) & 0xFF
                            other[counts[digit]] = key
                            counts[digit] += 1
                        }
                        return true
                    }
                }
            }
            if moved { swap(&keys, &other) }
        }
        other = []
        var run = 0
        while run < keys.count {
            var end = run + 1
            while end < keys.count && keys[end].prefix == keys[run].prefix { end += 1 }
            if end - run > 1 { keys[run..<end].sort(by: precedes) }
            run = end
        }
        return keys.map(\.position)
    }
}

/// A class for the same reason as ``CompiledScenario``; made whole once its scenarios are known,
/// and never changed.
final class CompiledGroup: Sendable {
    let name: String
    /// Its key in the store: `g:NAME`.
    let key: String
    let clauses: [CompiledClause]
    /// The clauses as declared, for explanations.
    let declared: [Clause]
    let members: [Int]
    let executionKeep: Int

    init(name: String, clauses: [CompiledClause], declared: [Clause], members: [Int], executionKeep: Int) {
        self.name = name
        key = StoreKey.group(NameTable.canonical(name))
        self.clauses = clauses
        self.declared = declared
        self.members = members
        self.executionKeep = executionKeep
    }
}

struct CompiledParam: Sendable {
    var name: String
    /// Its key in the store: `p:NAME`.
    var key: String
    var type: ValueType
    /// Its default, or its type's zero.
    var defaultValue: ParamValue
}

/// The names the `on` clauses of parsed files list, stored in a stream table before the files
/// are checked: an engine does it on another thread while the checker runs, and
/// ``CompiledRules`` then takes each list's slots from here instead of storing 100,000 names
/// itself (`rulebench cold`). Slots are numbered in another order than the compiler's own (all
/// listed names first); nothing depends on their order.
struct ListedStreams: Sendable {
    /// An `on` clause: its file and where it starts.
    struct Key: Hashable {
        let file: ObjectIdentifier
        let offset: Int

        init(_ file: SourceFile, _ offset: Int) {
            self.file = ObjectIdentifier(file)
            self.offset = offset
        }
    }

    var table = StreamTable()
    /// By `on` clause: the slots of its names, in order.
    var slots: [Key: [Int]] = [:]

    init(_ files: [RuleFile]) {
        var lists: [(Key, [Name])] = []
        for file in files {
            let scenarios = file.declarations.flatMap { declaration -> [ScenarioDecl] in
                switch declaration {
                case .scenario(let scenario): [scenario]
                case .group(let group): group.members
                case .param, .event: []
                }
            }
            for clause in scenarios.flatMap(\.clauses) {
                if case .on(let list) = clause.kind { lists.append((Key(file.source, clause.range.lowerBound), list)) }
            }
        }
        table.index.reserveCapacity(lists.reduce(0) { $0 + $1.1.count })
        for (key, list) in lists { slots[key] = list.map { table.slot($0.text) } }
    }
}

/// ``CompiledRules/clauseTables()``.
struct ClauseTables {
    var clauses: [CompiledClause] = []
    var clauseStart: [Int32] = [0]
    var groupOf: [Int32] = []
    /// Each scenario's ``retired`` and ``holdout`` bits, read by every decision without touching
    /// the scenario's object.
    var flags: [UInt8] = []
    static let retired: UInt8 = 1
    static let holdout: UInt8 = 2

    /// Where scenario `index`'s clauses are in ``clauses``.
    func range(ofScenario index: Int) -> Range<Int> { Int(clauseStart[index])..<Int(clauseStart[index + 1]) }

    /// Where group `index`'s clauses are (after every scenario's).
    func range(ofGroup index: Int) -> Range<Int> { range(ofScenario: groupOf.count + index) }
}
