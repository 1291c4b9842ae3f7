import Foundation
import RuleLang

/// One execution or control exposure, kept for the app to report once (language 1.3's
/// exposure log, ``RuleEngine/exposures(lease:)``).
public struct Exposure: Hashable, Sendable, CustomStringConvertible {
    /// What happened.
    public enum Kind: String, Hashable, Sendable {
        /// The scenario was shown (and counted: for `counts after D visible`, once on screen that long).
        case execution
        /// The install is in a holdout's control arm: it would have been shown.
        case control
    }

    /// Stable across processes and launches: the same exposure always has the same id, and no
    /// two have the same one. Ids sort in the order the exposures were recorded.
    public let id: String
    /// The scenario, by the name the rules gave it then.
    public let scenario: String
    /// An execution, or a control exposure.
    public let kind: Kind
    /// When it was recorded (for a counted presentation, the moment its time on screen was reached).
    public let time: Date

    public var description: String {
        "\(id) \(scenario) \(kind.rawValue) at \(LocalTimeText.iso8601(time, in: TimeZone(identifier: "UTC")!))"
    }
}

/// The exposure log: grammar.md, "Exposures, once".
extension RuleEngine {
    /// The exposures not yet acknowledged, oldest first, and the log turned on: from the first
    /// call on (by any process sharing the state, and stored with it), every execution and
    /// control exposure is kept with a stable ``Exposure/id`` until ``acknowledge(_:)``,
    /// across restarts, crashes and an app with its extensions. An app reports them to its
    /// analytics, then acknowledges them.
    ///
    /// Those returned are leased to this engine for `lease` seconds: another engine sharing the
    /// state (an extension's, draining at the same time) is not given them meanwhile, and this
    /// one is given them again until it acknowledges them. A process that dies before it
    /// acknowledges leaves them to the next drain once the lease ends (a receiver that ignores an
    /// id it has seen then counts each exposure once). At most ``exposureLimit`` wait: beyond it
    /// the oldest are dropped, counted by ``droppedExposures``.
    public func exposures(lease: TimeInterval = 60) -> [Exposure] {
        locked { core in
            core.startExposureLog()
            return core.claimExposures(lease: lease.isFinite ? Swift.max(0, lease) : 60)
        }
    }

    /// Forgets `exposures` (reported): a later ``exposures(lease:)`` never returns them again, in any
    /// process. Ids already acknowledged, or unknown, are ignored.
    public func acknowledge(_ exposures: [Exposure]) {
        locked { core in core.acknowledge(exposures.map(\.id)) }
    }

    /// How many exposures the log dropped, the oldest first, because more than
    /// ``exposureLimit`` waited to be acknowledged.
    public var droppedExposures: Int {
        locked { core in Int(core.todos[EngineCore.exposureLogKey]?.info?["dropped"] ?? "") ?? 0 }
    }

    /// The exposures the log keeps at most.
    public static let exposureLimit = EngineCore.exposureLimit
}

extension EngineCore {
    /// The to-do that turns the log on (its info counts the exposures dropped), and the prefix of
    /// each exposure's to-do (`@exposure:ID`).
    static let exposureLogKey = "@exposures"
    static let exposurePrefix = "@exposure:"
    static let exposureLimit = 1_000

    mutating func startExposureLog() {
        guard todos[EngineCore.exposureLogKey] == nil else { return }
        if shared { _ = lockFileForWriting() }
        guard todos[EngineCore.exposureLogKey] == nil else { return }
        let item = ToDoItem(created: now(), expires: nil, info: ["dropped": "0"])
        todos[EngineCore.exposureLogKey] = item
        save([EngineState.change(todo: EngineCore.exposureLogKey, item)])
    }

    /// Keeps an exposure of scenario `index` at `time` when the log is on (the caller commits).
    @inline(__always)
    mutating func logExposure(_ index: Int, at time: Double, _ kind: Exposure.Kind) {
        if todos.isEmpty || todos[EngineCore.exposureLogKey] == nil { return }
        addExposure(index, at: time, kind)
    }

    @inline(never)
    private mutating func addExposure(_ index: Int, at time: Double, _ kind: Exposure.Kind) {
        // Milliseconds, zero-padded so that ids sort by time, then this engine's random base and
        // count: unique across processes.
        let base = engineTag()
        hooks.exposureCount &+= 1
        let milliseconds = String(Int64((Swift.max(0, time) * 1000).rounded(.down)))
        let id =
            String(repeating: "0", count: Swift.max(0, 13 - milliseconds.count)) + milliseconds + "-"
            + base + String(hooks.exposureCount, radix: 16)
        let key = EngineCore.exposurePrefix + id
        let item = ToDoItem(
            created: time, expires: nil, info: ["scenario": rules.scenarios[index].name, "kind": kind.rawValue])
        todos[key] = item
        record.add(EngineState.change(todo: key, item))
        // Bounded: only when the to-dos outnumber the limit can the exposures.
        guard todos.count > EngineCore.exposureLimit else { return }
        let keys = todos.keys.filter { $0.hasPrefix(EngineCore.exposurePrefix) }
        guard keys.count > EngineCore.exposureLimit else { return }
        let dropped = keys.sorted().prefix(keys.count - EngineCore.exposureLimit)
        for key in dropped {
            todos[key] = nil
            record.add(EngineState.change(todo: key, nil))
        }
        var flag = todos[EngineCore.exposureLogKey]!
        let before = Int(flag.info?["dropped"] ?? "") ?? 0
        flag.info = ["dropped": String(before + dropped.count)]
        todos[EngineCore.exposureLogKey] = flag
        record.add(EngineState.change(todo: EngineCore.exposureLogKey, flag))
    }

    /// The exposures waiting, oldest first, that no other process holds a lease on at `time`:
    /// leased to this process until `lease` seconds from now, and returned.
    mutating func claimExposures(lease: Double) -> [Exposure] {
        guard todos.keys.contains(where: { $0.hasPrefix(EngineCore.exposurePrefix) }) else { return [] }
        if shared { _ = lockFileForWriting() }
        let time = now()
        let holder = engineTag()
        let claimable = todos.filter { key, item in
            guard key.hasPrefix(EngineCore.exposurePrefix) else { return false }
            guard let leaseHolder = item.info?["lease"], leaseHolder != holder else { return true }
            return time >= Double(item.info?["leased"] ?? "") ?? 0
        }.sorted { $0.key < $1.key }
        var changes: [StoreChange] = []
        let exposures = claimable.map { key, item in
            var leased = item
            leased.info = (item.info ?? [:]).merging(["lease": holder, "leased": String(time + lease)]) {
                $1
            }
            todos[key] = leased
            changes.append(EngineState.change(todo: key, leased))
            return Exposure(
                id: String(key.dropFirst(EngineCore.exposurePrefix.count)), scenario: item.info?["scenario"] ?? "",
                kind: Exposure.Kind(rawValue: item.info?["kind"] ?? "") ?? .execution,
                time: Date(timeIntervalSince1970: item.created))
        }
        save(changes)
        return exposures
    }

    mutating func acknowledge(_ ids: [String]) {
        let keys = ids.map { EngineCore.exposurePrefix + $0 }
        guard keys.contains(where: { todos[$0] != nil }) else { return }
        if shared { _ = lockFileForWriting() }
        let present = keys.filter { todos[$0] != nil }
        for key in present { todos[key] = nil }
        save(present.map { EngineState.change(todo: $0, nil) })
    }
}

extension EngineCore {
    /// This engine's random tag (`1a2b3c4d-`), made at its first need: tells its presentations'
    /// tokens, its exposures' ids and its leases from every other engine's.
    mutating func engineTag() -> String {
        if hooks.presentationBase.isEmpty {
            var generator = SystemRandomNumberGenerator()
            hooks.presentationBase = String(generator.next() as UInt32, radix: 16) + "-"
        }
        return hooks.presentationBase
    }
}
