/// A map for the checker's per-body tables, which almost always hold a handful of entries:
/// a linear search up to `linearLimit` entries (no hashing, no hash table to allocate), then
/// a dictionary of positions beside them for larger ones (a long `on` list). Iterates in
/// insertion order.
struct SmallMap<Key: Hashable, Value> {
    private(set) var entries: [(key: Key, value: Value)] = []
    private var index: [Key: Int]?
    static var linearLimit: Int { 12 }

    var isEmpty: Bool { entries.isEmpty }

    init() {}

    /// A map that will hold about `count` entries: room is made once, not as it grows.
    init(expecting count: Int) {
        reserveCapacity(count)
    }

    /// Makes room for `count` entries in all, once, rather than as they come.
    mutating func reserveCapacity(_ count: Int) {
        entries.reserveCapacity(count)
        if count > Self.linearLimit && index == nil { makeIndex(capacity: count) }
    }

    /// Indexes the entries by key, with room for `capacity`.
    private mutating func makeIndex(capacity: Int) {
        var table: [Key: Int] = Dictionary(minimumCapacity: capacity)
        for (at, entry) in entries.enumerated() { table[entry.key] = at }
        index = table
    }

    /// Empties the map, keeping its room for the next body.
    mutating func removeAll() {
        if !entries.isEmpty { entries.removeAll(keepingCapacity: true) }
        index = nil
    }

    /// The value for `key`; setting adds or replaces it (setting nil changes nothing: the
    /// checker never removes an entry).
    subscript(key: Key) -> Value? {
        get { position(of: key).map { entries[$0].value } }
        set {
            guard let newValue else { return }
            if let at = position(of: key) {
                entries[at].value = newValue
                return
            }
            entries.append((key, newValue))
            if index != nil {
                index![key] = entries.count - 1
            } else if entries.count > Self.linearLimit {
                makeIndex(capacity: entries.count * 2)
            }
        }
    }

    /// Adds `key` with `value` unless it is there; returns the value it already had. One hash
    /// of the key for a new one, where reading and then setting would hash it twice.
    mutating func insertIfAbsent(_ key: Key, _ value: Value) -> Value? {
        guard index != nil else {
            if let at = position(of: key) { return entries[at].value }
            self[key] = value
            return nil
        }
        if let at = index!.updateValue(entries.count, forKey: key) {
            index![key] = at
            return entries[at].value
        }
        entries.append((key, value))
        return nil
    }

    private func position(of key: Key) -> Int? {
        if let index { return index[key] }
        for at in entries.indices where entries[at].key == key { return at }
        return nil
    }
}

extension SmallMap: Sendable where Key: Sendable, Value: Sendable {}
