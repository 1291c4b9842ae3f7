/// The hard limits of the language. Exceeding one is an error, never a crash.
public enum Limits {
    /// Largest source file accepted, in bytes (1 MiB).
    public static let maxFileSize = 1 << 20
    /// Deepest nesting of parentheses and `not` in one expression.
    public static let maxNestingDepth = 64
    /// Most binary operators in one expression.
    public static let maxExpressionOperators = 512
    /// Longest name (scenario, group, param, event), in bytes.
    public static let maxNameLength = 128
    /// Most declarations (scenarios, groups, params) in one file.
    public static let maxDeclarationsPerFile = 10_000
    /// Most clauses in one scenario or group.
    public static let maxClausesPerBody = 256
    /// Most errors reported for one file; later ones are summarised in one line.
    public static let maxErrorsPerFile = 100
    /// Largest threshold a clause scoped `within D` may use: the runtime keeps
    /// that many recent timestamps to count a sliding window exactly.
    public static let maxWindowedThreshold: Int64 = 10_000
    /// Longest window of `min_days` and `active_days`, in days: each counted stream keeps a bit
    /// per day for that many days.
    public static let maxDayWindow: Int64 = 120
}
