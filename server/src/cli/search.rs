//! `quarry search`: one query or a file of them, locally or over a hub, as text or JSON.

use super::{
    dense_engine, open, refresh_or_warn, tuned, wait_for_writer, CommonArgs, FilterArgs, HubArgs,
};
use crate::wire::ResultsJson;
use anyhow::{Context, Result};
use clap::Args;
use quarry_engine::engine::Engine;
use quarry_engine::filter::Filter;
use quarry_engine::search::{Mode, SearchOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Args)]
pub struct SearchArgs {
    #[arg(required_unless_present = "queries")]
    pub query: Option<String>,
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// Hits to print (1 to 10000).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub limit: u64,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// At most N hits from one file before every other file's hits get
    /// a turn (its further hits come after them); 0, the default, sets
    /// no cap. Either way, over the first 5 places the n-th hit of a
    /// file counts 0.7^(n-1) of its score (`--rank saturation=0` turns
    /// that off, `--rank head=N` moves the line).
    #[arg(long, default_value_t = 0)]
    pub per_file_cap: usize,
    /// Set a ranking knob (repeatable; `file=0.3`, `fuse.dense=0.5`): for
    /// benchmark ablations, see `SearchOptions::tune`.
    #[arg(long, value_name = "KEY=VALUE")]
    pub rank: Vec<String>,
    /// Run every query of this file (one JSON string per line) instead
    /// of QUERY, printing one JSON result per line.
    #[arg(long, value_name = "FILE")]
    pub queries: Option<PathBuf>,
    #[command(flatten)]
    pub hub: HubArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

pub fn run(args: SearchArgs, out: &mut impl Write) -> Result<()> {
    let SearchArgs {
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
    } = args;
    let query = query.unwrap_or_default();
    quarry_engine::search::check_query(&query).map_err(anyhow::Error::msg)?;
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
                    quarry_engine::search::check_query(&query)
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
        let asked = super::hub::SearchRequest {
            urls: &hub.hub,
            scope: &scope,
            queries: &queries,
            options: &options,
            dense: &dense,
            workspace: workspace.as_ref(),
        };
        match super::hub::search(&asked, json, lines, out)? {
            super::hub::Answered::Hub => return Ok(()),
            super::hub::Answered::Down(reason) => {
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
        stats = wait_for_writer(&index, stats, std::time::Duration::from_secs(2)).unwrap_or(behind);
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
        eprintln!(
            "quarry: could not embed the changed chunks ({e}); searching without their vectors"
        );
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
            let results = answer(query);
            writeln!(
                out,
                "{}",
                serde_json::to_string(&ResultsJson::from(&results))?
            )?;
        }
        return Ok(());
    }
    let results = answer(&query);
    if json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&ResultsJson::from(&results))?
        )?;
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
    Ok(())
}
