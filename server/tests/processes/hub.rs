//! The shared hub against real PostgreSQL servers (see
//! `common::postgres`): a push then a search answers as the local index
//! does; a one-file change moves one file; a push killed half-way leaves
//! the previous commit whole; a role sees only the repositories it was
//! granted; hostile names and queries change no data; a hub that is down
//! leaves search to the local index (saying why, without the password);
//! the overlay keeps a checkout's own changes current; shards and a
//! replica answer as one server.

use crate::common::postgres::Postgres;
use crate::common::{golden, Workspace};
use serde_json::Value;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn quarry(ws: &Workspace, args: &[&str]) -> Output {
    command(ws, args).output().expect("run quarry")
}

fn command(ws: &Workspace, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_quarry"));
    command
        .args(args)
        .env("XDG_CACHE_HOME", ws.dir.path().join("xdg"))
        .env_remove("QUARRY_HUB")
        .current_dir(ws.root());
    command
}

fn succeed(output: Output) -> String {
    assert!(
        output.status.success(),
        "quarry failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn push(ws: &Workspace, url: &str, repo: &str, commit: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "push", "--hub", url, "--repo", repo, "--commit", commit, "--json",
    ];
    args.extend_from_slice(extra);
    serde_json::from_str(&succeed(quarry(ws, &args))).expect("push stats json")
}

fn model_present() -> bool {
    match quarry_encoder::embed::locate_model(None) {
        Ok(_) => true,
        Err(e) => {
            if std::env::var("QUARRY_REQUIRE_MODEL").as_deref() == Ok("1") {
                panic!("QUARRY_REQUIRE_MODEL=1 but the model is missing: {e}");
            }
            false
        }
    }
}

/// Queries of every kind: the fixture's definition names (identifiers),
/// qualified names, and questions in words.
fn queries() -> Vec<String> {
    let mut queries: Vec<String> = golden()
        .into_iter()
        .step_by(9)
        .map(|g| g.qualified_name)
        .collect();
    queries.extend(
        [
            "retry a failed request",
            "token bucket rate limiter refill",
            "circuit breaker opens after failures",
            "priority queue pop the smallest",
            "session store expiry",
            "\"not found\"",
        ]
        .map(String::from),
    );
    queries
}

/// Each query's hits as (path, start line, symbol).
fn hits_of(lines: &str) -> Vec<Vec<(String, u64, String)>> {
    lines
        .lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line).expect("json line");
            value["hits"]
                .as_array()
                .expect("hits")
                .iter()
                .map(|h| {
                    (
                        h["path"].as_str().unwrap_or("").to_string(),
                        h["start_line"].as_u64().unwrap_or(0),
                        h["symbol"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .collect()
}

fn modes_of(lines: &str) -> Vec<String> {
    lines
        .lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line).expect("json line");
            value["mode"].as_str().unwrap_or("").to_string()
        })
        .collect()
}

/// [`queries`] as a `--queries` file (one JSON string a line).
fn queries_file(ws: &Workspace) -> String {
    let file = ws.dir.path().join("queries.jsonl");
    let text: String = queries()
        .iter()
        .map(|q| serde_json::to_string(q).expect("json") + "\n")
        .collect();
    std::fs::write(&file, text).expect("write queries");
    file.to_string_lossy().into_owned()
}

/// Local and hub answers to every query, one JSON line each.
fn both(ws: &Workspace, url: &str, extra: &[&str], hub_only: &[&str]) -> (String, String) {
    let file = queries_file(ws);
    let mut local = vec!["search", "--queries", &file, "--limit", "5"];
    local.extend_from_slice(extra);
    let mut hub = local.clone();
    hub.extend_from_slice(&["--hub", url]);
    hub.extend_from_slice(hub_only);
    (succeed(quarry(ws, &local)), succeed(quarry(ws, &hub)))
}

#[test]
fn a_push_then_a_search_answers_as_the_local_index() {
    let Some(pg) = Postgres::start() else { return };
    let ws = Workspace::fixture();
    let url = pg.url();
    let stats = push(&ws, &url, "polyglot", "c1", &["--lexical"]);
    assert!(stats["files_added"].as_u64().unwrap_or(0) > 20, "{stats}");
    assert_eq!(stats["files_changed"], 0);
    let (local, hub) = both(&ws, &url, &["--lexical"], &[]);
    assert_eq!(hits_of(&local), hits_of(&hub), "lexical: local vs hub");
    assert!(hits_of(&hub).iter().all(|h| !h.is_empty()));

    if !model_present() {
        return;
    }
    // Hybrid: the local index embedded, the hub given the same vectors
    // (from the machine's cache: nothing is embedded twice).
    succeed(quarry(&ws, &["index"]));
    let stats = push(&ws, &url, "polyglot", "c2", &[]);
    assert_eq!(stats["files_unchanged"], stats["files"], "{stats}");
    // Files already in the hub without vectors keep them absent: push the
    // vectors by pushing to a fresh repository name.
    let stats = push(&ws, &url, "polyglot-hybrid", "c2", &[]);
    assert!(
        stats["vectors_computed"].as_u64().unwrap_or(0) > 100,
        "{stats}"
    );
    let (local, hub) = both(&ws, &url, &[], &["--repo", "polyglot-hybrid"]);
    assert!(modes_of(&local).iter().all(|m| m == "hybrid"), "{local}");
    assert!(modes_of(&hub).iter().all(|m| m == "hybrid"), "{hub}");
    assert_eq!(hits_of(&local), hits_of(&hub), "hybrid: local vs hub");
}

#[test]
fn a_one_file_change_pushes_only_that_file() {
    let Some(pg) = Postgres::start() else { return };
    let ws = Workspace::fixture();
    let url = pg.url();
    let first = push(&ws, &url, "app", "c1", &["--lexical"]);
    let files = first["files"].as_u64().expect("files");
    ws.write(
        "src/graph_store.rs",
        "/// Rebalances the shards of a store.\npub fn rebalance_shards_now() {}\n",
    );
    let second = push(&ws, &url, "app", "c2", &["--lexical"]);
    assert_eq!(second["files_changed"], 1, "{second}");
    assert_eq!(second["files_unchanged"].as_u64(), Some(files - 1));
    assert_eq!(second["files_added"], 0);
    assert_eq!(second["files_removed"], 0);
    assert_eq!(
        pg.sql("SELECT commit_id FROM quarry_repos WHERE name = 'app'"),
        "c2"
    );
    let out = succeed(quarry(
        &ws,
        &[
            "search",
            "rebalance_shards_now",
            "--json",
            "--lexical",
            "--hub",
            &url,
        ],
    ));
    let value: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        value["hits"][0]["symbol"], "rebalance_shards_now",
        "{value}"
    );
    assert_eq!(value["hits"][0]["repo"], "app");
    assert_eq!(value["hits"][0]["commit"], "c2");
    // The old definitions of that file are gone from the hub.
    let out = succeed(quarry(
        &ws,
        &[
            "search",
            "GraphStore::lookup",
            "--json",
            "--lexical",
            "--hub",
            &url,
        ],
    ));
    let value: Value = serde_json::from_str(&out).expect("json");
    assert!(
        value["hits"]
            .as_array()
            .expect("hits")
            .iter()
            .all(|h| !h["symbol"].as_str().unwrap_or("").starts_with("GraphStore")),
        "{value}"
    );
    // Document frequencies equal a count from scratch.
    assert_eq!(
        pg.sql(
            "SELECT count(*) FROM (SELECT term, count(*) AS n FROM quarry_terms GROUP BY term) t
             FULL JOIN quarry_df d USING (term) WHERE t.n IS DISTINCT FROM d.df"
        ),
        "0"
    );
    // A deleted file leaves the hub.
    std::fs::remove_file(ws.root().join("src/graph_store.rs")).expect("rm");
    let third = push(&ws, &url, "app", "c3", &["--lexical"]);
    assert_eq!(third["files_removed"], 1, "{third}");
    assert_eq!(
        pg.sql("SELECT count(*) FROM quarry_chunks WHERE path = 'src/graph_store.rs'"),
        "0"
    );
}

#[test]
fn generated_module_and_home_files_travel_with_a_push_and_a_version_2_hub_is_upgraded() {
    let Some(pg) = Postgres::start() else { return };
    let ws = Workspace::fixture();
    let url = pg.url();
    ws.write(
        "src/rebalance_pb.rs",
        "// @generated by protoc. DO NOT EDIT.\n\
         /// Rebalances the shards of a store.\npub fn rebalance_shards_generated() {}\n",
    );
    ws.write(
        "src/rebalance.rs",
        "/// Rebalances the shards of a store.\npub fn rebalance_shards_written() {}\n",
    );
    // A module's entry file beside the folder of its parts.
    ws.write(
        "src/shards.rs",
        "mod placement;\npub fn assign(key: u64) -> usize { placement::slot(key) }\n",
    );
    ws.write(
        "src/shards/placement.rs",
        "/// Shards keys over slots.\npub fn slot(key: u64) -> usize { (key % 7) as usize }\n",
    );
    // A type split over files named after it: its home file and a part.
    ws.write(
        "src/Ledger.cs",
        "public static partial class Ledger {\n    /// Posts an entry to the ledger and balances its accounts.\n    public static void Post(Entry entry) { Balance(entry.Accounts); }\n}\n",
    );
    ws.write(
        "src/Ledger.Accounts.cs",
        "public static partial class Ledger {\n    /// Balances the accounts an entry touches.\n    static void Balance(Account[] accounts) { }\n}\n",
    );
    push(&ws, &url, "app", "c1", &["--lexical"]);
    assert_eq!(
        pg.sql("SELECT array_to_string(generated, ',') FROM quarry_repos WHERE name = 'app'"),
        "src/rebalance_pb.rs"
    );
    assert_eq!(
        pg.sql("SELECT array_to_string(homes, ',') FROM quarry_repos WHERE name = 'app'"),
        "src/Ledger.cs"
    );
    assert_eq!(
        pg.sql("SELECT array_to_string(modules, ',') FROM quarry_repos WHERE name = 'app'"),
        "src/shards.rs"
    );
    // The hub ranks it as the local index does: below the written one.
    let order = |extra: &[&str]| -> Vec<String> {
        let mut extra = extra.to_vec();
        extra.extend(["--limit", "50"]);
        let paths = search_paths(&ws, "rebalances the shards of a store", &extra);
        distinct(
            paths
                .iter()
                .filter(|path| path.starts_with("src/rebalance"))
                .map(|path| path.rsplit('/').next().unwrap_or(path).to_string()),
        )
    };
    let local = order(&[]);
    assert_eq!(local, ["rebalance.rs", "rebalance_pb.rs"]);
    assert_eq!(order(&["--hub", &url]), local);
    // A question about the module: its entry file first, here and there.
    let first = |extra: &[&str]| -> String {
        let paths = search_paths(&ws, "how are keys placed on shards", extra);
        paths.into_iter().next().unwrap_or_default()
    };
    assert_eq!(first(&[]), "src/shards.rs");
    assert_eq!(first(&["--hub", &url]), "src/shards.rs");
    // The split type's home file first, here and there; a part without
    // the signal.
    let ledger = |extra: &[&str]| -> Vec<String> {
        let paths = search_paths(&ws, "how accounts are balanced", extra);
        distinct(paths.into_iter().filter(|path| path.contains("Ledger")))
    };
    let local = ledger(&[]);
    assert_eq!(local, ["src/Ledger.cs", "src/Ledger.Accounts.cs"]);
    assert_eq!(
        ledger(&["--rank", "home_file=1"]),
        ["src/Ledger.Accounts.cs", "src/Ledger.cs"]
    );
    assert_eq!(ledger(&["--hub", &url]), local);
    // A hub a version-2 quarry made (no `generated`, `modules` or `homes`
    // column) is upgraded by the next push, and its repositories keep
    // their rows.
    pg.sql(
        "ALTER TABLE quarry_repos DROP COLUMN generated, DROP COLUMN modules, DROP COLUMN homes;
         UPDATE quarry_schema SET version = 2",
    );
    // A search (a reader) is refused, told that a push upgrades it.
    let refused = quarry(
        &ws,
        &["search", "rebalance", "--json", "--lexical", "--hub", &url],
    );
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&refused.stdout),
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(
        said.contains("upgrades an older hub, from version 2 on"),
        "{said}"
    );
    push(&ws, &url, "app", "c2", &["--lexical"]);
    assert_eq!(pg.sql("SELECT version FROM quarry_schema"), "5");
    assert_eq!(
        pg.sql(
            "SELECT array_to_string(generated, ',') || ';' || array_to_string(modules, ',')
                 || ';' || array_to_string(homes, ',')
             FROM quarry_repos WHERE name = 'app'"
        ),
        "src/rebalance_pb.rs;src/shards.rs;src/Ledger.cs"
    );
}

#[test]
fn a_push_killed_half_way_leaves_the_previous_commit_whole() {
    let Some(pg) = Postgres::start() else { return };
    let ws = Workspace::fixture();
    let url = pg.url();
    push(&ws, &url, "app", "c1", &["--lexical"]);
    let count = |table: &str| pg.sql(&format!("SELECT count(*) FROM {table}"));
    let before: Vec<String> = ["quarry_files", "quarry_chunks", "quarry_terms", "quarry_df"]
        .iter()
        .map(|t| count(t))
        .collect();
    let search = |ws: &Workspace| {
        succeed(quarry(
            ws,
            &[
                "search",
                "GraphStore",
                "--json",
                "--lexical",
                "--limit",
                "5",
                "--hub",
                &url,
            ],
        ))
    };
    let answer_before = hits_of(&search(&ws).replace('\n', ""));
    // Every file changes; a session holding the frequency table makes the
    // push wait after it has deleted and written its rows.
    for path in ws.files() {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        std::fs::write(&path, format!("{text}\n// changed\n")).expect("write");
    }
    let (killed, on_kill) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn({
        let port = pg.port;
        move || hold_lock(port, on_kill)
    });
    let mut child = command(
        &ws,
        &[
            "push",
            "--hub",
            &url,
            "--repo",
            "app",
            "--commit",
            "c2",
            "--lexical",
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("spawn push");
    let started = Instant::now();
    loop {
        let waiting = pg.sql(
            "SELECT count(*) FROM pg_stat_activity
             WHERE application_name = 'quarry' AND wait_event_type = 'Lock'",
        );
        if waiting == "1" {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the push never reached the lock"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().expect("SIGKILL the push");
    let _ = child.wait();
    killed.send(()).expect("signal the lock holder");
    holder.join().expect("lock holder");
    let after: Vec<String> = ["quarry_files", "quarry_chunks", "quarry_terms", "quarry_df"]
        .iter()
        .map(|t| count(t))
        .collect();
    assert_eq!(before, after);
    assert_eq!(
        pg.sql("SELECT commit_id FROM quarry_repos WHERE name = 'app'"),
        "c1"
    );
    assert_eq!(answer_before, hits_of(&search(&ws).replace('\n', "")));
    // The next push completes.
    let stats = push(&ws, &url, "app", "c2", &["--lexical"]);
    assert_eq!(stats["files_changed"], stats["files"], "{stats}");
}

/// Holds an exclusive lock on `quarry_df` until the push holding its
/// transaction open behind it was killed, so the push blocks half-way.
fn hold_lock(port: u16, killed: std::sync::mpsc::Receiver<()>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(connection);
        client
            .batch_execute("BEGIN; LOCK TABLE quarry_df IN EXCLUSIVE MODE;")
            .await
            .expect("lock");
        let _ = tokio::task::spawn_blocking(move || killed.recv_timeout(Duration::from_secs(120)))
            .await;
        client.batch_execute("COMMIT").await.expect("unlock");
    });
}

#[test]
fn a_role_sees_only_the_repositories_it_was_granted() {
    let Some(pg) = Postgres::start() else { return };
    let ws = Workspace::fixture();
    let url = pg.url();
    push(&ws, &url, "team-a/app", "a1", &["--lexical"]);
    push(&ws, &url, "team-b/secret", "b1", &["--lexical"]);
    pg.sql("CREATE ROLE alice LOGIN; CREATE ROLE bob LOGIN");
    succeed(quarry(
        &ws,
        &[
            "grant",
            "--hub",
            &url,
            "--repo",
            "team-a/app",
            "--role",
            "alice",
        ],
    ));
    let as_alice = pg.url_as("alice");
    let out = succeed(quarry(
        &ws,
        &[
            "search",
            "GraphStore",
            "--json",
            "--lexical",
            "--hub",
            &as_alice,
        ],
    ));
    let value: Value = serde_json::from_str(&out).expect("json");
    let hits = value["hits"].as_array().expect("hits");
    assert!(!hits.is_empty(), "{value}");
    assert!(hits.iter().all(|h| h["repo"] == "team-a/app"), "{value}");
    let out = succeed(quarry(
        &ws,
        &[
            "search",
            "GraphStore",
            "--json",
            "--lexical",
            "--hub",
            &as_alice,
            "--repo",
            "team-b/*",
        ],
    ));
    let value: Value = serde_json::from_str(&out).expect("json");
    assert!(
        value["hits"].as_array().expect("hits").is_empty(),
        "{value}"
    );
    // Bob was granted nothing: no search answer, and no row of any table
    // (he has not even SELECT on them, and the policies would hide them).
    let out = quarry(
        &ws,
        &[
            "search",
            "GraphStore",
            "--json",
            "--lexical",
            "--hub",
            &pg.url_as("bob"),
        ],
    );
    if out.status.success() {
        let value: Value = serde_json::from_slice(&out.stdout).expect("json");
        assert!(
            value["hits"].as_array().expect("hits").is_empty(),
            "{value}"
        );
    }
    pg.sql("GRANT SELECT ON quarry_schema, quarry_chunks, quarry_files, quarry_terms, quarry_df, quarry_repos, quarry_grants TO bob");
    let rows = pg.sql(
        "SET ROLE bob; SELECT (SELECT count(*) FROM quarry_chunks) + (SELECT count(*) FROM quarry_files)
             + (SELECT count(*) FROM quarry_terms) + (SELECT count(*) FROM quarry_repos)",
    );
    assert_eq!(rows, "0");
    let rows = pg.sql("SET ROLE alice; SELECT count(DISTINCT repo_id) FROM quarry_chunks");
    assert_eq!(rows, "1");
    // Definitions by name: alice sees her repository's, bob none (now that
    // he may SELECT, the policies alone hide the rows).
    let symbols = |url: &str| -> Value {
        let out = succeed(quarry(
            &ws,
            &["symbols", "GraphStore", "--json", "--lexical", "--hub", url],
        ));
        serde_json::from_str(&out).expect("json")
    };
    let seen = symbols(&as_alice);
    let seen = seen.as_array().expect("a list");
    assert!(!seen.is_empty());
    assert!(seen.iter().all(|h| h["repo"] == "team-a/app"), "{seen:?}");
    assert_eq!(seen[0]["name"], "GraphStore", "{seen:?}");
    assert_eq!(symbols(&pg.url_as("bob")), serde_json::json!([]));
    let all = symbols(&url);
    let repos: std::collections::BTreeSet<&str> = all
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|h| h["repo"].as_str())
        .collect();
    assert_eq!(
        repos.into_iter().collect::<Vec<_>>(),
        ["team-a/app", "team-b/secret"]
    );
}

#[test]
fn hostile_names_and_queries_change_no_data() {
    let Some(pg) = Postgres::start() else { return };
    let ws = Workspace::fixture();
    let url = pg.url();
    let hostile = "x'); DROP TABLE quarry_chunks; --\\%_*";
    ws.write(
        "src/o'brien\"; DROP TABLE quarry_files; --.rs",
        "pub fn o_brien() {}\n",
    );
    let stats = push(
        &ws,
        &url,
        hostile,
        "'; DELETE FROM quarry_repos; --",
        &["--lexical"],
    );
    assert!(stats["files_added"].as_u64().unwrap_or(0) > 20, "{stats}");
    let counts = || {
        pg.sql(
            "SELECT (SELECT count(*) FROM quarry_repos) || '/' || (SELECT count(*) FROM quarry_files)
                 || '/' || (SELECT count(*) FROM quarry_chunks) || '/' || (SELECT count(*) FROM quarry_terms)",
        )
    };
    let before = counts();
    for query in [
        "'; DROP TABLE quarry_terms; --",
        "\" OR 1=1 --",
        "%_\\",
        "o'brien",
        "$1 $2 ::halfvec",
        "\u{7f}\u{1b}[2J",
    ] {
        for scope in ["*", "x'); DROP*", "%"] {
            let out = quarry(
                &ws,
                &[
                    "search",
                    query,
                    "--json",
                    "--lexical",
                    "--hub",
                    &url,
                    "--repo",
                    scope,
                ],
            );
            assert!(
                out.status.success(),
                "{query:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    assert_eq!(before, counts());
    assert_eq!(pg.sql("SELECT name FROM quarry_repos"), hostile);
    let out = succeed(quarry(
        &ws,
        &["search", "o_brien", "--json", "--lexical", "--hub", &url],
    ));
    let value: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        value["hits"][0]["path"], "src/o'brien\"; DROP TABLE quarry_files; --.rs",
        "{value}"
    );
    // A glob's `%` and `_` are literal: `%` alone matches no repository.
    let out = succeed(quarry(
        &ws,
        &[
            "search",
            "o_brien",
            "--json",
            "--lexical",
            "--hub",
            &url,
            "--repo",
            "%",
        ],
    ));
    let value: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(value["repos"], 0, "{value}");
}

#[test]
fn a_hub_that_is_down_leaves_search_to_the_local_index_and_push_fails_clearly() {
    let Some(pg) = Postgres::start() else { return };
    let ws = Workspace::fixture();
    push(&ws, &pg.url(), "app", "c1", &["--lexical"]);
    pg.stop();
    let url = format!(
        "postgres://postgres:s3cret-pw@127.0.0.1:{}/postgres",
        pg.port
    );
    // A search answers from the local index and says why.
    let out = quarry(
        &ws,
        &["search", "GraphStore", "--json", "--lexical", "--hub", &url],
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let stdout = succeed(out);
    let value: Value = serde_json::from_str(&stdout).expect("json");
    let reason = value["reason"].as_str().expect("a reason");
    assert!(reason.contains("cannot connect"), "{reason}");
    assert!(reason.contains("local index"), "{reason}");
    assert!(value.get("repos").is_none(), "not a hub answer: {stdout}");
    assert!(!value["hits"].as_array().expect("hits").is_empty());
    for text in [reason, stderr.as_str()] {
        assert!(!text.contains("s3cret-pw"), "{text}");
        assert!(text.contains("postgres:***@"), "{text}");
    }
    // A push fails and says why.
    let out = quarry(&ws, &["push", "--lexical", "--hub", &url]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot connect"), "{stderr}");
    assert!(!stderr.contains("s3cret-pw"), "{stderr}");
    assert!(stderr.contains("postgres:***@"), "{stderr}");
    // Back up: the same command answers from the hub again.
    pg.start_again();
    let out = succeed(quarry(
        &ws,
        &[
            "search",
            "GraphStore",
            "--json",
            "--lexical",
            "--hub",
            &pg.url(),
        ],
    ));
    let value: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(value["repos"], 1, "{out}");
    assert!(!value["hits"].as_array().expect("hits").is_empty());
}

/// The path of every hit of a lexical search of `query` from the
/// workspace (`extra`: `--hub URL`, `--rank KEY=VALUE`...), best first.
fn search_paths(ws: &Workspace, query: &str, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["search", query, "--json", "--lexical"];
    args.extend_from_slice(extra);
    let value: Value = serde_json::from_str(&succeed(quarry(ws, &args))).expect("json");
    value["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .map(|h| h["path"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Each item once, where it first comes.
fn distinct(items: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// (path, name, local) of every hit of a hub search of `query` from the
/// workspace, overlaid as `app` unless `extra` says otherwise.
fn hub_hits(
    ws: &Workspace,
    url: &str,
    query: &str,
    extra: &[&str],
) -> (Value, Vec<(String, String, bool)>) {
    let mut args = vec![
        "search",
        query,
        "--json",
        "--lexical",
        "--hub",
        url,
        "--workspace-repo",
        "app",
    ];
    args.extend_from_slice(extra);
    let value: Value = serde_json::from_str(&succeed(quarry(ws, &args))).expect("json");
    let hits = value["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .map(|h| {
            (
                h["path"].as_str().unwrap_or("").to_string(),
                h["name"].as_str().unwrap_or("").to_string(),
                h["local"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    (value, hits)
}

#[test]
fn the_overlay_shows_a_checkouts_own_changes_over_the_hubs_commit() {
    let Some(pg) = Postgres::start() else { return };
    let url = pg.url();
    let ws = Workspace::fixture();
    ws.git(&["init", "-q"]);
    ws.git(&["add", "."]);
    ws.git(&["commit", "-q", "-m", "base"]);
    let head = ws.git(&["rev-parse", "HEAD"]);
    let pushed = push(&ws, &url, "app", &head, &["--lexical"]);
    assert_eq!(pushed["commit"], head.as_str());
    let has = |hits: &[(String, String, bool)], path: &str, name: &str| {
        hits.iter().any(|(p, n, _)| p == path && n == name)
    };
    let (value, hits) = hub_hits(&ws, &url, "fetch_manifest", &[]);
    assert!(
        has(&hits, "python/retry_policy.py", "fetch_manifest"),
        "{value}"
    );

    // A committed change, an uncommitted deletion of a function, an
    // untracked file and a deleted file, none of them pushed.
    ws.write(
        "src/graph_store.rs",
        "/// Emptied.\npub struct GraphStore;\n",
    );
    ws.git(&["commit", "-q", "-am", "graph store emptied"]);
    let retry = std::fs::read_to_string(ws.root().join("python/retry_policy.py")).expect("read");
    let start = retry
        .find("def fetch_manifest")
        .expect("fetch_manifest in the fixture");
    ws.write(
        "python/retry_policy.py",
        format!(
            "{}def fetch_catalogue_overlay(url: str) -> bytes:\n    return b''\n",
            &retry[..start]
        ),
    );
    ws.write(
        "notes/untracked_helper.py",
        "def summon_untracked_helper():\n    return 42\n",
    );
    std::fs::remove_file(ws.root().join("ruby/job_queue.rb")).expect("rm");

    let (value, hits) = hub_hits(&ws, &url, "fetch_manifest", &[]);
    assert_eq!(value["overlay"]["source"], "git", "{value}");
    assert_eq!(value["overlay"]["commit"], head.as_str());
    assert_eq!(value["overlay"]["masked"], 4, "{value}");
    assert!(
        !has(&hits, "python/retry_policy.py", "fetch_manifest"),
        "deleted locally: {hits:?}"
    );
    let (value, hits) = hub_hits(&ws, &url, "fetch_catalogue_overlay", &[]);
    assert!(
        hits.iter().any(|h| h
            == &(
                "python/retry_policy.py".into(),
                "fetch_catalogue_overlay".into(),
                true
            )),
        "{value}"
    );
    let (_, hits) = hub_hits(&ws, &url, "summon_untracked_helper", &[]);
    assert!(
        has(
            &hits,
            "notes/untracked_helper.py",
            "summon_untracked_helper"
        ),
        "{hits:?}"
    );
    let (_, hits) = hub_hits(&ws, &url, "GraphStore lookup", &[]);
    assert!(
        hits.iter()
            .all(|(p, n, _)| !(p == "src/graph_store.rs" && n == "lookup")),
        "committed after the push: {hits:?}"
    );
    let (_, hits) = hub_hits(&ws, &url, "JobQueue", &[]);
    assert!(
        hits.iter().all(|(p, _, _)| p != "ruby/job_queue.rb"),
        "{hits:?}"
    );
    // Files the checkout has not changed still come from the hub.
    let (_, hits) = hub_hits(&ws, &url, "fetch_session", &[]);
    assert!(hits.iter().any(|(_, _, local)| !local), "{hits:?}");

    // Definitions by name see the same changes.
    let out = succeed(quarry(
        &ws,
        &[
            "symbols",
            "fetch_",
            "--json",
            "--hub",
            &url,
            "--workspace-repo",
            "app",
        ],
    ));
    let found: Value = serde_json::from_str(&out).expect("json");
    let names: Vec<(&str, bool)> = found
        .as_array()
        .expect("a list")
        .iter()
        .map(|h| {
            (
                h["name"].as_str().unwrap_or(""),
                h["local"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    assert!(
        names.contains(&("fetch_catalogue_overlay", true)),
        "{found}"
    );
    assert!(names.contains(&("fetch_session", false)), "{found}");
    assert!(
        !names.iter().any(|(n, _)| *n == "fetch_manifest"),
        "{found}"
    );

    // --no-overlay: the hub's commit alone.
    let (value, hits) = hub_hits(&ws, &url, "fetch_manifest", &["--no-overlay"]);
    assert!(value.get("overlay").is_none());
    assert!(
        has(&hits, "python/retry_policy.py", "fetch_manifest"),
        "{hits:?}"
    );

    // A commit the checkout does not know: compared by content hashes.
    push(
        &ws,
        &url,
        "app",
        "0000000000000000000000000000000000000000",
        &["--lexical"],
    );
    ws.write(
        "notes/untracked_helper.py",
        "def summon_rewritten_helper():\n    return 43\n",
    );
    let (value, hits) = hub_hits(&ws, &url, "summon_rewritten_helper", &[]);
    assert_eq!(value["overlay"]["source"], "hashes", "{value}");
    assert_eq!(value["overlay"]["masked"], 1, "{value}");
    assert!(
        has(
            &hits,
            "notes/untracked_helper.py",
            "summon_rewritten_helper"
        ),
        "{hits:?}"
    );
    let (_, hits) = hub_hits(&ws, &url, "summon_untracked_helper", &[]);
    assert!(
        !has(
            &hits,
            "notes/untracked_helper.py",
            "summon_untracked_helper"
        ),
        "{hits:?}"
    );
}

/// Every query's hub answer as (repository, path, start line, symbol).
fn hub_batch(
    ws: &Workspace,
    urls: &[String],
    extra: &[&str],
) -> Vec<Vec<(String, String, u64, String)>> {
    let file = queries_file(ws);
    let mut args = vec!["search", "--queries", &file, "--limit", "8", "--no-overlay"];
    for url in urls {
        args.extend_from_slice(&["--hub", url]);
    }
    args.extend_from_slice(extra);
    succeed(quarry(ws, &args))
        .lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line).expect("json line");
            value["hits"]
                .as_array()
                .expect("hits")
                .iter()
                .map(|h| {
                    (
                        h["repo"].as_str().unwrap_or("").to_string(),
                        h["path"].as_str().unwrap_or("").to_string(),
                        h["start_line"].as_u64().unwrap_or(0),
                        h["symbol"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .collect()
}

#[test]
fn two_shards_and_a_replica_answer_as_one_server() {
    let Some(single) = Postgres::start() else {
        return;
    };
    let Some(first) = Postgres::start() else {
        return;
    };
    let Some(second) = Postgres::start() else {
        return;
    };
    let alpha = Workspace::fixture();
    let beta = Workspace::fixture();
    beta.write(
        "python/shard_only.py",
        "def rebalance_token_bucket(bucket):\n    \"\"\"Refills a token bucket after a shard moves.\"\"\"\n    return bucket\n",
    );
    std::fs::remove_file(beta.root().join("src/graph_store.rs")).expect("rm");
    let hybrid = model_present();
    let flags: &[&str] = if hybrid { &[] } else { &["--lexical"] };
    push(&alpha, &single.url(), "alpha", "a1", flags);
    push(&beta, &single.url(), "beta", "b1", flags);
    push(&alpha, &first.url(), "alpha", "a1", flags);
    push(&beta, &second.url(), "beta", "b1", flags);
    // Reads of the first shard go to its streaming replica.
    let replica = Postgres::replica_of(&first);
    replica.catch_up_with(&first);

    let one = hub_batch(&alpha, &[single.url()], flags);
    let sharded = hub_batch(&alpha, &[replica.url(), second.url()], flags);
    assert_eq!(
        one, sharded,
        "one server vs two shards (one through its replica)"
    );
    assert!(one.iter().all(|hits| !hits.is_empty()));
    for repo in ["alpha", "beta"] {
        assert!(
            one.iter().flatten().any(|(r, ..)| r == repo),
            "{repo} answers some query"
        );
    }
    // A scope narrows every shard alike.
    let one = hub_batch(
        &alpha,
        &[single.url()],
        &[flags, &["--repo", "b*"]].concat(),
    );
    let sharded = hub_batch(
        &alpha,
        &[replica.url(), second.url()],
        &[flags, &["--repo", "b*"]].concat(),
    );
    assert_eq!(one, sharded);
    assert!(one.iter().flatten().all(|(r, ..)| r == "beta"));

    // A push to the primary reaches the replica's readers.
    alpha.write(
        "python/late.py",
        "def replicated_late_arrival():\n    return 1\n",
    );
    push(&alpha, &first.url(), "alpha", "a2", flags);
    replica.catch_up_with(&first);
    let out = succeed(quarry(
        &alpha,
        &[
            &[
                "search",
                "replicated_late_arrival",
                "--json",
                "--no-overlay",
                "--hub",
                &replica.url(),
            ],
            flags,
        ]
        .concat(),
    ));
    let value: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(value["hits"][0]["path"], "python/late.py", "{value}");
    assert_eq!(value["hits"][0]["commit"], "a2", "{value}");
    // The replica refuses writes: a push there fails and says so.
    let out = quarry(
        &alpha,
        &[&["push", "--hub", &replica.url(), "--repo", "alpha"], flags].concat(),
    );
    assert!(!out.status.success());
}

#[test]
fn tls_is_used_as_the_url_asks() {
    // A server that takes TLS alone and has no pgvector: a connection that
    // gets through fails on the schema, one that does not on connecting.
    let Some(pg) = Postgres::start_tls() else {
        return;
    };
    let ws = Workspace::fixture();
    let base = pg.url();
    let search = |params: &str| {
        let url = format!("{base}?{params}");
        let out = quarry(
            &ws,
            &[
                "search",
                "GraphStore",
                "--json",
                "--lexical",
                "--no-overlay",
                "--hub",
                &url,
            ],
        );
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    let through = |(ok, text): (bool, String)| {
        assert!(!ok && text.contains("no Quarry schema"), "{text}");
    };
    let refused = |(ok, text): (bool, String)| {
        // The local index answers and says why the hub did not.
        assert!(ok && text.contains("cannot connect"), "{text}");
    };
    through(search("sslmode=require"));
    through(search("sslmode=prefer"));
    refused(search("sslmode=disable"));
    let root = format!("sslmode=verify-full&sslrootcert={}", pg.cert().display());
    through(search(&root));
    // A self-signed certificate is not trusted without sslrootcert.
    refused(search("sslmode=verify-full"));
    refused(search("sslmode=verify-ca"));
}
