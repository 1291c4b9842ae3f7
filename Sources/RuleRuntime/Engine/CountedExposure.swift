import Foundation
import RuleLang

/// A presentation of a `counts after D visible` scenario not counted yet (language 1.3): how
/// long it has been on screen. Kept by the engine that presented it, in memory only: a process
/// that ends before the time is reached never counts it.
struct CountedPresentation {
    let serial: UInt64
    /// The scenario's name when presented (found again by name after a swap).
    let scenario: String
    /// Seconds on screen it needs (`counts after D visible`).
    let needed: Double
    /// When its presentation expires: time on screen after it counts for nothing.
    let expires: Double
    /// Seconds on screen in the spans closed so far.
    var seen: Double = 0
    /// Between ``RuleEngine/visible(_:)`` and ``RuleEngine/hidden(_:)``.
    var visible = false
    /// The start of the span counting now (visible, and the app in the foreground).
    var since: Double?

    /// When it counts if it stays on screen (infinity while no span is counting, or when that
    /// is after its expiry: it never counts then).
    var due: Double {
        guard let start = since else { return .infinity }
        let reached = start + needed - seen
        return reached <= expires ? reached : .infinity
    }

    /// Seconds on screen at `time`, the counting span included (up to the expiry).
    func onScreen(at time: Double) -> Double {
        seen + (since.map { Swift.max(0, Swift.min(time, expires) - $0) } ?? 0)
    }

    /// Closes the counting span at `time`.
    mutating func pause(at time: Double) {
        guard let start = since else { return }
        seen += Swift.max(0, Swift.min(time, expires) - start)
        since = nil
    }
}

/// Exposure counted when seen (language 1.3): grammar.md, "Counted exposure".
extension RuleEngine {
    /// Says that `presentation` is on screen: for a scenario with `counts after D visible`, its
    /// time on screen runs from now (paused while the app is in the background, between
    /// ``prepareForSuspension()`` and ``enteredForeground()``) until ``hidden(_:)``, its
    /// finish or its expiry; the execution is recorded at the moment the sum reaches D (the
    /// clock is asked to wake the engine then; any call after it records it too). Does
    /// nothing for a presentation that counted when presented or has counted already.
    /// Throws ``RuleEngineError/presentationNotOpen(scenario:)`` for one finished, or made by
    /// another engine.
    public func visible(_ presentation: Presentation) throws {
        let due = try locked { core in try core.setVisible(presentation, true) }
        if due.isFinite { scheduleCount(at: due) }
    }

    /// Says that `presentation` is no longer on screen (another view covers it, it scrolled
    /// away): its time on screen stops until ``visible(_:)``. Throws as ``visible(_:)``.
    public func hidden(_ presentation: Presentation) throws {
        _ = try locked { core in try core.setVisible(presentation, false) }
    }

    /// Asks the clock to wake the engine at `time`, when a presentation counts if it stays on screen.
    func scheduleCount(at time: Double) {
        clock.wakeUp(at: Date(timeIntervalSince1970: time)) { [weak self] in
            // The call itself records a count that is due (settleCountsIfDue, in `locked`).
            self?.locked { _ in }
        }
    }
}

extension EngineCore {
    /// Presentation `presentation`'s time on screen starts (`visible`) or stops; the next time
    /// it counts if it stays so (infinity: none).
    mutating func setVisible(_ presentation: Presentation, _ visible: Bool) throws -> Double {
        guard hooks.openPresentations.contains(where: { $0.serial == presentation.serial && $0 == presentation }) else {
            throw RuleEngineError.presentationNotOpen(scenario: presentation.scenario)
        }
        let time = now()
        settleCounts(now: time)
        guard let position = hooks.counted.firstIndex(where: { $0.serial == presentation.serial }) else {
            return .infinity
        }
        var item = hooks.counted[position]
        if visible && !item.visible {
            item.visible = true
            if !hooks.inBackground && time < item.expires { item.since = time }
        } else if !visible && item.visible {
            item.visible = false
            item.pause(at: time)
        }
        hooks.counted[position] = item
        noteCountDue()
        return item.due
    }

    /// The app went to the background (`true`) or came back: every counting span stops, or
    /// starts again for the presentations on screen.
    mutating func setBackground(_ background: Bool) -> Double {
        let time = now()
        settleCounts(now: time)
        hooks.inBackground = background
        for position in hooks.counted.indices {
            if background {
                hooks.counted[position].pause(at: time)
            } else if hooks.counted[position].visible && hooks.counted[position].since == nil
                && time < hooks.counted[position].expires
            {
                hooks.counted[position].since = time
            }
        }
        noteCountDue()
        return hooks.countDue
    }

    /// Starts following the presentation just made of scenario `index`, when it counts after a
    /// time on screen.
    mutating func followCount(_ presentation: Presentation, needed: Double, expires: Double) {
        // A presentation made anew ends the count of one before it (expired, never finished).
        let index = presentation.index
        let before = hooks.counted.filter { indexOf(counted: $0) != index }
        hooks.counted = before
        hooks.counted.append(
            CountedPresentation(
                serial: presentation.serial, scenario: presentation.scenario,
                needed: needed, expires: expires))
        // Bounded as the open presentations are: the oldest beyond them can no longer count.
        if hooks.counted.count > EngineCore.openPresentationLimit { hooks.counted.removeFirst() }
    }

    /// The scenario a followed presentation is of, in the rules now (by its name or a former one).
    func indexOf(counted item: CountedPresentation) -> Int? {
        scenarioIndex[item.scenario] ?? rules.formerScenarios[item.scenario]
    }

    /// Records the executions of the presentations whose time on screen reached what they need
    /// by `time`, each at the moment it did. One whose expiry came first never counts (its
    /// ``CountedPresentation/due`` is infinite); it is forgotten when finished, when its
    /// scenario is presented anew, or at a crash.
    mutating func settleCounts(now time: Double) {
        guard !hooks.counted.isEmpty else { return }
        var position = 0
        while position < hooks.counted.count {
            let item = hooks.counted[position]
            let reached = item.due
            guard reached <= time else {
                position += 1
                continue
            }
            hooks.counted.remove(at: position)
            // Rules swapped meanwhile without the scenario: nothing to record it under.
            if let index = indexOf(counted: item) {
                if shared { _ = lockFileForWriting() }
                recordExecution(index, at: reached)
                commit()
            }
        }
        noteCountDue()
    }

    /// ``settleCounts(now:)`` when one may be due: every call of the engine asks (one compare
    /// when nothing is on screen).
    @inline(__always)
    mutating func settleCountsIfDue() {
        if hooks.countDue.isFinite { settleCountsIfAny() }
    }

    /// Reads the clock as ``now()`` does but deletes no expired to-do: the clock's wake-up is
    /// the engine's own call, not the app's, and changes nothing but the count.
    @inline(never)
    private mutating func settleCountsIfAny() {
        guard let time = readClock() else { return }
        if time >= hooks.countDue { settleCounts(now: time) }
    }

    /// Stops following `presentation` (finished): what it reached by now was recorded first.
    mutating func endCount(of presentation: Presentation, now time: Double) {
        guard !hooks.counted.isEmpty else { return }
        settleCounts(now: time)
        hooks.counted.removeAll { $0.serial == presentation.serial }
        noteCountDue()
    }

    /// A crash: the run's presentations never count (their time on screen ended with it), and
    /// the launch after it is in the foreground.
    mutating func forgetCounts() {
        hooks.counted.removeAll()
        hooks.inBackground = false
        noteCountDue()
    }

    mutating func noteCountDue() {
        hooks.countDue = hooks.counted.reduce(Double.infinity) { Swift.min($0, $1.due) }
    }

    /// `counts after D visible`'s line of an explanation: how long this engine's presentation
    /// of scenario `index` has been on screen, if one is open.
    func countLine(of index: Int, now time: Double) -> ClauseExplanation? {
        let needed = rules.scenarios[index].countsAfter
        guard needed > 0 else { return nil }
        let text = "counts after \(DurationText.format(Int64(needed))) visible"
        guard let item = hooks.counted.last(where: { indexOf(counted: $0) == index }) else {
            return ClauseExplanation(clause: text, group: nil, passes: true, detail: "counts once on screen that long")
        }
        var detail = "on screen \(EngineCore.tenths(item.onScreen(at: time))) of \(DurationText.format(Int64(needed)))"
        if !item.visible {
            detail += ", hidden"
        } else if hooks.inBackground {
            detail += ", in the background"
        }
        return ClauseExplanation(clause: text, group: nil, passes: true, detail: detail)
    }

    /// `2.1s`, `3s`, `1m 4.5s`: seconds to a tenth.
    static func tenths(_ seconds: Double) -> String {
        let total = (seconds * 10).rounded()
        let minutes = Int64(total / 600)
        let rest = total - Double(minutes) * 600
        let secondsText =
            rest.truncatingRemainder(dividingBy: 10) == 0
            ? "\(Int64(rest / 10))s" : "\(Int64(rest) / 10).\(Int64(rest) % 10)s"
        if minutes == 0 { return secondsText }
        return DurationText.format(minutes * 60) + (rest == 0 ? "" : " " + secondsText)
    }
}
