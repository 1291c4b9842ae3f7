import Foundation

/// One entry written or deleted (`value == nil`) by an engine call.
public struct StoreChange: Equatable, Sendable {
    public var key: String
    public var value: [UInt8]?

    public init(key: String, value: [UInt8]?) {
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
}

/// Errors from stores and stored data.
public enum RuleStoreError: Error, Equatable, CustomStringConvertible {
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
                "state file '\(path)' has format version \(version); this library reads version \(FileStore.formatVersion)"
        case .undecodableEntry(let key, let reason):
            return "stored entry '\(key)' cannot be decoded: \(reason)"
        case .io(let path, let operation, let code):
            return "\(operation) '\(path)' failed: \(String(cString: strerror(code)))"
        }
    }
}

/// Keeps state in memory only: for tests, previews and simulations.
public final class InMemoryStore: RuleStore, @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [String: [UInt8]]

    public init(_ entries: [String: [UInt8]] = [:]) {
        self.entries = entries
    }

    public func load() throws -> [String: [UInt8]] {
        lock.lock()
        defer { lock.unlock() }
        return entries
    }

    public func apply(_ changes: [StoreChange]) throws {
        lock.lock()
        defer { lock.unlock() }
        for change in changes { entries[change.key] = change.value }
    }
}

/// Keeps each entry under its own key in `UserDefaults` (`PREFIX` + key), so a
/// call writes only what it changed. Durability is UserDefaults' own.
public final class UserDefaultsStore: RuleStore, @unchecked Sendable {
    private let defaults: UserDefaults
    private let prefix: String

    /// - Parameters:
    ///   - defaults: where to store; `.standard` by default.
    ///   - prefix: prepended to every key; use one per engine.
    public init(defaults: UserDefaults = .standard, prefix: String = "rules.") {
        self.defaults = defaults
        self.prefix = prefix
    }

    public func load() throws -> [String: [UInt8]] {
        var entries: [String: [UInt8]] = [:]
        for (key, value) in defaults.dictionaryRepresentation() where key.hasPrefix(prefix) {
            guard let data = value as? Data else {
                throw RuleStoreError.undecodableEntry(key: key, reason: "not data")
            }
            entries[String(key.dropFirst(prefix.count))] = [UInt8](data)
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
    }
}
