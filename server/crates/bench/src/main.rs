//! `quarry-bench`: the benchmark harness, outside the product. Times
//! indexing and queries (the default), the dense branch (`--dense`), the
//! language server over stdio (`--lsp`) and the shared hub (`--hub`), and
//! scores search quality on the committed benchmark (`--quality`). Prints
//! numbers; bench/README.md says how to run each.

use anyhow::{Context, Result};
use clap::Parser;
use quarry_engine::dense::{DenseConfig, DenseEngine, DenseTier};
use quarry_engine::search::{parse_knobs, SearchOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Benchmark indexing and queries on a corpus (prints numbers).
#[derive(Parser)]
#[command(name = "quarry-bench", version)]
struct Bench {
    /// Corpus roots (default: the cargo registry sources and this directory).
    corpus: Vec<PathBuf>,
    /// Rounds over the query lists.
    #[arg(long, default_value_t = 20)]
    rounds: usize,
    #[arg(long)]
    json: bool,
    /// Also run the dense benchmark (embedding every chunk) on this corpus.
    #[arg(long, value_name = "DIR")]
    dense: Option<PathBuf>,
    /// Embedding model directory for --dense.
    #[arg(long, value_name = "DIR")]
    model: Option<PathBuf>,
    /// Skip the lexical benchmark (only with --dense).
    #[arg(long)]
    dense_only: bool,
    /// Run the search quality benchmark on this corpus (fetched by
    /// scripts/fetch-quality-corpus.sh) instead.
    #[arg(long, value_name = "DIR")]
    quality: Option<PathBuf>,
    /// With --quality: query files (default: bench/quality/queries.tsv
    /// and bench/quality/questions.tsv).
    #[arg(long, value_name = "FILE")]
    queries: Vec<PathBuf>,
    /// With --quality: regenerate the generated queries into this file
    /// from the corpus, then stop.
    #[arg(long, value_name = "FILE")]
    generate: Option<PathBuf>,
    /// With --quality: tokens of chunk text embedded.
    #[arg(long, default_value_t = 128)]
    token_budget: usize,
    /// With --quality or --hub: which vectors the dense branch uses,
    /// `transformer` or `static` (the tier distilled from it).
    #[arg(long, value_name = "TIER", default_value = "transformer",
          value_parser = ["transformer", "static"])]
    tier: String,
    /// With --quality: only configurations whose label contains this
    /// (the full stack always runs).
    #[arg(long)]
    only: Option<String>,
    /// Set a ranking knob for the timed searches (with --quality: in
    /// every configuration; repeatable; see `quarry search --rank`).
    #[arg(long, value_name = "KEY=VALUE")]
    rank: Vec<String>,
    /// Run the language-server benchmark on this corpus instead
    /// (lexical-only unless --model is given).
    #[arg(long, value_name = "DIR")]
    lsp: Option<PathBuf>,
    /// Benchmark a shared hub instead: push every folder of CORPUS (default:
    /// the cargo registry's sources) as a repository, then time the same
    /// queries on the hub and on a local index of CORPUS (hybrid rows and
    /// vectors only with --model). With --quality: also score the full
    /// stack served through this hub.
    #[arg(long, value_name = "URL")]
    hub: Option<String>,
}

fn main() {
    let bench = Bench::parse();
    // As `quarry index`: every core for the compute threads (see the
    // `quarry` binary's `pin_compute_threads`).
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for name in ["RAYON_NUM_THREADS", "CANDLE_NUM_THREADS"] {
        if std::env::var_os(name).is_none() {
            std::env::set_var(name, cores.to_string());
        }
    }
    if let Err(err) = run(bench) {
        eprintln!("quarry-bench: error: {err:#}");
        std::process::exit(1);
    }
}

fn run(bench: Bench) -> Result<()> {
    let Bench {
        corpus,
        rounds,
        json,
        dense,
        model,
        dense_only,
        quality,
        queries,
        generate,
        token_budget,
        tier,
        only,
        rank,
        lsp,
        hub,
    } = bench;
    let mut out = std::io::stdout().lock();

    if let (Some(url), None) = (&hub, &quality) {
        let corpus = match corpus.first() {
            Some(dir) => dir.clone(),
            None => quarry_bench::default_corpus()
                .into_iter()
                .nth(1)
                .context("no cargo registry sources: give a CORPUS folder")?,
        };
        let dense = Arc::new(match model {
            Some(dir) => DenseEngine::load(DenseConfig {
                model_dir: Some(dir),
                tier: DenseTier::parse(&tier).unwrap_or_default(),
                threads: std::thread::available_parallelism().ok().map(|n| n.get()),
                ..DenseConfig::default()
            }),
            None => DenseEngine::disabled("no --model"),
        });
        let report = quarry_bench::hub::run(url, &corpus, &dense, rounds)
            .with_context(|| format!("hub benchmark on {}", corpus.display()))?;
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
        return Ok(());
    }
    if let Some(corpus) = lsp {
        let report = quarry_bench::lsp::run(&corpus, model)
            .with_context(|| format!("language-server benchmark on {}", corpus.display()))?;
        if json {
            writeln!(out, "{}", serde_json::to_string(&report)?)?;
        } else {
            write!(out, "{report}")?;
        }
        return Ok(());
    }
    if let Some(corpus) = quality {
        use quarry_bench::quality;
        if let Some(file) = generate {
            let generated = quality::generate(&corpus)
                .with_context(|| format!("generating queries from {}", corpus.display()))?;
            quality::write_queries(&file, &generated)
                .with_context(|| format!("writing {}", file.display()))?;
            writeln!(
                out,
                "{} queries written to {}",
                generated.len(),
                file.display()
            )?;
            return Ok(());
        }
        let query_files = if queries.is_empty() {
            vec![
                PathBuf::from("bench/quality/queries.tsv"),
                PathBuf::from("bench/quality/questions.tsv"),
            ]
        } else {
            queries
        };
        let report = quality::run(&quality::QualityOptions {
            corpus: corpus.clone(),
            query_files,
            model,
            token_budget,
            tier: DenseTier::parse(&tier).unwrap_or_default(),
            only,
            rank: parse_knobs(&rank).map_err(anyhow::Error::msg)?,
            hub,
        })
        .with_context(|| format!("quality benchmark on {}", corpus.display()))?;
        if json {
            writeln!(out, "{}", serde_json::to_string(&report)?)?;
        } else {
            write!(out, "{report}")?;
        }
        return Ok(());
    }
    if let Some(dense_corpus) = dense {
        let report = quarry_bench::run_dense(&dense_corpus, rounds, model)
            .with_context(|| format!("dense benchmark on {}", dense_corpus.display()))?;
        if json {
            writeln!(out, "{}", serde_json::to_string(&report)?)?;
        } else {
            writeln!(out, "{report}")?;
        }
        out.flush()?;
        if dense_only {
            return Ok(());
        }
    }
    let corpus = if corpus.is_empty() {
        quarry_bench::default_corpus()
    } else {
        corpus
    };
    let mut options = SearchOptions::default();
    options.tune_all(&rank).map_err(anyhow::Error::msg)?;
    for root in corpus {
        let report = quarry_bench::run(&root, rounds, &options)
            .with_context(|| format!("benchmarking {}", root.display()))?;
        if json {
            writeln!(out, "{}", serde_json::to_string(&report)?)?;
        } else {
            writeln!(out, "{report}")?;
        }
        out.flush()?;
    }
    out.flush()?;
    Ok(())
}
