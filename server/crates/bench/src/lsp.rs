//! `quarry-bench --lsp CORPUS`: the language server measured as an editor
//! sees it, over stdio: `workspace/symbol` per keystroke, `quarry/search`,
//! how long a saved edit takes to become searchable (lexically, and with
//! a model, until its one changed chunk is embedded), saves and unsaved
//! edits while a cold embedding runs, and 200 concurrent searches against
//! the same searches one at a time.
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
    /// With a model: initialize -> the first `quarry/search` whose dense
    /// branch ran (mode `hybrid`, or `partial` on the vectors so far).
    pub semantic_after_s: Option<f64>,
    /// With a model: initialize -> every chunk has a transformer vector
    /// (when the bench waits for it).
    pub transformer_complete_s: Option<f64>,
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
    /// A second server on the same workspace (a reader of the first's
    /// index): the saved function searchable in the writer -> searchable
    /// in the reader.
    pub reader_lag_p50_ms: f64,
    pub reader_lag_max_ms: f64,
    pub checkout: Checkout,
    /// With a model: edits while the first (cold) embedding runs.
    pub cold: Option<ColdEmbedding>,
    pub concurrent: Concurrent,
}

/// Saves and unsaved edits timed while the server embeds a cold workspace.
#[derive(Debug, Default, Serialize)]
pub struct ColdEmbedding {
    /// Chunks with a vector when the first and the last edit were made.
    pub embedded_before: u64,
    pub embedded_after: u64,
    pub chunks: u64,
    /// didSave -> the new function found by `workspace/symbol`.
    pub save_p50_ms: f64,
    pub save_max_ms: f64,
    /// didChange (unsaved) -> the new function found by `workspace/symbol`.
    pub edit_p50_ms: f64,
    pub edit_max_ms: f64,
    pub edits: usize,
}

/// `CONCURRENT` `quarry/search` requests sent at once, compared with the
/// same queries sent one at a time just before.
#[derive(Debug, Default, Serialize)]
pub struct Concurrent {
    pub mode: String,
    pub requests: usize,
    pub equal: usize,
    /// Requests without a dense hit although their sequential answer had one.
    pub lost_dense: usize,
    pub wall_ms: f64,
    /// The first answer that differed, and how.
    pub first_difference: Option<String>,
}

/// Requests of the concurrency check.
const CONCURRENT: usize = 200;

/// Edits and saves timed during the cold embedding.
const COLD_EDITS: usize = 10;

/// Embedding is awaited (for the hybrid-only measures) up to this many
/// chunks; a bigger corpus would take hours on two cores.
const WAIT_EMBEDDING_MAX_CHUNKS: u64 = 50_000;

fn folder_counts(status: &Value) -> (u64, u64) {
    let f = &status["folders"][0];
    (
        f["embedded"].as_u64().unwrap_or(0),
        f["chunks"].as_u64().unwrap_or(0),
    )
}

/// Appends a function to `file` `COLD_EDITS` times on disk (with didSave)
/// and as often in an open buffer (didChange only), timing each until
/// `workspace/symbol` finds it, while the first embedding runs.
fn cold_edits(client: &mut Client, file: &Path, template: &str) -> io::Result<ColdEmbedding> {
    let found = |name: &str| {
        let name = name.to_string();
        move |r: &Value| {
            r.as_array()
                .is_some_and(|a| a.iter().any(|s| s["name"] == name.as_str()))
        }
    };
    let (embedded_before, chunks) = folder_counts(&client.result("quarry/status", json!(null)));
    let file_uri = format!("file://{}", file.display());
    let mut text = std::fs::read_to_string(file)?;
    let mut saves = Vec::new();
    for i in 0..COLD_EDITS {
        let name = format!("quarry_bench_cold_save_{i}");
        text.push_str(&render(template, &name));
        std::fs::write(file, &text)?;
        let started = Instant::now();
        client.notify(
            "textDocument/didSave",
            json!({"textDocument": {"uri": file_uri}}),
        );
        client.poll("workspace/symbol", json!({"query": name}), found(&name));
        saves.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": file_uri, "languageId": "", "version": 1, "text": text}}),
    );
    let mut edits = Vec::new();
    for i in 0..COLD_EDITS {
        let name = format!("quarry_bench_cold_edit_{i}");
        let added = render(template, &name);
        // The end of the buffer, in LSP's UTF-16 columns.
        let line = text.matches('\n').count() as u32;
        let last = text.rsplit('\n').next().unwrap_or("");
        let character = last.encode_utf16().count() as u32;
        text.push_str(&added);
        let started = Instant::now();
        client.notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": file_uri, "version": i + 2},
                "contentChanges": [{"range": {"start": {"line": line, "character": character}, "end": {"line": line, "character": character}}, "text": added}]
            }),
        );
        client.poll("workspace/symbol", json!({"query": name}), found(&name));
        edits.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    // Back to the disk's text.
    std::fs::write(file, &text)?;
    client.notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": file_uri}}),
    );
    client.notify(
        "textDocument/didClose",
        json!({"textDocument": {"uri": file_uri}}),
    );
    let (embedded_after, _) = folder_counts(&client.result("quarry/status", json!(null)));
    let (saves, edits) = (sorted(saves), sorted(edits));
    Ok(ColdEmbedding {
        embedded_before,
        embedded_after,
        chunks,
        save_p50_ms: percentile(&saves, 0.5),
        save_max_ms: saves.last().copied().unwrap_or(0.0),
        edit_p50_ms: percentile(&edits, 0.5),
        edit_max_ms: edits.last().copied().unwrap_or(0.0),
        edits: COLD_EDITS,
    })
}

/// Sends `CONCURRENT` searches at once and compares each answer with the
/// same query's answer alone.
fn concurrent(client: &mut Client) -> Concurrent {
    let queries: Vec<&str> = LEXICAL_QUERIES.iter().copied().take(10).collect();
    let mut alone = Vec::new();
    let mut mode = String::new();
    for query in &queries {
        let result = client.result("quarry/search", json!({"query": query, "limit": 10}));
        mode = result["mode"].as_str().unwrap_or("").to_string();
        alone.push(result["hits"].clone());
    }
    let first = client.next_id;
    client.next_id += CONCURRENT as i64;
    let requests: Vec<Value> = (0..CONCURRENT)
        .map(|i| {
            json!({"jsonrpc": "2.0", "id": first + i as i64, "method": "quarry/search",
                   "params": {"query": queries[i % queries.len()], "limit": 10}})
        })
        .collect();
    let started = Instant::now();
    client.send_all(&requests);
    let ids: Vec<i64> = (first..first + CONCURRENT as i64).collect();
    let answers = client.responses(&ids);
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    let has_dense = |hits: &Value| {
        hits.as_array().is_some_and(|a| {
            a.iter().any(|h| {
                h["sources"]
                    .as_array()
                    .is_some_and(|s| s.contains(&json!("dense")))
            })
        })
    };
    let mut report = Concurrent {
        mode,
        requests: CONCURRENT,
        wall_ms,
        ..Concurrent::default()
    };
    for i in 0..CONCURRENT {
        let hits = &answers[&(first + i as i64)]["result"]["hits"];
        let expected = &alone[i % queries.len()];
        if hits == expected {
            report.equal += 1;
        } else if report.first_difference.is_none() {
            let names = |v: &Value| -> Vec<String> {
                v.as_array()
                    .map(|a| {
                        a.iter()
                            .map(|h| {
                                format!(
                                    "{} {:.5}",
                                    h["symbol"].as_str().unwrap_or(""),
                                    h["score"].as_f64().unwrap_or(0.0)
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default()
            };
            report.first_difference = Some(format!(
                "{:?}: alone {:?} / concurrent {:?}",
                queries[i % queries.len()],
                names(expected),
                names(hits)
            ));
        }
        if has_dense(expected) && !has_dense(hits) {
            report.lost_dense += 1;
        }
    }
    report
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
    pub symbol_p99_ms: f64,
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
    let mut files: Vec<PathBuf> = quarry_engine::walk::walk(root, None, &Default::default())
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
        symbol_p99_ms: percentile(&times, 0.99),
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
        if let Some(semantic) = self.semantic_after_s {
            let complete = self
                .transformer_complete_s
                .map_or("not waited for".to_string(), |t| format!("{t:.1} s"));
            writeln!(
                f,
                "semantic search   dense branch answers {semantic:.1} s after initialize; transformer vectors complete: {complete}"
            )?;
        }
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
        writeln!(
            f,
            "reader lag        p50 {:.1} ms, max {:.1} ms (a second server on the same workspace: searchable in the writer -> searchable in the reader, {SAVES} saves)",
            self.reader_lag_p50_ms, self.reader_lag_max_ms
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
            "checkout          {} files rewritten -> converged in {:.0} ms; workspace/symbol meanwhile p50 {:.2} ms, p99 {:.1} ms, max {:.1} ms ({} requests; target p99 <= 5 ms)",
            c.files, c.converge_ms, c.symbol_p50_ms, c.symbol_p99_ms, c.symbol_max_ms, c.symbol_requests
        )?;
        if let (Some(computed), Some(cached)) = (c.vectors_computed, c.vectors_from_cache) {
            writeln!(
                f,
                "  re-embedded     {computed} vectors computed, {cached} from the vector cache"
            )?;
        }
        if let Some(cold) = &self.cold {
            writeln!(
                f,
                "cold embedding    save -> searchable p50 {:.1} ms, max {:.1} ms; unsaved edit -> searchable p50 {:.1} ms, max {:.1} ms ({} each, while {} -> {} of {} chunks had vectors)",
                cold.save_p50_ms,
                cold.save_max_ms,
                cold.edit_p50_ms,
                cold.edit_max_ms,
                cold.edits,
                cold.embedded_before,
                cold.embedded_after,
                cold.chunks
            )?;
        }
        let c = &self.concurrent;
        writeln!(
            f,
            "concurrency       {} quarry/search at once ({}): {} equal to the answer alone, {} lost the dense branch; {:.0} ms for all",
            c.requests, c.mode, c.equal, c.lost_dense, c.wall_ms
        )?;
        if c.mode == "partial" {
            writeln!(
                f,
                "  (embedding was still running: answers may change between the runs)"
            )?;
        }
        if let Some(difference) = &c.first_difference {
            writeln!(f, "  first difference {difference}")?;
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

/// A function named `name` from one of `save_target`'s templates.
fn render(template: &str, name: &str) -> String {
    template
        .replace("{name}", name)
        .replace("{{", "{")
        .replace("}}", "}")
}

/// A file for the save benchmark (appending a function to it): the `.rs`,
/// `.py`, `.ts` or `.js` file of median size under `root`, with its size.
fn save_target(root: &Path) -> Option<(PathBuf, &'static str, u64)> {
    let mut files: Vec<(u64, PathBuf, &'static str)> = Vec::new();
    for entry in quarry_engine::walk::walk(root, None, &Default::default()).files {
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
    let exe = super::quarry_exe();
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
    // The walk's progress ends first; embedding runs after it, in its own
    // lane.
    client.wait_notification(|n| {
        n["method"] == "$/progress" && n["params"]["value"]["kind"] == "end"
    });
    let initial_index_s = start.elapsed().as_secs_f64();
    let target = save_target(&root);
    let mut cold = None;
    let (mut semantic_after_s, mut transformer_complete_s) = (None, None);
    if model.is_some() {
        client.poll(
            "quarry/search",
            json!({"query": "where are errors handled", "limit": 5}),
            |r| r["mode"] == "hybrid" || r["mode"] == "partial",
        );
        semantic_after_s = Some(start.elapsed().as_secs_f64());
        // The lane starts once the model is loaded.
        client.poll("quarry/status", json!(null), |s| {
            s["folders"][0]["embedding"] == true || folder_counts(s).0 >= folder_counts(s).1
        });
        if let Some((file, template, _)) = &target {
            cold = Some(cold_edits(&mut client, file, template)?);
        }
        let (_, chunks) = folder_counts(&client.result("quarry/status", json!(null)));
        if chunks <= WAIT_EMBEDDING_MAX_CHUNKS {
            client.poll("quarry/status", json!(null), |s| {
                let (embedded, total) = folder_counts(s);
                embedded == total && s["folders"][0]["embedding"] == false
            });
            transformer_complete_s = Some(start.elapsed().as_secs_f64());
        } else {
            eprintln!(
                "{chunks} chunks: not waiting for the embedding; hybrid-only numbers are taken on a partial index"
            );
        }
    }
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
    // A second server on the same workspace and cache: it reads the
    // first's index and must follow its commits.
    let mut reader = Client::start(&exe, &work.path().join("xdg"), None);
    reader.result(
        "initialize",
        json!({
            "processId": null,
            "rootUri": null,
            "capabilities": {},
            "workspaceFolders": [{"uri": uri, "name": "corpus"}],
            "initializationOptions": {"lexicalOnly": true}
        }),
    );
    reader.notify("initialized", json!({}));
    reader.poll("quarry/status", json!(null), |s| {
        s["folders"][0]["ready"] == true
    });
    let mut lags = Vec::new();
    if let Some((file, template, size)) = target {
        save_file_bytes = size;
        let file_uri = format!("file://{}", file.display());
        let mut text = std::fs::read_to_string(&file)?;
        for i in 0..SAVES {
            let name = format!("quarry_bench_saved_{i}");
            text.push_str(&render(template, &name));
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
            let committed = Instant::now();
            reader.poll("workspace/symbol", json!({"query": name}), |r| {
                r.as_array()
                    .is_some_and(|a| a.iter().any(|s| s["name"] == name.as_str()))
            });
            lags.push(committed.elapsed().as_secs_f64() * 1000.0);
            if model.is_some() && folder_counts(&status).1 <= WAIT_EMBEDDING_MAX_CHUNKS {
                client.poll("quarry/status", json!(null), |s| {
                    let f = &s["folders"][0];
                    f["embedded"] == f["chunks"]
                });
                embed_times.push(saved.elapsed().as_secs_f64() * 1000.0);
            }
        }
    }
    let concurrent = concurrent(&mut client);
    let checkout = checkout(
        &mut client,
        &root,
        model.is_some() && folder_counts(&status).1 <= WAIT_EMBEDDING_MAX_CHUNKS,
    )?;
    client.result("shutdown", json!(null));
    client.notify("exit", json!(null));
    let _ = client.child.wait();
    reader.result("shutdown", json!(null));
    reader.notify("exit", json!(null));
    let _ = reader.child.wait();
    let lags = sorted(lags);

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
        semantic_after_s,
        transformer_complete_s,
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
        reader_lag_p50_ms: percentile(&lags, 0.5),
        reader_lag_max_ms: lags.last().copied().unwrap_or(0.0),
        checkout,
        cold,
        concurrent,
    })
}
