import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A PostgreSQL server of its own for a test or a benchmark: `initdb` and `pg_ctl` on a new temporary folder,
/// listening on a Unix socket in that folder only, stopped and removed by ``stop()`` (call it in
/// a `defer`, so that it runs pass or fail). As root (the server refuses it) the commands run as
/// the `postgres` user, which owns the folder.
public final class ThrowawayPostgres {
    /// Why a server could not be made here: its binaries are absent.
    public struct Unavailable: Error, CustomStringConvertible {
        public var description: String
    }

    /// A command of PostgreSQL's that failed, with its output.
    public struct Failed: Error, CustomStringConvertible {
        public var description: String
    }

    public let folder: URL
    public let port: Int
    /// The libpq connection string for its `postgres` database.
    public var conninfo: String { "host=\(folder.path) port=\(port) user=postgres dbname=postgres" }
    private let bin: String
    private var running = false

    /// The folder holding `initdb` and `pg_ctl`: `pg_config --bindir`, or Debian's
    /// `/usr/lib/postgresql/VERSION/bin`.
    public static func binaries() -> String? {
        let fm = FileManager.default
        if let versions = try? fm.contentsOfDirectory(atPath: "/usr/lib/postgresql") {
            for version in versions.sorted().reversed() {
                let bin = "/usr/lib/postgresql/\(version)/bin"
                if fm.isExecutableFile(atPath: bin + "/initdb") { return bin }
            }
        }
        for bin in ["/usr/local/bin", "/opt/homebrew/bin", "/usr/bin"]
        where fm.isExecutableFile(atPath: bin + "/initdb") && fm.isExecutableFile(atPath: bin + "/pg_ctl") {
            return bin
        }
        return nil
    }

    /// Starts one. Throws ``Unavailable`` when PostgreSQL is not installed.
    public init() throws {
        guard let bin = Self.binaries() else {
            throw Unavailable(description: "PostgreSQL's initdb and pg_ctl were not found")
        }
        self.bin = bin
        folder = URL(fileURLWithPath: "/tmp/rules-pg-\(UUID().uuidString.prefix(8))")
        port = 20_000 + Int.random(in: 0..<20_000)
        let fm = FileManager.default
        try fm.createDirectory(at: folder, withIntermediateDirectories: true)
        do {
            if getuid() == 0 {
                try fm.setAttributes(
                    [.ownerAccountName: "postgres", .groupOwnerAccountName: "postgres"], ofItemAtPath: folder.path)
            }
            try run(
                bin + "/initdb",
                ["-D", folder.path + "/data", "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"])
            try start()
        } catch {
            try? fm.removeItem(at: folder)
            throw error
        }
    }

    deinit { stop() }

    /// Starts the server (again, after ``kill()`` or ``stopServer()``), and waits until it accepts.
    public func start() throws {
        let options = "-k \(folder.path) -c listen_addresses= -p \(port) -c fsync=off -c max_connections=200"
        try run(
            bin + "/pg_ctl", ["-D", folder.path + "/data", "-o", options, "-l", folder.path + "/log", "-w", "start"])
        running = true
    }

    /// Stops the server at once, as a crash would (`SIGKILL` to the postmaster and its
    /// children): what was committed is kept, what was not is lost.
    public func kill() {
        guard
            let pid = try? String(contentsOfFile: folder.path + "/data/postmaster.pid", encoding: .utf8)
                .split(separator: "\n").first.flatMap({ Int32($0) })
        else { return }
        _ = Foundation.kill(-pid, SIGKILL)
        _ = Foundation.kill(pid, SIGKILL)
        // Its children end when they notice; the next start waits for the socket to be free.
        let deadline = Date().addingTimeInterval(10)
        while Foundation.kill(pid, 0) == 0 && Date() < deadline { usleep(20_000) }
        try? FileManager.default.removeItem(atPath: folder.path + "/data/postmaster.pid")
        running = false
    }

    /// Stops the server (fast shutdown), keeping its folder.
    public func stopServer() {
        guard running else { return }
        try? run(bin + "/pg_ctl", ["-D", folder.path + "/data", "-m", "fast", "-w", "stop"])
        running = false
    }

    /// Stops the server and removes its folder.
    public func stop() {
        if running {
            try? run(bin + "/pg_ctl", ["-D", folder.path + "/data", "-m", "immediate", "-w", "stop"])
            running = false
        }
        try? FileManager.default.removeItem(at: folder)
    }

    /// Runs `tool` (as `postgres` when this process is root); throws with its output if it fails.
    /// Spawned and waited for directly, its output to a file: `pg_ctl start` leaves the server
    /// running with what it inherited, and Foundation's `Process` waited on (a pipe, its own
    /// descriptors) for as long as the server ran.
    private func run(_ tool: String, _ arguments: [String]) throws {
        let argv = getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--", tool] + arguments : [tool] + arguments
        let outputPath = NSTemporaryDirectory() + "rules-pg-output-\(UUID().uuidString)"
        defer { unlink(outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let cArguments = argv.map { strdup($0) } + [nil]
        defer { for argument in cArguments { free(argument) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, cArguments, environ)
        guard spawned == 0 else {
            throw Failed(description: "\(tool) could not start: \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // Exited normally with 0 (the wait status's low 7 bits are the signal, bits 8-15 the code).
        guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
            throw Failed(description: "\(tool) failed (status \(status)): \(text)")
        }
    }
}
