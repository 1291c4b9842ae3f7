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
}

struct CompiledGroup: Sendable {
    var name: String
    var checks: [CompiledCheck]
    var members: [Int]
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
    /// Recent timestamps kept per tally: the API cap, or more when a windowed clause needs it.
    var keep: Int

    init(program: RuleProgram, recentLimit: Int) {
        self.program = program
        self.keep = recentLimit
        var keep = recentLimit
        func compile(_ clauses: [Clause]) -> [CompiledCheck] {
            var checks: [CompiledCheck] = []
            for clause in clauses {
                let text = Printer.clause(clause.kind)
                func needs(_ n: IntLiteral, _ scope: Scope) {
                    if case .within = scope.kind { keep = max(keep, Int(n.value) + 1) }
                }
                switch clause.kind {
                case .minEvents(let n, let scope):
                    needs(n, scope)
                    checks.append(CompiledCheck(kind: .minEvents(n.value, CountScope(scope.kind)), text: text))
                case .maxEvents(let n, let scope):
                    needs(n, scope)
                    checks.append(CompiledCheck(kind: .maxEvents(n.value, CountScope(scope.kind)), text: text))
                case .maxExec(let n, let scope):
                    needs(n, scope)
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
            groups.append(CompiledGroup(name: group.name.text, checks: compile(group.clauses), members: []))
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
            scenarios.append(
                CompiledScenario(
                    name: info.name, streams: streams, checks: compile(info.decl.clauses),
                    group: group, priority: priority))
            if let group { groups[group].members.append(index) }
            for stream in streams { listeners[stream, default: []].append(index) }
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
        self.keep = keep
    }
}
