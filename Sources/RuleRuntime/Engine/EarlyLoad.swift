import Foundation

/// A large state file read, and its streams' tallies decoded, on another thread while an engine
/// checks its rules: neither needs the other, and an app's launch waits for the longer of the
/// two instead of their sum.
///
/// Only for a ``FileStore`` not yet open whose file is large (``FileStore/worthLoadingEarly``):
/// a small file costs less to read than a thread's start. The store's own lock guards the
/// reading; the engine's load then returns what was read. A file that cannot be read or
/// decoded here is read again by the engine, which reports why.
///
/// `@unchecked Sendable`: `staged` is written by the reading thread before it leaves `group`
/// and read only after `wait()`, which orders the two. What the thread buys, `rulebench cold`:
/// an engine over 100,000 stored streams from 71-73 ms to 46-52 ms,
/// cold_100k_vs_read_and_check from 2.25-2.36x to under 2x.
final class EarlyLoad: @unchecked Sendable {
    private let group = DispatchGroup()
    private var staged: StreamTallies?

    /// Starts reading `store`, or nil when it is not worth it.
    init?(_ store: RuleStore) {
        guard let file = store as? FileStore, file.worthLoadingEarly else { return nil }
        DispatchQueue.global(qos: .userInitiated).async(group: group) {
            guard let entries = try? file.loadEntries() else { return }
            self.staged = EngineState.stage(entries)
        }
    }

    /// Waits for the reading to end; the tallies of the file's streams in the order it holds them.
    func wait() -> StreamTallies? {
        group.wait()
        return staged
    }
}
