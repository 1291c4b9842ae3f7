import Foundation
import RuleLang
import RuleRuntime
import TestSupport
import XCTest

/// 10,000 random lifecycles of a `counts after 3s visible` prompt (present, visible, hidden,
/// background, foreground, waits, finish, expiry, crash) against a model that keeps each
/// presentation's spans on screen as a plain list and adds them up at the end: the engine never
/// counts an exposure twice, before its time, or after a finish, expiry or crash that came first.
final class CountedLifecycleTests: XCTestCase {
    let rules = """
        # language 1.3
        scenario Banner < counts after 3s visible >
        """
    static let needed = 3.0
    static let timeout = 10.0

    /// One presentation as the model sees it: the spans it was on screen (the app in the
    /// foreground, its process alive, before its finish and its expiry).
    struct ModelPresentation {
        var opened: Double
        var finished = false
        var orphaned = false
        var visible = false
        var spanStart: Double?
        var spans: [(Double, Double)] = []

        var expires: Double { opened + CountedLifecycleTests.timeout }

        /// The moment its spans add up to the time needed, if they do.
        func reached() -> Double? {
            var sum = 0.0
            for (start, end) in spans {
                let end = min(end, expires)
                guard end > start else { continue }
                if sum + (end - start) >= CountedLifecycleTests.needed {
                    return start + (CountedLifecycleTests.needed - sum)
                }
                sum += end - start
            }
            return nil
        }
    }

    func testTenThousandLifecyclesCountEachExposureOnceAndOnTime() throws {
        let runs = Int(ProcessInfo.processInfo.environment["RULES_LIFECYCLES"] ?? "") ?? 10_000
        var random = SeededGenerator(seed: 0x5EE_0_C0DE)
        var options = RuleEngine.Options()
        options.presentationTimeout = CountedLifecycleTests.timeout
        var counted = 0
        for run in 0..<runs {
            let clock = ManualClock()
            let store = InMemoryStore()
            var engine = try RuleEngine(source: rules, store: store, clock: clock, options: options)
            var presentations: [ModelPresentation] = []
            var current: Presentation?
            var background = false
            var steps: [String] = []
            func time() -> Double { clock.now().timeIntervalSince1970 }
            /// Closes or opens the latest presentation's span after a change of the model's state.
            func update() {
                guard var last = presentations.last else { return }
                let counting = last.visible && !background && !last.finished && !last.orphaned
                if counting && last.spanStart == nil {
                    last.spanStart = time()
                } else if !counting, let start = last.spanStart {
                    last.spans.append((start, time()))
                    last.spanStart = nil
                }
                presentations[presentations.count - 1] = last
            }
            for _ in 0..<Int.random(in: 4...24, using: &random) {
                let live = presentations.last.map { !$0.finished && !$0.orphaned } ?? false
                // Mostly a presentation's own steps while one is open, mostly waits and
                // presentations while none is.
                let step =
                    live ? Int.random(in: 0..<11, using: &random) : [0, 0, 4, 6, 9].randomElement(using: &random)!
                switch step {
                case 0:
                    steps.append("present")
                    let held = presentations.last.map { !$0.finished && time() < $0.expires } ?? false
                    let made = engine.present("Banner")
                    XCTAssertEqual(made == nil, held, "run \(run): \(steps)")
                    if let made {
                        // The one before (expired unfinished) stops counting at its expiry; the
                        // steps below act on the new one.
                        if let start = presentations.last?.spanStart {
                            presentations[presentations.count - 1].spans.append((start, time()))
                            presentations[presentations.count - 1].spanStart = nil
                        }
                        current = made
                        presentations.append(ModelPresentation(opened: time()))
                    }
                case 1 where live, 2 where live:
                    steps.append("visible")
                    try engine.visible(current!)
                    presentations[presentations.count - 1].visible = true
                    update()
                case 3 where live:
                    steps.append("hidden")
                    try engine.hidden(current!)
                    presentations[presentations.count - 1].visible = false
                    update()
                case 4:
                    steps.append(background ? "foreground" : "background")
                    if background { engine.enteredForeground() } else { engine.prepareForSuspension() }
                    background.toggle()
                    update()
                case 5 where live:
                    steps.append("finish")
                    try engine.finish(current!, .dismissed)
                    presentations[presentations.count - 1].finished = true
                    update()
                case 6:
                    steps.append("crash")
                    if !presentations.isEmpty {
                        presentations[presentations.count - 1].orphaned = true
                        update()
                    }
                    current = nil
                    engine = try RuleEngine(source: rules, store: store, clock: clock, options: options)
                    engine.relaunchAfterCrash()
                    background = false
                default:
                    // Quarter seconds: every sum of times is exact.
                    let wait = Double(Int.random(in: 1...24, using: &random)) / 4
                    steps.append("wait \(wait)")
                    clock.advance(by: wait)
                }
            }
            clock.advance(by: 100)
            if !presentations.isEmpty {
                presentations[presentations.count - 1].orphaned = true
                update()
            }
            let expected = presentations.compactMap { $0.reached() }
            counted += expected.count
            let view = try StateSnapshot(entries: store.load()).scenarios["Banner"]?.executions
            XCTAssertEqual(Int(view?.total ?? 0), expected.count, "run \(run): \(steps)")
            XCTAssertEqual(Array(view?.recent.suffix(expected.count) ?? []), expected, "run \(run): \(steps)")
            if Int(view?.total ?? 0) != expected.count { break }
        }
        XCTAssertGreaterThan(counted, runs / 10, "lifecycles that count are common enough to test")
    }
}
