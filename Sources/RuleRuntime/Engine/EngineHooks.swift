import Foundation
import RuleLang

/// What the app attached to an engine, as against its rules and its stored state: the clock,
/// the store, the handlers, the providers, the observers and the options. A core is made from
/// rules, a stored state and one of these (``EngineCore/init(rules:hooks:stored:)``); a swap
/// hands the running core's hooks to the new core whole, so a new hook is carried by being
/// declared here, with nothing to copy by hand.
struct EngineHooks {
    let clock: RuleClock
    let store: RuleStore
    /// The store's last failure (``RuleEngine/lastStoreError``), and where failures go.
    var failure: RuleStoreError?
    var failureHandler: (@Sendable (RuleStoreError) -> Void)?
    /// The last finite clock reading: a NaN or infinite one is replaced by it.
    var lastTime: Double = 0
    /// Where decisions go: the app's handler and, on Apple platforms, `os.Logger`.
    var decisionHandler: (@Sendable (Decision) -> Void)?
    var logger: DecisionLogger?
    /// ``RuleEngine/Options/overrides`` as given, applied again to rules swapped in.
    var overrides: [String: Bool] = [:]
    /// Where the app says the user is (``RuleEngine/enter(_:)``): the process's own, never
    /// stored, kept across rules swapped in.
    var contexts: Set<String> = []
    /// The install's id the app gave (``RuleEngine/Options/installID``), and buckets forced by salt.
    var installID: String?
    var bucketOverrides: [String: Int] = [:]
    /// The device's time zone, which decides where a local day begins (``RuleEngine/timeZone``);
    /// nil until first needed, then the current one (reading it loads the zone data: an engine
    /// that counts no days never pays for it; 2.2 MB resident here).
    var timeZone: TimeZone?
    /// The app, which begins sessions, or an extension, which joins the app's.
    var role: ProcessRole?
    /// `provide` closures by param name, with the type the param had when each was registered:
    /// a core takes those whose param its rules declare with that type.
    var providers: [String: (type: ValueType, provide: @Sendable () -> ParamValue)] = [:]
    /// ``RuleEngine/updates(for:)-(Scenario)`` streams and statuses, by id (a core finds each
    /// one's scenario in its rules), and the next id.
    var observers: [Int: Observer] = [:]
    var nextObserverID = 0
    /// Tells of other processes' writes to a shared file while there are observers.
    var watcher: ChangeWatcher?
    /// The wake-up already asked of the clock.
    var scheduledWakeUp: Double?
    /// Names the app used that the rules do not know, in first-use order (``RuleEngine/unknownNames``):
    /// scenarios (and overrides), and events.
    var unknownScenarios: [String] = []
    var unknownEvents: [String] = []
    /// The presentations this engine made and has not finished, oldest first (a few at most: an
    /// array is searched faster than a dictionary is hashed).
    var openPresentations: [Presentation] = []
    /// A presentation's token: this engine's random number and `-` (empty until its first), and a count.
    var presentationBase = ""
    var presentationCount: UInt64 = 0
    /// The exposures this engine logged (``RuleEngine/exposures(lease:)``), for their ids.
    var exposureCount: UInt64 = 0
    /// The presentations of `counts after D visible` scenarios not counted yet, oldest first;
    /// the earliest time one counts if it stays on screen (infinity: none is counting); true
    /// between ``RuleEngine/prepareForSuspension()`` and ``RuleEngine/enteredForeground()``.
    var counted: [CountedPresentation] = []
    var countDue = Double.infinity
    var inBackground = false

    init(clock: RuleClock, store: RuleStore, options: RuleEngine.Options) {
        self.clock = clock
        self.store = store
        overrides = options.overrides
        timeZone = options.timeZone
        role = options.role
        logger = DecisionLogger(subsystem: options.logSubsystem)
        installID = options.installID
        bucketOverrides = options.bucketOverrides
    }
}
