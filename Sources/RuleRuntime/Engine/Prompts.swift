import Foundation
import RuleLang

/// A prompt on screen: made by ``RuleEngine/present(_:)-(Scenario)``, ended by
/// ``RuleEngine/finish(_:_:)`` with what the user did.
public struct Presentation: Hashable, Sendable {
    /// The scenario presented, by the name the rules give it now.
    public let scenario: String
    /// When it was presented.
    public let opened: Date
    /// Tells this presentation from every other (stored with the hold, across processes).
    public let token: String
    /// Its number among this engine's presentations.
    let serial: UInt64
    /// Its scenario's index in the rules it was made with.
    let index: Int
    /// The to-do it holds (`@showing:GROUP`).
    let hold: String

    public static func == (a: Presentation, b: Presentation) -> Bool { a.token == b.token }
    public func hash(into hasher: inout Hasher) { hasher.combine(token) }
}

/// Outcomes, presentations, crashes and problems (language 1.2): grammar.md, "Prompts and outcomes".
extension RuleEngine {
    /// Records what became of `scenario`'s prompt: an event on its outcome stream, which rules
    /// read as `count(NAME: OUTCOME)`, `since_last(NAME: OUTCOME)` and `after OUTCOME ...`
    /// (`engine.recordOutcome(.declined, of: .rateApp)`). A former name (`was`) records under
    /// the name the scenario has now. Throws ``RuleEngineError/unknownScenario(_:)`` (recording
    /// nothing) for a name the rules lack.
    public func recordOutcome(_ outcome: Outcome, of scenario: Scenario) throws {
        try locked { core in
            guard let index = core.scenario(scenario) else { throw RuleEngineError.unknownScenario(scenario.name) }
            core.recordOutcome(outcome, of: index)
        }
    }

    /// Shows `scenario` if it may run now: evaluates it as ``tryToExecute(_:)-(Scenario)`` does
    /// and, when it passes, records one execution and holds its group (or, outside a group, the
    /// scenario itself) until ``finish(_:_:)``: every scenario held answers no, with the reason
    /// "NAME is showing", in every process sharing the state. A presentation never finished (its
    /// process died) ends ``Options/presentationTimeout`` after it opened. Returns nil,
    /// recording nothing, when the scenario may not run (or the name is unknown).
    public func present(_ scenario: Scenario) -> Presentation? {
        let timeout = presentationTimeout
        var presented: Presentation?
        _ = decide(
            .present, resolve: { $0.scenario(scenario) },
            answer: { core, index in
                presented = core.present(index, timeout: timeout)
                return presented != nil
            })
        return presented
    }

    /// Ends `presentation` with what the user did: records the outcome (as
    /// ``recordOutcome(_:of:)-(_,Scenario)``) and lets go of the hold. A presentation that expired meanwhile
    /// still records its outcome. Throws ``RuleEngineError/presentationNotOpen(scenario:)``,
    /// changing nothing, for one finished already, made by another engine, or among more than
    /// 64 left open by this one (the oldest are forgotten).
    public func finish(_ presentation: Presentation, _ outcome: Outcome) throws {
        try locked { core in try core.finish(presentation, outcome) }
    }

    /// The presentation holding `scenario` now (in this process or another sharing the state),
    /// as its scenario and the time it opened; nil when none is open.
    public func showing(_ scenario: Scenario) -> (scenario: String, opened: Date)? {
        locked { core in
            guard let index = core.scenario(scenario), let item = core.hold(of: index, now: core.now()) else {
                return nil
            }
            return (item.info?["scenario"] ?? "", Date(timeIntervalSince1970: item.created))
        }
    }

    /// Records a problem the app met (an error it recovered from, a failed purchase): an event
    /// on the engine's stream `problem`, which rules read as `since_last(problem)` (language 1.2).
    public func recordProblem() {
        locked { core in
            core.recordEvent(core.slot(EngineStream.problem), at: core.now())
            core.commit()
        }
    }

    /// Plays an unclean end of the app's run and the launch after it, for an app's tests of its
    /// crash cool-off (and timelines' `crash` step): the run is marked as in the foreground, and
    /// a session of the current version begins, which records the crash now (when the rules read
    /// `crash`).
    public func relaunchAfterCrash() {
        locked { core in
            core.forgetCounts()
            core.markRunning()
            // The mark as a run before this one left it: another run's, of a process gone.
            if var mark = core.todos[EngineCore.runKey] {
                mark.info = ["run": "ended"]
                core.todos[EngineCore.runKey] = mark
            }
            core.startSession(version: core.meta.version ?? "")
        }
    }

    /// Ends the presentation of `scenario` whose token is `token`, made by any engine (RuleServer:
    /// every call is a new engine over the stored state): lets go of its hold when it still
    /// holds, and records the outcome, as ``finish(_:_:)`` does. A presentation expired or finished
    /// already has no hold left: the outcome is recorded all the same (a caller retrying says so
    /// with a request id). Throws ``RuleEngineError/unknownScenario(_:)`` for a name the rules lack.
    package func finish(scenario: String, token: String, _ outcome: Outcome) throws {
        try locked { core in
            guard let index = core.scenario(named: scenario) else { throw RuleEngineError.unknownScenario(scenario) }
            if core.shared { _ = core.lockFileForWriting() }
            let held = core.todos.first {
                $0.key.hasPrefix(CompiledRules.holdPrefix) && $0.value.info?["token"] == token
            }
            if let (key, _) = held {
                core.todos[key] = nil
                let storeKey = key == core.rules.holdKeys[index] ? core.rules.holdStoreKeys[index] : StoreKey.todo(key)
                EngineState.write(todoKey: storeKey, nil, into: core.record)
            }
            core.recordOutcome(outcome, of: index)
        }
    }

    /// Stores now what reads re-based in memory (times recorded while the clock was ahead),
    /// which a device keeps in memory until its next write: RuleServer, whose every call is a
    /// new engine over the stored state, stores them at the end of a read so that the next
    /// call reads what this one did.
    package func storeReBasedTimes() {
        locked { $0.storeReBased() }
    }

    /// The presentation of scenario `name` this engine made and has not finished, if any
    /// (timelines' `finish` step), under whichever of its names it was opened.
    package func openPresentation(of name: String) -> Presentation? {
        locked { core in
            guard let index = core.scenario(named: name) else { return nil }
            // Opened under a former name (rules swapped since, `was`): the same scenario.
            return core.hooks.openPresentations.last { core.scenario(named: $0.scenario) == index }
        }
    }

    /// Call when the app returns to the foreground without a new launch (SwiftUI: `scenePhase`
    /// becoming `.active` again): the run is watched for a crash again until the next
    /// ``prepareForSuspension()``. `startSession` does it at launch.
    public func enteredForeground() {
        let due = locked { core in
            core.markRunning()
            return core.setBackground(false)
        }
        if due.isFinite { scheduleCount(at: due) }
    }
}

extension EngineCore {
    /// This process's run, told from every other: a random number drawn once per process.
    static let thisRun: String = {
        var generator = SystemRandomNumberGenerator()
        return String(generator.next(), radix: 36)
    }()
    /// The presentations an engine keeps open at most: the oldest beyond it can no longer be
    /// finished (``RuleEngineError/presentationNotOpen(scenario:)``).
    static let openPresentationLimit = 64
    /// The prefix of the to-dos that mark runs as in the foreground (``runKey``), and the one
    /// mark written before this library, whatever its process.
    static let runningKey = "@running"

    mutating func recordOutcome(_ outcome: Outcome, of index: Int) {
        recordEvent(outcomeSlot(outcome, of: index), at: now())
        commit()
    }

    /// The slot of scenario `index`'s outcome stream `outcome`, looked up by name once.
    mutating func outcomeSlot(_ outcome: Outcome, of index: Int) -> Int {
        let kinds = Outcome.allCases.count
        if outcomeSlots.isEmpty { outcomeSlots = Array(repeating: -1, count: rules.scenarios.count * kinds) }
        let position = index * kinds + Outcome.allCases.firstIndex(of: outcome)!
        if outcomeSlots[position] >= 0 { return Int(outcomeSlots[position]) }
        let slot = slot(EngineStream.outcome(outcome, of: rules.scenarios[index].name))
        outcomeSlots[position] = Int32(slot)
        return slot
    }

    /// The hold on scenario `index` (its group's) pending at `time`, if any: under the name these
    /// rules give it, or under another name of the same scenario or group (``renamedHold(of:now:)``).
    @inline(__always)
    func hold(of index: Int, now time: Double) -> ToDoItem? {
        if todos.isEmpty { return nil }
        return pendingHold(of: index, now: time)
    }

    /// ``hold(of:now:)`` when something is pending: out of line, so that the decision it is
    /// inlined into stays small enough for its clauses to be inlined (callgrind of `rulebench
    /// profile shared-try`).
    @inline(never)
    private func pendingHold(of index: Int, now time: Double) -> ToDoItem? {
        // A hold always expires: one stored without an expiry (damaged, or written by hand) holds nothing.
        if let item = pendingToDo(rules.holdKeys[index], now: time), item.expires != nil { return item }
        // Only when some hold is pending: the running mark alone needs no look at the renames.
        guard !renamed.isEmpty, todos.keys.contains(where: { $0.hasPrefix(CompiledRules.holdPrefix) }) else {
            return nil
        }
        return renamedHold(of: index, now: time)
    }

    /// A hold taken under another name of scenario `index`'s holder (its group, or itself): a
    /// former name (a presentation made before rules with `was` started), or a newer name the
    /// state records a rename to (a process on the same file running rules with the rename).
    /// Every `was` of the rules that ran on the file is recorded (entry `w:`), so the records
    /// give both directions.
    func renamedHold(of index: Int, now time: Double) -> ToDoItem? {
        let scenario = rules.scenarios[index]
        let (kind, holder) =
            scenario.group.map { (RenameKind.group, rules.groups[$0].name) } ?? (.scenario, scenario.name)
        for (key, formers) in renamed {
            guard let (recorded, new) = EngineState.parseRenameKey(key), recorded == kind else { continue }
            let names = formers.split(separator: "\n")
            let others = new == holder ? names.map(String.init) : names.contains(Substring(holder)) ? [new] : []
            for other in others where other != holder {
                let key = CompiledRules.holdPrefix + NameTable.canonical(other)
                if let item = pendingToDo(key, now: time), item.expires != nil { return item }
            }
        }
        return nil
    }

    mutating func present(_ index: Int, timeout: Double) -> Presentation? {
        let time = now()
        var verdict = verdict(index, now: time)
        guard verdict != .refused else {
            noteRefusal(index, now: time)
            return nil
        }
        if shared && lockFileForWriting() { verdict = self.verdict(index, now: time) }
        guard verdict == .shows else {
            if verdict == .heldOut { recordControlExposure(index, at: time) }
            if verdict == .refused { noteRefusal(index, now: time) }
            return nil
        }
        // `counts after D visible`: recorded once on screen that long (``settleCounts(now:)``).
        let needed = rules.scenarios[index].countsAfter
        if needed == 0 { recordExecution(index, at: time) }
        let name = rules.scenarios[index].name
        // Random per engine (tells this engine's holds from another process's), then counted:
        // 32 random bits, so that a token stays within a small string's 15 bytes (no allocation)
        // for its first 16 million presentations.
        let base = engineTag()
        hooks.presentationCount &+= 1
        let serial = hooks.presentationCount
        let token = base + String(serial, radix: 16)
        let key = rules.holdKeys[index]
        let item = ToDoItem(created: time, expires: time + timeout, info: ["scenario": name, "token": token])
        todos[key] = item
        nextExpiry = Swift.min(nextExpiry, time + timeout)
        EngineState.write(todoKey: rules.holdStoreKeys[index], item, into: record)
        commit()
        let presentation = Presentation(
            scenario: name, opened: Date(timeIntervalSince1970: time), token: token, serial: serial, index: index,
            hold: key)
        // Bounded: an app that never finishes its presentations does not grow the engine.
        if hooks.openPresentations.count == EngineCore.openPresentationLimit { hooks.openPresentations.removeFirst() }
        hooks.openPresentations.append(presentation)
        if needed > 0 { followCount(presentation, needed: needed, expires: time + timeout) }
        return presentation
    }

    mutating func finish(_ presentation: Presentation, _ outcome: Outcome) throws {
        guard let open = hooks.openPresentations.lastIndex(where: { $0.serial == presentation.serial }),
            hooks.openPresentations[open].token == presentation.token
        else {
            throw RuleEngineError.presentationNotOpen(scenario: presentation.scenario)
        }
        // The index it was made with while it still names it (rules swapped meanwhile may not).
        let same =
            presentation.index < rules.scenarios.count
            && rules.scenarios[presentation.index].name == presentation.scenario
        guard let index = same ? presentation.index : scenario(named: presentation.scenario) else {
            // Rules swapped meanwhile without the scenario: nothing to record it under.
            hooks.openPresentations.remove(at: open)
            throw RuleEngineError.unknownScenario(presentation.scenario)
        }
        if shared { _ = lockFileForWriting() }
        // Counted after a time on screen: what it reached by now is recorded, the rest never.
        endCount(of: presentation, now: now())
        hooks.openPresentations.remove(at: open)
        // The hold it took, whatever group the scenario is in now (rules swapped meanwhile may
        // have moved it), let go only if it is still this presentation's.
        let key = presentation.hold
        if let item = todos[key], item.info?["token"] == presentation.token {
            todos[key] = nil
            let storeKey = key == rules.holdKeys[index] ? rules.holdStoreKeys[index] : StoreKey.todo(key)
            EngineState.write(todoKey: storeKey, nil, into: record)
        }
        recordOutcome(outcome, of: index)
    }

    /// Marks the app's run as in the foreground: a process in the app's role only (an
    /// extension's runs are not watched), and only when the rules read the `crash` stream (an
    /// app that never asks about crashes is not asked to report its suspensions). Each such
    /// process marks its own run (``runKey``).
    mutating func markRunning() {
        guard rules.streams.index[EngineStream.crash] != nil else { return }
        if hooks.role == nil { hooks.role = ProcessRole.current }
        guard hooks.role != .appExtension, todos[EngineCore.runKey] == nil else { return }
        if shared { _ = lockFileForWriting() }
        let item = ToDoItem(created: now(), expires: nil, info: EngineCore.runMark())
        todos[EngineCore.runKey] = item
        save([EngineState.change(todo: EngineCore.runKey, item)])
    }

    /// At a launch: each run still marked as in the foreground whose process is gone ended
    /// uncleanly: one event on the engine's `crash` stream each, now. A mark of this very run
    /// (a second `startSession`, another engine in this process) is no crash, nor is one of
    /// another process in the app's role that is still running. Then this run is marked.
    mutating func noteLastRun() {
        let ended = todos.filter {
            EngineCore.isRunMark($0.key) && $0.value.info?["run"] != EngineCore.thisRun
                && !EngineCore.isOfAnotherLiveProcess($0.value.info)
        }
        if !ended.isEmpty {
            if shared { _ = lockFileForWriting() }
            let time = now()
            for key in ended.keys.sorted() where todos[key] != nil {
                todos[key] = nil
                recordEvent(slot(EngineStream.crash), at: time)
                record.add(EngineState.change(todo: key, nil))
            }
            commit()
        }
        markRunning()
    }

    /// The app is about to be suspended (or to quit): its run ended cleanly, so far. Only the
    /// process that marked its run lets go of the mark: an extension never does, and no process
    /// clears another's.
    mutating func markSuspended() {
        if hooks.role == nil { hooks.role = ProcessRole.current }
        guard hooks.role != .appExtension else { return }
        let own = [EngineCore.runKey, EngineCore.runningKey].filter {
            todos[$0]?.info?["run"] == EngineCore.thisRun
        }
        guard !own.isEmpty else { return }
        if shared { _ = lockFileForWriting() }
        for key in own { todos[key] = nil }
        save(own.map { EngineState.change(todo: $0, nil) })
    }
}
