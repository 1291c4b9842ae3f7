import Foundation

/// One entry written or deleted (`value == nil`) by an engine call.
public struct StoreChange: Equatable, Sendable {
    /// The entry's key: a kind byte, `:`, and a name.
    public var key: String
    /// The new value; nil deletes the entry.
    public var value: [UInt8]?

    /// Set `key` to `value` (nil deletes it). The name in the key is stored in its canonical
    /// spelling (NFC): names Swift considers equal are one entry.
    public init(key: String, value: [UInt8]?) {
        self.key = NameTable.canonical(key)
        self.value = value
    }

    /// Set `key` exactly as spelt (a stored key in another spelling, deleted once merged).
    init(storedKey key: String, value: [UInt8]?) {
        self.key = key
        self.value = value
    }
}

/// Durable key-value storage for an engine's state.
///
/// The engine calls `apply` once per mutating call, under its lock, in order;
/// what `apply` has returned from must survive the process being killed.
public protocol RuleStore: AnyObject, Sendable {
    /// Every entry stored so far.
    func load() throws -> [String: [UInt8]]
    /// Writes the changes of one engine call, all or nothing where the store can.
    func apply(_ changes: [StoreChange]) throws
    /// Called once the engine has decoded everything `load` returned: the store may
    /// now repair what it found (a torn tail). Nothing is rewritten before this.
    func didLoad() throws
    /// Called by `startSession`: checks the storage is still where it was (a file not
    /// deleted or replaced), repairs it from memory if not, and reports that by throwing.
    func verify() throws
}

extension RuleStore {
    public func didLoad() throws {}
    public func verify() throws {}
}

/// Errors from stores and stored data.
public enum RuleStoreError: Error, Equatable, CustomStringConvertible {
    /// The path cannot hold a state file (not a regular file, or larger than the limit); nothing was read.
    case unusable(path: String, reason: String)
    /// The state file was deleted or replaced while in use; it was written again from
    /// memory, so nothing was lost. Reported so the app can find out who did it.
    case replaced(path: String)
    /// The state file was cut shorter than its acknowledged records while in use; it was
    /// written again from memory. Reported so the app can find out who did it.
    case truncated(path: String)
    /// An error thrown by a custom store, kept as it was thrown.
    case other(any Error)
    /// The file is damaged; `keptAt` is where the damaged file was kept aside, if it was moved.
    case corrupt(path: String, offset: Int, reason: String, keptAt: String?)
    /// The file was written by a newer format than this library reads.
    case unsupportedVersion(path: String, version: Int)
    /// A stored entry cannot be decoded.
    case undecodableEntry(key: String, reason: String)
    /// The operating system refused a read or write.
    case io(path: String, operation: String, errno: Int32)

    public var description: String {
        switch self {
        case .corrupt(let path, let offset, let reason, let keptAt):
            return "state file '\(path)' is corrupt at byte \(offset): \(reason)"
                + (keptAt.map { "; the damaged file was kept at '\($0)'" } ?? "")
        case .unsupportedVersion(let path, let version):
            return
                "state file '\(path)' has format version \(version); this library reads versions 1 to \(FileStore.formatVersion)"
        case .undecodableEntry(let key, let reason):
            return "stored entry '\(key)' cannot be decoded: \(reason)"
        case .io(let path, let operation, let code):
            return "\(operation) '\(path)' failed: \(String(cString: strerror(code)))"
        case .unusable(let path, let reason):
            return "state file '\(path)' cannot be used: \(reason)"
        case .replaced(let path):
            return "state file '\(path)' was deleted or replaced while in use; it was written again from memory"
        case .truncated(let path):
            return "state file '\(path)' was truncated while in use; it was written again from memory"
        case .other(let error):
            return String(describing: error)
        }
    }

    /// What something else did to the file, for messages.
    var faultVerb: String {
        if case .truncated = self { return "truncated" }
        return "deleted or replaced"
    }

    public static func == (a: RuleStoreError, b: RuleStoreError) -> Bool {
        switch (a, b) {
        case (.corrupt(let p, let o, let r, let k), .corrupt(let q, let o2, let r2, let k2)):
            return p == q && o == o2 && r == r2 && k == k2
        case (.unsupportedVersion(let p, let v), .unsupportedVersion(let q, let w)): return p == q && v == w
        case (.undecodableEntry(let k, let r), .undecodableEntry(let k2, let r2)): return k == k2 && r == r2
        case (.io(let p, let o, let e), .io(let q, let o2, let e2)): return p == q && o == o2 && e == e2
        case (.unusable(let p, let r), .unusable(let q, let r2)): return p == q && r == r2
        case (.replaced(let p), .replaced(let q)): return p == q
        case (.truncated(let p), .truncated(let q)): return p == q
        case (.other(let x), .other(let y)):
            return type(of: x) == type(of: y) && String(describing: x) == String(describing: y)
        default: return false
        }
    }
}

/// Keeps state in memory only: for tests, previews and simulations (``RuleEngine``'s default store).
///
/// Every key and its latest value lie in one byte buffer, found through a `RecordIndex`:
/// a call's record is read once and each change written over the key's value in place when
/// it is as long as the one before (a stream's tally, once it holds all its recent times),
/// else after the rest. The buffer is rewritten with only the live entries when more than
/// half of it (and at least `compactionThreshold` bytes) is superseded values.
public final class InMemoryStore: RuleStore, RecordStore, Sendable {
    /// The entries, and counts for tests. One value changed through its mutating methods:
    /// reading three properties of the class on every change retained and released their
    /// arrays, a third of an in-memory trigger.
    private struct State {
        var buffer: Buffer
        /// Records handed to ``append(record:)``.
        var taken = 0
        /// Rewrites of the buffer so far.
        var compactions = 0
    }
    private let state: Protected<State>
    private let compactionThreshold: Int

    /// A store holding `entries`.
    public convenience init(_ entries: [String: [UInt8]] = [:]) {
        self.init(entries, compactionThreshold: 1 << 16)
    }

    init(_ entries: [String: [UInt8]], compactionThreshold: Int) {
        self.compactionThreshold = compactionThreshold
        let stored = StoredEntries(entries)
        state = Protected(State(buffer: Buffer(bytes: stored.bytes, index: stored.index, garbage: 0)))
    }

    /// Rewrites of the buffer so far (tests).
    var compactions: Int { state.withLock { $0.compactions } }

    public func load() throws -> [String: [UInt8]] {
        try loadEntries().values
    }

    func loadEntries() throws -> StoredEntries {
        state.withLock { StoredEntries(bytes: $0.buffer.bytes, index: $0.buffer.index) }
    }

    /// The buffer as it is now: a copy made only when the next change writes to it.
    func entriesReader() throws -> (taken: Int, read: () throws -> StoredEntries) {
        let (taken, entries) = state.withLock {
            ($0.taken, StoredEntries(bytes: $0.buffer.bytes, index: $0.buffer.index))
        }
        return (taken, { entries })
    }

    var recordsTaken: Int { state.withLock { $0.taken } }

    public func apply(_ changes: [StoreChange]) throws {
        if changes.isEmpty { return }
        // Read as the engine's records are: no frame, no checksums.
        let record = ChangeRecord()
        for change in changes { record.add(change) }
        record.finish()
        try append(record: record.bytes)
    }

    func append(record bytes: UnsafeMutableRawBufferPointer) throws {
        let raw = UnsafeRawBufferPointer(bytes)
        let start = RecordFormat.recordHeaderSize
        let threshold = compactionThreshold
        // Read once: records come from the engine's ``ChangeRecord`` (or ``apply(_:)``), whole.
        try state.withLock {
            $0.taken += 1
            if try $0.buffer.apply(record: raw, from: start, compactingPast: threshold) { $0.compactions += 1 }
        }
    }
}

/// An in-memory store's entries: keys and values in one buffer, and where each is.
private struct Buffer {
    /// Keys and values, each value after its key or, once it outgrew its place, at the end;
    /// after one unused byte, so that the buffer has an address even for an empty key and value.
    var bytes: [UInt8]
    var index: RecordIndex
    /// Bytes of `bytes` no entry refers to any more.
    var garbage: Int

    /// Applies the changes of `record` (read from `start`); then rewrites the buffer when more
    /// than `threshold` bytes, and half of it, are garbage (true when it did). One access to
    /// the store's buffer for the whole record: a change at a time, each through the class's
    /// property, checked its exclusive access at run time (about 4% of an in-memory trigger,
    /// `perf` over `rulebench profile trigger`).
    mutating func apply(record: UnsafeRawBufferPointer, from start: Int, compactingPast threshold: Int) throws -> Bool {
        _ = try RecordFormat.forEachChange(in: record, from: start, to: record.count) { key, value in
            set(
                UnsafeRawBufferPointer(rebasing: record[key]),
                value.map { UnsafeRawBufferPointer(rebasing: record[$0]) })
        }
        guard garbage > threshold && garbage * 2 > bytes.count else { return false }
        compact()
        return true
    }

    /// Sets `key` to `value` (nil: deleted).
    mutating func set(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer?) {
        let found = bytes.withUnsafeBytes { index.find(key, in: $0) }
        guard let found else {
            guard let value else { return }
            let keyStart = bytes.count
            bytes.append(contentsOf: key)
            bytes.append(contentsOf: value)
            bytes.withUnsafeBytes { stored in
                index.set(
                    key: keyStart..<keyStart + key.count, value: keyStart + key.count..<bytes.count, in: stored)
            }
            return
        }
        let old = index.entries[found]
        if let value, let place = old.value, place.count == value.count {
            // As long as the value it replaces: written over it.
            if value.count > 0 {
                bytes.withUnsafeMutableBytes {
                    ($0.baseAddress! + place.lowerBound).copyMemory(from: value.baseAddress!, byteCount: value.count)
                }
            }
            return
        }
        garbage += old.value?.count ?? 0
        guard let value else {
            // The key stays until the next rewrite: count it as superseded too.
            garbage += old.value == nil ? 0 : key.count
            index.setValue(ofEntry: found, to: nil)
            return
        }
        let valueStart = bytes.count
        bytes.append(contentsOf: value)
        index.setValue(ofEntry: found, to: valueStart..<bytes.count)
    }

    /// Rewrites the buffer with the live entries only.
    mutating func compact() {
        let old = bytes
        let live = index.live
        bytes = [0]
        bytes.reserveCapacity(1 + index.liveBytes)
        index = RecordIndex()
        garbage = 0
        old.withUnsafeBytes { raw in
            for entry in live {
                set(
                    UnsafeRawBufferPointer(rebasing: raw[entry.key]),
                    UnsafeRawBufferPointer(rebasing: raw[entry.value!]))
            }
        }
    }
}

/// Keeps each entry under its own key in `UserDefaults` (`PREFIX` + key), so a
/// call writes only what it changed.
///
/// Only keys of the form `PREFIX` + a letter + `:` holding `Data` are the engine's;
/// any other key under the prefix (an app's own `rules.enabled`) is ignored and
/// never deleted. Durability: on Apple platforms UserDefaults persists by itself
/// (it survives the app being killed a moment after the call, as UserDefaults
/// does); elsewhere (Linux) every `apply` calls `synchronize()`, which rewrites the
/// whole defaults file, so each call is on disk when it returns.
///
/// `@unchecked`: `UserDefaults` is thread-safe (Apple documents it so) but not `Sendable` in
/// every Foundation (not on Linux); the store holds nothing else that changes. Nothing to
/// measure: the checked form cannot hold it.
public final class UserDefaultsStore: RuleStore, @unchecked Sendable {
    private let defaults: UserDefaults
    private let prefix: String
    private let synchronizes: Bool

    /// - Parameters:
    ///   - defaults: where to store; `.standard` by default.
    ///   - prefix: prepended to every key; use one per engine.
    public init(defaults: UserDefaults = .standard, prefix: String = "rules.") {
        self.defaults = defaults
        self.prefix = prefix
        #if canImport(Darwin)
            self.synchronizes = false
        #else
            self.synchronizes = true
        #endif
    }

    /// A store in `defaults` under keys starting with `prefix`.
    /// - Parameters:
    ///   - defaults: where the entries are kept.
    ///   - prefix: what every key starts with.
    ///   - synchronize: call `synchronize()` after every write (the default off Apple platforms).
    public init(defaults: UserDefaults = .standard, prefix: String = "rules.", synchronize: Bool) {
        self.defaults = defaults
        self.prefix = prefix
        self.synchronizes = synchronize
    }

    /// The engine's key in `key`, if it is one: compared as bytes, never as Characters.
    func engineKey(_ key: String) -> String? {
        var bytes = key.utf8[...]
        for byte in prefix.utf8 {
            guard bytes.first == byte else { return nil }
            bytes = bytes.dropFirst()
        }
        guard bytes.count >= 2, let kind = bytes.first, (kind | 0x20) >= 0x61, (kind | 0x20) <= 0x7A,
            bytes[bytes.index(after: bytes.startIndex)] == UInt8(ascii: ":")
        else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    public func load() throws -> [String: [UInt8]] {
        var entries: [String: [UInt8]] = [:]
        for (key, value) in defaults.dictionaryRepresentation() {
            guard let name = engineKey(key), let data = value as? Data else { continue }
            entries[name] = [UInt8](data)
        }
        return entries
    }

    public func apply(_ changes: [StoreChange]) throws {
        for change in changes {
            if let value = change.value {
                defaults.set(Data(value), forKey: prefix + change.key)
            } else {
                defaults.removeObject(forKey: prefix + change.key)
            }
        }
        if synchronizes && !defaults.synchronize() {
            throw RuleStoreError.io(path: "UserDefaults", operation: "synchronize", errno: EIO)
        }
    }
}
