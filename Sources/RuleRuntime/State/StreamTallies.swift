/// The engine's tallies of its streams, by slot, with every stream's recent times in one
/// shared buffer.
///
/// A ``Tally`` holds its recent times in an array of its own: a heap block per stream, with
/// a 32-byte header, room to grow and the allocator's rounding, about 80 bytes for three
/// times. Here a stream costs its 64-byte head and a block of the shared buffer sized for its
/// times (exactly, up to 16; then a power of two), reused through a free list per size.
/// Reading a stream as a ``Tally`` copies its times out; the calls made on every event
/// (record, count, compare, encode) work in place.
struct StreamTallies {
    /// A stream's counts, and where its recent times are: `count` of them from `offset` (in
    /// these tallies' buffer: a head taken out with ``removeTail(from:)`` goes back in with
    /// ``put(_:at:)`` only).
    struct Head {
        var counts = TallyCounts()
        var offset: UInt32 = 0
        var count: UInt32 = 0
    }

    private var heads: [Head]
    private var times: [Double] = []
    /// Offsets of free blocks, by size class.
    private var free: [[UInt32]] = []

    /// `count` blank tallies.
    init(count: Int = 0) {
        heads = Array(repeating: Head(), count: count)
    }

    var count: Int { heads.count }
    /// Times the shared buffer has room for, used or free.
    var bufferLength: Int { times.count }
    var indices: Range<Int> { heads.indices }

    mutating func reserveCapacity(_ capacity: Int) { heads.reserveCapacity(capacity) }

    /// Adds a blank tally at the end.
    mutating func append() { heads.append(Head()) }

    /// Everything but the recent times of the tally in `slot`.
    func counts(_ slot: Int) -> TallyCounts { heads[slot].counts }

    /// Changes the counts (not the recent times) of the tally in `slot`.
    mutating func updateCounts(_ slot: Int, _ body: (inout TallyCounts) -> Void) {
        body(&heads[slot].counts)
    }

    /// Moves every time of `slot` later than `now` back to `now` (as ``Tally/rebase(to:)``);
    /// true if any moved.
    mutating func rebase(_ slot: Int, to now: Double) -> Bool {
        guard let latest = heads[slot].counts.last, latest > now else { return false }
        heads[slot].counts.last = now
        if let earliest = heads[slot].counts.first, earliest > now { heads[slot].counts.first = now }
        let start = Int(heads[slot].offset)
        var index = start + Int(heads[slot].count)
        while index > start && times[index - 1] > now {
            index -= 1
            times[index] = now
        }
        return true
    }

    /// True when nothing is recorded or stored in `slot`.
    func isBlank(_ slot: Int) -> Bool { heads[slot].counts.isBlank && heads[slot].count == 0 }

    /// The tally in `slot`, its recent times copied out; setting one replaces it.
    subscript(slot: Int) -> Tally {
        get { withTally(slot) { Tally(counts: $0, recent: Array($1)) } }
        set {
            release(slot)
            let count = newValue.recent.count
            precondition(count <= Int(UInt32.max), "recent times beyond the shared buffer's reach")
            heads[slot] = Head(counts: newValue.counts, offset: count == 0 ? 0 : allocate(count), count: UInt32(count))
            if count > 0 {
                let offset = Int(heads[slot].offset)
                times.withUnsafeMutableBufferPointer { buffer in
                    newValue.recent.withUnsafeBufferPointer {
                        (buffer.baseAddress! + offset).initialize(from: $0.baseAddress!, count: count)
                    }
                }
            }
        }
    }

    /// Replaces the tally in `slot` with the one `reader` holds (as ``Tally/decode(_:)``), its
    /// times read straight into the shared buffer.
    mutating func decode(_ slot: Int, from reader: inout ByteReader) throws {
        release(slot)
        heads[slot] = Head()
        var offset = 0
        var stored = 0
        let counts = try Tally.decode(&reader) { reader, count in
            guard count > 0 else { return }
            offset = Int(allocate(count))
            try times.withUnsafeMutableBufferPointer { try reader.times(count, into: $0.baseAddress! + offset) }
            stored = count
        }
        heads[slot] = Head(counts: counts, offset: UInt32(offset), count: UInt32(stored))
    }

    /// Calls `body` with the counts and recent times of `slot`, in place.
    @inline(__always)
    func withTally<R>(_ slot: Int, _ body: (TallyCounts, UnsafeBufferPointer<Double>) -> R) -> R {
        let head = heads[slot]
        return times.withUnsafeBufferPointer { buffer in
            body(head.counts, UnsafeBufferPointer(rebasing: buffer[Int(head.offset)..<Int(head.offset + head.count)]))
        }
    }

    /// How many recent times the tally in `slot` holds.
    func recentCount(_ slot: Int) -> Int { Int(heads[slot].count) }

    /// How many the tally in `slot` counts in `scope` at `now` (as ``Tally/count(_:now:in:)``).
    @inline(__always)
    func count(_ slot: Int, _ scope: CountScope, now: Double, in epoch: Epoch) -> Int64 {
        withTally(slot) { $0.count(scope, now: now, in: epoch, recent: $1) }
    }

    /// True when the tally in `slot` equals `tally`.
    @inline(__always)
    func equals(_ slot: Int, _ tally: Tally) -> Bool {
        tally.recent.withUnsafeBufferPointer { equals(slot, tally.counts, $0) }
    }

    /// True when the tally in `slot` has these counts and recent times.
    @inline(__always)
    func equals(_ slot: Int, _ counts: TallyCounts, _ recent: UnsafeBufferPointer<Double>) -> Bool {
        withTally(slot) { $0 == counts && $1.count == recent.count && Tally.same($1, recent) }
    }

    /// Records one time in `slot`, keeping at most `keep` recent times: the same tally as
    /// ``Tally/record(at:in:keep:)`` gives.
    @inline(__always)
    mutating func record(_ slot: Int, at time: Double, in epoch: Epoch, keep: Int) {
        heads[slot].counts.record(at: time, in: epoch)
        place(time, in: slot, keep: keep)
    }

    /// A trigger of a sum's stream: `amount` added to the counts (``TallyCounts/record(at:in:adding:)``),
    /// and its time placed `amount` times (a unit each), keeping at most `keep`: a window over the
    /// recent times then counts the units, the sum of the values in it. Its own entry, so that an
    /// event's path tests no argument.
    mutating func record(_ slot: Int, at time: Double, in epoch: Epoch, keep: Int, adding amount: Int64) {
        heads[slot].counts.record(at: time, in: epoch, adding: amount)
        let copies = Int(min(max(amount, 1), Int64(keep)))
        if copies == 1 { return place(time, in: slot, keep: keep) }
        // At once, not a copy at a time (each of which would move up to `keep` times).
        var merged = withTally(slot) { Array($1) }
        let at = merged.withUnsafeBufferPointer { TallyCounts.insertionIndex(of: time, in: $0) }
        merged.insert(contentsOf: repeatElement(time, count: copies), at: at)
        self[slot] = Tally(counts: heads[slot].counts, recent: Array(merged.suffix(keep)))
    }

    /// Places `time` among the recent times of `slot`, keeping at most `keep`.
    @inline(__always)
    private mutating func place(_ time: Double, in slot: Int, keep: Int) {
        assert(keep >= 1, "a stream keeps at least one recent time")
        let count = Int(heads[slot].count)
        if count < keep && count == StreamTallies.capacity(for: count) {
            // The block is full and the times may grow: move them to the next size.
            move(slot, to: count + 1)
        }
        let offset = Int(heads[slot].offset)
        let kept = times.withUnsafeMutableBufferPointer { buffer in
            TallyCounts.insert(time, into: buffer.baseAddress! + offset, count: count, keep: keep)
        }
        heads[slot].count = UInt32(kept)
    }

    /// These tallies in other slots: the one in slot `n` goes to `slots[n]` (of several going
    /// to one slot, the last), of `count` slots (each below it), blank where none goes; then,
    /// from slot `count` on and in their order, the ones whose slot is -1 (for
    /// ``removeTail(from:)``). With room for `capacity`. The recent times stay where they are in
    /// the shared buffer (a tally overwritten by another's keeps its block, unused).
    ///
    /// Into a new array of heads: moving them in place, following each chain of moves, read the
    /// heads out of order and took three to four times as long at 100,000 streams (`rulebench cold`,
    /// stored streams sorted by name against the rules' order).
    consuming func moved(to slots: [Int], count: Int, capacity: Int = 0) -> StreamTallies {
        precondition(slots.count == heads.count, "a move covers every tally")
        var result = self
        var moved: [Head] = []
        moved.reserveCapacity(max(count, capacity))
        for _ in 0..<count { moved.append(Head()) }
        for (n, slot) in slots.enumerated() where slot >= 0 { moved[slot] = result.heads[n] }
        for (n, slot) in slots.enumerated() where slot < 0 { moved.append(result.heads[n]) }
        result.heads = moved
        return result
    }

    /// Takes out the heads from slot `start` on, in order (their times stay in the buffer).
    mutating func removeTail(from start: Int) -> [Head] {
        defer { heads.removeLast(heads.count - start) }
        return Array(heads[start...])
    }

    /// Puts `head` (taken out of these tallies) in `slot`, adding blank slots up to it; the
    /// tally there before is released.
    mutating func put(_ head: Head, at slot: Int) {
        while heads.count <= slot { heads.append(Head()) }
        release(slot)
        heads[slot] = head
    }

    /// Makes every tally blank and frees every time.
    mutating func removeAll() {
        heads = Array(repeating: Head(), count: heads.count)
        times = []
        free = []
    }

    // MARK: - Blocks

    /// The size class of a block for `count` times (at least 1): 0-15 hold 1-16 times, then
    /// each class doubles.
    @inline(__always)
    static func sizeClass(for count: Int) -> Int {
        count <= 16 ? count - 1 : 11 + (Int.bitWidth - (count - 1).leadingZeroBitCount)
    }

    static func capacity(ofClass sizeClass: Int) -> Int { sizeClass < 16 ? sizeClass + 1 : 1 << (sizeClass - 11) }

    /// How many times the block holding `count` times has room for (0 for none).
    @inline(__always)
    static func capacity(for count: Int) -> Int { count == 0 ? 0 : capacity(ofClass: sizeClass(for: count)) }

    /// A block with room for `count` times (at least 1): a freed one of its size, or new at the end.
    private mutating func allocate(_ count: Int) -> UInt32 {
        let sizeClass = StreamTallies.sizeClass(for: count)
        if sizeClass < free.count, let offset = free[sizeClass].popLast() { return offset }
        let offset = times.count
        let capacity = StreamTallies.capacity(ofClass: sizeClass)
        precondition(offset + capacity <= Int(UInt32.max), "recent times beyond the shared buffer's reach")
        // One at a time: appending a repeated element goes through a generic path that costs
        // more than the few stores a small block needs.
        for _ in 0..<capacity { times.append(0) }
        return UInt32(offset)
    }

    /// Frees the block of `slot`'s times (the head still points at it).
    private mutating func release(_ slot: Int) {
        let count = Int(heads[slot].count)
        guard count > 0 else { return }
        let sizeClass = StreamTallies.sizeClass(for: count)
        while free.count <= sizeClass { free.append([]) }
        free[sizeClass].append(heads[slot].offset)
    }

    /// Moves `slot`'s times to a block with room for `count`.
    private mutating func move(_ slot: Int, to count: Int) {
        let old = Int(heads[slot].offset)
        let length = Int(heads[slot].count)
        let new = Int(allocate(count))
        release(slot)
        if length > 0 {
            times.withUnsafeMutableBufferPointer { buffer in
                (buffer.baseAddress! + new).update(from: buffer.baseAddress! + old, count: length)
            }
        }
        heads[slot].offset = UInt32(new)
    }
}
