import Foundation

extension BackgroundWork where Result == StagedStreams? {
    /// A large state file read, and its streams' tallies decoded in the order it holds them,
    /// while the rules are parsed: neither needs the other.
    ///
    /// For a store not yet open whose file is large (``FileStore/worthLoadingEarly``): a small
    /// file costs less to read than a thread's start. The store's own lock guards the reading;
    /// the engine's load then returns what was read. A file that cannot be read or decoded here
    /// is read again by the engine, which reports why.
    static func earlyLoad(_ file: FileStore, on queue: DispatchQueue) -> BackgroundWork {
        BackgroundWork(on: queue) {
            guard let entries = try? file.loadEntries() else { return nil }
            return EngineState.stage(entries)
        }
    }
}
