import Foundation

extension EngineCore {
    /// Distinct local days, among the last `window` (today included), on which any of the
    /// streams in `slots` had an event.
    mutating func activeDays(of slots: [Int], window: Int64, now time: Double) -> Int64 {
        // The union of the streams' days, aligned on today: bit k is the day k days back.
        let today = DayBits.day(of: time, in: zone())
        var low: UInt64 = 0
        var high: UInt64 = 0
        for slot in slots {
            guard let bits = days[slot] else { continue }
            for back in 0..<min(window, DayBits.span) where bits.contains(today - back) {
                if back < 64 { low |= 1 << UInt64(back) } else { high |= 1 << UInt64(back - 64) }
            }
        }
        return Int64(low.nonzeroBitCount + high.nonzeroBitCount)
    }

    /// The time zone local days are counted in: the one set, else the current one.
    mutating func zone() -> TimeZone {
        if let timeZone = hooks.timeZone { return timeZone }
        let current = TimeZone.current
        hooks.timeZone = current
        return current
    }

    /// The zone's entry when the state records another zone (or none): kept for the tools, which
    /// judge a state file in the zone its device had (`rulec explain --state`).
    mutating func zoneChange() -> [StoreChange] {
        let identifier = zone().identifier
        guard storedZone != identifier else { return [] }
        storedZone = identifier
        return [EngineState.change(zone: identifier)]
    }

    /// The zone the app sets (the device moved): used from now on, and recorded in the state.
    mutating func setZone(_ zone: TimeZone) {
        hooks.timeZone = zone
        let change = zoneChange()
        if !change.isEmpty { save(change) }
    }

    /// Records the local day of an event on the stream in `slot` (one that a day clause counts).
    mutating func recordDay(_ slot: Int, at time: Double) {
        var bits = days[slot] ?? DayBits()
        bits.insert(DayBits.day(of: time, in: zone()))
        days[slot] = bits
        record.add(EngineState.change(daysOf: streams.name(slot), bits))
    }
}
