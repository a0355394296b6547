//! Reading code out of the hub: one file of a repository (what an agent
//! reads after a hit in another repository) and the usages of an
//! identifier across the repositories a query may read.
//!
//! Owns: `file` and `usages`. Never: read a row the role may not
//! (row-level security filters every table, so a repository not granted
//! is one that does not exist), or match usages by anything but a whole
//! word of a chunk's own lines.

use super::candidates::RepoScope;
use super::candidates::{choose_repos, fetch_chunks, repo_index, shard_ids, HubChunk, Repo};
use super::conn::Hub;
use super::error::{sql, HubError};
use super::overlay::Overlay;
use crate::lexical::tokenize::{whole_word_matches, MAX_TOKEN_LEN};
use futures_util::future::join_all;

/// A file of a repository as the hub holds it.
#[derive(Clone, Debug)]
pub struct HubFile {
    pub repo: String,
    pub commit: String,
    pub path: String,
    pub text: String,
}

/// The text of `path` in repository `repo` (the first shard holding it),
/// `None` when no repository of that name is visible to this role or it
/// has no such file.
pub async fn file(hubs: &[Hub], repo: &str, path: &str) -> Result<Option<HubFile>, HubError> {
    for hub in hubs {
        let row = hub
            .client
            .query_opt(
                "SELECT r.commit_id, f.body FROM quarry_files f
                 JOIN quarry_repos r ON r.id = f.repo_id
                 WHERE r.name = $1 AND f.path = $2",
                &[&repo, &path],
            )
            .await
            .map_err(sql("reading a file"))?;
        if let Some(row) = row {
            return Ok(Some(HubFile {
                repo: repo.to_string(),
                commit: row.get(0),
                path: path.to_string(),
                text: row.get(1),
            }));
        }
    }
    Ok(None)
}

/// Where an identifier is used: one definition's lines that hold it.
#[derive(Clone, Debug)]
pub struct Usage {
    pub repo: String,
    pub commit: String,
    pub path: String,
    /// The definition the lines are in.
    pub symbol: String,
    pub kind: &'static str,
    /// (1-based line, its text trimmed).
    pub lines: Vec<(u32, String)>,
    /// From the workspace's own text (the overlay), not the hub's.
    pub local: bool,
}

/// Chunks read per shard that hold the identifier, heaviest first.
const USAGE_DEPTH: i64 = 400;

/// The usages of identifier `name` in the repositories of `scope` the role
/// may read: chunks whose own text holds it as a whole word (the postings
/// of the whole identifier, heaviest first), leaving out its definitions,
/// at most `limit`. `overlay` hides the hub's rows for the workspace's
/// changed paths and reads their current text instead.
pub async fn usages(
    hubs: &[Hub],
    scope: &RepoScope,
    name: &str,
    limit: usize,
    overlay: Option<&Overlay>,
) -> Result<Vec<Usage>, HubError> {
    let term = name.to_lowercase();
    if term.is_empty() || term.len() > MAX_TOKEN_LEN {
        return Ok(Vec::new());
    }
    let repos = choose_repos(hubs, scope).await?;
    if repos.is_empty() {
        return Ok(Vec::new());
    }
    let overlay = overlay.filter(|o| repos.iter().any(|r| r.name == o.repo));
    let found = join_all(hubs.iter().enumerate().map(|(shard, hub)| {
        let ids = shard_ids(&repos, shard);
        let (term, repos) = (&term, &repos);
        async move {
            if ids.is_empty() {
                return Ok::<_, HubError>(Vec::new());
            }
            let rows = hub
                .client
                .query(
                    "SELECT repo_id, chunk_id, weight::float8 FROM quarry_terms
                     WHERE term = $1 AND repo_id = ANY($2)
                     ORDER BY weight DESC, chunk_id LIMIT $3",
                    &[term, &ids, &USAGE_DEPTH],
                )
                .await
                .map_err(sql("finding usages"))?;
            Ok(rows
                .into_iter()
                .filter_map(|r| Some((repo_index(repos, shard, r.get(0))?, r.get(1), r.get(2))))
                .collect::<Vec<(usize, i64, f64)>>())
        }
    }))
    .await;
    let mut keys: Vec<(usize, i64, f64)> = Vec::new();
    for shard in found {
        keys.extend(shard?);
    }
    // Heaviest first, then by repository and chunk: one order however the
    // repositories are spread over shards.
    keys.sort_by(|a, b| {
        b.2.total_cmp(&a.2)
            .then_with(|| repos[a.0].name.cmp(&repos[b.0].name))
            .then(a.1.cmp(&b.1))
    });
    keys.truncate(USAGE_DEPTH as usize);
    let order: Vec<(usize, i64)> = keys.iter().map(|&(r, id, _)| (r, id)).collect();
    let mut chunks = fetch_chunks(hubs, &repos, &order, false).await?;
    let masked =
        |c: &HubChunk| overlay.is_some_and(|o| repos[c.repo].name == o.repo && o.masks(&c.path));
    chunks.retain(|c| !masked(c));
    // Back in the order the postings gave.
    let place: rustc_hash::FxHashMap<(usize, i64), usize> =
        order.iter().enumerate().map(|(i, &k)| (k, i)).collect();
    chunks.sort_by_key(|c| place.get(&(c.repo, c.id)).copied());
    let mut out: Vec<Usage> = Vec::new();
    // (`overlay` is only kept when it is one of `repos`.)
    if let Some((overlay, r)) =
        overlay.and_then(|o| Some((o, repos.iter().position(|r| r.name == o.repo)?)))
    {
        for file in &overlay.files {
            let holes = crate::index::segment::child_ranges(&file.chunks);
            for (chunk, holes) in file.chunks.iter().zip(holes) {
                if chunk.name == name {
                    continue;
                }
                let range = (chunk.byte_start, chunk.byte_end);
                let lines = used_on(&file.text, (0, 1), range, &holes, name);
                if !lines.is_empty() {
                    out.push(usage(&repos[r], &file.path, chunk, lines, true));
                }
            }
        }
    }
    for c in &chunks {
        if out.len() >= limit {
            break;
        }
        if c.chunk.name == name {
            continue;
        }
        let lines = used_on(
            &c.lines,
            (c.lines_start, c.chunk.start_line),
            (c.chunk.byte_start, c.chunk.byte_end),
            &c.holes,
            name,
        );
        if !lines.is_empty() {
            out.push(usage(&repos[c.repo], &c.path, &c.chunk, lines, false));
        }
    }
    out.truncate(limit);
    Ok(out)
}

fn usage(
    repo: &Repo,
    path: &str,
    chunk: &crate::chunk::Chunk,
    lines: Vec<(u32, String)>,
    local: bool,
) -> Usage {
    Usage {
        repo: repo.name.clone(),
        commit: repo.commit.clone(),
        path: path.to_string(),
        symbol: chunk.qualified_name.clone(),
        kind: chunk.kind.name(),
        lines,
        local,
    }
}

/// The lines of a chunk's own text holding `word` as a whole word (not
/// where its children are), with their 1-based numbers in the file and
/// their text trimmed. `text` is a piece of the file from byte `offset`,
/// whose first line is line `first_line`; the chunk is `start..end`.
fn used_on(
    text: &str,
    (offset, first_line): (u32, u32),
    (start, end): (u32, u32),
    holes: &[(u32, u32)],
    word: &str,
) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let mut at = offset as usize;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let base = at;
        at += line.len();
        let counts = whole_word_matches(line, word).any(|i| {
            let p = (base + i) as u32;
            (start..end).contains(&p) && !holes.iter().any(|&(h0, h1)| (h0..h1).contains(&p))
        });
        if counts {
            out.push((first_line + n as u32, line.trim().to_string()));
        }
    }
    out
}
