import Foundation
import RuleLang

/// Evaluates `.rules` scenarios against durable counters and timestamps.
///
/// Safe to call from any thread: every call runs under one lock, on the engine's
/// `EngineCore`. Provider closures, the clock and the store error handler run under that
/// lock too, so they must not call the engine: one that does stops the process with a message
/// naming the call and the callback, rather than deadlocking.
public final class RuleEngine: @unchecked Sendable {
    private let lock = NSLock()
    /// The thread holding `lock` (0 when none): a callback calling the engine stops with a message
    /// instead of deadlocking.
    private let owner = ThreadMark()
    /// The state, reached only through ``locked(_:)``; allocated once, so calls pay no exclusivity
    /// check. Measured 2026-11-27 against a `var core: EngineCore` (the checked form: a dynamic
    /// exclusivity check on every call), three paired `rulebench calls` rounds: `try_handle_vs_limit`
    /// 0.91/0.91/0.92x against 1.08/1.09/0.93x (the checked form fails its goal of 1x in two),
    /// `try_no_vs_limit` 1.10/1.11/1.11x against 1.29/1.31/1.14x.
    private let core: UnsafeMutablePointer<EngineCore>

    /// Warnings found in the rules (errors make the initializer throw), and about stored
    /// state the rules no longer fit (a stored param value of another type, ignored); those of
    /// the rules swapped in last, after ``replaceRules(sources:origin:version:)``.
    public var warnings: [Diagnostic] { locked { $0.warnings } }

    /// The last error the store reported while saving, if any; the call's effect stays in memory.
    public var lastStoreError: RuleStoreError? { locked { $0.hooks.failure } }

    /// Called whenever the store fails to save a change. It runs under the engine's
    /// lock: it must not call the engine.
    public var storeErrorHandler: (@Sendable (RuleStoreError) -> Void)? {
        get { locked { $0.hooks.failureHandler } }
        set { locked { $0.hooks.failureHandler = newValue } }
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

    /// Rules checked and lowered once, for many engines (RuleServer: one engine per call, each
    /// over one install's state): no engine lowers them again.
    package struct Prepared: Sendable {
        let result: CheckResult
        let rules: CompiledRules

        /// `result` (without errors) lowered for engines whose options keep `recentLimit`.
        package init(_ result: CheckResult, recentLimit: Int) {
            self.result = result
            rules = CompiledRules(program: result.program, recentLimit: recentLimit)
        }
    }

    /// An engine over rules checked and lowered once for many engines (`options.recentLimit`
    /// must be the one they were lowered for).
    package convenience init(prepared: Prepared, store: RuleStore, clock: RuleClock, options: Options) throws {
        try self.init(checked: prepared.result, store: store, clock: clock, options: options, lowered: prepared.rules)
    }

    /// An engine over rules already checked (a delivery checks them before it decides to run them),
    /// from `origin`.
    init(
        checked result: CheckResult, store: RuleStore, clock: RuleClock, options: Options,
        origin: ActiveRules.Origin = .given, version: String? = nil, staged: StagedStreams? = nil,
        listed: ListedStreams? = nil, lowered: CompiledRules? = nil
    ) throws {
        if result.hasErrors { throw RuleEngineError.invalidRules(result.diagnostics) }
        // With a large state read early, the fingerprints of long `on` lists are computed on
        // another thread while the state is decoded, and stored before anything reads them.
        var built =
            lowered == nil
            ? CompiledRules.Builder(
                program: result.program, recentLimit: options.recentLimit, fingerprintsLater: staged != nil,
                listed: listed) : nil
        let fingerprints = built?.fingerprintInBackground()
        let state: EngineState
        do {
            // A store that holds its entries as bytes hands them over as they are.
            let stored = try (store as? RecordStore)?.loadEntries() ?? StoredEntries(try store.load())
            state = try EngineState(stored, streams: lowered?.streams ?? built!.streams, staged: staged)
            if let fingerprints { built?.storeFingerprints(fingerprints()) }
            try store.didLoad()
        } catch let error as RuleStoreError {
            throw RuleEngineError.store(error)
        } catch {
            throw RuleEngineError.store(.other(error))
        }
        let rules = lowered ?? CompiledRules(built!)
        self.clock = clock
        shared = (store as? FileStore).flatMap { $0.options.shared ? $0 : nil }
        // History under former names (`was`) moves in one record, before anything else is written;
        // rules from a delivery are recorded with it.
        let hooks = EngineHooks(clock: clock, store: store, options: options)
        let active = { ActiveRules(program: result.program, origin: origin, version: version, activated: $0) }
        var prepared = EngineCore.prepare(rules: rules, state: consume state, hooks: hooks)
        try prepared.finish(hooks: nil, journal: [], active: active, diagnostics: result.diagnostics)
        // Shared: another process appended between this start's read and its write, and the
        // write was refused (a call runs again on the state read anew; a start too). Without
        // this, a start's record (the renames it records, the history it moves) was lost.
        var attempts = 0
        while prepared.core.conflicted, let shared, attempts < 3 {
            attempts += 1
            let again: EngineState
            do {
                again = try EngineState(try shared.reloadAll(), streams: rules.streams, staged: staged)
            } catch let error as RuleStoreError {
                throw RuleEngineError.store(error)
            } catch {
                throw RuleEngineError.store(.other(error))
            }
            prepared = EngineCore.prepare(rules: rules, state: again, hooks: hooks)
            try prepared.finish(hooks: nil, journal: [], active: active, diagnostics: result.diagnostics)
        }
        prepared.core.conflicted = false
        recentLimit = options.recentLimit
        presentationTimeout =
            options.presentationTimeout.isFinite ? max(1, options.presentationTimeout) : 3_600
        core = .allocate(capacity: 1)
        core.initialize(to: prepared.core)
        // Shared: what the engine wrote at its start (moves, a merge, the active rules) took the
        // file's lock; it is let go now, as at the end of every call, not at the next call.
        shared?.endCall()
    }

    deinit {
        // A file deleted, replaced or cut short since the last check is written again now,
        // from the engine's memory if need be (the store alone could not).
        if core.pointee.hooks.store is FileStore { core.pointee.verifyStore() }
        for observer in core.pointee.hooks.observers.values { observer.finish() }
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
        // A presentation on screen long enough counts before anything reads the state.
        core.pointee.settleCountsIfDue()
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
        guard !core.pointee.hooks.observers.isEmpty, let wakeUp = refreshObservers() else {
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
    /// ``Options/presentationTimeout``, at least a second.
    package let presentationTimeout: Double
    /// The clock, the same the core reads: kept here to ask for wake-ups outside the lock.
    let clock: RuleClock
    /// The store, when it is a file other processes write too.
    let shared: FileStore?
    /// Tests: runs after a swap's first step, before it reads and decodes the store outside the lock.
    var betweenSwapSteps: (() -> Void)?
    /// Swaps whose new core was made from the state decoded outside the lock (changed under it).
    var journaledSwaps = 0

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
        let due = locked { core in
            core.startSession(version: version)
            // A launch is in the foreground: a presentation on screen counts again.
            return core.hooks.inBackground ? core.setBackground(false) : .infinity
        }
        if due.isFinite { scheduleCount(at: due) }
    }

    /// Checks that the store's file is still where it was and writes it again from memory if it
    /// was deleted or replaced (reported through ``lastStoreError``). Call it when the app is
    /// about to be suspended (SwiftUI: `scenePhase` becoming `.background`): a file deleted
    /// under a running engine then loses nothing, even when the app is killed in the background.
    /// The store also checks at most once a millisecond while appending (the path itself at most
    /// every 50 ms, the open file's link count and size in between), at `startSession`, and
    /// when it is released.
    ///
    /// It also ends the run's watch for a crash (language 1.2's `crash` stream): a process
    /// killed while suspended, or quit from the app switcher, did not crash. Call it too when a
    /// Mac app is about to quit.
    public func prepareForSuspension() {
        locked { core in
            core.verifyStore()
            core.markSuspended()
            _ = core.setBackground(true)
        }
    }

    // MARK: - Events

    /// Records one event on `event`'s stream (a scenario's own stream, or one named by `on`):
    /// `engine.trigger(.launch)`, or `engine.trigger("launch")`.
    public func trigger(_ event: Event) {
        locked { core in core.trigger(core.slot(event, serial: core.serial)) }
    }

    /// Records one occurrence of `event` with its properties (language 1.2's
    /// `event purchase(amount: int, plan: string)`): it counts as ``trigger(_:)-(Event)``
    /// counts it, and each filter of the rules over it (`count(purchase where amount >= 10
    /// within 30d)`) counts it too when the properties pass. A property the filter reads that is
    /// missing, or of another type than declared, fails that filter; properties the rules do not
    /// declare are ignored. Nothing stores the properties themselves: each filter keeps a count
    /// of its own. `rulec gen swift` writes a typed form, `engine.trigger(.purchase(amount: 12,
    /// plan: "pro"))`, whose missing property is a compile error.
    ///
    /// ```swift
    /// engine.trigger("purchase", properties: ["amount": 12, "plan": "pro"])
    /// ```
    public func trigger(_ event: Event, properties: [String: PropertyValue]) {
        locked { core in core.trigger(core.slot(event, serial: core.serial), properties: properties) }
    }

    // MARK: - Executing

    /// Evaluates `scenario` (with its group's clauses); if it passes, records one execution and
    /// returns true, else changes nothing and returns false. An unknown name returns false
    /// (``explain(_:)-(Scenario)`` says why).
    ///
    /// It spends an execution when it answers true, so its result must be used: when the app may
    /// fail to show the scenario after all, use ``canExecute(_:)-(Scenario)`` and
    /// ``recordExecution(_:)-(Scenario)`` instead (check, try to show, count only if shown).
    public func tryToExecute(_ scenario: Scenario) -> Bool {
        decide(.tryToExecute, resolve: { $0.scenario(scenario) }, answer: { $0.tryToExecute($1) })
    }

    /// True when `scenario` would run now; records nothing. The first half of the two-phase
    /// form: `if engine.canExecute(s), show() { engine.recordExecution(s) }`.
    public func canExecute(_ scenario: Scenario) -> Bool {
        decide(.canExecute, resolve: { $0.scenario(scenario) }, answer: { $0.wouldShow($1, now: $0.now()) })
    }

    /// Records one execution of `scenario` now, whatever its clauses say: the second half of
    /// the two-phase form, called once the app has shown the scenario. Counts toward its
    /// `max_exec`, `between` and its group's budget exactly as an execution by
    /// ``tryToExecute(_:)-(Scenario)``. Returns false (and records nothing) for an unknown name.
    @discardableResult
    public func recordExecution(_ scenario: Scenario) -> Bool {
        locked { core in
            guard let index = core.scenario(scenario) else { return false }
            core.recordExecution(index)
            return true
        }
    }

    /// Among `scenarios` (default: every scenario; unknown names are ignored), executes and
    /// returns the eligible scenario with the highest `priority` (ties: declaration order); nil
    /// if none is eligible. A scenario given by a former name (`was`) is returned as given.
    @discardableResult
    public func executeNext(among scenarios: [Scenario]? = nil) -> Scenario? {
        guard let scenarios else { return next { core in Array(core.rules.scenarios.indices) }.map { Scenario($0) } }
        guard let chosen = next(among: { core in scenarios.compactMap { core.scenario($0) } }) else { return nil }
        if let handle = scenarios.first(where: { $0.name == chosen }) { return handle }
        // Given by a former name (`was`): the handle the app passed.
        return locked { core in
            scenarios.first { core.rules.formerScenarios[$0.name].map { core.rules.scenarios[$0].name } == chosen }
        }
    }

    /// Forgets `scenario`'s executions and makes it count only events recorded from now on.
    /// Shared streams are kept, so other scenarios and `count()` still see them. A group's name
    /// resets the group's shared budget (as ``reset(group:)``). Returns false for an unknown name.
    @discardableResult
    public func reset(_ scenario: Scenario) -> Bool {
        locked { core in
            if core.reset(scenario.name) { return true }
            core.noteUnknownScenario(scenario.name)
            return false
        }
    }

    /// Resets `group`'s shared budget; false for an unknown group.
    @discardableResult
    public func reset(group: RuleGroup) -> Bool {
        locked { core in
            (core.rules.groupIndex[group.name] ?? core.rules.formerGroups[group.name]) != nil
                && core.reset(group.name)
        }
    }

    /// Says, clause by clause, why `scenario` would or would not run now. Asked by a former
    /// name (`was`), it answers under that name and gives the current one in
    /// ``Explanation/currentName``.
    public func explain(_ scenario: Scenario) -> Explanation {
        locked { core in
            guard let index = core.scenario(scenario) else {
                return Explanation(scenario: scenario.name, isKnown: false, wouldRun: false, clauses: [], earliest: nil)
            }
            var explanation = core.explain(index)
            if explanation.scenario != scenario.name {
                explanation.currentName = explanation.scenario
                explanation.scenario = scenario.name
            }
            return explanation
        }
    }
}
