//! Starting and stopping the real `quarry lsp` binary for the stdio tests.

use super::Workspace;
use quarry_bench::lsp_client::Client;
use serde_json::{json, Value};
use std::path::Path;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

pub fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// Starts a server on the workspace; `model` is the model directory (else
/// none is found and search is lexical).
pub fn start_with(ws: &Workspace, model: Option<&Path>) -> Client {
    start_with_options(ws, model, json!({"debounceMs": 30, "unknownKey": 1}))
}

/// Starts a lexical server and waits for its first walk to end.
pub fn start_walked(ws: &Workspace) -> Client {
    let mut client = start_with(ws, None);
    client.poll("quarry/status", Value::Null, |s| {
        !s["folders"][0]["lastWalk"].is_null()
    });
    client
}

/// Starts a server on the workspace with these `initializationOptions`.
pub fn start_with_options(ws: &Workspace, model: Option<&Path>, options: Value) -> Client {
    if let Some(model) = model {
        ensure_static_tier(model);
    }
    let mut client = Client::start(
        Path::new(env!("CARGO_BIN_EXE_quarry")),
        &ws.dir.path().join("xdg-cache"),
        model,
    );
    let root = std::fs::canonicalize(ws.root()).expect("root");
    let init = client.result(
        "initialize",
        json!({
            "processId": null,
            "rootUri": null,
            "capabilities": {"window": {"workDoneProgress": true}},
            "workspaceFolders": [{"uri": uri(&root), "name": "fixture"}],
            "initializationOptions": options
        }),
    );
    assert_eq!(init["serverInfo"]["name"], "quarry");
    assert_eq!(init["capabilities"]["workspaceSymbolProvider"], true);
    client.notify("initialized", json!({}));
    client
}

/// Distils the static tier of `model` once (beside the model, where every
/// server finds it): a server a test starts with `staticTier` on never
/// spends its first half minute distilling.
fn ensure_static_tier(model: &Path) {
    static ONCE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| {
        let engine = quarry_engine::dense::DenseEngine::load(quarry_engine::dense::DenseConfig {
            model_dir: Some(model.to_path_buf()),
            ..quarry_engine::dense::DenseConfig::default()
        });
        match engine.static_from() {
            Some(fast) => {
                if let Some(e) = fast.unavailable_reason() {
                    eprintln!("no static tier: {e}");
                }
            }
            None => eprintln!("no static tier: the model did not load"),
        }
    });
}

/// Waits (at most 10 s) for the server process to end.
pub fn wait_exit(client: &mut Client) -> ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = client.child.try_wait().expect("wait") {
            return status;
        }
        assert!(Instant::now() < deadline, "the server did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `symbol` of every hit of a `quarry/search` result, in order.
pub fn hit_symbols(result: &Value) -> Vec<String> {
    result["hits"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|h| h["symbol"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Opens `file` with its text on disk (version 1), then types `added` at
/// the start of the line after its last line (version 2), unsaved.
/// Returns the disk text and that line.
pub fn open_and_append(client: &mut Client, file: &Path, added: &str) -> (String, u32) {
    let text = std::fs::read_to_string(file).expect("read");
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri(file), "languageId": "rust", "version": 1, "text": text}}),
    );
    let line = text.lines().count() as u32;
    client.notify(
        "textDocument/didChange",
        json!({
            "textDocument": {"uri": uri(file), "version": 2},
            "contentChanges": [{"range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}}, "text": added}]
        }),
    );
    (text, line)
}
