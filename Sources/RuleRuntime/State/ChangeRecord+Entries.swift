/// The engine's entries written into a call's record: streams' and groups' tallies and
/// scenarios' views (the record itself, and its bytes, are the store's: ``ChangeRecord``).
extension ChangeRecord {
    /// Sets `key` to a stream's or a group's tally.
    func set(_ key: String, _ tally: Tally) {
        write(key: key)
        setValue(tally)
    }

    /// Makes room for stream `name`'s entry with `recentCount` recent times, for
    /// ``set(stream:_:recent:)``.
    @inline(__always)
    func reserve(stream name: UnsafeRawBufferPointer, recentCount: Int) {
        reserve(Self.streamEntryBound(nameLength: name.count, recentCount: recentCount))
    }

    /// At most the bytes a stream's entry takes: the key's length (a varint) and bytes (kind,
    /// separator, name), the value's flag and length (a varint), its format byte and the tally.
    static func streamEntryBound(nameLength: Int, recentCount: Int) -> Int {
        10 + 2 + nameLength + 1 + 10 + 1 + Tally.maxEncodedSize(recentCount: recentCount)
    }

    /// Sets the entry of the stream whose name's UTF-8 is `name` (`e:NAME`) to its tally, without making the key, in room made
    /// by ``reserve(stream:recentCount:)``. Written through a ``ReservedSink``: no call that
    /// could release anything, so the caller reads the tally in place without retaining the
    /// arrays it lies in (four retains and releases of a trigger's six).
    @inline(__always)
    func set(stream name: UnsafeRawBufferPointer, _ counts: TallyCounts, recent: UnsafeBufferPointer<Double>) {
        // Checked in release builds too: writing past the room made would corrupt memory.
        precondition(length + Self.streamEntryBound(nameLength: name.count, recentCount: recent.count) <= capacity)
        var sink = ReservedSink(base: base, length: length)
        sink.key(.stream, name)
        sink.u8(1)
        // The value's length, known before it is written (no bytes to move after).
        sink.varint(UInt64(1 + Tally.encodedLength(counts, recentCount: recent.count)))
        EngineState.write(counts, recent: recent, to: &sink)
        length = sink.length
        count += 1
    }

    /// Sets the key stored as `key` (UTF-8) to the view at `view` (its events given as stream
    /// `eventsFrom`'s, if named by its UTF-8), read in place.
    /// Its length is worked out first and room made once, then it is written through a
    /// ``ReservedSink`` (no call that could release anything, so nothing read in place is retained).
    @inline(__always)
    func set(
        _ key: UnsafeRawBufferPointer, view: UnsafePointer<ScenarioState>, eventsFrom stream: UnsafeRawBufferPointer?
    ) {
        let valueLength = EngineState.encodedLength(view, eventsFrom: stream)
        reserve(10 + key.count + 1 + 10 + valueLength)
        var sink = ReservedSink(base: base, length: length)
        sink.varint(UInt64(key.count))
        sink.append(key)
        sink.u8(1)
        sink.varint(UInt64(valueLength))
        EngineState.write(view, eventsFrom: stream, to: &sink)
        length = sink.length
        count += 1
    }

    func setValue(_ tally: Tally) {
        setValue { record in
            var sink = record
            EngineState.write(tally, to: &sink)
        }
    }
}
