//! The lexical branch: BM25F over every segment, skipping dead chunks,
//! with identifier stems and quoted phrases verified against the current
//! text; for a long query, each candidate weighed by its file's class
//! penalty before the list is cut (`Signals::classed_lexical`).
//!
//! Never: lets an unmatched phrase empty the list; scores more than
//! `MAX_QUERY_TERMS` terms.

use super::chunk_filter::ChunkFilter;
use super::live::{chunk_text, normalize, TextSource};
use super::options::SearchOptions;
use super::query::SearchQuery;
use crate::chunk::Language;
use crate::index::Snapshot;
use crate::lexical::stem::stem;
use crate::lexical::{score_term, Accumulator};
use crate::rank::signals::path_factor;
use rustc_hash::{FxHashMap, FxHashSet};
use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// At most this many query terms take part in scoring.
const MAX_QUERY_TERMS: usize = 64;

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

/// One lexical candidate.
pub(super) struct LexicalHit {
    pub(super) chunk_id: u32,
    pub(super) phrase: bool,
}

/// The lexical branch's list, and how well its best candidate matches the
/// query: the idf-weighted fraction of the query's terms (found anywhere
/// in the index) that it holds, 0 for no candidate.
#[derive(Default)]
pub(super) struct LexicalList {
    pub(super) hits: Vec<LexicalHit>,
    pub(super) coverage: f32,
}

/// BM25F over every segment. Candidates whose current text holds every
/// quoted phrase are flagged and, with `phrases_first`, come first; the
/// rest follow in score order. Best first.
pub(super) fn lexical_branch(
    snapshot: &Snapshot,
    search: &SearchQuery<'_>,
    depth: usize,
    options: &SearchOptions,
    text: &mut dyn TextSource,
    filter: &ChunkFilter<'_>,
    phrases_first: bool,
) -> LexicalList {
    let query = &search.lexical;
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
    if snapshot.term_df.is_some() {
        for (count, term) in df.iter_mut().zip(&scored) {
            *count = snapshot.df(&term.term);
        }
    } else {
        for (segment, ords) in snapshot.segments.iter().zip(&ordinals) {
            for (i, ord) in ords.iter().enumerate() {
                if let Some(ord) = ord {
                    df[i] += u64::from(segment.lexical.df(*ord));
                }
            }
        }
    }
    let bm25 = options.bm25.as_ref().unwrap_or(&snapshot.bm25);
    // Evidence that the chunk's whole file matches (BM25 over the file's
    // summed term frequencies), added to each chunk's own score.
    let file_weight = options.signals.file_evidence;
    let signals = &options.signals;
    let classed = signals.classed_lexical && search.long;
    let mut top = TopK::new(depth);
    // Chunks holding every token of every phrase: checked for the exact
    // phrase below (when they go first; else only the listed are checked).
    let mut phrase_top = TopK::new(if phrase_masks.is_empty() || !phrases_first {
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
            // Each file's class penalty, looked up once per file.
            let mut factors: FxHashMap<u32, f32> = FxHashMap::default();
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
                // At most 1 (a knob set above 1 raises in the signals
                // only), so the bound above still holds.
                if classed {
                    score *= *factors.entry(key.path_idx).or_insert_with(|| {
                        let path = segment.paths.get(key.path_idx as usize).map_or("", |p| p);
                        let language = segment
                            .chunks
                            .get(doc as usize)
                            .map_or(Language::Text, |c| c.language);
                        let marks = snapshot.layout.marks(path);
                        path_factor(signals, &search.facts, path, language, marks).min(1.0)
                    });
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
        list.hits = in_score_order(candidates, &FxHashSet::default());
        return list;
    }
    let phrases: Vec<String> = query.phrases.iter().map(|p| normalize(&p.text)).collect();
    let mut holds_phrases = |id: u32| {
        snapshot.chunk(id).is_some_and(|(seg, chunk)| {
            text.text(seg.path_of(chunk)).is_some_and(|file| {
                let body = normalize(chunk_text(file, chunk));
                phrases.iter().all(|p| body.contains(p.as_str()))
            })
        })
    };
    if !phrases_first {
        // Flagged where they stand: an issue text's quotes are evidence
        // like its other words, not the order.
        let verified: FxHashSet<u32> = candidates
            .iter()
            .filter(|c| phrase_masks.iter().all(|m| c.matched & m == *m))
            .map(|c| c.chunk_id)
            .filter(|&id| holds_phrases(id))
            .collect();
        list.hits = in_score_order(candidates, &verified);
        return list;
    }
    // Chunks whose current text holds every phrase come first, in score
    // order; then every other candidate, phrases counting as plain words.
    // An unmatched phrase never empties the result.
    let verified: Vec<u32> = phrase_top
        .into_sorted()
        .into_iter()
        .map(|c| c.chunk_id)
        .filter(|&id| holds_phrases(id))
        .collect();
    let verified_set: FxHashSet<u32> = verified.iter().copied().collect();
    let mut hits: Vec<LexicalHit> = verified
        .into_iter()
        .map(|chunk_id| LexicalHit {
            chunk_id,
            phrase: true,
        })
        .collect();
    let rest = candidates
        .into_iter()
        .filter(|c| !verified_set.contains(&c.chunk_id))
        .collect();
    hits.extend(in_score_order(rest, &FxHashSet::default()));
    hits.truncate(depth);
    list.hits = hits;
    list
}

/// Candidates as hits in their score order, `verified` flagged as phrase
/// matches.
fn in_score_order(candidates: Vec<Candidate>, verified: &FxHashSet<u32>) -> Vec<LexicalHit> {
    candidates
        .into_iter()
        .map(|c| LexicalHit {
            chunk_id: c.chunk_id,
            phrase: verified.contains(&c.chunk_id),
        })
        .collect()
}

/// Documents holding `term` in the snapshot's corpus.
fn global_df(snapshot: &Snapshot, term: &str) -> u64 {
    snapshot.df(term)
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

#[cfg(test)]
mod tests {
    use super::*;

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
