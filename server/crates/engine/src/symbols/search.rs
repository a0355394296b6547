//! The search engine over one table ([`SymbolTable::search`]) and the
//! merging of per-segment answers ([`merge_matches`]).
//! Owns: running the tiers best first through the name index and the scan,
//! the bounded top-k, container filtering and the result order
//! (tier desc, score desc, chunk id asc).
//! Never: return an approximation (each phase stops only when it cannot
//! change the answer), ask `is_live` about a match that cannot enter the
//! results, or panic on any query.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::fold::{fold, mask_of};
use super::matching::{container_score, evaluate, upper_bound, Eval, MatchTier, Scratch};
use super::query::SymbolQuery;
use super::table::{SymbolTable, SCAN_KIND_BITS};

/// A qualified query whose matching containers hold at most this many
/// symbols evaluates those symbols directly instead of using the name index.
pub(super) const DIRECT_MAX: usize = 16_384;

/// One result. `score` orders matches within a tier (higher is better) and
/// is comparable across segments.
#[derive(Clone, Debug, PartialEq)]
pub struct SymbolMatch {
    pub chunk_id: u32,
    pub tier: MatchTier,
    pub score: f32,
}

/// Sorts `matches` best first by (tier desc, score desc, chunk_id asc) and
/// keeps the first `limit`.
pub fn merge_matches(matches: &mut Vec<SymbolMatch>, limit: usize) {
    matches.sort_by(|a, b| rank(b.tier, b.score, b.chunk_id, a.tier, a.score, a.chunk_id));
    matches.truncate(limit);
}

/// The best `limit` matches over several tables (a snapshot's segments,
/// whose chunk ids are disjoint), best first, exactly what merging each
/// table's own answer gives. The tables are searched largest first, each
/// only for what could beat the `limit`-th best match of those before it
/// ([`SymbolTable::search_above`]), so a partial name does not scan every
/// name of every table (5-9 ms over the registry's 540k symbols).
pub fn search_tables<'t>(
    tables: impl IntoIterator<Item = &'t SymbolTable>,
    query: &SymbolQuery,
    is_live: &dyn Fn(u32) -> bool,
    limit: usize,
) -> Vec<SymbolMatch> {
    let mut order: Vec<&SymbolTable> = tables.into_iter().collect();
    order.sort_by_key(|t| std::cmp::Reverse(t.len()));
    let mut matches = Vec::new();
    let mut floor = None;
    for table in order {
        table.search_above(query, is_live, limit, floor, &mut matches);
        merge_matches(&mut matches, limit);
        if matches.len() >= limit {
            floor = matches.last().map(|m| (m.tier, m.score));
        }
    }
    matches
}

/// `Greater` when match `a` ranks above match `b`.
fn rank(at: MatchTier, ascore: f32, aid: u32, bt: MatchTier, bscore: f32, bid: u32) -> Ordering {
    at.cmp(&bt)
        .then(ascore.total_cmp(&bscore))
        .then(bid.cmp(&aid))
}

impl SymbolTable {
    /// Appends up to `limit` best matches among live chunk ids (`is_live`
    /// false skips a chunk), best first. Nothing is appended for an empty
    /// query or a zero limit.
    pub fn search(
        &self,
        query: &SymbolQuery,
        is_live: &dyn Fn(u32) -> bool,
        limit: usize,
        out: &mut Vec<SymbolMatch>,
    ) {
        self.search_above(query, is_live, limit, None, out);
    }

    /// [`SymbolTable::search`] for one table of several: only matches that
    /// rank at least as high as `floor` (a tier and score, typically the
    /// `limit`-th best match of the tables searched before) are appended,
    /// since no other can enter the merged results. Exact like `search`:
    /// merging these answers gives what merging unbounded ones gives, but a
    /// table whose names cannot beat the floor is left at the first check
    /// instead of scanned.
    pub fn search_above(
        &self,
        query: &SymbolQuery,
        is_live: &dyn Fn(u32) -> bool,
        limit: usize,
        floor: Option<(MatchTier, f32)>,
        out: &mut Vec<SymbolMatch>,
    ) {
        self.search_inner(query, is_live, limit, DIRECT_MAX, floor, out);
    }

    /// [`SymbolTable::search`] with the direct-evaluation threshold for
    /// qualified queries as a parameter, so tests can force either path.
    #[cfg(test)]
    pub(super) fn search_with(
        &self,
        query: &SymbolQuery,
        is_live: &dyn Fn(u32) -> bool,
        limit: usize,
        direct_max: usize,
        out: &mut Vec<SymbolMatch>,
    ) {
        self.search_inner(query, is_live, limit, direct_max, None, out);
    }

    fn search_inner(
        &self,
        query: &SymbolQuery,
        is_live: &dyn Fn(u32) -> bool,
        limit: usize,
        direct_max: usize,
        floor: Option<(MatchTier, f32)>,
        out: &mut Vec<SymbolMatch>,
    ) {
        if limit == 0 || query.is_empty() || self.is_empty() {
            return;
        }
        let mut s = Search {
            table: self,
            query,
            is_live,
            kind_bit: query.kind.map_or(u32::MAX, |k| 1 << (k.code() & 31)),
            containers: None,
            top: TopK::new(limit, floor),
            scratch: Scratch::default(),
            literal: None,
            direct_max,
        };
        s.run();
        s.top.drain_into(out);
    }
}

/// A result candidate ordered so that the worst one is the heap's maximum.
#[derive(Clone, Copy)]
struct Worst(MatchTier, f32, u32);

impl PartialEq for Worst {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Worst {}

impl PartialOrd for Worst {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Worst {
    fn cmp(&self, other: &Self) -> Ordering {
        rank(other.0, other.1, other.2, self.0, self.1, self.2)
    }
}

/// The best `limit` matches seen so far, none below `floor`.
struct TopK {
    limit: usize,
    floor: Option<(MatchTier, f32)>,
    heap: BinaryHeap<Worst>,
    /// Changes whenever the contents change, so callers can cache bounds.
    version: u64,
}

impl TopK {
    fn new(limit: usize, floor: Option<(MatchTier, f32)>) -> TopK {
        TopK {
            limit,
            floor,
            heap: BinaryHeap::with_capacity(limit.min(4096) + 1),
            version: 0,
        }
    }

    fn full(&self) -> bool {
        self.heap.len() >= self.limit
    }

    /// False when a match of `tier` scoring at most `score` cannot enter.
    fn admits(&self, tier: MatchTier, score: f32) -> bool {
        if let Some((floor_tier, floor_score)) = self.floor {
            // A tie with the floor may still win on chunk id.
            if (tier, score.total_cmp(&floor_score)) < (floor_tier, Ordering::Equal) {
                return false;
            }
        }
        match self.heap.peek() {
            Some(w) if self.full() => (tier, score.total_cmp(&w.1)) >= (w.0, Ordering::Equal),
            _ => true,
        }
    }

    fn push(&mut self, tier: MatchTier, score: f32, chunk_id: u32) {
        let cand = Worst(tier, score, chunk_id);
        self.version += 1;
        if !self.full() {
            self.heap.push(cand);
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if cand < *worst {
                *worst = cand;
            }
        }
    }

    fn drain_into(self, out: &mut Vec<SymbolMatch>) {
        let sorted = self.heap.into_sorted_vec();
        out.extend(
            sorted
                .into_iter()
                .map(|Worst(tier, score, chunk_id)| SymbolMatch {
                    chunk_id,
                    tier,
                    score,
                }),
        );
    }
}

/// Container scores for one qualified query.
struct ContainerScores {
    /// Indexed by container id; `NEG_INFINITY` marks a non-matching one.
    scores: Vec<f32>,
    matched: Vec<u32>,
    matched_syms: usize,
    best: f32,
}

struct Search<'t, 'q, 'f> {
    table: &'t SymbolTable,
    query: &'q SymbolQuery,
    is_live: &'f dyn Fn(u32) -> bool,
    kind_bit: u32,
    containers: Option<ContainerScores>,
    top: TopK,
    scratch: Scratch,
    /// The name id matched literally by a qualified query, skipped by
    /// the other phases so its symbols are not reported twice.
    literal: Option<usize>,
    direct_max: usize,
}

impl Search<'_, '_, '_> {
    fn run(&mut self) {
        let t = self.table;
        let q = self.query;
        if let Some(text) = &q.literal {
            self.literal = t.exact_name(text);
            if let Some(ord) = self.literal {
                let ev = Eval::contiguous(MatchTier::Exact, &fold(""), t.name_len(ord), 0);
                for sym in t.syms_of(ord) {
                    self.offer_symbol(sym, &ev, 0.0);
                }
            }
        }
        if let Some(cq) = &q.container {
            let cs = self.score_containers(cq);
            let direct = q.name.bytes.is_empty() || cs.matched_syms <= self.direct_max;
            self.containers = Some(cs);
            if direct {
                self.run_direct();
                return;
            }
        }
        self.run_indexed();
    }

    fn score_containers(&self, cq: &[u8]) -> ContainerScores {
        let t = self.table;
        let qmask = mask_of(cq);
        let mut cs = ContainerScores {
            scores: vec![f32::NEG_INFINITY; t.container_count()],
            matched: Vec::new(),
            matched_syms: 0,
            best: f32::NEG_INFINITY,
        };
        for id in 0..t.container_count() {
            if t.cont_mask[id] & qmask != qmask {
                continue;
            }
            if let Some(s) = container_score(cq, t.container(id)) {
                cs.scores[id] = s;
                cs.matched.push(id as u32);
                cs.matched_syms += (t.cont_sym_off[id + 1] - t.cont_sym_off[id]) as usize;
                cs.best = cs.best.max(s);
            }
        }
        cs
    }

    /// Evaluates every symbol under a matching container; used when those
    /// are few or when the query has no name part.
    fn run_direct(&mut self) {
        let t = self.table;
        let Some(cs) = self.containers.take() else {
            return;
        };
        for &cid in &cs.matched {
            let cb = cs.scores[cid as usize];
            let range =
                t.cont_sym_off[cid as usize] as usize..t.cont_sym_off[cid as usize + 1] as usize;
            for &sym in &t.cont_syms[range] {
                let sym = sym as usize;
                let ord = t.sym_name[sym] as usize;
                if self.literal == Some(ord)
                    || (1u32 << (t.sym_kind[sym] & 31)) & self.kind_bit == 0
                {
                    continue;
                }
                if !self
                    .top
                    .admits(MatchTier::Exact, upper_bound(t.name_len(ord)) + cb)
                {
                    continue;
                }
                let ev = if self.query.name.bytes.is_empty() {
                    Some(Eval::contiguous(
                        MatchTier::Prefix,
                        &self.query.name,
                        t.name_len(ord),
                        0,
                    ))
                } else {
                    evaluate(
                        &self.query.name,
                        t.name(ord),
                        t.parts_of(ord),
                        true,
                        true,
                        &mut self.scratch,
                    )
                };
                if let Some(ev) = ev {
                    self.offer_symbol(sym, &ev, cb);
                }
            }
        }
        self.containers = Some(cs);
    }

    /// The tiered search through the name index, then the scan.
    fn run_indexed(&mut self) {
        let t = self.table;
        let q = &self.query.name;
        let best_cb = self.containers.as_ref().map_or(0.0, |c| c.best);
        // Names already classified (or proven unable to enter) by an earlier
        // phase; later phases skip them.
        let mut seen = vec![0u64; t.name_count().div_ceil(64)];
        if let Some(ord) = self.literal {
            seen[ord / 64] |= 1 << (ord % 64);
        }

        for &ord in t.with_prefix(&q.bytes) {
            let ord = ord as usize;
            if seen[ord / 64] & (1 << (ord % 64)) != 0 {
                continue;
            }
            seen[ord / 64] |= 1 << (ord % 64);
            if t.name_kinds[ord] & self.kind_bit == 0 {
                continue;
            }
            let len = t.name_len(ord);
            let tier = if len == q.bytes.len() {
                MatchTier::Exact
            } else {
                MatchTier::Prefix
            };
            let Some(cb) = self.name_container_bonus(ord) else {
                continue;
            };
            if !self.top.admits(tier, upper_bound(len) + cb) {
                continue;
            }
            self.offer_name(ord, &Eval::contiguous(tier, q, len, 0));
        }
        if self.top.full() {
            return;
        }

        for &ord in t.word_postings_for(&q.bytes) {
            let ord = ord as usize;
            if seen[ord / 64] & (1 << (ord % 64)) != 0 || t.name_kinds[ord] & self.kind_bit == 0 {
                continue;
            }
            let Some(cb) = self.name_container_bonus(ord) else {
                continue;
            };
            if !self
                .top
                .admits(MatchTier::WordBoundary, upper_bound(t.name_len(ord)) + cb)
            {
                continue;
            }
            match evaluate(
                q,
                t.name(ord),
                t.parts_of(ord),
                true,
                false,
                &mut self.scratch,
            ) {
                Some(ev) if ev.tier == MatchTier::WordBoundary => {
                    seen[ord / 64] |= 1 << (ord % 64);
                    self.offer_name(ord, &ev);
                }
                _ => {}
            }
        }

        // The scan: the remaining names, shortest first, whose kinds and
        // characters allow a match. Scores fall with length, so it stops at
        // the first length where not even a hump could enter the results,
        // and it stops trying subsequences at the first length where no
        // subsequence could.
        let kind_bits = self.kind_bit & ((1 << SCAN_KIND_BITS) - 1);
        // The bounds only change with the length and with the results, so
        // they are recomputed only then: (length, results version, whether
        // a subsequence can still enter).
        let mut bounds = (usize::MAX, u64::MAX, true);
        for (ord, e) in t.scan.iter().enumerate() {
            if e.kinds() & kind_bits == 0 || e.mask & q.mask != q.mask {
                continue;
            }
            if seen[ord / 64] & (1 << (ord % 64)) != 0 {
                continue;
            }
            if bounds.0 != e.len() || bounds.1 != self.top.version {
                let ub = upper_bound(e.len()) + best_cb;
                if !self.top.admits(MatchTier::WordBoundary, ub) {
                    break;
                }
                bounds = (
                    e.len(),
                    self.top.version,
                    self.top.admits(MatchTier::Subsequence, ub),
                );
            }
            // A hump has at least two pieces: the first starts with the
            // query's first char and a later one with another query char,
            // both at word parts.
            let with_hump = e.initials & q.first != 0 && e.initials & q.rest != 0;
            let mut with_subsequence = bounds.2;
            if self.containers.is_some() {
                // The bound of this name's own best container is tighter.
                let Some(cb) = self.name_container_bonus(ord) else {
                    continue;
                };
                let ub = upper_bound(e.len()) + cb;
                if !self.top.admits(MatchTier::WordBoundary, ub) {
                    continue;
                }
                with_subsequence = self.top.admits(MatchTier::Subsequence, ub);
            }
            if !with_hump && !with_subsequence {
                continue;
            }
            let (name, parts) = (t.name(ord), t.parts_of(ord));
            if let Some(ev) = evaluate(
                q,
                name,
                parts,
                with_hump,
                with_subsequence,
                &mut self.scratch,
            ) {
                self.offer_name(ord, &ev);
            }
        }
    }

    /// The best container bonus among the symbols of name `ord` that pass
    /// the kind and container filters (0 for an unqualified query), or
    /// `None` when no symbol passes.
    fn name_container_bonus(&self, ord: usize) -> Option<f32> {
        let t = self.table;
        let Some(cs) = &self.containers else {
            return Some(0.0);
        };
        t.syms_of(ord)
            .filter(|&sym| (1u32 << (t.sym_kind[sym] & 31)) & self.kind_bit != 0)
            .map(|sym| cs.scores[t.sym_container[sym] as usize])
            .filter(|&s| s != f32::NEG_INFINITY)
            .max_by(f32::total_cmp)
    }

    fn offer_name(&mut self, ord: usize, ev: &Eval) {
        for sym in self.table.syms_of(ord) {
            if (1u32 << (self.table.sym_kind[sym] & 31)) & self.kind_bit == 0 {
                continue;
            }
            let cb = match &self.containers {
                None => 0.0,
                Some(cs) => {
                    let s = cs.scores[self.table.sym_container[sym] as usize];
                    if s == f32::NEG_INFINITY {
                        continue;
                    }
                    s
                }
            };
            self.offer_symbol(sym, ev, cb);
        }
    }

    /// Offers one symbol (kind and container already checked); `is_live` is
    /// asked only when the match could enter the results.
    fn offer_symbol(&mut self, sym: usize, ev: &Eval, container_bonus: f32) {
        let t = self.table;
        if (1u32 << (t.sym_kind[sym] & 31)) & self.kind_bit == 0 {
            return;
        }
        let score = ev.base + ev.case_bonus(t.sym_upper[sym]) + container_bonus;
        if !self.top.admits(ev.tier, score) {
            return;
        }
        let chunk = t.sym_chunk[sym];
        if (self.is_live)(chunk) {
            self.top.push(ev.tier, score, chunk);
        }
    }
}
