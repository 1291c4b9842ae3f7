import Foundation

/// The local days on which a stream had events, for `min_days` and `active_days`: one bit per
/// day for the 128 days up to the latest day recorded (`anchor`, a day number: days since
/// 1970-01-01 in the device's time zone at the time of the event). Kept only for streams such
/// a clause or function counts.
struct DayBits: Equatable, Sendable {
    /// The latest day recorded (bit 0); `Int64.min` when none is.
    var anchor = Int64.min
    /// Bit k of the 128: a day `anchor - k` had an event.
    var low: UInt64 = 0
    var high: UInt64 = 0

    static let span: Int64 = 128

    /// Records an event on `day` (a day more than 127 days before the latest is too old to count).
    mutating func insert(_ day: Int64) {
        if anchor == .min {
            anchor = day
            low = 1
            high = 0
            return
        }
        if day > anchor {
            let (shift, overflow) = day.subtractingReportingOverflow(anchor)
            if overflow || shift >= DayBits.span {
                low = 0
                high = 0
            } else if shift >= 64 {
                high = low << UInt64(shift - 64)
                low = 0
            } else if shift > 0 {
                high = high << UInt64(shift) | low >> UInt64(64 - shift)
                low = low << UInt64(shift)
            }
            anchor = day
            low |= 1
            return
        }
        let (offset, overflow) = anchor.subtractingReportingOverflow(day)
        guard !overflow, offset < DayBits.span else { return }
        if offset < 64 { low |= 1 << UInt64(offset) } else { high |= 1 << UInt64(offset - 64) }
    }

    /// Adds the days `other` holds.
    mutating func formUnion(_ other: DayBits) {
        guard other.anchor != .min else { return }
        for offset in 0..<DayBits.span where other.contains(other.anchor - offset) { insert(other.anchor - offset) }
    }

    /// True when `day` had an event (days older than the 128 kept are not known: false).
    func contains(_ day: Int64) -> Bool {
        guard anchor != .min, day <= anchor else { return false }
        let (offset, overflow) = anchor.subtractingReportingOverflow(day)
        guard !overflow, offset < DayBits.span else { return false }
        return offset < 64 ? low >> UInt64(offset) & 1 == 1 : high >> UInt64(offset - 64) & 1 == 1
    }

    func encode<W: ByteSink>(_ w: inout W) {
        w.int(anchor)
        w.u64(low)
        w.u64(high)
    }

    static func decode(_ r: inout ByteReader) throws -> DayBits {
        DayBits(anchor: try r.int(), low: try r.u64(), high: try r.u64())
    }

    /// The day number of `time` in `zone`: its local calendar date, as days since 1970-01-01.
    /// A day runs from local midnight to the next, so a day of a daylight-saving change is one
    /// day of 23 or 25 hours.
    static func day(of time: Double, in zone: TimeZone) -> Int64 {
        guard time.isFinite, abs(time) < 1e15 else { return time > 0 ? Int64.max / 2 : Int64.min / 2 }
        let offset = Double(zone.secondsFromGMT(for: Date(timeIntervalSince1970: time)))
        return Int64(((time + offset) / 86_400).rounded(.down))
    }
}
