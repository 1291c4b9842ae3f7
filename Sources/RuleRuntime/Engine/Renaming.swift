import RuleLang

extension EngineState {
    /// Moves stored history from former names to the names that claim them with `was`
    /// (grammar.md, "Renames"), in memory, and returns the changes that store the move: the
    /// caller writes them as one record, so a process killed at any moment leaves each history
    /// under exactly one of its names.
    ///
    /// A name that already has stored history keeps it (nothing moves onto it); otherwise the
    /// first former name, in the order written, that has stored history moves. A scenario that
    /// counts its own stream (no `on`) takes its old stream's history with it. When a stream
    /// moves, every stored view is written again in full (none may refer to the old stream's
    /// name), and a view built from the streams under their old names keeps counting as built
    /// from them.
    mutating func moveRenamed(_ rules: CompiledRules) -> [StoreChange] {
        var moves = rules.program.renames.map {
            Move(
                kind: $0.kind, name: $0.name.text, formers: $0.formerNames.map(\.text),
                countsOwnStream: $0.countsOwnStream)
        }
        moves += movesBack(rules)
        if moves.isEmpty { return [] }
        var changes: [StoreChange] = []
        var movedViews: [String] = []
        /// New stream name to the old one it took the history of.
        var movedStreams: [String: String] = [:]

        func isStored(_ stream: String) -> Bool {
            guard let slot = streams.index[stream] else { return false }
            return slot < storedStreams.count && storedStreams[slot]
        }
        @discardableResult
        func moveStream(to new: String, from formers: [String]) -> String? {
            guard !isStored(new), let old = formers.first(where: isStored) else { return nil }
            let from = streams.index[old]!
            let to = streams.slot(new)
            while tallies.count <= to { tallies.append() }
            while storedStreams.count <= to { storedStreams.append(false) }
            tallies[to] = tallies[from]
            tallies[from] = Tally()
            storedStreams[to] = true
            storedStreams[from] = false
            changes.append(EngineState.change(key: StoreKey.stream(new), tallies[to]))
            changes.append(StoreChange(key: StoreKey.stream(old), value: nil))
            if days[new] == nil, let bits = days.removeValue(forKey: old) {
                days[new] = bits
                changes.append(EngineState.change(daysOf: new, bits))
                changes.append(EngineState.change(daysOf: old, nil))
            }
            movedStreams[new] = old
            // A tag's to-do (the Ecno vocabulary) goes with its stream.
            if todos[new] == nil, let item = todos.removeValue(forKey: old) {
                todos[new] = item
                changes.append(EngineState.change(todo: new, item))
                changes.append(EngineState.change(todo: old, nil))
            }
            return old
        }

        // Each rename these rules declare is recorded in the state (entry `w:KIND:NEW`, the
        // former names, newest first), whether or not history moved now: rules that know only a
        // former name find the history again (``movesBack(_:)``), also history begun under the
        // new name.
        for rename in moves where !rename.back {
            let key = EngineState.renameKey(rename.kind, rename.name)
            let formers = rename.formers.joined(separator: "\n")
            if renamed[key] != formers {
                renamed[key] = formers
                changes.append(EngineState.change(rename: key, was: formers))
            }
        }

        for rename in moves {
            let new = rename.name
            let formers = rename.formers
            switch rename.kind {
            case .event:
                moveStream(to: new, from: formers)
                // Its filtered streams (`count(EVENT where ...)`) go with it, filter by filter.
                for filter in rules.filters(of: new) {
                    moveStream(to: filter.streamName(of: new), from: formers.map { filter.streamName(of: $0) })
                }
            case .scenario:
                // Its outcomes (language 1.2) go with it, each kind from the first former name
                // that has some, whether or not its view moves.
                for outcome in Outcome.allCases {
                    moveStream(
                        to: EngineStream.outcome(outcome, of: new),
                        from: formers.map { EngineStream.outcome(outcome, of: $0) })
                }
                moveStream(to: EngineStream.control(of: new), from: formers.map { EngineStream.control(of: $0) })
                guard scenarios[new] == nil, let old = formers.first(where: { scenarios[$0] != nil }) else { break }
                scenarios[new] = scenarios.removeValue(forKey: old)
                changes.append(StoreChange(key: StoreKey.scenario(old), value: nil))
                movedViews.append(new)
                if rename.countsOwnStream { moveStream(to: new, from: [old]) }
            case .group:
                guard groups[new] == nil, let old = formers.first(where: { groups[$0] != nil }) else { break }
                groups[new] = groups.removeValue(forKey: old)
                changes.append(EngineState.change(key: StoreKey.group(new), groups[new]))
                changes.append(StoreChange(key: StoreKey.group(old), value: nil))
            case .param:
                guard params[new] == nil, let old = formers.first(where: { params[$0] != nil }) else { break }
                params[new] = params.removeValue(forKey: old)
                changes.append(EngineState.change(key: StoreKey.param(new), params[new]))
                changes.append(StoreChange(key: StoreKey.param(old), value: nil))
            }
        }
        if !movedStreams.isEmpty {
            // A view built from the streams under their former names was built from these.
            for (index, scenario) in rules.scenarios.enumerated() {
                guard let view = scenarios[scenario.name], let from = view.streams, from != scenario.fingerprint
                else { continue }
                let names = scenario.streams.map { rules.streams.name($0) }
                if CompiledScenario.fingerprint(names.map { movedStreams[$0] ?? $0 }) == from {
                    scenarios[rules.scenarios[index].name]?.streams = scenario.fingerprint
                }
            }
            movedViews = Array(scenarios.keys)
        }
        for name in Set(movedViews).sorted() {
            changes.append(EngineState.change(key: StoreKey.scenario(name), scenarios[name]))
        }
        return changes
    }

    /// One move of history: to `name` from the first of `formers` that has some.
    struct Move {
        var kind: RenameKind
        var name: String
        var formers: [String]
        var countsOwnStream: Bool
        /// A move back to a former name (rules older than the rename): not recorded again.
        var back = false
    }

    /// The renames the state records whose new name these rules do not know while they know
    /// one of its former ones (the bundled rules after a delivered rename, a downgrade, a swap back):
    /// each moves the history back to the name these rules use. The record stays, so that rules
    /// with the rename move it forward again.
    func movesBack(_ rules: CompiledRules) -> [Move] {
        var moves: [Move] = []
        for (key, formers) in renamed.sorted(by: { $0.key < $1.key }) {
            guard let (kind, new, old) = EngineState.renameBack(key, formers, for: rules) else { continue }
            var countsOwnStream = false
            if kind == .scenario, let index = rules.scenarioIndex[old] {
                countsOwnStream = rules.scenarios[index].streams == [rules.streams.index[old] ?? -1]
            }
            moves.append(Move(kind: kind, name: old, formers: [new], countsOwnStream: countsOwnStream, back: true))
        }
        return moves
    }

    /// The rename record `key` (former names `formers`, newest first) read by `rules` that do
    /// not know its new name while they know a former one: the kind, the new name and the first
    /// former name the rules know; nil otherwise.
    static func renameBack(_ key: String, _ formers: String, for rules: CompiledRules) -> (
        kind: RenameKind, new: String, old: String
    )? {
        guard let (kind, new) = parseRenameKey(key) else { return nil }
        let knows: (String) -> Bool
        switch kind {
        case .scenario: knows = { rules.scenarioIndex[$0] != nil }
        case .group: knows = { rules.groupIndex[$0] != nil }
        case .param: knows = { rules.paramIndex[$0] != nil }
        case .event: knows = { rules.streams.index[$0] != nil }
        }
        guard !knows(new), let old = formers.split(separator: "\n").map(String.init).first(where: knows) else {
            return nil
        }
        return (kind, new, old)
    }

    /// `w:KIND:NEW`, the key of a rename record (its value: the former names, newest first, one
    /// a line).
    static func renameKey(_ kind: RenameKind, _ new: String) -> String {
        let stored: StoreKey.Kind
        switch kind {
        case .scenario: stored = .scenario
        case .group: stored = .group
        case .param: stored = .param
        case .event: stored = .stream
        }
        return StoreKey.rename(stored, new)
    }

    static func parseRenameKey(_ key: String) -> (RenameKind, String)? {
        guard let (kind, name) = StoreKey.parseRename(key) else { return nil }
        switch kind {
        case .scenario: return (.scenario, name)
        case .group: return (.group, name)
        case .param: return (.param, name)
        case .stream: return (.event, name)
        default: return nil
        }
    }

    /// A rename record's entry.
    static func change(rename key: String, was old: String) -> StoreChange {
        StoreChange(key: key, value: encode { $0.string(old) })
    }
}
