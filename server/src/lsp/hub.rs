//! `quarry/search` and `workspace/symbol` over a shared hub: the
//! workspace's checkout laid over the hub's commit, hits listed as
//! `quarry-hub:` URIs for other repositories, the local index answering
//! whenever the hub does not (`hub::within`).
//!
//! Never: wait on a hub longer than `hubTimeoutMs`.

use super::hits::{open_buffer, shape_hit, symbol_information, LiveText, NoText, SearchResponse};
use super::settings::Settings;
use super::state::{Folder, State};
use quarry_engine::search::{DiskText, SearchOptions};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tower_lsp_server::ls_types::*;

/// The first folder as a checkout of its hub repository (`hubRepo`, else
/// the folder's name), with its unsaved buffers.
pub(super) fn hub_checkout(
    state: &State,
    settings: &Settings,
    f: &Folder,
) -> quarry_engine::hub::Checkout {
    quarry_engine::hub::Checkout {
        root: f.root.clone(),
        repo: settings.hub_repo.clone().unwrap_or_else(|| {
            f.root
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        }),
        buffers: state
            .overlay
            .dirty_under(&f.root)
            .into_iter()
            .filter_map(|(abs, text)| {
                quarry_engine::confine::check_new(&f.root, &abs).ok()?;
                Some((quarry_engine::walk::relative_path(&f.root, &abs)?, text))
            })
            .collect(),
        max_file_size: f
            .index()
            .map_or(quarry_engine::index::DEFAULT_MAX_FILE_SIZE, |i| {
                i.max_file_size()
            }),
    }
}

/// Searches the hub, the first folder's changes overlaid (its repository
/// is `hubRepo`, else the folder's name), within `hubTimeoutMs`; or says
/// why it could not (the caller then answers from the local index).
pub(super) async fn search_hub(
    state: &Arc<State>,
    settings: &Settings,
    query: &str,
    options: &SearchOptions,
) -> Result<SearchResponse, String> {
    let folder = state.folders().into_iter().next();
    let workspace = folder.as_ref().map(|f| hub_checkout(state, settings, f));
    let dense = state
        .engine()
        .filter(|e| !settings.lexical_only && e.unavailable().is_none());
    let scope = quarry_engine::hub::RepoScope {
        globs: settings.hub_repos.clone(),
    };
    let task = {
        let (state, urls, query, options) = (
            state.clone(),
            settings.hub.clone(),
            query.to_string(),
            options.clone(),
        );
        let retry = Duration::from_millis(settings.hub_retry_ms);
        let workspace = workspace.clone();
        let handle = tokio::runtime::Handle::current();
        // Ranking and embedding are CPU work: off the protocol's threads.
        tokio::task::spawn_blocking(move || {
            handle.block_on(state.hub.search(&quarry_engine::hub::Ask {
                urls: &urls,
                scope: &scope,
                checkout: workspace.as_ref(),
                query: &query,
                options: &options,
                dense: dense.as_deref(),
                retry,
            }))
        })
    };
    let budget = Duration::from_millis(settings.hub_timeout_ms);
    let results = quarry_engine::hub::within(budget, task).await?;
    let mut response = SearchResponse {
        mode: results.mode,
        reason: results.reason,
        coverage: json!({"embedded": results.coverage.embedded, "total": results.coverage.total}),
        hits: Vec::with_capacity(results.hits.len()),
        no_match: results.no_match,
        state: "ready",
        source: "hub",
        hub: Some(json!({
            "repos": results.repos,
            "candidateFiles": results.candidate_files,
            "overlayFiles": results.overlay_files,
            "overlay": results.overlay.as_ref().map(crate::wire::OverlayJson::from),
        })),
    };
    let mut live = folder.as_ref().map(|f| LiveText {
        root: &f.root,
        overlay: &state.overlay,
        disk: DiskText::new(
            f.root.clone(),
            workspace
                .as_ref()
                .map_or(quarry_engine::index::DEFAULT_MAX_FILE_SIZE, |w| {
                    w.max_file_size
                }),
        ),
    });
    let mut no_text = NoText;
    for found in results.hits {
        let commit = (!found.local).then(|| found.commit.clone());
        let own = workspace.as_ref().is_some_and(|w| w.repo == found.repo);
        let shaped = match (own, folder.as_ref(), live.as_mut()) {
            (true, Some(f), Some(text)) => {
                let Some(uri) = Uri::from_file_path(f.root.join(&found.hit.path)) else {
                    continue;
                };
                let buffer = open_buffer(&state.overlay, &f.root, &found.hit.path);
                let buffer = buffer.as_ref().map(|b| b.text.as_str());
                shape_hit(
                    found.hit,
                    uri,
                    buffer,
                    text,
                    &results.phrases,
                    options.snippet_lines,
                )
            }
            _ => {
                let Some(uri) = hub_uri(&found.repo, &found.hit.path) else {
                    continue;
                };
                shape_hit(
                    found.hit,
                    uri,
                    None,
                    &mut no_text,
                    &results.phrases,
                    options.snippet_lines,
                )
            }
        };
        if let Some(mut hit) = shaped {
            hit.repo = Some(found.repo);
            hit.commit = commit;
            response.hits.push(hit);
        }
    }
    Ok(response)
}

/// `workspace/symbol` over the hub, the first folder's changes overlaid,
/// within `hubTimeoutMs`; or why not (the local index answers then).
pub(super) async fn symbols_hub(
    state: &Arc<State>,
    settings: &Settings,
    query: &str,
    limit: usize,
) -> Result<Vec<SymbolInformation>, String> {
    let folder = state.folders().into_iter().next();
    let checkout = folder.as_ref().map(|f| hub_checkout(state, settings, f));
    let dense = state
        .engine()
        .filter(|e| !settings.lexical_only && e.unavailable().is_none());
    let task = {
        let (state, urls, query) = (state.clone(), settings.hub.clone(), query.to_string());
        let scope = quarry_engine::hub::RepoScope {
            globs: settings.hub_repos.clone(),
        };
        let retry = Duration::from_millis(settings.hub_retry_ms);
        let checkout = checkout.clone();
        let handle = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            let options = SearchOptions::default();
            handle.block_on(state.hub.symbols(
                &quarry_engine::hub::Ask {
                    urls: &urls,
                    scope: &scope,
                    checkout: checkout.as_ref(),
                    query: &query,
                    options: &options,
                    dense: dense.as_deref(),
                    retry,
                },
                None,
                limit,
            ))
        })
    };
    let budget = Duration::from_millis(settings.hub_timeout_ms);
    let found = quarry_engine::hub::within(budget, task).await?;
    Ok(found
        .into_iter()
        .filter_map(|h| {
            let own = checkout.as_ref().is_some_and(|c| c.repo == h.repo);
            let uri = match (&folder, own) {
                (Some(f), true) => Uri::from_file_path(f.root.join(&h.symbol.path))?,
                _ => hub_uri(&h.repo, &h.symbol.path)?,
            };
            Some(symbol_information(h.symbol, uri).1)
        })
        .collect())
}

/// Where a hit in another repository of the hub is:
/// `quarry-hub:/REPO/PATH`, percent-encoded. Editors list it with its
/// snippet; opening it needs the hub's text (not served yet).
pub(super) fn hub_uri(repo: &str, path: &str) -> Option<Uri> {
    let encode = |s: &str, keep_slash: bool| -> String {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (b as char).to_string()
                }
                b'/' if keep_slash => "/".to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect()
    };
    format!("quarry-hub:/{}/{}", encode(repo, false), encode(path, true))
        .parse()
        .ok()
}
