//! `quarry-bench`'s harness: indexing and query numbers on a real corpus.
//!
//! Copies the corpus to a temporary directory (so the one-file edit never
//! touches the original), indexes it cold into a fresh cache, re-opens it,
//! edits one file and times the incremental update, then times fixed
//! lexical and symbol query lists. Prints numbers; asserts nothing.
//! Never: run as part of the test suite's pass/fail decisions.

pub mod hub;
pub mod lsp;
pub mod lsp_client;
pub mod quality;

use quarry_encoder::embed::Precision;
use quarry_engine::index::{Index, IndexConfig};
use quarry_engine::search::{find_symbols, search, DiskText, SearchOptions};
use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Lexical queries: identifiers, qualified names, natural language, phrases.
pub const LEXICAL_QUERIES: &[&str] = &[
    "HashMap",
    "parse",
    "Error",
    "fn new",
    "serialize struct fields",
    "read file to string",
    "thread pool worker",
    "spawn blocking task",
    "\"mutex poisoned\"",
    "\"invalid utf-8\"",
    "Iterator::next",
    "Vec::with_capacity",
    "from_str_radix",
    "impl Display for error",
    "query cursor captures",
    "hash bytes into digest",
    "atomic compare exchange weak",
    "encode varint",
    "deserialize map visitor",
    "where do we retry failed requests",
    "progress bar template",
    "regex match captures",
    "lock file advisory",
    "walk directory ignore gitignore",
    "GraphStore::lookup",
    "unsafe pointer cast",
    "buffer capacity overflow",
    "blake3 hasher update",
    "CString::new",
    "allocate aligned memory",
];

/// Identifiers searched by the CLI comparison with ripgrep.
pub const CLI_QUERIES: &[&str] = &[
    "HashMap",
    "from_str_radix",
    "with_capacity",
    "read_to_string",
    "ParseError",
    "spawn_blocking",
    "CString",
    "compare_exchange_weak",
];

/// The `quarry` binary the harness drives: `$QUARRY_BIN`, else the one
/// beside this executable (`cargo build --release` puts both in
/// `target/release`), else `quarry` on the `PATH`.
pub fn quarry_exe() -> PathBuf {
    if let Some(bin) = std::env::var_os("QUARRY_BIN") {
        return PathBuf::from(bin);
    }
    std::env::current_exe()
        .ok()
        .and_then(|me| Some(me.parent()?.join("quarry")))
        .filter(|sibling| sibling.is_file())
        .unwrap_or_else(|| PathBuf::from("quarry"))
}

/// Wall time of one process, in milliseconds; `None` if it cannot start.
fn process_ms(program: &Path, args: &[&std::ffi::OsStr], dir: &Path) -> Option<f64> {
    let start = Instant::now();
    let status = std::process::Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .ok()?;
    // rg exits 1 when nothing matched: still a search.
    (status.code().is_some()).then(|| ms(start))
}

/// `quarry search --lexical` per process against `rg -n -w`, same
/// identifiers, same tree (the index already built and saved).
fn cli_against_rg(root: &Path, cache_dir: &Path, rounds: usize) -> (f64, Option<f64>) {
    let quarry = Some(quarry_exe());
    let rg = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("rg"))
            .find(|p| p.is_file())
    });
    let (mut cli, mut grep) = (Vec::new(), Vec::new());
    for _ in 0..rounds.clamp(1, 3) {
        for query in CLI_QUERIES {
            if let Some(quarry) = &quarry {
                let args: Vec<&std::ffi::OsStr> = vec![
                    "search".as_ref(),
                    "--lexical".as_ref(),
                    "--cache-dir".as_ref(),
                    cache_dir.as_os_str(),
                    "--root".as_ref(),
                    root.as_os_str(),
                    "--".as_ref(),
                    query.as_ref(),
                ];
                cli.extend(process_ms(quarry, &args, root));
            }
            if let Some(rg) = &rg {
                let args: Vec<&std::ffi::OsStr> =
                    vec!["-n".as_ref(), "-w".as_ref(), query.as_ref(), ".".as_ref()];
                grep.extend(process_ms(rg, &args, root));
            }
        }
    }
    cli.sort_by(f64::total_cmp);
    grep.sort_by(f64::total_cmp);
    (
        percentile(&cli, 0.5),
        (!grep.is_empty()).then(|| percentile(&grep, 0.5)),
    )
}

/// Symbol queries of several lengths and shapes.
pub const SYMBOL_QUERIES: &[&str] = &[
    "n",
    "new",
    "parse",
    "Hash",
    "se",
    "de",
    "from_str",
    "Vec::push",
    "HashMap::insert",
    "spawn",
    "rd",
    "x",
    "wr",
    "iter",
    "ParseError",
    "tokio",
    "gsl",
    "read_to_string",
    "Deserialize",
    "ThreadPool",
    "cmp",
    "fmt",
    "Display::fmt",
    "with_capacity",
    "MAX",
];

#[derive(Debug, Serialize)]
pub struct BenchReport {
    pub corpus: String,
    pub files: u64,
    pub lines: u64,
    pub bytes: u64,
    pub chunks: u64,
    pub cold_index_s: f64,
    pub lines_per_s: f64,
    pub reopen_ms: f64,
    pub update_one_file_ms: f64,
    pub refresh_one_file_ms: f64,
    pub noop_refresh_ms: f64,
    /// Lexical queries after one untimed round over the same queries.
    pub lexical_p50_ms: f64,
    pub lexical_p99_ms: f64,
    /// That first round, right after the index is built.
    pub lexical_cold_p50_ms: f64,
    pub symbol_p50_ms: f64,
    pub symbol_p99_ms: f64,
    pub peak_rss_mb: f64,
    pub index_mb: f64,
    pub segments: u64,
    /// `quarry search --lexical` as a new process per query (open the
    /// index, check for changes, search), p50 over CLI_QUERIES.
    pub cli_p50_ms: f64,
    /// `rg -n -w` for the same identifiers (no index), p50; `None` without
    /// ripgrep on PATH.
    pub rg_p50_ms: Option<f64>,
    /// Rust definitions found without re-parsing item-level macro bodies.
    pub rust_definitions_plain: u64,
    /// Rust definitions found with the re-parse (what the index holds).
    pub rust_definitions_with_macros: u64,
}

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "corpus            {}", self.corpus)?;
        writeln!(
            f,
            "files/lines       {} files, {} lines, {:.1} MB, {} chunks",
            self.files,
            self.lines,
            self.bytes as f64 / 1e6,
            self.chunks
        )?;
        writeln!(
            f,
            "cold index        {:.2} s = {:.0} lines/s ({} segments)",
            self.cold_index_s, self.lines_per_s, self.segments
        )?;
        writeln!(f, "reopen from cache {:.1} ms", self.reopen_ms)?;
        writeln!(
            f,
            "one-file update   {:.2} ms (targeted), {:.1} ms (full walk), no-op walk {:.1} ms",
            self.update_one_file_ms, self.refresh_one_file_ms, self.noop_refresh_ms
        )?;
        writeln!(
            f,
            "lexical query     p50 {:.3} ms, p99 {:.3} ms (first round, cold: p50 {:.3} ms)",
            self.lexical_p50_ms, self.lexical_p99_ms, self.lexical_cold_p50_ms
        )?;
        writeln!(
            f,
            "symbol query      p50 {:.3} ms, p99 {:.3} ms",
            self.symbol_p50_ms, self.symbol_p99_ms
        )?;
        match self.rg_p50_ms {
            Some(rg) => writeln!(
                f,
                "cli search        p50 {:.1} ms per `quarry search --lexical` process against `rg -n -w` p50 {rg:.1} ms ({:.1}x; target <= 1.5x)",
                self.cli_p50_ms,
                self.cli_p50_ms / rg.max(1e-9)
            )?,
            None => writeln!(
                f,
                "cli search        p50 {:.1} ms per `quarry search --lexical` process (no rg on PATH to compare)",
                self.cli_p50_ms
            )?,
        }
        writeln!(
            f,
            "peak RSS          {:.0} MB; index on disk {:.1} MB",
            self.peak_rss_mb, self.index_mb
        )?;
        write!(
            f,
            "rust definitions  {} plain, {} with macro bodies re-parsed (+{})",
            self.rust_definitions_plain,
            self.rust_definitions_with_macros,
            self.rust_definitions_with_macros
                .saturating_sub(self.rust_definitions_plain)
        )
    }
}

/// The project directory plus every registry source directory in
/// `$CARGO_HOME/registry/src` (`~/.cargo` by default).
pub fn default_corpus() -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from(".")];
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    if let Some(cargo_home) = cargo_home {
        if let Ok(entries) = std::fs::read_dir(cargo_home.join("registry").join("src")) {
            let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            dirs.sort();
            out.extend(dirs);
        }
    }
    out
}

pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[idx]
}

fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Copies regular files under `src` to `dst`, skipping `.git`, `target`
/// and symlinks. Returns the number of bytes copied.
pub(crate) fn copy_tree(src: &Path, dst: &Path) -> std::io::Result<u64> {
    std::fs::create_dir_all(dst)?;
    let mut bytes = 0;
    for entry in std::fs::read_dir(src)? {
        let entry = entry?;
        let file_type = entry.file_type()?;
        let name = entry.file_name();
        let target = dst.join(&name);
        if file_type.is_dir() {
            if name == ".git" || name == "target" {
                continue;
            }
            bytes += copy_tree(&entry.path(), &target)?;
        } else if file_type.is_file() {
            bytes += std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(bytes)
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// `options` are the search options timed (the defaults, or with knobs set
/// by `quarry-bench --rank`).
pub fn run(corpus: &Path, rounds: usize, options: &SearchOptions) -> std::io::Result<BenchReport> {
    let work = tempfile::tempdir()?;
    let root = work.path().join("corpus");
    copy_tree(corpus, &root)?;
    let cache_dir = work.path().join("cache");
    let config = IndexConfig {
        cache_dir: Some(cache_dir.clone()),
        ..IndexConfig::new(&root)
    };
    let to_io = |e: quarry_engine::index::IndexError| std::io::Error::other(e.to_string());

    let start = Instant::now();
    let index = Index::open(config.clone()).map_err(to_io)?;
    index.refresh(&|_| {}).map_err(to_io)?;
    let cold_index_s = start.elapsed().as_secs_f64();
    let snapshot = index.snapshot();

    // Size of what was indexed (outside the timed part).
    let mut lines = 0u64;
    let mut bytes = 0u64;
    let mut paths: Vec<&str> = Vec::new();
    let mut seen = rustc_hash::FxHashSet::default();
    for (segment, chunk) in snapshot.live_chunks() {
        let path = segment.path_of(chunk);
        if seen.insert(path) {
            paths.push(path);
        }
    }
    let mut rust_files: Vec<(u64, &str)> = Vec::new();
    for path in &paths {
        if let Ok(text) = std::fs::read(root.join(path)) {
            lines += text.iter().filter(|b| **b == b'\n').count() as u64;
            bytes += text.len() as u64;
            if path.ends_with(".rs") {
                rust_files.push((text.len() as u64, path));
            }
        }
    }
    rust_files.sort();
    let edited = rust_files
        .get(rust_files.len() / 2)
        .map(|(_, p)| root.join(p))
        .or_else(|| paths.first().map(|p| root.join(p)));
    drop(index);

    let start = Instant::now();
    let index = Index::open(config).map_err(to_io)?;
    let reopen_ms = ms(start);

    let start = Instant::now();
    index.refresh(&|_| {}).map_err(to_io)?;
    let noop_refresh_ms = ms(start);

    let mut update_times = Vec::new();
    let mut refresh_times = Vec::new();
    if let Some(edited) = &edited {
        let original = std::fs::read_to_string(edited).unwrap_or_default();
        for i in 0..5 {
            std::fs::write(
                edited,
                format!("{original}\nfn quarry_bench_edit_{i}() {{ let x = {i}; }}\n"),
            )?;
            let start = Instant::now();
            index
                .update_paths(std::slice::from_ref(edited))
                .map_err(to_io)?;
            update_times.push(ms(start));
            std::fs::write(
                edited,
                format!("{original}\nfn quarry_bench_refresh_{i}() {{ let y = {i}; }}\n"),
            )?;
            let start = Instant::now();
            index.refresh(&|_| {}).map_err(to_io)?;
            refresh_times.push(ms(start));
        }
    }
    update_times.sort_by(f64::total_cmp);
    refresh_times.sort_by(f64::total_cmp);

    let snapshot = index.snapshot();
    let mut lexical = Vec::new();
    let mut symbol = Vec::new();
    let mut text = DiskText::of(&index);
    // The first round meets a cold index (its postings not yet in the CPU
    // caches or faulted in since the build): timed apart, as what the
    // first queries after a start see; the percentiles are the steady
    // state of the rounds after it, what an editor session sees.
    let mut lexical_cold = Vec::new();
    for query in LEXICAL_QUERIES {
        let start = Instant::now();
        std::hint::black_box(search(&snapshot, query, options, &mut text));
        lexical_cold.push(ms(start));
    }
    lexical_cold.sort_by(f64::total_cmp);
    for _ in 0..rounds.max(1) {
        for query in LEXICAL_QUERIES {
            let start = Instant::now();
            let results = search(&snapshot, query, options, &mut text);
            std::hint::black_box(results);
            lexical.push(ms(start));
        }
        for query in SYMBOL_QUERIES {
            let start = Instant::now();
            let hits = find_symbols(&snapshot, query, None, 50);
            std::hint::black_box(hits);
            symbol.push(ms(start));
        }
    }
    lexical.sort_by(f64::total_cmp);
    symbol.sort_by(f64::total_cmp);
    let peak_rss_mb = peak_rss_mb();
    // The CLI in a new process per query needs the writer lock free.
    drop(index);
    let (cli_p50_ms, rg_p50_ms) = cli_against_rg(&root, &cache_dir, rounds);

    // Macro re-parse coverage over the corpus's Rust files (untimed).
    let (mut rust_definitions_plain, mut rust_definitions_with_macros) = (0u64, 0u64);
    let count = |chunks: Vec<quarry_engine::chunk::Chunk>| {
        chunks.iter().filter(|c| c.kind.is_definition()).count() as u64
    };
    for (_, path) in &rust_files {
        let Ok(bytes) = std::fs::read(root.join(path)) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        let language = quarry_engine::chunk::Language::Rust;
        rust_definitions_plain += count(quarry_engine::chunk::chunk_file_without_macros(
            path, &text, language,
        ));
        rust_definitions_with_macros +=
            count(quarry_engine::chunk::chunk_file(path, &text, language));
    }

    Ok(BenchReport {
        corpus: std::fs::canonicalize(corpus)
            .unwrap_or_else(|_| corpus.to_path_buf())
            .display()
            .to_string(),
        files: snapshot.summary.files_indexed,
        lines,
        bytes,
        chunks: snapshot.summary.chunks,
        cold_index_s,
        lines_per_s: lines as f64 / cold_index_s.max(1e-9),
        reopen_ms,
        update_one_file_ms: percentile(&update_times, 0.5),
        refresh_one_file_ms: percentile(&refresh_times, 0.5),
        noop_refresh_ms,
        lexical_p50_ms: percentile(&lexical, 0.5),
        lexical_p99_ms: percentile(&lexical, 0.99),
        lexical_cold_p50_ms: percentile(&lexical_cold, 0.5),
        symbol_p50_ms: percentile(&symbol, 0.5),
        symbol_p99_ms: percentile(&symbol, 0.99),
        peak_rss_mb,
        index_mb: dir_size(&cache_dir) as f64 / 1e6,
        segments: snapshot.summary.segments,
        cli_p50_ms,
        rg_p50_ms,
        rust_definitions_plain,
        rust_definitions_with_macros,
    })
}

/// One embedding throughput measurement.
#[derive(Debug, Serialize)]
pub struct Throughput {
    pub precision: &'static str,
    pub threads: usize,
    pub budget: usize,
    pub chunks_per_s: f64,
}

/// Dense-branch numbers: embedding throughput, cold hybrid indexing,
/// re-embedding after an edit, hybrid query latency, memory per vector.
#[derive(Debug, Serialize)]
pub struct DenseReport {
    pub corpus: String,
    pub model: String,
    pub chunks: u64,
    /// Chunks/s at batch 32 per precision, threads and token budget.
    pub throughput: Vec<Throughput>,
    pub query_embed_p50_ms: f64,
    pub cold_hybrid_index_s: f64,
    pub cold_embed_chunks_per_s: f64,
    /// Cold lexical index plus the static tier's vectors for every chunk:
    /// the time until every chunk is semantically searchable.
    pub static_coverage_s: f64,
    pub static_chunks_per_s: f64,
    /// Loading (or, the first time, distilling) the static tier.
    pub static_load_s: f64,
    /// Chunks with a transformer vector 20 s after the cold start: the
    /// default (transformer from the start) and with the static tier's
    /// pass first (`staticTier`).
    pub transformer_at_20s: u64,
    pub transformer_at_20s_after_static: u64,
    pub reembedded_after_one_function_edit: u64,
    pub hybrid_p50_ms: f64,
    pub hybrid_p99_ms: f64,
    pub hybrid_uncached_p50_ms: f64,
    pub hybrid_uncached_p99_ms: f64,
    pub lexical_p50_ms: f64,
    pub bytes_per_vector: f64,
    /// Recall@10 of the HNSW index against exact f32 search, per scalar
    /// kind, with the saved size and the insert time per vector.
    pub quantization: Vec<QuantizationRow>,
}

/// One scalar kind of the HNSW index over the corpus's vectors.
#[derive(Debug, Clone, serde::Serialize)]
pub struct QuantizationRow {
    pub kind: &'static str,
    /// Recall@10 against exact f32 search.
    pub recall: f64,
    /// Saved bytes per vector (vector and graph links).
    pub bytes: f64,
    /// Milliseconds per vector inserted, one thread.
    pub insert_ms: f64,
}

impl fmt::Display for DenseReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "dense corpus      {} ({} chunks), model {}",
            self.corpus, self.chunks, self.model
        )?;
        for t in &self.throughput {
            writeln!(
                f,
                "embedding         {:.1} chunks/s ({}, {} thread(s), {}-token budget, batch 32)",
                t.chunks_per_s, t.precision, t.threads, t.budget
            )?;
        }
        writeln!(f, "query embedding   p50 {:.1} ms", self.query_embed_p50_ms)?;
        writeln!(
            f,
            "cold hybrid index {:.1} s ({:.1} chunks/s embedded)",
            self.cold_hybrid_index_s, self.cold_embed_chunks_per_s
        )?;
        writeln!(
            f,
            "semantic coverage every chunk in {:.1} s with the static tier ({:.0} chunks/s; tier loaded in {:.1} s) against {:.1} s transformer-only",
            self.static_coverage_s,
            self.static_chunks_per_s,
            self.static_load_s,
            self.cold_hybrid_index_s
        )?;
        let share = |n: u64| 100.0 * n as f64 / self.chunks.max(1) as f64;
        writeln!(
            f,
            "at 20 s            {} of {} chunks ({:.0}%) have transformer vectors; {} ({:.0}%) with the static tier's pass first",
            self.transformer_at_20s,
            self.chunks,
            share(self.transformer_at_20s),
            self.transformer_at_20s_after_static,
            share(self.transformer_at_20s_after_static)
        )?;
        writeln!(
            f,
            "one-function edit {} chunk(s) re-embedded",
            self.reembedded_after_one_function_edit
        )?;
        writeln!(
            f,
            "hybrid query      p50 {:.2} ms, p99 {:.2} ms (new queries: p50 {:.2} ms, p99 {:.2} ms); lexical-only p50 {:.2} ms",
            self.hybrid_p50_ms,
            self.hybrid_p99_ms,
            self.hybrid_uncached_p50_ms,
            self.hybrid_uncached_p99_ms,
            self.lexical_p50_ms
        )?;
        writeln!(
            f,
            "bytes per vector  {:.0} (bf16 vector + HNSW links, as saved)",
            self.bytes_per_vector
        )?;
        for row in &self.quantization {
            writeln!(
                f,
                "scalars {:<9} recall@10 vs exact f32 {:.3}, {:.0} bytes per vector, insert {:.3} ms per vector",
                row.kind, row.recall, row.bytes, row.insert_ms
            )?;
        }
        Ok(())
    }
}

/// Runs the dense benchmark on `corpus` with a cold vector cache.
pub fn run_dense(
    corpus: &Path,
    rounds: usize,
    model: Option<PathBuf>,
) -> std::io::Result<DenseReport> {
    use quarry_engine::dense::{DenseConfig, DenseEngine};
    use quarry_engine::index::chunk_text;
    use quarry_engine::search::search_with;
    let to_io = |e: quarry_engine::index::IndexError| std::io::Error::other(e.to_string());
    let work = tempfile::tempdir()?;
    let root = work.path().join("corpus");
    copy_tree(corpus, &root)?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let engine_at = |threads: usize, budget: usize, precision: Option<Precision>| {
        DenseEngine::load(DenseConfig {
            model_dir: model.clone(),
            threads: Some(threads),
            token_budget: budget,
            cache_dir: Some(work.path().join("vectors")),
            precision,
            ..DenseConfig::default()
        })
    };
    let engine_with = |threads: usize, budget: usize| engine_at(threads, budget, None);
    let engine = engine_with(cores, 128);
    if let Some(reason) = engine.unavailable_reason() {
        return Err(std::io::Error::other(format!(
            "no embedding model: {reason}"
        )));
    }
    let config = IndexConfig {
        cache_dir: Some(work.path().join("cache")),
        ..IndexConfig::new(&root)
    };

    // The static tier, distilled from the same model (once per model; a
    // later load reads its file).
    let load_start = Instant::now();
    let fast = engine
        .static_from()
        .filter(|f| f.unavailable().is_none())
        .ok_or_else(|| std::io::Error::other("no static tier"))?;
    let static_load_s = load_start.elapsed().as_secs_f64();

    // A cold lexical index in a fresh cache, and when its timing started.
    let cold_index = || -> std::io::Result<(Index, Instant)> {
        let _ = std::fs::remove_dir_all(work.path().join("cache"));
        let start = Instant::now();
        let index = Index::open(config.clone()).map_err(to_io)?;
        index.refresh(&|_| {}).map_err(to_io)?;
        Ok((index, start))
    };

    // As `quarry index` and the server's embedding lane do while they
    // embed.
    let held = quarry_engine::memory::HeldFreedMemory::new();
    // Cold index with the static tier: lexical, then every chunk's static
    // vector: from here on every chunk is semantically searchable.
    let (index, start) = cold_index()?;
    let static_start = Instant::now();
    let fast_stats = index
        .embed_pending(&fast, &[], None, &|_| {})
        .map_err(to_io)?;
    let static_coverage_s = start.elapsed().as_secs_f64();
    let static_chunks_per_s = fast_stats.computed as f64 / static_start.elapsed().as_secs_f64();
    // The transformer behind it, as the server does with `staticTier`,
    // until 20 s have passed since the cold start; an engine with a vector
    // cache of its own, so that nothing it embeds reaches the
    // transformer-only run below.
    let behind = DenseEngine::load(DenseConfig {
        model_dir: model.clone(),
        threads: Some(cores),
        cache_dir: Some(work.path().join("vectors-behind-static")),
        ..DenseConfig::default()
    });
    let transformer_at_20s_after_static = embed_until(&index, &behind, start, 20.0)?;
    drop((index, behind));

    // Cold hybrid index, transformer only: lexical, then every chunk
    // embedded.
    let (index, start) = cold_index()?;
    let embed_start = Instant::now();
    let at_20s = AtomicU64::new(0);
    let embedded = index
        .embed_pending(&engine, &[], None, &|p| {
            if start.elapsed().as_secs_f64() <= 20.0 {
                at_20s.store(p.done, Ordering::Relaxed);
            }
        })
        .map_err(to_io)?;
    let cold_hybrid_index_s = start.elapsed().as_secs_f64();
    let transformer_at_20s = if cold_hybrid_index_s <= 20.0 {
        embedded.embedded
    } else {
        at_20s.load(Ordering::Relaxed)
    };
    let cold_embed_chunks_per_s = embedded.computed as f64 / embed_start.elapsed().as_secs_f64();
    drop(held);
    let snapshot = index.snapshot();

    // Throughput on real chunk texts, bypassing the cache.
    let mut samples = Vec::new();
    for (segment, chunk) in snapshot.live_chunks().take(4096) {
        if samples.len() >= 128 {
            break;
        }
        let Some(position) = segment.position(chunk.chunk_id) else {
            continue;
        };
        if let Ok(file) = std::fs::read_to_string(root.join(segment.path_of(chunk))) {
            samples.push((segment, position, file));
        }
    }
    let mut throughput = Vec::new();
    // f32 beside int8 at the 128-token budget (int8 only where the CPU
    // multiplies it natively), then the default precision at 256.
    let mut configs = vec![(Precision::F32, 128)];
    if Precision::native() == Precision::Int8 {
        configs.push((Precision::Int8, 128));
    }
    configs.push((Precision::native(), 256));
    for (precision, budget) in configs {
        for threads in [1, 2] {
            let engine = engine_at(threads, budget, Some(precision));
            let Some(embedder) = engine.embedder() else {
                continue;
            };
            let mut texts: Vec<String> = samples
                .iter()
                .map(|(segment, position, file)| chunk_text(segment, *position, file, budget).text)
                .collect();
            // As the pipeline does: batches of similar length pad little.
            texts.sort_by_key(String::len);
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let start = Instant::now();
            for batch in refs.chunks(32) {
                let _ = embedder.embed(batch);
            }
            throughput.push(Throughput {
                precision: precision.name(),
                threads,
                budget,
                chunks_per_s: refs.len() as f64 / start.elapsed().as_secs_f64(),
            });
        }
    }

    // Query embedding latency (no cache).
    let mut query_times = Vec::new();
    if let Some(embedder) = engine.embedder() {
        for query in LEXICAL_QUERIES {
            let start = Instant::now();
            let _ = embedder.embed(&[query]);
            query_times.push(ms(start));
        }
    }
    query_times.sort_by(f64::total_cmp);

    // Hybrid query latency: first time (embeds the query) and repeated.
    let fresh = engine_with(cores.saturating_sub(1).max(1), 128);
    let options = SearchOptions::default();
    let mut text = DiskText::of(&index);
    let (mut uncached, mut cached, mut lexical) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds.max(2) {
        for query in LEXICAL_QUERIES {
            let start = Instant::now();
            std::hint::black_box(search_with(
                &snapshot,
                query,
                &options,
                &mut text,
                Some(&fresh),
            ));
            if round == 0 {
                uncached.push(ms(start));
            } else {
                cached.push(ms(start));
            }
            let start = Instant::now();
            std::hint::black_box(search(&snapshot, query, &options, &mut text));
            lexical.push(ms(start));
        }
    }
    for list in [&mut uncached, &mut cached, &mut lexical] {
        list.sort_by(f64::total_cmp);
    }

    // One function edited: how many chunks need a new vector?
    let mut reembedded = 0;
    let target = snapshot.live_chunks().find(|(segment, chunk)| {
        chunk.kind == quarry_engine::chunk::ChunkKind::Function
            && segment.path_of(chunk).ends_with(".rs")
    });
    if let Some((segment, chunk)) = target {
        let path = root.join(segment.path_of(chunk));
        let source = std::fs::read_to_string(&path)?;
        let body = source
            .get(chunk.byte_start as usize..chunk.byte_end as usize)
            .unwrap_or("");
        if let Some(open) = body.find('{') {
            let at = chunk.byte_start as usize + open + 1;
            let edited = format!(
                "{}\n    let _quarry_bench_edit = 1;{}",
                &source[..at],
                &source[at..]
            );
            std::fs::write(&path, edited)?;
            index.update_paths(&[path]).map_err(to_io)?;
            reembedded = index
                .embed_pending(&engine, &[], None, &|_| {})
                .map_err(to_io)?
                .computed;
        }
    }
    // The saved file: bf16 vectors plus the HNSW graph, without the spare
    // capacity an in-memory index reserves for growth.
    let n_vectors = index.snapshot().vectors.as_ref().map_or(0, |v| v.len());
    let file_bytes = std::fs::metadata(
        work.path()
            .join("cache")
            .join(quarry_engine::dense::vectors::VECTORS_FILE),
    )
    .map_or(0, |m| m.len());
    let bytes_per_vector = file_bytes as f64 / n_vectors.max(1) as f64;
    let quantization = quantization_recall(&index, &engine, work.path())?;

    Ok(DenseReport {
        corpus: std::fs::canonicalize(corpus)
            .unwrap_or_else(|_| corpus.to_path_buf())
            .display()
            .to_string(),
        model: engine.model_id().unwrap_or_default().to_string(),
        chunks: snapshot.summary.chunks,
        throughput,
        query_embed_p50_ms: percentile(&query_times, 0.5),
        cold_hybrid_index_s,
        cold_embed_chunks_per_s,
        static_coverage_s,
        static_chunks_per_s,
        static_load_s,
        transformer_at_20s,
        transformer_at_20s_after_static,
        reembedded_after_one_function_edit: reembedded,
        hybrid_p50_ms: percentile(&cached, 0.5),
        hybrid_p99_ms: percentile(&cached, 0.99),
        hybrid_uncached_p50_ms: percentile(&uncached, 0.5),
        hybrid_uncached_p99_ms: percentile(&uncached, 0.99),
        lexical_p50_ms: percentile(&lexical, 0.5),
        bytes_per_vector,
        quantization,
    })
}

/// Embeds `index`'s pending chunks with `engine` in rounds until `seconds`
/// have passed since `start`; the chunks embedded by then (a round that
/// ends past the mark does not count).
fn embed_until(
    index: &Index,
    engine: &quarry_engine::dense::DenseEngine,
    start: Instant,
    seconds: f64,
) -> std::io::Result<u64> {
    let mut done = 0;
    while start.elapsed().as_secs_f64() < seconds {
        let stats = index
            .embed_pending(
                engine,
                &[],
                Some(quarry_engine::engine::EMBED_ROUND),
                &|_| {},
            )
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        if start.elapsed().as_secs_f64() <= seconds {
            done += stats.embedded;
        }
        if stats.remaining == 0 {
            break;
        }
    }
    Ok(done)
}

/// Recall@10 of f16 and i8 HNSW indexes over the corpus's vectors (from
/// the vector cache) against exact f32 search, for the query list.
fn quantization_recall(
    index: &Index,
    engine: &quarry_engine::dense::DenseEngine,
    scratch: &Path,
) -> std::io::Result<Vec<QuantizationRow>> {
    use quarry_engine::dense::vectors::{Quantization, VectorIndex};
    let snapshot = index.snapshot();
    let budget = engine.config().token_budget;
    let mut ids = Vec::new();
    let mut texts = Vec::new();
    let mut files: rustc_hash::FxHashMap<&str, String> = Default::default();
    for (segment, chunk) in snapshot.live_chunks() {
        let path = segment.path_of(chunk);
        let file = files.entry(path).or_insert_with(|| {
            std::fs::read_to_string(index.root().join(path)).unwrap_or_default()
        });
        if let Some(position) = segment.position(chunk.chunk_id) {
            ids.push(chunk.chunk_id);
            texts.push(quarry_engine::index::chunk_text(
                segment, position, file, budget,
            ));
        }
    }
    let (vectors, _) = engine.embed_texts(&texts).map_err(std::io::Error::other)?;
    let queries: Vec<std::sync::Arc<Vec<f32>>> = LEXICAL_QUERIES
        .iter()
        .filter_map(|q| engine.embed_query(q).ok())
        .collect();
    let exact: Vec<Vec<u32>> = queries
        .iter()
        .map(|q| {
            let mut scored: Vec<(f32, u32)> = vectors
                .iter()
                .zip(&ids)
                .map(|(v, id)| (v.iter().zip(q.iter()).map(|(a, b)| a * b).sum(), *id))
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0));
            scored.iter().take(10).map(|s| s.1).collect()
        })
        .collect();
    let mut out = Vec::new();
    for (name, quantization) in [
        ("f32", Quantization::F32),
        ("f16", Quantization::F16),
        ("bf16", Quantization::BF16),
        ("i8", Quantization::I8),
    ] {
        let model_id = engine.model_id().unwrap_or_default();
        let candidate = VectorIndex::with_quantization(model_id, engine.dim(), quantization)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let entries: Vec<(u32, &[f32])> = ids
            .iter()
            .zip(&vectors)
            .map(|(id, v)| (*id, v.as_slice()))
            .collect();
        let started = Instant::now();
        candidate
            .add(&entries)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let insert_ms = ms(started) / entries.len().max(1) as f64;
        let mut found = 0usize;
        for (query, truth) in queries.iter().zip(&exact) {
            let hits = candidate
                .search(query, 10, &|_| true)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            found += hits.iter().filter(|(id, _)| truth.contains(id)).count();
        }
        let dir = scratch.join(format!("quantization-{name}"));
        std::fs::create_dir_all(&dir)?;
        candidate
            .save(&dir, u32::MAX)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let bytes = std::fs::metadata(dir.join(quarry_engine::dense::vectors::VECTORS_FILE))
            .map_or(0, |m| m.len()) as f64;
        let total = exact.iter().map(Vec::len).sum::<usize>().max(1);
        out.push(QuantizationRow {
            kind: name,
            recall: found as f64 / total as f64,
            bytes: bytes / ids.len().max(1) as f64,
            insert_ms,
        });
    }
    Ok(out)
}
