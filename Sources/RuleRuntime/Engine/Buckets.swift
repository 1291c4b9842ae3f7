import Foundation
import RuleLang

/// Stable buckets (language 1.2): `bucket("salt")` places an install in 0...99 by a hash of the
/// salt and the install's id, the same on every platform and on a server.
///
/// The hash is ``StableHash/digest(_:)`` (64-bit FNV-1a, then MurmurHash3's finalizer) over the
/// UTF-8 of the salt, one byte `:` and the install's id; the bucket is that hash modulo 100.
/// FNV-1a alone made an install's bucket modulo 4 the same function of its id under every salt
/// (its low bits depend on the input's low bits only). grammar.md publishes test vectors.
enum InstallBucket {
    static func hash(_ bytes: some Sequence<UInt8>) -> UInt64 { StableHash.digest(bytes) }

    /// True when `a` and `b` have the same UTF-8 bytes, as the hash reads them (`==` also takes
    /// canonically equivalent spellings for one). Compared in place where both are contiguous
    /// (a generic walk of the two views made `bucket_vs_param` 8x).
    @inline(__always)
    static func sameBytes(_ a: String, _ b: String) -> Bool {
        let count = a.utf8.count
        guard count == b.utf8.count else { return false }
        if count == 0 { return true }
        let compared = a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y in memcmp(x.baseAddress!, y.baseAddress!, count) == 0 }
        }
        if let compared, let same = compared { return same }
        return a.utf8.elementsEqual(b.utf8)
    }

    /// The bucket, 0...99, of install `id` for `salt`.
    static func bucket(salt: String, installID id: String) -> Int {
        Int(hash(Array(salt.utf8) + [UInt8(ascii: ":")] + Array(id.utf8)) % 100)
    }
}

extension RuleEngine {
    /// The bucket, 0...99, of install `id` for `salt`, as `bucket("SALT")` computes it (RuleServer
    /// restricts a campaign to a range of buckets before it reads any state).
    package static func bucket(salt: String, installID id: String) -> Int {
        InstallBucket.bucket(salt: salt, installID: id)
    }
}

extension EngineCore {
    /// The most salts whose buckets are kept for the install's id.
    static let keptBuckets = 64

    /// The install's id: the app's (``RuleEngine/Options/installID``), else the stored one.
    var installID: String? { hooks.installID ?? storedInstallID }

    /// The install's bucket for `salt`: forced by an override, else hashed (and kept, for the
    /// id it was hashed with: rules name a few salts, read on every evaluation). Without an id
    /// (rules that read `bucket` make one as they start, so only after the app deleted it), 0.
    mutating func bucket(_ salt: String) -> Int {
        if !hooks.bucketOverrides.isEmpty, let forced = hooks.bucketOverrides[salt] { return forced }
        guard let id = installID else { return 0 }
        if !(bucketMemo.id.map { InstallBucket.sameBytes($0, id) } ?? false) {
            bucketMemo = (id, [])
        } else if let known = bucketMemo.buckets.first(where: { InstallBucket.sameBytes($0.salt, salt) }) {
            // By bytes, as the hash reads them: `==` would take an NFD salt for its NFC spelling.
            return known.bucket
        }
        let bucket = InstallBucket.bucket(salt: salt, installID: id)
        // Bounded: rules name a few salts; ad hoc checks of many more are hashed each time.
        if bucketMemo.buckets.count < EngineCore.keptBuckets { bucketMemo.buckets.append((salt, bucket)) }
        return bucket
    }

    /// At the start of rules that read `bucket`, with no id given or stored: a new random id to
    /// store. Shared: the file is read first, so that processes starting together keep one id.
    mutating func makeInstallID() -> [StoreChange] {
        guard rules.readsBuckets, installID == nil else { return [] }
        if shared {
            _ = lockFileForWriting()
            if installID != nil { return [] }
        }
        let id = UUID().uuidString.lowercased()
        storedInstallID = id
        return [EngineState.change(installID: id)]
    }
}

extension EngineCore {
    /// Whether this install is in `holdout`'s control arm, with its bucket: the one test of a
    /// holdout (``decide(_:now:_:)`` and ``controlArm(_:)`` ask it).
    @inline(__always)
    mutating func arm(of holdout: (share: Int, salt: String)) -> (held: Bool, bucket: Int) {
        let bucket = bucket(holdout.salt)
        return (bucket < holdout.share, bucket)
    }

    /// The holdout whose control arm this install is in for scenario `index` (its own or its
    /// group's), with the install's bucket; nil when it is in none. Whatever the clauses say
    /// (``RuleEngine/isHeldOut(_:)-(Scenario)``).
    mutating func controlArm(_ index: Int) -> (share: Int, salt: String, bucket: Int)? {
        for holdout in rules.scenarios[index].holdouts {
            let arm = arm(of: holdout)
            if arm.held { return (holdout.share, holdout.salt, arm.bucket) }
        }
        return nil
    }

    /// At a call that would show scenario `index` to an install in its control arm (``Verdict/heldOut``
    /// at `time`): records the exposure, an execution (so that its pacing is the shown arm's)
    /// and an event on its control stream.
    mutating func recordControlExposure(_ index: Int, at time: Double) {
        recordExecution(index, at: time, kind: .control)
        recordEvent(slot(EngineStream.control(of: rules.scenarios[index].name)), at: time)
        commit()
    }
}
