//! `quarry symbols`: definitions by fuzzy name, locally or over a hub.

use super::{open, refresh_or_warn, CommonArgs, HubArgs};
use anyhow::{Context, Result};
use clap::Args;
use quarry_engine::chunk::ChunkKind;
use std::io::Write;
use std::path::PathBuf;

#[derive(Args)]
pub struct SymbolsArgs {
    pub query: String,
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// Only symbols of this kind (function, method, struct, class, constant...).
    #[arg(long)]
    pub kind: Option<String>,
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub hub: HubArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

pub fn run(args: SymbolsArgs, out: &mut impl Write) -> Result<()> {
    let SymbolsArgs {
        query,
        root,
        kind,
        limit,
        json,
        hub,
        common,
    } = args;
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
        match super::hub::symbols(&hub.hub, &scope, &query, kind, limit, workspace.as_ref())? {
            Ok(hits) => {
                if json {
                    let wire = crate::wire::hub_symbols(&hits);
                    writeln!(out, "{}", serde_json::to_string_pretty(&wire)?)?;
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
    let hits = quarry_engine::search::find_symbols(&index.snapshot(), &query, kind, limit);
    if json {
        let wire = crate::wire::symbols(&hits);
        writeln!(out, "{}", serde_json::to_string_pretty(&wire)?)?;
    } else {
        for hit in &hits {
            writeln!(
                out,
                "{}:{}  {} {}",
                hit.path, hit.start_line, hit.kind, hit.qualified_name
            )?;
        }
    }
    Ok(())
}
