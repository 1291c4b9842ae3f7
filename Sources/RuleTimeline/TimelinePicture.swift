import Foundation
import RuleLang
import RuleRuntime

/// A timeline drawn: one self-contained HTML page (inline SVG and a little inline script, nothing
/// fetched) with a lane per scenario and per group, eligible spans in green, executions as ticks,
/// `try` answers as dots, events as marks on their streams' lanes, and sessions, rule swaps and
/// zone changes as markers; hovering shows the explain line of that lane at that moment.
/// `rulec simulate --html FILE` writes it.
///
/// A lane's state is sampled before every step, after the last step at each time, at the
/// earliest time a refused scenario's clauses pass, and at 300 even points of the range; it is
/// drawn constant from one sample to the next. Sampling explains only (it changes no state).
public struct TimelinePicture {
    /// The simulation's output lines, as `rulec simulate` prints them.
    public private(set) var lines: [String] = []
    /// The page.
    public private(set) var html = ""

    /// A lane's state at one sample: whether `try` would say yes, and the explain line.
    struct State: Equatable {
        enum Answer: String { case yes, no, absent }
        var answer: Answer
        var reason: String
        /// For a scenario that would not run: when its time-based clauses pass, if waiting can
        /// make them (``Explanation/earliest``).
        var earliest: Date? = nil
    }

    struct Lane {
        enum Kind: String { case scenario, group, stream }
        var name: String
        var kind: Kind
        /// One state per sample (scenarios and groups).
        var states: [State] = []
    }

    struct Mark {
        var lane: String
        var seconds: Int64
        var sample: Int
        var text: String
        var answer: String?
        /// The step came after a later one (the clock set back): no sample was taken for it.
        var behind = false
        /// What it marks, when a tick or a session line is of a kind of its own (`outcome`,
        /// `crash`, `control`): a class of the element, drawn apart and named in the legend.
        var kind: String?
        /// For a span of time (a presentation on screen): where it ends.
        var until: Int64?
    }

    /// Replays `steps` like ``TimelineRunner/run(_:on:clock:json:)`` and draws them. `zone` is
    /// the device's zone at the start: the time axis is drawn in it.
    public init(
        steps: [TimelineStep], engine: RuleEngine, clock: ManualClock, zone: TimeZone, title: String,
        json: Bool = false
    ) {
        var lanes: [Lane] = []
        var index: [String: Int] = [:]
        func laneIndex(_ name: String, _ kind: Lane.Kind) -> Int {
            let key = kind.rawValue + ":" + name
            if let found = index[key] { return found }
            lanes.append(Lane(name: name, kind: kind))
            index[key] = lanes.count - 1
            return lanes.count - 1
        }
        /// Scenarios counted once seen (`counts after D visible`, language 1.3): a presentation of
        /// one is no execution; its execution is drawn where the engine recorded it, read from the
        /// exposure log (turned on in this simulation's engine only when the rules need it).
        var counted: Set<String> = []
        func addRuleLanes() {
            for scenario in engine.program.scenarios { _ = laneIndex(scenario.name, .scenario) }
            for group in engine.program.groups { _ = laneIndex(group.name.text, .group) }
            counted = Set(
                engine.program.scenarios.filter { scenario in
                    scenario.decl.clauses.contains { if case .countsAfter = $0.kind { true } else { false } }
                }.map(\.name))
            if !counted.isEmpty { _ = engine.exposures(lease: 0) }
        }
        addRuleLanes()
        var times: [Int64] = []
        var ticks: [Mark] = []
        var tries: [Mark] = []
        var events: [Mark] = []
        var markers: [Mark] = []
        /// Presentations from `present` to `finish` (or to their expiry).
        var showings: [Mark] = []
        var opened: [String: (seconds: Int64, sample: Int)] = [:]
        /// Control exposures (a holdout) are found by counting each scenario's before and after a step.
        let holdouts = engine.usesInstallID
        func controlExposures() -> [String: Int] {
            guard holdouts else { return [:] }
            var counts: [String: Int] = [:]
            for lane in lanes where lane.kind == .scenario {
                counts[lane.name] = engine.controlExposures(of: Scenario(lane.name))
            }
            return counts
        }
        let first = steps.map(\.offset).min() ?? 0
        let last = steps.map(\.offset).max() ?? 0
        let end = last + max(3_600, (last - first) / 20)
        let grid = (0...300).map { first + (end - first) * Int64($0) / 300 }

        // Once the clock has been set back, explaining at a time before the latest time reached
        // would re-base the times recorded ahead (grammar.md, "A clock that goes backwards") and
        // so change later answers; the picture takes no sample there, and draws on from the
        // next moment that is not behind.
        var latest = Int64.min
        /// The executions of counted presentations the clock's wake-ups recorded (`draw`), or the
        /// exposures a call made itself, drawn by its step (not `draw`): read and acknowledged.
        func drainCounted(draw: Bool) {
            guard !counted.isEmpty else { return }
            let drained = engine.exposures(lease: 0)
            engine.acknowledge(drained)
            guard draw else { return }
            for exposure in drained where exposure.kind == .execution && counted.contains(exposure.scenario) {
                let seconds = Int64(exposure.time.timeIntervalSince(TimelineRunner.start).rounded())
                ticks.append(
                    Mark(
                        lane: exposure.scenario, seconds: seconds, sample: max(0, times.count - 1),
                        text: "counted once seen"))
            }
        }
        func sample(at seconds: Int64) {
            guard seconds >= latest else { return }
            clock.set(TimelineRunner.start.addingTimeInterval(TimeInterval(seconds)))
            drainCounted(draw: true)
            times.append(seconds)
            // Each scenario explained once a sample; a group's lane reads its first member's.
            var explained: [String: Explanation] = [:]
            func explain(_ name: String) -> Explanation {
                if let found = explained[name] { return found }
                let explanation = engine.explain(Scenario(name))
                explained[name] = explanation
                return explanation
            }
            for k in lanes.indices {
                switch lanes[k].kind {
                case .scenario:
                    let explanation = explain(lanes[k].name)
                    let answer: State.Answer = !explanation.isKnown ? .absent : explanation.wouldRun ? .yes : .no
                    lanes[k].states.append(
                        State(answer: answer, reason: explanation.reason, earliest: explanation.earliest))
                case .group:
                    let group = lanes[k].name
                    guard let member = engine.program.scenarios.first(where: { $0.group == group }) else {
                        lanes[k].states.append(State(answer: .absent, reason: "no such group in these rules"))
                        continue
                    }
                    let failing = explain(member.name).failing.filter { $0.group == group }
                    lanes[k].states.append(
                        State(
                            answer: failing.isEmpty ? .yes : .no,
                            reason: failing.isEmpty
                                ? "open" : failing.map { "\($0.clause): \($0.detail)" }.joined(separator: "; ")))
                case .stream:
                    // An event's lane has no answer: nothing is kept per sample (a state for each
                    // of them made the page grow with samples times distinct events).
                    break
                }
            }
        }
        /// The samples after the steps at `now`, up to (not including) `next`.
        func sampleBetween(_ now: Int64, _ next: Int64) {
            sample(at: now)
            var points = Set(grid.filter { $0 > now && $0 < next })
            for lane in lanes where now >= latest && lane.kind == .scenario && lane.states.last?.answer == .no {
                if let earliest = lane.states.last?.earliest {
                    let seconds = Int64(earliest.timeIntervalSince(TimelineRunner.start).rounded(.up))
                    if seconds > now && seconds < next { points.insert(seconds) }
                }
            }
            for point in points.sorted() { sample(at: point) }
        }

        for (k, step) in steps.enumerated() {
            let behind = step.offset < latest
            if behind && (k == 0 || steps[k - 1].offset >= latest) {
                markers.append(
                    Mark(
                        lane: "back", seconds: step.offset, sample: times.count - 1,
                        text: "clock set back to \(step.timeText)"))
            }
            latest = max(latest, step.offset)
            sample(at: step.offset)
            let before = times.count - 1
            clock.set(TimelineRunner.start.addingTimeInterval(TimeInterval(step.offset)))
            drainCounted(draw: true)
            let exposed = controlExposures()
            let result = TimelineRunner.outcome(step, engine)
            drainCounted(draw: false)
            for (name, count) in controlExposures() where count > exposed[name] ?? 0 {
                ticks.append(
                    Mark(
                        lane: name, seconds: step.offset, sample: before, text: "control exposure (held out)",
                        kind: "control"))
            }
            if let result { lines.append(json ? TimelineRunner.encode(result.output) : result.plain) }
            switch step.action {
            case .tryScenario(let name), .present(let name):
                // An answer: yes (executed; for a presentation, shown), or no with its reason.
                _ = laneIndex(name, .scenario)
                let said = result?.output.result ?? "no"
                let yes = said != "no"
                let text = yes ? said : "no: \(result?.output.reason ?? "")"
                tries.append(
                    Mark(
                        lane: name, seconds: step.offset, sample: before, text: text, answer: yes ? "yes" : "no",
                        behind: behind))
                if yes {
                    let presented = result?.output.step == "present"
                    // A presentation counted once seen is drawn as an execution when it counts.
                    if !(presented && counted.contains(engine.explain(Scenario(name)).currentName ?? name)) {
                        ticks.append(
                            Mark(
                                lane: name, seconds: step.offset, sample: before,
                                text: presented ? "presented" : "executed"))
                    }
                    if presented { opened[name] = (step.offset, before) }
                }
            case .next:
                if let chosen = result?.output.name {
                    ticks.append(
                        Mark(lane: chosen, seconds: step.offset, sample: before, text: "executed (next)"))
                }
            case .trigger(let name), .done(let name), .triggerWith(let name, _):
                _ = laneIndex(name, .stream)
                events.append(Mark(lane: name, seconds: step.offset, sample: before, text: name))
            case .finish(let name, let outcome), .outcome(let name, let outcome):
                _ = laneIndex(name, .scenario)
                // A finish of nothing showing records nothing.
                if case .finish = step.action, result?.output.result != "not showing",
                    let open = opened.removeValue(forKey: name)
                {
                    showings.append(
                        Mark(
                            lane: name, seconds: open.seconds, sample: open.sample,
                            text: "on screen until finished: \(outcome.rawValue)", kind: "showing", until: step.offset))
                }
                if result?.output.result != "not showing" {
                    ticks.append(
                        Mark(
                            lane: name, seconds: step.offset, sample: before, text: "outcome: \(outcome.rawValue)",
                            kind: "outcome"))
                }
            case .crash:
                markers.append(
                    Mark(
                        lane: "launch", seconds: step.offset, sample: before, text: "crash, then launch", kind: "crash")
                )
            case .launch(let version):
                markers.append(Mark(lane: "launch", seconds: step.offset, sample: before, text: "launch \(version)"))
            case .rules(let path, _):
                addRuleLanes()
                markers.append(Mark(lane: "rules", seconds: step.offset, sample: before, text: "rules \(path)"))
            case .timeZone(let zone):
                markers.append(
                    Mark(lane: "zone", seconds: step.offset, sample: before, text: "zone \(zone.identifier)"))
            case .enter(let context), .leave(let context):
                let verb = { if case .enter = step.action { return "enter" } else { return "leave" } }()
                markers.append(
                    Mark(lane: "context", seconds: step.offset, sample: before, text: "\(verb) \(context)"))
            case .visible(let name), .hidden(let name):
                let verb = { if case .visible = step.action { return "on screen" } else { return "hidden" } }()
                if result?.output.result != "not showing" {
                    ticks.append(Mark(lane: name, seconds: step.offset, sample: before, text: verb, kind: "visibility"))
                }
            case .background, .foreground:
                let verb = { if case .background = step.action { return "background" } else { return "foreground" } }()
                markers.append(Mark(lane: "launch", seconds: step.offset, sample: before, text: verb))
            default:
                break
            }
            let next = k + 1 < steps.count ? steps[k + 1].offset : end
            if next != step.offset { sampleBetween(step.offset, max(next, step.offset)) }
        }
        if steps.isEmpty { sampleBetween(first, end) }
        // Presentations never finished: on screen until they expire (or the drawing ends).
        for (name, open) in opened.sorted(by: { $0.value.seconds < $1.value.seconds }) {
            let expiry = open.seconds + Int64(engine.presentationTimeout)
            showings.append(
                Mark(
                    lane: name, seconds: open.seconds, sample: open.sample,
                    text: "on screen, never finished: it expires",
                    kind: "showing", until: min(expiry, end)))
        }
        // Lanes added after the first sample (a swap's new scenarios, streams) were absent before.
        for k in lanes.indices where lanes[k].kind != .stream && lanes[k].states.count < times.count {
            let missing = times.count - lanes[k].states.count
            lanes[k].states.insert(
                contentsOf: repeatElement(State(answer: .absent, reason: "not in these rules"), count: missing), at: 0)
        }
        html = Self.page(
            title: title, zone: zone, first: first, end: end, times: times, lanes: lanes, ticks: ticks,
            tries: tries, events: events, markers: markers, showings: showings)
    }
}
