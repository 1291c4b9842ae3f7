import Foundation

/// Work that an engine's start runs on another thread while it goes on with what does not
/// need its result, and then waits for (an app's launch waits for the longer of the two
/// instead of their sum).
///
/// `@unchecked Sendable`: `result` is written by the working thread before it leaves `group`
/// and read only after `wait()`, which orders the two. What the threads buy, `rulebench cold`
/// (an engine over 100,000 stored streams, with the batched lookups): 71-73 ms to 33-37 ms, and
/// cold_100k_vs_read_and_check from 2.25-2.36x to 1.55-1.63x (1.43-1.59x in three full runs).
final class BackgroundWork<Result>: @unchecked Sendable {
    private let group = DispatchGroup()
    private var result: Result?

    /// Starts `work` on `queue` (a serial queue runs works one after the other on one thread).
    init(on queue: DispatchQueue = .global(qos: .userInitiated), _ work: @escaping @Sendable () -> Result) {
        queue.async(group: group) { self.result = work() }
    }

    /// Waits for the work to end, and hands over its result.
    func wait() -> Result {
        group.wait()
        defer { result = nil }
        return result!
    }
}
