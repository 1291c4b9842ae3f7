import Foundation

/// A tally without its recent times: a total, the first and last times, and counts for the
/// current session and version. 48 bytes; the engine's streams keep theirs beside recent
/// times held in one shared buffer (``StreamTallies``), scenarios' views and group budgets
/// inside a ``Tally``.
struct TallyCounts: Equatable, Sendable {
    var total: Int64 = 0
    /// `first` and `last`, NaN for none: a stored or clock time is never NaN, and a plain
    /// `Double` keeps the tally short (an optional one pads each to 16 bytes).
    private var firstTime = Double.nan
    private var lastTime = Double.nan
    var sessionID: Int64 = 0
    var versionID: Int64 = 0
    /// The counts in the session and the version, in 32 bits each, saturating at
    /// 4,294,967,295 (8 bytes a stream less: at 100,000 streams, `rulebench memory 100000`).
    private var inSession: UInt32 = 0
    private var inVersion: UInt32 = 0

    /// Events in session ``sessionID``; a larger count set or stored is kept as 4,294,967,295.
    var sessionCount: Int64 {
        get { Int64(inSession) }
        set { inSession = TallyCounts.clamped(newValue) }
    }
    /// Events in version ``versionID``; a larger count set or stored is kept as 4,294,967,295.
    var versionCount: Int64 {
        get { Int64(inVersion) }
        set { inVersion = TallyCounts.clamped(newValue) }
    }

    /// `count` in 32 bits, saturating at 0 and 4,294,967,295. (`UInt32(clamping:)` is generic:
    /// a debug build calls it unspecialized, a quarter of decoding a tally's counts.)
    @inline(__always)
    static func clamped(_ count: Int64) -> UInt32 {
        count <= 0 ? 0 : count >= Int64(UInt32.max) ? .max : UInt32(truncatingIfNeeded: count)
    }

    /// The earliest time recorded (seconds since 1970).
    var first: Double? {
        get { firstTime.isNaN ? nil : firstTime }
        set { firstTime = newValue ?? .nan }
    }
    /// The latest time recorded, even when the clock went backwards in between.
    var last: Double? {
        get { lastTime.isNaN ? nil : lastTime }
        set { lastTime = newValue ?? .nan }
    }

    /// Nothing recorded and no time stored.
    var isBlank: Bool { total == 0 && firstTime.isNaN && lastTime.isNaN }

    static func == (a: TallyCounts, b: TallyCounts) -> Bool {
        a.total == b.total && a.first == b.first && a.last == b.last && a.sessionID == b.sessionID
            && a.sessionCount == b.sessionCount && a.versionID == b.versionID && a.versionCount == b.versionCount
    }

    /// Counts one time in the session and version of `epoch` (the recent times are the caller's).
    @inline(__always)
    mutating func record(at time: Double, in epoch: Epoch) {
        total.saturatingIncrement()
        // The first event is the one recorded first, even if the clock later went back
        // before it: a backwards clock must never make `since_first` pass early.
        if firstTime.isNaN { firstTime = time }
        if lastTime.isNaN || time > lastTime { lastTime = time }
        if sessionID != epoch.sessionID {
            sessionID = epoch.sessionID
            inSession = 0
        }
        if inSession < .max { inSession += 1 }
        if versionID != epoch.versionID {
            versionID = epoch.versionID
            inVersion = 0
        }
        if inVersion < .max { inVersion += 1 }
    }

    /// A trigger of a sum's stream (`sum(purchase.amount)`): `amount` (above zero) added to the
    /// total and to the session's and version's counts, each saturating; the times as for an event.
    mutating func record(at time: Double, in epoch: Epoch, adding amount: Int64) {
        let before = (total, sessionID == epoch.sessionID ? inSession : 0, versionID == epoch.versionID ? inVersion : 0)
        record(at: time, in: epoch)
        total = before.0.saturatingAdd(amount)
        inSession = TallyCounts.clamped(Int64(before.1).saturatingAdd(amount))
        inVersion = TallyCounts.clamped(Int64(before.2).saturatingAdd(amount))
    }

    /// How many are counted in `scope` at `now`, given the recent times. A window of D counts
    /// times whose age (never negative) is less than D; past the retention it is a lower bound.
    @inline(__always)
    func count(_ scope: CountScope, now: Double, in epoch: Epoch, recent: UnsafeBufferPointer<Double>) -> Int64 {
        switch scope {
        case .install: return total
        case .session: return sessionID == epoch.sessionID ? Int64(inSession) : 0
        case .version: return versionID == epoch.versionID ? Int64(inVersion) : 0
        case .within(let window):
            // An empty (or NaN) window counts nothing.
            guard window > 0 else { return 0 }
            return Int64(recent.count - TallyCounts.firstIndex(in: recent, window: window, now: now))
        }
    }

    /// Index of the first of `recent` (ascending) less than `window` old at `now`.
    static func firstIndex(in recent: UnsafeBufferPointer<Double>, window: Double, now: Double) -> Int {
        let oldest = now - window
        var low = 0
        var high = recent.count
        while low < high {
            let mid = (low + high) / 2
            if recent[mid] <= oldest { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Inserts `time` into the ascending `count` times at `base` and drops the oldest beyond
    /// `keep`; returns how many remain. Room for `count + 1` when `count < keep`.
    @inline(__always)
    static func insert(_ time: Double, into base: UnsafeMutablePointer<Double>, count: Int, keep: Int) -> Int {
        let at = insertionIndex(of: time, in: UnsafeBufferPointer(start: base, count: count))
        // The times after insertion are base[..<at], time, base[at...]; the oldest `drop` go.
        let drop = max(0, count + 1 - keep)
        if drop == 0 {
            (base + at + 1).update(from: base + at, count: count - at)
            base[at] = time
            return count + 1
        }
        if at < drop {
            // The new time is among the dropped: what stays is base[(drop - 1)...].
            base.update(from: base + drop - 1, count: count - drop + 1)
        } else {
            base.update(from: base + drop, count: at - drop)
            base[at - drop] = time
            (base + at - drop + 1).update(from: base + at, count: count - at)
        }
        return count + 1 - drop
    }

    /// Where `time` goes among `recent` (ascending): after every time not later than it.
    /// Searched from the end, as a new time is nearly always the latest.
    @inline(__always)
    static func insertionIndex(of time: Double, in recent: UnsafeBufferPointer<Double>) -> Int {
        var index = recent.count
        while index > 0 && recent[index - 1] > time { index -= 1 }
        return index
    }
}

/// Counts and times of one stream of events or executions, in bounded space:
/// a total, the first and last times, counts for the current session and
/// version, and only the most recent timestamps (at most `keep`).
struct Tally: Equatable, Sendable {
    /// Nothing recorded.
    static let empty = Tally()

    var counts = TallyCounts()
    /// The most recent times, ascending; at most the retention limit.
    var recent: [Double] = []

    init() {}

    init(counts: TallyCounts, recent: [Double]) {
        self.counts = counts
        self.recent = recent
    }

    // The three fields read everywhere; sessions and versions through `counts`.
    var total: Int64 {
        get { counts.total }
        set { counts.total = newValue }
    }
    /// The earliest time recorded (seconds since 1970).
    var first: Double? {
        get { counts.first }
        set { counts.first = newValue }
    }
    /// The latest time recorded, even when the clock went backwards in between.
    var last: Double? {
        get { counts.last }
        set { counts.last = newValue }
    }

    var isEmpty: Bool { counts.total == 0 }

    /// Nothing at all recorded or stored: what an absent stream holds.
    var isBlank: Bool { counts.isBlank && recent.isEmpty }

    static func == (a: Tally, b: Tally) -> Bool {
        guard a.counts == b.counts && a.recent.count == b.recent.count else { return false }
        return a.recent.withUnsafeBufferPointer { x in b.recent.withUnsafeBufferPointer { y in Tally.same(x, y) } }
    }

    /// True when two runs of times of the same length are equal: stored times are never NaN,
    /// so equal times are equal bits, and one memory compare decides.
    @inline(__always)
    static func same(_ x: UnsafeBufferPointer<Double>, _ y: UnsafeBufferPointer<Double>) -> Bool {
        x.count == 0 || memcmp(x.baseAddress!, y.baseAddress!, x.count * 8) == 0
    }

    /// True when its latest time is later than `time`.
    func isAhead(of time: Double) -> Bool { (last ?? -.infinity) > time }

    /// Records one time in the session and version of `meta`, keeping at most `keep` recent times.
    mutating func record(at time: Double, in epoch: Epoch, keep: Int) {
        assert(keep >= 1, "a tally keeps at least one recent time")
        counts.record(at: time, in: epoch)
        let count = recent.count
        // Room for one more while it may grow; the times are then placed as a stream's are.
        if count < keep { recent.append(time) }
        let kept = recent.withUnsafeMutableBufferPointer {
            TallyCounts.insert(time, into: $0.baseAddress!, count: count, keep: keep)
        }
        // One at a time: `removeLast(_:)` goes through a generic range replacement.
        while recent.count > kept { recent.removeLast() }
    }

    /// Moves every recorded time later than `now` back to `now` (the clock was ahead
    /// when it was recorded and has since been corrected); true if any moved.
    mutating func rebase(to now: Double) -> Bool {
        guard let latest = last, latest > now else { return false }
        last = now
        if let earliest = first, earliest > now { first = now }
        for index in recent.indices.reversed() {
            guard recent[index] > now else { break }
            recent[index] = now
        }
        return true
    }

    /// How many are counted in `scope` at `now`. A window of D counts times whose
    /// age (never negative) is less than D; past the retention it is a lower bound.
    func count(_ scope: CountScope, now: Double, in epoch: Epoch) -> Int64 {
        recent.withUnsafeBufferPointer { counts.count(scope, now: now, in: epoch, recent: $0) }
    }

    /// Index of the first recent time less than `window` old at `now`.
    func firstIndex(inWindow window: Double, now: Double) -> Int {
        recent.withUnsafeBufferPointer { TallyCounts.firstIndex(in: $0, window: window, now: now) }
    }

    /// The union of several tallies (a scenario that counts several streams).
    static func merged(_ tallies: [Tally], keep: Int, in epoch: Epoch) -> Tally {
        let session = epoch.sessionID
        let version = epoch.versionID
        var result = Tally()
        for tally in tallies where !tally.isEmpty {
            result.total = result.total.saturatingAdd(tally.total)
            result.first = Swift.min(result.first ?? .infinity, tally.first ?? .infinity)
            result.last = Swift.max(result.last ?? -.infinity, tally.last ?? -.infinity)
            result.recent += tally.recent
            if tally.counts.sessionID == session {
                result.counts.sessionCount = result.counts.sessionCount.saturatingAdd(tally.counts.sessionCount)
            }
            if tally.counts.versionID == version {
                result.counts.versionCount = result.counts.versionCount.saturatingAdd(tally.counts.versionCount)
            }
        }
        result.counts.sessionID = session
        result.counts.versionID = version
        result.recent.sort()
        if result.recent.count > keep { result.recent.removeFirst(result.recent.count - keep) }
        return result
    }
}

/// A scenario's own view: the events it counts since its last reset, and its executions.
struct ScenarioState: Equatable, Sendable {
    var events = Tally()
    var executions = Tally()
    /// A fingerprint of the streams `events` was built from; nil when stored by a
    /// version that did not record it.
    var streams: UInt64?

    /// True when a time in it is later than `time` (the clock was ahead, and went back).
    func isAhead(of time: Double) -> Bool { events.isAhead(of: time) || executions.isAhead(of: time) }
}

extension Int64 {
    /// Stored counts saturate: a damaged or hostile file can never make them trap.
    mutating func saturatingIncrement() {
        if self < .max { self += 1 }
    }

    func saturatingAdd(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}

/// A pending to-do.
struct ToDoItem: Equatable, Sendable {
    var created: Double
    /// The to-do is no longer needed from this time on.
    var expires: Double?
    /// The payload given when it was added; nil when none was (empty stays empty).
    var info: [String: String]?
}

/// The current session and version, as tallies compare them: two integers, cheap to pass.
struct Epoch: Equatable, Sendable {
    var sessionID: Int64
    var versionID: Int64
}

/// Sessions and versions.
struct SessionMeta: Equatable, Sendable {
    var sessionID: Int64 = 0
    var versionID: Int64 = 0
    var version: String?
    var sessionStart: Double?
    var versionStart: Double?
    /// The version of the first session this state saw (or, for state written before it
    /// was recorded, the version current when it was first read); nil before any session.
    var firstVersion: String?

    var epoch: Epoch { Epoch(sessionID: sessionID, versionID: versionID) }

    /// True when the current session's version is not the first one: an upgrade.
    var isUpgrade: Bool { firstVersion != nil && version != nil && version != firstVersion }
}
