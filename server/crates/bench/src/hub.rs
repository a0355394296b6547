//! `quarry-bench --hub URL [CORPUS]`: the shared hub beside the local
//! index on one corpus, in one run. Every folder directly under the corpus
//! is pushed as its own repository (the cargo registry: one per crate);
//! the same queries are then timed across all repositories of the hub and
//! on one local index of the whole corpus.
//!
//! Never: write into the corpus (the incremental push edits a copy).

use super::{copy_tree, ms, percentile};
use quarry_engine::dense::DenseEngine;
use quarry_engine::engine::Tiers;
use quarry_engine::hub::{self, Hub, HubError, RepoScope};
use quarry_engine::index::{Index, IndexConfig};
use quarry_engine::search::{DiskText, SearchOptions};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

#[derive(Debug, Serialize)]
pub struct HubBenchReport {
    pub repos: usize,
    pub files: u64,
    pub chunks: u64,
    pub terms: u64,
    pub push_s: f64,
    /// `VACUUM (ANALYZE)` of the hub's tables after the push.
    pub vacuum_s: f64,
    pub chunks_per_s: f64,
    /// Chunk and term rows written per second.
    pub rows_per_s: f64,
    pub hub_bytes: i64,
    pub hub_bytes_per_chunk: f64,
    /// Push of a one-file change (of a copy of the first repository).
    pub incremental_push_ms: f64,
    pub incremental_files_changed: u64,
    pub queries: Vec<QueryRow>,
}

#[derive(Debug, Serialize)]
pub struct QueryRow {
    pub class: &'static str,
    pub n: usize,
    pub hub_p50_ms: f64,
    pub hub_p99_ms: f64,
    pub local_p50_ms: f64,
    pub local_p99_ms: f64,
}

/// Questions in words, for the natural-language and hybrid rows.
const QUESTIONS: [&str; 12] = [
    "parse a configuration file",
    "retry a failed request with backoff",
    "serialize a struct to json",
    "read bytes from a buffer",
    "spawn a thread pool worker",
    "compare two strings ignoring case",
    "format an error message",
    "hash map with custom hasher",
    "iterate over lines of a file",
    "convert a number to a string",
    "lock a mutex and wait on a condition",
    "encode base64",
];

fn io(what: &str, e: impl std::fmt::Display) -> HubError {
    HubError::Invalid(format!("{what}: {e}"))
}

fn repos_of(corpus: &Path) -> Result<Vec<PathBuf>, HubError> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(corpus)
        .map_err(|e| io("reading the corpus", e))?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    dirs.sort();
    Ok(dirs)
}

fn open_index(root: &Path, cache: &Path) -> Result<Index, HubError> {
    let index = Index::open(IndexConfig {
        cache_dir: Some(cache.to_path_buf()),
        ..IndexConfig::new(root)
    })?;
    index.refresh(&|_| {})?;
    Ok(index)
}

fn row(class: &'static str, mut hub: Vec<f64>, mut local: Vec<f64>) -> QueryRow {
    hub.sort_by(f64::total_cmp);
    local.sort_by(f64::total_cmp);
    QueryRow {
        class,
        n: hub.len(),
        hub_p50_ms: percentile(&hub, 0.5),
        hub_p99_ms: percentile(&hub, 0.99),
        local_p50_ms: percentile(&local, 0.5),
        local_p99_ms: percentile(&local, 0.99),
    }
}

/// Pushes every repository of `corpus` (vectors when `dense` has a
/// model), then times `rounds` rounds of each query class.
pub fn run(
    url: &str,
    corpus: &Path,
    dense: &Arc<DenseEngine>,
    rounds: usize,
) -> Result<HubBenchReport, HubError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| io("starting the async runtime", e))?;
    let work = tempfile::tempdir().map_err(|e| io("a scratch folder", e))?;
    let mut hub = rt.block_on(Hub::connect(url))?;
    let repos = repos_of(corpus)?;
    let (mut files, mut chunks, mut terms) = (0, 0, 0);
    let started = Instant::now();
    for (i, root) in repos.iter().enumerate() {
        let name = root
            .file_name()
            .map_or_else(|| format!("repo{i}"), |n| n.to_string_lossy().into_owned());
        let index = open_index(root, &work.path().join(format!("cache{i}")))?;
        let stats = rt.block_on(hub::push(&mut hub, &name, "bench", &index, dense))?;
        files += stats.files;
        chunks += stats.chunks_written;
        terms += stats.terms_written;
    }
    let push_s = started.elapsed().as_secs_f64();
    // Queries are timed on the hub as autovacuum leaves it after a bulk
    // push (visibility map set, statistics current), not before.
    let vacuum_at = Instant::now();
    rt.block_on(hub.vacuum())?;
    let vacuum_s = vacuum_at.elapsed().as_secs_f64();
    let hub_bytes = rt.block_on(hub.size_bytes())?;

    // One file of a copy of the first repository changes.
    let (incremental_push_ms, incremental_files_changed) = match repos.first() {
        Some(first) => {
            let copy = work.path().join("edited");
            copy_tree(first, &copy).map_err(|e| io("copying a repository", e))?;
            let index = open_index(&copy, &work.path().join("cache-edited"))?;
            rt.block_on(hub::push(&mut hub, "bench-edited", "a", &index, dense))?;
            let file = index
                .snapshot()
                .live_chunks()
                .next()
                .map(|(segment, chunk)| copy.join(segment.path_of(chunk)));
            if let Some(file) = file {
                let mut text = std::fs::read_to_string(&file).unwrap_or_default();
                text.push_str("\n// edited by quarry bench\n");
                std::fs::write(&file, text).map_err(|e| io("editing a copy", e))?;
            }
            index.refresh(&|_| {})?;
            // The model and the machine-wide vector cache open on first
            // use: when every push above found its files unchanged, neither
            // is open yet, and opening them (the cache holds every vector
            // this machine computed) is not what a one-file push costs.
            let _ = dense.embed_query("warm up");
            let _ = dense.cached_vectors(&[]);
            let at = Instant::now();
            let stats = rt.block_on(hub::push(&mut hub, "bench-edited", "b", &index, dense))?;
            (ms(at), stats.files_changed)
        }
        None => (0.0, 0),
    };

    // The local index of the whole corpus, for the same queries.
    let local = open_index(corpus, &work.path().join("cache-all"))?;
    let model = dense.unavailable().is_none();
    if model {
        local.attach_dense(dense)?;
        local.embed_pending(dense, &[], None, &|_| {})?;
    }
    let snapshot = local.snapshot();
    let names: Vec<String> = snapshot
        .live_chunks()
        .filter(|(_, c)| c.kind != quarry_engine::chunk::ChunkKind::Lines && c.name.len() >= 6)
        .step_by(997)
        .take(40)
        .map(|(_, c)| c.name.to_string())
        .collect();
    let scope = RepoScope::default();
    let time = |queries: &[String], hybrid: bool| {
        let options = SearchOptions::default();
        let engine = hybrid.then_some(&**dense);
        let tiers = if hybrid {
            Tiers::new(Some(dense.clone()), None)
        } else {
            Tiers::default()
        };
        let (mut hub_ms, mut local_ms) = (Vec::new(), Vec::new());
        for _ in 0..rounds.max(1) {
            for query in queries {
                let at = Instant::now();
                let _ = rt.block_on(hub::search(
                    std::slice::from_ref(&hub),
                    &scope,
                    query,
                    &options,
                    engine,
                    None,
                ));
                hub_ms.push(ms(at));
                let at = Instant::now();
                let mut text = DiskText::of(&local);
                let _ = tiers.search(&snapshot, query, &options, &mut text);
                local_ms.push(ms(at));
            }
        }
        (hub_ms, local_ms)
    };
    let questions: Vec<String> = QUESTIONS.iter().map(|q| q.to_string()).collect();
    let mut rows = Vec::new();
    let (h, l) = time(&names, false);
    rows.push(row("identifier (lexical)", h, l));
    let (h, l) = time(&questions, false);
    rows.push(row("natural language (lexical)", h, l));
    if model {
        let (h, l) = time(&names, true);
        rows.push(row("identifier (hybrid)", h, l));
        let (h, l) = time(&questions, true);
        rows.push(row("natural language (hybrid)", h, l));
    }
    Ok(HubBenchReport {
        repos: repos.len(),
        files,
        chunks,
        terms,
        push_s,
        vacuum_s,
        chunks_per_s: chunks as f64 / push_s.max(1e-9),
        rows_per_s: (chunks + terms) as f64 / push_s.max(1e-9),
        hub_bytes,
        hub_bytes_per_chunk: hub_bytes as f64 / chunks.max(1) as f64,
        incremental_push_ms,
        incremental_files_changed,
        queries: rows,
    })
}
