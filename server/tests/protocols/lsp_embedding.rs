//! End-to-end over stdio with the real model: never stale while embedding
//! runs, edited buffers keep their vectors, and concurrent searches give
//! the answers one search alone gives. These need the model; they skip
//! with a note without it unless `QUARRY_REQUIRE_MODEL=1`.

use crate::common::lsp::{
    hit_symbols, open_and_append, start_with, start_with_options, uri, wait_exit,
};
use crate::common::Workspace;
use quarry_bench::lsp_client::Client;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn model() -> Option<PathBuf> {
    match quarry_encoder::embed::locate_model(None) {
        Ok(dir) => Some(dir),
        Err(e) => {
            assert!(
                std::env::var("QUARRY_REQUIRE_MODEL").as_deref() != Ok("1"),
                "QUARRY_REQUIRE_MODEL=1 but the model is missing: {e}"
            );
            eprintln!("skipping: {e}");
            None
        }
    }
}

fn folder(status: &Value) -> &Value {
    &status["folders"][0]
}

/// Polls `quarry/search` until `name` is the first hit; the time it took.
fn until_found(client: &mut Client, name: &str) -> Duration {
    let started = Instant::now();
    client.poll("quarry/search", json!({"query": name, "limit": 5}), |r| {
        hit_symbols(r).first().map(String::as_str) == Some(name)
    });
    started.elapsed()
}

/// A repository big enough that a cold embedding takes a while on two
/// cores: `files` Rust files of 40 distinct functions each.
fn big_workspace(files: usize) -> Workspace {
    let ws = Workspace::empty();
    let words = [
        "parse", "render", "queue", "retry", "socket", "buffer", "cache", "token", "graph",
        "shard", "index", "merge", "flush", "route", "frame", "codec",
    ];
    for f in 0..files {
        let mut text = format!("//! Module {f}: generated for the embedding tests.\n\n");
        for n in 0..40 {
            let a = words[(f + n) % words.len()];
            let b = words[(f * 7 + n * 3) % words.len()];
            text.push_str(&format!(
                "/// Does {a} work over the {b} of item {n} in module {f}.\n\
                 pub fn {a}_{b}_{f}_{n}(input: &[u8], limit: usize) -> usize {{\n\
                 \x20   let mut total = {n};\n\
                 \x20   for byte in input.iter().take(limit) {{\n\
                 \x20       total = total.wrapping_mul({f} + 31).wrapping_add(*byte as usize);\n\
                 \x20   }}\n\
                 \x20   total\n\
                 }}\n\n"
            ));
        }
        ws.write(&format!("src/m{f}.rs"), text);
    }
    ws
}

#[test]
fn edits_and_saves_are_searchable_while_a_cold_embedding_runs() {
    searchable_during_a_cold_embedding(false);
}

/// The same with the static tier on: it covers every chunk first and
/// stands in for the transformer where it has no vector yet.
#[test]
fn the_static_tier_stands_in_while_a_cold_embedding_runs() {
    searchable_during_a_cold_embedding(true);
}

fn searchable_during_a_cold_embedding(static_tier: bool) {
    let Some(model) = model() else { return };
    let ws = big_workspace(60);
    let root = std::fs::canonicalize(ws.root()).expect("root");
    let mut client = start_with_options(&ws, Some(&model), json!({"staticTier": static_tier}));
    // Wait until the lane is embedding the cold workspace.
    let status = client.poll("quarry/status", Value::Null, |s| {
        folder(s)["embedding"] == true && folder(s)["embedded"].as_u64().unwrap_or(0) > 0
    });
    let total = folder(&status)["chunks"].as_u64().unwrap();
    assert!(total >= 2400, "{status}");

    // An unsaved edit that adds a function.
    let file = root.join("src/m3.rs");
    open_and_append(
        &mut client,
        &file,
        "pub fn typed_while_embedding() -> u8 { 1 }\n",
    );
    let edit = until_found(&mut client, "typed_while_embedding");

    // A file written on disk and saved.
    let saved = root.join("src/saved_now.rs");
    std::fs::write(&saved, "pub fn saved_while_embedding() -> u8 { 2 }\n").expect("write");
    client.notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": uri(&saved)}}),
    );
    let save = until_found(&mut client, "saved_while_embedding");

    // Both happened while the embedding was still running, and it says so.
    let status = client.result("quarry/status", Value::Null);
    assert!(
        folder(&status)["embedded"].as_u64().unwrap() < folder(&status)["chunks"].as_u64().unwrap(),
        "the embedding finished before the edits were checked: {status}"
    );
    assert_eq!(status["mode"], "partial", "{status}");
    let found = client.result(
        "quarry/search",
        json!({"query": "retry the socket", "limit": 5}),
    );
    // The dense branch ran on the transformer's vectors so far, and says
    // how far they reach.
    assert_eq!(found["mode"], "partial", "{found}");
    let covered = found["coverage"]["embedded"].as_u64().unwrap();
    assert!(
        covered > 0 && covered < found["coverage"]["total"].as_u64().unwrap(),
        "{found}"
    );
    let reason = found["reason"].as_str().unwrap_or("");
    if static_tier {
        // The static tier covered every chunk within seconds, the edits
        // included (theirs follow the reindex by milliseconds, so a search
        // can find a saved file's name just before), and stands in for the
        // rest.
        let status = client.poll("quarry/status", Value::Null, |s| {
            folder(s)["staticEmbedded"] == folder(s)["chunks"]
        });
        assert!(
            status["reason"]
                .as_str()
                .unwrap()
                .contains("static vectors cover every chunk"),
            "{status}"
        );
        assert!(reason.contains("static-tier vectors stand in"), "{found}");
    } else {
        assert_eq!(folder(&status)["staticEmbedded"], 0, "{status}");
        assert!(
            reason.contains("found by the lexical and symbol branches only"),
            "{found}"
        );
    }
    eprintln!("searchable during a cold embedding: edit {edit:?}, save {save:?}");
    // Generous bounds for a loaded CI machine (the target is 200 ms; the
    // update loop used to wait for the whole embedding, minutes here).
    assert!(edit < Duration::from_secs(5), "edit took {edit:?}");
    assert!(save < Duration::from_secs(5), "save took {save:?}");

    client.result("shutdown", Value::Null);
    client.notify("exit", Value::Null);
    assert_eq!(wait_exit(&mut client).code(), Some(0));
}

#[test]
fn an_edited_buffer_keeps_its_vectors_and_gets_new_ones() {
    let Some(model) = model() else { return };
    let ws = Workspace::fixture();
    let root = std::fs::canonicalize(ws.root()).expect("root");
    let mut client = start_with(&ws, Some(&model));
    // Settled: every chunk has a vector and the lane has finished its
    // round, so its counters include the vectors it just added (a vector is
    // visible before the round's counts are added).
    let complete = |s: &Value| {
        s["mode"] == "hybrid"
            && folder(s)["embedded"] == folder(s)["chunks"]
            && folder(s)["embedding"] == false
    };
    let before = client.poll("quarry/status", Value::Null, complete);
    let computed = folder(&before)["vectorsComputed"].as_u64().unwrap();

    // One keystroke-sized edit: a new function in an open file.
    let file = root.join("src/graph_store.rs");
    let added =
        "\n/// Counts the nodes a traversal visited.\npub fn visited_node_tally() -> u32 { 3 }\n";
    let (text, lines) = open_and_append(&mut client, &file, added);
    until_found(&mut client, "visited_node_tally");
    // Every chunk has a vector again: the unchanged ones from the cache,
    // the new one computed in the background.
    let after = client.poll("quarry/status", Value::Null, complete);
    let new_vectors = folder(&after)["vectorsComputed"].as_u64().unwrap() - computed;
    assert!(
        (1..=3).contains(&new_vectors),
        "only the changed chunks are computed, got {new_vectors}: {after}"
    );
    let found = client.result(
        "quarry/search",
        json!({"query": "how many nodes did the traversal visit", "limit": 10}),
    );
    assert_eq!(found["mode"], "hybrid", "{found}");

    // Undo: back to the disk text; nothing new is computed.
    let end = text.lines().count() as u32 + added.lines().count() as u32;
    client.notify(
        "textDocument/didChange",
        json!({
            "textDocument": {"uri": uri(&file), "version": 3},
            "contentChanges": [{"range": {"start": {"line": lines, "character": 0}, "end": {"line": end, "character": 0}}, "text": ""}]
        }),
    );
    client.poll(
        "quarry/search",
        json!({"query": "visited_node_tally", "limit": 5}),
        |r| !hit_symbols(r).iter().any(|s| s == "visited_node_tally"),
    );
    let undone = client.poll("quarry/status", Value::Null, complete);
    assert_eq!(
        folder(&undone)["vectorsComputed"].as_u64().unwrap() - computed,
        new_vectors,
        "{undone}"
    );

    client.result("shutdown", Value::Null);
    client.notify("exit", Value::Null);
    assert_eq!(wait_exit(&mut client).code(), Some(0));
}

#[test]
fn concurrent_searches_equal_sequential_ones() {
    let Some(model) = model() else { return };
    let ws = Workspace::fixture();
    let mut client = start_with(&ws, Some(&model));
    client.poll("quarry/status", Value::Null, |s| {
        s["mode"] == "hybrid" && folder(s)["embedded"] == folder(s)["chunks"]
    });
    let queries = [
        "limit how many requests a client may send",
        "retry with exponential backoff",
        "publish an event to subscribers",
        "look up a node in the graph",
        "parse configuration from the environment",
    ];
    let mut alone: HashMap<&str, Value> = HashMap::new();
    for query in queries {
        let result = client.result("quarry/search", json!({"query": query, "limit": 10}));
        assert_eq!(result["mode"], "hybrid", "{result}");
        alone.insert(query, result["hits"].clone());
    }
    // 200 requests in flight at once.
    let first_id = client.next_id;
    let requests: Vec<Value> = (0..200)
        .map(|i| {
            json!({"jsonrpc": "2.0", "id": first_id + i as i64, "method": "quarry/search",
                   "params": {"query": queries[i % queries.len()], "limit": 10}})
        })
        .collect();
    client.next_id += 200;
    client.send_all(&requests);
    // Responses come in any order.
    let ids: Vec<i64> = (first_id..first_id + 200).collect();
    let responses = client.responses(&ids);
    for i in 0..200usize {
        let response = &responses[&(first_id + i as i64)];
        let result = &response["result"];
        let query = queries[i % queries.len()];
        assert_eq!(result["mode"], "hybrid", "request {i}: {response}");
        assert_eq!(result["hits"], alone[query], "request {i} ({query})");
    }
    client.result("shutdown", Value::Null);
    client.notify("exit", Value::Null);
    assert_eq!(wait_exit(&mut client).code(), Some(0));
}

/// The parts of a hit every surface reports alike: where, what, and which
/// branches found it.
fn hit_keys(
    hits: &Value,
    path_of: impl Fn(&Value) -> String,
    line_of: impl Fn(&Value) -> u64,
) -> Vec<String> {
    hits.as_array()
        .expect("hits")
        .iter()
        .map(|h| {
            format!(
                "{}:{} {} {}",
                path_of(h),
                line_of(h),
                h["symbol"],
                h["sources"]
            )
        })
        .collect()
}

/// `quarry ARGS` with the model, on the cache the language servers of
/// `common::lsp` use.
fn quarry(ws: &Workspace, model: &std::path::Path) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_quarry"));
    command
        .env("XDG_CACHE_HOME", ws.dir.path().join("xdg-cache"))
        .env("QUARRY_MODEL", model);
    command
}

/// Runs `command` and returns its stdout; its stderr if it fails.
fn succeed(command: &mut std::process::Command) -> Vec<u8> {
    let out = command.output().expect("run quarry");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn cli_search(ws: &Workspace, model: &std::path::Path, query: &str) -> Value {
    let out = succeed(
        quarry(ws, model)
            .args(["search", "--json", "--limit", "10", "--root"])
            .arg(ws.root())
            .args(["--", query]),
    );
    serde_json::from_slice(&out).expect("search JSON")
}

fn cli_index(ws: &Workspace, model: &std::path::Path, extra: &[&str]) {
    succeed(quarry(ws, model).arg("index").arg(ws.root()).args(extra));
}

const SAME_ANSWER_QUERIES: [&str; 4] = [
    "GraphStore::insert",
    "where do we retry failed requests",
    "\"connection refused\"",
    "parse the configuration file",
];

/// One query through the CLI's JSON and the MCP `search_code` tool (and,
/// given, the language server's `quarry/search`): the same hits in the
/// same order, the same mode and the same coverage.
fn assert_same_answers(
    ws: &Workspace,
    model: &std::path::Path,
    mut lsp: Option<&mut Client>,
    expect_mode: &str,
) {
    let root = std::fs::canonicalize(ws.root()).expect("root");
    let prefix = format!("{}/", uri(&root));
    // One agent's server for every query (its model loads once).
    let mut agent = crate::common::mcp::Mcp::spawn({
        let mut command = quarry(ws, model);
        command.args(["mcp", "--root"]).arg(ws.root());
        command
    });
    for query in SAME_ANSWER_QUERIES {
        let cli = cli_search(ws, model, query);
        let (is_error, text, mcp) = agent.call("search_code", json!({"query": query, "limit": 10}));
        assert!(!is_error, "{text}");
        let from_disk = |r: &Value| {
            (
                r["mode"].clone(),
                r["coverage"].clone(),
                hit_keys(
                    &r["hits"],
                    |h| h["path"].as_str().unwrap().to_string(),
                    |h| h["start_line"].as_u64().unwrap(),
                ),
            )
        };
        let cli_answer = from_disk(&cli);
        assert_eq!(cli_answer.0, expect_mode, "{query}: {cli}");
        assert!(!cli_answer.2.is_empty(), "{query}: {cli}");
        assert_eq!(cli_answer, from_disk(&mcp), "{query}: CLI and MCP differ");
        if let Some(client) = lsp.as_deref_mut() {
            let found = client.result("quarry/search", json!({"query": query, "limit": 10}));
            let lsp_answer = (
                found["mode"].clone(),
                found["coverage"].clone(),
                hit_keys(
                    &found["hits"],
                    |h| {
                        h["uri"]
                            .as_str()
                            .unwrap()
                            .trim_start_matches(&prefix)
                            .to_string()
                    },
                    |h| h["range"]["start"]["line"].as_u64().unwrap() + 1,
                ),
            );
            assert_eq!(
                cli_answer, lsp_answer,
                "{query}: CLI and language server differ"
            );
        }
    }
}

#[test]
fn the_three_surfaces_give_the_same_answer() {
    let Some(model) = model() else { return };
    // Cold: only the static tier's vectors (`quarry index --dense static`):
    // the CLI and an agent both search with the static tier.
    let ws = Workspace::fixture();
    cli_index(&ws, &model, &["--dense", "static"]);
    assert_same_answers(&ws, &model, None, "hybrid");
    // Warm: every chunk embedded by the transformer; the language server
    // answers too.
    cli_index(&ws, &model, &[]);
    let mut client = start_with(&ws, Some(&model));
    client.poll("quarry/status", Value::Null, |s| {
        !folder(s)["lastWalk"].is_null()
            && folder(s)["embedding"] == false
            && folder(s)["embedded"] == folder(s)["chunks"]
    });
    assert_same_answers(&ws, &model, Some(&mut client), "hybrid");
    client.result("shutdown", Value::Null);
    client.notify("exit", Value::Null);
}
