//! The `quarry` binary: command-line surface over the library.
//! Errors become one line on stderr and a non-zero exit; a closed stdout
//! pipe is a normal exit.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use quarry_engine::engine::Engine;

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

mod cli;
use cli::{dense_engine, open, CommonArgs, HubArgs};
mod jsonrpc;
mod lsp;
mod mcp;
mod wire;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "quarry", version, about = "Hybrid code search for a workspace")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Index a workspace (incrementally when a cache exists).
    Index(cli::index::IndexArgs),
    /// Search the workspace; brings the index up to date first.
    Search(cli::search::SearchArgs),
    /// Write a checkout into a shared hub (PostgreSQL with pgvector) as a
    /// repository at a commit: only files whose content changed since the
    /// hub's copy move, in one transaction.
    Push(cli::push::PushArgs),
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
    Symbols(cli::symbols::SymbolsArgs),
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
    Status(cli::status::StatusArgs),
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
        Command::Index(_) | Command::Push(_) => cores,
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
        Command::Index(args) => cli::index::run(args, &mut out)?,
        Command::Search(args) => cli::search::run(args, &mut out)?,
        Command::Push(args) => cli::push::run(args, &mut out)?,
        Command::Grant { hub, repo, role } => {
            cli::hub::grant(&hub, &repo, &role)?;
            writeln!(out, "granted {role} read access to {repo}")?;
        }
        Command::Symbols(args) => cli::symbols::run(args, &mut out)?,
        Command::Lsp {
            max_message_mib, ..
        } => run_lsp(max_message_mib)?,
        Command::Mcp { root, hub, common } => run_mcp(root, hub, &common)?,
        Command::Status(args) => cli::status::run(args, &mut out)?,
    }
    out.flush()?;
    Ok(())
}
