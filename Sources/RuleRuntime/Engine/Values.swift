import Foundation
import RuleLang

/// How `beenDone` compares a count. Comparisons are strict, as in Ecno.
public enum CountCheck: Sendable {
    case moreThan(Int)
    case lessThan(Int)
    case exactly(Int)
    case custom(@Sendable (Int) -> Bool)

    func holds(_ count: Int) -> Bool {
        switch self {
        case .moreThan(let n): return count > n
        case .lessThan(let n): return count < n
        case .exactly(let n): return count == n
        case .custom(let predicate): return predicate(count)
        }
    }
}

/// When `toDo` adds a to-do.
public enum ToDoScope: Equatable, Hashable, Sendable {
    /// Only if never done (per install).
    case install
    /// Only if not done since the current version began.
    case version
    /// Only if not done in this session.
    case session
    /// Only if not done in the last `seconds`.
    case since(TimeInterval)
    /// Always; the to-do expires `seconds` from now.
    case until(TimeInterval)
}

/// Which process of an app an engine runs in, for a state file the app and its extensions share
/// (``FileStore/Options/shared``): sessions and versions have one owner, the app.
public enum ProcessRole: Sendable, Equatable {
    /// The app: ``RuleEngine/startSession(version:)`` begins a session for every process, and
    /// a new version string begins a new `per version` scope.
    case app
    /// A widget, a share or notification service extension, an App Clip's companion:
    /// ``RuleEngine/startSession(version:)`` only checks the file; its counts go to the app's
    /// current session and version. (An extension launched often, with a version string of its
    /// own, would otherwise begin a session and a version at each launch.)
    case appExtension

    /// This process's role: an extension when the main bundle is an app extension (`.appex`).
    public static var current: ProcessRole {
        Bundle.main.bundleURL.pathExtension == "appex" ? .appExtension : .app
    }
}

#if canImport(RuleLang)  // Fuzz/run.sh compiles both modules' sources as one, where it is the type itself.
    /// What became of a prompt the app showed (`RuleLang.Outcome`), here so that
    /// `import RuleRuntime` alone gives an app everything it needs for outcomes and presentations.
    public typealias Outcome = RuleLang.Outcome
#endif
