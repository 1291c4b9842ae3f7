import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Elements in memory mapped from the system (`mmap`), not taken from the C allocator, and
/// given back whole when the buffer ends (`munmap`). For a compaction's index and windows: a
/// block of the allocator's above its `mmap` threshold, once freed, raises that threshold, and
/// the engine's own growing arrays then stay in the heap after they move. Memory per stream at
/// 100,000 streams (`rulebench memory 100000`): with the index in arrays and the records
/// appended meanwhile copied in one block, 132-192 B right after the last trigger and 115-145 B
/// idle (6 runs); mapped, and copied 64 KiB at a time, 107-127 B and 107-108 B (8 runs).
/// Zero-filled when mapped, and touched (resident) only where written.
struct MappedBuffer<Element: BitwiseCopyable>: ~Copyable {
    private var base: UnsafeMutablePointer<Element>?
    private(set) var count = 0
    private var capacity = 0

    init() {}

    deinit {
        if let base { munmap(base, capacity * MemoryLayout<Element>.stride) }
    }

    /// Room for `capacity` elements, mapped page by page; false when the system has no memory.
    mutating func reserve(_ capacity: Int) -> Bool {
        guard capacity > self.capacity else { return true }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let bytes = (capacity * MemoryLayout<Element>.stride + page - 1) / page * page
        guard let mapped = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
            mapped != MAP_FAILED
        else { return false }
        let fresh = mapped.bindMemory(to: Element.self, capacity: bytes / MemoryLayout<Element>.stride)
        if let base {
            fresh.update(from: base, count: count)
            munmap(base, self.capacity * MemoryLayout<Element>.stride)
        }
        base = fresh
        self.capacity = bytes / MemoryLayout<Element>.stride
        return true
    }

    /// `count` elements, all zero bits (or the elements kept, and zeros after them); false
    /// when the system has no memory.
    mutating func resize(to count: Int) -> Bool {
        guard reserve(count) else { return false }
        if count > self.count, let base {
            UnsafeMutableRawPointer(base + self.count).initializeMemory(
                as: UInt8.self, repeating: 0, count: (count - self.count) * MemoryLayout<Element>.stride)
        }
        self.count = count
        return true
    }

    /// Adds `element` at the end, doubling the room when full; false when the system has no memory.
    mutating func append(_ element: Element) -> Bool {
        if count == capacity, !reserve(max(1_024, 2 * capacity)) { return false }
        base![count] = element
        count += 1
        return true
    }

    subscript(index: Int) -> Element {
        get {
            precondition(index >= 0 && index < count, "index out of range")
            return base![index]
        }
        set {
            precondition(index >= 0 && index < count, "index out of range")
            base![index] = newValue
        }
    }

    /// Drops the elements after the first `count`.
    mutating func truncate(to count: Int) {
        precondition(count >= 0 && count <= self.count, "count out of range")
        self.count = count
    }

    /// The elements, in place.
    func withBuffer<R>(_ body: (UnsafeMutableBufferPointer<Element>) throws -> R) rethrows -> R {
        try body(UnsafeMutableBufferPointer(start: base, count: count))
    }

    /// The elements' bytes, in place.
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(UnsafeMutableBufferPointer(start: base, count: count)))
    }
}

extension MappedBuffer where Element == UInt8 {
    /// Adds `bytes` at the end; false when the system has no memory.
    mutating func append(contentsOf bytes: UnsafeRawBufferPointer) -> Bool {
        if count + bytes.count > capacity, !reserve(max(count + bytes.count, 2 * capacity, 4_096)) { return false }
        if !bytes.isEmpty {
            UnsafeMutableRawPointer(base! + count).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        }
        count += bytes.count
        return true
    }
}
