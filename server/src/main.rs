//! The `quarry` binary: command-line surface over the library.
//! Errors become one line on stderr and a non-zero exit; a closed stdout
//! pipe is a normal exit.

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use quarry_engine::chunk::ChunkKind;
use quarry_engine::dense::{DenseConfig, DenseEngine, DenseTier};
use quarry_engine::engine::Engine;
use quarry_engine::filter::Filter;
use quarry_engine::index::{EmbedStats, Index, IndexConfig, Progress, UpdateStats};
use quarry_engine::search::{self, Mode, SearchOptions};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod hub_cli;
mod jsonrpc;
mod lsp;
mod mcp;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "quarry", version, about = "Hybrid code search for a workspace")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// What `quarry search` may return.
#[derive(Args, Debug)]
struct FilterArgs {
    /// Only paths matching this glob (repeatable; `src/index`, `*.rs`).
    #[arg(long = "path", value_name = "GLOB")]
    path: Vec<String>,
    /// Leave out paths matching this glob (repeatable; `tests`, `vendor`).
    #[arg(long, value_name = "GLOB")]
    exclude: Vec<String>,
    /// Only this language (repeatable; rust, python, typescript...).
    #[arg(long, value_name = "LANGUAGE")]
    lang: Vec<String>,
    /// Only this kind of definition (repeatable; function, method, class...).
    #[arg(long, value_name = "KIND")]
    kind: Vec<String>,
}

/// Where a search or push goes instead of the local index.
#[derive(Args, Debug)]
struct HubArgs {
    /// A shared index in PostgreSQL with pgvector
    /// (`postgres://user@host:5432/db`); also $QUARRY_HUB. Repeat it for
    /// shards (each may be a read replica): they are searched in parallel
    /// and merged.
    #[arg(long, value_name = "URL", env = "QUARRY_HUB", hide_env_values = true)]
    hub: Vec<String>,
    /// With --hub: only repositories whose names match this glob
    /// (repeatable; `serde*`); all the role may read by default.
    #[arg(long = "repo", value_name = "GLOB", requires = "hub")]
    repos: Vec<String>,
    /// With --hub: the hub repository ROOT is a checkout of (default: the
    /// root folder's name). Its files that differ from the hub's commit
    /// are searched as they are in ROOT, in place of the hub's copy.
    #[arg(long, value_name = "NAME", requires = "hub")]
    workspace_repo: Option<String>,
    /// With --hub: search the hub's copy alone, not ROOT's changes.
    #[arg(long, requires = "hub")]
    no_overlay: bool,
}

impl HubArgs {
    /// ROOT as the checkout whose changes are overlaid on the hub's copy,
    /// unless `--no-overlay`.
    fn checkout(&self, root: &Path, max_file_size: u64) -> Option<quarry_engine::hub::Checkout> {
        (!self.no_overlay).then(|| quarry_engine::hub::Checkout {
            repo: self
                .workspace_repo
                .clone()
                .unwrap_or_else(|| hub_cli::repo_name(root)),
            root: root.to_path_buf(),
            buffers: Vec::new(),
            max_file_size,
        })
    }
}

#[derive(Args, Clone)]
struct CommonArgs {
    /// Cache directory for this workspace's index (default: per-user cache dir).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Largest file indexed, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = quarry_engine::index::DEFAULT_MAX_FILE_SIZE)]
    max_file_size: u64,
    /// Embedding model directory (default: $QUARRY_MODEL, then the user data dir, then the Hugging Face cache).
    #[arg(long, value_name = "DIR")]
    model: Option<PathBuf>,
    /// Lexical and symbol branches only: do not load the embedding model.
    #[arg(long)]
    lexical: bool,
    /// Which vectors the dense branch uses: `transformer` (the model
    /// itself) or `static` (token vectors distilled from it once, about
    /// 100x faster to compute). Also $QUARRY_DENSE.
    #[arg(long, value_name = "TIER", env = "QUARRY_DENSE", default_value = "transformer",
          value_parser = ["transformer", "static"])]
    dense: String,
    /// Tokens of each chunk's text the transformer embeds (a vector made
    /// with another budget is another vector: it is cached apart).
    #[arg(long, value_name = "N", env = "QUARRY_TOKEN_BUDGET", default_value_t = 128,
          value_parser = clap::value_parser!(u32).range(8..=512))]
    token_budget: u32,
}

/// The embedding engine. `batch` jobs (`quarry index`) use every core;
/// interactive ones leave a core free.
fn dense_engine(common: &CommonArgs, batch: bool) -> DenseEngine {
    if common.lexical {
        return DenseEngine::disabled("disabled by --lexical");
    }
    let threads = batch.then(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    DenseEngine::load(DenseConfig {
        model_dir: common.model.clone(),
        threads,
        tier: DenseTier::parse(&common.dense).unwrap_or_default(),
        token_budget: common.token_budget as usize,
        ..DenseConfig::default()
    })
}

/// Embeds what is missing, with a progress bar on a terminal.
fn embed(
    index: &Index,
    engine: &DenseEngine,
    limit: Option<usize>,
    show_progress: bool,
) -> Result<EmbedStats> {
    let bar = progress_bar(
        show_progress,
        "embedding {pos}/{len} chunks {wide_bar} {eta}",
    );
    let on_progress = |p: Progress| {
        if let Some(bar) = &bar {
            bar.set_length(p.total);
            bar.set_position(p.done);
        }
    };
    let stats = index
        .embed_pending(engine, &[], limit, &on_progress)
        .with_context(|| format!("embedding chunks of {}", index.root().display()))?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    Ok(stats)
}

/// `options` with every `--rank` knob set.
fn tuned(mut options: SearchOptions, rank: &[String]) -> Result<SearchOptions> {
    options.tune_all(rank).map_err(anyhow::Error::msg)?;
    Ok(options)
}

fn progress_bar(show: bool, template: &str) -> Option<indicatif::ProgressBar> {
    (show && std::io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(&format!("{{spinner}} {template}"))
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    })
}

#[derive(Subcommand)]
enum Command {
    /// Index a workspace (incrementally when a cache exists).
    Index {
        /// Workspace root.
        #[arg(default_value = ".")]
        root: PathBuf,
        #[command(flatten)]
        common: CommonArgs,
        /// Print the update counters as JSON.
        #[arg(long)]
        json: bool,
        /// Embed at most this many chunks in this run, in the order the
        /// language server embeds them; the rest stay pending for the
        /// next run (a bounded step, or a benchmark of partial coverage).
        #[arg(long, value_name = "N")]
        embed_limit: Option<usize>,
    },
    /// Search the workspace; brings the index up to date first.
    Search {
        #[arg(required_unless_present = "queries")]
        query: Option<String>,
        #[arg(long, default_value = ".")]
        root: PathBuf,
        /// Hits to print (1 to 10000).
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=10_000))]
        limit: u64,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        filter: FilterArgs,
        /// At most N hits from one file before every other file's hits get
        /// a turn (its further hits come after them); 0, the default, sets
        /// no cap. Either way, over the first 7 places the n-th hit of a
        /// file counts 0.85^(n-1) of its score (`--rank saturation=0` turns
        /// that off, `--rank head=N` moves the line).
        #[arg(long, default_value_t = 0)]
        per_file_cap: usize,
        /// Set a ranking knob (repeatable; `file=0.3`, `fuse.dense=0.5`): for
        /// benchmark ablations, see `SearchOptions::tune`.
        #[arg(long, value_name = "KEY=VALUE")]
        rank: Vec<String>,
        /// Run every query of this file (one JSON string per line) instead
        /// of QUERY, printing one JSON result per line.
        #[arg(long, value_name = "FILE")]
        queries: Option<PathBuf>,
        #[command(flatten)]
        hub: HubArgs,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Write a checkout into a shared hub (PostgreSQL with pgvector) as a
    /// repository at a commit: only files whose content changed since the
    /// hub's copy move, in one transaction.
    Push {
        /// Checkout root.
        #[arg(default_value = ".")]
        root: PathBuf,
        /// The hub (`postgres://user@host:5432/db`); also $QUARRY_HUB.
        #[arg(long, value_name = "URL", env = "QUARRY_HUB", hide_env_values = true)]
        hub: String,
        /// The repository's name in the hub (default: the root folder's name).
        #[arg(long, value_name = "NAME")]
        repo: Option<String>,
        /// The commit pushed (default: `git rev-parse HEAD` of the root).
        #[arg(long, value_name = "SHA")]
        commit: Option<String>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Let a PostgreSQL role read a repository of the hub (every other
    /// repository's rows stay invisible to it).
    Grant {
        #[arg(long, value_name = "URL", env = "QUARRY_HUB", hide_env_values = true)]
        hub: String,
        #[arg(long, value_name = "NAME")]
        repo: String,
        #[arg(long, value_name = "ROLE")]
        role: String,
    },
    /// Find definitions by (fuzzy) name: `lookup`, `GraphStore::lookup`, `gsl`.
    Symbols {
        query: String,
        #[arg(long, default_value = ".")]
        root: PathBuf,
        /// Only symbols of this kind (function, method, struct, class, constant...).
        #[arg(long)]
        kind: Option<String>,
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        hub: HubArgs,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Serve coding agents over the Model Context Protocol on stdin/stdout.
    Mcp {
        #[arg(long, default_value = ".")]
        root: PathBuf,
        #[command(flatten)]
        hub: HubArgs,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Run the language server on stdin/stdout (LSP 3.17).
    Lsp {
        /// Accepted for clients that pass it (vscode-languageclient does);
        /// stdio is the only transport.
        #[arg(long)]
        stdio: bool,
        /// Largest LSP message accepted, in MiB (bigger ones are refused
        /// with an error and skipped).
        #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=4096))]
        max_message_mib: u64,
    },
    /// Show what the index holds, from its last committed state.
    Status {
        #[arg(long, default_value = ".")]
        root: PathBuf,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        common: CommonArgs,
    },
}

fn main() {
    let cli = Cli::parse();
    pin_compute_threads(&cli);
    match run(cli) {
        Ok(()) => {}
        Err(err) => {
            let broken_pipe = err.chain().any(|cause| {
                cause
                    .downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            });
            if broken_pipe {
                return;
            }
            eprintln!("quarry: error: {err:#}");
            std::process::exit(1);
        }
    }
}

/// candle sizes some work by a process-wide `CANDLE_NUM_THREADS` read once;
/// pin it to the embedder's thread count (all cores for `quarry index`, one
/// fewer otherwise) unless the user set it. candle also reads
/// `RAYON_NUM_THREADS` on every matrix product and, when it is unset, counts
/// physical cores by parsing /proc/cpuinfo each time (a query took 7.7 ms
/// with that, 5.9 ms without): set it to what rayon's global pool uses
/// anyway, the logical core count. Runs before any thread starts.
fn pin_compute_threads(cli: &Cli) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        std::env::set_var("RAYON_NUM_THREADS", cores.to_string());
    }
    if std::env::var_os("CANDLE_NUM_THREADS").is_some() {
        return;
    }
    let threads = match cli.command {
        Command::Index { .. } | Command::Push { .. } => cores,
        _ => cores.saturating_sub(1).max(1),
    };
    std::env::set_var("CANDLE_NUM_THREADS", threads.to_string());
}

/// `quarry lsp`: the language server on stdin/stdout. Exits with 1 after an
/// `exit` that came without `shutdown`, as LSP asks.
fn run_lsp(max_message_mib: u64) -> Result<()> {
    // The global pool parses, hashes and decodes for the index: background
    // work, below the runtime threads that answer requests. (It can only
    // fail if something built the pool first; then it keeps its priority.)
    let _ = rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("quarry-index-{i}"))
        .start_handler(|_| quarry_engine::priority::lower_this_thread())
        .build_global();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let max_message = usize::try_from(max_message_mib << 20).unwrap_or(usize::MAX);
    let ended = runtime.block_on(lsp::run_stdio(max_message));
    // Blocking index jobs still running after `exit` are abandoned: every
    // index write is atomic.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    if ended == lsp::Ended::ExitWithoutShutdown {
        std::process::exit(1);
    }
    Ok(())
}

/// `quarry mcp`: the MCP server on stdin/stdout over this root's index.
fn run_mcp(root: PathBuf, hub: HubArgs, common: &CommonArgs) -> Result<()> {
    let hub = (!hub.hub.is_empty()).then(|| mcp::HubSearch {
        repo: hub.checkout(&root, common.max_file_size).map(|c| c.repo),
        urls: hub.hub,
        scope: quarry_engine::hub::RepoScope { globs: hub.repos },
        timeout: std::time::Duration::from_secs(10),
        retry: std::time::Duration::from_secs(5),
        link: quarry_engine::hub::HubLink::default(),
    });
    // No refresh here: the server brings the index up to date in the
    // background, so `initialize` never waits on a walk.
    let engine = Engine::new(
        Arc::new(open(root, common)?),
        Arc::new(dense_engine(common, false)),
    )
    .context("opening the vector index")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let result = runtime.block_on(mcp::run_stdio(Arc::new(engine), hub));
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    result.map_err(|e| anyhow::anyhow!("mcp: {e}"))
}

fn open(root: PathBuf, common: &CommonArgs) -> Result<Index> {
    let config = IndexConfig {
        cache_dir: common.cache_dir.clone(),
        max_file_size: common.max_file_size,
        ..IndexConfig::new(root.clone())
    };
    let index =
        Index::open(config).with_context(|| format!("opening the index of {}", root.display()))?;
    for note in index.take_notes() {
        eprintln!("quarry: {note}");
    }
    Ok(index)
}

/// Brings the index up to date, with a progress bar on a terminal.
fn refresh(index: &Index, show_progress: bool) -> Result<UpdateStats> {
    let bar = (show_progress && std::io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} indexing {pos}/{len} files {wide_bar} {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let on_progress = |p: Progress| {
        if let Some(bar) = &bar {
            bar.set_length(p.total);
            bar.set_position(p.done);
        }
    };
    let stats = index
        .refresh(&on_progress)
        .with_context(|| format!("updating the index of {}", index.root().display()))?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    Ok(stats)
}

/// Beside another process that writes the index, after a refresh that
/// found `stats.files_behind` changed files: refreshes again (which
/// follows that process's commits, or takes the writing over if it left)
/// until no file differs from the committed index, or `patience` is spent.
fn wait_for_writer(
    index: &Index,
    mut stats: UpdateStats,
    patience: std::time::Duration,
) -> Result<UpdateStats> {
    let started = std::time::Instant::now();
    while stats.files_behind > 0 && !index.is_writer() && started.elapsed() < patience {
        std::thread::sleep(std::time::Duration::from_millis(100));
        stats = refresh(index, false)?;
    }
    Ok(stats)
}

/// `refresh` for a query: an update that cannot be written (a full disk, a
/// read-only cache) is said on stderr and the query is answered from the
/// last committed index, which nothing touched.
fn refresh_or_warn(index: &Index) -> UpdateStats {
    refresh(index, true).unwrap_or_else(|e| {
        eprintln!("quarry: {e:#}; answering from the last committed index");
        UpdateStats::default()
    })
}

fn run(cli: Cli) -> Result<()> {
    if let Command::Lsp {
        max_message_mib, ..
    } = cli.command
    {
        // Before anything takes the stdout lock: the server writes to
        // stdout from its own threads.
        return run_lsp(max_message_mib);
    }
    if let Command::Mcp { root, hub, common } = cli.command {
        return run_mcp(root, hub, &common);
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match cli.command {
        Command::Index {
            root,
            common,
            json,
            embed_limit,
        } => {
            let index = open(root, &common)?;
            let mut stats = refresh(&index, true)?;
            if !index.is_writer() && stats.files_behind > 0 {
                // Another process (a language server, `quarry mcp`) writes
                // this index: its watcher indexes the changes; wait for it.
                eprintln!(
                    "quarry: another quarry process writes this index; waiting for it to index {} changed file(s)",
                    stats.files_behind
                );
                stats = wait_for_writer(&index, stats, std::time::Duration::from_secs(30))?;
                if stats.files_behind > 0 {
                    eprintln!(
                        "quarry: the writing process has not indexed {} changed file(s) after 30 s",
                        stats.files_behind
                    );
                } else {
                    eprintln!("quarry: the writing process indexed them");
                }
            }
            let engine = dense_engine(&common, true);
            // A batch job that ends soon: freed layer outputs are reused
            // rather than returned to the OS and faulted in again.
            let _held = quarry_engine::memory::HeldFreedMemory::new();
            let embedded = embed(&index, &engine, embed_limit, true)?;
            let snapshot = index.snapshot();
            let summary = snapshot.summary.clone();
            let (n_embedded, n_total) = snapshot.coverage_of(engine.tier());
            if json {
                let value = serde_json::json!({
                    "update": stats,
                    "embedding": embedded,
                    "summary": summary,
                    "coverage": { "embedded": n_embedded, "total": n_total },
                });
                writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
            } else if !stats.wrote && !index.is_writer() {
                writeln!(out, "index is read-only right now; nothing written")?;
            } else {
                writeln!(
                    out,
                    "{} files, {} chunks in {:.0} ms ({} re-parsed, {} unchanged, {} removed, {} skipped)",
                    summary.files_indexed,
                    summary.chunks,
                    stats.elapsed_ms,
                    stats.files_reparsed,
                    stats.files_unchanged,
                    stats.files_removed,
                    stats.files_skipped,
                )?;
                match (&embedded.error, engine.unavailable_reason()) {
                    (_, Some(reason)) => writeln!(out, "lexical only: {reason}")?,
                    (Some(error), None) => writeln!(out, "embedding stopped: {error}")?,
                    (None, None) => writeln!(
                        out,
                        "embedded {} chunks ({} from the vector cache) in {:.1} s; {n_embedded}/{n_total} chunks have vectors",
                        embedded.embedded,
                        embedded.from_cache,
                        embedded.elapsed_ms / 1000.0,
                    )?,
                }
            }
        }
        Command::Search {
            query,
            root,
            limit,
            json,
            filter,
            per_file_cap,
            rank,
            queries,
            hub,
            common,
        } => {
            let query = query.unwrap_or_default();
            search::check_query(&query).map_err(anyhow::Error::msg)?;
            let filter = Filter::new(&filter.path, &filter.exclude, &filter.lang, &filter.kind)?;
            let options = tuned(
                SearchOptions {
                    limit: limit as usize,
                    per_file_cap,
                    filter,
                    ..SearchOptions::default()
                },
                &rank,
            )?;
            let batch = queries
                .map(|file| -> Result<Vec<String>> {
                    let text = std::fs::read_to_string(&file)
                        .with_context(|| format!("reading {}", file.display()))?;
                    text.lines()
                        .filter(|l| !l.trim().is_empty())
                        .enumerate()
                        .map(|(i, line)| {
                            let at = || format!("{}:{}", file.display(), i + 1);
                            let query = serde_json::from_str::<String>(line)
                                .with_context(|| format!("{}: not a JSON string", at()))?;
                            search::check_query(&query)
                                .map_err(|e| anyhow::anyhow!("{}: {e}", at()))?;
                            Ok(query)
                        })
                        .collect()
                })
                .transpose()?;
            let mut hub_down = None;
            if !hub.hub.is_empty() {
                let workspace = hub.checkout(&root, common.max_file_size);
                let scope = quarry_engine::hub::RepoScope { globs: hub.repos };
                let lines = batch.is_some();
                let queries = batch.clone().unwrap_or_else(|| vec![query.clone()]);
                let dense = dense_engine(&common, false);
                let asked = hub_cli::SearchRequest {
                    urls: &hub.hub,
                    scope: &scope,
                    queries: &queries,
                    options: &options,
                    dense: &dense,
                    workspace: workspace.as_ref(),
                };
                match hub_cli::search(&asked, json, lines, &mut out)? {
                    hub_cli::Answered::Hub => return Ok(()),
                    hub_cli::Answered::Down(reason) => {
                        eprintln!("quarry: {reason}");
                        hub_down = Some(reason);
                    }
                }
            }
            let index = open(root, &common)?;
            let mut stats = refresh_or_warn(&index);
            if stats.files_behind > 0 && !index.is_writer() {
                // A running server's watcher indexes a change within its
                // debounce: give it a moment rather than answer stale.
                let behind = stats.clone();
                stats = wait_for_writer(&index, stats, std::time::Duration::from_secs(2))
                    .unwrap_or(behind);
            }
            if stats.files_behind > 0 && !json {
                eprintln!(
                    "quarry: another quarry process owns this index and has not indexed {} changed \
                     file(s) yet; hits in them are found again in their current text",
                    stats.files_behind
                );
            }
            let engine = Engine::new(Arc::new(index), Arc::new(dense_engine(&common, false)))
                .context("opening the vector index")?;
            if let Err(e) = engine.catch_up() {
                eprintln!("quarry: could not embed the changed chunks ({e}); searching without their vectors");
            }
            let answer = |query: &str| {
                let mut results = engine.search(query, &options);
                if let Some(down) = &hub_down {
                    results.reason = Some(quarry_engine::hub::local_reason(
                        down,
                        results.reason.take(),
                    ));
                }
                results
            };
            if let Some(batch) = batch {
                for query in &batch {
                    writeln!(out, "{}", serde_json::to_string(&answer(query))?)?;
                }
                return Ok(());
            }
            let results = answer(&query);
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&results)?)?;
            } else {
                // The same words as the JSON's `mode`.
                let reason = results.reason.as_deref().unwrap_or("");
                match results.mode {
                    Mode::Lexical => eprintln!("quarry: lexical-only search: {reason}"),
                    Mode::Partial => eprintln!(
                        "quarry: partial hybrid search ({} of {} chunks embedded; `quarry index` \
                         embeds the rest): {reason}",
                        results.coverage.embedded, results.coverage.total
                    ),
                    _ => {}
                }
                if results.hits.is_empty() {
                    eprintln!("quarry: no results for {query:?}");
                } else if results.no_match {
                    eprintln!(
                        "quarry: no code matches the words of {query:?}; \
                         these are only the nearest by meaning"
                    );
                }
                for hit in &results.hits {
                    writeln!(
                        out,
                        "{}:{}  {} {}",
                        hit.path, hit.detail_line, hit.kind, hit.label
                    )?;
                    writeln!(out, "    {}", hit.detail)?;
                }
            }
            // The process ends here: leave the index's memory (hundreds of
            // thousands of chunk records on a large corpus) to the OS instead
            // of freeing it piece by piece, which cost ~5% of a search.
            std::mem::forget(engine);
        }
        Command::Push {
            root,
            hub,
            repo,
            commit,
            json,
            common,
        } => {
            let repo = match repo {
                Some(repo) => repo,
                None => Some(hub_cli::repo_name(&root))
                    .filter(|n| !n.is_empty())
                    .context("the root has no folder name: give --repo")?,
            };
            let commit = commit.unwrap_or_else(|| hub_cli::head_commit(&root));
            let index = open(root, &common)?;
            let stats = refresh(&index, !json)?;
            let stats = wait_for_writer(&index, stats, std::time::Duration::from_secs(10))?;
            if stats.files_behind > 0 {
                anyhow::bail!(
                    "another quarry process owns this index and has not indexed {} changed file(s): push again",
                    stats.files_behind
                );
            }
            let dense = dense_engine(&common, true);
            if let (Some(reason), false) = (dense.unavailable_reason(), common.lexical) {
                eprintln!(
                    "quarry: pushing without vectors ({reason}): the hub will answer lexically"
                );
            }
            hub_cli::push(&hub, &repo, &commit, &index, &dense, json, &mut out)?;
        }
        Command::Grant { hub, repo, role } => {
            hub_cli::grant(&hub, &repo, &role)?;
            writeln!(out, "granted {role} read access to {repo}")?;
        }
        Command::Symbols {
            query,
            root,
            kind,
            limit,
            json,
            hub,
            common,
        } => {
            let kind = match kind {
                Some(name) => Some(ChunkKind::from_name(&name).with_context(|| {
                    let names: Vec<&str> = ChunkKind::ALL.iter().map(|k| k.name()).collect();
                    format!(
                        "unknown kind {name:?}; expected one of {}",
                        names.join(", ")
                    )
                })?),
                None => None,
            };
            if !hub.hub.is_empty() {
                let workspace = hub.checkout(&root, common.max_file_size);
                let scope = quarry_engine::hub::RepoScope { globs: hub.repos };
                match hub_cli::symbols(&hub.hub, &scope, &query, kind, limit, workspace.as_ref())? {
                    Ok(hits) => {
                        if json {
                            writeln!(out, "{}", serde_json::to_string_pretty(&hits)?)?;
                        }
                        for hit in hits.iter().filter(|_| !json) {
                            writeln!(
                                out,
                                "{}:{}:{}  {} {}",
                                hit.repo,
                                hit.symbol.path,
                                hit.symbol.start_line,
                                hit.symbol.kind,
                                hit.symbol.qualified_name
                            )?;
                        }
                        return Ok(());
                    }
                    Err(down) => eprintln!("quarry: {down}"),
                }
            }
            let index = open(root, &common)?;
            refresh_or_warn(&index);
            let hits = search::find_symbols(&index.snapshot(), &query, kind, limit);
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&hits)?)?;
            } else {
                for hit in &hits {
                    writeln!(
                        out,
                        "{}:{}  {} {}",
                        hit.path, hit.start_line, hit.kind, hit.qualified_name
                    )?;
                }
            }
        }
        Command::Lsp {
            max_message_mib, ..
        } => run_lsp(max_message_mib)?,
        Command::Mcp { root, hub, common } => run_mcp(root, hub, &common)?,
        Command::Status { root, json, common } => {
            let index = open(root, &common)?;
            let engine = dense_engine(&common, false);
            index
                .attach_dense(&engine)
                .context("opening the vector index")?;
            let snapshot = index.snapshot();
            let summary = &snapshot.summary;
            let (embedded, total) = snapshot.coverage_of(engine.tier());
            let model = match engine.model_id() {
                Some(id) => id.to_string(),
                None => format!(
                    "none ({})",
                    engine.unavailable_reason().unwrap_or("unknown")
                ),
            };
            if json {
                let value = serde_json::json!({
                    "root": index.root(),
                    "cache_dir": index.cache_dir(),
                    "writer": index.is_writer(),
                    "role": if index.is_writer() { "writer" } else { "reader" },
                    "index_age_secs": index.committed_age_secs(),
                    "summary": summary,
                    "model": engine.model_id(),
                    "model_error": engine.unavailable_reason(),
                    "coverage": { "embedded": embedded, "total": total },
                    "superseded": snapshot.layout.superseded(),
                });
                writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
            } else {
                writeln!(out, "root       {}", index.root().display())?;
                writeln!(out, "cache      {}", index.cache_dir().display())?;
                let age = index
                    .committed_age_secs()
                    .map_or("no commit yet".to_string(), |s| {
                        format!("committed {s:.0} s ago")
                    });
                if index.is_writer() {
                    writeln!(out, "role       writer ({age})")?;
                } else {
                    writeln!(
                        out,
                        "role       reader: another quarry process writes this index ({age})"
                    )?;
                }
                writeln!(out, "files      {}", summary.files_indexed)?;
                writeln!(out, "chunks     {}", summary.chunks)?;
                writeln!(out, "embedded   {embedded}/{total}")?;
                writeln!(out, "model      {model}")?;
                writeln!(out, "segments   {}", summary.segments)?;
                for (language, n) in &summary.languages {
                    writeln!(out, "  {language:<12} {n} files")?;
                }
                if summary.skipped.is_empty() {
                    writeln!(out, "skipped    none")?;
                }
                for (reason, n) in &summary.skipped {
                    writeln!(out, "skipped    {n} ({reason})")?;
                }
                // Folders ranked lower as copies of code kept beside them.
                for folder in snapshot.layout.superseded() {
                    writeln!(
                        out,
                        "superseded {folder}/ (ranked below the code it copies)"
                    )?;
                }
            }
        }
    }
    out.flush()?;
    Ok(())
}
