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

mod chunk_filter;
mod dense;
mod lexical;
mod live;
mod options;
mod pass;
mod place;
mod query;
mod results;
mod symbol;

pub use live::{find_again, is_preamble, locate_now, matched_line, snippet, DiskText, TextSource};
pub use options::{parse_knobs, Branches, SearchOptions, HEAD_DEPTH, MAX_LIMIT};
pub use query::{check_query, SearchQuery, MAX_QUERY_BYTES};
pub use results::{Coverage, Hit, Mode, SearchResults, Source};
pub use symbol::{find_symbols, SymbolHit};

use crate::dense::{DenseEngine, DenseTier};
use crate::index::Snapshot;
use crate::rank::make_falling;
use chunk_filter::ChunkFilter;
use pass::PassContext;
use place::Placed;
use rustc_hash::FxHashSet;

/// Lexical-only search (no dense branch). See [`search_with`].
pub fn search(
    snapshot: &Snapshot,
    query_text: &str,
    options: &SearchOptions,
    text: &mut dyn TextSource,
) -> SearchResults {
    search_with(snapshot, query_text, options, text, None)
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
    let query = SearchQuery::new(query_text);
    search_analysed(snapshot, &query, options, text, dense, fill)
}

/// [`search_blended`] for a query already analysed: what a caller that
/// read the query itself (the hub, choosing its candidates) passes on, so
/// the text is analysed once.
pub fn search_analysed(
    snapshot: &Snapshot,
    query: &SearchQuery<'_>,
    options: &SearchOptions,
    text: &mut dyn TextSource,
    dense: Option<&DenseEngine>,
    fill: Option<&DenseEngine>,
) -> SearchResults {
    let tier = dense.map_or(DenseTier::Transformer, DenseEngine::tier);
    let (embedded, total) = snapshot.coverage_of(tier);
    let mut results = SearchResults {
        mode: Mode::Lexical,
        reason: None,
        coverage: Coverage { embedded, total },
        hits: Vec::new(),
        no_match: false,
        lexical_coverage: 0.0,
        phrases: Vec::new(),
    };
    results.phrases = query
        .lexical
        .phrases
        .iter()
        .map(|p| p.text.clone())
        .collect();
    if options.limit == 0 || query.is_blank() {
        return results;
    }
    let filter = ChunkFilter::new(snapshot, &options.filter);
    let ctx = PassContext {
        snapshot,
        query,
        options,
        dense,
        fill,
        filter: &filter,
    };
    // The head is ranked at one depth whatever the limit, so the first N
    // hits never depend on how many more were asked for; a limit the
    // first pass cannot fill is filled from deeper passes, each adding
    // only what the passes before it did not list.
    let deepest = options.fuse.depth_for(options.limit.min(MAX_LIMIT));
    let mut depth = options.fuse.depth.unwrap_or(HEAD_DEPTH).clamp(1, deepest);
    let mut listed: FxHashSet<u32> = FxHashSet::default();
    let mut placed = Placed::default();
    let mut first = true;
    loop {
        let pass = ctx.rank(depth, text);
        if first {
            first = false;
            results.mode = pass.mode;
            results.reason = pass.reason.clone();
            results.lexical_coverage = pass.lexical_coverage;
            results.no_match = !pass.matched;
        }
        for ranked in pass.order {
            if results.hits.len() == options.limit {
                break;
            }
            if !listed.insert(ranked.fused.chunk_id) {
                continue;
            }
            if let Some(hit) = placed.resolve(snapshot, &ranked, &query.lexical, options, text) {
                results.hits.push(hit);
            }
        }
        if results.hits.len() >= options.limit || pass.exhausted || depth >= deepest {
            break;
        }
        depth = depth.saturating_mul(4).min(deepest);
    }
    make_falling(&mut results.hits, |hit| &mut hit.score);
    results
}
