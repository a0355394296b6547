//! How one name matches one query: the tier and the name part of the score
//! ([`Eval`]), camel humps, subsequences and container scores.
//! Owns: the scoring rules (tiers are strict; within a tier shorter names,
//! earlier matches, fewer gaps and exact case score higher) and the score
//! bounds the search relies on to stop early.
//! Never: look at a table, a segment or liveness, or panic on any bytes.

use super::fold::{common_prefix, find_char, is_continuation, utf8_len, Folded};

/// Hump matching is skipped for longer queries (bytes)...
const HUMP_MAX_QUERY: usize = 64;
/// ...and only looks at this many leading word parts of a name.
const HUMP_MAX_PARTS: usize = 32;
/// Start positions tried when scoring a subsequence match.
const SUBSEQ_STARTS: usize = 4;
/// Lengths and positions are capped here before they enter a score, which
/// keeps every name score above `-LEN_CAP * 3.25`.
const LEN_CAP: usize = 4096;
/// Score step between two container match levels; larger than the spread of
/// name scores, so a better container always wins within a tier.
const CONTAINER_LEVEL: f32 = 20_000.0;

/// How a symbol matched; higher is better and tiers are strict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MatchTier {
    Subsequence = 0,
    WordBoundary = 1,
    Prefix = 2,
    Exact = 3,
}

/// How one name matched the query, before per-symbol adjustments.
#[derive(Clone, Copy, Debug)]
pub(super) struct Eval {
    pub(super) tier: MatchTier,
    /// Name part of the score: length, position and gap penalties.
    pub(super) base: f32,
    /// Name byte positions (< 32) where a query char landed...
    considered: u32,
    /// ...and those of them where the query char was uppercase.
    expect: u32,
}

impl Eval {
    /// A match of the whole query as one run starting at byte `start`.
    pub(super) fn contiguous(tier: MatchTier, q: &Folded, name_len: usize, start: usize) -> Eval {
        let shift = u32::try_from(start).unwrap_or(u32::MAX);
        Eval {
            tier,
            base: -cap(name_len) - 0.25 * cap(start),
            considered: q.starts.checked_shl(shift).unwrap_or(0),
            expect: q.upper.checked_shl(shift).unwrap_or(0),
        }
    }

    /// The share of matched chars whose case equals the query's, in `0..=1`.
    pub(super) fn case_bonus(&self, sym_upper: u32) -> f32 {
        if self.considered == 0 {
            return 0.0;
        }
        let agree = !(self.expect ^ sym_upper) & self.considered;
        agree.count_ones() as f32 / self.considered.count_ones() as f32
    }
}

fn cap(x: usize) -> f32 {
    x.min(LEN_CAP) as f32
}

/// The highest score any match on a name of `len` bytes can reach.
pub(super) fn upper_bound(len: usize) -> f32 {
    -cap(len) + 1.0
}

/// Reusable buffers for hump matching.
#[derive(Default)]
pub(super) struct Scratch {
    memo: Vec<u64>,
    /// (query byte, part index, length) of each hump piece.
    pieces: Vec<(usize, usize, usize)>,
}

/// Records that query byte `qi` landed on name byte `ni`.
fn mark(considered: &mut u32, expect: &mut u32, q: &Folded, qi: usize, ni: usize) {
    if ni < 32 {
        *considered |= 1 << ni;
        if qi < 32 && q.upper & (1 << qi) != 0 {
            *expect |= 1 << ni;
        }
    }
}

/// Classifies how `name` (with word part starts `parts`) matches `q`. Humps
/// are only tried when `with_hump` is set and subsequences only when
/// `with_subsequence` is, so callers can skip work that cannot pay off.
pub(super) fn evaluate(
    q: &Folded,
    name: &[u8],
    parts: &[u16],
    with_hump: bool,
    with_subsequence: bool,
    scratch: &mut Scratch,
) -> Option<Eval> {
    let qb = &q.bytes;
    let Some(&q0) = qb.first() else {
        let tier = if name.is_empty() {
            MatchTier::Exact
        } else {
            MatchTier::Prefix
        };
        return Some(Eval::contiguous(tier, q, name.len(), 0));
    };
    if name.first() == Some(&q0) && name.starts_with(qb) {
        let tier = if name.len() == qb.len() {
            MatchTier::Exact
        } else {
            MatchTier::Prefix
        };
        return Some(Eval::contiguous(tier, q, name.len(), 0));
    }
    let at_part = |&&s: &&u16| {
        let s = s as usize;
        s > 0 && name.get(s) == Some(&q0) && name[s..].starts_with(qb)
    };
    if let Some(&s) = parts.iter().find(at_part) {
        return Some(Eval::contiguous(
            MatchTier::WordBoundary,
            q,
            name.len(),
            s as usize,
        ));
    }
    // Humps and subsequences both need the query bytes in order.
    if !(with_hump || with_subsequence) || !is_byte_subsequence(qb, name) {
        return None;
    }
    if with_hump {
        if let Some(ev) = hump(q, name, parts, scratch) {
            return Some(ev);
        }
    }
    if with_subsequence {
        return subsequence(q, name);
    }
    None
}

/// Camel-hump match: the query splits into pieces, each a prefix of a word
/// part, the parts in increasing order (skipping allowed). Pieces are tried
/// longest first and parts earliest first, so the result is deterministic.
fn hump(q: &Folded, name: &[u8], parts: &[u16], scratch: &mut Scratch) -> Option<Eval> {
    let qb = &q.bytes;
    let parts = &parts[..parts.len().min(HUMP_MAX_PARTS)];
    if qb.len() < 2 || qb.len() > HUMP_MAX_QUERY || parts.len() < 2 {
        return None;
    }
    if !parts.iter().any(|&s| name.get(s as usize) == Some(&qb[0])) {
        return None;
    }
    let stride = parts.len() + 1;
    let bits = (qb.len() + 1) * stride;
    scratch.memo.clear();
    scratch.memo.resize(bits.div_ceil(64), 0);
    scratch.pieces.clear();
    let mut h = Hump {
        q: qb,
        name,
        parts,
        stride,
        memo: &mut scratch.memo,
        pieces: &mut scratch.pieces,
    };
    if !h.rec(0, 0) {
        return None;
    }
    let pieces = &scratch.pieces;
    // One piece plus skipped separators is not a hump (and the scan's
    // prefilter relies on humps having two pieces).
    if pieces.len() < 2 {
        return None;
    }
    let (_, first_part, _) = pieces[0];
    let first = parts[first_part] as usize;
    let skipped: usize = pieces.windows(2).map(|w| w[1].1 - w[0].1 - 1).sum();
    let (mut considered, mut expect) = (0, 0);
    for &(qi, part, len) in pieces {
        let start = parts[part] as usize;
        for off in (0..len).filter(|&o| !is_continuation(qb[qi + o])) {
            mark(&mut considered, &mut expect, q, qi + off, start + off);
        }
    }
    Some(Eval {
        tier: MatchTier::WordBoundary,
        base: -cap(name.len())
            - 0.25 * cap(first)
            - 2.0 * (pieces.len() - 1) as f32
            - 0.5 * skipped as f32,
        considered,
        expect,
    })
}

struct Hump<'a> {
    q: &'a [u8],
    name: &'a [u8],
    parts: &'a [u16],
    stride: usize,
    memo: &'a mut Vec<u64>,
    pieces: &'a mut Vec<(usize, usize, usize)>,
}

impl Hump<'_> {
    /// True when `q[qi..]` splits into pieces over parts `pmin..` (and
    /// skipped separators); failures are memoised, which bounds the work by
    /// `query bytes * parts^2`.
    fn rec(&mut self, qi: usize, pmin: usize) -> bool {
        if qi == self.q.len() {
            return true;
        }
        let key = qi * self.stride + pmin;
        if self.memo[key / 64] & (1 << (key % 64)) != 0 {
            return false;
        }
        for p in pmin..self.parts.len() {
            let start = self.parts[p] as usize;
            let end = self
                .parts
                .get(p + 1)
                .map_or(self.name.len(), |&e| e as usize);
            let Some(part) = self.name.get(start..end) else {
                continue;
            };
            let mut len = common_prefix(&self.q[qi..], part);
            while len > 0 {
                let at = qi + len;
                if at == self.q.len() || !is_continuation(self.q[at]) {
                    self.pieces.push((qi, p, len));
                    if self.rec(at, p + 1) {
                        return true;
                    }
                    self.pieces.pop();
                }
                len -= 1;
            }
        }
        // A separator typed between pieces (`gr_st` for `graph_x_store`)
        // may be skipped; the query still has to start with a piece.
        let b = self.q[qi];
        if qi > 0 && b.is_ascii() && !b.is_ascii_alphanumeric() && self.rec(qi + 1, pmin) {
            return true;
        }
        self.memo[key / 64] |= 1 << (key % 64);
        false
    }
}

/// Subsequence match, char by char (callers have checked
/// [`is_byte_subsequence`]). Tries up to [`SUBSEQ_STARTS`]
/// occurrences of the first char and keeps the best-scoring greedy match.
fn subsequence(q: &Folded, name: &[u8]) -> Option<Eval> {
    let qb = &q.bytes;
    let first_len = utf8_len(*qb.first()?).min(qb.len());
    let mut best: Option<Eval> = None;
    let mut from = 0;
    for _ in 0..SUBSEQ_STARTS {
        let Some(p0) = find_char(name, from, &qb[..first_len]) else {
            break;
        };
        let (mut considered, mut expect) = (0, 0);
        mark(&mut considered, &mut expect, q, 0, p0);
        let mut runs = 1usize;
        let mut end = p0 + first_len;
        let mut qi = first_len;
        let mut complete = true;
        while qi < qb.len() {
            let cl = utf8_len(qb[qi]).min(qb.len() - qi);
            match find_char(name, end, &qb[qi..qi + cl]) {
                Some(p) => {
                    if p != end {
                        runs += 1;
                    }
                    mark(&mut considered, &mut expect, q, qi, p);
                    end = p + cl;
                    qi += cl;
                }
                None => {
                    complete = false;
                    break;
                }
            }
        }
        if !complete {
            // A later start cannot succeed where an earlier one failed.
            break;
        }
        let ev = Eval {
            tier: MatchTier::Subsequence,
            base: -cap(name.len()) - 0.25 * cap(p0) - 2.0 * cap(runs - 1),
            considered,
            expect,
        };
        if best.is_none_or(|b| ev.base > b.base) {
            best = Some(ev);
        }
        if runs == 1 {
            break;
        }
        from = p0 + first_len;
    }
    best
}

/// True when the bytes of `q` occur in order in `name`: necessary for a
/// char-wise subsequence and much cheaper, so it rejects most names.
fn is_byte_subsequence(q: &[u8], name: &[u8]) -> bool {
    let mut rest = q;
    for &b in name {
        match rest.split_first() {
            Some((&c, tail)) if c == b => rest = tail,
            Some(_) => {}
            None => return true,
        }
    }
    rest.is_empty()
}

/// Scores a container against the container part of a query, or `None`
/// when it does not match: exact > prefix of a segment > substring >
/// subsequence, then shorter containers first.
pub(super) fn container_score(cq: &[u8], c: &[u8]) -> Option<f32> {
    let level = if c == cq {
        3.0
    } else if c.starts_with(cq)
        || c.iter()
            .enumerate()
            .any(|(i, &b)| b == b'.' && c[i + 1..].starts_with(cq))
    {
        2.0
    } else if c.windows(cq.len().max(1)).any(|w| w == cq) {
        1.0
    } else {
        let mut at = 0;
        let mut qi = 0;
        while qi < cq.len() {
            let cl = utf8_len(cq[qi]).min(cq.len() - qi);
            at = find_char(c, at, &cq[qi..qi + cl])? + cl;
            qi += cl;
        }
        0.0
    };
    Some(level * CONTAINER_LEVEL - 0.1 * cap(c.len()))
}
