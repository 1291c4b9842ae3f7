import Foundation
import RuleLang
import RuleRuntime
import RuleServer
import ScratchPostgres

// MARK: - The same rules on a server (issue 61)

/// `rulebench server`: RuleServer over `RULEBENCH_SERVER_INSTALLS` installs (1,000,000 unless
/// set) seeded by `COPY` into a PostgreSQL of its own (`ThrowawayPostgres`; or the database
/// `RULEBENCH_DB` names, which it fills with tables of its own), each line against a baseline
/// measured in the same run on the same connection:
/// - a decision (`tryToExecute` that runs, so that it writes) against a bare
///   `BEGIN; SELECT ... FOR UPDATE; UPDATE; COMMIT` of one row as large as an install's entries;
/// - a batch of 1,000 triggers (1,000 installs) against a `COPY` of the rows that batch wrote;
/// - `eligible` over every install against the same cursor's rows read and discarded, and the
///   resident memory it grew by;
/// - decisions per second with 8 connections (printed, and the bare transaction's beside it).
/// Not part of the full run: it needs PostgreSQL and minutes.
func serverBenchmarks(_ goals: inout [Goal]) throws {
    let environment = ProcessInfo.processInfo.environment
    let installs = environment["RULEBENCH_SERVER_INSTALLS"].flatMap { Int($0) } ?? 1_000_000
    var scratch: ThrowawayPostgres?
    defer { scratch?.stop() }
    let database: String
    if let given = environment["RULEBENCH_DB"] {
        database = given
    } else {
        scratch = try ThrowawayPostgres()
        database = scratch!.conninfo
    }
    try RuleServer.migrate(database: database)
    let rules = [
        SourceFile(
            path: "bench.rules",
            text: """
                event open
                scenario Offer < on open; min_events 3; max_exec 3 within 1d; between 1h >
                """)
    ]
    let start = Date(timeIntervalSince1970: 1_780_000_000)
    // One install's state: five opens over five days, one execution on the third.
    let template = InMemoryStore()
    let clock = ManualClock(start)
    let device = try RuleEngine(sources: rules, store: template, clock: clock, options: .init(logSubsystem: nil))
    for day in 0..<5 {
        clock.set(start.addingTimeInterval(Double(day) * 86_400))
        device.trigger("open")
        if day == 2 { _ = device.tryToExecute("Offer") }
    }
    let entries = try template.load().sorted { $0.key < $1.key }
    let rowSize = entries.reduce(0) { $0 + $1.key.utf8.count + $1.value.count }
    let now = start.addingTimeInterval(6 * 86_400)
    @Sendable func id(_ k: Int) -> String { "u" + String(k + 10_000_000).dropFirst() }

    // Seeding: the installs, their entries, and the baseline's rows, by COPY.
    let seeding = nanoseconds()
    let server = try RuleServer(
        sources: rules, database: database, options: .init(connections: 1, statementTimeout: 0))
    try server.withConnection { connection in
        try connection.execute("DROP TABLE IF EXISTS bench_rows, bench_copy")
        try connection.execute("TRUNCATE rules_installs, rules_entries, rules_requests")
        try connection.execute("CREATE TABLE bench_rows (id text PRIMARY KEY, value bytea NOT NULL)")
        // The inbox's shape (its default, its key), in one table.
        try connection.execute("CREATE TABLE bench_copy (LIKE rules_inbox INCLUDING ALL)")
        // The rows in COPY's text form, written by the library's own writer (`CopyText`).
        let row = [UInt8](repeating: 7, count: rowSize)
        var chunk = 0
        while chunk < installs {
            let end = min(installs, chunk + 50_000)
            var ids = CopyText()
            var rows = CopyText()
            var plain = CopyText()
            for k in chunk..<end {
                let name = id(k)
                ids.text(name, last: true)
                for (key, value) in entries {
                    rows.text(name)
                    rows.bytea(Array(key.utf8))
                    rows.bytea(value, last: true)
                }
                plain.text(name)
                plain.bytea(row, last: true)
            }
            try connection.copy("COPY rules_installs (install_id) FROM STDIN", ids.bytes)
            try connection.copy("COPY rules_entries (install_id, key, value) FROM STDIN", rows.bytes)
            try connection.copy("COPY bench_rows (id, value) FROM STDIN", plain.bytes)
            chunk = end
        }
        try connection.execute("VACUUM ANALYZE")
    }
    line(
        "server: \(installs) installs seeded by COPY",
        String(
            format: "%.1f s, %d entries (%d bytes) each", Double(nanoseconds() - seeding) / 1e9, entries.count, rowSize)
    )

    // A decision against the bare transaction, each on installs not touched before.
    var random = SystemRandomNumberGenerator()
    var order = Array(0..<installs)
    order.shuffle(using: &random)
    var next = 0
    func fresh() -> Int {
        defer { next = (next + 1) % installs }
        return order[next]
    }
    let rounds = 21
    let perRound = 200
    var decisionRatios: [Double] = []
    var decisionTimes: [Double] = []
    var bareTimes: [Double] = []
    var ran = 0
    for _ in 0..<rounds {
        let begin = nanoseconds()
        for _ in 0..<perRound where try server.tryToExecute(install: id(fresh()), "Offer", at: now) { ran += 1 }
        let decision = Double(nanoseconds() - begin) / Double(perRound)
        let bareBegin = nanoseconds()
        try server.withConnection { connection in
            for _ in 0..<perRound {
                let row = Array(id(fresh()).utf8)
                try connection.execute("BEGIN")
                let value = try connection.execute(
                    "SELECT value FROM bench_rows WHERE id = $1 FOR UPDATE", [row], binaryResult: true)[0, 0]
                try connection.execute("UPDATE bench_rows SET value = $2 WHERE id = $1", [row, value], binary: [1])
                try connection.execute("COMMIT")
            }
        }
        let bare = Double(nanoseconds() - bareBegin) / Double(perRound)
        decisionTimes.append(decision)
        bareTimes.append(bare)
        decisionRatios.append(decision / bare)
    }
    guard ran == rounds * perRound else { throw BenchFailure("only \(ran) of the decisions ran") }
    line("server: tryToExecute (runs, writes)", Samples(decisionTimes).summary)
    line("server: BEGIN; SELECT FOR UPDATE; UPDATE; COMMIT", Samples(bareTimes).summary)
    let decisionRatio = Samples(decisionRatios)
    line("  decision / bare transaction, per round", decisionRatio.ratioSummary)
    goals.append(
        Goal(key: "server_decision_vs_transaction", value: decisionRatio.median, unit: "x", limit: 2, atMost: true))

    // A batch of triggers against a COPY of the rows it wrote (its events, into the inbox).
    var batchRatios: [Double] = []
    let batchSize = min(1_000, installs / 4)
    var batched: [String] = []
    for _ in 0..<11 {
        let batch = (0..<batchSize).map { _ in
            RuleServer.BatchEvent(install: id(fresh()), event: "open", properties: nil, at: now)
        }
        batched += batch.map(\.install)
        let begin = nanoseconds()
        try server.trigger(batch: batch)
        let batchTime = Double(nanoseconds() - begin)
        let rows = RuleServer.inboxRows(batch)
        let copyTime = try server.withConnection { connection -> Double in
            try connection.execute("TRUNCATE bench_copy")
            let begin = nanoseconds()
            try connection.copy("COPY bench_copy (install_id, event, properties, at) FROM STDIN", rows)
            return Double(nanoseconds() - begin)
        }
        batchRatios.append(batchTime / copyTime)
    }
    let batchRatio = Samples(batchRatios)
    line("server: trigger(batch:) of \(batchSize) / COPY of its rows", batchRatio.ratioSummary)
    goals.append(Goal(key: "server_batch_vs_copy", value: batchRatio.median, unit: "x", limit: 2, atMost: true))
    // Their next calls fold them: what a decision costs with one event waiting, and the fold.
    var folding: [Double] = []
    for install in batched.prefix(200) {
        let begin = nanoseconds()
        guard try server.tryToExecute(install: install, "Offer", at: now) else {
            throw BenchFailure("\(install) did not run after its batched event")
        }
        folding.append(Double(nanoseconds() - begin))
    }
    line("server: tryToExecute, one batched event to fold", Samples(folding).summary)
    let foldBegin = nanoseconds()
    let folded = try server.fold(limit: Int(Int32.max))
    line(
        "server: fold(limit:), the rest",
        String(format: "%d installs, %.0f/s", folded, Double(folded) * 1e9 / Double(nanoseconds() - foldBegin)))

    // eligible over every install against the same cursor read and discarded.
    var eligibleRatios: [Double] = []
    var growth = 0
    for _ in 0..<3 {
        let bare = try server.withConnection { connection -> Double in
            let begin = nanoseconds()
            try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try connection.execute(
                "DECLARE bench_cursor NO SCROLL CURSOR FOR SELECT i.install_id, e.key, e.value "
                    + "FROM rules_installs i LEFT JOIN rules_entries e ON e.install_id = i.install_id "
                    + "ORDER BY i.install_id")
            while !(try connection.execute("FETCH 500 FROM bench_cursor", binaryResult: true)).isEmpty {}
            try connection.execute("ROLLBACK")
            return Double(nanoseconds() - begin)
        }
        let resident = residentBytes() ?? 0
        var peak = resident
        var found = 0
        let begin = nanoseconds()
        try server.eligible("Offer", at: now.addingTimeInterval(86_400)) { _ in
            found += 1
            if found % 10_000 == 0 { peak = max(peak, residentBytes() ?? 0) }
        }
        let eligible = Double(nanoseconds() - begin)
        guard found == installs else { throw BenchFailure("eligible found \(found) of \(installs) installs") }
        growth = max(growth, peak - resident)
        eligibleRatios.append(eligible / bare)
        line(
            "server: eligible over \(installs) installs",
            String(format: "%.2f s (the cursor alone %.2f s)", eligible / 1e9, bare / 1e9))
    }
    let eligibleRatio = Samples(eligibleRatios)
    line("  eligible / cursor read and discarded", eligibleRatio.ratioSummary)
    goals.append(Goal(key: "server_eligible_vs_cursor", value: eligibleRatio.median, unit: "x", limit: 3, atMost: true))
    goals.append(
        Goal(
            key: "server_eligible_resident_growth_mib", value: Double(growth) / 1_048_576, unit: "MiB", limit: 64,
            atMost: true))

    // Decisions per second with 8 connections (8 threads), and the bare transaction's.
    let wide = try RuleServer(
        sources: rules, database: database, options: .init(connections: 8, statementTimeout: 0))
    let seconds = 3.0
    let shuffled = order.shuffled()
    func perSecond(_ body: @escaping @Sendable (String) throws -> Void) -> Double {
        let totals = Locked((done: 0, failures: 0))
        let lock = NSLock()
        let deadline = nanoseconds() + UInt64(seconds * 1e9)
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            var k = worker
            var (mine, failed) = (0, 0)
            while nanoseconds() < deadline {
                do { try body(id(shuffled[k % shuffled.count])) } catch { failed += 1 }
                k += 8
                mine += 1
            }
            lock.withLock { totals.value = (totals.value.done + mine, totals.value.failures + failed) }
        }
        return totals.value.failures == 0 ? Double(totals.value.done) / seconds : 0
    }
    let decisions = perSecond { install in _ = try wide.tryToExecute(install: install, "Offer", at: now) }
    let bareRate = perSecond { install in
        try wide.withConnection { connection in
            let row = Array(install.utf8)
            try connection.execute("BEGIN")
            let value = try connection.execute(
                "SELECT value FROM bench_rows WHERE id = $1 FOR UPDATE", [row], binaryResult: true)[0, 0]
            try connection.execute("UPDATE bench_rows SET value = $2 WHERE id = $1", [row, value], binary: [1])
            try connection.execute("COMMIT")
        }
    }
    line(
        "server: decisions/s, 8 connections",
        String(format: "%.0f (bare transactions: %.0f/s)", decisions, bareRate))
    _ = try server.withConnection { try $0.execute("DROP TABLE IF EXISTS bench_rows, bench_copy") }
}

/// Why the server benchmark stopped.
struct BenchFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
