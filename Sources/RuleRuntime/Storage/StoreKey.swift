/// The state's entry keys, spelt here only: a letter for what the entry holds, `:`, then a name
/// in its canonical (NFC) spelling.
///
/// | key | entry |
/// |---|---|
/// | `e:NAME` | a stream's tally |
/// | `s:NAME` | a scenario's view (its events, by value or by reference, and executions) |
/// | `g:NAME` | a group's budget |
/// | `p:NAME` | a param's stored value |
/// | `t:NAME` | a to-do |
/// | `d:NAME` | the local days a stream had events on |
/// | `m:` | sessions and versions |
/// | `a:` | the active rules |
/// | `u:` | the install's id, for stable buckets (language 1.2) |
/// | `z:` | the device's time zone, as last seen by the app (for the tools) |
/// | `i:PEER` | an importer's report |
/// | `w:K:NAME` | a rename record: NAME's former names, K the kind's letter (`s`, `g`, `p`, `e`) |
///
/// A key of a letter this library does not know was written by a newer one: it is kept and
/// ignored.
enum StoreKey {
    /// What an entry holds: its key's first byte.
    enum Kind: UInt8, Sendable {
        case stream = 0x65  // e
        case scenario = 0x73  // s
        case group = 0x67  // g
        case param = 0x70  // p
        case todo = 0x74  // t
        case days = 0x64  // d
        case meta = 0x6D  // m
        case activeRules = 0x61  // a
        case importReport = 0x69  // i
        case rename = 0x77  // w
        case install = 0x75  // u
        case zone = 0x7A  // z

        /// The key's prefix: the letter and `:`.
        var prefix: String { String(UnicodeScalar(rawValue)) + ":" }
    }

    /// The byte after the letter.
    static let separator = UInt8(ascii: ":")

    /// `kind`'s key for `name`.
    @inline(__always)
    static func key(_ kind: Kind, _ name: String) -> String { kind.prefix + name }

    static func stream(_ name: String) -> String { key(.stream, name) }
    static func scenario(_ name: String) -> String { key(.scenario, name) }
    static func group(_ name: String) -> String { key(.group, name) }
    static func param(_ name: String) -> String { key(.param, name) }
    static func todo(_ name: String) -> String { key(.todo, name) }
    static func days(_ stream: String) -> String { key(.days, stream) }
    static func importReport(_ peer: String) -> String { key(.importReport, peer) }
    static let meta = Kind.meta.prefix
    static let activeRules = Kind.activeRules.prefix
    static let install = Kind.install.prefix
    static let zone = Kind.zone.prefix

    /// The kind of the key whose UTF-8 is `bytes[range]`, or nil for one of no known kind (or
    /// no letter and `:`).
    @inline(__always)
    static func kind(of bytes: [UInt8], _ range: Range<Int>) -> Kind? {
        guard range.count >= 2, bytes[range.lowerBound + 1] == separator else { return nil }
        return Kind(rawValue: bytes[range.lowerBound])
    }

    /// The kind and name of `key`, or nil.
    static func parse(_ key: String) -> (kind: Kind, name: String)? {
        let utf8 = Array(key.utf8)
        guard let kind = kind(of: utf8, 0..<utf8.count) else { return nil }
        return (kind, String(decoding: utf8[2...], as: UTF8.self))
    }

    /// The kinds a rename record names, and their letters in `w:K:NAME`.
    static let renamedKinds: [Kind] = [.scenario, .group, .param, .stream]

    /// `w:K:NAME`: the rename record of `kind` (one of ``renamedKinds``) named `name` now.
    static func rename(_ kind: Kind, _ name: String) -> String { Kind.rename.prefix + kind.prefix + name }

    /// The kind and name a rename record's key is of, or nil.
    static func parseRename(_ key: String) -> (kind: Kind, name: String)? {
        guard let (outer, rest) = parse(key), outer == .rename, let (kind, name) = parse(rest),
            renamedKinds.contains(kind)
        else { return nil }
        return (kind, name)
    }
}
