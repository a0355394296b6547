//! `quarry push`: write a checkout into a shared hub.

use super::{dense_engine, open, refresh, wait_for_writer, CommonArgs};
use anyhow::{Context, Result};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

#[derive(Args)]
pub struct PushArgs {
    /// Checkout root.
    #[arg(default_value = ".")]
    pub root: PathBuf,
    /// The hub (`postgres://user@host:5432/db`); also $QUARRY_HUB.
    #[arg(long, value_name = "URL", env = "QUARRY_HUB", hide_env_values = true)]
    pub hub: String,
    /// The repository's name in the hub (default: the root folder's name).
    #[arg(long, value_name = "NAME")]
    pub repo: Option<String>,
    /// The commit pushed (default: `git rev-parse HEAD` of the root).
    #[arg(long, value_name = "SHA")]
    pub commit: Option<String>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub common: CommonArgs,
}

pub fn run(args: PushArgs, out: &mut impl Write) -> Result<()> {
    let PushArgs {
        root,
        hub,
        repo,
        commit,
        json,
        common,
    } = args;
    let repo = match repo {
        Some(repo) => repo,
        None => Some(super::hub::repo_name(&root))
            .filter(|n| !n.is_empty())
            .context("the root has no folder name: give --repo")?,
    };
    let commit = commit.unwrap_or_else(|| super::hub::head_commit(&root));
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
        eprintln!("quarry: pushing without vectors ({reason}): the hub will answer lexically");
    }
    super::hub::push(&hub, &repo, &commit, &index, &dense, json, out)?;
    Ok(())
}
