import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// `rulec server COMMAND ...`: runs `rulec-server`, the tool that serves the rules from
/// PostgreSQL (docs/server.md). A tool of its own, so that rulec and the build plugin never link
/// libpq: rulec finds it beside its own executable (SwiftPM builds both into one folder), else
/// on `PATH`, and hands it the arguments after `server`; its options are its own
/// (`rulec server --help` names them, `rulec-server --help` details them).
enum ServerCommand: Command {
    static let summary = "the rules over many installs in PostgreSQL (runs rulec-server)"
    static let options = CommandOptions(
        name: "server",
        title: "rulec server: the same rules over many installs' state in PostgreSQL (docs/server.md).",
        operands: "COMMAND [ARGUMENTS...]",
        about: """
            Commands: migrate, trigger, try, explain, eligible, fold, import, export, each
            with --db CONNINFO (a libpq connection string or URL; PGHOST and the rest
            fill what it leaves out). 'rulec server COMMAND --help' is rulec-server's
            own help for all of them.

            Runs rulec-server, a tool of its own that links libpq (rulec does not):
            build it with 'swift build --product rulec-server', which puts it beside
            rulec, or put it on PATH.
            """,
        options: [],
        exitStatus: """
            Exit status: rulec-server's (0 done, 1 an error or try's no, 64 wrong usage);
            1 when rulec-server is not found.
            """)

    static func run(_ arguments: [String]) -> Int32 {
        // rulec's options (--help, --) before the command's word; the rest is rulec-server's.
        let word = arguments.firstIndex { !$0.hasPrefix("-") || $0 == "-" } ?? arguments.count
        let parsed = options.parse(Array(arguments[..<word]))
        if let exit = parsed.exit { return exit }
        let rest = parsed.operands + arguments[word...]
        guard !rest.isEmpty else { return CLI.misuse("missing command (migrate, trigger, try, ...)", usage: usage) }
        guard let tool = locate() else {
            CLI.printError(
                "error: rulec server runs rulec-server, which was found neither beside rulec nor on PATH: "
                    + "build it with 'swift build --product rulec-server' (it links libpq: apt-get install "
                    + "libpq-dev pkg-config, or brew install libpq pkg-config)")
            return ExitCode.failure
        }
        // rulec-server names itself "rulec server" in its messages when asked by rulec.
        setenv("RULEC_SERVER_NAME", "rulec server", 1)
        let argv = [tool] + rest
        let cArguments = argv.map { strdup($0) } + [nil]
        execv(tool, cArguments)
        let reason = String(cString: strerror(errno))
        for argument in cArguments { free(argument) }
        CLI.printError("error: cannot run \(tool): \(reason)")
        return ExitCode.failure
    }

    /// `rulec-server` beside this executable, else on `PATH`.
    static func locate() -> String? {
        let fm = FileManager.default
        var folders: [String] = []
        if let own = try? fm.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            folders.append((own as NSString).deletingLastPathComponent)
        } else if let path = Bundle.main.executablePath {
            folders.append(((path as NSString).resolvingSymlinksInPath as NSString).deletingLastPathComponent)
        }
        folders += (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        for folder in folders where !folder.isEmpty {
            let candidate = folder + "/rulec-server"
            if fm.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
