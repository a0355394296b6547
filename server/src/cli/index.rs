//! `quarry index`: bring the index up to date and embed what lacks a vector.

use super::{dense_engine, embed, open, refresh, wait_for_writer, CommonArgs};
use anyhow::Result;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

#[derive(Args)]
pub struct IndexArgs {
    /// Workspace root.
    #[arg(default_value = ".")]
    pub root: PathBuf,
    #[command(flatten)]
    pub common: CommonArgs,
    /// Print the update counters as JSON.
    #[arg(long)]
    pub json: bool,
    /// Embed at most this many chunks in this run, in the order the
    /// language server embeds them; the rest stay pending for the
    /// next run (a bounded step, or a benchmark of partial coverage).
    #[arg(long, value_name = "N")]
    pub embed_limit: Option<usize>,
}

pub fn run(args: IndexArgs, out: &mut impl Write) -> Result<()> {
    let IndexArgs {
        root,
        common,
        json,
        embed_limit,
    } = args;
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
    Ok(())
}
