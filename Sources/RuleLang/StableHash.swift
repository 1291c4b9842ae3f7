/// The hash this project computes the same way on every platform: for `bucket` (an install's
/// bucket for a salt) and for the digest of a long filter in a stream's stored name.
///
/// 64-bit FNV-1a (offset basis `0xcbf29ce484222325`, prime `0x100000001b3`) over the bytes,
/// then the 64-bit finalizer of MurmurHash3 (`fmix64`: `h ^= h >> 33`, `h *= 0xff51afd7ed558ccd`,
/// `h ^= h >> 33`, `h *= 0xc4ceb9fe1a85ec53`, `h ^= h >> 33`). FNV-1a alone is not enough where
/// the low bits are read (`% 100`): a product's low bits depend only on its factors' low bits,
/// so FNV-1a's low bits depend only on the input bytes' low bits; the finalizer folds every
/// bit into every other (grammar.md, "Stable buckets").
public enum StableHash {
    /// 64-bit FNV-1a of `bytes`, without the finalizer.
    public static func fnv1a(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01B3
        }
        return hash
    }

    /// MurmurHash3's 64-bit finalizer: a bijection in which each output bit depends on every
    /// input bit.
    public static func finalized(_ value: UInt64) -> UInt64 {
        var h = value
        h ^= h >> 33
        h &*= 0xff51_afd7_ed55_8ccd
        h ^= h >> 33
        h &*= 0xc4ce_b9fe_1a85_ec53
        h ^= h >> 33
        return h
    }

    /// FNV-1a of `bytes`, finalized.
    public static func digest(_ bytes: some Sequence<UInt8>) -> UInt64 { finalized(fnv1a(bytes)) }
}
