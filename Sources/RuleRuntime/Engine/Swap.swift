import Foundation
import RuleLang

/// Which rules an engine runs: where they came from, their digest, and since when.
public struct ActiveRules: Sendable, Equatable, CustomStringConvertible {
    /// Where the rules came from.
    public enum Origin: String, Sendable, Codable {
        /// Given to the engine's initializer or to ``RuleEngine/replaceRules(sources:origin:version:)``.
        case given
        /// The rules bundled with the app (``RuleDelivery``'s fallback).
        case bundled
        /// Rules delivered after release and accepted by ``RuleDelivery``.
        case delivered
    }

    /// Where they came from.
    public var origin: Origin
    /// The files' paths, in order.
    public var paths: [String]
    /// The `# language` the files declare (the newest of them).
    public var language: LanguageVersion
    /// `crc32:XXXXXXXX` over the files' bytes in order: tells two versions of the rules apart
    /// (not a security check: that is the app's integrity check's job).
    public var digest: String
    /// A version label the delivery gave (a server's `ETag`, a build number), if any.
    public var version: String?
    /// When the engine took them, by its clock.
    public var activated: Date

    /// The rules of `program` (already parsed: its files say their language), from `origin`.
    init(program: RuleProgram, origin: Origin, version: String? = nil, activated: Date) {
        self.origin = origin
        paths = program.files.map(\.source.path)
        language = program.files.map(\.languageVersion).max() ?? .initial
        digest = "crc32:" + CRC32.hex(of: program.files.map { $0.source.bytes[...] })
        self.version = version
        self.activated = activated
    }

    /// Everything but the time: `delivered rules.rules (language 1.1, crc32:1a2b3c4d, version 7)`.
    var identity: String {
        var what = "\(origin.rawValue) \(paths.joined(separator: ", ")) (language \(language), \(digest)"
        if let version { what += ", version \(version)" }
        return what + ")"
    }

    /// `delivered rules.rules (language 1.1, crc32:1a2b3c4d, version 7) since 2026-11-25T10:00:00Z`.
    public var description: String { identity + " since " + activated.formatted(.iso8601) }
}

extension RuleEngine {
    /// Which rules the engine runs now: where they came from, their digest, since when.
    public var activeRules: ActiveRules? { locked { $0.active } }

    /// Gives the running engine new rules, checked as one program.
    ///
    /// Any error changes nothing: it throws ``RuleEngineError/invalidRules(_:)`` with the located
    /// diagnostics. Otherwise the swap is atomic under the engine's lock: every call that starts
    /// after it answers with the new rules, and none sees a mix. The state carries over exactly as
    /// a new engine over the same store would take it (grammar.md, "Rules changed over an existing
    /// store"), renames (`was`) included. Handles made before resolve again (a name that is gone
    /// answers false and is listed in ``unknownNames``); ``updates(for:)-(Scenario)`` streams yield again
    /// where the answer changed; params set with `set` keep their stored values, and `provide`
    /// closures keep providing where the new rules declare the param with the same type.
    /// Returns the new rules' warnings (also in ``warnings``).
    @discardableResult
    public func replaceRules(sources: [SourceFile], origin: ActiveRules.Origin = .given, version: String? = nil)
        throws -> [Diagnostic]
    {
        try replaceRules(checked: RuleCompiler.check(sources), origin: origin, version: version)
    }

    /// ``replaceRules(sources:origin:version:)`` with rules already checked.
    @discardableResult
    func replaceRules(checked result: CheckResult, origin: ActiveRules.Origin, version: String?) throws
        -> [Diagnostic]
    {
        if result.hasErrors { throw RuleEngineError.invalidRules(result.diagnostics) }
        // Compiled before the lock is taken: calls wait only for the state to be carried over.
        let rules = CompiledRules(program: result.program, recentLimit: recentLimit)
        let active: (Date) -> ActiveRules = {
            ActiveRules(program: result.program, origin: origin, version: version, activated: $0)
        }
        return try locked { (core: inout EngineCore) throws -> [Diagnostic] in
            try core.swap(to: rules, diagnostics: result.diagnostics, active: active)
            return core.warnings
        }
    }

    /// ``replaceRules(sources:origin:version:)`` with one rules text.
    @discardableResult
    public func replaceRules(source: String, path: String = "<rules>") throws -> [Diagnostic] {
        try replaceRules(sources: [SourceFile(path: path, text: source)])
    }
}

extension EngineCore {
    /// Scenario `name`'s index; an unknown name is remembered for ``RuleEngine/unknownNames``.
    @inline(__always)
    mutating func scenario(named name: String) -> Int? {
        if let index = scenarioIndex[name] { return index }
        // A former name (`was`): the app's code, built against older rules, still calls it.
        if let index = rules.formerScenarios[name] { return index }
        noteUnknownScenario(name)
        return nil
    }

    /// Scenario `handle`'s index: remembered by the handle after its first use with these rules.
    @inline(__always)
    mutating func scenario(_ handle: Scenario) -> Int? {
        if let index = handle.cache.index(for: serial) { return index }
        guard let index = scenario(named: handle.name) else { return nil }
        handle.cache.remember(index, for: serial)
        return index
    }

    /// Takes `rules` as the active rules; returns the change that records them in the state when
    /// they came from a delivery and differ from the rules recorded there (`rulec state` shows them).
    mutating func activate(_ rules: ActiveRules) -> [StoreChange] {
        active = rules
        guard rules.origin != .given, storedActive?.hasPrefix(rules.identity + " since ") != true else { return [] }
        storedActive = rules.description
        return [EngineState.change(activeRules: rules.description)]
    }

    mutating func noteUnknownScenario(_ name: String) {
        if unknownScenarios.count < UnknownName.limit, !unknownScenarios.contains(name) {
            unknownScenarios.append(name)
        }
    }

    /// Replaces the rules with `rules`, over the store's state as a new engine would read it;
    /// what is not state (handlers, observers, providers, overrides, unknown names) carries over.
    mutating func swap(
        to rules: CompiledRules, diagnostics: [Diagnostic], active: (Date) -> ActiveRules
    ) throws {
        var state: EngineState
        do {
            let stored = try records?.loadEntries() ?? StoredEntries(try store.load())
            state = try EngineState(stored, streams: rules.streams)
        } catch let error as RuleStoreError {
            throw RuleEngineError.store(error)
        } catch {
            throw RuleEngineError.store(.other(error))
        }
        let moves = state.moveRenamed(rules)
        var next = EngineCore(rules: rules, clock: clock, store: store, stored: state)
        next.failure = failure
        next.failureHandler = failureHandler
        next.lastTime = lastTime
        next.decisionHandler = decisionHandler
        next.logger = logger
        next.watcher = watcher
        next.scheduledWakeUp = scheduledWakeUp
        next.overrides = overrides
        next.timeZone = timeZone
        next.role = role
        next.unknownScenarios = unknownScenarios
        next.applyOverrides(overrides)
        for slot in unknownEventSlots {
            let slot = next.slot(streams.name(slot))
            if slot + 1 >= next.listenerStart.count { next.unknownEventSlots.append(slot) }
        }
        for (index, provider) in providers.enumerated() {
            guard let provider, let found = rules.paramIndex[self.rules.params[index].name],
                rules.params[found].type == self.rules.params[index].type
            else { continue }
            next.providers[found] = provider
        }
        next.nextObserverID = nextObserverID
        for (id, observer) in observers {
            var moved = observer
            moved.index = rules.scenarioIndex[observer.name] ?? rules.formerScenarios[observer.name]
            next.observers[id] = moved
        }
        let changes = moves + next.activate(active(Date(timeIntervalSince1970: next.now())))
        if !changes.isEmpty { next.save(changes) }
        next.warnings = diagnostics + next.reconcile()
        self = next
    }
}
