import RuleLang

/// A checked program lowered to tables indexed by number: the engine evaluates it
/// without looking up a name. A class, so that reading it copies nothing; every table is a
/// `let`, made by a ``Builder`` first (checked `Sendable`: until 2026-11-28 the tables were
/// `var`s filled by `init` step by step, with the fingerprints of long `on` lists stored after
/// `init`, under `@unchecked Sendable`, which bought no speed). They carried
/// `@exclusivity(unchecked)` until 2026-11-27, when paired `rulebench` runs without it read the
/// same or better (`try_no_vs_limit` 1.03-1.11x against 1.08-1.18x, `trigger_file_vs_write`
/// 1.82-1.96x against 1.95-2.07x, `check_vs_jsondecoder` and the cold lines within their noise).
final class CompiledRules: Sendable {
    let program: RuleProgram
    let scenarios: [CompiledScenario]
    let scenarioIndex: NameTable
    /// Former names (`was`) that no declaration uses now, to the scenario, group or param that
    /// carries them (an app built against older rules still calls them), and for events the
    /// stream's name now.
    let formerScenarios: [String: Int]
    let formerGroups: [String: Int]
    let formerParams: [String: Int]
    let formerStreams: [String: String]
    let groups: [CompiledGroup]
    let groupIndex: NameTable
    let params: [CompiledParam]
    let paramIndex: NameTable
    let conditions: [CompiledExpr]
    /// By slot: true for a stream whose local days are kept (empty when no rule counts days).
    let dayCounted: [Bool]
    /// The gaps of each `between` with several, in seconds.
    let gapLists: [[Double]]
    /// True when a condition reads `bucket`: the engine then keeps an install id.
    let readsBuckets: Bool
    /// The filtered streams (``StreamFilter``): by event slot, the positions of its filters are
    /// `filterOrder[filterStart[slot]..<filterStart[slot + 1]]` (``filterPositions(ofEvent:)``).
    let filters: [StreamFilter]
    private let filterStart: [Int32]
    private let filterOrder: [Int32]
    /// By scenario: the to-do that a presentation of it holds, `@showing:GROUP` (or
    /// `@showing:SCENARIO` outside a group). Every scenario of a group shares its group's.
    let holdKeys: [String]
    /// The contexts the rules name (`in`, `not in`), by index, and each clause's list of them.
    let contextNames: [String]
    let contextIndex: [String: Int]
    let contextLists: [Int32]
    /// By scenario: its hold's store key, `t:@showing:GROUP`.
    let holdStoreKeys: [String]

    /// The streams the rules name; slot `i` of every engine is `streams.names[i]`.
    let streams: StreamTable
    /// By slot: the scenarios counting the stream, `listenerList[listenerStart[slot]..<listenerStart[slot + 1]]`
    /// (one list for all: no array per stream), and the recent times it keeps.
    let listenerStart: [Int32]
    let listenerList: [Int32]
    let streamKeep: [Int32]
    /// By scenario: what a trigger reads, in plain values (no reference counting on its way).
    let triggerInfo: [TriggerInfo]
    /// Recent timestamps kept per tally: the API cap, or more for a tally that a windowed
    /// clause counts. Each tally keeps only what its own clauses need.
    let recentLimit: Int

    /// The prefix of a presentation's hold: a to-do of the engine's own.
    static let holdPrefix = "@showing:"
    /// An `on` list this long or longer may have its fingerprint computed later.
    static let longList = 4_096

    /// The rules `built` made; its tables are not changed again.
    init(_ built: Builder) {
        program = built.program
        scenarios = built.scenarios
        scenarioIndex = built.scenarioIndex
        formerScenarios = built.formerScenarios
        formerGroups = built.formerGroups
        formerParams = built.formerParams
        formerStreams = built.formerStreams
        groups = built.groups
        groupIndex = built.groupIndex
        params = built.params
        paramIndex = built.paramIndex
        conditions = built.conditions
        dayCounted = built.dayCounted
        gapLists = built.gapLists
        // A holdout reads the install's bucket as `bucket` does: both need the install's id.
        readsBuckets = built.readsBuckets || built.scenarios.contains { !$0.holdouts.isEmpty }
        filters = built.filters
        filterStart = built.filterStart
        filterOrder = built.filterOrder
        holdKeys = built.holdKeys
        contextNames = built.contextNames
        contextIndex = built.contextIndex
        contextLists = built.contextLists
        holdStoreKeys = built.holdStoreKeys
        streams = built.streams
        listenerStart = built.listenerStart
        listenerList = built.listenerList
        streamKeep = built.streamKeep
        triggerInfo = built.triggerInfo
        recentLimit = built.recentLimit
    }

    /// Lowers `program` at once. With `listed`, the program's `on` lists take their slots from
    /// there (made from the same files) instead of storing their names again.
    convenience init(program: RuleProgram, recentLimit: Int, listed: ListedStreams? = nil) {
        self.init(Builder(program: program, recentLimit: recentLimit, listed: listed))
    }

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
        tables.flags = scenarios.map {
            ($0.retired ? ClauseTables.retired : 0) | ($0.holdouts.isEmpty ? 0 : ClauseTables.holdout)
        }
        return tables
    }

    /// The gap that applies after `executions` executions (none before the first): the list's
    /// entry for that execution, or its last entry after as many or more.
    func gap(_ list: Int, after executions: Int64) -> (seconds: Double, position: Int)? {
        guard executions > 0, !gapLists[list].isEmpty else { return nil }
        let position = Int(min(executions, Int64(gapLists[list].count))) - 1
        return (gapLists[list][position], position)
    }
    /// The scenarios counting the stream in `slot`, in declaration order (none for a slot the
    /// rules do not name).
    func listeners(_ slot: Int) -> [Int] {
        guard slot + 1 < listenerStart.count else { return [] }
        return listenerList[Int(listenerStart[slot])..<Int(listenerStart[slot + 1])].map { Int($0) }
    }

    /// The positions in ``filters`` of event `slot`'s filters, in the order they were added (a
    /// slice of the index: no closure made per trigger, as a lazy map of a range made one).
    @inline(__always)
    func filterPositions(ofEvent slot: Int) -> ArraySlice<Int32> {
        guard slot + 1 < filterStart.count else { return [] }
        return filterOrder[Int(filterStart[slot])..<Int(filterStart[slot + 1])]
    }

    /// The filters and sums these rules read of `event` (`count(EVENT where ...)`, `sum(EVENT.P)`).
    func filters(of event: String) -> [StreamFilter] {
        guard let slot = streams.index[event] else { return [] }
        return filterPositions(ofEvent: slot).map { filters[Int($0)] }
    }

    /// The canonical text of each clause `compile` lowers (all but `on` and `priority`), in order.
    static func texts(of declared: [Clause]) -> [String] {
        declared.compactMap { clause in
            switch clause.kind {
            case .on, .priority, .holdout, .countsAfter, .deferral: return nil
            default: return Printer.clause(clause.kind)
            }
        }
    }
}
