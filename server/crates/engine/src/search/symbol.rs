//! The symbol-name branch of a search, and `find_symbols` for
//! `workspace/symbol`: name matches (exact, prefix, word, fuzzy) over every
//! segment's name table. Owns the order of equal matches: by file, not by
//! chunk id ([`order_ties`]).
//!
//! Never: returns a dead chunk, or orders the equal matches it keeps by
//! chunk id.

use super::chunk_filter::ChunkFilter;
use crate::chunk::ChunkKind;
use crate::ident::squash;
use crate::index::Snapshot;
use crate::rank::query_facts::same_name;
use crate::symbols::{search_tables, MatchTier, SymbolMatch, SymbolQuery};

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
    let mut matches = search_tables(
        snapshot.segments.iter().map(|s| &s.symbols),
        query,
        keep,
        limit,
    );
    order_ties(snapshot, query.name(), &mut matches);
    matches
}

/// Reorders matches that tie on tier and score (`formatter` names 53
/// definitions in fmt) by what and where they are rather than by chunk
/// id, which depends on which worker parsed a file first: a type's
/// definition before the impl blocks named like it, then definitions in a file
/// named after `name` first (`format.h` for `formatter`, `join_set.rs` for
/// `JoinSet`), then by path, shorter first, and line. The same code gives
/// the same order however often it was indexed, as long as the ties fit in
/// the limit: which of more ties than that are kept is still decided by
/// chunk id, in `search_tables`.
fn order_ties(snapshot: &Snapshot, name: &str, matches: &mut [SymbolMatch]) {
    let name = squash(name);
    let key = |m: &SymbolMatch| {
        let Some((segment, chunk)) = snapshot.chunk(m.chunk_id) else {
            return (true, true, usize::MAX, "", u32::MAX, m.chunk_id);
        };
        let path = segment.path_of(chunk);
        let file = path.rsplit('/').next().unwrap_or(path);
        let stem = squash(file.split('.').next().unwrap_or(file));
        let named = same_name(&stem, &name);
        // A type's definition before its impl blocks, wherever they are.
        let is_impl = !chunk.kind.defines_its_name();
        (
            is_impl,
            !named,
            path.len(),
            path,
            chunk.start_line,
            m.chunk_id,
        )
    };
    for ties in matches.chunk_by_mut(|a, b| a.tier == b.tier && a.score == b.score) {
        if ties.len() > 1 {
            ties.sort_by_cached_key(key);
        }
    }
}

/// What the symbol branch found for an identifier query.
#[derive(Default)]
pub(super) struct SymbolBranch {
    /// Ranked chunk ids for fusion (subsequence matches left out).
    pub(super) ids: Vec<u32>,
    /// Live definitions whose name or qualified name equals the query (case
    /// and separator insensitive: `graphstore.lookup` names
    /// `GraphStore::lookup`), for exact-name priority.
    pub(super) exact: rustc_hash::FxHashSet<u32>,
    /// Those of `exact` whose name is spelt as the query is, case included
    /// (the class `Vitest` for `Vitest`, not the constant `vitest`).
    pub(super) cased: rustc_hash::FxHashSet<u32>,
}

pub(super) fn symbol_branch(
    snapshot: &Snapshot,
    query: &SymbolQuery,
    depth: usize,
    filter: &ChunkFilter<'_>,
) -> SymbolBranch {
    // Exact matches rank first, so one search deep enough for both suffices.
    let keep = |id: u32| filter.accepts(id);
    let matches = symbol_matches(snapshot, query, depth.max(64), &keep);
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
        cased: matches
            .iter()
            .filter(|m| m.tier == MatchTier::Exact)
            .filter(|m| {
                snapshot
                    .chunk(m.chunk_id)
                    .is_some_and(|(_, chunk)| *chunk.name == *query.written_name())
            })
            .map(|m| m.chunk_id)
            .collect(),
    }
}

#[derive(Clone, Debug, PartialEq)]
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
    // Sequential on purpose: the global rayon pool is busy parsing during a
    // big update (a branch switch), and a query queued behind that work
    // stalled for seconds.
    let is_live = |id: u32| snapshot.is_live(id);
    symbol_matches(
        snapshot,
        &SymbolQuery::parse(query_text, kind),
        limit,
        &is_live,
    )
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
    fn a_file_stem_names_a_symbol_by_its_squashed_words() {
        assert!(same_name(&squash("join_set"), &squash("JoinSet")));
        assert!(same_name(&squash("format"), &squash("formatter")));
        assert!(!same_name(&squash("format-inl"), &squash("formatter")));
        assert!(!same_name(&squash("map"), &squash("mapper")));
        assert!(!same_name("", "x"));
        // The name the ties are ordered by is the one the search matched.
        assert_eq!(
            SymbolQuery::parse("GraphStore::lookup", None).name(),
            "lookup"
        );
        assert_eq!(SymbolQuery::parse("Formatter", None).name(), "formatter");
    }
}
