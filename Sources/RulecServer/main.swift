import Foundation
import RuleLang
import RuleRuntime
import RuleServer

// `rulec-server COMMAND`: RuleServer from a shell (a tool of its own: it links libpq, which
// rulec and the build plugin never need). docs/server.md.

/// "rulec-server", or "rulec server" when rulec ran it.
let name = ProcessInfo.processInfo.environment["RULEC_SERVER_NAME"] ?? "rulec-server"

let usage = """
    Usage: \(name) <command> --db CONNINFO [options] ...
      migrate                                   create or upgrade the schema
      trigger RULES... --install ID EVENT [--at TIME] [--request ID]
                                                record an event for an install
      try RULES... --install ID SCENARIO [--at TIME] [--request ID]
                                                tryToExecute for an install (prints yes or no)
      explain RULES... --install ID SCENARIO [--at TIME]
                                                why a scenario would or would not run
      eligible RULES... SCENARIO [--at TIME] [--bucket SALT:LOW-HIGH]
                                                the installs for which it would run, one a line
      fold RULES... [--limit N]                 fold batched events into up to N installs' state
      import RULES... --install ID STATEFILE    a device's state file made the install's rows
      export RULES... --install ID STATEFILE    the install's rows written into a state file
    --db takes a libpq connection string or URL; PGHOST, PGPORT, PGUSER, PGDATABASE and the rest
    fill what it leaves out. TIME is ISO 8601 (2026-12-06T10:00:00Z) or seconds since 1970;
    the default is now. Exit status: 0 done (try: yes), 1 an error or try's no, 64 wrong usage.
    """

func fail(_ message: String, status: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data("\(name): \(message)\n".utf8))
    exit(status)
}

var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "server" { arguments.removeFirst() }
guard let command = arguments.first, command != "--help", command != "-h" else {
    print(usage)
    exit(arguments.isEmpty ? 64 : 0)
}
arguments.removeFirst()

/// The value after `flag`, removed from the arguments.
@MainActor func take(_ flag: String) -> String? {
    guard let index = arguments.firstIndex(of: flag) else { return nil }
    guard index + 1 < arguments.count else { fail("'\(flag)' needs a value\n\(usage)", status: 64) }
    let value = arguments[index + 1]
    arguments.removeSubrange(index...index + 1)
    return value
}

let database = take("--db") ?? ""
let install = take("--install")
let request = take("--request")
let time: Date = {
    guard let text = take("--at") else { return Date() }
    if let seconds = Double(text) { return Date(timeIntervalSince1970: seconds) }
    if let date = ISO8601DateFormatter().date(from: text) { return date }
    fail("'--at' takes an ISO 8601 time or seconds since 1970, not '\(text)'", status: 64)
}()
let bucket = take("--bucket")
let limit = take("--limit")

do {
    if command == "migrate" {
        let found = try RuleServer.migrate(database: database)
        let now = RuleServer.schemaVersion
        print(
            found == 0
                ? "created the schema (version \(now))"
                : found < now
                    ? "upgraded the schema from version \(found) to \(now)" : "the schema was there (version \(found))")
        exit(0)
    }
    // The rule files (paths ending in .rules, or directories of them) come first.
    var sources: [SourceFile] = []
    while let path = arguments.first, path.hasSuffix(".rules") || isDirectory(path) {
        arguments.removeFirst()
        sources += try ruleFiles(path)
    }
    guard !sources.isEmpty else { fail("no rule files given\n\(usage)", status: 64) }
    let server = try RuleServer(sources: sources, database: database)
    func needInstall() -> String {
        guard let install else { fail("'\(command)' needs '--install ID'", status: 64) }
        return install
    }
    func operand() -> String {
        guard arguments.count == 1 else { fail("'\(command)' takes one operand\n\(usage)", status: 64) }
        return arguments[0]
    }
    switch command {
    case "trigger":
        try server.trigger(install: needInstall(), operand(), at: time, requestID: request)
        print("recorded")
    case "try":
        let yes = try server.tryToExecute(install: needInstall(), operand(), at: time, requestID: request)
        print(yes ? "yes" : "no")
        exit(yes ? 0 : 1)
    case "explain":
        print(try server.explain(install: needInstall(), operand(), at: time))
    case "eligible":
        var range: (salt: String, range: Range<Int>)?
        if let bucket {
            let parts = bucket.split(separator: ":")
            let bounds = parts.last?.split(separator: "-").compactMap { Int($0) } ?? []
            guard parts.count == 2, bounds.count == 2, bounds[0] <= bounds[1], bounds[1] <= 100 else {
                fail("'--bucket' takes SALT:LOW-HIGH (0 to 100, HIGH excluded), not '\(bucket)'", status: 64)
            }
            range = (String(parts[0]), bounds[0]..<bounds[1])
        }
        try server.eligible(operand(), at: time, buckets: range) { print($0) }
    case "fold":
        guard arguments.isEmpty else { fail("'fold' takes no operand\n\(usage)", status: 64) }
        guard let count = Int(limit ?? "1000"), count > 0 else {
            fail("'--limit' takes a number of installs, not '\(limit ?? "")'", status: 64)
        }
        print("folded \(try server.fold(limit: count)) installs")
    case "import":
        let store = FileStore(url: URL(fileURLWithPath: operand()))
        try server.importState(install: needInstall(), entries: try store.load())
        print("imported")
    case "export":
        let store = FileStore(url: URL(fileURLWithPath: operand()))
        let entries = try server.exportState(install: needInstall())
        try store.apply(entries.sorted { $0.key < $1.key }.map { StoreChange(key: $0.key, value: $0.value) })
        print("exported \(entries.count) entries")
    default:
        fail("unknown command '\(command)'\n\(usage)", status: 64)
    }
} catch {
    fail("\(error)")
}

func isDirectory(_ path: String) -> Bool {
    var directory: ObjCBool = false
    return FileManager.default.fileExists(atPath: path, isDirectory: &directory) && directory.boolValue
}

/// The `.rules` files at `path` (a file, or a directory searched recursively).
func ruleFiles(_ path: String) throws -> [SourceFile] {
    guard isDirectory(path) else {
        return [SourceFile(path: path, text: try String(contentsOfFile: path, encoding: .utf8))]
    }
    let paths = (FileManager.default.enumerator(atPath: path)?.allObjects as? [String] ?? [])
        .filter { $0.hasSuffix(".rules") }.sorted()
    return try paths.map { try ruleFiles((path as NSString).appendingPathComponent($0)) }.flatMap { $0 }
}
