import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A process told apart from every other, now and later: its id and the moment it started (a
/// process id is reused once its process is gone; the pair is not). A run's mark carries it,
/// so that the launch that finds a mark tells a process still running (a second process in
/// the app's role on the file: a Mac app and its helper) from one that ended uncleanly.
enum ProcessIdentity {
    /// This process's start, as ``start(of:)`` reads it; nil where it cannot be read.
    static let current: (pid: Int32, start: String)? = {
        let pid = getpid()
        return start(of: pid).map { (pid, $0) }
    }()

    /// True when process `pid` is running and started at `start`.
    static func isRunning(pid: Int32, start: String) -> Bool {
        pid > 0 && Self.start(of: pid) == start
    }

    /// When process `pid` started, as text, or nil when no such process can be seen. Linux: the
    /// boot's id and the start in clock ticks after boot (`/proc/PID/stat`, field 22). Darwin:
    /// the start time `sysctl` gives, in seconds and microseconds.
    static func start(of pid: Int32) -> String? {
        #if os(Linux)
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            // After the command's `)`: field 3 (the state) onward; the start is field 22.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            // A zombie (`Z`: ended, not yet reaped) is gone as far as its run is concerned.
            guard fields.count > 19, fields[0] != "Z", fields[0] != "X" else { return nil }
            let boot = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)) ?? ""
            return boot.trimmingCharacters(in: .whitespacesAndNewlines) + ":" + fields[19]
        #elseif canImport(Darwin)
            var info = kinfo_proc()
            var size = MemoryLayout<kinfo_proc>.stride
            var name: [Int32] = [CTL_KERN, KERN_PROC, KERN_PROC_PID, pid]
            guard sysctl(&name, 4, &info, &size, nil, 0) == 0, size > 0, info.kp_proc.p_pid == pid else { return nil }
            let started = info.kp_proc.p_starttime
            return "\(started.tv_sec).\(started.tv_usec)"
        #else
            return nil
        #endif
    }
}

extension EngineCore {
    /// The to-do that marks this process's run as in the foreground: present at a later launch
    /// while its process is gone, the run ended uncleanly. One per process in the app's role.
    static let runKey = runningKey + ":" + thisRun

    /// True for a run's mark: this library's (`@running:RUN`) or one written before it (`@running`).
    static func isRunMark(_ key: String) -> Bool {
        key == runningKey || key.hasPrefix(runningKey + ":")
    }

    /// This run's mark: the run, and the process's id and start when they can be read.
    static func runMark() -> [String: String] {
        var info = ["run": thisRun]
        if let current = ProcessIdentity.current {
            info["pid"] = String(current.pid)
            info["start"] = current.start
        }
        return info
    }

    /// True when the mark `info` is of a process still running other than this one (its id and
    /// start are those of a running process). A mark without them (written before this library,
    /// or where they cannot be read) is of a process that ended.
    static func isOfAnotherLiveProcess(_ info: [String: String]?) -> Bool {
        guard let info, info["run"] != thisRun, let pid = info["pid"].flatMap(Int32.init), let start = info["start"]
        else { return false }
        return ProcessIdentity.isRunning(pid: pid, start: start)
    }
}
