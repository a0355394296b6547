//! Placing ranked candidates as hits: each resolved against the text as it
//! is now (`live`), and a text window that repeats lines a listed hit
//! shows left out.
//!
//! Never: reorder the ranked list.

use super::live::{make_hit, TextSource};
use super::options::SearchOptions;
use super::pass::Ranked;
use super::results::{Hit, Source};
use crate::chunk::ChunkKind;
use crate::index::Snapshot;
use crate::lexical::Query;
use rustc_hash::FxHashMap;

/// The hits placed so far, by file, so that a text window overlapping a
/// hit already listed is not listed again.
#[derive(Default)]
pub(super) struct Placed {
    /// Per path: (start line, end line, is a text window).
    ranges: FxHashMap<String, Vec<(u32, u32, bool)>>,
    /// Per path: whether its text still has the indexed hash.
    fresh: FxHashMap<String, bool>,
}

impl Placed {
    /// The hit for `ranked`, resolved against the current text; `None`
    /// when its symbol is gone or it repeats lines a listed hit shows (two
    /// overlapping ranges where either is a text window; a definition
    /// nested in another, a method in its class, is a hit of its own).
    pub(super) fn resolve(
        &mut self,
        snapshot: &Snapshot,
        ranked: &Ranked,
        query: &Query,
        options: &SearchOptions,
        text: &mut dyn TextSource,
    ) -> Option<Hit> {
        let f = &ranked.fused;
        let (segment, chunk) = snapshot.chunk(f.chunk_id)?;
        let mut sources: Vec<Source> = f.branches().map(Source::of).collect();
        if ranked.exact {
            sources.push(Source::Exact);
        }
        if ranked.phrase {
            sources.push(Source::Phrase);
        }
        let mut hit = make_hit(
            segment,
            chunk,
            f.score,
            sources,
            query,
            options,
            text,
            &mut self.fresh,
        )?;
        let window = chunk.kind == ChunkKind::Lines;
        let ranges = self.ranges.entry(hit.path.clone()).or_default();
        let overlaps = ranges.iter().any(|&(start, end, other_window)| {
            (window || other_window) && start <= hit.end_line && hit.start_line <= end
        });
        if overlaps {
            return None;
        }
        ranges.push((hit.start_line, hit.end_line, window));
        hit.ranks = f
            .branches()
            .map(|b| (b.name(), f.rank(b).unwrap_or(0)))
            .collect();
        Some(hit)
    }
}
