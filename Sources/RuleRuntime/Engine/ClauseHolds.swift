/// What a clause other than `when` means for a scenario's view: the engine's fast path
/// (``EngineCore/assess(_:events:executions:now:detailed:)`` gives the same answers with their details).
extension ScenarioState {
    /// Whether `clause` (any but `when`) holds for this view at `time`.
    @inline(__always)
    func holds(_ clause: CompiledClause, now time: Double, in epoch: Epoch) -> Bool {
        Self.holds(clause, events: events, executions: executions, now: time, in: epoch)
    }

    /// Whether `clause` (any but `when`) holds for these tallies at `time`. Ages are never
    /// negative. ``EngineCore/assess(_:events:executions:now:detailed:)`` gives the same
    /// answers with their details.
    @inline(__always)
    static func holds(
        _ clause: CompiledClause, events: Tally, executions: Tally, now time: Double, in epoch: Epoch
    ) -> Bool {
        switch clause {
        case .minEvents(let n, let scope): return events.count(scope, now: time, in: epoch) >= n
        case .maxEvents(let n, let scope): return events.count(scope, now: time, in: epoch) <= n
        case .maxExec(let n, let scope): return executions.count(scope, now: time, in: epoch) < n
        case .sinceFirst(let d):
            guard let first = events.first else { return false }
            return Swift.max(0, time - first) >= d
        case .sinceLast(let d):
            guard let last = events.last else { return true }
            return Swift.max(0, time - last) >= d
        case .between(let d):
            guard let last = executions.last else { return true }
            return Swift.max(0, time - last) >= d
        case .when, .growingBetween, .minDays: return false  // evaluated by the engine, which holds the tables
        }
    }
}
