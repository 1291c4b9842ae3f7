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
    case scenarioExecutions(Int, CountScope)
    case groupExecutions(Int, CountScope)
    case sinceFirst(slot: Int)
    case sinceLast(slot: Int)
    /// `active_days(EVENT within D)`: D in days.
    case activeDays(slot: Int, days: Int64)
    case todo(String)
    /// ``BuiltinValue/upgraded``.
    case upgraded
}

/// What a trigger needs of a scenario counting its stream.
struct TriggerInfo {
    /// Recent times its view of events keeps.
    var eventKeep: Int
    /// It counts this one stream only (its view may then be stored as the stream's).
    var countsOneStream: Bool
    /// Its store key's UTF-8, owned by the ``CompiledScenario``.
    var key: UnsafeRawBufferPointer
}

/// A class: the engine reads a scenario's fields on every call, and reading them through a
/// reference copies nothing. Built by ``CompiledRules/init(program:recentLimit:)``, then never changed.
final class CompiledScenario: @unchecked Sendable {
    // Written only while ``CompiledRules`` is built: reads skip the run-time exclusivity checks.
    let name: String
    /// Its key in the store: `s:NAME`.
    let key: String
    /// `retired scenario NAME`: it answers no; its history is kept.
    @exclusivity(unchecked) var retired = false
    /// `key`'s UTF-8, for the record every call writes (no reference counting on the way).
    let keyBytes: UnsafeRawBufferPointer
    /// The slots of the streams it counts: its `on` list, or its own name.
    @exclusivity(unchecked) var streams: [Int]
    @exclusivity(unchecked) var clauses: [CompiledClause]
    /// The clauses as declared (`on` and `priority` included), for explanations.
    @exclusivity(unchecked) var declared: [Clause] = []
    @exclusivity(unchecked) var group: Int?
    @exclusivity(unchecked) var priority: Int64
    /// Recent times kept in its view of events and of executions.
    @exclusivity(unchecked) var eventKeep: Int
    @exclusivity(unchecked) var executionKeep: Int
    /// Identifies its stream names as a set; a stored view built from other streams is rebuilt.
    @exclusivity(unchecked) var fingerprint: UInt64

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

/// A class for the same reason as ``CompiledScenario``.
final class CompiledGroup: @unchecked Sendable {
    // Written only while ``CompiledRules`` is built: reads skip the run-time exclusivity checks.
    let name: String
    /// Its key in the store: `g:NAME`.
    let key: String
    @exclusivity(unchecked) var clauses: [CompiledClause] = []
    /// The clauses as declared, for explanations.
    @exclusivity(unchecked) var declared: [Clause] = []
    @exclusivity(unchecked) var members: [Int] = []
    @exclusivity(unchecked) var executionKeep: Int

    init(name: String, keep: Int) {
        self.name = name
        key = StoreKey.group(NameTable.canonical(name))
        executionKeep = keep
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

/// The streams the engine knows, by slot: those the rules name first, then any the app
/// triggers. A slot never changes, so compiled rules and handles can hold it.
struct StreamTable: Sendable {
    /// Name to slot; slot `n` is the `n`th name stored, so the names are kept there only.
    var index = NameTable()

    var count: Int { index.count }

    /// The name of the stream in `slot`.
    func name(_ slot: Int) -> String { index.name(at: slot) }

    /// Every stream's name, by slot.
    var names: [String] { index.names }

    /// The slot of stream `name`, made if new.
    mutating func slot(_ name: String) -> Int { index.insert(name) }

    /// The slot of the stream named by the UTF-8 `bytes`, made if new.
    mutating func slot(bytes: UnsafeRawBufferPointer) -> Int {
        index.position(of: bytes) ?? index.insert(String(decoding: bytes, as: UTF8.self))
    }
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

    /// Where scenario `index`'s clauses are in ``clauses``.
    func range(ofScenario index: Int) -> Range<Int> { Int(clauseStart[index])..<Int(clauseStart[index + 1]) }

    /// Where group `index`'s clauses are (after every scenario's).
    func range(ofGroup index: Int) -> Range<Int> { range(ofScenario: groupOf.count + index) }
}

/// A checked program lowered to tables indexed by number: the engine evaluates it
/// without looking up a name. Built once and never changed after `init` (a class, so
/// reading it copies nothing). Its tables are written only while `init` runs, so they skip the
/// run-time exclusivity checks every read of a class's `var` would otherwise pay.
final class CompiledRules: @unchecked Sendable {
    let program: RuleProgram
    @exclusivity(unchecked) private(set) var scenarios: [CompiledScenario] = []
    let scenarioIndex: NameTable
    /// Former names (`was`) that no declaration uses now, to the scenario, group or param that
    /// carries them (an app built against older rules still calls them), and for events the
    /// stream's name now.
    private(set) var formerScenarios: [String: Int] = [:]
    private(set) var formerGroups: [String: Int] = [:]
    private(set) var formerParams: [String: Int] = [:]
    private(set) var formerStreams: [String: String] = [:]
    @exclusivity(unchecked) private(set) var groups: [CompiledGroup] = []
    let groupIndex: NameTable
    @exclusivity(unchecked) private(set) var params: [CompiledParam] = []
    let paramIndex: NameTable
    @exclusivity(unchecked) private(set) var conditions: [CompiledExpr] = []
    /// By slot: true for a stream whose local days are kept (empty when no rule counts days).
    @exclusivity(unchecked) private(set) var dayCounted: [Bool] = []
    /// The gaps of each `between` with several, in seconds.
    @exclusivity(unchecked) private(set) var gapLists: [[Double]] = []

    /// Every scenario's clauses in one array (scenario `i`'s are
    /// `clauses[clauseStart[i]..<clauseStart[i + 1]]`), then every group's (group `g`'s from
    /// `clauseStart[scenarios.count + g]`), and each scenario's group (-1: none): what an answer
    /// reads on every call, in arrays holding no references.
    func clauseTables() -> ClauseTables {
        var tables = ClauseTables()
        for clauses in scenarios.map(\.clauses) + groups.map(\.clauses) {
            tables.clauses += clauses
            tables.clauseStart.append(Int32(tables.clauses.count))
        }
        tables.groupOf = scenarios.map { Int32($0.group ?? -1) }
        return tables
    }

    /// The gap that applies after `executions` executions (none before the first): the list's
    /// entry for that execution, or its last entry after as many or more.
    func gap(_ list: Int, after executions: Int64) -> (seconds: Double, position: Int)? {
        guard executions > 0, !gapLists[list].isEmpty else { return nil }
        let position = Int(min(executions, Int64(gapLists[list].count))) - 1
        return (gapLists[list][position], position)
    }
    /// The streams the rules name; slot `i` of every engine is `streams.names[i]`.
    @exclusivity(unchecked) private(set) var streams = StreamTable()
    /// By slot: the scenarios counting the stream, `listenerList[listenerStart[slot]..<listenerStart[slot + 1]]`
    /// (one list for all: no array per stream), and the recent times it keeps.
    @exclusivity(unchecked) private(set) var listenerStart: [Int32] = [0]
    @exclusivity(unchecked) private(set) var listenerList: [Int32] = []
    @exclusivity(unchecked) private(set) var streamKeep: [Int] = []
    /// By scenario: what a trigger reads, in plain values (no reference counting on its way).
    @exclusivity(unchecked) private(set) var triggerInfo: [TriggerInfo] = []
    /// Recent timestamps kept per tally: the API cap, or more for a tally that a windowed
    /// clause counts. Each tally keeps only what its own clauses need.
    let recentLimit: Int

    /// Scenarios whose fingerprints ``fingerprintInBackground()`` is still to compute.
    private var pendingFingerprints: [Int] = []
    /// An `on` list this long or longer may have its fingerprint computed later.
    static let longList = 4_096

    /// Lowers `program`. With `fingerprintsLater`, the fingerprints of scenarios counting at
    /// least ``longList`` streams are left for ``fingerprintInBackground()``, whose call
    /// must come before anything reads them. With `listed`, the program's `on` lists take
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
        for group in program.groups {
            groupIndex.insert(group.name.text)
            groups.append(
                CompiledGroup(name: group.name.text, keep: recentLimit))
        }
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
        for (index, group) in program.groups.enumerated() {
            var (events, executions) = (recentLimit, recentLimit)
            groups[index].clauses = compile(group.clauses, &events, &executions)
            groups[index].declared = group.clauses
            groups[index].executionKeep = executions
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
            scenarios[index].clauses = compile(clauses, &events, &executions)
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
            if let group = scenarios[index].group { groups[group].members.append(index) }
        }
        // Declared events are known streams even when no rule counts them (``RuleEngine/unknownNames``).
        for name in program.events { _ = streams.slot(name.text) }
        for rename in program.renames where rename.kind == .event {
            for former in rename.formerNames.map(\.text) where streams.index[former] == nil {
                formerStreams[former] = rename.name.text
            }
        }
        streamKeep = Array(repeating: recentLimit, count: streams.count)
        var counts = [Int32](repeating: 0, count: streams.count + 1)
        for scenario in scenarios {
            for slot in scenario.streams {
                counts[slot + 1] += 1
                streamKeep[slot] = max(streamKeep[slot], scenario.eventKeep)
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
    /// waits for them and stores them (nothing to do when none were left).
    func fingerprintInBackground() -> () -> Void {
        guard !pendingFingerprints.isEmpty else { return {} }
        let table = streams
        let lists = pendingFingerprints.map { scenarios[$0].streams }
        let work = BackgroundWork {
            lists.map { slots in CompiledScenario.fingerprint(slots.lazy.map { table.name($0) }) }
        }
        return { [self] in
            for (index, fingerprint) in zip(pendingFingerprints, work.wait()) {
                scenarios[index].fingerprint = fingerprint
            }
            pendingFingerprints = []
        }
    }

    /// The scenarios counting the stream in `slot`, in declaration order (none for a slot the
    /// rules do not name).
    func listeners(_ slot: Int) -> [Int] {
        guard slot + 1 < listenerStart.count else { return [] }
        return listenerList[Int(listenerStart[slot])..<Int(listenerStart[slot + 1])].map { Int($0) }
    }

    /// Lowers clauses, raising `events` and `executions` to what windowed clauses need.
    private func compile(
        _ clauses: [Clause], _ events: inout Int, _ executions: inout Int
    ) -> [CompiledClause] {
        var compiled: [CompiledClause] = []
        compiled.reserveCapacity(clauses.count)
        func needs(_ n: IntLiteral, _ scope: Scope, _ keep: inout Int) {
            if case .within = scope.kind {
                keep = max(keep, Int(min(max(n.value, 0), Limits.maxWindowedThreshold)) + 1)
            }
        }
        for clause in clauses {
            let lowered: CompiledClause
            switch clause.kind {
            case .minEvents(let n, let scope):
                needs(n, scope, &events)
                lowered = .minEvents(n.value, CountScope(scope.kind))
            case .maxEvents(let n, let scope):
                needs(n, scope, &events)
                lowered = .maxEvents(n.value, CountScope(scope.kind))
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
                lowered = .when(conditions.count - 1)
            case .on, .priority: continue
            }
            compiled.append(lowered)
        }
        return compiled
    }

    /// The canonical text of each clause `compile` lowers (all but `on` and `priority`), in order.
    static func texts(of declared: [Clause]) -> [String] {
        declared.compactMap { clause in
            switch clause.kind {
            case .on, .priority: return nil
            default: return Printer.clause(clause.kind)
            }
        }
    }

    /// Lowers an expression checked against `rules.program`; `slot` gives each stream's slot.
    /// A name the checker would have refused (only possible for an unchecked expression) is `false`.
    static func lower(_ expr: Expr, _ rules: CompiledRules, slot: (String) -> Int) -> CompiledExpr {
        func lower(_ expr: Expr) -> CompiledExpr {
            switch expr.kind {
            case .integer(let value): return .constant(.int(value))
            case .duration(let seconds): return .constant(.duration(Double(seconds)))
            case .string(let text): return .constant(.string(text))
            case .bool(let flag): return .constant(.bool(flag))
            case .name(let name):
                if let index = rules.paramIndex[name] { return .param(index) }
                switch BuiltinValue(rawValue: name) {
                case .upgraded?: return .upgraded
                case nil: return .constant(.bool(false))
                }
            case .parenthesized(let inner): return lower(inner)
            case .unary(_, let operand): return .not(lower(operand))
            case .binary(.and, let left, let right): return .and(lower(left), lower(right))
            case .binary(.or, let left, let right): return .or(lower(left), lower(right))
            case .binary(let op, let left, let right): return .compare(op, lower(left), lower(right))
            case .call(let function, let argument, let scope):
                let scope = scope.map { CountScope($0.kind) } ?? .install
                switch BuiltinFunction(rawValue: function.text) {
                case .count?: return .count(slot: slot(argument.text), scope)
                case .executions?:
                    if let index = rules.scenarioIndex[argument.text] { return .scenarioExecutions(index, scope) }
                    if let index = rules.groupIndex[argument.text] { return .groupExecutions(index, scope) }
                    return .constant(.int(0))
                case .sinceFirst?: return .sinceFirst(slot: slot(argument.text))
                case .sinceLast?: return .sinceLast(slot: slot(argument.text))
                case .activeDays?:
                    guard case .within(let seconds) = scope else { return .constant(.int(0)) }
                    return .activeDays(slot: slot(argument.text), days: Int64(seconds / 86_400))
                case .todo?:
                    _ = slot(argument.text)  // a known name for markDone (``RuleEngine/unknownNames``)
                    return .todo(argument.text)
                case nil: return .constant(.bool(false))
                }
            case .invalid: return .constant(.bool(false))
            }
        }
        return lower(expr)
    }
}
