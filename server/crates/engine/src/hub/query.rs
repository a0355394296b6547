//! Answering a query from the hub.
//!
//! Owns: candidate retrieval in PostgreSQL (the lexical term table scored
//! BM25-style, HNSW over the chunks' vectors, the name index) and the
//! candidate snapshot: the candidate files rebuilt as segments, one per
//! repository, carrying the repositories' own corpus statistics and
//! document frequencies, so `search::search_analysed` ranks them exactly
//! as it ranks the local index (fusion, exact priority, phrases, the
//! code-aware signals, per-file caps).
//! Never: rank in SQL beyond choosing candidates, or read a row the role
//! may not (row-level security filters every table).

use super::conn::Hub;
use super::error::{sql, HubError};
use super::overlay::{Overlay, OverlaySource};
use super::push::vector_text;
use super::schema::DIM;
use crate::chunk::{Chunk, ChunkKind, Language};
use crate::dense::vectors::VectorIndex;
use crate::dense::DenseEngine;
use crate::index::segment::{own_text, ParsedFile, SegmentBuilder};
use crate::index::Snapshot;
use crate::layout::Layout;
use crate::lexical::stem::stem;
use crate::lexical::{Bm25Config, CorpusStats, Query};
use crate::search::{search_analysed, Coverage, Hit, Mode, SearchOptions, SearchQuery, TextSource};
use futures_util::future::join_all;
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;

/// Which repositories a query reads: every one the role may, or those
/// whose names match any of some globs (`*` any run, `?` one character).
#[derive(Clone, Debug, Default)]
pub struct RepoScope {
    pub globs: Vec<String>,
}

/// A hit and where it comes from.
#[derive(Clone, Debug, Serialize)]
pub struct HubHit {
    pub repo: String,
    pub commit: String,
    /// Ranked from the workspace's own text (the overlay), not the hub's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub local: bool,
    #[serde(flatten)]
    pub hit: Hit,
}

#[derive(Clone, Debug, Serialize)]
pub struct HubResults {
    pub mode: Mode,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub coverage: Coverage,
    pub hits: Vec<HubHit>,
    pub no_match: bool,
    /// The query's quoted phrases, as the ranking read them (a surface
    /// marks them in the hits it shows).
    #[serde(skip)]
    pub phrases: Vec<String>,
    /// Repositories searched.
    pub repos: usize,
    /// Chunks ranked of those PostgreSQL chose.
    pub candidate_chunks: usize,
    /// Files they come from, and the overlay's files ranked beside them.
    pub candidate_files: usize,
    /// Of those, files ranked from the workspace's own text.
    pub overlay_files: usize,
    /// The workspace's changes over the hub's copy, when a checkout of a
    /// searched repository is overlaid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overlay: Option<OverlayInfo>,
}

/// What the overlay found: how, and how many paths it hides from the hub.
#[derive(Clone, Debug, Serialize)]
pub struct OverlayInfo {
    pub repo: String,
    /// The hub's commit the checkout is compared with.
    pub commit: String,
    pub source: OverlaySource,
    /// Paths whose hub rows are hidden (changed, added, deleted, open).
    pub masked: usize,
}

/// Chunks the lexical candidate query returns: twice the depth the local
/// ranking reads per branch for its head (`search::HEAD_DEPTH`).
const LEXICAL_DEPTH: i64 = 100;
/// Chunks of the vector candidate list. Each shard returns twice as many,
/// so that of chunks at an equal distance (the same code in two
/// repositories) the list keeps the same ones however the repositories
/// are spread over shards (`sort_found` decides, not the graph's order).
const DENSE_DEPTH: i64 = 50;
/// Chunks the name candidate query returns.
const NAME_DEPTH: i64 = 50;
/// Candidate chunks ranked, taken from the three lists in turn (as many
/// as they hold together).
const MAX_CHUNKS: usize = (LEXICAL_DEPTH + DENSE_DEPTH + NAME_DEPTH) as usize;
/// Weight of a stem variant's idf next to the word as typed, the most
/// variants per word and how much longer than the stem one may be (as the
/// local lexical branch picks and counts them).
const STEM_VARIANT_WEIGHT: f32 = 0.7;
const MAX_STEM_VARIANTS: usize = 4;
const MAX_STEM_GROWTH: usize = 4;
/// Postings read per query term, heaviest first (`quarry_terms_weight`):
/// a chunk that holds a common word only lightly is found through its
/// other words, or not at all.
const POSTINGS_PER_TERM: i64 = 2000;
/// Candidate vectors past which the snapshot searches them flat instead of
/// building a graph.
const FLAT_VECTORS: usize = 2048;
/// Overlay files ranked beside the hub's candidates, past which only those
/// holding a query word are.
const MAX_OVERLAY_FILES: usize = 100;

/// A chunk as the hub holds it, with its vector when it has one.
type StoredChunk = (Chunk, Option<Vec<f32>>);

/// A repository of one of the hubs searched.
pub(super) struct Repo {
    /// Which hub (shard) holds it.
    pub(super) shard: usize,
    pub(super) id: i32,
    pub(super) name: String,
    pub(super) commit: String,
    n_docs: i64,
    sums: Vec<i64>,
    superseded: Vec<String>,
    model: String,
}

/// A chunk of the hubs: (repository, chunk id), the repository by its
/// place in the list of repositories searched.
pub(super) type ChunkKey = (usize, i64);

/// One candidate chunk from one list of one shard, with what orders it in
/// that list: `score` (higher first), then names, so the lists of several
/// shards merge into the list one server holding everything gives.
pub(super) struct Found {
    pub(super) score: f64,
    pub(super) name: String,
    pub(super) repo: usize,
    pub(super) path: String,
    pub(super) start: i32,
    pub(super) id: i64,
}

impl Found {
    /// A candidate list's row: (repository id, path, start, score, name,
    /// chunk id), from shard `shard`; `None` for a repository not searched.
    pub(super) fn from_row(
        repos: &[Repo],
        shard: usize,
        row: &tokio_postgres::Row,
    ) -> Option<Found> {
        Some(Found {
            repo: repo_index(repos, shard, row.get(0))?,
            path: row.get(1),
            start: row.get(2),
            score: row.get(3),
            name: row.get(4),
            id: row.get(5),
        })
    }
}

/// Searches the repositories in `scope` the role may read on every hub in
/// `hubs` (shards, each perhaps a read replica), in parallel, and ranks
/// their candidates as one corpus: the same results as one server holding
/// every repository. `dense` embeds the query; without it (or without
/// vectors in the hub) the answer is lexical and says why. `overlay`, the
/// workspace's own changes, hides the hub's rows for its paths and is
/// ranked in their place.
pub async fn search(
    hubs: &[Hub],
    scope: &RepoScope,
    query_text: &str,
    options: &SearchOptions,
    dense: Option<&DenseEngine>,
    overlay: Option<&Overlay>,
) -> Result<HubResults, HubError> {
    let mut out = HubResults {
        mode: Mode::Lexical,
        reason: None,
        coverage: Coverage {
            embedded: 0,
            total: 0,
        },
        hits: Vec::new(),
        no_match: true,
        phrases: Vec::new(),
        repos: 0,
        candidate_chunks: 0,
        candidate_files: 0,
        overlay_files: 0,
        overlay: None,
    };
    let mut trace = Trace::new();
    let repos = choose_repos(hubs, scope).await?;
    trace.mark("repositories");
    out.repos = repos.len();
    if repos.is_empty() {
        out.reason = Some("no repository in the hub matches (or this role is granted none)".into());
        return Ok(out);
    }
    let overlay = overlay.filter(|o| repos.iter().any(|r| r.name == o.repo));
    out.overlay = overlay.map(|o| OverlayInfo {
        repo: o.repo.clone(),
        commit: o.commit.clone(),
        source: o.source,
        masked: o.masked(),
    });
    let shard_ids: Vec<Vec<i32>> = (0..hubs.len())
        .map(|shard| shard_ids(&repos, shard))
        .collect();
    let mut stats = CorpusStats::default();
    for repo in &repos {
        stats.n_docs += repo.n_docs.max(0) as u64;
        for (sum, x) in stats.field_len_sums.iter_mut().zip(&repo.sums) {
            *sum += (*x).max(0) as u64;
        }
    }
    let analysed = SearchQuery::new(query_text);
    let query = &analysed.lexical;

    // Document frequencies of the query's terms and of the index words
    // sharing a word's stem (`retries` for `retry`), read by prefix range,
    // summed over the shards.
    let roots: Vec<(usize, String)> = query
        .terms
        .iter()
        .enumerate()
        .filter(|(_, w)| w.len() >= 4 && w.bytes().all(|b| b.is_ascii_lowercase()))
        .map(|(i, w)| (i, stem(w)))
        .filter(|(_, root)| !root.is_empty() && root.bytes().all(|b| b.is_ascii_lowercase()))
        .collect();
    let (lows, highs): (Vec<String>, Vec<String>) = roots
        .iter()
        .map(|(_, root)| (root.clone(), next_prefix(root)))
        .unzip();
    let mut term_df: FxHashMap<String, u64> = FxHashMap::default();
    let dfs = join_all(hubs.iter().zip(&shard_ids).map(|(hub, ids)| {
        let (terms, lows, highs) = (&query.terms, &lows, &highs);
        async move {
            hub.client
                .query(
                    "SELECT term, sum(df)::bigint FROM quarry_df
                     WHERE repo_id = ANY($1) AND term = ANY($2) GROUP BY term
                     UNION
                     SELECT d.term, sum(d.df)::bigint
                     FROM unnest($3::text[], $4::text[]) AS r (lo, hi)
                     JOIN quarry_df d ON d.term >= r.lo AND d.term < r.hi
                         AND length(d.term) <= length(r.lo) + $5
                     WHERE d.repo_id = ANY($1) GROUP BY d.term",
                    &[ids, terms, lows, highs, &(MAX_STEM_GROWTH as i32)],
                )
                .await
                .map_err(sql("reading document frequencies"))
        }
    }))
    .await;
    for rows in dfs {
        for r in rows? {
            *term_df.entry(r.get::<_, String>(0)).or_default() += r.get::<_, i64>(1).max(0) as u64;
        }
    }

    // Candidates, three lists of files. The words scored are the query's
    // and, per word, its first stem variants (as the local lexical branch
    // picks them).
    let mut scored: Vec<(String, f32)> = query
        .terms
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), query.weights.get(i).copied().unwrap_or(1.0)))
        .collect();
    for (i, root) in &roots {
        let mut variants: Vec<&String> = term_df
            .keys()
            .filter(|t| {
                !query.terms.contains(t)
                    && t.starts_with(root.as_str())
                    && t.len() <= root.len() + MAX_STEM_GROWTH
                    && t.bytes().all(|b| b.is_ascii_lowercase())
                    && stem(t) == *root
            })
            .collect();
        variants.sort();
        let weight = query.weights.get(*i).copied().unwrap_or(1.0) * STEM_VARIANT_WEIGHT;
        scored.extend(
            variants
                .into_iter()
                .take(MAX_STEM_VARIANTS)
                .map(|t| (t.clone(), weight)),
        );
    }
    let (terms, weights): (Vec<String>, Vec<f32>) = scored
        .into_iter()
        .filter_map(|(term, weight)| {
            let df = *term_df.get(&term)?;
            Some((term, weight * stats.idf(df)))
        })
        .unzip();
    trace.mark("document frequencies");
    let k1 = Bm25Config::default().k1;
    let names: Vec<String> = name_words(analysed.text);
    let engine = dense.filter(|e| e.unavailable_reason().is_none() && e.dim() == DIM);
    let same_model = engine
        .and_then(DenseEngine::model_id)
        .is_some_and(|m| repos.iter().all(|r| r.model == m));
    let query_vector = match engine {
        Some(engine) if same_model => engine.embed_query(&analysed.embedding).ok(),
        _ => None,
    };
    let vector_param = query_vector.as_ref().map(|v| vector_text(v));
    // Candidate vectors travel only when the dense branch will read them.
    let vectors_wanted = query_vector.is_some();
    let lists = join_all(
        hubs.iter()
            .zip(&shard_ids)
            .enumerate()
            .map(|(shard, (hub, ids))| {
                let (terms, weights, names, vector_param) =
                    (&terms, &weights, &names, &vector_param);
                // The vector list on the reader's second connection,
                // beside the lexical and name lists on the first.
                let near = async move {
                    match vector_param {
                        Some(vector) => hub
                            .side()
                            .query(
                                "SELECT repo_id, path, byte_start,
                                -(embedding <=> ($2::text)::halfvec)::float8, ''::text, id
                         FROM quarry_chunks
                         WHERE repo_id = ANY($1) AND embedding IS NOT NULL
                         ORDER BY embedding <=> ($2::text)::halfvec LIMIT $3",
                                &[ids, vector, &(DENSE_DEPTH * 2)],
                            )
                            .await
                            .map_err(sql("finding vector candidates")),
                        None => Ok(Vec::new()),
                    }
                };
                let words = async move {
                    let client = &hub.client;
                    let lexical = client
                .query(
                    "WITH q AS (SELECT * FROM unnest($2::text[], $3::real[]) AS q (term, w)),
                          p AS (SELECT q.w, t.chunk_id, t.weight FROM q CROSS JOIN LATERAL
                                    (SELECT chunk_id, weight FROM quarry_terms t
                                     WHERE t.term = q.term AND t.repo_id = ANY($1)
                                     ORDER BY t.weight DESC LIMIT $6) t),
                          s AS (SELECT chunk_id, sum((w * weight / ($4 + weight))::float8) AS score
                                FROM p GROUP BY chunk_id ORDER BY score DESC LIMIT $5::bigint * 2)
                     SELECT c.repo_id, c.path, c.byte_start, s.score, ''::text, c.id
                     FROM s JOIN quarry_chunks c ON c.id = s.chunk_id
                     JOIN quarry_repos r ON r.id = c.repo_id
                     ORDER BY s.score DESC, r.name, c.path, c.byte_start LIMIT $5",
                    &[ids, terms, weights, &k1, &LEXICAL_DEPTH, &POSTINGS_PER_TERM],
                )
                .await
                .map_err(sql("finding lexical candidates"))?;
                    let named = client
                        .query(
                            "SELECT c.repo_id, c.path, c.byte_start, 0::float8, lower(c.name), c.id
                     FROM quarry_chunks c JOIN quarry_repos r ON r.id = c.repo_id
                     WHERE lower(c.name) = ANY($2) AND c.repo_id = ANY($1)
                     ORDER BY lower(c.name), r.name, c.path, c.byte_start LIMIT $3",
                            &[ids, names, &NAME_DEPTH],
                        )
                        .await
                        .map_err(sql("finding name candidates"))?;
                    Ok::<_, HubError>((lexical, named))
                };
                async move {
                    let (words, near) = futures_util::future::join(words, near).await;
                    let (lexical, named) = words?;
                    Ok::<_, HubError>([lexical, named, near?].map(|rows| (shard, rows)))
                }
            }),
    )
    .await;
    trace.mark("candidate lists (and the query's vector)");
    let mut merged: [Vec<Found>; 3] = Default::default();
    for shard_lists in lists {
        for (list, (shard, rows)) in merged.iter_mut().zip(shard_lists?) {
            list.extend(
                rows.iter()
                    .filter_map(|r| Found::from_row(&repos, shard, r)),
            );
        }
    }
    let depths = [LEXICAL_DEPTH, NAME_DEPTH, DENSE_DEPTH];
    let chunk_lists: Vec<Vec<ChunkKey>> = merged
        .into_iter()
        .zip(depths)
        .map(|(mut list, depth)| {
            sort_found(&mut list, &repos);
            list.truncate(depth as usize);
            let masked = |f: &Found| {
                overlay.is_some_and(|o| repos[f.repo].name == o.repo && o.masks(&f.path))
            };
            list.into_iter()
                .filter(|f| !masked(f))
                .map(|f| (f.repo, f.id))
                .collect()
        })
        .collect();
    let keys = interleave(&chunk_lists, MAX_CHUNKS);
    let overlay_files: Vec<usize> = overlay
        .map(|o| local_candidates(o, query, &names))
        .unwrap_or_default();
    if keys.is_empty() && overlay_files.is_empty() {
        out.reason = Some("no chunk in the hub holds the query's words or names".into());
        return Ok(out);
    }

    let candidates = fetch_chunks(hubs, &repos, &keys, vectors_wanted).await?;
    trace.mark("reading candidate chunks");
    let files: rustc_hash::FxHashSet<(usize, &str)> = candidates
        .iter()
        .map(|c| (c.repo, c.path.as_str()))
        .collect();
    out.candidate_chunks = candidates.len();
    out.candidate_files = files.len() + overlay_files.len();
    out.overlay_files = overlay_files.len();
    // Few vectors: a graph, as the local index holds them (the same
    // scores to the last bit); many (a large overlay): searched flat.
    let n_vectors: usize = candidates.iter().filter(|c| c.vector.is_some()).count()
        + overlay.map_or(0, |o| {
            o.vectors.iter().flatten().filter(|v| v.is_some()).count()
        });
    let vectors = match (engine, same_model) {
        (Some(engine), true) => engine
            .model_id()
            .and_then(|m| {
                if n_vectors > FLAT_VECTORS {
                    VectorIndex::flat(m, DIM).ok()
                } else {
                    VectorIndex::new(m, DIM).ok()
                }
            })
            .map(Arc::new),
        _ => None,
    };
    let n_keys = keys.len();
    let Assembled {
        snapshot,
        mut text,
        chunk_repos,
        prefixed,
        ..
    } = assemble(
        &repos,
        candidates,
        overlay.map(|o| (o, overlay_files.as_slice())),
        stats,
        term_df,
        vectors,
    )?;
    let engine = if same_model { engine } else { None };
    trace.mark("assembling the candidate snapshot");
    let results = search_analysed(&snapshot, &analysed, options, &mut text, engine, None);
    trace.mark("ranking");
    trace.finish(analysed.text, n_keys);
    out.mode = results.mode;
    let usable = dense.is_some_and(|d| d.unavailable_reason().is_none());
    out.reason = if usable && !same_model {
        Some("the hub holds no vectors of this model: lexical-only search".into())
    } else {
        results.reason
    };
    out.coverage = results.coverage;
    out.no_match = results.no_match;
    out.phrases = results.phrases;
    out.hits = results
        .hits
        .into_iter()
        .filter_map(|mut hit| {
            let &(_, _, r, local) = chunk_repos
                .iter()
                .find(|(first, end, _, _)| (*first..*end).contains(&hit.chunk_id))?;
            let repo = &repos[r];
            if prefixed {
                if let Some(rest) = hit.path.strip_prefix(&format!("{}/", repo.name)) {
                    hit.path = rest.to_string();
                }
            }
            Some(HubHit {
                repo: repo.name.clone(),
                commit: repo.commit.clone(),
                local,
                hit,
            })
        })
        .collect();
    Ok(out)
}

/// The repositories in `scope` the role may read, over every shard, in
/// one order (by name) whatever shard holds what; a name on two shards is
/// read from the first.
pub(super) async fn choose_repos(hubs: &[Hub], scope: &RepoScope) -> Result<Vec<Repo>, HubError> {
    let patterns: Vec<String> = if scope.globs.is_empty() {
        vec!["%".to_string()]
    } else {
        scope.globs.iter().map(|g| like_pattern(g)).collect()
    };
    let per_shard = join_all(hubs.iter().enumerate().map(|(shard, hub)| {
        let patterns = &patterns;
        async move {
            let rows = hub
                .client
                .query(
                    "SELECT id, name, commit_id, n_docs, field_len_sums, superseded, model
                     FROM quarry_repos WHERE name LIKE ANY($1) ORDER BY name",
                    &[patterns],
                )
                .await
                .map_err(sql("choosing repositories"))?;
            Ok::<_, HubError>(
                rows.into_iter()
                    .map(|r| Repo {
                        shard,
                        id: r.get(0),
                        name: r.get(1),
                        commit: r.get(2),
                        n_docs: r.get(3),
                        sums: r.get(4),
                        superseded: r.get(5),
                        model: r.get(6),
                    })
                    .collect::<Vec<_>>(),
            )
        }
    }))
    .await;
    let mut repos: Vec<Repo> = Vec::new();
    for shard in per_shard {
        repos.extend(shard?);
    }
    repos.sort_by(|a, b| a.name.cmp(&b.name).then(a.shard.cmp(&b.shard)));
    repos.dedup_by(|b, a| a.name == b.name);
    Ok(repos)
}

/// A candidate chunk as the hub holds it: its record, its whole lines and
/// its children's ranges (all a ranking reads of its file), and its vector
/// when the dense branch reads one.
pub(super) struct HubChunk {
    pub(super) repo: usize,
    pub(super) id: i64,
    pub(super) path: String,
    pub(super) chunk: Chunk,
    /// Byte offset in the file of the start of the chunk's first line.
    pub(super) lines_start: u32,
    /// The chunk's lines, whole.
    pub(super) lines: String,
    /// Its direct children's byte ranges, in order.
    pub(super) holes: Vec<(u32, u32)>,
    pub(super) vector: Option<Vec<f32>>,
}

/// The candidate chunks `keys` (repository, chunk id), each shard reading
/// its own, in no particular order.
pub(super) async fn fetch_chunks(
    hubs: &[Hub],
    repos: &[Repo],
    keys: &[ChunkKey],
    with_vectors: bool,
) -> Result<Vec<HubChunk>, HubError> {
    let repo_at = |shard: usize, id: i32| repo_index(repos, shard, id);
    let fetched = join_all(hubs.iter().enumerate().map(|(shard, hub)| {
        let ids: Vec<i64> = keys
            .iter()
            .filter(|(r, _)| repos[*r].shard == shard)
            .map(|(_, id)| *id)
            .collect();
        async move {
            if ids.is_empty() {
                return Ok::<_, HubError>((shard, Vec::new()));
            }
            let rows = hub
                .client
                .query(
                    "SELECT c.repo_id, c.path, f.language, c.kind, c.name, c.qualified_name,
                            c.container, c.byte_start, c.byte_end, c.start_line, c.end_line,
                            c.name_line, c.name_column, c.signature, c.doc,
                            c.lines_start, c.lines, c.holes,
                            CASE WHEN $2 THEN c.embedding END, c.id
                     FROM quarry_chunks c
                     JOIN quarry_files f ON f.repo_id = c.repo_id AND f.path = c.path
                     WHERE c.id = ANY($1)",
                    &[&ids, &with_vectors],
                )
                .await
                .map_err(sql("reading candidate chunks"))?;
            Ok((shard, rows))
        }
    }))
    .await;
    let mut out = Vec::new();
    for shard in fetched {
        let (shard, rows) = shard?;
        for r in rows {
            let Some(repo) = repo_at(shard, r.get(0)) else {
                continue;
            };
            let Some(kind) = ChunkKind::from_name(r.get(3)) else {
                continue;
            };
            let language = Language::from_name(r.get(2)).unwrap_or(Language::Text);
            let at = |i: usize| r.get::<_, i32>(i).max(0) as u32;
            let holes: Vec<i32> = r.get(17);
            out.push(HubChunk {
                repo,
                id: r.get(19),
                path: r.get(1),
                chunk: Chunk {
                    language,
                    kind,
                    name: r.get(4),
                    qualified_name: r.get(5),
                    container: r.get(6),
                    byte_start: at(7),
                    byte_end: at(8),
                    start_line: at(9),
                    end_line: at(10),
                    name_line: at(11),
                    name_column: at(12),
                    signature: r.get(13),
                    doc: r.get(14),
                },
                lines_start: at(15),
                lines: r.get(16),
                holes: holes
                    .chunks_exact(2)
                    .map(|h| (h[0].max(0) as u32, h[1].max(0) as u32))
                    .collect(),
                vector: r.get::<_, Option<HalfVec>>(18).map(|v| v.0),
            });
        }
    }
    Ok(out)
}

/// A sparse copy of one file: each chunk's whole lines at their byte
/// offsets and line numbers, blanks (spaces and line breaks) between.
/// What a ranking reads of a file (a chunk's text, its lines for a snippet
/// and a detail line) is the file's own; nothing else is there.
fn sparse_file<'c>(chunks: impl IntoIterator<Item = &'c HubChunk>) -> String {
    let mut pieces: Vec<(u32, u32, &str)> = chunks
        .into_iter()
        .map(|c| (c.lines_start, c.chunk.start_line.max(1), c.lines.as_str()))
        .collect();
    pieces.sort_by_key(|&(start, line, _)| (start, line));
    let mut out = String::new();
    let mut line = 1u32;
    for (start, start_line, text) in pieces {
        let cursor = out.len() as u32;
        let body = if start < cursor {
            // Nested in (or overlapping) a piece already placed: only what
            // lies past it.
            match text.get((cursor - start) as usize..) {
                Some(rest) if !rest.is_empty() => rest,
                _ => continue,
            }
        } else {
            let gap = (start - cursor) as usize;
            let breaks = start_line.saturating_sub(line) as usize;
            if breaks > gap || (breaks == 0 && gap > 0 && cursor > 0) {
                // Ranges that contradict each other: this piece is left out
                // (its chunk is then resolved from a blank).
                continue;
            }
            if cursor > 0 && breaks > 0 {
                out.push('\n');
                out.extend(std::iter::repeat_n(' ', gap - breaks));
                out.extend(std::iter::repeat_n('\n', breaks - 1));
            } else {
                out.extend(std::iter::repeat_n(' ', gap - breaks));
                out.extend(std::iter::repeat_n('\n', breaks));
            }
            line += breaks as u32;
            text
        };
        line += body.matches('\n').count() as u32;
        out.push_str(body);
    }
    out
}

/// The candidate snapshot and what maps its chunks back to repositories.
pub(super) struct Assembled {
    pub(super) snapshot: Snapshot,
    pub(super) text: HubText,
    /// (first chunk id, end, repository, from the overlay) per run of
    /// chunk ids.
    pub(super) chunk_repos: Vec<(u32, u32, usize, bool)>,
    /// Paths carry their repository's name (several repositories).
    pub(super) prefixed: bool,
    /// Each path as the snapshot shows it: its repository, and whether it
    /// is the overlay's.
    pub(super) paths: FxHashMap<String, (usize, bool)>,
}

/// Builds the candidate chunks into segments, one per repository (and one
/// for its overlay files), with the repositories' corpus statistics and
/// document frequencies (the overlay's words added). Each chunk is indexed
/// from its own text without its children's, as the local index does.
pub(super) fn assemble(
    repos: &[Repo],
    mut candidates: Vec<HubChunk>,
    overlay: Option<(&Overlay, &[usize])>,
    mut stats: CorpusStats,
    mut term_df: FxHashMap<String, u64>,
    vectors: Option<Arc<VectorIndex>>,
) -> Result<Assembled, HubError> {
    let prefixed = repos.len() > 1;
    let shown = |repo: &Repo, path: &str| {
        if prefixed {
            format!("{}/{path}", repo.name)
        } else {
            path.to_string()
        }
    };
    // By repository, file and place: one order whatever shard held what.
    candidates.sort_by(|a, b| {
        (
            a.repo,
            &a.path,
            a.chunk.byte_start,
            std::cmp::Reverse(a.chunk.byte_end),
        )
            .cmp(&(
                b.repo,
                &b.path,
                b.chunk.byte_start,
                std::cmp::Reverse(b.chunk.byte_end),
            ))
    });
    let mut segments = Vec::new();
    // (first chunk id, end, repository, from the overlay)
    let mut chunk_repos: Vec<(u32, u32, usize, bool)> = Vec::new();
    let mut text = HubText::default();
    let mut paths = FxHashMap::default();
    let mut next_id = 0u32;
    let mut pending_vectors: Vec<(u32, Vec<f32>)> = Vec::new();
    // The hub's candidates in one segment (building one costs the same
    // for few chunks as for many), a run of chunk ids per repository.
    let mut builder = SegmentBuilder::new();
    let mut rest = candidates.as_mut_slice();
    while let Some(r) = rest.first().map(|c| c.repo) {
        let repo = &repos[r];
        let first = next_id;
        while rest.first().is_some_and(|c| c.repo == r) {
            let n = rest
                .iter()
                .take_while(|c| c.repo == r && c.path == rest[0].path)
                .count();
            let (file, tail) = std::mem::take(&mut rest).split_at_mut(n);
            rest = tail;
            let sparse = sparse_file(file.iter());
            let placed = |c: &HubChunk| {
                let at = c.lines_start as usize;
                sparse.get(at..at + c.lines.len()) == Some(c.lines.as_str())
            };
            let bodies: Vec<Vec<&str>> = file
                .iter()
                .filter(|c| placed(c))
                .map(|c| own_text(&sparse, c.chunk.byte_start, c.chunk.byte_end, &c.holes))
                .collect();
            let mut file_chunks = Vec::with_capacity(bodies.len());
            for c in file.iter_mut().filter(|c| placed(c)) {
                if let Some(vector) = c.vector.take() {
                    pending_vectors.push((next_id + file_chunks.len() as u32, vector));
                }
                file_chunks.push(c.chunk.clone());
            }
            if file_chunks.is_empty() {
                continue;
            }
            next_id += file_chunks.len() as u32;
            let path = shown(repo, &file[0].path);
            builder.add_file_with_bodies(
                ParsedFile {
                    path: &path,
                    size: sparse.len() as u64,
                    mtime_ns: 0,
                    stamp: 0,
                    // The hub's text is the indexed text: hits resolve
                    // at the stored lines, never re-parsed.
                    hash: *blake3::hash(sparse.as_bytes()).as_bytes(),
                    language: file_chunks[0].language,
                    text: &sparse,
                    chunks: file_chunks,
                },
                bodies,
            );
            paths.insert(path.clone(), (r, false));
            text.files.insert(path, sparse);
        }
        if next_id > first {
            chunk_repos.push((first, next_id, r, false));
        }
    }
    if builder.n_chunks() > 0 {
        segments.push(Arc::new(builder.finish(0, 0)));
    }
    for (r, repo) in repos.iter().enumerate() {
        // The workspace's own files, as they are now.
        let Some((overlay, overlay_files)) = overlay.filter(|(o, _)| o.repo == repo.name) else {
            continue;
        };
        let mut builder = SegmentBuilder::new();
        let first = next_id;
        for &f in overlay_files {
            let file = &overlay.files[f];
            let path = shown(repo, &file.path);
            let stored = file
                .chunks
                .iter()
                .cloned()
                .zip(overlay.vectors[f].iter().cloned())
                .collect();
            add_file(
                &mut builder,
                &mut next_id,
                &mut pending_vectors,
                &path,
                file.language,
                &file.text,
                stored,
            );
            paths.insert(path.clone(), (r, true));
            text.files.insert(path, file.text.clone());
        }
        if builder.n_chunks() > 0 {
            let segment = builder.finish(segments.len() as u64, first);
            // The overlay's words count in the corpus too (a name only the
            // checkout has would otherwise score nothing).
            stats.n_docs += segment.chunks.len() as u64;
            segment.lexical.for_each_term(|term, ordinal| {
                *term_df.entry(term.to_string()).or_default() +=
                    u64::from(segment.lexical.df(ordinal));
            });
            segments.push(Arc::new(segment));
            chunk_repos.push((first, next_id, r, true));
        }
    }
    if let Some(index) = &vectors {
        let entries: Vec<(u32, &[f32])> = pending_vectors
            .iter()
            .filter(|(_, v)| v.len() == DIM)
            .map(|(id, v)| (*id, v.as_slice()))
            .collect();
        index
            .add(&entries)
            .map_err(|e| HubError::Invalid(format!("candidate vectors: {e}")))?;
    }
    let layout = Layout::from_folders(
        repos
            .iter()
            .flat_map(|repo| repo.superseded.iter().map(move |f| shown(repo, f)))
            .collect::<Vec<_>>()
            .iter()
            .map(String::as_str),
    );
    let snapshot = Snapshot::assemble(
        PathBuf::new(),
        segments,
        stats,
        term_df,
        vectors,
        Arc::new(layout),
    );
    Ok(Assembled {
        snapshot,
        text,
        chunk_repos,
        prefixed,
        paths,
    })
}

/// Per-stage times of a hub query, printed to stderr when `QUARRY_HUB_TRACE`
/// is set (why is a query slow: the database, the transfer, the ranking).
struct Trace {
    on: bool,
    last: std::time::Instant,
    stages: Vec<(&'static str, f64)>,
}

impl Trace {
    fn new() -> Trace {
        Trace {
            on: std::env::var_os("QUARRY_HUB_TRACE").is_some(),
            last: std::time::Instant::now(),
            stages: Vec::new(),
        }
    }

    fn mark(&mut self, stage: &'static str) {
        if self.on {
            let now = std::time::Instant::now();
            self.stages
                .push((stage, (now - self.last).as_secs_f64() * 1000.0));
            self.last = now;
        }
    }

    fn finish(&self, query: &str, chunks: usize) {
        if self.on {
            let stages: Vec<String> = self
                .stages
                .iter()
                .map(|(stage, ms)| format!("{stage} {ms:.1} ms"))
                .collect();
            eprintln!(
                "quarry: hub {query:?} ({chunks} candidate chunks): {}",
                stages.join(", ")
            );
        }
    }
}

/// Adds one overlay file to a segment, its chunks numbered from
/// `next_id` and their vectors set aside for the snapshot's vector index.
fn add_file(
    builder: &mut SegmentBuilder,
    next_id: &mut u32,
    pending_vectors: &mut Vec<(u32, Vec<f32>)>,
    path: &str,
    language: Language,
    body: &str,
    mut file_chunks: Vec<StoredChunk>,
) {
    // In the builder's order, so that each vector keeps its chunk's id.
    file_chunks.sort_by(|a, b| {
        a.0.byte_start
            .cmp(&b.0.byte_start)
            .then(b.0.byte_end.cmp(&a.0.byte_end))
    });
    for (i, (_, vector)) in file_chunks.iter_mut().enumerate() {
        if let Some(vector) = vector.take() {
            pending_vectors.push((*next_id + i as u32, vector));
        }
    }
    *next_id += file_chunks.len() as u32;
    builder.add_file(ParsedFile {
        path,
        size: body.len() as u64,
        mtime_ns: 0,
        stamp: 0,
        // The text ranked is the text its chunks come from: hits resolve
        // at their stored lines, never re-parsed.
        hash: *blake3::hash(body.as_bytes()).as_bytes(),
        language,
        text: body,
        chunks: file_chunks.into_iter().map(|(c, _)| c).collect(),
    });
}

/// The overlay's files a query ranks: every one while there are few; past
/// [`MAX_OVERLAY_FILES`], those whose text holds one of the query's words
/// or names (any case).
fn local_candidates(overlay: &Overlay, query: &Query, names: &[String]) -> Vec<usize> {
    let all: Vec<usize> = (0..overlay.files.len())
        .filter(|&f| !overlay.files[f].chunks.is_empty())
        .collect();
    if all.len() <= MAX_OVERLAY_FILES {
        return all;
    }
    let words: Vec<&str> = query
        .terms
        .iter()
        .chain(names)
        .map(String::as_str)
        .filter(|w| w.len() >= 2)
        .collect();
    all.into_iter()
        .filter(|&f| {
            let text = overlay.files[f].text.to_lowercase();
            words.iter().any(|w| text.contains(w))
        })
        .take(MAX_OVERLAY_FILES)
        .collect()
}

/// The file texts of the candidate snapshot.
#[derive(Default)]
pub(super) struct HubText {
    files: FxHashMap<String, String>,
}

impl TextSource for HubText {
    fn text(&mut self, path: &str) -> Option<&str> {
        self.files.get(path).map(String::as_str)
    }
}

/// The ids of the repositories of `repos` that shard `shard` holds.
pub(super) fn shard_ids(repos: &[Repo], shard: usize) -> Vec<i32> {
    repos
        .iter()
        .filter(|r| r.shard == shard)
        .map(|r| r.id)
        .collect()
}

/// Where shard `shard`'s repository `id` is in `repos`.
pub(super) fn repo_index(repos: &[Repo], shard: usize, id: i32) -> Option<usize> {
    repos.iter().position(|r| r.shard == shard && r.id == id)
}

/// One list's candidates from every shard in the order one server holding
/// them all gives: score (higher first), then name, repository, path and
/// place.
pub(super) fn sort_found(list: &mut [Found], repos: &[Repo]) {
    list.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| repos[a.repo].name.cmp(&repos[b.repo].name))
            .then_with(|| a.path.cmp(&b.path))
            .then(a.start.cmp(&b.start))
    });
}

/// The lists' entries taken in turn (first of each, then second of each),
/// each once, at most `max`.
fn interleave<T: Clone + Eq + std::hash::Hash>(lists: &[Vec<T>], max: usize) -> Vec<T> {
    let mut seen = rustc_hash::FxHashSet::default();
    let mut out = Vec::new();
    let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
    for i in 0..longest {
        for list in lists {
            if let Some(key) = list.get(i) {
                if out.len() < max && seen.insert(key.clone()) {
                    out.push(key.clone());
                }
            }
        }
    }
    out
}

/// The query's words that could be names (`GraphStore::lookup` gives
/// `graphstore` and `lookup`), lower-cased.
fn name_words(query: &str) -> Vec<String> {
    let mut words: Vec<String> = query
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .filter(|w| w.len() >= 2)
        .map(str::to_lowercase)
        .collect();
    words.sort();
    words.dedup();
    words.truncate(64);
    words
}

/// A LIKE pattern for a glob: `*` any run, `?` one character, the rest
/// literal.
fn like_pattern(glob: &str) -> String {
    let mut out = String::new();
    for c in glob.chars() {
        match c {
            '*' => out.push('%'),
            '?' => out.push('_'),
            '%' | '_' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// The first string after every string that starts with `prefix` (an
/// ASCII lower-case stem): its last byte raised by one.
fn next_prefix(prefix: &str) -> String {
    let mut bytes = prefix.as_bytes().to_vec();
    if let Some(last) = bytes.last_mut() {
        *last += 1;
    }
    String::from_utf8(bytes).unwrap_or_else(|_| format!("{prefix}\u{10ffff}"))
}

/// A pgvector `halfvec` in its binary form (what the server sends, a
/// quarter of the text form): dimensions and a reserved field as int16,
/// then each value as an IEEE half float, big-endian.
struct HalfVec(Vec<f32>);

impl<'a> tokio_postgres::types::FromSql<'a> for HalfVec {
    fn from_sql(
        _: &tokio_postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<HalfVec, Box<dyn std::error::Error + Sync + Send>> {
        let Some((head, body)) = raw.split_first_chunk::<4>() else {
            return Err("halfvec: shorter than its header".into());
        };
        let dim = usize::from(u16::from_be_bytes([head[0], head[1]]));
        if body.len() != dim * 2 {
            return Err(format!("halfvec: {} bytes for {dim} dimensions", body.len()).into());
        }
        Ok(HalfVec(
            body.chunks_exact(2)
                .map(|b| half::f16::from_be_bytes([b[0], b[1]]).to_f32())
                .collect(),
        ))
    }

    fn accepts(ty: &tokio_postgres::types::Type) -> bool {
        ty.name() == "halfvec"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_become_like_patterns_with_literals_escaped() {
        assert_eq!(like_pattern("serde*"), "serde%");
        assert_eq!(like_pattern("a_b?%"), "a\\_b_\\%");
    }

    #[test]
    fn candidate_lists_are_taken_in_turn() {
        let a = vec![(1, "a".to_string()), (1, "b".to_string())];
        let b = vec![(1, "b".to_string()), (1, "c".to_string())];
        let got = interleave(&[a, b], 10);
        let paths: Vec<&str> = got.iter().map(|(_, p)| p.as_str()).collect();
        assert_eq!(paths, ["a", "b", "c"]);
    }

    #[test]
    fn a_prefix_range_ends_after_every_word_it_starts() {
        let hi = next_prefix("retri");
        assert_eq!(hi, "retrj");
        for word in ["retri", "retries", "retrieving"] {
            assert!(word >= "retri" && word < hi.as_str(), "{word}");
        }
        assert!("retrj" >= hi.as_str());
    }

    #[test]
    fn halfvecs_read_from_their_binary_form() {
        use tokio_postgres::types::{FromSql, Type};
        let mut raw = vec![0, 3, 0, 0];
        for x in [0.5f32, -1.0, 0.25] {
            raw.extend(half::f16::from_f32(x).to_be_bytes());
        }
        let ty = Type::TEXT; // (the type is checked by `accepts`)
        assert_eq!(HalfVec::from_sql(&ty, &raw).unwrap().0, [0.5, -1.0, 0.25]);
        assert!(HalfVec::from_sql(&ty, &raw[..5]).is_err());
        assert!(HalfVec::from_sql(&ty, &raw[..2]).is_err());
    }

    #[test]
    fn names_are_split_out_of_paths() {
        assert_eq!(name_words("GraphStore::lookup x"), ["graphstore", "lookup"]);
    }

    /// A candidate chunk of `text` (its range given by a needle) as the hub
    /// stores it.
    fn stored(text: &str, needle: &str, holes: Vec<(u32, u32)>) -> HubChunk {
        let at = text.find(needle).unwrap();
        let lines_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let end = at + needle.len();
        let lines_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
        let line = text[..at].matches('\n').count() as u32 + 1;
        HubChunk {
            repo: 0,
            id: 1,
            path: "f.rs".into(),
            chunk: Chunk {
                language: Language::Rust,
                kind: ChunkKind::Function,
                name: "f".into(),
                qualified_name: "f".into(),
                container: None,
                byte_start: at as u32,
                byte_end: end as u32,
                start_line: line,
                end_line: line + needle.matches('\n').count() as u32,
                name_line: line,
                name_column: 0,
                signature: String::new(),
                doc: String::new(),
            },
            lines_start: lines_start as u32,
            lines: text[lines_start..lines_end].to_string(),
            holes,
            vector: None,
        }
    }

    #[test]
    fn a_sparse_file_holds_its_chunks_at_their_bytes_and_lines() {
        let text = "// head\n\nimpl A {\n    fn one() {\n        1\n    }\n}\n\n// gap\n\tfn two() {}\n// tail\n";
        let one = stored(text, "fn one() {\n        1\n    }", Vec::new());
        let outer = stored(
            text,
            "impl A {\n    fn one() {\n        1\n    }\n}",
            Vec::new(),
        );
        let two = stored(text, "fn two() {}", Vec::new());
        let sparse = sparse_file([&two, &one, &outer]);
        for c in [&one, &outer, &two] {
            let (a, b) = (c.chunk.byte_start as usize, c.chunk.byte_end as usize);
            assert_eq!(&sparse[a..b], &text[a..b]);
            let first = sparse.lines().nth(c.chunk.start_line as usize - 1).unwrap();
            assert_eq!(
                first,
                text.lines().nth(c.chunk.start_line as usize - 1).unwrap()
            );
        }
        assert!(!sparse.contains("head") && !sparse.contains("gap"));
        assert_eq!(sparse.len(), text.find("\n// tail").unwrap());
        // A range that contradicts the lines before it is left out.
        let mut wrong = stored(text, "fn two() {}", Vec::new());
        wrong.chunk.start_line = 99;
        assert!(!sparse_file([&one, &wrong]).contains("two"));
    }

    #[test]
    fn a_chunk_is_indexed_without_its_children() {
        let text = "impl A {\n    fn one() {}\n}\n";
        let kid = text.find("fn one() {}").unwrap() as u32;
        let hole = (kid, kid + "fn one() {}".len() as u32);
        let outer = stored(text, "impl A {\n    fn one() {}\n}", vec![hole]);
        let sparse = sparse_file([&outer]);
        let own = own_text(
            &sparse,
            outer.chunk.byte_start,
            outer.chunk.byte_end,
            &outer.holes,
        );
        assert_eq!(own.concat(), "impl A {\n    \n}");
    }
}
