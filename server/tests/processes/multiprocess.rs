//! End-to-end: one workspace, several Quarry processes (issue 44). Two
//! language servers share one cache: the second reads what the first
//! writes and serves its commits without a restart; when the writer is
//! killed, the reader takes the writing over, indexes what was saved
//! meanwhile, and loses nothing indexed before.

#![cfg(unix)]

use crate::common::lsp::{hit_symbols, open_and_append, start_walked, start_with, uri};
use crate::common::mcp::Mcp;
use crate::common::Workspace;
use quarry_bench::lsp_client::Client;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn has_symbol(client: &mut Client, name: &str) -> bool {
    let found = client.result("workspace/symbol", json!({"query": name}));
    found
        .as_array()
        .is_some_and(|a| a.iter().any(|s| s["name"] == name))
}

/// Polls until `name` is a workspace symbol; how long that took.
fn wait_for_symbol(client: &mut Client, name: &str) -> Duration {
    let started = Instant::now();
    while !has_symbol(client, name) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{name} never became searchable"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    started.elapsed()
}

/// Whether `quarry/search` for `query` (lexical) has a hit named `name`.
fn search_finds(client: &mut Client, query: &str, name: &str) -> bool {
    let found = client.result("quarry/search", json!({"query": query}));
    hit_symbols(&found).iter().any(|s| s == name)
}

/// Types a new unsaved function at the end of the fixture's `file` in
/// `client`'s editor and waits until that editor finds it (symbol and
/// search); returns how long that took.
fn type_unsaved(client: &mut Client, ws: &Workspace, file: &str, name: &str) -> Duration {
    let path = std::fs::canonicalize(ws.root().join(file)).expect("path");
    open_and_append(client, &path, &format!("\ndef {name}():\n    return 0\n"));
    let started = Instant::now();
    wait_for_symbol(client, name);
    assert!(
        search_finds(client, name, name),
        "{name} not found by search"
    );
    started.elapsed()
}

fn role(client: &mut Client) -> Value {
    client.result("quarry/status", Value::Null)["folders"][0]["role"].clone()
}

fn save(client: &mut Client, ws: &Workspace, rel: &str, text: &str) {
    ws.write(rel, text);
    client.notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": uri(&std::fs::canonicalize(ws.root().join(rel)).expect("path"))}}),
    );
}

#[test]
fn a_reader_serves_the_writers_commits_and_writes_when_the_writer_dies() {
    let ws = Workspace::fixture();
    let mut first = start_walked(&ws);
    let mut second = start_with(&ws, None);
    second.poll("quarry/status", Value::Null, |s| {
        s["folders"][0]["ready"] == true
    });
    assert_eq!(role(&mut first), "writer");
    assert_eq!(role(&mut second), "reader");
    assert!(has_symbol(&mut second, "EventBus"));

    // Saved and indexed by the writer: searchable in the reader, which
    // was started before the file existed, without a restart.
    save(
        &mut first,
        &ws,
        "src/saved_in_first.py",
        "def saved_in_first_process():\n    return 1\n",
    );
    wait_for_symbol(&mut first, "saved_in_first_process");
    let lag = wait_for_symbol(&mut second, "saved_in_first_process");
    // The follow interval is 300 ms.
    assert!(lag < Duration::from_secs(2), "reader lag {lag:?}");
    // An agent's MCP server on the same workspace reads the same index.
    let mut mcp = Mcp::start_shared(&ws);
    let (error, text, _) = mcp.call("find_symbol", json!({"name": "saved_in_first_process"}));
    assert!(!error && text.contains("saved_in_first.py"), "{text}");
    // It says it reads another process's index, and how old that is.
    let (error, text, status) = mcp.call("index_status", json!({}));
    assert!(
        !error && text.contains("Another Quarry process writes"),
        "{text}"
    );
    assert_eq!(status["role"], "reader", "{status}");
    assert!(status["index_age_secs"].as_f64().is_some(), "{status}");

    // An unsaved edit is searchable in the editor that holds it, reader
    // or writer, and in no other process.
    let unsaved_reader = type_unsaved(
        &mut second,
        &ws,
        "python/retry_policy.py",
        "typed_in_the_reader",
    );
    let unsaved_writer = type_unsaved(
        &mut first,
        &ws,
        "python/retry_policy.py",
        "typed_in_the_writer",
    );
    assert!(
        unsaved_reader < Duration::from_secs(2),
        "{unsaved_reader:?}"
    );
    assert!(
        unsaved_writer < Duration::from_secs(2),
        "{unsaved_writer:?}"
    );

    // A save in the reader while the writer lives, then the writer dies
    // (SIGKILL: no shutdown, the lock is released by the kernel).
    save(
        &mut second,
        &ws,
        "src/saved_in_second.py",
        "def saved_in_second_process():\n    return 2\n",
    );
    first.child.kill().expect("kill");
    let _ = first.child.wait();
    let started = Instant::now();
    second.poll("quarry/status", Value::Null, |s| {
        s["folders"][0]["role"] == "writer"
    });
    let takeover = started.elapsed();
    assert!(takeover < Duration::from_secs(5), "takeover {takeover:?}");
    // What it saved as a reader is indexed once it writes, a save after
    // that too, and nothing indexed before is lost.
    wait_for_symbol(&mut second, "saved_in_second_process");
    save(
        &mut second,
        &ws,
        "src/after_takeover.py",
        "def saved_after_takeover():\n    return 3\n",
    );
    wait_for_symbol(&mut second, "saved_after_takeover");
    for name in ["saved_in_first_process", "EventBus", "GraphStore"] {
        assert!(has_symbol(&mut second, name), "{name} was lost");
    }
    // The MCP server follows the new writer's commits.
    let (error, text, _) = mcp.call("find_symbol", json!({"name": "saved_after_takeover"}));
    assert!(!error && text.contains("after_takeover.py"), "{text}");
    let _ = mcp.child.kill();
    eprintln!("reader lag {lag:?}, takeover {takeover:?}");
    second.result("shutdown", json!(null));
    second.notify("exit", json!(null));
}

/// `quarry ARGS` with the language server's cache (the same
/// `XDG_CACHE_HOME`), from the workspace root.
fn cli(ws: &Workspace, args: &[&str]) -> (String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args(args)
        .env("XDG_CACHE_HOME", ws.dir.path().join("xdg-cache"))
        .current_dir(ws.root())
        .output()
        .expect("run quarry");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?}: {stderr}");
    (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
}

/// Beside a running language server (the writer), `quarry index` waits
/// for the server to index a new file and says so, and `quarry search`
/// finds a file written a moment before, instead of answering stale.
#[test]
fn the_cli_beside_a_running_server_sees_a_new_file_at_once() {
    let ws = Workspace::fixture();
    let mut server = start_walked(&ws);
    ws.write(
        "src/written_on_disk.py",
        "def written_beside_the_server():\n    return 1\n",
    );
    let (_, stderr) = cli(&ws, &["index", "--lexical", "."]);
    assert!(
        stderr.contains("the writing process indexed them"),
        "{stderr}"
    );
    let (found, _) = cli(
        &ws,
        &["search", "--json", "--lexical", "written_beside_the_server"],
    );
    assert!(found.contains("written_beside_the_server"), "{found}");
    ws.write(
        "src/written_then_searched.py",
        "def searched_right_after_writing():\n    return 2\n",
    );
    let (found, stderr) = cli(
        &ws,
        &[
            "search",
            "--json",
            "--lexical",
            "searched_right_after_writing",
        ],
    );
    let hits: Value = serde_json::from_str(&found).expect("json");
    assert_eq!(
        hits["hits"][0]["symbol"], "searched_right_after_writing",
        "{found} {stderr}"
    );
    assert!(!stderr.contains("another quarry process"), "{stderr}");
    server.result("shutdown", json!(null));
    server.notify("exit", json!(null));
}
