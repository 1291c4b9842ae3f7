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
///
/// - `rules_inbox` (version 2): events of a batch (``RuleServer/trigger(batch:)``), appended by
///   one `COPY` and folded into their install's entries, in order, by its next call (or by
///   ``RuleServer/fold(limit:)``); `eligible` folds them in memory.
///
/// Version 2 also adds `rules_lock_install` and `rules_write_install`: a call's lock and read,
/// and its write, one round trip each, their plans kept by the server. (One `SELECT ... FOR
/// UPDATE` joined to the entries cannot do the first: under READ COMMITTED, a statement that
/// waited for the lock still reads the other rows as they were when it began, so it missed what
/// the call it waited for wrote; the function reads after the lock.)
enum Schema {
    /// This library's schema version.
    static let version = 2
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

    /// Version 2: the inbox of batched events, and the functions of a call (each statement of a
    /// volatile function takes a new snapshot, so the entries are read after the lock is held).
    static func versionTwo() -> [String] {
        var statements = [
            "CREATE SEQUENCE rules_inbox_seq",
            """
            CREATE TABLE rules_inbox (
                install_id text NOT NULL,
                seq bigint NOT NULL DEFAULT nextval('rules_inbox_seq'),
                event text NOT NULL,
                properties bytea,
                at double precision NOT NULL,
                PRIMARY KEY (install_id, seq)
            ) PARTITION BY HASH (install_id)
            """,
        ]
        for k in 0..<partitions {
            statements.append(
                "CREATE TABLE rules_inbox_\(k) PARTITION OF rules_inbox FOR VALUES WITH (MODULUS \(partitions), REMAINDER \(k))"
            )
        }
        statements += [
            """
            CREATE OR REPLACE FUNCTION rules_lock_install(id text, request text)
            RETURNS TABLE (key bytea, value bytea, answer text, seq bigint, event text, properties bytea,
                at double precision)
            LANGUAGE plpgsql VOLATILE AS $$
            BEGIN
                PERFORM 1 FROM rules_installs i WHERE i.install_id = id FOR UPDATE;
                IF NOT FOUND THEN
                    INSERT INTO rules_installs (install_id) VALUES (id) ON CONFLICT DO NOTHING;
                    PERFORM 1 FROM rules_installs i WHERE i.install_id = id FOR UPDATE;
                END IF;
                IF request IS NOT NULL THEN
                    RETURN QUERY SELECT NULL::bytea, NULL::bytea, r.answer, NULL::bigint, NULL::text, NULL::bytea,
                        NULL::double precision
                        FROM rules_requests r WHERE r.install_id = id AND r.request_id = request;
                    IF FOUND THEN RETURN; END IF;
                END IF;
                RETURN QUERY SELECT e.key, e.value, NULL::text, NULL::bigint, NULL::text, NULL::bytea,
                    NULL::double precision
                    FROM rules_entries e WHERE e.install_id = id;
                RETURN QUERY SELECT NULL::bytea, NULL::bytea, NULL::text, b.seq, b.event, b.properties, b.at
                    FROM rules_inbox b WHERE b.install_id = id ORDER BY b.seq;
            END
            $$
            """,
            """
            CREATE OR REPLACE FUNCTION rules_write_install(id text, keys bytea[], vals bytea[], gone bytea[],
                folded bigint[], request text, answer text)
            RETURNS void LANGUAGE plpgsql VOLATILE AS $$
            BEGIN
                IF cardinality(keys) > 0 THEN
                    INSERT INTO rules_entries (install_id, key, value) SELECT id, k, v FROM unnest(keys, vals) AS t(k, v)
                        ON CONFLICT (install_id, key) DO UPDATE SET value = EXCLUDED.value;
                END IF;
                IF cardinality(gone) > 0 THEN
                    DELETE FROM rules_entries e WHERE e.install_id = id AND e.key = ANY(gone);
                END IF;
                IF cardinality(folded) > 0 THEN
                    DELETE FROM rules_inbox b WHERE b.install_id = id AND b.seq = ANY(folded);
                END IF;
                IF request IS NOT NULL THEN
                    INSERT INTO rules_requests (install_id, request_id, answer) VALUES (id, request, answer);
                END IF;
                UPDATE rules_installs SET revision = revision + 1, updated_at = now() WHERE install_id = id;
            END
            $$
            """,
        ]
        return statements
    }

    /// Creates or upgrades the schema in one transaction, under an advisory lock (two servers
    /// migrating at once: one waits, then finds it done). Returns the version found before.
    @discardableResult
    static func migrate(_ connection: Connection, to target: Int = version) throws -> Int {
        try connection.execute("BEGIN")
        do {
            try connection.execute("SELECT pg_advisory_xact_lock(7264829101)")
            try connection.execute("CREATE TABLE IF NOT EXISTS rules_schema (version integer NOT NULL)")
            let rows = try connection.execute("SELECT version FROM rules_schema")
            let found = rows.isEmpty ? 0 : Int(rows.text(0, 0) ?? "") ?? 0
            if found > version {
                throw RuleServerError.schema("version \(found) is newer than this library's \(version)")
            }
            if found < 1 && target >= 1 {
                for statement in create() { try connection.execute(statement) }
            }
            if found < 2 && target >= 2 {
                for statement in versionTwo() { try connection.execute(statement) }
            }
            if found < target {
                try connection.execute("DELETE FROM rules_schema")
                try connection.execute("INSERT INTO rules_schema (version) VALUES (\(target))")
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
