//! Rank fusion and the passes after it: Reciprocal Rank Fusion of the
//! query branches, `score(d) = sum_b weight_b / (k + rank_b(d))`, where a
//! chunk a list cut at its depth left out counts at a rank past the cut,
//! then exact-match priority and the per-file cap with backfill.
//!
//! Owns: `FuseConfig` (k, depth, per-branch weights, the rank past the
//! cut), `fuse`, `merge_partial`, `promote`, `cap_per_file` and
//! `saturate_per_file`.
//! Invariants: ranks are 1-based; a chunk's fused score only depends on its
//! ranks and on which lists were cut (a rank past the cut is no rank: the
//! hit does not claim that list found it); ties break on the best single
//! rank, then on chunk id, so output is deterministic; every fused hit
//! remembers its rank in each branch.
//! Never: look at text, scores of individual branches or the index.

pub mod classes;
pub mod frames;
pub mod query_facts;
pub mod signals;

/// A query branch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Branch {
    Lexical,
    Dense,
    Symbol,
}

impl Branch {
    pub const ALL: [Branch; 3] = [Branch::Lexical, Branch::Dense, Branch::Symbol];

    pub fn name(self) -> &'static str {
        match self {
            Branch::Lexical => "lexical",
            Branch::Dense => "dense",
            Branch::Symbol => "symbol",
        }
    }

    fn slot(self) -> usize {
        self as usize
    }
}

/// How much each branch's list counts in fusion.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Weights {
    pub lexical: f32,
    pub dense: f32,
    pub symbol: f32,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            lexical: 1.0,
            dense: 1.0,
            symbol: 1.0,
        }
    }
}

impl Weights {
    /// The weight of `branch`'s list.
    pub fn of(&self, branch: Branch) -> f32 {
        match branch {
            Branch::Lexical => self.lexical,
            Branch::Dense => self.dense,
            Branch::Symbol => self.symbol,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct FuseConfig {
    /// The RRF constant: larger values flatten the rank curve.
    pub k: f32,
    /// Candidates fetched per branch; `None` means `max(limit * 4, 50)`.
    pub depth: Option<usize>,
    /// Where a chunk that a cut list left out ranks in it, as a multiple of
    /// the depth (0: nowhere, plain RRF). Without it, a chunk one list puts
    /// first and the other leaves out (the dense list's 51st) scores less
    /// than one both lists hold at ranks 20-50: the cut, not the order,
    /// decides. A list shorter than the depth holds every chunk that
    /// matched it, so what it left out counts nothing. Default 1.6 (rank
    /// 80 at depth 50; docs/quality.md, "How the ranking defaults were
    /// chosen").
    pub missing: f32,
    /// Weight of each branch's list.
    pub weights: Weights,
    /// Multiplier for a hit only the dense branch found: a weak dense list
    /// should re-rank what the other branches agree on more than it adds
    /// noise of its own (1 = plain RRF).
    pub dense_alone: f32,
    /// Multiplier for the dense branch's weight when its vectors are the
    /// static tier's: a bag of distilled token vectors is a weaker list
    /// than the transformer's. Default 0.25.
    pub static_dense: f32,
    /// How much less the static tier's order counts where it stands in for
    /// chunks the transformer has not embedded yet (`merge_partial`; 1 =
    /// as much as the transformer's; infinity, the default, = no stand-in).
    /// Only the language server's `staticTier` setting turns it on: a
    /// stand-in helps early in a cold embedding and costs later (docs/quality.md,
    /// "Quality while vectors fill in").
    pub fill_discount: f32,
    /// While only a share `c` of the chunks has vectors, the dense weight
    /// is multiplied by `c^partial_power` (0 = unchanged): a list over part
    /// of the chunks favours that part, so it counts in proportion. Full
    /// coverage is unaffected. Default 1.
    pub partial_power: f32,
    /// How far a confident lexical list lowers the dense weight: the dense
    /// weight is multiplied by `1 - lexical_confidence * coverage^power`,
    /// where coverage is the idf-weighted share of the query's terms that
    /// the best lexical hit holds (0 = plain weights). A query whose words
    /// one chunk holds is answered by that evidence; one the lexical list
    /// matches poorly (a description in other words) leans on the dense
    /// list. Defaults 0.65 and power 2; a higher confidence let file
    /// coherence outrank a hit both lists put first (`hybrid.rs`,
    /// "probabilistic set membership").
    pub lexical_confidence: f32,
    pub confidence_power: f32,
    /// Queries of at most this many words use `short_power` instead of
    /// `confidence_power` (0: none do). A short query is a handful of
    /// keywords: a chunk holding part of them already says the lexical
    /// list is on target, so the dense weight falls linearly with
    /// coverage; a sentence-long description keeps the quadratic curve
    /// and leans on the dense list. Defaults 8 words and power 1.
    pub short_words: usize,
    pub short_power: f32,
    /// Multiplier of the dense weight for a long query
    /// ([`is_long_query`](crate::lexical::query::is_long_query): an issue
    /// text, a long description). A bag of a
    /// hundred words matches many chunks a little, while the embedding of
    /// the text's opening (its title and first sentences) says what it is
    /// about. Default 3.
    pub long_dense: f32,
}

impl FuseConfig {
    /// What the dense weight is multiplied by for `query`, whose best
    /// lexical hit holds `coverage` (0 to 1) of its idf-weighted terms.
    pub fn dense_factor(&self, words: usize, long_query: bool, coverage: f32) -> f32 {
        let power = if words <= self.short_words {
            self.short_power
        } else {
            self.confidence_power
        };
        let long = if long_query { self.long_dense } else { 1.0 };
        (1.0 - self.lexical_confidence * coverage.clamp(0.0, 1.0).powf(power)) * long
    }
}

impl Default for FuseConfig {
    fn default() -> Self {
        FuseConfig {
            k: 60.0,
            depth: None,
            missing: 1.6,
            weights: Weights::default(),
            dense_alone: 1.0,
            static_dense: 0.25,
            fill_discount: f32::INFINITY,
            partial_power: 1.0,
            lexical_confidence: 0.65,
            short_words: 8,
            short_power: 1.0,
            confidence_power: 2.0,
            long_dense: 3.0,
        }
    }
}

/// The most candidates one branch fetches.
pub const MAX_DEPTH: usize = 40_000;

impl FuseConfig {
    /// Candidates per branch for `limit` hits: the set depth, else
    /// `max(limit * 4, 50)`; never more than [`MAX_DEPTH`], whatever the
    /// limit or setting (a huge `--limit` is refused work, not a panic in
    /// the vector index).
    pub fn depth_for(&self, limit: usize) -> usize {
        self.depth
            .unwrap_or_else(|| limit.saturating_mul(4).max(50))
            .clamp(1, MAX_DEPTH)
    }

    pub fn weight(&self, branch: Branch) -> f32 {
        self.weights.of(branch)
    }
}

/// One fused result.
#[derive(Clone, Debug, PartialEq)]
pub struct Fused {
    pub chunk_id: u32,
    pub score: f32,
    /// 1-based rank in each branch that returned it, indexed like `Branch::ALL`.
    pub ranks: [Option<u32>; 3],
}

impl Fused {
    pub fn rank(&self, branch: Branch) -> Option<u32> {
        self.ranks[branch.slot()]
    }

    pub fn branches(&self) -> impl Iterator<Item = Branch> + '_ {
        Branch::ALL.into_iter().filter(|b| self.rank(*b).is_some())
    }

    fn best_rank(&self) -> u32 {
        self.ranks
            .iter()
            .flatten()
            .copied()
            .min()
            .unwrap_or(u32::MAX)
    }
}

/// Fuses ranked lists of chunk ids (best first). A chunk listed twice in one
/// branch keeps its first rank. `cut` is the depth the lists were cut at
/// (`FuseConfig::depth_for`): a chunk that a list of that length left out
/// is counted at rank `missing * cut` in it (`FuseConfig::missing`). With
/// `None`, what a list left out counts nothing (plain RRF).
pub fn fuse(lists: &[(Branch, &[u32])], config: &FuseConfig, cut: Option<usize>) -> Vec<Fused> {
    let mut by_chunk: rustc_hash::FxHashMap<u32, usize> = Default::default();
    let mut fused: Vec<Fused> = Vec::new();
    for (branch, ids) in lists {
        let weight = config.weight(*branch);
        for (position, chunk_id) in ids.iter().enumerate() {
            let rank = position as u32 + 1;
            let idx = *by_chunk.entry(*chunk_id).or_insert_with(|| {
                fused.push(Fused {
                    chunk_id: *chunk_id,
                    score: 0.0,
                    ranks: [None; 3],
                });
                fused.len() - 1
            });
            let entry = &mut fused[idx];
            if entry.ranks[branch.slot()].is_some() {
                continue;
            }
            entry.ranks[branch.slot()] = Some(rank);
            entry.score += weight / (config.k + rank as f32);
        }
    }
    if let Some(depth) = cut.filter(|&d| d > 0 && config.missing > 0.0) {
        // Past the cut, in every list that was cut, for what it left out.
        let past_cut = config.missing * depth as f32;
        for (branch, ids) in lists {
            if ids.len() < depth {
                continue;
            }
            let credit = config.weight(*branch) / (config.k + past_cut);
            for f in fused.iter_mut().filter(|f| f.rank(*branch).is_none()) {
                f.score += credit;
            }
        }
    }
    if config.dense_alone != 1.0 {
        for f in &mut fused {
            if f.branches().eq([Branch::Dense]) {
                f.score *= config.dense_alone;
            }
        }
    }
    fused.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.best_rank().cmp(&b.best_rank()))
            .then(a.chunk_id.cmp(&b.chunk_id))
    });
    fused
}

/// One dense list out of two that cover disjoint chunks: `primary`, over
/// the chunks that have the transformer's vectors (a share `coverage` of
/// all chunks), and `fill`, over the rest, from the weaker static tier.
/// Each hit is placed at its estimated rank in a list over every chunk:
/// the r-th of `primary` at about `r / coverage`, the r-th of `fill` at
/// about `r / (1 - coverage)`, times `fill_discount` (1 trusts the fill's
/// order as much as the primary's; larger values push it down). Ties go
/// to `primary`; at most `depth` ids are kept.
pub fn merge_partial(
    primary: &[u32],
    fill: &[u32],
    coverage: f32,
    fill_discount: f32,
    depth: usize,
) -> Vec<u32> {
    let coverage = coverage.clamp(0.0, 1.0);
    // The estimated rank of the `rank`-th hit of a list over `share` of the
    // chunks (infinite past its end, or for a list over none of them).
    let estimate = |list: &[u32], rank: usize, share: f32, discount: f32| {
        if rank <= list.len() && share > 0.0 {
            rank as f32 / share * discount
        } else {
            f32::INFINITY
        }
    };
    let mut merged = Vec::with_capacity(depth.min(primary.len() + fill.len()));
    let (mut p, mut f) = (0, 0);
    while merged.len() < depth {
        let p_key = estimate(primary, p + 1, coverage, 1.0);
        let f_key = estimate(fill, f + 1, 1.0 - coverage, fill_discount.max(0.0));
        if p < primary.len() && p_key <= f_key {
            merged.push(primary[p]);
            p += 1;
        } else if f_key.is_finite() {
            merged.push(fill[f]);
            f += 1;
        } else {
            break;
        }
    }
    merged
}

/// Moves the items `is_priority` accepts in front of the rest, keeping the
/// order within each group (exact matches above every fused result).
pub fn promote<T>(items: &mut [T], is_priority: impl Fn(&T) -> bool) {
    // A stable sort on a boolean key keeps both groups in order.
    items.sort_by_key(|item| !is_priority(item));
}

/// A hard per-file cap: walking in order, each file's first `per_file`
/// items keep their place (0 = no cap); a file's further items are
/// deferred behind every other file's, in order, so they fill the list
/// only when no other file has any left. Items `is_exempt` accepts (exact
/// names) always keep their place and count for their file. Returns at
/// most `limit` items; which come first never depends on `limit`.
pub fn cap_per_file<T, K: Eq + std::hash::Hash>(
    items: Vec<T>,
    limit: usize,
    per_file: usize,
    file_of: impl Fn(&T) -> K,
    is_exempt: impl Fn(&T) -> bool,
) -> Vec<T> {
    if per_file == 0 {
        return items.into_iter().take(limit).collect();
    }
    let mut kept = Vec::with_capacity(items.len());
    let mut deferred = Vec::new();
    let mut per_path: rustc_hash::FxHashMap<K, usize> = Default::default();
    for item in items {
        let count = per_path.entry(file_of(&item)).or_default();
        *count += 1;
        if *count <= per_file || is_exempt(&item) {
            kept.push(item);
        } else {
            deferred.push(item);
        }
    }
    kept.extend(deferred);
    kept.truncate(limit);
    kept
}

/// Makes every item's score follow the list: an item placed above a
/// better scored one (an exact name, a phrase, a file's turn) is scored
/// just above the one below it, so a client that sorts by score keeps the
/// order. Scores then strictly fall; a score that is not finite counts 0.
pub fn make_falling<T>(items: &mut [T], score: impl Fn(&mut T) -> &mut f32) {
    let mut floor = f32::NEG_INFINITY;
    for item in items.iter_mut().rev() {
        let s = score(item);
        if !s.is_finite() {
            *s = 0.0;
        }
        if *s <= floor {
            // A step that survives f32 rounding at this magnitude.
            *s = floor + (floor.abs() * 1e-6).max(1e-9);
        }
        floor = *s;
    }
}

/// One file's unpinned items, best first: (score, exempt, item).
type FileQueue<T> = std::collections::VecDeque<(f32, bool, T)>;

/// Soft per-file diversity: how much a file's further items count, and
/// over how many places of the result.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Saturation {
    /// The n-th item of a file counts `decay^(n-1)` of its score.
    pub decay: f32,
    /// Diversity shapes the first `head` places; the places after it take
    /// the best remaining items by score, whatever their file.
    pub head: usize,
}

/// Picks up to `limit` items with a soft per-file diversity: walking by
/// score, the n-th item taken from one file counts `decay^(n-1)` of its
/// score, so a second chunk of a file must beat a first chunk elsewhere by
/// `1/decay`. That holds for the first `head` places; the rest of the list
/// is filled by score alone, so the sibling of a top hit that the question
/// was about is not pushed out by weak matches in other files. Items
/// `is_pinned` accepts (exact names, verified phrases, already in front)
/// are taken first, in order, and count for their file. Items `is_exempt`
/// accepts (symbol-name hits of an identifier query) are never decayed and
/// do not count. After the pinned items, the head is ordered by decayed
/// score and the places after it by score.
pub fn saturate_per_file<T, K: Eq + std::hash::Hash + Clone>(
    items: Vec<T>,
    limit: usize,
    Saturation { decay, head }: Saturation,
    file_of: impl Fn(&T) -> K,
    score_of: impl Fn(&T) -> f32,
    is_pinned: impl Fn(&T) -> bool,
    is_exempt: impl Fn(&T) -> bool,
) -> Vec<T> {
    let mut taken_per_file: rustc_hash::FxHashMap<K, i32> = Default::default();
    let mut out: Vec<T> = Vec::with_capacity(limit.min(items.len()));
    // Per file, its unpinned items best first.
    let mut queues: Vec<(K, FileQueue<T>)> = Vec::new();
    let mut queue_of: rustc_hash::FxHashMap<K, usize> = Default::default();
    for item in items {
        let file = file_of(&item);
        if is_pinned(&item) {
            if out.len() < limit {
                *taken_per_file.entry(file).or_default() += 1;
                out.push(item);
            }
            continue;
        }
        let slot = *queue_of.entry(file.clone()).or_insert_with(|| {
            queues.push((file, Default::default()));
            queues.len() - 1
        });
        let score = score_of(&item);
        let exempt = is_exempt(&item);
        queues[slot].1.push_back((score, exempt, item));
    }
    while out.len() < limit {
        // The file whose next item has the best decayed score (first file
        // on ties, so the order is deterministic).
        let mut best: Option<(usize, f32)> = None;
        for (slot, (file, queue)) in queues.iter().enumerate() {
            let Some((score, exempt, _)) = queue.front() else {
                continue;
            };
            let n = taken_per_file.get(file).copied().unwrap_or(0);
            let decayed = if *exempt || out.len() >= head {
                *score
            } else {
                score * decay.powi(n)
            };
            if best.is_none_or(|(_, b)| decayed > b) {
                best = Some((slot, decayed));
            }
        }
        let Some((slot, _)) = best else {
            break;
        };
        let (file, queue) = &mut queues[slot];
        if let Some((_, exempt, item)) = queue.pop_front() {
            if !exempt {
                *taken_per_file.entry(file.clone()).or_default() += 1;
            }
            out.push(item);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `dense_factor` for a query text, read as `search::SearchQuery` reads it.
    fn factor(fuse: &FuseConfig, query: &str, coverage: f32) -> f32 {
        let words = query.split_whitespace().count();
        let long = crate::lexical::query::is_long_query(query);
        fuse.dense_factor(words, long, coverage)
    }

    #[test]
    fn a_short_query_trusts_partial_lexical_coverage_more() {
        let fuse = FuseConfig::default();
        let close = |a: f32, b: f32| (a - b).abs() < 1e-6;
        // Eight words or fewer: linear in coverage.
        let short = factor(&fuse, "async file I/O operations", 0.5);
        assert!(close(short, 1.0 - 0.65 * 0.5), "{short}");
        // A sentence: quadratic, so half coverage lowers the dense weight less.
        let long = factor(
            &fuse,
            "Returns the concatenation of this output and the other one given",
            0.5,
        );
        assert!(close(long, 1.0 - 0.65 * 0.25), "{long}");
        // Full coverage and none mean the same for both.
        for query in ["a b", "a b c d e f g h i j"] {
            assert!(close(factor(&fuse, query, 1.0), 0.35));
            assert!(close(factor(&fuse, query, 0.0), 1.0));
            assert!(
                close(factor(&fuse, query, 7.0), 0.35),
                "coverage is clamped"
            );
        }
    }

    #[test]
    fn a_long_query_leans_on_the_dense_list() {
        let fuse = FuseConfig::default();
        let close = |a: f32, b: f32| (a - b).abs() < 1e-6;
        let issue = "Exponent does not fully simplify: the output is -0.5*x**2.5 + 0.5*x**2.5, \
                     how do I simplify it to 0?";
        assert!(close(factor(&fuse, issue, 0.0), 3.0));
        assert!(close(factor(&fuse, issue, 1.0), 0.35 * 3.0));
        let off = FuseConfig {
            long_dense: 1.0,
            ..FuseConfig::default()
        };
        assert!(close(factor(&off, issue, 0.0), 1.0));
        // Eleven words are not long.
        let sentence = "Returns the concatenation of this output and the other one given";
        assert!(close(factor(&fuse, sentence, 0.0), 1.0));
    }

    /// (file, exempt) items named by their position; returns kept positions.
    fn check_cap(items: &[(&str, bool)], limit: usize, per_file: usize, expect: &[usize]) {
        let indexed: Vec<(usize, &str, bool)> = items
            .iter()
            .enumerate()
            .map(|(i, (f, e))| (i, *f, *e))
            .collect();
        let kept: Vec<usize> = cap_per_file(indexed, limit, per_file, |x| x.1, |x| x.2)
            .iter()
            .map(|x| x.0)
            .collect();
        assert_eq!(kept, expect);
    }

    #[test]
    fn cap_defers_crowding_siblings_and_keeps_order() {
        let items = [
            ("a", false),
            ("a", false),
            ("a", false),
            ("b", false),
            ("c", false),
        ];
        check_cap(&items, 4, 2, &[0, 1, 3, 4]);
    }

    #[test]
    fn cap_backfills_rather_than_returning_fewer() {
        let items = [
            ("a", false),
            ("a", false),
            ("a", false),
            ("a", false),
            ("b", false),
        ];
        // The crowding file's third item comes after every other file's.
        check_cap(&items, 4, 2, &[0, 1, 4, 2]);
        check_cap(&items, 10, 2, &[0, 1, 4, 2, 3]);
    }

    #[test]
    fn exempt_hits_keep_their_place_and_count() {
        let items = [
            ("a", true),
            ("a", false),
            ("a", false),
            ("a", true),
            ("b", false),
        ];
        check_cap(&items, 5, 2, &[0, 1, 3, 4, 2]);
    }

    #[test]
    fn the_head_does_not_depend_on_the_limit() {
        let items = [
            ("a", false),
            ("a", false),
            ("a", false),
            ("b", false),
            ("a", false),
            ("c", false),
        ];
        let all = [0, 1, 3, 5, 2, 4];
        for limit in 0..=items.len() {
            check_cap(&items, limit, 2, &all[..limit]);
        }
    }

    #[test]
    fn cap_zero_is_off_and_limit_zero_is_empty() {
        let items = [("a", false), ("a", false), ("a", false)];
        check_cap(&items, 2, 0, &[0, 1]);
        check_cap(&items, 0, 2, &[]);
    }

    #[test]
    fn scores_fall_down_the_list() {
        let mut scores = vec![0.2f32, 0.5, 0.5, f32::NAN, 0.1, 0.3, 0.0];
        make_falling(&mut scores, |s| s);
        assert!(scores.windows(2).all(|w| w[0] > w[1]), "{scores:?}");
        // Scores already falling are kept as they are.
        let mut kept = vec![0.9f32, 0.5, 0.1];
        make_falling(&mut kept, |s| s);
        assert_eq!(kept, vec![0.9, 0.5, 0.1]);
    }

    #[test]
    fn promote_keeps_order_within_groups() {
        let mut items = vec![1, 2, 3, 4, 5, 6];
        promote(&mut items, |x| x % 3 == 0);
        assert_eq!(items, vec![3, 6, 1, 2, 4, 5]);
    }

    fn order(lists: &[(Branch, &[u32])], config: &FuseConfig) -> Vec<u32> {
        fuse(lists, config, None)
            .iter()
            .map(|f| f.chunk_id)
            .collect()
    }

    #[test]
    fn agreement_beats_a_single_top_rank() {
        let lexical: &[u32] = &[1, 2, 3];
        let dense: &[u32] = &[4, 2, 5];
        let fused = fuse(
            &[(Branch::Lexical, lexical), (Branch::Dense, dense)],
            &FuseConfig::default(),
            None,
        );
        assert_eq!(fused[0].chunk_id, 2);
        assert_eq!(fused[0].ranks, [Some(2), Some(2), None]);
        assert!((fused[0].score - 2.0 / 62.0).abs() < 1e-6);
        // Ties (1 and 4 both rank 1 once) break on chunk id.
        assert_eq!(
            &order(
                &[(Branch::Lexical, lexical), (Branch::Dense, dense)],
                &FuseConfig::default()
            )[1..3],
            &[1, 4]
        );
    }

    #[test]
    fn what_a_cut_list_left_out_ranks_past_the_cut() {
        // Chunk 1 is the lexical list's first and the dense list's 5th or
        // later; chunk 9 is 4th in both.
        let lexical: &[u32] = &[1, 2, 3, 9];
        let dense: &[u32] = &[5, 6, 7, 9];
        let lists = [(Branch::Lexical, lexical), (Branch::Dense, dense)];
        let cut_at = |depth: usize, missing: f32| {
            let config = FuseConfig {
                missing,
                ..FuseConfig::default()
            };
            fuse(&lists, &config, Some(depth))
        };
        // Counted at rank 1.6 * 4 in the dense list, chunk 1 wins.
        let fused = cut_at(4, 1.6);
        assert_eq!(fused[0].chunk_id, 1);
        assert!((fused[0].score - (1.0 / 61.0 + 1.0 / 66.4)).abs() < 1e-6);
        // The credit is no rank: the hit still says which lists found it.
        assert_eq!(fused[0].ranks, [Some(1), None, None]);
        // Plain RRF: the cut decides, and agreement at 4th wins.
        assert_eq!(cut_at(4, 0.0)[0].chunk_id, 9);
        assert_eq!(fuse(&lists, &FuseConfig::default(), None)[0].chunk_id, 9);
        // Lists shorter than the depth hold everything that matched them:
        // what they left out earns nothing.
        assert_eq!(cut_at(5, 1.6)[0].chunk_id, 9);
    }

    #[test]
    fn saturation_makes_a_second_chunk_of_a_file_earn_its_place() {
        // (file, score, pinned)
        let items = vec![
            ("a", 1.0, false),
            ("a", 0.9, false),
            ("b", 0.6, false),
            ("a", 0.8, false),
            ("c", 0.3, false),
        ];
        let run_with = |items: Vec<(&'static str, f32, bool)>, limit, head| {
            let saturation = Saturation { decay: 0.5, head };
            saturate_per_file(
                items,
                limit,
                saturation,
                |i| i.0,
                |i| i.1,
                |i| i.2,
                |_| false,
            )
            .iter()
            .map(|i| (i.0, i.1))
            .collect::<Vec<_>>()
        };
        let run = |items, limit| run_with(items, limit, usize::MAX);
        // a 1.0, then b 0.6 beats a's 0.9 * 0.5, then a 0.45 beats c 0.3.
        assert_eq!(
            run(items.clone(), 4),
            vec![("a", 1.0), ("b", 0.6), ("a", 0.9), ("c", 0.3)]
        );
        // Pinned items come first and count for their file.
        let pinned = vec![("c", 0.1, true), ("c", 0.5, false), ("b", 0.3, false)];
        assert_eq!(run(pinned, 3), vec![("c", 0.1), ("b", 0.3), ("c", 0.5)]);
        // Never fewer than asked when enough items exist.
        assert_eq!(run(items.clone(), 10).len(), 5);
        // Past the head, the best remaining item comes next by score: a's
        // third chunk (0.8) before c (0.3), where diversity would put c
        // first (0.8 * 0.25 < 0.3).
        assert_eq!(
            run_with(items.clone(), 5, 3),
            vec![("a", 1.0), ("b", 0.6), ("a", 0.9), ("a", 0.8), ("c", 0.3)]
        );
        assert_eq!(
            run_with(items, 5, 5),
            vec![("a", 1.0), ("b", 0.6), ("a", 0.9), ("c", 0.3), ("a", 0.8)]
        );
    }

    #[test]
    fn weights_and_k_shift_the_order() {
        let lexical: &[u32] = &[1];
        let dense: &[u32] = &[2];
        let config = FuseConfig {
            weights: Weights {
                dense: 2.0,
                ..Weights::default()
            },
            ..FuseConfig::default()
        };
        assert_eq!(
            order(
                &[(Branch::Lexical, lexical), (Branch::Dense, dense)],
                &config
            ),
            vec![2, 1]
        );
        assert_eq!(FuseConfig::default().depth_for(5), 50);
        assert_eq!(FuseConfig::default().depth_for(20), 80);
        assert_eq!(FuseConfig::default().depth_for(usize::MAX), MAX_DEPTH);
        let huge = FuseConfig {
            depth: Some(usize::MAX),
            ..FuseConfig::default()
        };
        assert_eq!(huge.depth_for(10), MAX_DEPTH);
    }

    #[test]
    fn duplicates_keep_their_first_rank_and_empty_is_empty() {
        let lexical: &[u32] = &[7, 7, 8];
        let fused = fuse(&[(Branch::Lexical, lexical)], &FuseConfig::default(), None);
        assert_eq!(fused.len(), 2);
        assert_eq!(fused[0].rank(Branch::Lexical), Some(1));
        assert_eq!(fused[1].rank(Branch::Lexical), Some(3));
        assert!(fuse(&[], &FuseConfig::default(), None).is_empty());
    }

    #[test]
    fn a_partial_dense_list_interleaves_by_estimated_rank() {
        let primary: &[u32] = &[1, 2, 3];
        let fill: &[u32] = &[10, 11, 12];
        // Half the chunks in each list: they alternate, primary first.
        assert_eq!(
            merge_partial(primary, fill, 0.5, 1.0, 10),
            vec![1, 10, 2, 11, 3, 12]
        );
        // The transformer covers 3 of 4 chunks: three of its hits come
        // before the fill's first (1/0.75, 2/0.75, 3/0.75 < 1/0.25).
        assert_eq!(
            merge_partial(primary, fill, 0.75, 1.0, 4),
            vec![1, 2, 3, 10]
        );
        // A discount pushes the weaker list down; depth cuts the list.
        assert_eq!(merge_partial(primary, fill, 0.5, 2.0, 4), vec![1, 2, 10, 3]);
        // An infinite discount or full coverage leaves the primary alone.
        assert_eq!(
            merge_partial(primary, fill, 0.5, f32::INFINITY, 10),
            primary
        );
        assert_eq!(merge_partial(primary, &[], 1.0, 1.0, 10), primary);
        // Nothing embedded by the transformer yet: the fill is the list.
        assert_eq!(merge_partial(&[], fill, 0.0, 1.0, 10), fill);
    }
}
