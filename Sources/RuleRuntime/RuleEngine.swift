import Foundation
import RuleLang

/// Why an engine could not be created or a call was refused.
public enum RuleEngineError: Error, CustomStringConvertible {
    /// The rules have errors; the diagnostics say where.
    case invalidRules([Diagnostic])
    /// A file could not be read.
    case unreadable(path: String)
    /// No `param` of that name is declared.
    case unknownParam(String)
    /// The value's type is not the param's declared type.
    case typeMismatch(param: String, declared: ValueType, given: ValueType)
    /// An expression given to ``RuleEngine/check(_:)`` has errors.
    case invalidExpression([Diagnostic])
    /// The store could not be read.
    case store(RuleStoreError)

    public var description: String {
        switch self {
        case .invalidRules(let diagnostics), .invalidExpression(let diagnostics):
            return DiagnosticRenderer().render(diagnostics.filter { $0.severity == .error })
        case .unreadable(let path): return "cannot read '\(path)'"
        case .unknownParam(let name): return "unknown param '\(name)'"
        case .typeMismatch(let name, let declared, let given):
            return "param '\(name)' is '\(declared.rawValue)', not '\(given.rawValue)'"
        case .store(let error): return error.description
        }
    }
}

/// Evaluates `.rules` scenarios against durable counters and timestamps.
///
/// Safe to call from any thread: every call runs under one lock. Provider
/// closures run under that lock too, so they must not call the engine.
public final class RuleEngine: @unchecked Sendable {
    /// Tuning knobs; the defaults suit apps.
    public struct Options: Sendable {
        /// Recent timestamps kept per stream for window queries of the API and `when`
        /// (`count(x within D)`, `beenDone(scope: .since(D))`); windowed clauses raise it as they need.
        public var recentLimit = 16

        public init(recentLimit: Int = 16) {
            self.recentLimit = max(1, recentLimit)
        }
    }

    let rules: CompiledRules
    let clock: RuleClock
    let store: RuleStore
    let lock = NSLock()
    var state: EngineState
    var providers: [String: @Sendable () -> ParamValue] = [:]
    /// The program's declarations, collected once for ``check(_:)-(String)``.
    lazy var expressions = ExpressionChecker(program: rules.program)

    /// Warnings found in the rules (errors make the initializer throw), and about stored
    /// state the rules no longer fit (a stored param value of another type, ignored).
    public private(set) var warnings: [Diagnostic] = []
    /// The last finite time read from the clock: a NaN or infinite reading is replaced by it.
    private var lastTime: Double = 0
    /// How many views were merged from streams (tests check it stays one per scenario).
    var merges = 0
    private var failure: RuleStoreError?
    private var failureHandler: (@Sendable (RuleStoreError) -> Void)?

    /// The last error the store reported while saving, if any; the call's effect stays in memory.
    public var lastStoreError: RuleStoreError? { locked { failure } }

    /// Called whenever the store fails to save a change. It runs under the engine's
    /// lock: it must not call the engine.
    public var storeErrorHandler: (@Sendable (RuleStoreError) -> Void)? {
        get { locked { failureHandler } }
        set { locked { failureHandler = newValue } }
    }

    /// Creates an engine from rule files checked together as one program.
    /// Throws ``RuleEngineError/invalidRules(_:)`` when they have errors, or ``RuleEngineError/store(_:)``.
    public init(
        sources: [SourceFile], store: RuleStore = InMemoryStore(), clock: RuleClock = SystemClock(),
        options: Options = Options()
    ) throws {
        let result = RuleCompiler.check(sources)
        if result.hasErrors { throw RuleEngineError.invalidRules(result.diagnostics) }
        rules = CompiledRules(program: result.program, recentLimit: options.recentLimit)
        self.clock = clock
        self.store = store
        do {
            state = try EngineState(entries: try store.load())
            try store.didLoad()
        } catch let error as RuleStoreError {
            throw RuleEngineError.store(error)
        } catch {
            throw RuleEngineError.store(.other(error))
        }
        warnings = result.diagnostics + reconcileWithRules()  // written here only: safe to read unlocked
    }

    /// Fits stored state to rules that may have changed since it was written: a
    /// scenario view built from other streams is rebuilt from its streams (executions
    /// kept); a stored param value of another type than declared is ignored, with a warning.
    private func reconcileWithRules() -> [Diagnostic] {
        var changes: [StoreChange] = []
        for (index, scenario) in rules.scenarios.enumerated() {
            guard var view = state.scenarios[scenario.name], let built = view.streams,
                built != scenario.fingerprint
            else { continue }
            view.events = mergedEvents(index)
            view.streams = scenario.fingerprint
            state.scenarios[scenario.name] = view
            changes.append(EngineState.change(scenario: scenario.name, view))
        }
        if !changes.isEmpty { save(changes) }
        var notes: [Diagnostic] = []
        for file in rules.program.files {
            for case .param(let param) in file.declarations {
                guard let declared = rules.paramTypes[param.name.text], let stored = state.params[param.name.text],
                    stored.type != declared
                else { continue }
                state.params[param.name.text] = nil
                notes.append(
                    Diagnostic(
                        .storedValueIgnored,
                        .warning,
                        "the stored value of param '\(param.name.text)' is '\(stored.type.rawValue)' but the param is '\(declared.rawValue)'; the stored value is ignored",
                        at: SourceSpan(file.source, param.name.range)))
            }
        }
        return notes
    }

    /// Creates an engine from rule source text.
    public convenience init(
        source: String, path: String = "<rules>", store: RuleStore = InMemoryStore(),
        clock: RuleClock = SystemClock(), options: Options = Options()
    ) throws {
        try self.init(sources: [SourceFile(path: path, text: source)], store: store, clock: clock, options: options)
    }

    /// Creates an engine from a `.rules` file, e.g. one in the app's bundle.
    public convenience init(
        contentsOf url: URL, store: RuleStore = InMemoryStore(), clock: RuleClock = SystemClock(),
        options: Options = Options()
    ) throws {
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw RuleEngineError.unreadable(path: url.path)
        }
        try self.init(
            sources: [SourceFile(path: url.path, bytes: [UInt8](data))], store: store, clock: clock,
            options: options)
    }

    /// The names of every scenario, in declaration order.
    public var scenarioNames: [String] { rules.scenarios.map(\.name) }

    // MARK: - Locking and saving

    @inline(__always)
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// Persists one call's changes. Must run under the lock.
    func save(_ changes: [StoreChange]) {
        do {
            try store.apply(changes)
        } catch let error as RuleStoreError {
            failure = error
            failureHandler?(error)
        } catch {
            failure = .other(error)
            failureHandler?(.other(error))
        }
    }

    /// The clock's time in seconds since 1970; a NaN or infinite reading counts as the last good one.
    var now: Double {
        let time = clock.now().timeIntervalSince1970
        if time.isFinite {
            lastTime = time
            return time
        }
        return lastTime
    }

    // MARK: - Sessions

    /// Begins a session; call once at app start. A version different from the
    /// previous session's begins a new `per version` scope. Before the first
    /// call, `per session` and `per version` count everything since the store began.
    /// It also asks the store to check that its file is still in place (see ``lastStoreError``).
    public func startSession(version: String) {
        locked {
            do {
                try store.verify()
            } catch let error as RuleStoreError {
                failure = error
                failureHandler?(error)
            } catch {
                failure = .other(error)
                failureHandler?(.other(error))
            }
            let time = now
            state.meta.sessionID += 1
            state.meta.sessionStart = time
            if state.meta.version != version {
                state.meta.versionID += 1
                state.meta.version = version
                state.meta.versionStart = time
            }
            save([EngineState.change(meta: state.meta)])
        }
    }

    /// The app version of the current session, if a session was started.
    public var currentVersion: String? { locked { state.meta.version } }

    // MARK: - Events

    /// Records one event on stream `name` (a scenario's own stream, or one named by `on`).
    public func trigger(_ name: String) {
        locked { save(recordEvent(name, at: now)) }
    }

    /// Records the event and returns the changes. Must run under the lock.
    func recordEvent(_ name: String, at time: Double) -> [StoreChange] {
        let meta = state.meta
        var changes: [StoreChange] = []
        if let listeners = rules.listeners[name] {
            changes.reserveCapacity(listeners.count + 1)
            for index in listeners {
                let scenario = rules.scenarios[index]
                // Taken out of the table so its arrays are uniquely referenced (no copy on append).
                // A scenario seen for the first time starts from the streams' history.
                var view = state.scenarios.removeValue(forKey: scenario.name) ?? newView(index)
                view.events.record(at: time, in: meta, keep: scenario.eventKeep)
                state.scenarios[scenario.name] = view
                changes.append(EngineState.change(scenario: scenario.name, view))
            }
        }
        var tally = state.streams.removeValue(forKey: name) ?? Tally()
        tally.record(at: time, in: meta, keep: rules.keep(stream: name))
        state.streams[name] = tally
        changes.append(EngineState.change(stream: name, tally))
        return changes
    }

    /// The scenario's view: stored, or merged from its streams once and kept in memory
    /// (a merged view equals what merging again would give, so it need not be stored).
    func scenarioState(_ index: Int) -> ScenarioState {
        let scenario = rules.scenarios[index]
        if let view = state.scenarios[scenario.name] { return view }
        let view = newView(index)
        state.scenarios[scenario.name] = view
        return view
    }

    /// A view for a scenario seen for the first time: its streams' history.
    func newView(_ index: Int) -> ScenarioState {
        ScenarioState(events: mergedEvents(index), streams: rules.scenarios[index].fingerprint)
    }

    func mergedEvents(_ index: Int) -> Tally {
        let scenario = rules.scenarios[index]
        let tallies = scenario.streams.compactMap { state.streams[$0] }
        if tallies.isEmpty { return Tally() }
        merges += 1
        return Tally.merged(tallies, keep: scenario.eventKeep, in: state.meta)
    }

    /// Re-bases times recorded later than `time` (a clock that was ahead and has been
    /// corrected) in what scenario `index` reads, and stores the change: the scenario
    /// then waits its own cool-down from the correction, not until the wrong date.
    func rebase(_ index: Int, to time: Double) {
        let scenario = rules.scenarios[index]
        var view = scenarioState(index)
        var changes: [StoreChange] = []
        let events = view.events.rebase(to: time)
        if view.executions.rebase(to: time) || events {
            state.scenarios[scenario.name] = view
            changes.append(EngineState.change(scenario: scenario.name, view))
        }
        if let group = scenario.group {
            let name = rules.groups[group].name
            if var tally = state.groups[name], tally.rebase(to: time) {
                state.groups[name] = tally
                changes.append(EngineState.change(group: name, tally))
            }
        }
        if !changes.isEmpty { save(changes) }
    }

    // MARK: - Executing

    /// Evaluates scenario `name` (with its group's clauses); if it passes, records
    /// one execution and returns true, else changes nothing and returns false.
    /// An unknown name returns false (``explain(_:)`` says why).
    @discardableResult
    public func tryToExecute(_ name: String) -> Bool {
        locked {
            guard let index = rules.scenarioIndex[name] else { return false }
            let time = now
            guard passes(index, now: time) else { return false }
            save(recordExecution(index, at: time))
            return true
        }
    }

    /// WaitForIt's form: calls `completion` once, synchronously on the caller's thread,
    /// after the lock is released, with the answer of ``tryToExecute(_:)``.
    public func tryToExecute(_ name: String, completion: (Bool) -> Void) {
        completion(tryToExecute(name))
    }

    /// True when scenario `name` would run now; records nothing.
    public func canExecute(_ name: String) -> Bool {
        locked {
            guard let index = rules.scenarioIndex[name] else { return false }
            return passes(index, now: now)
        }
    }

    /// Among `names` (default: every scenario; unknown names are ignored), executes and
    /// returns the eligible scenario with the highest `priority` (ties: declaration order);
    /// nil if none is eligible.
    @discardableResult
    public func executeNext(among names: [String]? = nil) -> String? {
        locked {
            let time = now
            let candidates =
                names.map { $0.compactMap { rules.scenarioIndex[$0] } }
                ?? Array(rules.scenarios.indices)
            let ordered = candidates.enumerated().sorted {
                let (a, b) = (rules.scenarios[$0.element].priority, rules.scenarios[$1.element].priority)
                return a != b ? a > b : $0.element < $1.element
            }
            for (_, index) in ordered where passes(index, now: time) {
                save(recordExecution(index, at: time))
                return rules.scenarios[index].name
            }
            return nil
        }
    }

    func recordExecution(_ index: Int, at time: Double) -> [StoreChange] {
        let meta = state.meta
        let scenario = rules.scenarios[index]
        var view = state.scenarios.removeValue(forKey: scenario.name) ?? newView(index)
        view.executions.record(at: time, in: meta, keep: scenario.executionKeep)
        state.scenarios[scenario.name] = view
        var changes = [EngineState.change(scenario: scenario.name, view)]
        if let group = scenario.group {
            let groupName = rules.groups[group].name
            var tally = state.groups.removeValue(forKey: groupName) ?? Tally()
            tally.record(at: time, in: meta, keep: rules.groups[group].executionKeep)
            state.groups[groupName] = tally
            changes.append(EngineState.change(group: groupName, tally))
        }
        return changes
    }

    /// Forgets scenario `name`'s executions and makes it count only events recorded
    /// from now on. Shared streams are kept, so other scenarios and `count()` still
    /// see them. A group's name resets the group's shared budget. Returns false for an unknown name.
    @discardableResult
    public func reset(_ name: String) -> Bool {
        locked {
            if let index = rules.scenarioIndex[name] {
                let empty = ScenarioState(streams: rules.scenarios[index].fingerprint)
                state.scenarios[name] = empty
                save([EngineState.change(scenario: name, empty)])
                return true
            }
            if rules.groupIndex[name] != nil {
                state.groups[name] = nil
                save([EngineState.change(group: name, nil)])
                return true
            }
            return false
        }
    }

    // MARK: - Params

    /// Stores a value for param `name`; it persists. Throws for an unknown name or a wrong type.
    public func set(_ name: String, to value: ParamValue) throws {
        try locked {
            try validate(name, value.type)
            state.params[name] = value
            save([EngineState.change(param: name, value)])
        }
    }

    /// Registers a live provider for param `name`, called at each evaluation; it
    /// wins over a stored value. It runs under the engine's lock: it must not call the engine.
    public func provide(_ name: String, _ provider: @escaping @Sendable () -> Bool) throws {
        try register(name, .bool) { .bool(provider()) }
    }

    public func provide(_ name: String, _ provider: @escaping @Sendable () -> Int) throws {
        try register(name, .int) { .int(Int64(provider())) }
    }

    public func provide(_ name: String, _ provider: @escaping @Sendable () -> String) throws {
        try register(name, .string) { .string(provider()) }
    }

    /// A duration param's provider, in seconds.
    public func provide(_ name: String, _ provider: @escaping @Sendable () -> TimeInterval) throws {
        try register(name, .duration) { .duration(provider()) }
    }

    private func register(_ name: String, _ type: ValueType, _ provider: @escaping @Sendable () -> ParamValue) throws {
        try locked {
            try validate(name, type)
            providers[name] = provider
        }
    }

    private func validate(_ name: String, _ type: ValueType) throws {
        guard let declared = rules.paramTypes[name] else { throw RuleEngineError.unknownParam(name) }
        guard declared == type else { throw RuleEngineError.typeMismatch(param: name, declared: declared, given: type) }
    }

    /// The value param `name` has now: provider, else stored value, else default, else its type's zero.
    public func value(of name: String) -> ParamValue? {
        locked { paramValue(name) }
    }

    func paramValue(_ name: String) -> ParamValue? {
        if let provider = providers[name] { return provider() }
        return state.params[name] ?? rules.paramDefaults[name]
    }

    // MARK: - Queries

    /// Events recorded on stream `name` in `scope`.
    public func count(_ name: String, scope: CountScope = .install) -> Int {
        locked { Int(clamping: streamCount(name, scope, now: now)) }
    }

    /// Events on stream `name` in `scope`. Must run under the lock.
    func streamCount(_ name: String, _ scope: CountScope, now time: Double) -> Int64 {
        state.streams[name]?.count(scope, now: time, in: state.meta) ?? 0
    }

    /// The checked program the engine runs.
    public var program: RuleProgram { rules.program }

    /// Evaluates an expression already checked against ``program`` with
    /// `RuleCompiler.checkExpression`; true when it is `true`.
    public func check(_ expr: Expr) -> Bool {
        locked { evaluate(expr, now: now) == .bool(true) }
    }

    /// Evaluates a bool expression of the language (`count(share per session) >= 1`)
    /// against the current state. Here `<` and `>` need no parentheses.
    public func check(_ expression: String) throws -> Bool {
        let file = SourceFile(path: "<expression>", text: expression)
        let (expr, diagnostics) = locked { expressions.check(file, range: 0..<file.bytes.count) }
        if diagnostics.hasErrors { throw RuleEngineError.invalidExpression(diagnostics) }
        return locked { evaluate(expr, now: now) == .bool(true) }
    }
}
