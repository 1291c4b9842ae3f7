import Foundation
import RuleLang

/// A name of the rules as the engine's calls take it: ``Scenario``, ``Event``, ``RuleGroup`` and
/// ``Param``. A string literal or an interpolated one (`"viewed \(section)"`) makes one, as
/// ``init(_:)`` does; handles are equal, and hash, by name alone.
public protocol NameHandle: Hashable, Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// The name as written in the rules.
    var name: String { get }
    /// The handle named `name`, which remembers nothing: it looks the name up at each call, as
    /// fast as a string, and allocates nothing.
    init(_ name: String)
}

extension NameHandle {
    /// The handle named by a literal, as ``init(_:)``.
    public init(stringLiteral name: String) { self.init(name) }
    /// The handle named by an interpolated literal, as ``init(_:)``.
    public init(stringInterpolation: DefaultStringInterpolation) {
        self.init(String(stringInterpolation: stringInterpolation))
    }
    public var description: String { name }
    public static func == (a: Self, b: Self) -> Bool { a.name == b.name }
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}

/// A scenario (or group, for ``RuleEngine/reset(_:)-(Scenario)``) of the rules, by name: what
/// every call about a scenario takes.
///
/// A string literal is one (`engine.tryToExecute("Onboarding")`), as is `Scenario(name)` for a
/// name known at run time: such a handle looks its name up at each call, as fast as a string,
/// and allocates nothing. A handle made with ``init(resolvingOnce:)`` looks its name up at its
/// first use with an engine and remembers the result, so later calls through it look nothing
/// up (on Linux, and on Apple platforms from macOS 15 / iOS 18; earlier systems look the name
/// up each call); keep it. `rulec gen swift` writes one such constant per scenario,
/// `static let askToSubscribe = Scenario(resolvingOnce: "AskToSubscribe")`, for
/// `engine.tryToExecute(.askToSubscribe)`. (`Scenario("AskToSubscribe")` with a literal is the
/// literal, by Swift's rule for literal arguments.)
public struct Scenario: NameHandle {
    /// The name as written in the rules.
    public let name: String
    let cache: HandleCache?

    /// The scenario named `name`, in a handle for a call or a few: it looks the name up at each
    /// call, as fast as a string, and allocates nothing. `Scenario(name)` and a literal make one.
    public init(_ name: String) {
        self.name = name
        cache = nil
    }

    /// The scenario named `name`, in a handle to keep (`static let`): it looks the name up once per
    /// engine and remembers its index, so later calls look nothing up. Making one allocates.
    public init(resolvingOnce name: String) {
        self.name = name
        cache = HandleCache()
    }
}

/// A `group` of the rules, by name: ``RuleEngine/reset(group:)`` resets its shared budget.
/// (Named so it does not clash with SwiftUI's `Group`.)
public struct RuleGroup: NameHandle {
    /// The group's name, as written in the rules.
    public let name: String

    /// The group named `name` (a group's handle has nothing to remember).
    public init(_ name: String) { self.name = name }
}

/// An event stream, by name: one named by `on`, a scenario's own, or an Ecno tag. A literal or
/// ``init(_:)`` makes a handle for a call, ``init(resolvingOnce:)`` one to keep, as ``Scenario``
/// says.
public struct Event: NameHandle {
    /// The name as written in the rules.
    public let name: String
    let cache: HandleCache?

    /// The stream named `name`, in a handle for a call or a few: it looks the name up at each
    /// call, as fast as a string, and allocates nothing. `Event(name)` and a literal make one.
    public init(_ name: String) {
        self.name = name
        cache = nil
    }

    /// The stream named `name`, in a handle to keep (`static let`): it looks the name up once per
    /// engine and remembers its stream's slot, so later calls look nothing up. Making one allocates.
    public init(resolvingOnce name: String) {
        self.name = name
        cache = HandleCache()
    }
}

/// A `param` of the rules, by name, typed by its Swift value: `Param<Bool>`, `Param<Int>`,
/// `Param<String>`, or `Param<TimeInterval>` for a duration. A literal or ``init(_:)`` makes a
/// handle for a call, ``init(resolvingOnce:)`` one to keep, as ``Scenario`` says.
public struct Param<Value: ParamValueConvertible>: NameHandle {
    /// The name as written in the rules.
    public let name: String
    let cache: HandleCache?

    /// The param named `name`, in a handle for a call or a few: it looks the name up at each
    /// call, as fast as a string, and allocates nothing. `Param<Int>(name)` and a literal make one.
    public init(_ name: String) {
        self.name = name
        cache = nil
    }

    /// The param named `name`, in a handle to keep (`static let`): it looks the name up once per
    /// engine and remembers its index, so later calls look nothing up. Making one allocates.
    public init(resolvingOnce name: String) {
        self.name = name
        cache = HandleCache()
    }
}

/// A Swift type that holds a param's value.
public protocol ParamValueConvertible: Sendable {
    /// The language type it holds.
    static var valueType: ValueType { get }
    /// The value as the engine stores it.
    var paramValue: ParamValue { get }
    /// The Swift value of a param value of ``valueType``.
    init?(paramValue: ParamValue)
    /// The value of a param the rules do not declare.
    static var zero: Self { get }
}

extension Bool: ParamValueConvertible {
    public static var valueType: ValueType { .bool }
    public var paramValue: ParamValue { .bool(self) }
    public init?(paramValue: ParamValue) {
        guard case .bool(let value) = paramValue else { return nil }
        self = value
    }
    public static var zero: Bool { false }
}

extension Int: ParamValueConvertible {
    public static var valueType: ValueType { .int }
    public var paramValue: ParamValue { .int(Int64(self)) }
    /// A stored value outside `Int`'s range (32-bit platforms) is clamped.
    public init?(paramValue: ParamValue) {
        guard case .int(let value) = paramValue else { return nil }
        self = Int(clamping: value)
    }
    public static var zero: Int { 0 }
}

extension String: ParamValueConvertible {
    public static var valueType: ValueType { .string }
    public var paramValue: ParamValue { .string(self) }
    public init?(paramValue: ParamValue) {
        guard case .string(let value) = paramValue else { return nil }
        self = value
    }
    public static var zero: String { "" }
}

/// A duration, in seconds.
extension Double: ParamValueConvertible {
    public static var valueType: ValueType { .duration }
    public var paramValue: ParamValue { .duration(self) }
    public init?(paramValue: ParamValue) {
        guard case .duration(let value) = paramValue else { return nil }
        self = value
    }
    public static var zero: Double { 0 }
}

// MARK: - Resolution

/// Where a handle remembers its index in the engine that used it last: the engine's
/// serial number and the index, published together in one atomic word. Only a handle made to
/// be kept has one (``Scenario/init(resolvingOnce:)``): a class, so that reading it through the
/// handle retains nothing (held in a struct, the word's reference was retained and released on
/// every call: `try_handle_vs_limit` read 1.01-1.04x against 0.69-0.88x, three interleaved pairs
/// of `rulebench calls`).
final class HandleCache: Sendable {
    private let word = AtomicWordIfAvailable()

    /// The index remembered for engine `serial`, if any.
    @inline(__always)
    func index(for serial: UInt32) -> Int? {
        let packed = word.load(acquiring: true)
        guard packed >> 32 == UInt64(serial), packed & 0xFFFF_FFFF != 0 else { return nil }
        return Int(packed & 0xFFFF_FFFF) - 1
    }

    /// Remembers `index` for engine `serial` (replacing what another engine left).
    @inline(__always)
    func remember(_ index: Int, for serial: UInt32) {
        guard index < 0xFFFF_FFFF else { return }
        word.store(UInt64(serial) << 32 | UInt64(index + 1), releasing: true)
    }
}

/// The thread holding an engine's lock, in one atomic word (before macOS 15 / iOS 18 nothing is
/// kept, and a callback calling its engine is not detected).
final class ThreadMark: Sendable {
    private let word = AtomicWordIfAvailable()

    /// The calling thread's identity (never 0).
    @inline(__always)
    static var current: UInt64 {
        #if canImport(Darwin)
            return UInt64(UInt(bitPattern: pthread_self()))
        #else
            return UInt64(pthread_self())
        #endif
    }

    @inline(__always)
    var value: UInt64 {
        get { word.load(acquiring: false) }
        set { word.store(newValue, releasing: false) }
    }
}

/// Engine serial numbers, so a handle never takes one engine's index for another's.
enum EngineSerial {
    private static let counter = Counter()
    static func next() -> UInt32 { UInt32(truncatingIfNeeded: counter.next()) }
}

extension StringProtocol {
    /// The name as a `String`: itself when it is one (the cast folds away when the call is
    /// specialized), else a copy. `String(name)` would go through a generic conversion.
    @inlinable @inline(__always)
    var ruleName: String { self as? String ?? String(self) }
}
