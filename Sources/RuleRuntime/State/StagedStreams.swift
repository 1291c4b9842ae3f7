import Foundation

/// The streams of a stored state, decoded on another thread while an engine parses its rules
/// (``EngineState/stage(_:)``), then moved there to the slots of the names the rules' `on`
/// clauses list (``place(in:)``) while the rules are checked.
struct StagedStreams {
    /// What they were decoded from.
    let entries: StoredEntries
    /// In the order the store holds them; once placed, by slot of the listed names.
    var tallies: StreamTallies
    /// Once placed: by stream entry of ``entries``, in the order the store holds them, its slot,
    /// or -1 for a name not listed (its tally follows the listed ones, for the engine to place).
    private(set) var slots: [Int] = []
    /// Once placed: how many names were listed (the unlisted streams' tallies follow).
    private(set) var listedCount = 0

    init(entries: StoredEntries, tallies: StreamTallies) {
        self.entries = entries
        self.tallies = tallies
    }

    /// Moves each stream whose name `listed` holds (the names the rules' `on` clauses list, which
    /// the rules' stream table starts with, in the same slots) to its slot; the others follow,
    /// in order, for the engine to place once its table is whole. Of names stored twice
    /// (spellings Swift considers equal) the last one read wins, as when each is decoded into
    /// its slot in turn.
    mutating func place(in listed: StreamTable) {
        slots = EngineState.slots(of: entries, in: listed.index)
        listedCount = listed.count
        // Room for the unlisted streams and the names the compiler adds after the listed ones,
        // so that the heads are not copied again.
        let unlisted = slots.lazy.filter { $0 < 0 }.count
        tallies = tallies.moved(to: slots, count: listed.count, capacity: listed.count + unlisted + 1_024)
    }

    /// True when `stored` is what these were decoded from (the same bytes, not a copy).
    func isFrom(_ stored: StoredEntries) -> Bool {
        entries.bytes.withUnsafeBufferPointer { a in
            stored.bytes.withUnsafeBufferPointer { b in a.baseAddress == b.baseAddress && a.count == b.count }
        }
    }
}
