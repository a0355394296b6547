//! Search: runs queries against a snapshot and resolves hits against the
//! text as it is now.
//!
//! Owns: the query branches (lexical BM25F over every segment skipping
//! dead chunks, dense nearest neighbours, symbol names), their fusion via
//! `rank`, quoted-phrase filtering and verification, the lexical-only
//! fallback with its reason, and snippets.
//! Invariants: a hit is only flagged `phrase` after the exact phrase was
//! found in the chunk's current text; results are deterministic (ties break
//! on chunk id).
//! Never: mutate the index, block on the writer, panic on any query text.

use crate::chunk::ChunkKind;
use crate::dense::vectors::VectorIndex;
use crate::dense::{DenseEngine, DenseTier};
use crate::filter::Filter;
use crate::index::segment::{ChunkRecord, Segment};
use crate::index::Snapshot;
use crate::lexical::{score_term, Accumulator, Bm25Config, Query};
use crate::rank::frames::{frames, names_file, Frame};
use crate::rank::signals::{self, stem, ChunkFacts, QueryFacts, Signals};
use crate::rank::{
    cap_per_file, fuse, merge_partial, promote, saturate_per_file, Branch, FuseConfig, Fused,
};
use crate::symbols::{merge_matches, MatchTier, SymbolMatch, SymbolQuery};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::path::PathBuf;
use std::sync::Arc;

/// At most this many query terms take part in scoring.
const MAX_QUERY_TERMS: usize = 64;

/// Which query branches run (all by default; the benchmark turns some off).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Branches {
    pub lexical: bool,
    pub dense: bool,
    pub symbol: bool,
}

impl Default for Branches {
    fn default() -> Self {
        Branches {
            lexical: true,
            dense: true,
            symbol: true,
        }
    }
}

#[derive(Clone, Debug)]
pub struct SearchOptions {
    pub limit: usize,
    /// RRF constant, per-branch depth and weights.
    pub fuse: FuseConfig,
    /// 0 turns per-file diversity off. Otherwise, with `file_saturation`
    /// 0: most hits from one file before other files get a turn; exact and
    /// symbol-name hits are exempt, and deferred hits backfill.
    pub per_file_cap: usize,
    /// Soft per-file diversity instead of the cap: the n-th hit of a file
    /// counts `file_saturation^(n-1)` of its score (0 = use the cap).
    pub file_saturation: f32,
    /// Lines of text in each hit's snippet.
    pub snippet_lines: usize,
    /// Phrase candidates verified against their text, best first.
    pub max_phrase_checks: usize,
    /// Paths, languages and kinds a hit may have; every branch applies it
    /// before fusion.
    pub filter: Filter,
    /// The branches that run.
    pub branches: Branches,
    /// Exact-name definitions and verified phrases above every fused hit.
    pub exact_priority: bool,
    /// Code-aware ranking signals.
    pub signals: Signals,
    /// BM25F parameters in place of the index's (tuning runs).
    pub bm25: Option<Bm25Config>,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            limit: 10,
            fuse: FuseConfig::default(),
            per_file_cap: 2,
            file_saturation: 0.85,
            snippet_lines: 6,
            max_phrase_checks: 200,
            filter: Filter::default(),
            branches: Branches::default(),
            exact_priority: true,
            signals: Signals::default(),
            bm25: None,
        }
    }
}

impl SearchOptions {
    /// Sets one ranking knob by name (`quarry search --rank KEY=VALUE`, used
    /// by the quality benchmarks for ablations): `fuse.k`, `fuse.depth`,
    /// `fuse.lexical|dense|symbol` (branch weights), `fuse.dense_alone`,
    /// `fuse.static` (dense weight factor for the static tier),
    /// `fuse.fill` (the static tier's discount where it stands in for the
    /// transformer, see `rank::merge_partial`; `inf` turns it off),
    /// `fuse.confidence`, `fuse.confidence_power`, `fuse.short_words`,
    /// `fuse.short_power` (see `FuseConfig::dense_factor`), `cap`,
    /// `saturation`, `exact` (0/1),
    /// `definition`, `symbol_query`, `prose_dense`, `test`, `vendored`,
    /// `generated`, `minified`, `example`, `barrel`, `compat`,
    /// `declaration`, `coherence`, `stems` (0/1), `docs`,
    /// `config`, `path`, `file`, `short`, `outside`, `frames`, `bm25.k1`, `bm25.FIELD.w|b` with FIELD one
    /// of name, qualified, path, doc, body.
    pub fn tune(&mut self, key: &str, value: &str) -> Result<(), String> {
        let number: f32 = value
            .trim()
            .parse()
            .map_err(|_| format!("--rank {key}: {value:?} is not a number"))?;
        let flag = number != 0.0;
        let signals = &mut self.signals;
        match key {
            "fuse.k" => self.fuse.k = number,
            "fuse.depth" => self.fuse.depth = Some(number.max(1.0) as usize),
            "fuse.lexical" => self.fuse.weights[0] = number,
            "fuse.dense" => self.fuse.weights[1] = number,
            "fuse.symbol" => self.fuse.weights[2] = number,
            "fuse.dense_alone" => self.fuse.dense_alone = number,
            "fuse.static" => self.fuse.static_dense = number,
            "fuse.fill" => self.fuse.fill_discount = number.max(0.0),
            "fuse.partial_power" => self.fuse.partial_power = number.max(0.0),
            "fuse.confidence" => self.fuse.lexical_confidence = number.clamp(0.0, 1.0),
            "fuse.confidence_power" => self.fuse.confidence_power = number.max(0.0),
            "fuse.short_words" => self.fuse.short_words = number.max(0.0) as usize,
            "fuse.short_power" => self.fuse.short_power = number.max(0.0),
            "cap" => self.per_file_cap = number.max(0.0) as usize,
            "saturation" => self.file_saturation = number.clamp(0.0, 1.0),
            "exact" => self.exact_priority = flag,
            "definition" => signals.definition = number,
            "symbol_query" => signals.symbol_query_weight = number,
            "prose_dense" => signals.prose_dense_weight = number,
            "test" => signals.penalties.test = number,
            "vendored" => signals.penalties.vendored = number,
            "generated" => signals.penalties.generated = number,
            "minified" => signals.penalties.minified = number,
            "example" => signals.penalties.example = number,
            "barrel" => signals.penalties.barrel = number,
            "compat" => signals.penalties.compat = number,
            "declaration" => signals.penalties.declaration = number,
            "coherence" => signals.file_coherence = number,
            "stems" => signals.stems = flag,
            "docs" => signals.content.docs = number,
            "config" => signals.content.config = number,
            "path" => signals.path_match = number,
            "file" => signals.file_evidence = number,
            "short" => signals.short_chunk = number,
            "outside" => signals.outside_definitions = number,
            "frames" => signals.frames = number,
            _ => {
                let Some(rest) = key.strip_prefix("bm25.") else {
                    return Err(format!("--rank: unknown knob {key:?}"));
                };
                let bm25 = self.bm25.get_or_insert_with(Bm25Config::default);
                if rest == "k1" {
                    bm25.k1 = number;
                    return Ok(());
                }
                let (field, param) = rest
                    .split_once('.')
                    .ok_or_else(|| format!("--rank: unknown knob {key:?}"))?;
                let slot = ["name", "qualified", "path", "doc", "body"]
                    .iter()
                    .position(|f| *f == field)
                    .ok_or_else(|| format!("--rank: unknown BM25 field in {key:?}"))?;
                match param {
                    "w" => bm25.fields[slot].weight = number,
                    "b" => bm25.fields[slot].b = number,
                    _ => return Err(format!("--rank: unknown knob {key:?}")),
                }
            }
        }
        Ok(())
    }
}

/// Where the current text of a file comes from: the disk, or an editor's
/// open buffer.
pub trait TextSource {
    fn text(&mut self, path: &str) -> Option<&str>;
}

/// Reads files under a root, each at most once per search.
pub struct DiskText {
    root: PathBuf,
    cache: FxHashMap<String, Option<String>>,
}

impl DiskText {
    /// Reads under `root`, which must be canonical (`Index::root` is):
    /// `confine` compares real paths.
    pub fn new(root: impl Into<PathBuf>) -> DiskText {
        DiskText {
            root: root.into(),
            cache: FxHashMap::default(),
        }
    }
}

impl DiskText {
    /// Uses `text` as the current text of `path` (an editor's open buffer)
    /// instead of reading the file.
    pub fn set_text(&mut self, path: &str, text: String) {
        self.cache.insert(path.to_string(), Some(text));
    }

    /// Whether `path`'s text was already read or set.
    pub fn has_text(&self, path: &str) -> bool {
        self.cache.contains_key(path)
    }
}

impl TextSource for DiskText {
    fn text(&mut self, path: &str) -> Option<&str> {
        let root = &self.root;
        self.cache
            .entry(path.to_string())
            .or_insert_with(|| crate::confine::read_text(root, std::path::Path::new(path)).ok())
            .as_deref()
    }
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Hit {
    #[serde(skip)]
    pub chunk_id: u32,
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub symbol: String,
    /// The bare name (`symbol` is the qualified name).
    pub name: String,
    pub kind: &'static str,
    pub language: &'static str,
    pub score: f32,
    pub sources: Vec<&'static str>,
    /// 1-based rank in each branch that found the hit.
    pub ranks: std::collections::BTreeMap<&'static str, u32>,
    pub snippet: String,
}

#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
pub struct Coverage {
    /// Chunks with a vector.
    pub embedded: u64,
    /// Live chunks.
    pub total: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct SearchResults {
    /// `hybrid` when the dense branch ran over every chunk, `partial` when
    /// it ran but some chunks have no vector yet, else `lexical`.
    pub mode: &'static str,
    /// Why the search is lexical-only or partial, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub coverage: Coverage,
    pub hits: Vec<Hit>,
    /// The idf-weighted share of the query's terms that the best lexical
    /// candidate holds (what lowers the dense weight, see
    /// `FuseConfig::lexical_confidence`).
    #[serde(skip)]
    pub lexical_coverage: f32,
}

#[derive(Clone, Copy, PartialEq)]
struct Candidate {
    score: f32,
    chunk_id: u32,
    /// Which query terms matched (bit per scored term), where known.
    matched: u64,
}

impl Eq for Candidate {}

impl Ord for Candidate {
    /// Better candidates compare greater: higher score, then lower id.
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then(other.chunk_id.cmp(&self.chunk_id))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Keeps the `k` best candidates.
struct TopK {
    k: usize,
    heap: BinaryHeap<std::cmp::Reverse<Candidate>>,
}

impl TopK {
    fn new(k: usize) -> TopK {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k + 1),
        }
    }

    fn push(&mut self, candidate: Candidate) {
        if self.heap.len() < self.k {
            self.heap.push(std::cmp::Reverse(candidate));
        } else if let Some(worst) = self.heap.peek() {
            if candidate > worst.0 {
                self.heap.pop();
                self.heap.push(std::cmp::Reverse(candidate));
            }
        }
    }

    /// The score a new candidate must beat to enter: minus infinity while
    /// there is room, infinity when `k` is 0.
    fn bar(&self) -> f32 {
        if self.heap.len() < self.k {
            return f32::NEG_INFINITY;
        }
        self.heap
            .peek()
            .map_or(f32::INFINITY, |worst| worst.0.score)
    }

    fn into_sorted(self) -> Vec<Candidate> {
        let mut out: Vec<Candidate> = self.heap.into_iter().map(|r| r.0).collect();
        out.sort_by(|a, b| b.cmp(a));
        out
    }
}

thread_local! {
    static ACCUMULATOR: RefCell<Accumulator> = RefCell::new(Accumulator::default());
}

/// Lexical-only search (no dense branch). See [`search_with`].
pub fn search(
    snapshot: &Snapshot,
    query_text: &str,
    options: &SearchOptions,
    text: &mut dyn TextSource,
) -> SearchResults {
    search_with(snapshot, query_text, options, text, None)
}

/// One lexical candidate.
struct LexicalHit {
    chunk_id: u32,
    phrase: bool,
}

/// The lexical branch's list, and how well its best candidate matches the
/// query: the idf-weighted fraction of the query's terms (found anywhere
/// in the index) that it holds, 0 for no candidate.
#[derive(Default)]
struct LexicalList {
    hits: Vec<LexicalHit>,
    coverage: f32,
}

/// Hybrid search: the lexical, dense and symbol-name branches each fetch
/// `depth` candidates and are fused with RRF. Chunks that contain every
/// quoted phrase verbatim come first; otherwise a phrase counts as its
/// words, so an unmatched phrase never empties the result. Without a usable model or vector
/// index the dense branch is skipped and the results say why.
pub fn search_with(
    snapshot: &Snapshot,
    query_text: &str,
    options: &SearchOptions,
    text: &mut dyn TextSource,
    dense: Option<&DenseEngine>,
) -> SearchResults {
    search_blended(snapshot, query_text, options, text, dense, None)
}

/// [`search_with`], where `fill` (the static tier) stands in for the
/// transformer on the chunks it has not embedded yet: while vectors fill
/// in, the dense list is the transformer's over the chunks it covers
/// merged with the static tier's over the rest (`rank::merge_partial`),
/// so every chunk is semantically searchable and the covered ones by the
/// better vectors.
pub fn search_blended(
    snapshot: &Snapshot,
    query_text: &str,
    options: &SearchOptions,
    text: &mut dyn TextSource,
    dense: Option<&DenseEngine>,
    fill: Option<&DenseEngine>,
) -> SearchResults {
    let tier = dense.map_or(DenseTier::Transformer, DenseEngine::tier);
    let (embedded, total) = snapshot.coverage_of(tier);
    // The share of the chunks the dense vectors reach.
    let vector_share = if total > 0 {
        embedded as f32 / total as f32
    } else {
        1.0
    };
    let mut results = SearchResults {
        mode: "lexical",
        reason: None,
        coverage: Coverage { embedded, total },
        hits: Vec::new(),
        lexical_coverage: 0.0,
    };
    let query = Query::parse(query_text);
    if options.limit == 0 || query_text.trim().is_empty() {
        return results;
    }
    let depth = options.fuse.depth_for(options.limit);
    let filter = ChunkFilter::new(snapshot, &options.filter);

    // Dense branch first: its failure decides the mode.
    let mut dense_ids: Vec<u32> = Vec::new();
    if options.branches.dense {
        match dense_branch(snapshot, query_text, depth, dense, &filter, None) {
            Ok(ids) if embedded < total => {
                results.mode = "partial";
                let stand_in = fill
                    .filter(|_| tier == DenseTier::Transformer)
                    .filter(|_| options.fuse.fill_discount.is_finite())
                    .map(|fill| {
                        let covered = snapshot.vectors_of(DenseTier::Transformer);
                        dense_branch(snapshot, query_text, depth, Some(fill), &filter, covered)
                    });
                dense_ids = ids;
                let rest = total - embedded;
                let progress = format!("embedding in progress: {embedded} of {total} chunks have");
                results.reason = Some(match stand_in {
                    Some(Ok(fill_ids)) => {
                        dense_ids = merge_partial(
                            &dense_ids,
                            &fill_ids,
                            vector_share,
                            options.fuse.fill_discount,
                            depth,
                        );
                        format!(
                            "{progress} transformer vectors; \
                             static-tier vectors stand in for the other {rest}"
                        )
                    }
                    Some(Err(reason)) => format!(
                        "{progress} vectors; the other {rest} are found by the lexical and \
                         symbol branches only (static tier: {reason})"
                    ),
                    None => format!(
                        "{progress} vectors; the rest are found by the lexical and symbol \
                         branches only"
                    ),
                });
            }
            Ok(ids) => {
                results.mode = "hybrid";
                dense_ids = ids;
            }
            Err(reason) => results.reason = Some(reason),
        }
    } else {
        results.reason = Some("dense branch turned off".into());
    }

    let LexicalList {
        hits: lexical,
        coverage,
    } = if options.branches.lexical {
        lexical_branch(snapshot, &query, depth, options, text, &filter)
    } else {
        LexicalList::default()
    };
    let lexical_ids: Vec<u32> = lexical.iter().map(|h| h.chunk_id).collect();
    // One symbol search serves the symbol branch and exact-name priority.
    let identifier = looks_like_identifier(query_text);
    let symbol = if identifier && (options.branches.symbol || options.exact_priority) {
        symbol_branch(snapshot, query_text.trim(), depth, &filter)
    } else {
        SymbolBranch::default()
    };
    let symbol_ids = if options.branches.symbol {
        symbol.ids
    } else {
        Vec::new()
    };
    let lists = [
        (Branch::Lexical, lexical_ids.as_slice()),
        (Branch::Dense, dense_ids.as_slice()),
        (Branch::Symbol, symbol_ids.as_slice()),
    ];
    let mut fuse_config = options.fuse.clone();
    if tier == DenseTier::Static {
        fuse_config.weights[1] *= fuse_config.static_dense;
    }
    if results.mode == "partial" {
        fuse_config.weights[1] *= vector_share.powf(fuse_config.partial_power);
    }
    if looks_like_code(query_text) {
        let w = options.signals.symbol_query_weight;
        fuse_config.weights[0] *= w;
        fuse_config.weights[2] *= w;
    } else {
        fuse_config.weights[1] *= options.signals.prose_dense_weight;
    }
    results.lexical_coverage = coverage;
    // A lexical list whose best hit holds the whole query is evidence the
    // dense list should not overrule; one that matches little is not.
    fuse_config.weights[1] *= options.fuse.dense_factor(query_text, coverage);
    let mut fused = fuse(&lists, &fuse_config);
    let lexical_info: FxHashMap<u32, &LexicalHit> =
        lexical.iter().map(|h| (h.chunk_id, h)).collect();
    let query_facts = QueryFacts::new(query_text);
    signals::apply(&mut fused, &options.signals, &query_facts, |id| {
        snapshot.chunk(id).map(|(segment, chunk)| ChunkFacts {
            path: segment.path_of(chunk),
            name: &chunk.name,
            qualified_name: &chunk.qualified_name,
            kind: chunk.kind,
            language: chunk.language,
            lines: chunk.end_line.saturating_sub(chunk.start_line) + 1,
        })
    });
    if options.signals.frames > 0.0 {
        let located = locate_frames(snapshot, &frames(query_text), &filter);
        raise_located(&mut fused, &located, options.signals.frames);
    }
    let is_phrase = |f: &Fused| lexical_info.get(&f.chunk_id).is_some_and(|h| h.phrase);
    // Definitions named exactly like an identifier query.
    let exact = symbol.exact;
    let is_exact = |f: &Fused| exact.contains(&f.chunk_id);
    if options.exact_priority {
        // Exact names (joined to the list if no branch found them) and
        // verified phrases above every fused result, fused order within
        // each group.
        let listed: rustc_hash::FxHashSet<u32> = fused.iter().map(|f| f.chunk_id).collect();
        let mut missing: Vec<u32> = exact
            .iter()
            .copied()
            .filter(|id| !listed.contains(id))
            .collect();
        missing.sort_unstable();
        // Above every fused result, so scored like the best of them.
        let top = fused.first().map_or(0.0, |f| f.score);
        fused.extend(missing.into_iter().map(|chunk_id| Fused {
            chunk_id,
            score: top,
            ranks: [None; 3],
        }));
        promote(&mut fused, |f| is_exact(f) || is_phrase(f));
    }
    let path_of = |f: &Fused| {
        snapshot
            .chunk(f.chunk_id)
            .map_or("", |(seg, chunk)| seg.path_of(chunk))
    };
    let fused = if options.per_file_cap == 0 {
        // Per-file diversity off.
        fused.into_iter().take(options.limit).collect()
    } else if options.file_saturation > 0.0 {
        saturate_per_file(
            fused,
            options.limit,
            options.file_saturation,
            path_of,
            |f| f.score,
            |f| options.exact_priority && (is_exact(f) || is_phrase(f)),
            |f| f.rank(Branch::Symbol).is_some(),
        )
    } else {
        cap_per_file(fused, options.limit, options.per_file_cap, path_of, |f| {
            (options.exact_priority && is_exact(f)) || f.rank(Branch::Symbol).is_some()
        })
    };
    let mut fresh = FxHashMap::default();
    for f in fused {
        let Some((segment, chunk)) = snapshot.chunk(f.chunk_id) else {
            continue;
        };
        let mut sources: Vec<&'static str> = f.branches().map(Branch::name).collect();
        if options.exact_priority && is_exact(&f) {
            sources.push("exact");
        }
        if options.exact_priority && is_phrase(&f) {
            sources.push("phrase");
        }
        let ranks = f
            .branches()
            .map(|b| (b.name(), f.rank(b).unwrap_or(0)))
            .collect();
        let Some(mut hit) = make_hit(segment, chunk, f.score, sources, options, text, &mut fresh)
        else {
            continue;
        };
        hit.ranks = ranks;
        results.hits.push(hit);
    }
    results
}

/// A query that is one identifier or qualified name (`GraphStore::lookup`).
fn looks_like_identifier(query: &str) -> bool {
    let query = query.trim();
    !query.is_empty()
        && query.len() <= 200
        && !query.contains(char::is_whitespace)
        && !query.contains('"')
        && query.chars().any(char::is_alphabetic)
}

/// A query written like code: one identifier or path, or a word in
/// `snake_case`, `camelCase` or joined by `::`, `.` or `->`.
fn looks_like_code(query: &str) -> bool {
    looks_like_identifier(query) || query.split_whitespace().any(signals::is_code_word)
}

/// The query's `Filter`, with its per-path answers remembered (paths repeat
/// across a file's chunks).
struct ChunkFilter<'a> {
    snapshot: &'a Snapshot,
    filter: &'a Filter,
    paths: RefCell<FxHashMap<(u64, u32), bool>>,
}

impl<'a> ChunkFilter<'a> {
    fn new(snapshot: &'a Snapshot, filter: &'a Filter) -> ChunkFilter<'a> {
        ChunkFilter {
            snapshot,
            filter,
            paths: RefCell::new(FxHashMap::default()),
        }
    }

    fn is_empty(&self) -> bool {
        self.filter.is_empty()
    }

    /// Whether `chunk` (of `segment`) may be returned.
    /// [`Self::accepts_in`] for the chunk at position `doc`, reading its
    /// record only when a filter is set.
    fn accepts_doc(&self, segment: &Segment, doc: u32) -> bool {
        if self.filter.is_empty() {
            return true;
        }
        segment
            .chunks
            .get(doc as usize)
            .is_some_and(|chunk| self.accepts_in(segment, chunk))
    }

    fn accepts_in(&self, segment: &Segment, chunk: &ChunkRecord) -> bool {
        if self.filter.is_empty() {
            return true;
        }
        if !self
            .filter
            .accepts_language_and_kind(chunk.language, chunk.kind)
        {
            return false;
        }
        *self
            .paths
            .borrow_mut()
            .entry((segment.id, chunk.path_idx))
            .or_insert_with(|| self.filter.accepts_path(segment.path_of(chunk)))
    }

    /// Whether the live chunk `chunk_id` may be returned.
    fn accepts(&self, chunk_id: u32) -> bool {
        if self.filter.is_empty() {
            return self.snapshot.is_live(chunk_id);
        }
        self.snapshot.is_live(chunk_id)
            && self
                .snapshot
                .chunk(chunk_id)
                .is_some_and(|(segment, chunk)| self.accepts_in(segment, chunk))
    }
}

/// The live definitions the frames of a query point at, in frame order,
/// each once: in a file the frame's path names (`frames::names_file`), the
/// innermost definition holding the frame's line; when the frame names its
/// function, the innermost definition of that name holding the line, or
/// else the one of that name nearest to it (the trace may come from another
/// version of the file). A frame whose file is not in the index, or whose
/// function is not in its file, points at nothing.
fn locate_frames(snapshot: &Snapshot, frames: &[Frame], filter: &ChunkFilter<'_>) -> Vec<u32> {
    // Per frame: (holds the line, distance to it, span, chunk id) of its
    // best definition so far; least is best.
    let mut best: Vec<Option<(bool, u32, u32, u32)>> = vec![None; frames.len()];
    for segment in &snapshot.segments {
        for (frame, best) in frames.iter().zip(best.iter_mut()) {
            // The segment's files the frame names: usually none, so its
            // chunks are not walked.
            let files: Vec<u32> = (0..segment.paths.len() as u32)
                .filter(|&i| names_file(frame, &segment.paths[i as usize]))
                .collect();
            if files.is_empty() {
                continue;
            }
            for chunk in &segment.chunks {
                if !files.contains(&chunk.path_idx)
                    || !chunk.kind.is_definition()
                    || frame.name.as_deref().is_some_and(|n| n != &*chunk.name)
                    || !snapshot.is_live(chunk.chunk_id)
                    || !filter.accepts_in(segment, chunk)
                {
                    continue;
                }
                let holds = (chunk.start_line..=chunk.end_line).contains(&frame.line);
                if !holds && frame.name.is_none() {
                    continue;
                }
                let distance = if holds {
                    0
                } else {
                    chunk.start_line.abs_diff(frame.line)
                };
                let key = (
                    !holds,
                    distance,
                    chunk.end_line - chunk.start_line,
                    chunk.chunk_id,
                );
                if best.is_none_or(|b| key < b) {
                    *best = Some(key);
                }
            }
        }
    }
    let mut located: Vec<u32> = Vec::new();
    for (_, _, _, id) in best.into_iter().flatten() {
        if !located.contains(&id) {
            located.push(id);
        }
    }
    located
}

/// Adds `weight * top` to each located chunk (joining it to the list if no
/// branch found it) and re-sorts; equal scores keep their order.
fn raise_located(fused: &mut Vec<Fused>, located: &[u32], weight: f32) {
    if located.is_empty() {
        return;
    }
    let top = fused
        .first()
        .map_or(1.0, |f| f.score)
        .max(f32::MIN_POSITIVE);
    for &id in located {
        match fused.iter_mut().find(|f| f.chunk_id == id) {
            Some(f) => f.score += weight * top,
            None => fused.push(Fused {
                chunk_id: id,
                score: weight * top,
                ranks: [None; 3],
            }),
        }
    }
    fused.sort_by(|a, b| b.score.total_cmp(&a.score));
}

/// With a filter that leaves at most this many chunks, the dense branch
/// scores them all exactly when the graph search comes back short.
const EXACT_DENSE_MAX: usize = 20_000;

fn dense_branch(
    snapshot: &Snapshot,
    query_text: &str,
    depth: usize,
    dense: Option<&DenseEngine>,
    filter: &ChunkFilter<'_>,
    exclude: Option<&Arc<VectorIndex>>,
) -> Result<Vec<u32>, String> {
    let engine = dense.ok_or_else(|| "dense search is disabled".to_string())?;
    if let Some(reason) = engine.unavailable_reason() {
        return Err(format!("no embedding model: {reason}"));
    }
    let vectors = snapshot
        .vectors_of(engine.tier())
        .filter(|v| Some(v.model_id()) == engine.model_id())
        .ok_or_else(|| "no vectors for this model yet: run `quarry index`".to_string())?;
    if vectors.is_empty() {
        return Err("no chunk is embedded yet: run `quarry index`".into());
    }
    let query_vector = engine.embed_query(query_text)?;
    let excluded = |id: u32| exclude.is_some_and(|v| v.contains(id));
    let keep = |id: u32| filter.accepts(id) && !excluded(id);
    let mut found = vectors
        .search(&query_vector, depth, &keep)
        .map_err(|e| format!("dense search failed: {e}"))?;
    if found.len() < depth && (!filter.is_empty() || exclude.is_some()) {
        // The graph search can stop short under a selective filter: score
        // the chunks the filter leaves, if there are not too many.
        let mut allowed = Vec::new();
        'segments: for segment in &snapshot.segments {
            for chunk in &segment.chunks {
                if snapshot.is_live(chunk.chunk_id)
                    && filter.accepts_in(segment, chunk)
                    && !excluded(chunk.chunk_id)
                {
                    allowed.push(chunk.chunk_id);
                    if allowed.len() > EXACT_DENSE_MAX {
                        break 'segments;
                    }
                }
            }
        }
        if allowed.len() <= EXACT_DENSE_MAX {
            found = vectors.exact_search(&query_vector, depth, allowed.into_iter());
        }
    }
    Ok(found.into_iter().map(|(id, _)| id).collect())
}

/// The best `limit` symbol matches over every segment that `keep` accepts
/// (live chunks only), best first.
fn symbol_matches(
    snapshot: &Snapshot,
    query: &SymbolQuery,
    limit: usize,
    keep: &dyn Fn(u32) -> bool,
) -> Vec<SymbolMatch> {
    if query.is_empty() || limit == 0 {
        return Vec::new();
    }
    let mut matches: Vec<SymbolMatch> = Vec::new();
    for segment in &snapshot.segments {
        segment.symbols.search(query, keep, limit, &mut matches);
    }
    merge_matches(&mut matches, limit);
    matches
}

/// What the symbol branch found for an identifier query.
#[derive(Default)]
struct SymbolBranch {
    /// Ranked chunk ids for fusion (subsequence matches left out).
    ids: Vec<u32>,
    /// Live definitions whose name or qualified name equals the query (case
    /// and separator insensitive: `graphstore.lookup` names
    /// `GraphStore::lookup`), for exact-name priority.
    exact: rustc_hash::FxHashSet<u32>,
}

fn symbol_branch(
    snapshot: &Snapshot,
    query_text: &str,
    depth: usize,
    filter: &ChunkFilter<'_>,
) -> SymbolBranch {
    // Exact matches rank first, so one search deep enough for both suffices.
    let keep = |id: u32| filter.accepts(id);
    let matches = symbol_matches(
        snapshot,
        &SymbolQuery::parse(query_text, None),
        depth.max(64),
        &keep,
    );
    SymbolBranch {
        // Subsequence matches of an identifier are mostly noise in a fused list.
        ids: matches
            .iter()
            .filter(|m| m.tier != MatchTier::Subsequence)
            .take(depth)
            .map(|m| m.chunk_id)
            .collect(),
        exact: matches
            .iter()
            .filter(|m| m.tier == MatchTier::Exact)
            .map(|m| m.chunk_id)
            .collect(),
    }
}

/// BM25F over every segment. Candidates whose current text holds every
/// quoted phrase are flagged and come first; the rest follow in score
/// order. Best first.
fn lexical_branch(
    snapshot: &Snapshot,
    query: &Query,
    depth: usize,
    options: &SearchOptions,
    text: &mut dyn TextSource,
    filter: &ChunkFilter<'_>,
) -> LexicalList {
    let mut list = LexicalList::default();
    if query.is_empty() {
        return list;
    }
    // A long query (an issue text) can hold hundreds of words: score the
    // MAX_QUERY_TERMS that weigh most (weight x idf); words found nowhere
    // count for nothing.
    let mut selected: Vec<usize> = (0..query.terms.len()).collect();
    if selected.len() > MAX_QUERY_TERMS {
        let worth: Vec<f32> = query
            .terms
            .iter()
            .enumerate()
            .map(|(i, term)| {
                let df = global_df(snapshot, term);
                if df == 0 {
                    -1.0
                } else {
                    query.weight(i) * snapshot.stats.idf(df)
                }
            })
            .collect();
        selected.sort_by(|&a, &b| worth[b].total_cmp(&worth[a]).then(a.cmp(&b)));
        selected.truncate(MAX_QUERY_TERMS);
        selected.sort_unstable();
    }
    let bit_of: FxHashMap<usize, usize> = selected
        .iter()
        .enumerate()
        .map(|(bit, &term)| (term, bit))
        .collect();
    let phrase_masks: Vec<u64> = query
        .phrases
        .iter()
        .map(|p| {
            p.term_idx
                .iter()
                .filter_map(|i| bit_of.get(i))
                .fold(0u64, |mask, bit| mask | (1 << bit))
        })
        .collect();
    let selected_terms: Vec<String> = selected.iter().map(|&i| query.terms[i].clone()).collect();
    // The terms scored: the query's own, then (with stems on) words of the
    // index that share a stem with a query word, each counting as that word.
    let mut scored: Vec<ScoredTerm> = selected
        .iter()
        .enumerate()
        .map(|(bit, &i)| ScoredTerm {
            term: query.terms[i].clone(),
            bit,
            weight: query.weight(i),
        })
        .collect();
    if options.signals.stems {
        let in_phrase = phrase_masks.iter().fold(0u64, |all, m| all | m);
        for bit in 0..selected_terms.len() {
            if in_phrase & (1 << bit) == 0 {
                let weight = scored[bit].weight;
                scored.extend(
                    stem_variants(snapshot, &selected_terms, bit)
                        .into_iter()
                        .map(|v| ScoredTerm {
                            weight: v.weight * weight,
                            ..v
                        }),
                );
            }
        }
    }
    // Global document frequency of each term, over all segments.
    let ordinals: Vec<Vec<Option<usize>>> = snapshot
        .segments
        .iter()
        .map(|s| {
            scored
                .iter()
                .map(|t| s.lexical.term_ordinal(&t.term))
                .collect()
        })
        .collect();
    let mut df = vec![0u64; scored.len()];
    for (segment, ords) in snapshot.segments.iter().zip(&ordinals) {
        for (i, ord) in ords.iter().enumerate() {
            if let Some(ord) = ord {
                df[i] += u64::from(segment.lexical.df(*ord));
            }
        }
    }
    let bm25 = options.bm25.as_ref().unwrap_or(&snapshot.bm25);
    // Evidence that the chunk's whole file matches (BM25 over the file's
    // summed term frequencies), added to each chunk's own score.
    let file_weight = options.signals.file_evidence;
    let mut top = TopK::new(depth);
    // Chunks holding every token of every phrase: checked for the exact
    // phrase below.
    let mut phrase_top = TopK::new(if phrase_masks.is_empty() {
        0
    } else {
        options.max_phrase_checks.max(depth)
    });
    ACCUMULATOR.with(|acc| {
        let mut acc = acc.borrow_mut();
        for (segment, ords) in snapshot.segments.iter().zip(&ordinals) {
            let group_of = |doc: u32| {
                segment
                    .key(doc as usize)
                    .map_or(usize::MAX, |k| k.path_idx as usize)
            };
            let group_of = (file_weight > 0.0).then_some(&group_of);
            let n_groups = if group_of.is_some() {
                segment.paths.len()
            } else {
                0
            };
            acc.reset(segment.chunks.len(), n_groups);
            for (i, ord) in ords.iter().enumerate() {
                if let Some(ord) = ord {
                    let idf = snapshot.stats.idf(df[i]) * scored[i].weight;
                    score_term(
                        &segment.lexical,
                        *ord,
                        scored[i].bit,
                        idf,
                        &snapshot.stats,
                        bm25,
                        &mut acc,
                        group_of,
                    );
                }
            }
            // A document whose score plus the best file bonus cannot beat
            // either list's bar is skipped before its key and liveness are
            // read: most of a common word's documents.
            let file_bonus = if file_weight > 0.0 {
                file_weight * acc.max_group_score()
            } else {
                0.0
            };
            for &doc in &acc.touched {
                let bound = acc.scores[doc as usize] + file_bonus;
                if bound < top.bar() && bound < phrase_top.bar() {
                    continue;
                }
                let Some(key) = segment.key(doc as usize) else {
                    continue;
                };
                if !snapshot.is_live(key.chunk_id) || !filter.accepts_doc(segment, doc) {
                    continue;
                }
                let mut score = acc.scores[doc as usize];
                if file_weight > 0.0 {
                    let file = acc.group_scores.get(key.path_idx as usize);
                    score += file_weight * file.copied().unwrap_or(0.0);
                }
                let matched = acc.matched[doc as usize];
                let candidate = Candidate {
                    score,
                    chunk_id: key.chunk_id,
                    matched,
                };
                if !phrase_masks.is_empty() && phrase_masks.iter().all(|m| matched & m == *m) {
                    phrase_top.push(candidate);
                }
                top.push(candidate);
            }
        }
    });
    let candidates = top.into_sorted();
    // Each query term's weight x idf, by bit (stem variants share their
    // word's bit and are not counted again).
    let mut mass = [0.0f32; 64];
    for (i, term) in scored.iter().enumerate().take(selected.len()) {
        if df[i] > 0 && term.bit < 64 {
            mass[term.bit] = term.weight * snapshot.stats.idf(df[i]);
        }
    }
    let total: f32 = mass.iter().sum();
    if let (Some(best), true) = (candidates.first(), total > 0.0) {
        let held: f32 = (0..64)
            .filter(|bit| best.matched & (1u64 << bit) != 0)
            .map(|bit| mass[bit])
            .sum();
        list.coverage = held / total;
    }
    if query.phrases.is_empty() {
        list.hits = candidates
            .into_iter()
            .map(|c| LexicalHit {
                chunk_id: c.chunk_id,
                phrase: false,
            })
            .collect();
        return list;
    }
    // Chunks whose current text holds every phrase come first, in score
    // order; then every other candidate, phrases counting as plain words.
    // An unmatched phrase never empties the result.
    let phrases: Vec<String> = query.phrases.iter().map(|p| normalize(&p.text)).collect();
    let verified: Vec<u32> = phrase_top
        .into_sorted()
        .into_iter()
        .filter(|c| {
            snapshot.chunk(c.chunk_id).is_some_and(|(seg, chunk)| {
                text.text(seg.path_of(chunk)).is_some_and(|file| {
                    let body = normalize(chunk_text(file, chunk));
                    phrases.iter().all(|p| body.contains(p.as_str()))
                })
            })
        })
        .map(|c| c.chunk_id)
        .collect();
    let verified_set: rustc_hash::FxHashSet<u32> = verified.iter().copied().collect();
    let mut hits: Vec<LexicalHit> = verified
        .into_iter()
        .map(|chunk_id| LexicalHit {
            chunk_id,
            phrase: true,
        })
        .collect();
    hits.extend(
        candidates
            .into_iter()
            .filter(|c| !verified_set.contains(&c.chunk_id))
            .map(|c| LexicalHit {
                chunk_id: c.chunk_id,
                phrase: false,
            }),
    );
    hits.truncate(depth);
    list.hits = hits;
    list
}

/// Documents holding `term`, over every segment.
fn global_df(snapshot: &Snapshot, term: &str) -> u64 {
    snapshot
        .segments
        .iter()
        .filter_map(|s| {
            s.lexical
                .term_ordinal(term)
                .map(|ord| u64::from(s.lexical.df(ord)))
        })
        .sum()
}

/// One term the lexical branch scores.
struct ScoredTerm {
    term: String,
    /// The query word it stands for (its bit in the match mask).
    bit: usize,
    /// Multiplies the term's idf.
    weight: f32,
}

/// How much a stem variant counts next to the word as typed.
const STEM_VARIANT_WEIGHT: f32 = 0.7;
/// Most variants added per query word.
const MAX_STEM_VARIANTS: usize = 4;

/// Index words sharing query word `bit`'s stem (`retries`, `retrying` for
/// `retry`), not already query words.
fn stem_variants(snapshot: &Snapshot, terms: &[String], bit: usize) -> Vec<ScoredTerm> {
    let word = &terms[bit];
    if word.len() < 4 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return Vec::new();
    }
    let root = stem(word);
    let mut variants: Vec<String> = Vec::new();
    for segment in &snapshot.segments {
        let found = segment
            .lexical
            .terms_with_prefix(&root, MAX_STEM_VARIANTS, |t| {
                t.len() <= root.len() + 4
                    && t.bytes().all(|b| b.is_ascii_lowercase())
                    && stem(t) == root
            });
        for term in found {
            if !terms.contains(&term) && !variants.contains(&term) {
                variants.push(term);
            }
        }
    }
    variants.sort();
    variants.truncate(MAX_STEM_VARIANTS);
    variants
        .into_iter()
        .map(|term| ScoredTerm {
            term,
            bit,
            weight: STEM_VARIANT_WEIGHT,
        })
        .collect()
}

/// A chunk's lines in the file as it is now: as indexed when the file's
/// text still has the indexed hash; otherwise the chunk of the same name
/// and kind nearest its old line in the re-parsed text; `None` when the
/// symbol is gone (the hit is dropped, never shown with a range that no
/// longer exists). A file that cannot be read now (deleted, or refused by
/// `confine`: replaced by a symlink out of the root or a FIFO) gives no hit.
pub fn locate_now(
    segment: &Segment,
    chunk: &ChunkRecord,
    text: Option<&str>,
    fresh: &mut FxHashMap<String, bool>,
) -> Option<(u32, u32)> {
    let text = text?;
    let path = segment.path_of(chunk);
    // Hashed once per file and search, however many hits it has.
    let unchanged = *fresh.entry(path.to_string()).or_insert_with(|| {
        let hash = *blake3::hash(text.as_bytes()).as_bytes();
        segment
            .rows
            .iter()
            .any(|row| *row.path == *path && row.hash == hash)
    });
    if unchanged {
        return Some((chunk.start_line, chunk.end_line));
    }
    let found = find_again(
        path,
        text,
        chunk.language,
        &chunk.qualified_name,
        chunk.kind,
        chunk.start_line,
    )?;
    Some((found.start_line, found.end_line))
}

/// The definition named `qualified_name` of `kind` in `text` nearest
/// `line`: how a hit is found again in a file that changed since it was
/// indexed (by the search for files on disk, by the server for open
/// buffers).
pub fn find_again(
    path: &str,
    text: &str,
    language: crate::chunk::Language,
    qualified_name: &str,
    kind: ChunkKind,
    line: u32,
) -> Option<crate::chunk::Chunk> {
    crate::chunk::chunk_file(path, text, language)
        .into_iter()
        .filter(|c| *c.qualified_name == *qualified_name && c.kind == kind)
        .min_by_key(|c| c.start_line.abs_diff(line))
}

/// The hit for a chunk, its range and snippet from the current text
/// (`locate_now`); `None` when the chunk's symbol is no longer there.
fn make_hit(
    segment: &Segment,
    chunk: &ChunkRecord,
    score: f32,
    sources: Vec<&'static str>,
    options: &SearchOptions,
    text: &mut dyn TextSource,
    fresh: &mut FxHashMap<String, bool>,
) -> Option<Hit> {
    let path = segment.path_of(chunk);
    let file = text.text(path);
    let (start_line, end_line) = locate_now(segment, chunk, file, fresh)?;
    let snippet = file
        .map(|file| snippet(file, start_line, end_line, options.snippet_lines))
        .unwrap_or_default();
    Some(Hit {
        chunk_id: chunk.chunk_id,
        path: path.to_string(),
        start_line,
        end_line,
        symbol: chunk.qualified_name.to_string(),
        name: chunk.name.to_string(),
        kind: chunk.kind.name(),
        language: chunk.language.name(),
        score,
        sources,
        ranks: Default::default(),
        snippet,
    })
}

/// The chunk's bytes in `file`, or nothing when the file has changed under it.
fn chunk_text<'t>(file: &'t str, chunk: &ChunkRecord) -> &'t str {
    file.get(chunk.byte_start as usize..chunk.byte_end as usize)
        .unwrap_or("")
}

/// Lowercase with every whitespace run collapsed to one space.
fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

/// Up to `max_lines` lines of the range, leading blank lines skipped.
pub fn snippet(file: &str, start_line: u32, end_line: u32, max_lines: usize) -> String {
    let first = start_line.saturating_sub(1) as usize;
    let n_range = end_line.saturating_sub(start_line) as usize + 1;
    let lines: Vec<&str> = file
        .lines()
        .skip(first)
        .take(n_range)
        .skip_while(|l| l.trim().is_empty())
        .take(max_lines)
        .collect();
    lines.join("\n")
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SymbolHit {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    /// Where the name is written: 1-based line, UTF-16 column.
    pub name_line: u32,
    pub name_column: u32,
    pub name: String,
    pub qualified_name: String,
    pub kind: &'static str,
    pub language: &'static str,
    pub tier: &'static str,
}

/// Fuzzy symbol-name lookup over every segment.
pub fn find_symbols(
    snapshot: &Snapshot,
    query_text: &str,
    kind: Option<ChunkKind>,
    limit: usize,
) -> Vec<SymbolHit> {
    let query = SymbolQuery::parse(query_text, kind);
    // Sequential on purpose: the global rayon pool is busy parsing during a
    // big update (a branch switch), and a query queued behind that work
    // stalled for seconds.
    let is_live = |id: u32| snapshot.is_live(id);
    symbol_matches(snapshot, &query, limit, &is_live)
        .iter()
        .filter_map(|m| {
            let (segment, chunk) = snapshot.chunk(m.chunk_id)?;
            Some(SymbolHit {
                path: segment.path_of(chunk).to_string(),
                start_line: chunk.start_line,
                end_line: chunk.end_line,
                name_line: chunk.name_line,
                name_column: chunk.name_column,
                name: chunk.name.to_string(),
                qualified_name: chunk.qualified_name.to_string(),
                kind: chunk.kind.name(),
                language: chunk.language.name(),
                tier: tier_name(m.tier),
            })
        })
        .collect()
}

fn tier_name(tier: MatchTier) -> &'static str {
    match tier {
        MatchTier::Exact => "exact",
        MatchTier::Prefix => "prefix",
        MatchTier::WordBoundary => "word",
        MatchTier::Subsequence => "fuzzy",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_collapses_whitespace_and_case() {
        assert_eq!(
            normalize("  Graph_Store\n\t mutex  POISONED "),
            "graph_store mutex poisoned"
        );
    }

    #[test]
    fn snippet_clamps_to_range_and_file() {
        let file = "a\n\nb\nc\nd\n";
        assert_eq!(snippet(file, 2, 4, 10), "b\nc");
        assert_eq!(snippet(file, 3, 100, 2), "b\nc");
        assert_eq!(snippet(file, 50, 60, 3), "");
    }

    #[test]
    fn top_k_keeps_best_with_stable_ties() {
        let mut top = TopK::new(2);
        for (score, chunk_id) in [(1.0, 5), (3.0, 1), (3.0, 0), (2.0, 7)] {
            top.push(Candidate {
                score,
                chunk_id,
                matched: 0,
            });
        }
        let ids: Vec<u32> = top.into_sorted().iter().map(|c| c.chunk_id).collect();
        assert_eq!(ids, vec![0, 1]);
    }
}
