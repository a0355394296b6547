//! The language server and the MCP server over a shared hub (a real
//! PostgreSQL server): hits come from the hub with their repository and
//! commit; an unsaved buffer and an uncommitted deleted function are
//! reflected at once (the overlay); a hub that goes down leaves the answer
//! to the local index, with the reason, and the hub answers again when it
//! is back, without a restart.

use crate::common::lsp::{open_and_append, start_with_options, uri};
use crate::common::mcp::Mcp;
use crate::common::postgres::Postgres;
use crate::common::Workspace;
use serde_json::{json, Value};
use std::process::Command;

fn run(ws: &Workspace, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .env("XDG_CACHE_HOME", ws.dir.path().join("push-cache"))
        .env_remove("QUARRY_HUB")
        .current_dir(ws.root())
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// (uri, symbol) of each hit.
fn hits(result: &Value) -> Vec<(String, String)> {
    result["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .map(|h| {
            (
                h["uri"].as_str().unwrap_or("").to_string(),
                h["symbol"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// The fixture as a git checkout at one commit, pushed to `pg` as `app`;
/// returns the commit.
fn pushed_checkout(ws: &Workspace, pg: &Postgres) -> String {
    ws.git(&["init", "-q"]);
    ws.git(&["add", "."]);
    ws.git(&["commit", "-q", "-m", "base"]);
    run(
        ws,
        env!("CARGO_BIN_EXE_quarry"),
        &["push", "--hub", &pg.url(), "--repo", "app", "--lexical"],
    );
    ws.git(&["rev-parse", "HEAD"])
}

/// `quarry mcp` (lexical) on the checkout `ws` of the hub's `app`, over
/// the hub at `url`.
fn mcp_over_hub(ws: &Workspace, url: &str) -> Mcp {
    let mut command = Command::new(env!("CARGO_BIN_EXE_quarry"));
    command
        .args(["mcp", "--lexical", "--root"])
        .arg(ws.root())
        .args(["--hub", url, "--workspace-repo", "app"])
        .env("XDG_CACHE_HOME", ws.dir.path().join("xdg"))
        .env_remove("QUARRY_HUB");
    Mcp::spawn(command)
}

#[test]
fn a_hub_backed_server_is_never_stale_and_outlives_the_hub() {
    let Some(pg) = Postgres::start() else { return };
    let ws = Workspace::fixture();
    let head = pushed_checkout(&ws, &pg);
    let root = std::fs::canonicalize(ws.root()).expect("root");
    let mut client = start_with_options(
        &ws,
        None,
        json!({"debounceMs": 30, "hub": pg.url(), "hubRepo": "app", "hubRetryMs": 200}),
    );
    let search = |client: &mut quarry_bench::lsp_client::Client, query: &str| {
        client.result("quarry/search", json!({"query": query, "limit": 10}))
    };

    // From the hub, with where each hit comes from.
    let result = search(&mut client, "fetch_manifest");
    assert_eq!(result["source"], "hub", "{result}");
    assert_eq!(result["hub"]["overlay"]["source"], "git", "{result}");
    let retry_file = root.join("python/retry_policy.py");
    let first = &result["hits"][0];
    assert_eq!(first["uri"], uri(&retry_file), "{result}");
    assert_eq!(first["repo"], "app");
    assert_eq!(first["commit"], head.as_str());

    // An unsaved buffer: its new function is found at once, from the
    // buffer's text.
    let (_, line) = open_and_append(
        &mut client,
        &retry_file,
        "def unsaved_buffer_probe():\n    return 1\n",
    );
    let result = search(&mut client, "unsaved_buffer_probe");
    assert_eq!(result["source"], "hub", "{result}");
    let hit = &result["hits"][0];
    assert_eq!(hit["uri"], uri(&retry_file), "{result}");
    assert!(
        hit["symbol"]
            .as_str()
            .unwrap_or("")
            .contains("unsaved_buffer_probe"),
        "{result}"
    );
    assert_eq!(hit["range"]["start"]["line"], line);
    assert!(
        hit.get("commit").is_none(),
        "a local hit has no commit: {result}"
    );
    // workspace/symbol over the hub sees the buffer too, and the hub's
    // definitions at their files.
    let symbols = client.result("workspace/symbol", json!({"query": "unsaved_buffer_pro"}));
    assert_eq!(symbols[0]["name"], "unsaved_buffer_probe", "{symbols}");
    assert_eq!(symbols[0]["location"]["uri"], uri(&retry_file), "{symbols}");
    let symbols = client.result("workspace/symbol", json!({"query": "fetch_manifest"}));
    assert_eq!(symbols[0]["location"]["uri"], uri(&retry_file), "{symbols}");

    // An uncommitted deletion of a function on disk: gone from the hits.
    let session = root.join("elixir/session_store.ex");
    let text = std::fs::read_to_string(&session).expect("read");
    let kept: String = text
        .lines()
        .filter(|l| !l.contains("def fetch_session"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(kept, text, "the fixture defines fetch_session");
    std::fs::write(&session, kept).expect("write");
    let result = client.poll(
        "quarry/search",
        json!({"query": "fetch_session", "limit": 10}),
        |r| {
            r["source"] == "hub"
                && hits(r)
                    .iter()
                    .all(|(_, symbol)| !symbol.ends_with("fetch_session"))
        },
    );
    assert!(
        result["hub"]["overlay"]["masked"].as_u64().unwrap_or(0) >= 2,
        "{result}"
    );

    // The hub goes down: the local index answers, and says why.
    client.poll("quarry/status", Value::Null, |s| {
        !s["folders"][0]["lastWalk"].is_null()
    });
    pg.stop();
    let result = search(&mut client, "GraphStore");
    assert_eq!(result["source"], "local", "{result}");
    let reason = result["reason"].as_str().unwrap_or("");
    assert!(
        reason.contains("hub") && reason.contains("local index"),
        "{result}"
    );
    assert!(!hits(&result).is_empty(), "{result}");
    // The hub is back: it answers again, no restart.
    pg.start_again();
    let result = client.poll(
        "quarry/search",
        json!({"query": "GraphStore", "limit": 10}),
        |r| r["source"] == "hub",
    );
    assert!(!hits(&result).is_empty(), "{result}");
    assert_eq!(result["hits"][0]["repo"], "app");
}

#[test]
fn an_agent_searches_the_hub_with_its_checkouts_changes() {
    let Some(pg) = Postgres::start() else { return };
    let ws = Workspace::fixture();
    let head = pushed_checkout(&ws, &pg);
    let mut mcp = mcp_over_hub(&ws, &pg.url());
    let (error, text, value) = mcp.call("search_code", json!({"query": "fetch_manifest"}));
    assert!(!error, "{text}");
    assert_eq!(value["source"], "hub", "{value}");
    assert_eq!(
        value["hits"][0]["path"], "python/retry_policy.py",
        "{value}"
    );
    assert_eq!(value["hits"][0]["commit"], head.as_str());
    assert!(text.contains("app:python/retry_policy.py"), "{text}");
    // The agent edits a file: the next search sees it.
    let path = ws.root().join("python/retry_policy.py");
    let mut source = std::fs::read_to_string(&path).expect("read");
    source.push_str("\ndef agent_written_probe():\n    return 2\n");
    std::fs::write(&path, source).expect("write");
    let (_, text, value) = mcp.call("search_code", json!({"query": "agent_written_probe"}));
    assert_eq!(value["hits"][0]["name"], "agent_written_probe", "{value}");
    assert_eq!(value["hits"][0]["local"], true, "{value}");
    assert!(text.contains("working tree"), "{text}");
    // Definitions by name, from the hub and from the edit.
    let (error, text, value) = mcp.call("find_symbol", json!({"name": "agent_written"}));
    assert!(!error, "{text}");
    assert_eq!(value["source"], "hub", "{value}");
    assert_eq!(
        value["symbols"][0]["name"], "agent_written_probe",
        "{value}"
    );
    assert_eq!(value["symbols"][0]["local"], true, "{value}");
    let (_, _, value) = mcp.call(
        "find_symbol",
        json!({"name": "fetch_session", "exact": true}),
    );
    assert_eq!(value["symbols"][0]["repo"], "app", "{value}");
    assert_eq!(value["symbols"][0]["commit"], head.as_str(), "{value}");
    // Down: the local index answers and says why; back: the hub again
    // (after the retry delay).
    pg.stop();
    let (error, text, value) = mcp.call("search_code", json!({"query": "GraphStore"}));
    assert!(!error, "{text}");
    assert!(value.get("source").is_none(), "{value}");
    assert!(
        text.contains("hub:") && text.contains("local index"),
        "{text}"
    );
    assert!(!value["hits"].as_array().expect("hits").is_empty());
    pg.start_again();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (_, _, value) = mcp.call("search_code", json!({"query": "GraphStore"}));
        if value["source"] == "hub" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the hub never answered again"
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

#[test]
fn an_agent_reads_usages_and_files_only_of_repositories_it_was_granted() {
    let Some(pg) = Postgres::start() else { return };
    let ws = Workspace::fixture();
    pushed_checkout(&ws, &pg);
    let helpers = "def shared_probe_helper():\n    return 1\n\n\ndef caller_one():\n    return shared_probe_helper() + 1\n";
    for repo in ["team-a/lib", "team-b/secret"] {
        let other = Workspace::fixture();
        other.write("python/shared_helpers.py", helpers);
        run(
            &other,
            env!("CARGO_BIN_EXE_quarry"),
            &["push", "--hub", &pg.url(), "--repo", repo, "--lexical"],
        );
    }
    pg.sql("CREATE ROLE agent LOGIN");
    for repo in ["app", "team-a/lib"] {
        run(
            &ws,
            env!("CARGO_BIN_EXE_quarry"),
            &[
                "grant",
                "--hub",
                &pg.url(),
                "--repo",
                repo,
                "--role",
                "agent",
            ],
        );
    }
    // The agent's own checkout calls the helper too (an untracked file).
    ws.write(
        "python/agent_use.py",
        "from helpers import shared_probe_helper\n\n\ndef agent_caller():\n    return shared_probe_helper()\n",
    );
    let mut mcp = mcp_over_hub(&ws, &pg.url_as("agent"));
    let (error, text, value) = mcp.call("find_usages", json!({"symbol": "shared_probe_helper"}));
    assert!(!error, "{text}");
    assert_eq!(value["source"], "hub", "{value}");
    let files = value["files"].as_array().expect("files");
    let seen: Vec<(&str, &str, bool)> = files
        .iter()
        .map(|f| {
            (
                f["repo"].as_str().unwrap_or(""),
                f["path"].as_str().unwrap_or(""),
                f["local"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    assert!(
        seen.contains(&("team-a/lib", "python/shared_helpers.py", false)),
        "{value}"
    );
    assert!(
        seen.contains(&("app", "python/agent_use.py", true)),
        "{value}"
    );
    assert!(
        seen.iter().all(|(repo, ..)| *repo != "team-b/secret"),
        "{value}"
    );
    let lib = files
        .iter()
        .find(|f| f["repo"] == "team-a/lib")
        .expect("the lib's usage");
    assert_eq!(lib["usages"][0]["symbol"], "caller_one", "{value}");
    assert_eq!(lib["usages"][0]["lines"][0]["line"], 6, "{value}");
    assert!(
        text.contains("team-a/lib:python/shared_helpers.py")
            && !text.contains("def shared_probe_helper"),
        "{text}"
    );
    // A file of a granted repository, at the hub's commit; one not granted
    // does not exist for this role.
    let (error, text, value) = mcp.call(
        "get_code_context",
        json!({"path": "python/shared_helpers.py", "repo": "team-a/lib", "symbol": "caller_one"}),
    );
    assert!(!error, "{text}");
    assert_eq!(value["source"], "hub", "{value}");
    assert_eq!(value["repo"], "team-a/lib", "{value}");
    assert_eq!(value["start_line"], 5, "{value}");
    assert!(
        value["text"]
            .as_str()
            .unwrap_or("")
            .contains("shared_probe_helper() + 1"),
        "{value}"
    );
    let (error, text, _) = mcp.call(
        "get_code_context",
        json!({"path": "python/shared_helpers.py", "repo": "team-b/secret"}),
    );
    assert!(error, "{text}");
    assert!(text.contains("may not read it"), "{text}");
    assert!(!text.contains("caller_one"), "{text}");
    // The workspace's own repository is read from disk, as it is now.
    let (error, text, value) = mcp.call(
        "get_code_context",
        json!({"path": "python/agent_use.py", "repo": "app"}),
    );
    assert!(!error, "{text}");
    assert!(value.get("source").is_none(), "{value}");
    assert!(text.contains("agent_caller"), "{text}");
}
