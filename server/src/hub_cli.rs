//! The binary's hub commands: `quarry push`, `quarry grant` and
//! `quarry search --hub`. Each runs one short-lived tokio runtime for the
//! PostgreSQL connection; errors get their context here.

use anyhow::{Context, Result};
use quarry::dense::DenseEngine;
use quarry::hub::{self, Hub, HubResults, RepoScope};
use quarry::index::Index;
use quarry::search::SearchOptions;
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

/// Answers each query from the hub; one JSON line per query when `lines`
/// (a `--queries` batch).
#[allow(clippy::too_many_arguments)]
pub fn search(
    url: &str,
    scope: &RepoScope,
    queries: &[String],
    options: &SearchOptions,
    dense: &DenseEngine,
    json: bool,
    lines: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let rt = runtime()?;
    let hub = rt.block_on(Hub::connect(url))?;
    let dense = Some(dense).filter(|d| d.unavailable_reason().is_none());
    for query in queries {
        let results = rt
            .block_on(hub::search(&hub, scope, query, options, dense))
            .with_context(|| format!("searching {}", hub.url()))?;
        if lines {
            writeln!(out, "{}", serde_json::to_string(&results)?)?;
        } else if json {
            writeln!(out, "{}", serde_json::to_string_pretty(&results)?)?;
        } else {
            print(&results, out)?;
        }
    }
    Ok(())
}

fn print(results: &HubResults, out: &mut dyn Write) -> Result<()> {
    if let Some(reason) = &results.reason {
        eprintln!("quarry: {} search: {reason}", results.mode);
    }
    for hit in &results.hits {
        writeln!(
            out,
            "{}@{}:{}:{}: {} {} ({:.3})",
            hit.repo,
            hit.commit.chars().take(12).collect::<String>(),
            hit.hit.path,
            hit.hit.start_line,
            hit.hit.kind,
            hit.hit.label,
            hit.hit.score
        )?;
    }
    Ok(())
}
