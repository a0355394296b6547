//! `quarry bench --lsp CORPUS`: the language server measured as an editor
//! sees it, over stdio: `workspace/symbol` per keystroke, `quarry/search`,
//! and how long a saved edit takes to become searchable (lexically, and with
//! a model, until its one changed chunk is embedded).
//!
//! Never: part of the test suite's pass/fail decisions; it prints numbers.

use super::lsp_client::Client;
use super::{copy_tree, percentile, LEXICAL_QUERIES};
use serde::Serialize;
use serde_json::{json, Value};
use std::io;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Names typed one keystroke at a time into `workspace/symbol`.
const TYPED_SYMBOLS: &[&str] = &[
    "HashMap",
    "parse_args",
    "Deserializer",
    "spawn_blocking",
    "read_to_string",
    "GraphStore::lookup",
    "ThreadPool",
    "from_str",
];

/// Saves timed.
const SAVES: usize = 20;

#[derive(Debug, Serialize)]
pub struct LspReport {
    pub corpus: String,
    pub files: u64,
    pub chunks: u64,
    pub mode: String,
    pub initial_index_s: f64,
    /// The first `workspace/symbol` request after indexing (cold).
    pub first_symbol_ms: f64,
    pub symbol_requests: usize,
    pub symbol_p50_ms: f64,
    pub symbol_p99_ms: f64,
    /// The slowest `workspace/symbol` queries, with milliseconds.
    pub symbol_slowest: Vec<(String, f64)>,
    pub search_requests: usize,
    pub search_p50_ms: f64,
    pub search_p99_ms: f64,
    /// The size of the file saved (the corpus's median source file).
    pub save_file_bytes: u64,
    /// didSave sent -> the new function found by `workspace/symbol`.
    pub save_searchable_p50_ms: f64,
    pub save_searchable_max_ms: f64,
    /// didSave sent -> every chunk embedded again (with a model).
    pub save_embedded_p50_ms: Option<f64>,
    pub checkout: Checkout,
}

/// A branch switch as the file watcher sees it: many files rewritten at
/// once, no didSave.
#[derive(Debug, Default, Serialize)]
pub struct Checkout {
    pub files: usize,
    /// Rewrite done -> a function added to the last file is found.
    pub converge_ms: f64,
    /// With a model: vectors computed, and taken from the cache, between
    /// the rewrite and every chunk embedded again.
    pub vectors_computed: Option<u64>,
    pub vectors_from_cache: Option<u64>,
    /// `workspace/symbol` while the server catches up.
    pub symbol_requests: usize,
    pub symbol_max_ms: f64,
    pub symbol_p50_ms: f64,
}

/// Most files rewritten by the checkout benchmark.
const CHECKOUT_FILES: usize = 10_000;

/// Appends a comment line to up to `CHECKOUT_FILES` source files (the last
/// also gains a function), then times how long the server takes to find
/// that function, querying `workspace/symbol` all along.
fn checkout(client: &mut Client, root: &Path, hybrid: bool) -> io::Result<Checkout> {
    let counts = |s: &Value| {
        let f = &s["folders"][0];
        (
            f["vectorsComputed"].as_u64().unwrap_or(0),
            f["vectorsFromCache"].as_u64().unwrap_or(0),
        )
    };
    let before = counts(&client.result("quarry/status", json!(null)));
    let mut files: Vec<PathBuf> = crate::walk::walk(root, None)
        .files
        .into_iter()
        .filter(|f| matches!(f.abs_path.extension().and_then(|e| e.to_str()), Some("rs")))
        .map(|f| f.abs_path)
        .collect();
    files.sort();
    files.truncate(CHECKOUT_FILES);
    let Some(last) = files.last().cloned() else {
        return Ok(Checkout::default());
    };
    for file in &files {
        let mut text = std::fs::read(file)?;
        text.extend_from_slice(b"\n// switched branch\n");
        if *file == last {
            text.extend_from_slice(b"pub fn quarry_bench_after_checkout() {}\n");
        }
        std::fs::write(file, text)?;
    }
    let start = Instant::now();
    let mut times = Vec::new();
    loop {
        let (t, result) = timed(
            client,
            "workspace/symbol",
            json!({"query": "quarry_bench_after_checkout"}),
        );
        times.push(t);
        let found = result
            .as_array()
            .is_some_and(|a| a.iter().any(|s| s["name"] == "quarry_bench_after_checkout"));
        if found {
            break;
        }
        if start.elapsed().as_secs() > 600 {
            return Err(io::Error::other(
                "the server did not converge after a checkout",
            ));
        }
        // Other keystrokes meanwhile.
        let (t, _) = timed(client, "workspace/symbol", json!({"query": "Hash"}));
        times.push(t);
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let converge_ms = start.elapsed().as_secs_f64() * 1000.0;
    let (mut vectors_computed, mut vectors_from_cache) = (None, None);
    if hybrid {
        let status = client.poll("quarry/status", json!(null), |s| {
            let f = &s["folders"][0];
            f["embedded"] == f["chunks"]
        });
        let after = counts(&status);
        vectors_computed = Some(after.0 - before.0);
        vectors_from_cache = Some(after.1 - before.1);
    }
    let times = sorted(times);
    Ok(Checkout {
        files: files.len(),
        converge_ms,
        vectors_computed,
        vectors_from_cache,
        symbol_requests: times.len(),
        symbol_max_ms: times.last().copied().unwrap_or(0.0),
        symbol_p50_ms: percentile(&times, 0.5),
    })
}

impl std::fmt::Display for LspReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "lsp corpus        {} ({} files, {} chunks), {}",
            self.corpus, self.files, self.chunks, self.mode
        )?;
        writeln!(
            f,
            "initial index     {:.1} s (initialize -> progress end)",
            self.initial_index_s
        )?;
        writeln!(
            f,
            "workspace/symbol  p50 {:.2} ms, p99 {:.2} ms ({} requests, one per keystroke, after one warm-up pass; first request {:.1} ms)",
            self.symbol_p50_ms, self.symbol_p99_ms, self.symbol_requests, self.first_symbol_ms
        )?;
        let slowest: Vec<String> = self
            .symbol_slowest
            .iter()
            .map(|(q, t)| format!("{q:?} {t:.1} ms"))
            .collect();
        writeln!(f, "  slowest         {}", slowest.join(", "))?;
        writeln!(
            f,
            "quarry/search     p50 {:.2} ms, p99 {:.2} ms ({} requests)",
            self.search_p50_ms, self.search_p99_ms, self.search_requests
        )?;
        writeln!(
            f,
            "save -> searchable p50 {:.1} ms, max {:.1} ms ({SAVES} saves of a {} KB file, the median size)",
            self.save_searchable_p50_ms,
            self.save_searchable_max_ms,
            self.save_file_bytes / 1024
        )?;
        if let Some(embedded) = self.save_embedded_p50_ms {
            writeln!(
                f,
                "save -> embedded  p50 {embedded:.1} ms (one changed chunk)"
            )?;
        }
        let c = &self.checkout;
        writeln!(
            f,
            "checkout          {} files rewritten -> converged in {:.0} ms; workspace/symbol meanwhile p50 {:.2} ms, max {:.1} ms ({} requests)",
            c.files, c.converge_ms, c.symbol_p50_ms, c.symbol_max_ms, c.symbol_requests
        )?;
        if let (Some(computed), Some(cached)) = (c.vectors_computed, c.vectors_from_cache) {
            writeln!(
                f,
                "  re-embedded     {computed} vectors computed, {cached} from the vector cache"
            )?;
        }
        Ok(())
    }
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(|a, b| a.total_cmp(b));
    v
}

fn timed(client: &mut Client, method: &str, params: Value) -> (f64, Value) {
    let start = Instant::now();
    let result = client.result(method, params);
    (start.elapsed().as_secs_f64() * 1000.0, result)
}

/// A file for the save benchmark (appending a function to it): the `.rs`,
/// `.py`, `.ts` or `.js` file of median size under `root`, with its size.
fn save_target(root: &Path) -> Option<(PathBuf, &'static str, u64)> {
    let mut files: Vec<(u64, PathBuf, &'static str)> = Vec::new();
    for entry in crate::walk::walk(root, None).files {
        let template = match entry.abs_path.extension().and_then(|e| e.to_str()) {
            Some("rs") => "\npub fn {name}() -> u32 {{ 1 }}\n",
            Some("py") => "\ndef {name}():\n    return 1\n",
            Some("ts" | "js") => "\nexport function {name}() {{ return 1; }}\n",
            _ => continue,
        };
        files.push((entry.size, entry.abs_path, template));
    }
    files.sort();
    let (size, path, template) = files.get(files.len() / 2)?.clone();
    Some((path, template, size))
}

/// Runs the server on a copy of `corpus`: lexical-only without `model`.
pub fn run(corpus: &Path, model: Option<PathBuf>) -> io::Result<LspReport> {
    let work = tempfile::tempdir()?;
    let root = work.path().join("corpus");
    copy_tree(corpus, &root)?;
    let root = std::fs::canonicalize(&root)?;
    let exe = std::env::current_exe()?;
    let mut client = Client::start(&exe, &work.path().join("xdg"), model.as_deref());
    // Embedding a corpus takes minutes.
    client.timeout = std::time::Duration::from_secs(4 * 3600);
    let uri = format!("file://{}", root.display());
    let start = Instant::now();
    client.result(
        "initialize",
        json!({
            "processId": null,
            "rootUri": null,
            "capabilities": {"window": {"workDoneProgress": true}},
            "workspaceFolders": [{"uri": uri, "name": "corpus"}],
            "initializationOptions": {"lexicalOnly": model.is_none()}
        }),
    );
    client.notify("initialized", json!({}));
    client.wait_notification(|n| {
        n["method"] == "$/progress" && n["params"]["value"]["kind"] == "end"
    });
    let initial_index_s = start.elapsed().as_secs_f64();
    let status = client.result("quarry/status", json!(null));
    let folder = &status["folders"][0];

    // One untimed pass first: the first requests after indexing fault in
    // the symbol tables; their cost is reported apart.
    let (first_symbol_ms, _) = timed(&mut client, "workspace/symbol", json!({"query": "H"}));
    for name in TYPED_SYMBOLS {
        for end in 1..=name.len() {
            client.result("workspace/symbol", json!({"query": &name[..end]}));
        }
    }
    let mut symbol_times = Vec::new();
    let mut slowest: Vec<(String, f64)> = Vec::new();
    for _ in 0..3 {
        for name in TYPED_SYMBOLS {
            for end in 1..=name.len() {
                let (t, _) = timed(
                    &mut client,
                    "workspace/symbol",
                    json!({"query": &name[..end]}),
                );
                symbol_times.push(t);
                slowest.push((name[..end].to_string(), t));
            }
        }
    }
    slowest.sort_by(|a, b| b.1.total_cmp(&a.1));
    slowest.truncate(5);
    let mut search_times = Vec::new();
    for _ in 0..3 {
        for query in LEXICAL_QUERIES {
            let (t, _) = timed(
                &mut client,
                "quarry/search",
                json!({"query": query, "limit": 20}),
            );
            search_times.push(t);
        }
    }

    let mut save_times = Vec::new();
    let mut embed_times = Vec::new();
    let mut save_file_bytes = 0;
    if let Some((file, template, size)) = save_target(&root) {
        save_file_bytes = size;
        let file_uri = format!("file://{}", file.display());
        let mut text = std::fs::read_to_string(&file)?;
        for i in 0..SAVES {
            let name = format!("quarry_bench_saved_{i}");
            text.push_str(
                &template
                    .replace("{name}", &name)
                    .replace("{{", "{")
                    .replace("}}", "}"),
            );
            std::fs::write(&file, &text)?;
            let saved = Instant::now();
            client.notify(
                "textDocument/didSave",
                json!({"textDocument": {"uri": file_uri}}),
            );
            client.poll("workspace/symbol", json!({"query": name}), |r| {
                r.as_array()
                    .is_some_and(|a| a.iter().any(|s| s["name"] == name.as_str()))
            });
            save_times.push(saved.elapsed().as_secs_f64() * 1000.0);
            if model.is_some() {
                client.poll("quarry/status", json!(null), |s| {
                    let f = &s["folders"][0];
                    f["embedded"] == f["chunks"]
                });
                embed_times.push(saved.elapsed().as_secs_f64() * 1000.0);
            }
        }
    }
    let checkout = checkout(&mut client, &root, model.is_some())?;
    client.result("shutdown", json!(null));
    client.notify("exit", json!(null));
    let _ = client.child.wait();

    let symbol_times = sorted(symbol_times);
    let search_times = sorted(search_times);
    let save_times = sorted(save_times);
    let embed_times = sorted(embed_times);
    Ok(LspReport {
        corpus: corpus.display().to_string(),
        files: folder["files"].as_u64().unwrap_or(0),
        chunks: folder["chunks"].as_u64().unwrap_or(0),
        mode: status["mode"].as_str().unwrap_or("").to_string(),
        initial_index_s,
        first_symbol_ms,
        symbol_requests: symbol_times.len(),
        symbol_p50_ms: percentile(&symbol_times, 0.5),
        symbol_p99_ms: percentile(&symbol_times, 0.99),
        symbol_slowest: slowest,
        search_requests: search_times.len(),
        search_p50_ms: percentile(&search_times, 0.5),
        search_p99_ms: percentile(&search_times, 0.99),
        save_file_bytes,
        save_searchable_p50_ms: percentile(&save_times, 0.5),
        save_searchable_max_ms: save_times.last().copied().unwrap_or(0.0),
        save_embedded_p50_ms: (!embed_times.is_empty()).then(|| percentile(&embed_times, 0.5)),
        checkout,
    })
}
