import Foundation

extension RuleEngine {
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
        /// How long a presentation (``RuleEngine/present(_:)-(Scenario)``) holds its group
        /// when it is never finished, in seconds: one left open by a process that died ends then.
        /// One hour by default; at least one second.
        public var presentationTimeout: TimeInterval = 3_600
        /// The install's id that `bucket("salt")` hashes (language 1.2). Give an id the app
        /// already keeps (an analytics id) so that a server computes the same buckets; nil, the
        /// default, lets the engine make one (a random UUID) and store it, the first time rules
        /// that read `bucket` start. See ``RuleEngine/installID``.
        public var installID: String?
        /// For testers: buckets forced by salt (`["paywall-2026": 5]`), whatever the install's id.
        /// See ``launchBucketOverrides(arguments:environment:)``.
        public var bucketOverrides: [String: Int] = [:]

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

        /// Buckets forced from the launch arguments and the environment, for a tester:
        /// `-RulesBucket SALT=N` (repeatable) or `RULES_BUCKET=SALT=N,OTHER=M`. A value outside
        /// 0...99 or not a number is ignored. An app opts in:
        /// `options.bucketOverrides = Options.launchBucketOverrides()`.
        public static func launchBucketOverrides(
            arguments: [String] = ProcessInfo.processInfo.arguments,
            environment: [String: String] = ProcessInfo.processInfo.environment
        ) -> [String: Int] {
            var buckets: [String: Int] = [:]
            func take(_ pair: Substring) {
                guard let equals = pair.lastIndex(of: "=") else { return }
                let salt = pair[..<equals].trimmingCharacters(in: .whitespaces)
                guard !salt.isEmpty,
                    let value = Int(pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)),
                    (0...99).contains(value)
                else { return }
                buckets[salt] = value
            }
            for pair in (environment["RULES_BUCKET"] ?? "").split(separator: ",") { take(pair) }
            for (index, argument) in arguments.enumerated().dropLast() where argument == "-RulesBucket" {
                take(arguments[index + 1][...])
            }
            return buckets
        }
    }
}
