//! One ranking pass at one depth, in named stages: run the branches
//! (`branches`), weigh them for this query (`weights`), fuse them with RRF,
//! apply the code-aware signals (`signals`), pin exact names and verified
//! phrases (`promote`), then spread the list over files (`diversify`).
//!
//! Never: resolve a hit against live text (`place` does), or read the raw
//! query text (every stage reads the analysed [`SearchQuery`]).

use super::chunk_filter::ChunkFilter;
use super::dense::dense_branch;
use super::lexical::{lexical_branch, LexicalList};
use super::live::TextSource;
use super::options::SearchOptions;
use super::query::SearchQuery;
use super::results::Mode;
use super::symbol::{symbol_branch, SymbolBranch};
use crate::dense::{DenseEngine, DenseTier};
use crate::index::Snapshot;
use crate::rank::frames::{names_file, Frame};
use crate::rank::signals::{self, ChunkFacts};
use crate::rank::{
    cap_per_file, fuse, merge_partial, promote, saturate_per_file, Branch, FuseConfig, Fused,
    Saturation,
};
use rustc_hash::FxHashSet;

/// What every pass of one search shares.
pub(super) struct PassContext<'q> {
    pub(super) snapshot: &'q Snapshot,
    pub(super) query: &'q SearchQuery<'q>,
    pub(super) options: &'q SearchOptions,
    pub(super) dense: Option<&'q DenseEngine>,
    pub(super) fill: Option<&'q DenseEngine>,
    pub(super) filter: &'q ChunkFilter<'q>,
}

/// A fused candidate in its final place, with the evidence that pinned it.
pub(super) struct Ranked {
    pub(super) fused: Fused,
    pub(super) exact: bool,
    pub(super) phrase: bool,
}

/// One pass of the branches at one depth, fused and ordered.
pub(super) struct Pass {
    pub(super) mode: Mode,
    pub(super) reason: Option<String>,
    pub(super) lexical_coverage: f32,
    /// Some branch's list held a chunk that matched the query's words or
    /// names (the lexical or the symbol branch), not only its meaning.
    pub(super) matched: bool,
    /// Every list came back shorter than the depth: a deeper pass finds
    /// nothing more.
    pub(super) exhausted: bool,
    pub(super) order: Vec<Ranked>,
}

/// What the three branches listed at one depth.
struct Lists {
    mode: Mode,
    reason: Option<String>,
    /// The tier whose vectors the dense list came from.
    tier: DenseTier,
    /// The share of the chunks that tier's vectors reach.
    vector_share: f32,
    dense: Vec<u32>,
    lexical: LexicalList,
    symbol: SymbolBranch,
}

impl PassContext<'_> {
    /// Ranks the candidates of every branch at `depth`.
    pub(super) fn rank(&self, depth: usize, text: &mut dyn TextSource) -> Pass {
        let lists = self.branches(depth, text);
        let Lists {
            mode,
            reason,
            tier,
            vector_share,
            dense,
            lexical,
            symbol,
        } = lists;
        let LexicalList {
            hits: lexical,
            coverage,
        } = lexical;
        let lexical_ids: Vec<u32> = lexical.iter().map(|h| h.chunk_id).collect();
        let matched = !lexical_ids.is_empty() || !symbol.ids.is_empty() || !symbol.exact.is_empty();
        let symbol_ids = if self.options.branches.symbol {
            symbol.ids
        } else {
            Vec::new()
        };
        let exhausted = [&lexical_ids, &dense, &symbol_ids]
            .iter()
            .all(|ids| ids.len() < depth);
        let config = self.weights(mode, tier, vector_share, coverage);
        // Resolved once: the guard's lexical-only fusion raises them too.
        let located = if self.options.signals.frames > 0.0 {
            locate_frames(self.snapshot, &self.query.frames, self.filter)
        } else {
            Vec::new()
        };
        let fused_with = |dense: &[u32]| {
            let mut fused = fuse(
                &[
                    (Branch::Lexical, lexical_ids.as_slice()),
                    (Branch::Dense, dense),
                    (Branch::Symbol, symbol_ids.as_slice()),
                ],
                &config,
                Some(depth),
            );
            self.signals(&mut fused, &located);
            fused
        };
        let mut fused = fused_with(&dense);
        let guard = self.options.lexical_guard;
        if guard > 0 && !dense.is_empty() {
            // What lexical-only search would put first, kept in the head.
            if let Some(first) = fused_with(&[]).first() {
                keep_within(&mut fused, first.chunk_id, guard);
            }
        }
        let phrases: FxHashSet<u32> = lexical
            .iter()
            .filter(|h| h.phrase)
            .map(|h| h.chunk_id)
            .collect();
        let pins = Pins {
            exact: &symbol.exact,
            cased: &symbol.cased,
            phrases: &phrases,
            pin_phrases: self.phrases_lead(),
            on: self.options.exact_priority,
        };
        self.promote(&mut fused, &pins);
        let fused = self.diversify(fused, &pins);
        let order = fused
            .into_iter()
            .map(|f| Ranked {
                exact: pins.is_exact(&f),
                phrase: pins.on && pins.phrases.contains(&f.chunk_id),
                fused: f,
            })
            .collect();
        Pass {
            mode,
            reason,
            lexical_coverage: coverage,
            matched,
            exhausted,
            order,
        }
    }

    /// The branches' lists at `depth`. The dense branch runs first: its
    /// failure decides the mode and the reason.
    fn branches(&self, depth: usize, text: &mut dyn TextSource) -> Lists {
        let PassContext {
            snapshot,
            query,
            options,
            dense,
            fill,
            filter,
        } = *self;
        let tier = dense.map_or(DenseTier::Transformer, DenseEngine::tier);
        let (embedded, total) = snapshot.coverage_of(tier);
        let vector_share = if total > 0 {
            embedded as f32 / total as f32
        } else {
            1.0
        };
        let mut mode = Mode::Lexical;
        let mut reason = None;
        let mut dense_ids: Vec<u32> = Vec::new();
        if options.branches.dense {
            match dense_branch(snapshot, query, depth, dense, filter, None) {
                Ok(ids) if embedded < total => {
                    mode = Mode::Partial;
                    let stand_in = fill
                        .filter(|_| tier == DenseTier::Transformer)
                        .filter(|_| options.fuse.fill_discount.is_finite())
                        .map(|fill| {
                            let covered = snapshot.vectors_of(DenseTier::Transformer);
                            dense_branch(snapshot, query, depth, Some(fill), filter, covered)
                        });
                    dense_ids = ids;
                    let rest = total - embedded;
                    let progress =
                        format!("embedding in progress: {embedded} of {total} chunks have");
                    reason = Some(match stand_in {
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
                        Some(Err(why)) => format!(
                            "{progress} vectors; the other {rest} are found by the lexical and \
                             symbol branches only (static tier: {why})"
                        ),
                        None => format!(
                            "{progress} vectors; the rest are found by the lexical and symbol \
                             branches only"
                        ),
                    });
                }
                Ok(ids) => {
                    mode = Mode::Hybrid;
                    dense_ids = ids;
                }
                Err(why) => reason = Some(why),
            }
        } else {
            reason = Some("dense branch turned off".into());
        }
        let lexical = if options.branches.lexical {
            lexical_branch(
                snapshot,
                query,
                depth,
                options,
                text,
                filter,
                self.phrases_lead(),
            )
        } else {
            LexicalList::default()
        };
        // One symbol search serves the symbol branch and exact-name priority.
        let symbol = match &query.symbol {
            Some(symbol) if options.branches.symbol || options.exact_priority => {
                symbol_branch(snapshot, symbol, depth, filter)
            }
            _ => SymbolBranch::default(),
        };
        Lists {
            mode,
            reason,
            tier,
            vector_share,
            dense: dense_ids,
            lexical,
            symbol,
        }
    }

    /// The branch weights for this query: the static tier's list and a
    /// partial one count less; a query written like code leans on the
    /// lexical and symbol lists, prose on the dense one; and a lexical list
    /// whose best hit holds the whole query is evidence the dense list
    /// should not overrule (`coverage`), one that matches little is not.
    fn weights(&self, mode: Mode, tier: DenseTier, vector_share: f32, coverage: f32) -> FuseConfig {
        let (options, query) = (self.options, self.query);
        let mut config = options.fuse.clone();
        let weights = &mut config.weights;
        if tier == DenseTier::Static {
            weights.dense *= options.fuse.static_dense;
        }
        if mode == Mode::Partial {
            weights.dense *= vector_share.powf(options.fuse.partial_power);
        }
        if query.code {
            let w = options.signals.symbol_query_weight;
            weights.lexical *= w;
            weights.symbol *= w;
        } else {
            weights.dense *= options.signals.prose_dense_weight;
        }
        weights.dense *= options.fuse.dense_factor(query.words, query.long, coverage);
        config
    }

    /// Whether chunks holding the query's quoted phrases go first (in the
    /// lexical list and, pinned, in the answer): not in a text long besides
    /// its quotes (`SearchQuery::quotes_aside`), whose quotes are its
    /// writer's, unless `SearchOptions::pin_long_phrases`.
    fn phrases_lead(&self) -> bool {
        !self.query.quotes_aside || self.options.pin_long_phrases
    }

    /// The code-aware ranking signals (`rank::signals`), then the chunks
    /// the query's stack frames point at (`located`) raised.
    fn signals(&self, fused: &mut Vec<Fused>, located: &[(u32, u32)]) {
        let (snapshot, options) = (self.snapshot, self.options);
        signals::apply(fused, &options.signals, &self.query.facts, |id| {
            snapshot.chunk(id).map(|(segment, chunk)| ChunkFacts {
                path: segment.path_of(chunk),
                name: &chunk.name,
                qualified_name: &chunk.qualified_name,
                kind: chunk.kind,
                language: chunk.language,
                lines: chunk.end_line.saturating_sub(chunk.start_line) + 1,
                marks: snapshot.layout.marks(segment.path_of(chunk)),
            })
        });
        if options.signals.frames > 0.0 {
            raise_located(
                fused,
                located,
                options.signals.frames,
                options.signals.frame_decay,
            );
        }
    }

    /// Exact names (joined to the list if no branch found them) and
    /// verified phrases above every fused result, fused order within each
    /// group; a type's definition before the `impl` blocks named like it
    /// (`SearcherBuilder` opens the struct).
    fn promote(&self, fused: &mut Vec<Fused>, pins: &Pins<'_>) {
        if !pins.on {
            return;
        }
        let snapshot = self.snapshot;
        let listed: FxHashSet<u32> = fused.iter().map(|f| f.chunk_id).collect();
        let mut missing: Vec<u32> = pins
            .exact
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
        promote(fused, |f| pins.is_pinned(f));
        let is_impl = |f: &Fused| {
            snapshot
                .chunk(f.chunk_id)
                .is_some_and(|(_, chunk)| !chunk.kind.defines_its_name())
        };
        let pinned = fused.iter().take_while(|f| pins.is_pinned(f)).count();
        // Among the pinned: a name equal only when case is folded after one
        // spelt as written, and impl blocks after the types they implement.
        let some_cased = !pins.cased.is_empty();
        let folded_only =
            |f: &Fused| some_cased && pins.is_exact(f) && !pins.cased.contains(&f.chunk_id);
        fused[..pinned].sort_by_key(|f| (pins.is_exact(f) && is_impl(f), folded_only(f)));
    }

    /// Every candidate in its place (no limit: which come first must not
    /// depend on how many are asked for): a file's later hits decay
    /// (`saturate_per_file`), then a hard cap of `per_file_cap` hits of a
    /// file before every other file's (exact names are always taken).
    fn diversify(&self, fused: Vec<Fused>, pins: &Pins<'_>) -> Vec<Fused> {
        let (snapshot, options) = (self.snapshot, self.options);
        let path_of = |f: &Fused| {
            snapshot
                .chunk(f.chunk_id)
                .map_or("", |(seg, chunk)| seg.path_of(chunk))
        };
        let all = fused.len();
        let decay = if self.query.pasted {
            options.long_file_saturation
        } else {
            options.file_saturation
        };
        let fused = if decay > 0.0 && decay < 1.0 {
            saturate_per_file(
                fused,
                all,
                Saturation {
                    decay,
                    head: options.diverse_head,
                },
                path_of,
                |f| f.score,
                |f| pins.is_pinned(f),
                |f| f.rank(Branch::Symbol).is_some(),
            )
        } else {
            fused
        };
        cap_per_file(fused, all, options.per_file_cap, path_of, |f| {
            pins.is_exact(f)
        })
    }
}

/// What exact-name priority pins, when it is on.
struct Pins<'a> {
    /// Definitions named exactly like an identifier query.
    exact: &'a FxHashSet<u32>,
    /// Those of them spelt like it, case included.
    cased: &'a FxHashSet<u32>,
    /// Chunks that hold every quoted phrase, verified in their text.
    phrases: &'a FxHashSet<u32>,
    /// Whether those are pinned (`PassContext::phrases_lead`): they are
    /// marked either way.
    pin_phrases: bool,
    /// `SearchOptions::exact_priority`.
    on: bool,
}

impl Pins<'_> {
    fn is_exact(&self, f: &Fused) -> bool {
        self.on && self.exact.contains(&f.chunk_id)
    }

    fn is_pinned(&self, f: &Fused) -> bool {
        self.on
            && (self.exact.contains(&f.chunk_id)
                || (self.pin_phrases && self.phrases.contains(&f.chunk_id)))
    }
}

/// The live definitions the frames of a query point at, in frame order,
/// each once with the least depth of a frame pointing at it
/// (`Frame::depth`): in a file the frame's path names (`frames::names_file`), the
/// innermost definition holding the frame's line; when the frame names its
/// function, the innermost definition of that name holding the line, or
/// else the one of that name nearest to it (the trace may come from another
/// version of the file). A frame whose file is not in the index, or whose
/// function is not in its file, points at nothing.
fn locate_frames(
    snapshot: &Snapshot,
    frames: &[Frame],
    filter: &ChunkFilter<'_>,
) -> Vec<(u32, u32)> {
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
    let mut located: Vec<(u32, u32)> = Vec::new();
    for (frame, best) in frames.iter().zip(best) {
        let Some((_, _, _, id)) = best else { continue };
        match located.iter_mut().find(|(seen, _)| *seen == id) {
            Some((_, depth)) => *depth = (*depth).min(frame.depth),
            None => located.push((id, frame.depth)),
        }
    }
    located
}

/// Moves `id` up to place `places` (1-based) when it sits lower, scored
/// between the hit above that place and the one it displaces, so scores
/// still fall in list order.
fn keep_within(fused: &mut Vec<Fused>, id: u32, places: usize) {
    let Some(at) = fused.iter().position(|f| f.chunk_id == id) else {
        return;
    };
    let to = places.max(1) - 1;
    if at <= to {
        return;
    }
    let mut kept = fused.remove(at);
    let below = fused[to].score;
    kept.score = match to.checked_sub(1).map(|above| fused[above].score) {
        Some(above) => below + (above - below) / 2.0,
        None => below + below.abs().max(f32::MIN_POSITIVE) * 1e-3,
    };
    fused.insert(to, kept);
}

/// Adds `weight * decay^depth * top` to each located chunk (joining it to
/// the list if no branch found it) and re-sorts; equal scores keep their
/// order. The frame where the error was raised gets the whole weight, the
/// entry point's plumbing little.
fn raise_located(fused: &mut Vec<Fused>, located: &[(u32, u32)], weight: f32, decay: f32) {
    if located.is_empty() {
        return;
    }
    let top = fused
        .first()
        .map_or(1.0, |f| f.score)
        .max(f32::MIN_POSITIVE);
    for &(id, depth) in located {
        let raise = weight * decay.powi(depth.min(64) as i32) * top;
        match fused.iter_mut().find(|f| f.chunk_id == id) {
            Some(f) => f.score += raise,
            None => fused.push(Fused {
                chunk_id: id,
                score: raise,
                ranks: [None; 3],
            }),
        }
    }
    fused.sort_by(|a, b| b.score.total_cmp(&a.score));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(ids: &[u32]) -> Vec<Fused> {
        ids.iter()
            .enumerate()
            .map(|(i, &chunk_id)| Fused {
                chunk_id,
                score: 1.0 - i as f32 * 0.1,
                ranks: [None; 3],
            })
            .collect()
    }

    fn ids(fused: &[Fused]) -> Vec<u32> {
        fused.iter().map(|f| f.chunk_id).collect()
    }

    #[test]
    fn a_guarded_hit_moves_up_to_its_place_and_no_further() {
        let mut fused = list(&[10, 11, 12, 13, 14]);
        keep_within(&mut fused, 14, 3);
        assert_eq!(ids(&fused), [10, 11, 14, 12, 13]);
        // Scored between its neighbours: scores still fall.
        assert!(fused.windows(2).all(|w| w[0].score > w[1].score));
        keep_within(&mut fused, 13, 1);
        assert_eq!(ids(&fused), [13, 10, 11, 14, 12]);
        assert!(fused.windows(2).all(|w| w[0].score > w[1].score));
        // Already within its places, or not listed: nothing moves.
        let before = ids(&fused);
        keep_within(&mut fused, 10, 3);
        keep_within(&mut fused, 99, 3);
        assert_eq!(ids(&fused), before);
    }
}
