//! Finding definitions by name in the hub (`quarry symbols --hub`, the MCP
//! server's `find_symbol`).
//!
//! Owns: choosing candidate definitions in PostgreSQL (a name that starts
//! with the query's last name, exact names first, over every shard) and
//! ranking them with the local symbol matcher (`search::find_symbols`) over
//! the candidate snapshot, so the order is the local index's.
//! Never: read a row the role may not (row-level security filters every
//! table), or match by typo over the hub (fuzzy matching needs every name;
//! the hub offers exact and prefix).

use super::candidates::RepoScope;
use super::candidates::{assemble, choose_repos, fetch_chunks, shard_ids, sort_found, Found};
use super::conn::Hub;
use super::error::{sql, HubError};
use super::overlay::Overlay;
use crate::chunk::ChunkKind;
use crate::lexical::CorpusStats;
use crate::search::{find_symbols, SymbolHit};
use futures_util::future::join_all;
use rustc_hash::FxHashMap;

/// Candidate definitions read per shard.
const SYMBOL_DEPTH: i64 = 200;

/// A definition and where it comes from.
#[derive(Clone, Debug)]
pub struct HubSymbol {
    pub repo: String,
    pub commit: String,
    /// Found in the workspace's own text (the overlay), not the hub's.
    pub local: bool,
    pub symbol: SymbolHit,
}

/// Definitions named like `query` (`Type::method`, `Class.method`, a
/// prefix) in the repositories of `scope` the role may read, ranked as the
/// local index ranks them; `overlay` hides the hub's rows for the
/// workspace's changed paths and offers their current definitions instead.
pub async fn symbols(
    hubs: &[Hub],
    scope: &RepoScope,
    query: &str,
    kind: Option<ChunkKind>,
    limit: usize,
    overlay: Option<&Overlay>,
) -> Result<Vec<HubSymbol>, HubError> {
    let Some(last) = last_name(query) else {
        return Ok(Vec::new());
    };
    let repos = choose_repos(hubs, scope).await?;
    if repos.is_empty() {
        return Ok(Vec::new());
    }
    let overlay = overlay.filter(|o| repos.iter().any(|r| r.name == o.repo));
    let pattern = format!("{}%", escape_like(&last));
    let lists = join_all(hubs.iter().enumerate().map(|(shard, hub)| {
        let ids = shard_ids(&repos, shard);
        let (pattern, last) = (&pattern, &last);
        async move {
            if ids.is_empty() {
                return Ok::<_, HubError>((shard, Vec::new()));
            }
            let rows = hub
                .client
                .query(
                    "SELECT c.repo_id, c.path, c.byte_start,
                            ((CASE WHEN lower(c.name) = $3 THEN 1000 ELSE 0 END)
                                - length(c.name))::float8,
                            lower(c.name), c.id
                     FROM quarry_chunks c JOIN quarry_repos r ON r.id = c.repo_id
                     WHERE c.repo_id = ANY($1) AND lower(c.name) LIKE $2
                     ORDER BY 4 DESC, 5, r.name, c.path, c.byte_start LIMIT $4",
                    &[&ids, pattern, last, &SYMBOL_DEPTH],
                )
                .await
                .map_err(sql("finding definitions by name"))?;
            Ok((shard, rows))
        }
    }))
    .await;
    let mut found = Vec::new();
    for shard in lists {
        let (shard, rows) = shard?;
        found.extend(
            rows.iter()
                .filter_map(|r| Found::from_row(&repos, shard, r)),
        );
    }
    sort_found(&mut found, &repos);
    found.truncate(SYMBOL_DEPTH as usize);
    let masked =
        |f: &Found| overlay.is_some_and(|o| repos[f.repo].name == o.repo && o.masks(&f.path));
    let keys: Vec<(usize, i64)> = found
        .into_iter()
        .filter(|f| !masked(f))
        .map(|f| (f.repo, f.id))
        .collect();
    let local: Vec<usize> = overlay.map_or_else(Vec::new, |o| {
        (0..o.files.len())
            .filter(|&f| {
                o.files[f]
                    .chunks
                    .iter()
                    .any(|c| c.name.to_lowercase().starts_with(&last))
            })
            .collect()
    });
    if keys.is_empty() && local.is_empty() {
        return Ok(Vec::new());
    }
    let candidates = fetch_chunks(hubs, &repos, &keys, false).await?;
    let assembled = assemble(
        &repos,
        candidates,
        overlay.map(|o| (o, local.as_slice())),
        CorpusStats::default(),
        FxHashMap::default(),
        None,
    )?;
    let hits = find_symbols(&assembled.snapshot, query, kind, limit);
    Ok(hits
        .into_iter()
        .filter_map(|mut symbol| {
            let &(repo, local) = assembled.paths.get(&symbol.path)?;
            let repo = &repos[repo];
            if assembled.prefixed {
                if let Some(rest) = symbol.path.strip_prefix(&format!("{}/", repo.name)) {
                    symbol.path = rest.to_string();
                }
            }
            Some(HubSymbol {
                repo: repo.name.clone(),
                commit: repo.commit.clone(),
                local,
                symbol,
            })
        })
        .collect())
}

/// The last name of a symbol query, lower-cased: `GraphStore::lookup`,
/// `store.lookup` and `lookup` all give `lookup`.
fn last_name(query: &str) -> Option<String> {
    query
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .rfind(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// `text` as a LIKE literal.
fn escape_like(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_name_is_what_the_hub_matches() {
        assert_eq!(last_name("GraphStore::lookup").as_deref(), Some("lookup"));
        assert_eq!(last_name("store.Lookup ").as_deref(), Some("lookup"));
        assert_eq!(last_name(":: ."), None);
        assert_eq!(escape_like("a_b%"), "a\\_b\\%");
    }
}
