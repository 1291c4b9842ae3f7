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
    /// An expression given to ``RuleEngine/check(_:)-(Expr)`` has errors.
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
/// Safe to call from any thread: every call runs under one lock, on the engine's
/// `EngineCore`. Provider closures, the clock and the store error handler run under that
/// lock too, so they must not call the engine: one that does stops the process with a message
/// naming the call and the callback, rather than deadlocking.
public final class RuleEngine: @unchecked Sendable {
    /// Tuning knobs; the defaults suit apps.
    public struct Options: Sendable {
        /// Recent timestamps kept per stream for window queries of the API and `when`
        /// (`count(x within D)`, `beenDone(scope: .since(D))`); windowed clauses raise it as they need.
        public var recentLimit = 16
        /// For testers: scenarios forced to pass (`true`) or fail (`false`) whatever their
        /// clauses and group say; `explain` shows "forced by override". Names the rules lack
        /// are listed in ``RuleEngine/unknownNames``. See ``launchOverrides(arguments:environment:)``.
        public var overrides: [String: Bool] = [:]
        /// The `os.Logger` subsystem that receives every decision at debug level on Apple
        /// platforms (category `decisions`); nil sends none. Ignored elsewhere.
        public var logSubsystem: String? = "rules"
        /// The device's time zone, where a local day begins for `min_days` and `active_days`
        /// (nil, the default: the current one, read when first needed). Change it with
        /// ``RuleEngine/timeZone`` when the device moves.
        public var timeZone: TimeZone?
        /// Whether this process is the app or one of its extensions, for a state file they share
        /// (``ProcessRole``): only the app begins sessions and sets the version. Unless set (nil),
        /// an app extension's process (a bundle ending in `.appex`) is an extension, any other the
        /// app: read from the main bundle at the first `startSession`, not before (reading it
        /// at every engine's creation cost about a megabyte: rulebench `bytes_per_stream_100k`).
        public var role: ProcessRole?

        /// Options with the given limits, overrides, log subsystem, time zone and role.
        public init(
            recentLimit: Int = 16, overrides: [String: Bool] = [:], logSubsystem: String? = "rules",
            timeZone: TimeZone? = nil, role: ProcessRole? = nil
        ) {
            self.recentLimit = max(1, recentLimit)
            self.overrides = overrides
            self.logSubsystem = logSubsystem
            self.timeZone = timeZone
            self.role = role
        }

        /// Overrides from the launch arguments and the environment, so a tester can force a
        /// scenario from an Xcode scheme or `simctl launch`: `-RulesForce NAME` (repeatable)
        /// or `RULES_FORCE=A,B` force a pass; `-RulesBlock NAME` or `RULES_BLOCK=C` force a
        /// fail. An app opts in: `options.overrides = Options.launchOverrides()`, typically in
        /// debug and TestFlight builds only.
        public static func launchOverrides(
            arguments: [String] = ProcessInfo.processInfo.arguments,
            environment: [String: String] = ProcessInfo.processInfo.environment
        ) -> [String: Bool] {
            var overrides: [String: Bool] = [:]
            func names(_ variable: String) -> [String] {
                (environment[variable] ?? "").split(separator: ",").map {
                    String($0).trimmingCharacters(in: .whitespaces)
                }.filter { !$0.isEmpty }
            }
            for name in names("RULES_FORCE") { overrides[name] = true }
            for name in names("RULES_BLOCK") { overrides[name] = false }
            var index = arguments.startIndex
            while index < arguments.endIndex {
                let next = arguments.index(after: index)
                if next < arguments.endIndex, arguments[index] == "-RulesForce" || arguments[index] == "-RulesBlock" {
                    overrides[arguments[next]] = arguments[index] == "-RulesForce"
                    index = arguments.index(after: next)
                } else {
                    index = next
                }
            }
            return overrides
        }
    }

    private let lock = NSLock()
    /// The thread holding `lock` (0 when none): a callback calling the engine stops with a message
    /// instead of deadlocking.
    private let owner = ThreadMark()
    /// The state, reached only through ``locked(_:)``; allocated once, so calls pay no exclusivity check.
    private let core: UnsafeMutablePointer<EngineCore>

    /// Warnings found in the rules (errors make the initializer throw), and about stored
    /// state the rules no longer fit (a stored param value of another type, ignored); those of
    /// the rules swapped in last, after ``replaceRules(sources:origin:version:)``.
    public var warnings: [Diagnostic] { locked { $0.warnings } }

    /// The last error the store reported while saving, if any; the call's effect stays in memory.
    public var lastStoreError: RuleStoreError? { locked { $0.failure } }

    /// Called whenever the store fails to save a change. It runs under the engine's
    /// lock: it must not call the engine.
    public var storeErrorHandler: (@Sendable (RuleStoreError) -> Void)? {
        get { locked { $0.failureHandler } }
        set { locked { $0.failureHandler = newValue } }
    }

    /// Creates an engine from rule files checked together as one program.
    /// Throws ``RuleEngineError/invalidRules(_:)`` when they have errors, or ``RuleEngineError/store(_:)``.
    public convenience init(
        sources: [SourceFile], store: RuleStore = InMemoryStore(), clock: RuleClock = SystemClock(),
        options: Options = Options()
    ) throws {
        // Over a large state file, one other thread reads it, then stores the names the rules'
        // `on` clauses list, while the rules are checked (`rulebench cold`).
        guard let file = store as? FileStore, file.worthLoadingEarly else {
            try self.init(checked: RuleCompiler.check(sources), store: store, clock: clock, options: options)
            return
        }
        let queue = DispatchQueue(label: "rules.engine-start", qos: .userInitiated)
        let early = BackgroundWork.earlyLoad(file, on: queue)
        let parsed = RuleCompiler.parse(sources)
        // Then, on the same thread after the load, while the rules are checked: the names they
        // list, and the stored streams among them moved to the slots the compiler keeps for them.
        let listing = BackgroundWork(on: queue) { () -> (ListedStreams, StagedStreams?) in
            let listed = ListedStreams(parsed.files)
            var staged = early.wait()
            staged?.place(in: listed.table)
            return (listed, staged)
        }
        let result = RuleCompiler.check(parsed)
        let (listed, staged) = listing.wait()
        try self.init(
            checked: result, store: store, clock: clock, options: options, staged: staged, listed: listed)
    }

    /// An engine over rules already checked (a delivery checks them before it decides to run them),
    /// from `origin`.
    init(
        checked result: CheckResult, store: RuleStore, clock: RuleClock, options: Options,
        origin: ActiveRules.Origin = .given, version: String? = nil, staged: StagedStreams? = nil,
        listed: ListedStreams? = nil
    ) throws {
        if result.hasErrors { throw RuleEngineError.invalidRules(result.diagnostics) }
        // With a large state read early, the fingerprints of long `on` lists are computed on
        // another thread while the state is decoded, and stored before anything reads them.
        let rules = CompiledRules(
            program: result.program, recentLimit: options.recentLimit, fingerprintsLater: staged != nil,
            listed: listed)
        let fingerprinted = rules.fingerprintInBackground()
        var state: EngineState
        var moves: [StoreChange] = []
        do {
            // A store that holds its entries as bytes hands them over as they are.
            let stored = try (store as? RecordStore)?.loadEntries() ?? StoredEntries(try store.load())
            state = try EngineState(stored, streams: rules.streams, staged: staged)
            fingerprinted()
            try store.didLoad()
            moves = state.moveRenamed(rules)
        } catch let error as RuleStoreError {
            throw RuleEngineError.store(error)
        } catch {
            throw RuleEngineError.store(.other(error))
        }
        self.clock = clock
        shared = (store as? FileStore).flatMap { $0.options.shared ? $0 : nil }
        var built = EngineCore(rules: rules, clock: clock, store: store, stored: state)
        built.applyOverrides(options.overrides)
        built.logger = DecisionLogger(subsystem: options.logSubsystem)
        built.overrides = options.overrides
        built.timeZone = options.timeZone
        built.role = options.role
        // History under former names (`was`) moves in one record, before anything else is written;
        // rules from a delivery are recorded with it.
        let active = ActiveRules(program: result.program, origin: origin, version: version, activated: clock.now())
        var changes = moves + built.activate(active)
        // Names stored in several spellings, merged in memory: written once, in the canonical one.
        if !state.respelled.isEmpty {
            changes = built.image() + state.respelled.map { StoreChange(storedKey: $0, value: nil) } + changes
        }
        if !changes.isEmpty { built.save(changes) }
        built.warnings = result.diagnostics + built.reconcile()
        recentLimit = options.recentLimit
        core = .allocate(capacity: 1)
        core.initialize(to: built)
    }

    deinit {
        // A file deleted, replaced or cut short since the last check is written again now,
        // from the engine's memory if need be (the store alone could not).
        if core.pointee.store is FileStore { core.pointee.verifyStore() }
        for observer in core.pointee.observers.values { observer.finish() }
        core.deinitialize(count: 1)
        core.deallocate()
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

    /// Runs `body` on the core under the lock: the only way in.
    ///
    /// Over a shared file, the call first takes in what other processes wrote (one memory
    /// load when nothing was), and a call whose append found the file changed meanwhile runs
    /// again on the state read anew, holding the file's lock until it returns.
    @inline(__always)
    func locked<T>(function: StaticString = #function, _ body: (inout EngineCore) throws -> T) rethrows -> T {
        if !lock.try() {
            // Held: by another thread (wait), or by this one, in a callback that called the engine.
            if owner.value == ThreadMark.current { reentered(function) }
            lock.lock()
        }
        owner.value = ThreadMark.current
        // Optional chaining on the `let` borrows the store: no retain on the common path.
        if shared?.mayHaveChanged == true, let shared { core.pointee.catchUp(with: shared) }
        var result: T
        do {
            result = try body(&core.pointee)
            if core.pointee.conflicted, let shared { result = try again(body, shared) }
        } catch {
            shared?.endCall()
            owner.value = 0
            lock.unlock()
            throw error
        }
        guard !core.pointee.observers.isEmpty, let wakeUp = refreshObservers() else {
            endCall()
            owner.value = 0
            lock.unlock()
            return result
        }
        endCall()
        owner.value = 0
        lock.unlock()
        // Asked of the clock after the lock is released: a clock may run the action at once.
        scheduleWakeUp(at: wakeUp)
        return result
    }

    /// Stops the process with a message naming the call and the callback it came from: the
    /// engine's lock is held by this thread, so waiting for it would hang the app for good.
    func reentered(_ function: StaticString) -> Never {
        // This thread holds the lock: the core is safe to read.
        let inside = core.pointee.callback.describe(core.pointee.rules)
        fatalError(
            "RuleEngine.\(function) was called from \(inside), which runs under the engine's lock: "
                + "the call would deadlock. Read what the callback needs before calling the engine, or "
                + "call it later (grammar.md, \"Threads\")")
    }

    /// Runs `body` again after a conflicting append, on the state read anew (the file's lock is
    /// held since that append, so the second run cannot conflict unless reading failed).
    private func again<T>(_ body: (inout EngineCore) throws -> T, _ shared: FileStore) rethrows -> T {
        var attempts = 0
        while true {
            core.pointee.conflicted = false
            core.pointee.reloadAfterConflict(with: shared)
            let result = try body(&core.pointee)
            attempts += 1
            if !core.pointee.conflicted || attempts == 3 {
                core.pointee.conflicted = false
                return result
            }
        }
    }

    /// Ends a call over a shared file: a write made while refreshing observers that conflicted
    /// is dropped with the state read anew; the file's lock is let go.
    @inline(__always)
    private func endCall() {
        if core.pointee.conflicted, let shared {
            core.pointee.conflicted = false
            core.pointee.reloadAfterConflict(with: shared)
        }
        shared?.endCall()
    }

    /// The core for ``refreshObservers()``, which runs inside ``locked(_:)``.
    var coreForRefresh: UnsafeMutablePointer<EngineCore> { core }

    /// The compiled rules the engine runs now (``replaceRules(sources:origin:version:)`` changes them).
    var rules: CompiledRules { locked { $0.rules } }
    /// ``Options/recentLimit``, for rules swapped in.
    let recentLimit: Int
    /// The clock, the same the core reads: kept here to ask for wake-ups outside the lock.
    let clock: RuleClock
    /// The store, when it is a file other processes write too.
    let shared: FileStore?

    /// The names of every scenario, in declaration order.
    public var scenarioNames: [String] { rules.scenarios.map(\.name) }

    /// The checked program the engine runs.
    public var program: RuleProgram { rules.program }

    // MARK: - Sessions

    /// Begins a session; call once at app start. A version different from the
    /// previous session's begins a new `per version` scope. Before the first
    /// call, `per session` and `per version` count everything since the store began.
    /// It also asks the store to check that its file is still in place (see ``lastStoreError``).
    public func startSession(version: String) {
        locked { $0.startSession(version: version) }
    }

    /// Checks that the store's file is still where it was and writes it again from memory if it
    /// was deleted or replaced (reported through ``lastStoreError``). Call it when the app is
    /// about to be suspended (SwiftUI: `scenePhase` becoming `.background`): a file deleted
    /// under a running engine then loses nothing, even when the app is killed in the background.
    /// The store also checks at most once a millisecond while appending, at `startSession`, and when
    /// it is released.
    public func prepareForSuspension() {
        locked { $0.verifyStore() }
    }

    /// The device's time zone for local days (`min_days`, `active_days`): a day runs from local
    /// midnight to the next in the zone current when it is asked. Set it when the device's zone
    /// changes (a trip): days already recorded keep their dates, and "today" is the new zone's.
    public var timeZone: TimeZone {
        get { locked { $0.zone() } }
        set { locked { $0.timeZone = newValue } }
    }

    /// The app version of the current session, if a session was started.
    public var currentVersion: String? { locked { $0.meta.version } }

    // MARK: - Events

    /// Records one event on stream `name` (a scenario's own stream, or one named by `on`).
    @inlinable
    public func trigger(_ name: some StringProtocol) { trigger(named: name.ruleName) }

    @usableFromInline
    func trigger(named name: String) {
        locked { $0.trigger(name) }
    }

    // MARK: - Executing

    /// Evaluates scenario `name` (with its group's clauses); if it passes, records
    /// one execution and returns true, else changes nothing and returns false.
    /// An unknown name returns false (``explain(_:)-(Scenario)`` says why).
    ///
    /// It spends an execution when it answers true, so its result must be used: when the app may
    /// fail to show the scenario after all, use ``canExecute(_:)-(StringProtocol)`` and
    /// ``recordExecution(_:)-(StringProtocol)`` instead (check, try to show, count only if shown).
    @inlinable
    public func tryToExecute(_ name: some StringProtocol) -> Bool { tryToExecute(named: name.ruleName) }

    @usableFromInline
    func tryToExecute(named name: String) -> Bool {
        decide(.tryToExecute, resolve: { $0.scenario(named: name) }, answer: { $0.tryToExecute($1) })
    }

    /// True when scenario `name` would run now; records nothing. The first half of the
    /// two-phase form: `if engine.canExecute(s), show() { engine.recordExecution(s) }`.
    @inlinable
    public func canExecute(_ name: some StringProtocol) -> Bool { canExecute(named: name.ruleName) }

    @usableFromInline
    func canExecute(named name: String) -> Bool {
        decide(.canExecute, resolve: { $0.scenario(named: name) }, answer: { $0.passes($1, now: $0.now()) })
    }

    /// Records one execution of scenario `name` now, whatever its clauses say: the second half
    /// of the two-phase form, called once the app has shown the scenario. Counts toward its
    /// `max_exec`, `between` and its group's budget exactly as an execution by ``tryToExecute(_:)-(StringProtocol)``.
    /// Returns false (and records nothing) for an unknown name.
    @discardableResult @inlinable
    public func recordExecution(_ name: some StringProtocol) -> Bool { recordExecution(named: name.ruleName) }

    @usableFromInline
    func recordExecution(named name: String) -> Bool {
        locked { core in
            guard let index = core.scenario(named: name) else { return false }
            core.recordExecution(index)
            return true
        }
    }

    /// Among `names` (default: every scenario; unknown names are ignored), executes and
    /// returns the eligible scenario with the highest `priority` (ties: declaration order);
    /// nil if none is eligible.
    @discardableResult
    public func executeNext(among names: [String]? = nil) -> String? {
        let chosen = next { core in
            names.map { names in names.compactMap { core.scenario(named: $0) } } ?? Array(core.rules.scenarios.indices)
        }
        guard let chosen, let names, !names.contains(chosen) else { return chosen }
        // Given by a former name (`was`): the name the app passed.
        return locked { core in
            names.first { core.rules.formerScenarios[$0].map { core.rules.scenarios[$0].name } == chosen }
        } ?? chosen
    }

    /// Forgets scenario `name`'s executions and makes it count only events recorded
    /// from now on. Shared streams are kept, so other scenarios and `count()` still
    /// see them. A group's name resets the group's shared budget. Returns false for an unknown name.
    @discardableResult @inlinable
    public func reset(_ name: some StringProtocol) -> Bool { reset(named: name.ruleName) }

    @usableFromInline
    func reset(named name: String) -> Bool {
        locked { core in
            if core.reset(name) { return true }
            core.noteUnknownScenario(name)
            return false
        }
    }

    /// Says, clause by clause, why scenario `name` would or would not run now.
    @inlinable
    public func explain(_ name: some StringProtocol) -> Explanation { explain(named: name.ruleName) }

    @usableFromInline
    func explain(named name: String) -> Explanation {
        locked { core in
            guard let index = core.scenario(named: name) else {
                return Explanation(scenario: name, isKnown: false, wouldRun: false, clauses: [], earliest: nil)
            }
            var explanation = core.explain(index)
            if core.rules.scenarioIndex[name] == nil {
                explanation.currentName = explanation.scenario
                explanation.scenario = name
            }
            return explanation
        }
    }

    // MARK: - Params

    /// Stores a value for param `name`; it persists. Throws for an unknown name or a wrong type.
    public func set(_ name: String, to value: ParamValue) throws {
        try locked { try $0.set(name, to: value) }
    }

    /// Registers a live provider for param `name`, called at each evaluation; it
    /// wins over a stored value. It runs under the engine's lock: it must not call the engine.
    public func provide(_ name: String, _ provider: @escaping @Sendable () -> Bool) throws {
        try locked { try $0.provide(name, .bool) { .bool(provider()) } }
    }

    /// An int param's live provider.
    public func provide(_ name: String, _ provider: @escaping @Sendable () -> Int) throws {
        try locked { try $0.provide(name, .int) { .int(Int64(provider())) } }
    }

    /// A string param's live provider.
    public func provide(_ name: String, _ provider: @escaping @Sendable () -> String) throws {
        try locked { try $0.provide(name, .string) { .string(provider()) } }
    }

    /// A duration param's provider, in seconds.
    public func provide(_ name: String, _ provider: @escaping @Sendable () -> TimeInterval) throws {
        try locked { try $0.provide(name, .duration) { .duration(provider()) } }
    }

    /// The value param `name` has now: provider, else stored value, else default, else its type's zero;
    /// nil for an unknown name.
    public func value(of name: String) -> ParamValue? {
        locked { core in (core.rules.paramIndex[name] ?? core.rules.formerParams[name]).map { core.value($0) } }
    }

    // MARK: - Queries

    /// The app version of the first session this state saw (nil before any): what the
    /// built-in `upgraded` compares the current session's version with. State written before
    /// it was recorded takes the version it last saw; an Ecno import carries Ecno's over.
    public var firstVersion: String? { locked { $0.meta.firstVersion } }

    /// Events recorded on stream `name` in `scope`.
    public func count(_ name: String, scope: CountScope = .install) -> Int {
        locked { Int(clamping: $0.count($0.streamSlot(named: name), scope, now: $0.now())) }
    }

    /// How many times scenario `name` ran in `scope`: what `executions(NAME per SCOPE)` reads in
    /// a rule (`.within(D)`: `executions(NAME within D)`). 0 for a name no scenario has, which
    /// ``unknownNames`` then lists.
    public func executions(of name: some StringProtocol, scope: CountScope = .install) -> Int {
        let name = name.ruleName
        return locked { core in
            guard let index = core.scenario(named: name) else { return 0 }
            return Int(clamping: core.view(index).executions.count(scope, now: core.now(), in: core.meta.epoch))
        }
    }

    /// ``executions(of:scope:)-(StringProtocol,_)`` through a handle.
    public func executions(of scenario: Scenario, scope: CountScope = .install) -> Int {
        locked { core in
            guard let index = core.scenario(scenario) else { return 0 }
            return Int(clamping: core.view(index).executions.count(scope, now: core.now(), in: core.meta.epoch))
        }
    }

    // MARK: - Handles

    /// Records one event on `event`'s stream, as ``trigger(_:)-(StringProtocol)``; no name lookup after the first.
    public func trigger(_ event: Event) {
        locked { core in
            let slot = core.slot(event, serial: core.serial)
            core.recordEvent(slot, at: core.now())
            core.commit()
        }
    }

    /// Ecno's `markDone` through a handle: an event on `event`'s stream, and its to-do cleared.
    public func markDone(_ event: Event) {
        markDone(event.name)
    }

    /// ``tryToExecute(_:)-(StringProtocol)`` through a handle.
    public func tryToExecute(_ scenario: Scenario) -> Bool {
        decide(.tryToExecute, resolve: { $0.scenario(scenario) }, answer: { $0.tryToExecute($1) })
    }

    /// ``recordExecution(_:)-(StringProtocol)`` through a handle.
    @discardableResult
    public func recordExecution(_ scenario: Scenario) -> Bool {
        locked { core in
            guard let index = core.scenario(scenario) else { return false }
            core.recordExecution(index)
            return true
        }
    }

    /// ``canExecute(_:)-(StringProtocol)`` through a handle.
    public func canExecute(_ scenario: Scenario) -> Bool {
        decide(.canExecute, resolve: { $0.scenario(scenario) }, answer: { $0.passes($1, now: $0.now()) })
    }

    /// ``explain(_:)-(StringProtocol)`` through a handle.
    public func explain(_ scenario: Scenario) -> Explanation {
        locked { core in
            guard let index = core.scenario(scenario) else {
                return Explanation(scenario: scenario.name, isKnown: false, wouldRun: false, clauses: [], earliest: nil)
            }
            return core.explain(index)
        }
    }

    /// ``reset(_:)-(StringProtocol)`` through a handle (a scenario's or a group's name).
    @discardableResult
    public func reset(_ scenario: Scenario) -> Bool {
        reset(scenario.name)
    }

    /// Resets `group`'s shared budget (``reset(_:)-(StringProtocol)`` with a group's name); false for an unknown group.
    @discardableResult
    public func reset(group: RuleGroup) -> Bool {
        locked { core in
            (core.rules.groupIndex[group.name] ?? core.rules.formerGroups[group.name]) != nil
                && core.reset(group.name)
        }
    }

    /// ``executeNext(among:)-(_)`` through handles: the scenario executed, or nil.
    @discardableResult
    public func executeNext(among scenarios: [Scenario]) -> Scenario? {
        guard let chosen = next(among: { core in scenarios.compactMap { core.scenario($0) } }) else { return nil }
        if let handle = scenarios.first(where: { $0.name == chosen }) { return handle }
        // Given by a former name (`was`): the handle the app passed.
        return locked { core in
            scenarios.first { core.rules.formerScenarios[$0.name].map { core.rules.scenarios[$0].name } == chosen }
        }
    }

    /// Stores a value for `param`; it persists. Throws for a param the rules do not declare
    /// with this type.
    public func set<Value>(_ param: Param<Value>, to value: Value) throws {
        try set(param.name, to: value.paramValue)
    }

    /// Registers a live provider for `param`, called at each evaluation, under the engine's lock.
    public func provide<Value>(_ param: Param<Value>, _ provider: @escaping @Sendable () -> Value) throws {
        try locked { try $0.provide(param.name, Value.valueType) { provider().paramValue } }
    }

    /// `param`'s value now: provider, else stored value, else default; `Value.zero` when the
    /// rules do not declare it with this type.
    public func value<Value>(of param: Param<Value>) -> Value {
        locked { core in
            let index: Int
            if let remembered = param.cache.index(for: core.serial) {
                index = remembered
            } else {
                guard let found = core.rules.paramIndex[param.name], core.rules.params[found].type == Value.valueType
                else { return nil }
                param.cache.remember(found, for: core.serial)
                index = found
            }
            return Value(paramValue: core.value(index))
        } ?? .zero
    }

    /// Evaluates an expression already checked against ``program`` with
    /// `RuleCompiler.checkExpression`; true when it is `true`.
    public func check(_ expr: Expr) -> Bool {
        locked { core in
            let lowered = core.lower(expr)
            return core.evaluate(lowered, now: core.now()) == .bool(true)
        }
    }

    /// Evaluates a bool expression of the language (`count(share per session) >= 1`)
    /// against the current state. Here `<` and `>` need no parentheses.
    public func check(_ expression: String) throws -> Bool {
        let file = SourceFile(path: "<expression>", text: expression)
        let (expr, diagnostics) = locked { $0.expressions.check(file, range: 0..<file.bytes.count) }
        if diagnostics.hasErrors { throw RuleEngineError.invalidExpression(diagnostics) }
        return check(expr)
    }
}

// MARK: - Unknown names

/// A name the app used that the rules do not know: a debug report, since a misspelt string
/// otherwise fails silently (triggers a stream nothing counts, or tries no scenario).
public struct UnknownName: Hashable, Sendable, CustomStringConvertible {
    /// What kind of name it is.
    public enum Kind: String, Sendable {
        /// Triggered or marked done, but no rule counts it and no `event` declares it.
        case event
        /// Tried, checked, explained or reset as a scenario, but the rules have none of that name.
        case scenario
    }

    /// Whether it is an event or a scenario.
    public let kind: Kind
    /// The name as the app used it.
    public let name: String
    /// The closest known names, best first (at most two).
    public let suggestions: [String]

    /// At most this many names of each kind are remembered.
    public static let limit = 100

    /// `event 'lanch' is counted by no rule; did you mean 'launch'?`
    public var description: String {
        let what = kind == .event ? "is counted by no rule" : "is not a scenario of the rules"
        let quoted = suggestions.map { "'\($0)'" }
        let hint = quoted.isEmpty ? "" : "; did you mean \(quoted.joined(separator: " or "))?"
        return "\(kind.rawValue) '\(name)' \(what)\(hint)"
    }
}

extension RuleEngine {
    /// Names used since this engine was created that the rules do not know, each once in
    /// first-use order, events first: streams triggered or marked done that no rule counts and
    /// no `event` declares, and scenario names tried, checked, explained or reset that do not
    /// exist, each with "did you mean" over the rules' names. At most ``UnknownName/limit``
    /// of each kind. For debug builds and tests: a release app need not read it.
    public var unknownNames: [UnknownName] {
        let (events, scenarios, rules) = locked { core in
            (core.unknownEventSlots.map { core.streams.name($0) }, core.unknownScenarios, core.rules)
        }
        let streams = rules.streams.names
        let names = rules.scenarios.map(\.name) + rules.groups.map(\.name)
        return events.map { UnknownName(kind: .event, name: $0, suggestions: Suggestions.closest(to: $0, in: streams)) }
            + scenarios.map {
                UnknownName(kind: .scenario, name: $0, suggestions: Suggestions.closest(to: $0, in: names))
            }
    }

}

extension StringProtocol {
    /// The name as a `String`: itself when it is one (the cast folds away when the call is
    /// specialized), else a copy. `String(name)` would go through a generic conversion.
    @inlinable @inline(__always)
    var ruleName: String { self as? String ?? String(self) }
}
