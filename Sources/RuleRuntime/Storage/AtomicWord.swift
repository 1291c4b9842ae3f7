#if canImport(Synchronization)
    import Synchronization
#endif

/// One 64-bit word, atomic where the system has atomics (Linux, macOS 15 / iOS 18 and later);
/// elsewhere nothing is kept: loads give 0 and stores are dropped.
struct AtomicWordIfAvailable: Sendable {
    /// An ``AtomicWord``, or nil (typed loosely: the class exists only where atomics do).
    private let word: (any AnyObject & Sendable)?

    /// Whether the word is kept (false where the system has no atomics).
    var isAvailable: Bool { word != nil }

    init() {
        #if canImport(Synchronization)
            if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, *) {
                word = AtomicWord()
                return
            }
        #endif
        word = nil
    }

    /// The word (acquiring: what the store that published it wrote before is visible).
    @inline(__always)
    func load(acquiring: Bool) -> UInt64 {
        #if canImport(Synchronization)
            if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, *), let word {
                let box = unsafeDowncast(word, to: AtomicWord.self)
                return acquiring ? box.value.load(ordering: .acquiring) : box.value.load(ordering: .relaxed)
            }
        #endif
        return 0
    }

    /// Sets the word (releasing: what was written before is visible to an acquiring load).
    @inline(__always)
    func store(_ value: UInt64, releasing: Bool) {
        #if canImport(Synchronization)
            if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, *), let word {
                let box = unsafeDowncast(word, to: AtomicWord.self)
                if releasing {
                    box.value.store(value, ordering: .releasing)
                } else {
                    box.value.store(value, ordering: .relaxed)
                }
            }
        #endif
    }
}

#if canImport(Synchronization)
    @available(macOS 15, iOS 18, tvOS 18, watchOS 11, *)
    final class AtomicWord: Sendable {
        let value = Atomic<UInt64>(0)
    }
#endif
