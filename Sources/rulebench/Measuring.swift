import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

// How rulebench measures: samples and their percentiles, interleaved rounds and their ratios,
// calls timed one by one, the thread's preemptions, the resident size, and the goal lines.

func nanoseconds() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// A distribution of nanoseconds per operation.
struct Samples {
    var values: [Double]

    init(_ values: [Double]) { self.values = values.sorted() }

    func percentile(_ p: Double) -> Double {
        values[min(values.count - 1, Int((Double(values.count) * p).rounded(.down)))]
    }
    var median: Double { percentile(0.5) }
    var ratioSummary: String {
        String(
            format: "median %.2fx, p99 %.2fx, max %.2fx", median, percentile(0.99), max)
    }
    var max: Double { values.last ?? 0 }

    var summary: String {
        "median \(format(median)), p99 \(format(percentile(0.99))), p99.9 \(format(percentile(0.999))), max \(format(max))"
    }
}

/// Nanoseconds per operation over `rounds` rounds of `batch` operations.
func measure(rounds: Int = 31, batch: Int, _ body: () -> Void) -> Samples {
    var samples: [Double] = []
    for _ in 0..<rounds {
        let start = nanoseconds()
        for _ in 0..<batch { body() }
        samples.append(Double(nanoseconds() - start) / Double(batch))
    }
    return Samples(samples)
}

/// Several operations timed in turn, `batch` calls each per round, for `rounds` rounds.
struct Interleaved {
    var perRound: [[Double]]

    var samples: [Samples] { (0..<(perRound.first?.count ?? 0)).map { k in Samples(perRound.map { $0[k] }) } }

    /// Operation `a`'s time over operation `b`'s, round by round.
    func ratio(_ a: Int, to b: Int) -> Samples { Samples(perRound.map { $0[a] / $0[b] }) }
}

func interleaved(rounds: Int = 41, batch: Int, _ bodies: [() -> Void]) -> Interleaved {
    var perRound: [[Double]] = []
    for _ in 0..<rounds {
        var times: [Double] = []
        for body in bodies {
            let start = nanoseconds()
            for _ in 0..<batch { body() }
            times.append(Double(nanoseconds() - start) / Double(batch))
        }
        perRound.append(times)
    }
    return Interleaved(perRound: perRound)
}

/// Each call timed on its own: for tails.
func eachCall(_ count: Int, _ body: () -> Void) -> Samples {
    var samples = [Double](repeating: 0, count: count)
    for k in 0..<count {
        let start = nanoseconds()
        body()
        samples[k] = Double(nanoseconds() - start)
    }
    return Samples(samples)
}

/// The calling thread's resource use so far (Linux; the process's elsewhere).
func threadUsage() -> rusage {
    var usage = rusage()
    #if os(Linux)
        _ = getrusage(1, &usage)  // RUSAGE_THREAD, which Swift's Glibc does not export
    #else
        _ = getrusage(RUSAGE_SELF, &usage)
    #endif
    return usage
}

/// Involuntary context switches of the calling thread so far: times the scheduler took its
/// core away (waiting on a lock or for I/O is a voluntary switch, not counted here).
func preemptions() -> Int { Int(threadUsage().ru_nivcsw) }

/// The calling thread's CPU time so far, in nanoseconds: the time the kernel ran it. On a
/// virtual machine whose kernel accounts the host's pauses (steal time), these are left out.
func threadCPUNanoseconds() -> Double {
    var time = timespec()
    _ = clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) * 1e9 + Double(time.tv_nsec)
}

/// Times each of `count` calls and keeps apart the pauses that are not the call's: the
/// calls during which the scheduler preempted the thread are left out, and a call whose
/// thread never slept counts the CPU time it ran, not the wall clock, so that the host of a
/// virtual machine taking the CPU away is left out too (inside such a call the thread can
/// only have run or been paused). A call that slept counts its wall clock: a lock or a
/// write that made it wait is the call's. The longest such call, the longest by the wall
/// clock alone, how many were preempted, and what made the calls over 0.5 ms slow.
func longestUnpaused(_ count: Int, _ body: () -> Void) -> Unpaused {
    var result = Unpaused()
    for _ in 0..<count {
        let before = threadUsage()
        let cpuStart = threadCPUNanoseconds()
        let start = nanoseconds()
        body()
        let elapsed = Double(nanoseconds() - start)
        let ran = threadCPUNanoseconds() - cpuStart
        let after = threadUsage()
        if after.ru_nivcsw != before.ru_nivcsw {
            result.preempted += 1
            continue
        }
        let slept = after.ru_nvcsw != before.ru_nvcsw
        let counted = slept ? elapsed : min(elapsed, ran)
        result.wallMax = max(result.wallMax, elapsed)
        result.max = max(result.max, counted)
        if !slept && elapsed - ran > 500_000 { result.hostPaused += 1 }
        guard counted > 500_000 else { continue }
        if !slept {
            result.slow.running += 1
        } else if after.ru_oublock != before.ru_oublock {
            result.slow.dirtying += 1
        } else {
            result.slow.waiting += 1
        }
    }
    return result
}

/// What `longestUnpaused` found.
struct Unpaused {
    /// The longest call counted: the wall clock if it slept, the CPU time it ran if not.
    var max = 0.0
    /// The longest call not preempted, by the wall clock alone.
    var wallMax = 0.0
    var preempted = 0
    /// Calls that never slept but ran over 0.5 ms less than the wall clock: the host's pauses.
    var hostPaused = 0
    var slow = SlowCalls()

    /// Takes in the figures of more calls.
    mutating func add(_ other: Unpaused) {
        max = Swift.max(max, other.max)
        wallMax = Swift.max(wallMax, other.wallMax)
        preempted += other.preempted
        hostPaused += other.hostPaused
        slow.add(other.slow)
    }

    var summary: String {
        "max \(format(max)) (wall clock \(format(wallMax))); \(preempted) preempted; "
            + "\(hostPaused) paused by the host"
    }
}

/// Calls counted over 0.5 ms, by what their thread's counters say.
struct SlowCalls: CustomStringConvertible {
    /// Slept in a call that dirtied a clean page of a file (Linux counts `ru_oublock` when a
    /// page turns dirty, not when it is written out): the file system made the write wait, as
    /// ext4 does while its journal commits.
    var dirtying = 0
    /// Slept otherwise: a lock, or I/O that wrote nothing.
    var waiting = 0
    /// Never slept and ran over 0.5 ms: the call's own work, a page fault, or interrupts the
    /// kernel handled on the thread's time.
    var running = 0

    mutating func add(_ other: SlowCalls) {
        dirtying += other.dirtying
        waiting += other.waiting
        running += other.running
    }

    var description: String {
        "\(dirtying + waiting + running): \(dirtying) slept dirtying a page, "
            + "\(waiting) waiting otherwise, \(running) running"
    }
}

let benchDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("rulebench-\(getpid())")

func temporaryPath(_ name: String) -> URL {
    try? FileManager.default.createDirectory(at: benchDirectory, withIntermediateDirectories: true)
    return benchDirectory.appendingPathComponent(name)
}

func format(_ ns: Double) -> String {
    ns >= 1_000_000
        ? String(format: "%.2f ms", ns / 1_000_000)
        : ns >= 1_000 ? String(format: "%.2f µs", ns / 1_000) : String(format: "%.0f ns", ns)
}

func line(_ label: String, _ value: String) {
    print(label.padding(toLength: 46, withPad: " ", startingAt: 0) + value)
}

/// The process's resident set size (Linux only).
func residentBytes() -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// The goals of issue 10, each judged at the end.
struct Goal {
    var key: String
    var value: Double
    var unit: String
    var limit: Double
    var atMost: Bool

    var passes: Bool { atMost ? value <= limit : value >= limit }
    var text: String {
        let shown =
            unit == "x"
            ? String(format: "%.2fx", value)
            : unit == "ms" ? String(format: "%.2f", value) : String(format: "%.0f", value)
        let bound =
            unit == "x"
            ? String(format: "%.1fx", limit)
            : unit == "ms" ? String(format: "%.2f", limit) : String(format: "%.0f", limit)
        return "\(key): \(shown) (goal \(atMost ? "<=" : ">=") \(bound)) \(passes ? "PASS" : "FAIL")"
    }
}
