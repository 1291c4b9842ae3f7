import Foundation

#if canImport(Observation)
    import Observation

    /// A scenario's eligibility and explanation for SwiftUI (Observation, iOS 17 / macOS 14 and
    /// later; the `AsyncStream` of ``RuleEngine/updates(for:)-(Scenario)`` serves iOS 15 and 16).
    ///
    /// The engine updates it as it updates `updates(for:)`: after any call that changes the
    /// answer or its explanation, and when time alone makes the scenario eligible (the engine
    /// asks its clock to wake it), with no polling. A view holds it and reads its properties:
    ///
    /// ```swift
    /// struct OfferBanner: View {
    ///     @State var offer: ScenarioStatus
    ///     var body: some View { if offer.isEligible { Text("Subscribe?") } }
    /// }
    /// // OfferBanner(offer: engine.status(of: .askToSubscribe))
    /// ```
    ///
    /// Properties change on the thread of the engine call that changed them, and may be read
    /// from any thread (a lock guards them). Releasing the status (with its view) stops its
    /// updates.
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    public final class ScenarioStatus: Observable, @unchecked Sendable {
        /// True when the scenario would run now (what ``RuleEngine/canExecute(_:)-(Scenario)`` answers).
        public var isEligible: Bool {
            registrar.access(self, keyPath: \.isEligible)
            return lock.withLock { stored.isEligible }
        }
        /// Why, clause by clause, with the earliest time (what ``RuleEngine/explain(_:)-(Scenario)`` says).
        public var explanation: Explanation {
            registrar.access(self, keyPath: \.explanation)
            return lock.withLock { stored.explanation }
        }
        /// The scenario it follows.
        public let scenario: Scenario
        private weak var engine: RuleEngine?
        // `@unchecked Sendable`: `lock` guards `stored` and `id`, written by the engine's threads
        // (one call at a time, under the engine's lock) and read from any thread (SwiftUI's main
        // thread); the registrar is thread-safe. Observation's macro would store them unguarded.
        private let lock = NSLock()
        private var stored: (isEligible: Bool, explanation: Explanation)
        private var id: Int?
        private let registrar = ObservationRegistrar()

        init(scenario: Scenario, engine: RuleEngine) {
            self.scenario = scenario
            self.engine = engine
            stored = (
                false,
                Explanation(scenario: scenario.name, isKnown: false, wouldRun: false, clauses: [], earliest: nil)
            )
        }

        func attach() {
            let id = engine?.addStatusObserver(for: scenario) { [weak self] value, explanation in
                self?.update(value, explanation)
            }
            lock.withLock { self.id = id }
        }

        /// Under the engine's lock: each property that changes is changed under `lock`, and
        /// its observers told.
        private func update(_ value: Bool, _ explanation: Explanation) {
            let (eligibleChanged, explanationChanged) = lock.withLock {
                (stored.isEligible != value, stored.explanation != explanation)
            }
            if eligibleChanged {
                registrar.withMutation(of: self, keyPath: \.isEligible) { lock.withLock { stored.isEligible = value } }
            }
            if explanationChanged {
                registrar.withMutation(of: self, keyPath: \.explanation) {
                    lock.withLock { stored.explanation = explanation }
                }
            }
        }

        deinit {
            if let id = lock.withLock({ id }), let engine { engine.removeObserver(id) }
        }
    }

    extension RuleEngine {
        /// An observable status of `scenario` for SwiftUI: see ``ScenarioStatus``. A scenario the
        /// rules lack (now, or after a swap) is not eligible.
        @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
        public func status(of scenario: Scenario) -> ScenarioStatus {
            let status = ScenarioStatus(scenario: scenario, engine: self)
            status.attach()
            return status
        }
    }
#endif

extension RuleEngine {
    /// Registers `deliver` for `scenario`'s eligibility and explanation, delivered at once and on
    /// every change (under the engine's lock); returns the observer's id.
    func addStatusObserver(for scenario: Scenario, _ deliver: @escaping @Sendable (Bool, Explanation) -> Void) -> Int {
        locked { core in
            let index = core.rules.scenarioIndex[scenario.name] ?? core.rules.formerScenarios[scenario.name]
            var observer = Observer(name: scenario.name, index: index, sink: .status(deliver), last: false)
            let value = index.map { core.wouldShow($0, now: core.now()) } ?? false
            let explanation = core.explanation(observer)
            observer.last = value
            observer.lastExplanation = explanation
            deliver(value, explanation)
            return register(observer, &core)
        }
    }
}

extension EngineCore {
    /// What `observer`'s scenario's explanation is now (an unknown one: not known, not eligible).
    mutating func explanation(_ observer: Observer) -> Explanation {
        guard let index = observer.index else {
            return Explanation(scenario: observer.name, isKnown: false, wouldRun: false, clauses: [], earliest: nil)
        }
        return explain(index)
    }
}
