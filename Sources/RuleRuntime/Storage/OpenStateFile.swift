/// The state file a ``FileStore`` has open: its descriptor, its durable length (the header and
/// every acknowledged record, nothing after them), its identity (device and inode) and a
/// generation that changes whenever the open file does, so that work started on an older file
/// (a background compaction) is dropped. The one writer of each: the store changes them only
/// through these methods, and reads them through its `fd`, `fileLength`, `identity` and
/// `generation`.
struct OpenStateFile {
    private(set) var descriptor: Int32 = -1
    private(set) var length = 0
    private(set) var identity = FileIdentity(device: 0, inode: 0)
    private(set) var generation = 0
    /// The length and the generation's low 16 bits in one word, published at every change, so
    /// that a background compaction reads how far the file it copies from has grown without
    /// the store's lock (``publishedLength(in:generation:)``).
    let published = AtomicWordIfAvailable()

    /// `descriptor` is the open file, not read yet (opening, or reopening before it is read).
    mutating func use(_ descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Closed, or never opened (the store closes the descriptor).
    mutating func forget() {
        descriptor = -1
    }

    /// The open file is another than before (a reopen, once read): work on the old one is void.
    mutating func changed() {
        generation += 1
        publish()
    }

    /// What `fstat` says the open file is.
    mutating func identify(_ identity: FileIdentity) {
        self.identity = identity
    }

    /// Its acknowledged bytes end at `length`: read at open, a torn tail left out, a header written.
    mutating func acknowledge(upTo length: Int) {
        self.length = length
        publish()
    }

    /// `count` more bytes acknowledged: an append that succeeded, or records other processes
    /// appended, read.
    mutating func acknowledge(appended count: Int) {
        length += count
        publish()
    }

    /// Another file in its place (a compaction or a restore renamed it there): its descriptor,
    /// identity and length. Returns the old descriptor, for the store to close.
    mutating func replace(with descriptor: Int32, identity: FileIdentity, length: Int) -> Int32 {
        let old = self.descriptor
        self.descriptor = descriptor
        self.identity = identity
        self.length = length
        generation += 1
        publish()
        return old
    }

    /// Stores the length and the generation's low 16 bits in ``published``.
    private func publish() {
        published.store(UInt64(generation & 0xFFFF) << 48 | UInt64(length & 0xFFFF_FFFF_FFFF), releasing: true)
    }

    /// What `word` (an open file's ``published``) says of the file in `generation`: its length,
    /// or nil once the open file is another. Only where `word.isAvailable`. Sixteen bits of the
    /// generation: a file would have to change 65,536 times during one compaction to be taken
    /// for another, and the switch checks the whole generation again under the lock.
    static func publishedLength(in word: AtomicWordIfAvailable, generation: Int) -> Int? {
        let packed = word.load(acquiring: true)
        guard packed >> 48 == UInt64(generation & 0xFFFF) else { return nil }
        return Int(packed & 0xFFFF_FFFF_FFFF)
    }
}
