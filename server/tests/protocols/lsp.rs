//! End-to-end: the real `quarry lsp` binary over stdio on a temp copy of
//! the fixture repository. The client waits for each response before it
//! sends the next message, answers the server's own requests, and records
//! notifications ($/progress, window/logMessage).

use crate::common::lsp::{hit_symbols, open_and_append, start_with, uri};
use crate::common::Workspace;
use quarry_bench::lsp_client::Client;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

fn progress_kind(n: &Value) -> Option<&str> {
    (n["method"] == "$/progress").then(|| n["params"]["value"]["kind"].as_str())?
}

fn has_symbol(result: &Value, name: &str) -> bool {
    result
        .as_array()
        .is_some_and(|a| a.iter().any(|s| s["name"] == name))
}

fn start(ws: &Workspace) -> Client {
    start_with(ws, None)
}

#[test]
fn serves_symbols_search_buffers_saves_and_watched_files() {
    let ws = Workspace::fixture();
    let root = std::fs::canonicalize(ws.root()).expect("root");
    let mut client = start(&ws);

    // Indexing reports progress, begin then end.
    client.wait_notification(|n| progress_kind(n) == Some("begin"));
    client.wait_notification(|n| progress_kind(n) == Some("end"));

    // workspace/symbol with containerName.
    let symbols = client.result("workspace/symbol", json!({"query": "GraphStore::insert"}));
    let first = &symbols[0];
    assert_eq!(first["name"], "insert", "{symbols}");
    assert_eq!(first["containerName"], "GraphStore");
    assert!(first["location"]["uri"]
        .as_str()
        .unwrap()
        .ends_with("src/graph_store.rs"));
    // At the name on line 55 (`pub fn insert`), not the doc comment above.
    assert_eq!(
        first["location"]["range"],
        json!({"start": {"line": 54, "character": 11}, "end": {"line": 54, "character": 17}}),
        "{symbols}"
    );
    // Ctrl+T on a type: the struct first, its impl blocks labelled as such.
    let symbols = client.result("workspace/symbol", json!({"query": "GraphStore"}));
    let names: Vec<&str> = symbols
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.first(), Some(&"GraphStore"), "{symbols}");
    assert!(names.contains(&"impl GraphStore"), "{names:?}");
    assert!(
        names.contains(&"impl NodeSource for GraphStore"),
        "{names:?}"
    );
    assert_eq!(
        names.iter().filter(|n| **n == "GraphStore").count(),
        1,
        "{names:?}"
    );
    // A decorated class opens at `class RetryPolicy`, not `@dataclass`.
    let symbols = client.result("workspace/symbol", json!({"query": "RetryPolicy"}));
    let class = symbols
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "RetryPolicy")
        .unwrap_or_else(|| panic!("{symbols}"));
    assert_eq!(
        class["location"]["range"]["start"],
        json!({"line": 13, "character": 6})
    );

    // quarry/search: lexical (no model), with the reason and coverage.
    let found = client.result(
        "quarry/search",
        json!({"query": "GraphStore::insert", "limit": 5}),
    );
    assert_eq!(found["mode"], "lexical", "{found}");
    assert!(found["reason"].is_string());
    assert_eq!(found["hits"][0]["symbol"], "GraphStore::insert", "{found}");
    assert!(found["hits"][0]["sources"]
        .as_array()
        .unwrap()
        .contains(&json!("exact")));
    assert!(found["coverage"]["total"].as_u64().unwrap() > 0);
    // Filters reach the branches.
    let python = client.result(
        "quarry/search",
        json!({"query": "insert", "languages": ["python"], "limit": 5}),
    );
    assert!(python["hits"]
        .as_array()
        .unwrap()
        .iter()
        .all(|h| h["language"] == "python"));

    // Unsaved edits: found lexically, with the range from the buffer.
    let file = root.join("src/graph_store.rs");
    let added = "\n/// Added in the editor only.\npub fn brand_new_unsaved_symbol() -> u32 { 7 }\n";
    let (disk_text, lines) = open_and_append(&mut client, &file, added);
    let result = client.poll(
        "quarry/search",
        json!({"query": "brand_new_unsaved_symbol"}),
        |r| hit_symbols(r).first().map(String::as_str) == Some("brand_new_unsaved_symbol"),
    );
    let hit = &result["hits"][0];
    assert_eq!(hit["range"]["start"]["line"], lines + 1, "{hit}");
    assert!(hit["snippet"]
        .as_str()
        .unwrap()
        .contains("brand_new_unsaved_symbol"));

    // Save: the disk now holds it; the index follows.
    std::fs::write(&file, format!("{disk_text}{added}")).expect("write");
    client.notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": uri(&file)}}),
    );
    client.notify(
        "textDocument/didClose",
        json!({"textDocument": {"uri": uri(&file)}}),
    );
    client.poll(
        "workspace/symbol",
        json!({"query": "brand_new_unsaved"}),
        |r| has_symbol(r, "brand_new_unsaved_symbol"),
    );

    // A file written on disk by someone else: the watcher picks it up.
    ws.write(
        "src/written_outside.rs",
        "pub fn watched_from_outside_symbol() {}\n",
    );
    client.poll(
        "workspace/symbol",
        json!({"query": "watched_from_outside"}),
        |r| has_symbol(r, "watched_from_outside_symbol"),
    );
    // And a deleted one disappears.
    std::fs::remove_file(ws.root().join("src/written_outside.rs")).expect("rm");
    client.poll(
        "workspace/symbol",
        json!({"query": "watched_from_outside"}),
        |r| !has_symbol(r, "watched_from_outside_symbol"),
    );

    // A second workspace folder, added at run time, then removed.
    let other = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        other.path().join("extra.py"),
        "def second_root_function():\n    return 2\n",
    )
    .expect("write");
    let other_root = std::fs::canonicalize(other.path()).expect("root");
    let folder = json!([{"uri": uri(&other_root), "name": "other"}]);
    client.notify(
        "workspace/didChangeWorkspaceFolders",
        json!({"event": {"added": folder, "removed": []}}),
    );
    client.poll("workspace/symbol", json!({"query": "second_root"}), |r| {
        has_symbol(r, "second_root_function")
    });
    client.notify(
        "workspace/didChangeWorkspaceFolders",
        json!({"event": {"added": [], "removed": folder}}),
    );
    client.poll("workspace/symbol", json!({"query": "second_root"}), |r| {
        !has_symbol(r, "second_root_function")
    });

    // Cancellation: a request cancelled while in flight gets
    // RequestCancelled (or its result, if it finished first), and the
    // server answers the next one.
    let mut cancelled = 0;
    for _ in 0..50 {
        let id = client.next_id;
        client.next_id += 1;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "quarry/search",
            "params": {"query": "store node lookup insert graph rate limit token bucket", "limit": 50}});
        let cancel = json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": id}});
        client.send_all(&[request, cancel]);
        let response = client.response(id);
        match response.get("error") {
            Some(error) => {
                assert_eq!(error["code"], -32800, "{response}");
                cancelled += 1;
            }
            None => assert!(response["result"]["hits"].is_array()),
        }
        if cancelled >= 3 {
            break;
        }
    }
    assert!(cancelled > 0, "no request was ever cancelled");

    // Malformed JSON-RPC: a parse error, then business as usual.
    client.send_raw("{\"jsonrpc\": \"2.0\", \"id\": 77, \"method\": ");
    let parse_error = client.wait_error_without_id();
    assert_eq!(parse_error["error"]["code"], -32700, "{parse_error}");
    client.result("workspace/symbol", json!({"query": "Node"}));

    // A malformed request gets an error; the server keeps serving.
    let bad = client.call("quarry/search", json!({"query": 5}));
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("quarry/search"),
        "{bad}"
    );
    let bad = client.call("quarry/search", json!({"query": "x", "paths": ["[oops"]}));
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("bad path glob"),
        "{bad}"
    );
    let unknown = client.call("workspace/executeCommand", json!({"command": "nope"}));
    assert!(unknown.get("error").is_some());

    let status = client.result("quarry/status", json!(null));
    assert_eq!(status["mode"], "lexical");
    let folder = &status["folders"][0];
    assert!(folder["files"].as_u64().unwrap() > 10, "{status}");
    assert!(folder["cacheDir"].as_str().unwrap().contains("xdg-cache"));

    let reindex = client.result(
        "workspace/executeCommand",
        json!({"command": "quarry.reindex"}),
    );
    assert_eq!(reindex["reindexing"], 1);

    // Shutdown and exit end the process cleanly.
    client.result("shutdown", json!(null));
    client.notify("exit", json!(null));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = client.child.try_wait().expect("wait") {
            assert!(status.success(), "{status}");
            break;
        }
        assert!(Instant::now() < deadline, "the server did not exit");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn bad_initialization_options_are_refused_clearly() {
    let ws = Workspace::fixture();
    let mut client = Client::start(
        Path::new(env!("CARGO_BIN_EXE_quarry")),
        &ws.dir.path().join("xdg-cache"),
        None,
    );
    let response = client.call(
        "initialize",
        json!({"processId": null, "rootUri": null, "capabilities": {}, "initializationOptions": {"perFileCap": "two"}}),
    );
    let message = response["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("perFileCap"), "{response}");
    let _ = client.child.kill();
}

#[test]
fn goes_hybrid_once_the_model_has_embedded_the_workspace() {
    let model = match quarry_encoder::embed::locate_model(None) {
        Ok(dir) => dir,
        Err(e) => {
            assert!(
                std::env::var("QUARRY_REQUIRE_MODEL").as_deref() != Ok("1"),
                "QUARRY_REQUIRE_MODEL=1 but the model is missing: {e}"
            );
            eprintln!("skipping: {e}");
            return;
        }
    };
    let ws = Workspace::fixture();
    // A request before `initialize` is answered, with the protocol's
    // "not initialized" error, and the session goes on.
    let mut early = Client::start(
        Path::new(env!("CARGO_BIN_EXE_quarry")),
        &ws.dir.path().join("xdg-cache-early"),
        Some(&model),
    );
    let refused = early.call("quarry/search", json!({"query": "token"}));
    assert_eq!(refused["error"]["code"], -32002, "{refused}");
    let _ = early.child.kill();

    let mut client = start_with(&ws, Some(&model));
    // From the first answer on: while the index or the model is still
    // loading, the status says so, never "lexical-only, 0 files".
    let saw_starting = std::cell::Cell::new(false);
    let status = client.poll("quarry/status", json!(null), |s| {
        let folder = &s["folders"][0];
        let loading =
            folder["ready"] != true || folder["lastWalk"].is_null() || s["model"]["id"].is_null();
        if loading {
            saw_starting.set(true);
            assert_eq!(s["state"], "starting", "{s}");
            assert!(s["stateReason"].is_string(), "{s}");
        } else {
            assert_eq!(s["state"], "ready", "{s}");
        }
        s["mode"] == "hybrid"
            && folder["chunks"].as_u64().unwrap_or(0) > 0
            && folder["embedded"] == folder["chunks"]
    });
    assert_eq!(status["state"], "ready");
    eprintln!("saw the starting state: {}", saw_starting.get());
    assert!(status["model"]["id"]
        .as_str()
        .unwrap()
        .starts_with("all-MiniLM-L6-v2"));
    let found = client.result(
        "quarry/search",
        json!({"query": "limit how many requests a client may send", "limit": 10}),
    );
    assert_eq!(found["mode"], "hybrid", "{found}");
    assert_eq!(found["noMatch"], false, "{found}");
    assert_eq!(found["state"], "ready", "{found}");
    let hits = found["hits"].as_array().unwrap();
    assert!(
        hits.iter()
            .any(|h| h["sources"].as_array().unwrap().contains(&json!("dense"))),
        "{found}"
    );
    let scores: Vec<f64> = hits.iter().map(|h| h["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] > w[1]), "{scores:?}");
    assert!(hits
        .iter()
        .all(|h| h["detail"].is_string() && h["label"].is_string()));
    // An identifier that exists nowhere: only neighbours by meaning, and
    // the answer says so.
    let nothing = client.result(
        "quarry/search",
        json!({"query": "quokka_trampoline_gauge", "limit": 10}),
    );
    assert_eq!(nothing["noMatch"], true, "{nothing}");
    client.result("shutdown", json!(null));
    client.notify("exit", json!(null));
}

#[test]
fn a_restart_answers_from_the_cache_without_reparsing() {
    let ws = Workspace::fixture();
    let mut client = start(&ws);
    client.wait_notification(|n| progress_kind(n) == Some("end"));
    let first = client.result("quarry/status", json!(null));
    assert!(
        first["folders"][0]["lastWalk"]["files_reparsed"]
            .as_u64()
            .unwrap()
            > 10,
        "{first}"
    );
    client.result("shutdown", json!(null));
    client.notify("exit", json!(null));
    let _ = client.child.wait();

    let mut client = start(&ws);
    client.wait_notification(|n| progress_kind(n) == Some("end"));
    let status = client.result("quarry/status", json!(null));
    let walk = &status["folders"][0]["lastWalk"];
    assert_eq!(walk["files_reparsed"], 0, "{status}");
    assert!(walk["files_unchanged"].as_u64().unwrap() > 10, "{status}");
    let symbols = client.result("workspace/symbol", json!({"query": "GraphStore::insert"}));
    assert_eq!(symbols[0]["name"], "insert");
    client.result("shutdown", json!(null));
    client.notify("exit", json!(null));
}

#[test]
fn search_keeps_the_engines_order_with_phrases_first() {
    let ws = Workspace::fixture();
    let mut client = start(&ws);
    client.poll("quarry/status", json!(null), |s| {
        !s["folders"][0]["lastWalk"].is_null()
    });
    // The verified phrase is pinned first although a fused hit outscores
    // it; re-sorting the merged folders by score used to bury it.
    let found = client.result(
        "quarry/search",
        json!({"query": "\"event bus full\" retry queue", "limit": 10}),
    );
    let hits = found["hits"].as_array().unwrap();
    assert_eq!(hits[0]["symbol"], "EventBus.subscribe", "{found}");
    assert!(hits[0]["sources"]
        .as_array()
        .unwrap()
        .contains(&json!("phrase")));
    // It opens at the phrase, not at the top of the definition.
    let path = hits[0]["uri"]
        .as_str()
        .unwrap()
        .trim_start_matches("file://");
    let text = std::fs::read_to_string(path).expect("read");
    let line = hits[0]["selectionRange"]["start"]["line"].as_u64().unwrap() as usize;
    assert!(
        text.lines().nth(line).unwrap().contains("event bus full"),
        "{}",
        hits[0]
    );
    // Its own score is below fused hits' (`ranks`), but the score sent
    // falls strictly down the list: a client sorting by it keeps the order.
    let score = |i: usize| hits[i]["score"].as_f64().unwrap();
    assert!((1..hits.len()).all(|i| score(i) < score(i - 1)), "{found}");
    // The phrase's line, not the doc comment above it, is the detail.
    assert!(
        hits[0]["detail"]
            .as_str()
            .unwrap()
            .contains("event bus full"),
        "{}",
        hits[0]
    );
    client.result("shutdown", json!(null));
    client.notify("exit", json!(null));
}

#[test]
fn ignored_and_hidden_files_never_enter_through_watcher_saves_or_buffers() {
    let ws = Workspace::fixture();
    ws.write(".gitignore", "build/\n*_secret.rs\n");
    let mut client = start(&ws);
    client.wait_notification(|n| progress_kind(n) == Some("end"));
    let root = std::fs::canonicalize(ws.root()).expect("root");
    // Written while the server runs: an ignored folder, an ignored glob,
    // a hidden file holding a token; and one file that may be indexed.
    ws.write("build/gen.rs", "pub fn ignored_build_fn() {}\n");
    ws.write("src/token_secret.rs", "pub fn ignored_glob_fn() {}\n");
    ws.write(
        ".npmrc",
        "//registry.npmjs.org/:_authToken=npm_supersecrettoken123\n",
    );
    ws.write("src/visible_new.rs", "pub fn visible_new_fn() {}\n");
    for file in ["build/gen.rs", "src/token_secret.rs", ".npmrc"] {
        client.notify(
            "textDocument/didSave",
            json!({"textDocument": {"uri": uri(&root.join(file))}}),
        );
    }
    // An unsaved buffer of an ignored file.
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri(&root.join("build/open.rs")), "languageId": "rust",
               "version": 1, "text": "pub fn opened_ignored_fn() {}\n"}}),
    );
    // The watcher has caught up once the visible file is found.
    client.poll("quarry/search", json!({"query": "visible_new_fn"}), |r| {
        hit_symbols(r).first().map(String::as_str) == Some("visible_new_fn")
    });
    std::thread::sleep(Duration::from_millis(300));
    for query in [
        "ignored_build_fn",
        "ignored_glob_fn",
        "npm_supersecrettoken123",
        "opened_ignored_fn",
    ] {
        let found = client.result("quarry/search", json!({"query": query}));
        let leaked = found["hits"].as_array().unwrap().iter().any(|h| {
            let uri = h["uri"].as_str().unwrap();
            uri.contains("/build/") || uri.contains("_secret.rs") || uri.ends_with(".npmrc")
        });
        assert!(!leaked, "{query}: {found}");
        let symbols = client.result("workspace/symbol", json!({"query": query}));
        assert_eq!(
            symbols.as_array().map_or(0, Vec::len),
            0,
            "{query}: {symbols}"
        );
    }
    client.result("shutdown", json!(null));
    client.notify("exit", json!(null));
}
