import RuleLang

/// One clause ready to evaluate, with its canonical text for explanations.
struct CompiledCheck: Sendable {
    enum Kind: Sendable {
        case minEvents(Int64, CountScope)
        case maxEvents(Int64, CountScope)
        case maxExec(Int64, CountScope)
        case sinceFirst(Double)
        case sinceLast(Double)
        case between(Double)
        case when(Expr)
    }

    var kind: Kind
    var text: String
}

struct CompiledScenario: Sendable {
    var name: String
    /// The event streams it counts: its `on` list, or its own name.
    var streams: [String]
    var checks: [CompiledCheck]
    var group: Int?
    var priority: Int64
    /// Recent times kept in its view of events and of executions.
    var eventKeep: Int
    var executionKeep: Int
    /// Identifies `streams` as a set; a stored view built from other streams is rebuilt.
    var fingerprint: UInt64

    /// FNV-1a over the sorted names' bytes, each followed by 0xFF (never in UTF-8).
    static func fingerprint(_ streams: [String]) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for name in streams.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
            hash = (hash ^ 0xFF) &* 0x100_0000_01B3
        }
        return hash
    }
}

struct CompiledGroup: Sendable {
    var name: String
    var checks: [CompiledCheck]
    var members: [Int]
    var executionKeep: Int
}

/// A checked program turned into tables the engine evaluates quickly.
struct CompiledRules: Sendable {
    var program: RuleProgram
    var scenarios: [CompiledScenario] = []
    var scenarioIndex: [String: Int] = [:]
    var groups: [CompiledGroup] = []
    var groupIndex: [String: Int] = [:]
    var paramTypes: [String: ValueType] = [:]
    var paramDefaults: [String: ParamValue] = [:]
    /// Stream name to the scenarios that count it.
    var listeners: [String: [Int]] = [:]
    /// Recent timestamps kept per tally: the API cap (`recentLimit`), or more for a
    /// tally that a windowed clause counts. Each tally keeps only what its own clauses need.
    var recentLimit: Int
    var streamKeep: [String: Int] = [:]

    /// Recent times kept for stream `name`.
    func keep(stream name: String) -> Int { streamKeep[name] ?? recentLimit }

    init(program: RuleProgram, recentLimit: Int) {
        self.program = program
        self.recentLimit = recentLimit
        var eventNeeds = recentLimit
        var executionNeeds = recentLimit
        func compile(_ clauses: [Clause]) -> [CompiledCheck] {
            var checks: [CompiledCheck] = []
            for clause in clauses {
                let text = Printer.clause(clause.kind)
                func needs(_ n: IntLiteral, _ scope: Scope, _ keep: inout Int) {
                    if case .within = scope.kind {
                        keep = max(keep, Int(min(max(n.value, 0), Limits.maxWindowedThreshold)) + 1)
                    }
                }
                switch clause.kind {
                case .minEvents(let n, let scope):
                    needs(n, scope, &eventNeeds)
                    checks.append(CompiledCheck(kind: .minEvents(n.value, CountScope(scope.kind)), text: text))
                case .maxEvents(let n, let scope):
                    needs(n, scope, &eventNeeds)
                    checks.append(CompiledCheck(kind: .maxEvents(n.value, CountScope(scope.kind)), text: text))
                case .maxExec(let n, let scope):
                    needs(n, scope, &executionNeeds)
                    checks.append(CompiledCheck(kind: .maxExec(n.value, CountScope(scope.kind)), text: text))
                case .sinceFirst(let d): checks.append(CompiledCheck(kind: .sinceFirst(Double(d.seconds)), text: text))
                case .sinceLast(let d): checks.append(CompiledCheck(kind: .sinceLast(Double(d.seconds)), text: text))
                case .between(let d): checks.append(CompiledCheck(kind: .between(Double(d.seconds)), text: text))
                case .when(let expr): checks.append(CompiledCheck(kind: .when(expr), text: text))
                case .on, .priority: break
                }
            }
            return checks
        }
        for group in program.groups {
            groupIndex[group.name.text] = groups.count
            executionNeeds = recentLimit
            let checks = compile(group.clauses)
            groups.append(
                CompiledGroup(name: group.name.text, checks: checks, members: [], executionKeep: executionNeeds))
        }
        for info in program.scenarios {
            var streams = [info.name]
            var priority: Int64 = 0
            for clause in info.decl.clauses {
                if case .on(let names) = clause.kind { streams = names.map(\.text) }
                if case .priority(let n) = clause.kind { priority = n.value }
            }
            var seen = Set<String>()
            streams = streams.filter { seen.insert($0).inserted }
            let index = scenarios.count
            let group = info.group.flatMap { [groupIndex] in groupIndex[$0] }
            scenarioIndex[info.name] = index
            (eventNeeds, executionNeeds) = (recentLimit, recentLimit)
            let checks = compile(info.decl.clauses)
            scenarios.append(
                CompiledScenario(
                    name: info.name, streams: streams, checks: checks, group: group, priority: priority,
                    eventKeep: eventNeeds, executionKeep: executionNeeds,
                    fingerprint: CompiledScenario.fingerprint(streams)))
            if let group { groups[group].members.append(index) }
            for stream in streams {
                listeners[stream, default: []].append(index)
                if eventNeeds > recentLimit { streamKeep[stream] = max(streamKeep[stream] ?? 0, eventNeeds) }
            }
        }
        for param in program.params {
            guard let type = param.type else { continue }
            paramTypes[param.name.text] = type
            var value = ParamValue.zero(type)
            switch param.defaultValue?.kind {
            case .integer(let n)?: value = type == .duration ? .duration(Double(n)) : .int(n)  // `= 0`
            case .duration(let seconds)?: value = .duration(Double(seconds))
            case .string(let text)?: value = .string(text)
            case .bool(let flag)?: value = .bool(flag)
            default: break
            }
            paramDefaults[param.name.text] = value
        }
    }
}
