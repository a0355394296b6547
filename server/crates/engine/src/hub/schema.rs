//! The hub's tables, created once and checked on every connection.
//!
//! Owns: the DDL, its version, the upgrade from the version before, and
//! the grants that let a role read a repository. Never: change a table a
//! newer quarry wrote, or an older one's other than by that upgrade (any
//! other version mismatch is an error that says so).

use super::error::{sql, HubError};
use tokio_postgres::Client;

/// Bumped whenever a table, index or policy changes meaning.
pub const VERSION: i32 = 5;

/// The oldest schema a pusher's connection upgrades in place.
const OLDEST_UPGRADED: i32 = 2;

/// What turns a schema of version `n` into version `n + 1`, from
/// [`OLDEST_UPGRADED`] on: version 3 added each repository's generated
/// files, version 4 its module entry files, version 5 the home files of
/// its split types (each empty until its next push).
const UPGRADES: [&str; 3] = [
    "ALTER TABLE quarry_repos
        ADD COLUMN IF NOT EXISTS generated text[] NOT NULL DEFAULT '{}';
     UPDATE quarry_schema SET version = 3 WHERE version = 2;",
    "ALTER TABLE quarry_repos
        ADD COLUMN IF NOT EXISTS modules text[] NOT NULL DEFAULT '{}';
     UPDATE quarry_schema SET version = 4 WHERE version = 3;",
    "ALTER TABLE quarry_repos
        ADD COLUMN IF NOT EXISTS homes text[] NOT NULL DEFAULT '{}';
     UPDATE quarry_schema SET version = 5 WHERE version = 4;",
];

// One upgrade per version between the oldest upgraded and this one.
const _: () = assert!(UPGRADES.len() as i32 == VERSION - OLDEST_UPGRADED);

/// Dimensions of the hub's vectors: the transformer tier's
/// (all-MiniLM-L6-v2).
pub const DIM: usize = 384;

/// Serialises concurrent creation (`pg_advisory_xact_lock`).
const CREATE_LOCK: i64 = 0x7175_6172_7279_0001;

/// Tables a reader needs `SELECT` on.
const READ_TABLES: &str = "quarry_schema, quarry_repos, quarry_grants, quarry_files, \
                           quarry_chunks, quarry_terms, quarry_df";

const DDL: &str = r#"
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE IF NOT EXISTS quarry_schema (version int NOT NULL);
CREATE TABLE IF NOT EXISTS quarry_repos (
    id serial PRIMARY KEY,
    name text NOT NULL UNIQUE,
    commit_id text NOT NULL DEFAULT '',
    n_docs bigint NOT NULL DEFAULT 0,
    field_len_sums bigint[] NOT NULL DEFAULT '{0,0,0,0,0}',
    superseded text[] NOT NULL DEFAULT '{}',
    model text NOT NULL DEFAULT '',
    generated text[] NOT NULL DEFAULT '{}',
    modules text[] NOT NULL DEFAULT '{}',
    homes text[] NOT NULL DEFAULT '{}',
    pushed_at timestamptz
);
CREATE TABLE IF NOT EXISTS quarry_grants (
    repo_id int NOT NULL REFERENCES quarry_repos (id) ON DELETE CASCADE,
    role name NOT NULL,
    PRIMARY KEY (repo_id, role)
);
CREATE TABLE IF NOT EXISTS quarry_files (
    repo_id int NOT NULL REFERENCES quarry_repos (id) ON DELETE CASCADE,
    path text COLLATE "C" NOT NULL,
    hash bytea NOT NULL,
    language text NOT NULL,
    body text NOT NULL,
    PRIMARY KEY (repo_id, path)
);
CREATE SEQUENCE IF NOT EXISTS quarry_chunk_ids;
CREATE TABLE IF NOT EXISTS quarry_chunks (
    id bigint PRIMARY KEY,
    repo_id int NOT NULL,
    path text COLLATE "C" NOT NULL,
    kind text NOT NULL,
    name text NOT NULL,
    qualified_name text NOT NULL,
    container text,
    byte_start int NOT NULL,
    byte_end int NOT NULL,
    start_line int NOT NULL,
    end_line int NOT NULL,
    name_line int NOT NULL,
    name_column int NOT NULL,
    signature text NOT NULL,
    doc text NOT NULL,
    -- The chunk's whole lines (from the start of its first line to the
    -- end of its last), from byte lines_start of the file, and its direct
    -- children's byte ranges (start, end pairs): a query ranks candidate
    -- chunks from these alone, never reading whole files.
    lines_start int NOT NULL,
    lines text NOT NULL,
    holes int[] NOT NULL,
    embed_key bytea,
    embedding halfvec(384),
    FOREIGN KEY (repo_id, path) REFERENCES quarry_files (repo_id, path) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS quarry_chunks_file ON quarry_chunks (repo_id, path);
-- Exact names and prefixes (`LIKE 'x%'`), whatever the collation.
CREATE INDEX IF NOT EXISTS quarry_chunks_name
    ON quarry_chunks (lower(name) text_pattern_ops, repo_id);
CREATE INDEX IF NOT EXISTS quarry_chunks_key ON quarry_chunks (embed_key);
CREATE INDEX IF NOT EXISTS quarry_chunks_embedding ON quarry_chunks
    USING hnsw (embedding halfvec_cosine_ops);
CREATE TABLE IF NOT EXISTS quarry_terms (
    term text COLLATE "C" NOT NULL,
    repo_id int NOT NULL,
    chunk_id bigint NOT NULL REFERENCES quarry_chunks (id) ON DELETE CASCADE,
    weight real NOT NULL
);
CREATE INDEX IF NOT EXISTS quarry_terms_chunk ON quarry_terms (chunk_id);
-- A term's heaviest postings, read from the index alone (once vacuum has
-- marked the pages all-visible): no heap visit per posting.
CREATE INDEX IF NOT EXISTS quarry_terms_lookup ON quarry_terms (term, weight DESC)
    INCLUDE (repo_id, chunk_id);
CREATE TABLE IF NOT EXISTS quarry_df (
    term text COLLATE "C" NOT NULL,
    repo_id int NOT NULL REFERENCES quarry_repos (id) ON DELETE CASCADE,
    df int NOT NULL,
    -- Read from the index alone (`df` included): a query sums a term's
    -- counts over hundreds of repositories, whose rows lie on as many
    -- heap pages.
    PRIMARY KEY (term, repo_id) INCLUDE (df)
);
-- A role sees a repository's rows only when granted it: its own grants
-- (quarry_grants' policy), and through them every table's rows (the
-- ARRAY(...) is evaluated once per statement). The owner who pushes
-- bypasses row-level security as the tables' owner.
ALTER TABLE quarry_grants ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS quarry_read ON quarry_grants;
CREATE POLICY quarry_read ON quarry_grants FOR SELECT USING (
    CASE WHEN EXISTS (SELECT 1 FROM pg_roles WHERE rolname = role)
         THEN pg_has_role(current_user, role, 'MEMBER') ELSE false END);
ALTER TABLE quarry_repos ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS quarry_read ON quarry_repos;
CREATE POLICY quarry_read ON quarry_repos FOR SELECT
    USING (id = ANY (ARRAY(SELECT g.repo_id FROM quarry_grants g)));
ALTER TABLE quarry_files ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS quarry_read ON quarry_files;
CREATE POLICY quarry_read ON quarry_files FOR SELECT
    USING (repo_id = ANY (ARRAY(SELECT g.repo_id FROM quarry_grants g)));
ALTER TABLE quarry_chunks ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS quarry_read ON quarry_chunks;
CREATE POLICY quarry_read ON quarry_chunks FOR SELECT
    USING (repo_id = ANY (ARRAY(SELECT g.repo_id FROM quarry_grants g)));
ALTER TABLE quarry_terms ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS quarry_read ON quarry_terms;
CREATE POLICY quarry_read ON quarry_terms FOR SELECT
    USING (repo_id = ANY (ARRAY(SELECT g.repo_id FROM quarry_grants g)));
ALTER TABLE quarry_df ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS quarry_read ON quarry_df;
CREATE POLICY quarry_read ON quarry_df FOR SELECT
    USING (repo_id = ANY (ARRAY(SELECT g.repo_id FROM quarry_grants g)));
"#;

/// Creates the schema if the hub has none, upgrades an older schema from
/// version 2 on (a pusher's connection, which owns the tables) in one
/// transaction; checks the version otherwise. A reader's role needs no
/// right to create anything: it only reads the version.
pub async fn ensure(client: &Client) -> Result<(), HubError> {
    if let Some(found) = version(client).await? {
        if (OLDEST_UPGRADED..VERSION).contains(&found) {
            let from = usize::try_from(found - OLDEST_UPGRADED).unwrap_or(0);
            let steps = UPGRADES[from..].concat();
            let tx_sql =
                format!("BEGIN; SELECT pg_advisory_xact_lock({CREATE_LOCK}); {steps} COMMIT;");
            if let Err(e) = client.batch_execute(&tx_sql).await {
                let _ = client.batch_execute("ROLLBACK").await;
                return Err(HubError::Sql {
                    context: "upgrading the schema",
                    source: e,
                });
            }
            return check(version(client).await?.unwrap_or(found));
        }
        return check(found);
    }
    let tx_sql = format!(
        "BEGIN; SELECT pg_advisory_xact_lock({CREATE_LOCK}); {DDL}
         INSERT INTO quarry_schema (version)
             SELECT {VERSION} WHERE NOT EXISTS (SELECT 1 FROM quarry_schema);
         COMMIT;"
    );
    if let Err(e) = client.batch_execute(&tx_sql).await {
        let _ = client.batch_execute("ROLLBACK").await;
        return Err(HubError::Sql {
            context: "creating the schema",
            source: e,
        });
    }
    match version(client).await? {
        Some(found) => check(found),
        None => Err(HubError::Invalid("the schema was not created".into())),
    }
}

/// Checks the version of a schema that must already exist (a reader's
/// connection, perhaps to a read-only replica, creates nothing).
pub async fn check_existing(client: &Client) -> Result<(), HubError> {
    match version(client).await? {
        Some(found) => check(found),
        None => Err(HubError::Invalid(
            "the hub holds no Quarry schema yet: `quarry push` creates it".into(),
        )),
    }
}

fn check(found: i32) -> Result<(), HubError> {
    if found == VERSION {
        Ok(())
    } else {
        Err(HubError::Version {
            found,
            expected: VERSION,
        })
    }
}

/// The schema's version, `None` when the hub has no schema yet.
async fn version(client: &Client) -> Result<Option<i32>, HubError> {
    let exists: bool = client
        .query_one("SELECT to_regclass('quarry_schema') IS NOT NULL", &[])
        .await
        .map_err(sql("reading the schema version"))?
        .get(0);
    if !exists {
        return Ok(None);
    }
    let row = client
        .query_opt("SELECT version FROM quarry_schema LIMIT 1", &[])
        .await
        .map_err(sql("reading the schema version"))?;
    Ok(row.map(|r| r.get(0)))
}

/// Lets `role` read `repo`: a grant row (what the policies check) and
/// `SELECT` on the tables. An unknown repository or role is an error.
pub async fn grant(client: &Client, repo: &str, role: &str) -> Result<(), HubError> {
    let known: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)",
            &[&role],
        )
        .await
        .map_err(sql("looking up the role"))?
        .get(0);
    if !known {
        return Err(HubError::Invalid(format!("no role named {role:?}")));
    }
    let granted = client
        .execute(
            "INSERT INTO quarry_grants (repo_id, role)
                 SELECT id, $2 FROM quarry_repos WHERE name = $1
             ON CONFLICT DO NOTHING",
            &[&repo, &role],
        )
        .await
        .map_err(sql("granting the repository"))?;
    let exists: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM quarry_repos WHERE name = $1)",
            &[&repo],
        )
        .await
        .map_err(sql("looking up the repository"))?
        .get(0);
    if granted == 0 && !exists {
        return Err(HubError::Invalid(format!("no repository named {repo:?}")));
    }
    let role = quote_ident(role);
    client
        .batch_execute(&format!(
            "GRANT USAGE ON SCHEMA public TO {role}; GRANT SELECT ON {READ_TABLES} TO {role};"
        ))
        .await
        .map_err(sql("granting read access"))?;
    Ok(())
}

/// `name` as a quoted SQL identifier (`"a""b"` for `a"b`): for the role
/// names a `GRANT` must spell out, which no parameter can stand for.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_quoted_whole() {
        assert_eq!(quote_ident("team"), "\"team\"");
        assert_eq!(
            quote_ident("x\"; DROP TABLE t; --"),
            "\"x\"\"; DROP TABLE t; --\""
        );
    }
}
