//! `quarry status`: what the index holds, from its last committed state.

use super::{dense_engine, open, CommonArgs};
use anyhow::{Context, Result};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

#[derive(Args)]
pub struct StatusArgs {
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub common: CommonArgs,
}

pub fn run(args: StatusArgs, out: &mut impl Write) -> Result<()> {
    let StatusArgs { root, json, common } = args;
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
            engine
                .unavailable_reason()
                .unwrap_or_else(|| "unknown".into())
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
            "generated": snapshot.layout.generated(),
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
        let generated = snapshot.layout.generated().len();
        if generated > 0 {
            let plural = if generated == 1 { "" } else { "s" };
            writeln!(
                out,
                "generated  {generated} file{plural} (their header says so; ranked below written code)"
            )?;
        }
    }
    Ok(())
}
