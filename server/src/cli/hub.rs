//! The binary's hub commands: `quarry push`, `quarry grant` and
//! `quarry search --hub`. Each runs one short-lived tokio runtime for the
//! PostgreSQL connection; errors get their context here.

use crate::wire::HubResultsJson;
use anyhow::{Context, Result};
use quarry_engine::dense::DenseEngine;
use quarry_engine::hub::{self, Checkout, Hub, HubResults, Overlay, RepoScope};
use quarry_engine::index::Index;
use quarry_engine::search::SearchOptions;
use std::io::Write;
use std::path::Path;

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// The commit a checkout is at (`git rev-parse HEAD`), or `working-tree`
/// outside git.
pub fn head_commit(root: &Path) -> String {
    std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["rev-parse", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "working-tree".to_string())
}

/// Pushes `index` (already refreshed and, when a model is loaded,
/// embedded) as `repo` at `commit`.
pub fn push(
    url: &str,
    repo: &str,
    commit: &str,
    index: &Index,
    dense: &DenseEngine,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let stats = runtime()?.block_on(async {
        let mut hub = Hub::connect(url).await?;
        hub::push(&mut hub, repo, commit, index, dense).await
    })?;
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&stats)?)?;
    } else {
        writeln!(
            out,
            "pushed {} at {}: {} files ({} unchanged, {} added, {} changed, {} removed), \
             {} chunks written, {} vectors reused, {} computed, in {:.0} ms",
            stats.repo,
            stats.commit,
            stats.files,
            stats.files_unchanged,
            stats.files_added,
            stats.files_changed,
            stats.files_removed,
            stats.chunks_written,
            stats.vectors_reused,
            stats.vectors_computed,
            stats.elapsed_ms
        )?;
    }
    Ok(())
}

pub fn grant(url: &str, repo: &str, role: &str) -> Result<()> {
    runtime()?.block_on(async {
        let hub = Hub::connect(url).await?;
        hub.grant(repo, role).await
    })?;
    Ok(())
}

/// A hub search as the command line asks it.
pub struct SearchRequest<'a> {
    /// Shards (each a primary or a read replica), searched together.
    pub urls: &'a [String],
    pub scope: &'a RepoScope,
    pub queries: &'a [String],
    pub options: &'a SearchOptions,
    pub dense: &'a DenseEngine,
    pub workspace: Option<&'a Checkout>,
}

/// Read connections to every shard, or why one cannot be reached (the
/// caller answers from the local index).
fn connect_all(
    rt: &tokio::runtime::Runtime,
    urls: &[String],
) -> Result<std::result::Result<Vec<Hub>, String>> {
    let mut hubs = Vec::new();
    for url in urls {
        match rt.block_on(Hub::connect_read(url)) {
            Ok(hub) => hubs.push(hub),
            Err(e) if e.is_unreachable() => {
                return Ok(Err(format!("{}; answering from the local index", e.full())))
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Ok(hubs))
}

/// The overlay of `workspace` over the hubs' copy of its repository.
fn overlay_of(
    rt: &tokio::runtime::Runtime,
    hubs: &[Hub],
    workspace: Option<&Checkout>,
    dense: Option<&DenseEngine>,
) -> Result<Option<Overlay>> {
    let Some(ws) = workspace else {
        return Ok(None);
    };
    rt.block_on(Overlay::build(
        hubs,
        &ws.repo,
        &ws.root,
        &ws.buffers,
        ws.max_file_size,
        dense,
    ))
    .with_context(|| format!("comparing {} with the hub", ws.root.display()))
}

/// Definitions by name over the hubs, the checkout's changes overlaid; or
/// why the hub cannot be reached (`Ok(Err(reason))`).
pub fn symbols(
    urls: &[String],
    scope: &RepoScope,
    query: &str,
    kind: Option<quarry_engine::chunk::ChunkKind>,
    limit: usize,
    workspace: Option<&Checkout>,
) -> Result<std::result::Result<Vec<quarry_engine::hub::HubSymbol>, String>> {
    let rt = runtime()?;
    let hubs = match connect_all(&rt, urls)? {
        Ok(hubs) => hubs,
        Err(down) => return Ok(Err(down)),
    };
    let overlay = overlay_of(&rt, &hubs, workspace, None)?;
    let hits = rt
        .block_on(hub::symbols(
            &hubs,
            scope,
            query,
            kind,
            limit,
            overlay.as_ref(),
        ))
        .context("finding definitions in the hub")?;
    Ok(Ok(hits))
}

/// Who answered.
pub enum Answered {
    Hub,
    /// The hub could not be reached (why, its URL without the password):
    /// the caller answers from the local index and says so.
    Down(String),
}

/// The name a checkout has in the hub by default: its folder's name.
pub fn repo_name(root: &Path) -> String {
    std::fs::canonicalize(root)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default()
}

/// Answers each query from the hubs; one JSON line per query when `lines`
/// (a `--queries` batch). A hub that cannot be reached is not an error:
/// the answer is [`Answered::Down`].
pub fn search(
    asked: &SearchRequest<'_>,
    json: bool,
    lines: bool,
    out: &mut dyn Write,
) -> Result<Answered> {
    let rt = runtime()?;
    let hubs = match connect_all(&rt, asked.urls)? {
        Ok(hubs) => hubs,
        Err(down) => return Ok(Answered::Down(down)),
    };
    let dense = Some(asked.dense).filter(|d| d.unavailable().is_none());
    let overlay = overlay_of(&rt, &hubs, asked.workspace, dense)?;
    for query in asked.queries {
        let results = rt.block_on(hub::search(
            &hubs,
            asked.scope,
            query,
            asked.options,
            dense,
            overlay.as_ref(),
        ));
        let results = match results {
            Ok(results) => results,
            Err(e) if e.is_unreachable() && !lines => {
                return Ok(Answered::Down(format!(
                    "{}; answering from the local index",
                    e.full()
                )))
            }
            Err(e) => return Err(e).context("searching the hub"),
        };
        if lines {
            writeln!(
                out,
                "{}",
                serde_json::to_string(&HubResultsJson::from(&results))?
            )?;
        } else if json {
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&HubResultsJson::from(&results))?
            )?;
        } else {
            print(&results, out)?;
        }
    }
    Ok(Answered::Hub)
}

fn print(results: &HubResults, out: &mut dyn Write) -> Result<()> {
    if let Some(reason) = &results.reason {
        eprintln!("quarry: {} search: {reason}", results.mode);
    }
    for hit in &results.hits {
        let at = if hit.local {
            "local".to_string()
        } else {
            hit.commit.chars().take(12).collect::<String>()
        };
        writeln!(
            out,
            "{}@{}:{}:{}: {} {} ({:.3})",
            hit.repo,
            at,
            hit.hit.path,
            hit.hit.start_line,
            hit.hit.kind,
            hit.hit.label,
            hit.hit.score
        )?;
    }
    Ok(())
}
