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
        let renames = rules.program.renames
        if renames.isEmpty { return [] }
        var changes: [StoreChange] = []
        var movedViews: [String] = []
        /// New stream name to the old one it took the history of.
        var movedStreams: [String: String] = [:]

        func isStored(_ stream: String) -> Bool {
            guard let slot = streams.index[stream] else { return false }
            return slot < storedStreams.count && storedStreams[slot]
        }
        func moveStream(to new: String, from formers: [String]) {
            guard !isStored(new), let old = formers.first(where: isStored) else { return }
            let from = streams.index[old]!
            let to = streams.slot(new)
            while tallies.count <= to { tallies.append() }
            while storedStreams.count <= to { storedStreams.append(false) }
            tallies[to] = tallies[from]
            tallies[from] = Tally()
            storedStreams[to] = true
            storedStreams[from] = false
            changes.append(EngineState.change(key: "e:" + new, tallies[to]))
            changes.append(StoreChange(key: "e:" + old, value: nil))
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
        }

        for rename in renames {
            let new = rename.name.text
            let formers = rename.formerNames.map(\.text)
            switch rename.kind {
            case .event:
                moveStream(to: new, from: formers)
            case .scenario:
                guard scenarios[new] == nil, let old = formers.first(where: { scenarios[$0] != nil }) else { break }
                scenarios[new] = scenarios.removeValue(forKey: old)
                changes.append(StoreChange(key: "s:" + old, value: nil))
                movedViews.append(new)
                if rename.countsOwnStream { moveStream(to: new, from: [old]) }
            case .group:
                guard groups[new] == nil, let old = formers.first(where: { groups[$0] != nil }) else { break }
                groups[new] = groups.removeValue(forKey: old)
                changes.append(EngineState.change(key: "g:" + new, groups[new]))
                changes.append(StoreChange(key: "g:" + old, value: nil))
            case .param:
                guard params[new] == nil, let old = formers.first(where: { params[$0] != nil }) else { break }
                params[new] = params.removeValue(forKey: old)
                changes.append(EngineState.change(key: "p:" + new, params[new]))
                changes.append(StoreChange(key: "p:" + old, value: nil))
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
            changes.append(EngineState.change(key: "s:" + name, scenarios[name]))
        }
        return changes
    }
}
