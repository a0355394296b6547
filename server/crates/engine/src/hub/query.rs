//! Answering a query from the hub.
//!
//! Owns: candidate retrieval in PostgreSQL (the lexical term table scored
//! BM25-style, HNSW over the chunks' vectors, the name index), then the
//! ranking of the candidate snapshot (`candidates::assemble`) by
//! `search::search_analysed`, exactly as the local index is ranked
//! (fusion, exact priority, phrases, the code-aware signals, per-file
//! caps), and the hits mapped back to their repositories.
//! Never: rank in SQL beyond choosing candidates, or read a row the role
//! may not (row-level security filters every table).

use super::candidates::{
    assemble, choose_repos, fetch_chunks, shard_ids, sort_found, Assembled, ChunkKey, Found,
    RepoScope,
};
use super::conn::Hub;
use super::error::{sql, HubError};
use super::overlay::{Overlay, OverlaySource};
use super::push::vector_text;
use super::schema::DIM;
use crate::dense::vectors::VectorIndex;
use crate::dense::DenseEngine;
use crate::lexical::stem::stem;
use crate::lexical::{Bm25Config, CorpusStats, Query};
use crate::search::{search_analysed, Coverage, Hit, Mode, SearchOptions, SearchQuery};
use futures_util::future::join_all;
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// A hit and where it comes from.
#[derive(Clone, Debug)]
pub struct HubHit {
    pub repo: String,
    pub commit: String,
    /// Ranked from the workspace's own text (the overlay), not the hub's.
    pub local: bool,
    pub hit: Hit,
}

#[derive(Clone, Debug)]
pub struct HubResults {
    pub mode: Mode,
    pub reason: Option<String>,
    pub coverage: Coverage,
    pub hits: Vec<HubHit>,
    pub no_match: bool,
    /// The query's quoted phrases, as the ranking read them (a surface
    /// marks them in the hits it shows).
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
    pub overlay: Option<OverlayInfo>,
}

/// What the overlay found: how, and how many paths it hides from the hub.
#[derive(Clone, Debug)]
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
    let engine = dense.filter(|e| e.unavailable().is_none() && e.dim() == DIM);
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
    let usable = dense.is_some_and(|d| d.unavailable().is_none());
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

/// The first string after every string that starts with `prefix` (an
/// ASCII lower-case stem): its last byte raised by one.
fn next_prefix(prefix: &str) -> String {
    let mut bytes = prefix.as_bytes().to_vec();
    if let Some(last) = bytes.last_mut() {
        *last += 1;
    }
    String::from_utf8(bytes).unwrap_or_else(|_| format!("{prefix}\u{10ffff}"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn names_are_split_out_of_paths() {
        assert_eq!(name_words("GraphStore::lookup x"), ["graphstore", "lookup"]);
    }
}
