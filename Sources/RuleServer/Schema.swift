import Foundation

/// The tables the library owns, versioned like the state file: `migrate` creates them and
/// brings an older schema up to this one; a newer one is refused.
///
/// - `rules_installs`: one row per install, the row a decision locks (`FOR UPDATE`): its
///   `revision` counts the calls that changed it.
/// - `rules_entries`: the install's state, one row per entry of the state format (a stream, a
///   scenario's view, a group's budget, a to-do, a param, the install's id and zone...): the
///   same entries a device keeps in its file, so that a device's state imports into rows and
///   rows export to a state file, and a call writes only the entries it changed.
/// - `rules_requests`: the answers of calls made with a request id, so that a call retried
///   after a lost connection is applied once.
///
/// Each is partitioned by a hash of the install id into `partitions` tables, so that a team can
/// spread them (grammar: docs/server.md).
enum Schema {
    /// This library's schema version.
    static let version = 1
    /// Hash partitions of each table.
    static let partitions = 16

    static func create() -> [String] {
        var statements = [
            """
            CREATE TABLE rules_installs (
                install_id text NOT NULL PRIMARY KEY,
                revision bigint NOT NULL DEFAULT 0,
                updated_at timestamptz NOT NULL DEFAULT now()
            ) PARTITION BY HASH (install_id)
            """,
            """
            CREATE TABLE rules_entries (
                install_id text NOT NULL,
                key bytea NOT NULL,
                value bytea NOT NULL,
                PRIMARY KEY (install_id, key)
            ) PARTITION BY HASH (install_id)
            """,
            """
            CREATE TABLE rules_requests (
                install_id text NOT NULL,
                request_id text NOT NULL,
                answer text NOT NULL,
                recorded_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (install_id, request_id)
            ) PARTITION BY HASH (install_id)
            """,
        ]
        for table in ["rules_installs", "rules_entries", "rules_requests"] {
            for k in 0..<partitions {
                statements.append(
                    "CREATE TABLE \(table)_\(k) PARTITION OF \(table) FOR VALUES WITH (MODULUS \(partitions), REMAINDER \(k))"
                )
            }
        }
        return statements
    }

    /// Creates or upgrades the schema in one transaction, under an advisory lock (two servers
    /// migrating at once: one waits, then finds it done). Returns the version found before.
    @discardableResult
    static func migrate(_ connection: Connection) throws -> Int {
        try connection.execute("BEGIN")
        do {
            try connection.execute("SELECT pg_advisory_xact_lock(7264829101)")
            try connection.execute("CREATE TABLE IF NOT EXISTS rules_schema (version integer NOT NULL)")
            let rows = try connection.execute("SELECT version FROM rules_schema")
            let found = rows.isEmpty ? 0 : Int(rows.text(0, 0) ?? "") ?? 0
            if found > version {
                throw RuleServerError.schema("version \(found) is newer than this library's \(version)")
            }
            if found < 1 {
                for statement in create() { try connection.execute(statement) }
                try connection.execute("DELETE FROM rules_schema")
                try connection.execute("INSERT INTO rules_schema (version) VALUES (\(version))")
            }
            try connection.execute("COMMIT")
            return found
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// Refuses a database without this version's schema.
    static func check(_ connection: Connection) throws {
        let rows: Rows
        do {
            rows = try connection.execute("SELECT version FROM rules_schema")
        } catch RuleServerError.query(let state, _) where state == "42P01" {
            throw RuleServerError.schema("none: run 'rulec-server migrate --db ...' first")
        }
        let found = rows.isEmpty ? 0 : Int(rows.text(0, 0) ?? "") ?? 0
        guard found == version else {
            throw RuleServerError.schema(
                found < version
                    ? "version \(found) is older than this library's \(version): run 'rulec-server migrate'"
                    : "version \(found) is newer than this library's \(version)")
        }
    }
}
