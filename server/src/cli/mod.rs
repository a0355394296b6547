//! The command line's shared parts: the argument groups several commands
//! take (`FilterArgs`, `HubArgs`, `CommonArgs`) and opening, refreshing and
//! embedding an index with a progress bar on a terminal. Each command is a
//! module of its own; `hub` holds what the commands do over a hub.
//!
//! Never: write to stdout itself (commands write to the `out` they are
//! given).

pub mod hub;
pub mod index;
pub mod push;
pub mod search;
pub mod status;
pub mod symbols;

use anyhow::{Context, Result};
use clap::Args;
use quarry_engine::dense::{DenseConfig, DenseEngine, DenseTier};
use quarry_engine::index::{EmbedStats, Index, IndexConfig, Progress, UpdateStats};
use quarry_engine::search::SearchOptions;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// What `quarry search` may return.
#[derive(Args, Debug)]
pub struct FilterArgs {
    /// Only paths matching this glob (repeatable; `src/index`, `*.rs`).
    #[arg(long = "path", value_name = "GLOB")]
    pub path: Vec<String>,
    /// Leave out paths matching this glob (repeatable; `tests`, `vendor`).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Only this language (repeatable; rust, python, typescript...).
    #[arg(long, value_name = "LANGUAGE")]
    pub lang: Vec<String>,
    /// Only this kind of definition (repeatable; function, method, class...).
    #[arg(long, value_name = "KIND")]
    pub kind: Vec<String>,
}

/// Where a search or push goes instead of the local index.
#[derive(Args, Debug)]
pub struct HubArgs {
    /// A shared index in PostgreSQL with pgvector
    /// (`postgres://user@host:5432/db`); also $QUARRY_HUB. Repeat it for
    /// shards (each may be a read replica): they are searched in parallel
    /// and merged.
    #[arg(long, value_name = "URL", env = "QUARRY_HUB", hide_env_values = true)]
    pub hub: Vec<String>,
    /// With --hub: only repositories whose names match this glob
    /// (repeatable; `serde*`); all the role may read by default.
    #[arg(long = "repo", value_name = "GLOB", requires = "hub")]
    pub repos: Vec<String>,
    /// With --hub: the hub repository ROOT is a checkout of (default: the
    /// root folder's name). Its files that differ from the hub's commit
    /// are searched as they are in ROOT, in place of the hub's copy.
    #[arg(long, value_name = "NAME", requires = "hub")]
    pub workspace_repo: Option<String>,
    /// With --hub: search the hub's copy alone, not ROOT's changes.
    #[arg(long, requires = "hub")]
    pub no_overlay: bool,
}

impl HubArgs {
    /// ROOT as the checkout whose changes are overlaid on the hub's copy,
    /// unless `--no-overlay`.
    pub fn checkout(
        &self,
        root: &Path,
        max_file_size: u64,
    ) -> Option<quarry_engine::hub::Checkout> {
        (!self.no_overlay).then(|| quarry_engine::hub::Checkout {
            repo: self
                .workspace_repo
                .clone()
                .unwrap_or_else(|| hub::repo_name(root)),
            root: root.to_path_buf(),
            buffers: Vec::new(),
            max_file_size,
        })
    }
}

#[derive(Args, Clone)]
pub struct CommonArgs {
    /// Cache directory for this workspace's index (default: per-user cache dir).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Largest file indexed, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = quarry_engine::index::DEFAULT_MAX_FILE_SIZE)]
    pub max_file_size: u64,
    /// Embedding model directory (default: $QUARRY_MODEL, then the user data dir, then the Hugging Face cache).
    #[arg(long, value_name = "DIR")]
    pub model: Option<PathBuf>,
    /// Lexical and symbol branches only: do not load the embedding model.
    #[arg(long)]
    pub lexical: bool,
    /// Which vectors the dense branch uses: `transformer` (the model
    /// itself) or `static` (token vectors distilled from it once, about
    /// 100x faster to compute). Also $QUARRY_DENSE.
    #[arg(long, value_name = "TIER", env = "QUARRY_DENSE", default_value = "transformer",
          value_parser = ["transformer", "static"])]
    pub dense: String,
    /// Tokens of each chunk's text the transformer embeds (a vector made
    /// with another budget is another vector: it is cached apart).
    #[arg(long, value_name = "N", env = "QUARRY_TOKEN_BUDGET", default_value_t = 128,
          value_parser = clap::value_parser!(u32).range(8..=512))]
    pub token_budget: u32,
}

/// The embedding engine. `batch` jobs (`quarry index`) use every core;
/// interactive ones leave a core free.
pub fn dense_engine(common: &CommonArgs, batch: bool) -> DenseEngine {
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
pub fn embed(
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
pub fn tuned(mut options: SearchOptions, rank: &[String]) -> Result<SearchOptions> {
    options.tune_all(rank).map_err(anyhow::Error::msg)?;
    Ok(options)
}

pub fn progress_bar(show: bool, template: &str) -> Option<indicatif::ProgressBar> {
    (show && std::io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(&format!("{{spinner}} {template}"))
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    })
}

pub fn open(root: PathBuf, common: &CommonArgs) -> Result<Index> {
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
pub fn refresh(index: &Index, show_progress: bool) -> Result<UpdateStats> {
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
pub fn wait_for_writer(
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
pub fn refresh_or_warn(index: &Index) -> UpdateStats {
    refresh(index, true).unwrap_or_else(|e| {
        eprintln!("quarry: {e:#}; answering from the last committed index");
        UpdateStats::default()
    })
}
