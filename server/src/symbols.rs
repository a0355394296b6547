//! The symbol-name index behind LSP `workspace/symbol` and `quarry symbols`.
//!
//! One [`SymbolTable`] belongs to one immutable index segment. It answers
//! fuzzy name queries over the definitions of that segment; the caller runs
//! the query on every segment, filters deleted chunks through `is_live` and
//! combines the per-segment answers with [`merge_matches`]. Scores depend only
//! on the query and the symbol, never on the segment, so answers from
//! different segments compare directly.
//!
//! # Matching
//!
//! Matching is case-insensitive and sorted into strict tiers ([`MatchTier`]):
//! `Exact` (the name equals the query) > `Prefix` (the name starts with the
//! query) > `WordBoundary` (the query starts at a word part of the name and
//! runs on contiguously, or it is a camel hump: two or more consecutive
//! pieces that are prefixes of word parts taken in order, parts may be
//! skipped, and so may separators typed between pieces) >
//! `Subsequence` (the query characters appear in order). Word parts come from
//! camelCase/PascalCase (acronyms kept whole: `HTTPServer` is `http|server`),
//! `snake_case`, kebab-case, other punctuation and letter/digit changes.
//! Within a tier the score prefers shorter names, earlier matches, fewer
//! gaps and exact case. A qualified query (`Store::get`, `Class.method`,
//! `Class#method`, `pkg.Func`) matches its last segment against the name and
//! its leading segments against the container part of the qualified name;
//! how well the container matches (exact > prefix of a segment > substring >
//! subsequence) dominates the score within a tier.
//!
//! # Data structure
//!
//! Symbols are sorted by lowercase name, so the symbols of one name form a
//! contiguous range. The unique lowercase names are stored in one byte blob
//! ordered by length, with a permutation that lists them in byte order:
//! `Exact` and `Prefix` are two binary searches over it that yield a slice
//! of name ids, however many names share the prefix. `WordBoundary`
//! candidates come from an `fst::Map` over "word keys": for every name, the
//! lowercase suffix starting at each inner word part (`graphstorelookup`
//! gives `storelookup` and `lookup`) and the initials starting at each part
//! (`gsl`, `sl`). The map value is an offset into a posting list of name
//! ids laid out in key order, so a prefix query over the keys is two
//! fst lookups and one contiguous slice of postings. Humps with multi-letter
//! pieces or skipped parts, and subsequences, are found by a scan over the
//! unique names in order of length that rejects names by a 64-bit
//! character-class mask and a kind mask before any string work.
//!
//! The phases run best tier first and each stops work that cannot change
//! the answer: when `Exact` and `Prefix` already fill `limit`, nothing else
//! runs; the scan visits names shortest first and stops at the first length
//! whose best possible score cannot enter the results (scores fall with
//! length), so the answer is exactly the best `limit` matches by the rules
//! above, never an approximation.
//!
//! # Invariants
//!
//! * A table is immutable after [`SymbolTable::build`] or
//!   [`SymbolTable::read_from`]; `read_from` validates every length, offset
//!   and ordinal, so search code may index the arrays directly.
//! * Unique lowercase names ("name ids") are ordered by (length, bytes),
//!   `lex` lists them by bytes, and every name has at least one symbol.
//! * Results are deterministic: ties are broken by chunk id.
//!
//! # Never
//!
//! No I/O, no LSP or JSON types, no knowledge of files or deletions (the
//! caller passes `is_live`), and no panics on any query or any bytes.
//! `read_from` checks a checksum over everything (accidental corruption)
//! and then every array's lengths, offsets and ids (so even bytes with a
//! forged checksum cannot make the arrays index out of bounds). The one
//! exception is the inside of the fst, which the `fst` crate trusts: only
//! the checksum guards it, so deliberately forged fst bytes with a matching
//! checksum could still panic inside that crate.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fmt;
use std::ops::Range;

use fst::{IntoStreamer, Streamer};

use crate::chunk::ChunkKind;

/// Longest word key stored in the fst, in bytes; longer keys are truncated
/// and candidates are verified against the full name.
const KEY_MAX: usize = 64;
/// Word parts per name that produce word keys.
const MAX_PARTS_INDEXED: usize = 64;
/// Hump matching is skipped for longer queries (bytes)...
const HUMP_MAX_QUERY: usize = 64;
/// ...and only looks at this many leading word parts of a name.
const HUMP_MAX_PARTS: usize = 32;
/// A qualified query whose matching containers hold at most this many
/// symbols evaluates those symbols directly instead of using the name index.
const DIRECT_MAX: usize = 16_384;
/// Start positions tried when scoring a subsequence match.
const SUBSEQ_STARTS: usize = 4;
/// Lengths and positions are capped here before they enter a score, which
/// keeps every name score above `-LEN_CAP * 3.25`.
const LEN_CAP: usize = 4096;
/// Score step between two container match levels; larger than the spread of
/// name scores, so a better container always wins within a tier.
const CONTAINER_LEVEL: f32 = 20_000.0;

const MAGIC: [u8; 4] = *b"QSYM";
const FORMAT_VERSION: u32 = 1;
const HEADER_LEN: usize = 24;

/// One definition handed to [`SymbolTable::build`].
#[derive(Clone, Copy, Debug)]
pub struct SymbolRecord<'a> {
    pub chunk_id: u32,
    pub name: &'a str,
    /// The name with its containers (`GraphStore::lookup`); equal to `name`
    /// at top level.
    pub qualified_name: &'a str,
    pub kind: ChunkKind,
}

/// How a symbol matched; higher is better and tiers are strict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MatchTier {
    Subsequence = 0,
    WordBoundary = 1,
    Prefix = 2,
    Exact = 3,
}

/// One result. `score` orders matches within a tier (higher is better) and
/// is comparable across segments.
#[derive(Clone, Debug, PartialEq)]
pub struct SymbolMatch {
    pub chunk_id: u32,
    pub tier: MatchTier,
    pub score: f32,
}

/// Why [`SymbolTable::read_from`] rejected its bytes.
#[derive(Debug, thiserror::Error)]
pub enum SymbolFormatError {
    #[error("bad magic bytes")]
    BadMagic,
    #[error("unsupported format version {0}")]
    UnsupportedVersion(u32),
    #[error("truncated (need {needed} bytes, have {available})")]
    Truncated { needed: u64, available: u64 },
    #[error("checksum mismatch")]
    ChecksumMismatch,
    #[error("invalid {0}")]
    Invalid(&'static str),
    #[error("invalid word index: {0}")]
    Fst(String),
}

/// Sorts `matches` best first by (tier desc, score desc, chunk_id asc) and
/// keeps the first `limit`.
pub fn merge_matches(matches: &mut Vec<SymbolMatch>, limit: usize) {
    matches.sort_by(|a, b| rank(b.tier, b.score, b.chunk_id, a.tier, a.score, a.chunk_id));
    matches.truncate(limit);
}

/// `Greater` when match `a` ranks above match `b`.
fn rank(at: MatchTier, ascore: f32, aid: u32, bt: MatchTier, bscore: f32, bid: u32) -> Ordering {
    at.cmp(&bt)
        .then(ascore.total_cmp(&bscore))
        .then(bid.cmp(&aid))
}

// ---------------------------------------------------------------------------
// Text helpers.
// ---------------------------------------------------------------------------

/// A lowercased string with case information for its first 32 bytes.
#[derive(Clone, Debug, Default)]
pub(crate) struct Folded {
    /// Lowercase bytes, produced one char at a time.
    bytes: Vec<u8>,
    /// Bit `i` is set when byte `i` starts a char that was uppercase.
    upper: u32,
    /// Bit `i` is set when byte `i` starts a char.
    starts: u32,
    /// Character-class mask of the lowercase text, see [`char_bit`].
    mask: u64,
    /// Class bit of the first lowercase char...
    first: u64,
    /// ...and the classes of all the others.
    rest: u64,
}

/// Lowercases `s` char by char (so byte positions of names and queries are
/// computed the same way) and records case and character-class masks.
pub(crate) fn fold(s: &str) -> Folded {
    let mut out = Folded {
        bytes: Vec::with_capacity(s.len()),
        ..Folded::default()
    };
    let mut buf = [0u8; 4];
    for c in s.chars() {
        let pos = out.bytes.len();
        if pos < 32 {
            out.starts |= 1 << pos;
            if c.is_uppercase() {
                out.upper |= 1 << pos;
            }
        }
        let mut add = |out: &mut Folded, l: char| {
            let bit = char_bit(l);
            if out.bytes.is_empty() {
                out.first = bit;
            } else {
                out.rest |= bit;
            }
            out.mask |= bit;
            out.bytes
                .extend_from_slice(l.encode_utf8(&mut buf).as_bytes());
        };
        if c.is_ascii() {
            add(&mut out, c.to_ascii_lowercase());
        } else {
            c.to_lowercase().for_each(|l| add(&mut out, l));
        }
    }
    out
}

/// The char that starts at byte `at` of `bytes`, if any.
fn char_at(bytes: &[u8], at: usize) -> Option<char> {
    let len = utf8_len(*bytes.get(at)?);
    std::str::from_utf8(bytes.get(at..at + len)?)
        .ok()?
        .chars()
        .next()
}

/// The character-class bit of a lowercase char: one bit per ASCII letter and
/// digit, `_` and `-`, and hashed buckets for other ASCII and for non-ASCII.
/// A name can only contain a query as a subsequence if the name's mask
/// covers the query's.
fn char_bit(c: char) -> u64 {
    let v = c as u32;
    let bit = match c {
        'a'..='z' => v - 'a' as u32,
        '0'..='9' => 26 + v - '0' as u32,
        '_' => 36,
        '-' => 37,
        _ if c.is_ascii() => 38 + v % 10,
        _ => 48 + v % 16,
    };
    1u64 << bit
}

/// Byte length of the UTF-8 sequence that `lead` starts (1 for a stray
/// continuation byte, which keeps loops moving on odd input).
fn utf8_len(lead: u8) -> usize {
    match lead {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// Lowercase byte length of `c` under [`fold`].
fn folded_len(c: char) -> usize {
    if c.is_ascii() {
        1
    } else {
        c.to_lowercase().map(char::len_utf8).sum()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum CharClass {
    Separator,
    Upper,
    Lower,
    Digit,
}

fn char_class(c: char) -> CharClass {
    if c.is_numeric() {
        CharClass::Digit
    } else if c.is_uppercase() {
        CharClass::Upper
    } else if c.is_alphabetic() {
        CharClass::Lower
    } else {
        CharClass::Separator
    }
}

/// Appends the byte offsets (in the [`fold`]ed form of `name`) where word
/// parts start. `HTTPServerError2x` gives `http|server|error|2|x`; runs of
/// non-alphanumeric characters separate parts and belong to none.
pub(crate) fn part_starts(name: &str, out: &mut Vec<u16>) {
    use CharClass::*;
    let mut pos = 0usize;
    let mut prev = Separator;
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        let cur = char_class(c);
        let next = chars.peek().map_or(Separator, |&n| char_class(n));
        let boundary = match (prev, cur) {
            (_, Separator) => false,
            (Separator, _) => true,
            (Lower, Upper) => true,
            (Upper, Upper) => next == Lower,
            (Digit, Digit) => false,
            (Digit, _) | (_, Digit) => true,
            _ => false,
        };
        if boundary {
            match u16::try_from(pos) {
                Ok(p) => out.push(p),
                Err(_) => break,
            }
        }
        pos += folded_len(c);
        prev = cur;
    }
}

/// Characters that split a qualified query (`::`, `.`, `#`).
fn is_query_separator(c: char) -> bool {
    matches!(c, ':' | '.' | '#')
}

/// Characters that separate container segments in stored qualified names.
fn is_container_separator(c: char) -> bool {
    matches!(c, ':' | '.' | '#' | '/' | '\\')
}

/// The container part of a qualified name: `GraphStore::lookup` with name
/// `lookup` gives `GraphStore::`. A qualified name that does not end in
/// `<separator><name>` is its own container.
fn container_of<'a>(name: &str, qualified: &'a str) -> &'a str {
    if qualified == name {
        return "";
    }
    match qualified.strip_suffix(name) {
        Some(head) if head.ends_with(|c: char| !c.is_alphanumeric()) => head,
        _ => qualified,
    }
}

/// Lowercases a container and rewrites every run of `:`, `.`, `#`, `/`, `\`
/// as one `.`, trimming them at both ends, so `a::B` and `a.b` compare equal.
fn normalize_container(s: &str) -> Vec<u8> {
    let mut out = String::with_capacity(s.len());
    let mut pending_sep = false;
    for c in s.trim().chars() {
        if is_container_separator(c) {
            pending_sep = true;
            continue;
        }
        if pending_sep && !out.is_empty() {
            out.push('.');
        }
        pending_sep = false;
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
        } else {
            out.extend(c.to_lowercase());
        }
    }
    out.into_bytes()
}

fn mask_of(bytes: &[u8]) -> u64 {
    String::from_utf8_lossy(bytes)
        .chars()
        .fold(0, |m, c| m | char_bit(c))
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// First position `>= from` where the char `ch` (its UTF-8 bytes) starts.
/// UTF-8 lead bytes never occur inside another char, so a byte search is a
/// char search.
fn find_char(hay: &[u8], from: usize, ch: &[u8]) -> Option<usize> {
    let first = *ch.first()?;
    if ch.len() == 1 {
        return Some(from + hay.get(from..)?.iter().position(|&b| b == first)?);
    }
    let mut i = from;
    while i < hay.len() {
        let p = i + hay[i..].iter().position(|&b| b == first)?;
        if hay[p..].starts_with(ch) {
            return Some(p);
        }
        i = p + 1;
    }
    None
}

/// The smallest byte string greater than every string that starts with
/// `prefix`, or `None` when there is none (empty or all `0xFF`).
fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut s = prefix.to_vec();
    while let Some(last) = s.pop() {
        if last < 0xFF {
            s.push(last + 1);
            return Some(s);
        }
    }
    None
}

/// The first 8 bytes of `b` as a big-endian integer, zero-padded: ordering
/// by it and then by the bytes is ordering by the bytes, with fewer calls to
/// `memcmp` while sorting.
fn sort_key(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    let n = b.len().min(8);
    a[..n].copy_from_slice(&b[..n]);
    u64::from_be_bytes(a)
}

fn truncate_key(key: &[u8]) -> &[u8] {
    &key[..key.len().min(KEY_MAX)]
}

// ---------------------------------------------------------------------------
// Query.
// ---------------------------------------------------------------------------

/// A parsed symbol query; build it once per request with [`SymbolQuery::parse`].
#[derive(Clone, Debug)]
pub struct SymbolQuery {
    /// The last segment, matched against symbol names.
    name: Folded,
    /// The normalised leading segments of a qualified query.
    container: Option<Vec<u8>>,
    /// For a qualified query, the whole text lowercased: a symbol whose name
    /// is literally that text (a heading such as `v1.2`) is an exact match.
    literal: Option<Vec<u8>>,
    kind: Option<ChunkKind>,
}

impl SymbolQuery {
    /// `text` may be a bare name (`lookup`, `grstlk`), or qualified:
    /// `GraphStore::lookup`, `Class.method`, `Class#method`, `pkg.Func`.
    /// Qualified: the last segment is matched against the name with the
    /// tiers; the leading segments must match (case-insensitive; subsequence
    /// is accepted, contiguous and prefix rank higher) the symbol's container
    /// part of `qualified_name`. A trailing separator (`GraphStore::`) lists
    /// the members of matching containers. A separator next to whitespace
    /// (`1. Intro`) does not split. `kind` keeps only symbols of that kind.
    pub fn parse(text: &str, kind: Option<ChunkKind>) -> SymbolQuery {
        let text = text.trim();
        let split = text.char_indices().rfind(|&(i, c)| {
            is_query_separator(c) && {
                let before = text[..i].chars().next_back();
                let after = text[i + c.len_utf8()..].chars().next();
                !before.is_some_and(char::is_whitespace) && !after.is_some_and(char::is_whitespace)
            }
        });
        if let Some((i, c)) = split {
            let container = normalize_container(&text[..i]);
            if !container.is_empty() {
                return SymbolQuery {
                    name: fold(text[i + c.len_utf8()..].trim()),
                    container: Some(container),
                    literal: Some(fold(text).bytes),
                    kind,
                };
            }
        }
        let name_text = text.trim_start_matches(is_query_separator);
        SymbolQuery {
            name: fold(name_text),
            container: None,
            literal: None,
            kind,
        }
    }

    /// True when the query can match nothing sensible (no name and no
    /// container); `search` then returns no results.
    pub fn is_empty(&self) -> bool {
        self.name.bytes.is_empty() && self.container.is_none()
    }
}

// ---------------------------------------------------------------------------
// Table.
// ---------------------------------------------------------------------------

/// The symbol index of one segment; immutable. See the module docs for the
/// layout.
pub struct SymbolTable {
    // Per symbol, sorted by (name id, container, case, kind, chunk id).
    sym_chunk: Vec<u32>,
    sym_kind: Vec<u8>,
    sym_container: Vec<u32>,
    /// Uppercase bits of the original name over its first 32 folded bytes.
    sym_upper: Vec<u32>,

    // Per unique lowercase name ("name id"), ordered by (byte length, bytes)
    // so that the scan, which goes shortest first, reads memory in order.
    name_off: Vec<u32>,
    name_bytes: Vec<u8>,
    /// Symbols of name `i` are `name_sym[i]..name_sym[i + 1]`.
    name_sym: Vec<u32>,
    name_mask: Vec<u64>,
    /// Bit `kind.code()` is set when some symbol of the name has that kind.
    name_kinds: Vec<u32>,
    /// Word part starts of name `i` are `parts[part_off[i]..part_off[i + 1]]`
    /// (the union over the case variants that share the lowercase name).
    part_off: Vec<u32>,
    parts: Vec<u16>,
    /// Name ids sorted by their bytes, for the exact and prefix searches.
    lex: Vec<u32>,

    // Unique normalised containers, sorted ascending; id 0 is "" when present.
    cont_off: Vec<u32>,
    cont_bytes: Vec<u8>,
    cont_mask: Vec<u64>,

    /// Word keys -> offset of their first posting in `word_postings`.
    word_fst: fst::Map<Vec<u8>>,
    /// Name ids, grouped by word key in key order.
    word_postings: Vec<u32>,

    // Derived from the above; not serialised.
    /// The name id of every symbol.
    sym_name: Vec<u32>,
    /// Symbols of container `c` are `cont_syms[cont_sym_off[c]..cont_sym_off[c + 1]]`.
    cont_sym_off: Vec<u32>,
    cont_syms: Vec<u32>,
    /// Per name id, what the scan checks before touching any string.
    scan: Vec<ScanEntry>,
}

/// One name as the scan sees it, packed so the scan reads memory in order.
#[derive(Clone, Copy, Debug)]
struct ScanEntry {
    mask: u64,
    /// Class bits of the first char of every word part.
    initials: u64,
    /// Kind bits in the low [`SCAN_KIND_BITS`] bits, the name length
    /// (saturated) above them.
    meta: u32,
}

const SCAN_KIND_BITS: u32 = 20;
const SCAN_LEN_MAX: usize = (1 << (32 - SCAN_KIND_BITS)) - 1;
const _: () = assert!(ChunkKind::ALL.len() <= SCAN_KIND_BITS as usize);

impl ScanEntry {
    fn kinds(self) -> u32 {
        self.meta & ((1 << SCAN_KIND_BITS) - 1)
    }

    fn len(self) -> usize {
        (self.meta >> SCAN_KIND_BITS) as usize
    }
}

impl fmt::Debug for SymbolTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SymbolTable")
            .field("symbols", &self.sym_chunk.len())
            .field("names", &self.name_count())
            .field("containers", &self.container_count())
            .field("word_keys", &self.word_fst.len())
            .finish()
    }
}

/// Per-record data computed once while building.
struct Prepared {
    chunk_id: u32,
    kind: u8,
    lower: Vec<u8>,
    upper: u32,
    mask: u64,
    parts: Vec<u16>,
    container: Vec<u8>,
}

impl SymbolTable {
    /// Builds a table from `records`. Records should have distinct chunk ids
    /// (a duplicated id can appear twice in results), and a table holds less
    /// than 4 GiB of names; word parts are only recorded in a name's first
    /// 64 KiB.
    pub fn build<'a>(records: impl IntoIterator<Item = SymbolRecord<'a>>) -> SymbolTable {
        let mut prepared: Vec<Prepared> = records
            .into_iter()
            .map(|r| {
                let folded = fold(r.name);
                let mut parts = Vec::new();
                part_starts(r.name, &mut parts);
                Prepared {
                    chunk_id: r.chunk_id,
                    kind: r.kind.code(),
                    lower: folded.bytes,
                    upper: folded.upper,
                    mask: folded.mask,
                    parts,
                    container: normalize_container(container_of(r.name, r.qualified_name)),
                }
            })
            .collect();
        prepared.sort_unstable_by(|a, b| {
            (a.lower.len(), sort_key(&a.lower))
                .cmp(&(b.lower.len(), sort_key(&b.lower)))
                .then_with(|| a.lower.cmp(&b.lower))
                .then_with(|| a.container.cmp(&b.container))
                .then(a.upper.cmp(&b.upper))
                .then(a.kind.cmp(&b.kind))
                .then(a.chunk_id.cmp(&b.chunk_id))
        });

        // Containers: unique, sorted, then an id per symbol.
        let mut containers: Vec<&[u8]> = prepared.iter().map(|p| p.container.as_slice()).collect();
        containers.sort_unstable();
        containers.dedup();
        let mut cont_off = Vec::with_capacity(containers.len() + 1);
        let mut cont_bytes = Vec::new();
        let mut cont_mask = Vec::with_capacity(containers.len());
        cont_off.push(0);
        for c in &containers {
            cont_bytes.extend_from_slice(c);
            cont_off.push(cont_bytes.len() as u32);
            cont_mask.push(mask_of(c));
        }

        let n = prepared.len();
        let mut table = SymbolTable {
            sym_chunk: Vec::with_capacity(n),
            sym_kind: Vec::with_capacity(n),
            sym_container: Vec::with_capacity(n),
            sym_upper: Vec::with_capacity(n),
            name_off: vec![0],
            name_bytes: Vec::new(),
            name_sym: vec![0],
            name_mask: Vec::new(),
            name_kinds: Vec::new(),
            part_off: vec![0],
            parts: Vec::new(),
            lex: Vec::new(),
            cont_off,
            cont_bytes,
            cont_mask,
            word_fst: fst::Map::default(),
            word_postings: Vec::new(),
            sym_name: Vec::new(),
            cont_sym_off: Vec::new(),
            cont_syms: Vec::new(),
            scan: Vec::new(),
        };

        let mut i = 0;
        let mut name_parts: Vec<u16> = Vec::new();
        while i < n {
            let lower = &prepared[i].lower;
            let mut j = i;
            let mut kinds = 0u32;
            name_parts.clear();
            while j < n && prepared[j].lower == *lower {
                let p = &prepared[j];
                table.sym_chunk.push(p.chunk_id);
                table.sym_kind.push(p.kind);
                let cid = containers
                    .binary_search(&p.container.as_slice())
                    .unwrap_or(0);
                table.sym_container.push(cid as u32);
                table.sym_upper.push(p.upper);
                kinds |= 1 << (p.kind & 31);
                name_parts.extend_from_slice(&p.parts);
                j += 1;
            }
            name_parts.sort_unstable();
            name_parts.dedup();
            table.name_bytes.extend_from_slice(lower);
            table.name_off.push(table.name_bytes.len() as u32);
            table.name_sym.push(j as u32);
            table.name_mask.push(prepared[i].mask);
            table.name_kinds.push(kinds);
            table.parts.extend_from_slice(&name_parts);
            table.part_off.push(table.parts.len() as u32);
            i = j;
        }
        drop(containers);
        drop(prepared);
        let mut lex: Vec<(u64, &[u8], u32)> = (0..table.name_count())
            .map(|id| (sort_key(table.name(id)), table.name(id), id as u32))
            .collect();
        lex.sort_unstable();
        table.lex = lex.into_iter().map(|(_, _, id)| id).collect();

        table.build_word_index();
        table.derive();
        table
    }

    /// Builds `word_fst` and `word_postings` from the names and their parts.
    fn build_word_index(&mut self) {
        // The initials of every name, concatenated into `initials`: name `i`
        // owns `init_spans[i]`, and the initial of each of its parts starts
        // at `init_starts[init_start_off[i]..init_start_off[i + 1]]`.
        let names = self.name_count();
        let mut initials: Vec<u8> = Vec::new();
        let mut init_spans: Vec<Range<usize>> = Vec::with_capacity(names);
        let mut init_starts: Vec<usize> = Vec::new();
        let mut init_start_off: Vec<usize> = Vec::with_capacity(names + 1);
        for ord in 0..names {
            let name = self.name(ord);
            let parts = self.parts_of(ord);
            let parts = &parts[..parts.len().min(MAX_PARTS_INDEXED)];
            let begin = initials.len();
            init_start_off.push(init_starts.len());
            for &s in parts {
                let s = s as usize;
                let len = utf8_len(name[s]).min(name.len() - s);
                init_starts.push(initials.len());
                initials.extend_from_slice(&name[s..s + len]);
            }
            init_spans.push(begin..initials.len());
        }
        init_start_off.push(init_starts.len());

        // (sort key, word key, name id); the sort key makes most comparisons
        // integer comparisons.
        let mut pairs: Vec<(u64, &[u8], u32)> = Vec::new();
        for ord in 0..names {
            let name = self.name(ord);
            let parts = self.parts_of(ord);
            let parts = &parts[..parts.len().min(MAX_PARTS_INDEXED)];
            for &s in parts.iter().filter(|&&s| s > 0) {
                let key = truncate_key(&name[s as usize..]);
                pairs.push((sort_key(key), key, ord as u32));
            }
            if parts.len() >= 2 {
                let span = &init_spans[ord];
                let starts = &init_starts[init_start_off[ord]..init_start_off[ord + 1]];
                for &from in &starts[..starts.len() - 1] {
                    let key = truncate_key(&initials[from..span.end]);
                    pairs.push((sort_key(key), key, ord as u32));
                }
            }
        }
        pairs.sort_unstable();
        pairs.dedup();

        let mut builder = fst::MapBuilder::memory();
        let mut postings = Vec::with_capacity(pairs.len());
        let mut k = 0;
        while k < pairs.len() {
            let key = pairs[k].1;
            let start = postings.len() as u64;
            while k < pairs.len() && pairs[k].1 == key {
                postings.push(pairs[k].2);
                k += 1;
            }
            // Keys arrive sorted and distinct, so insertion cannot fail; if
            // it ever did, the key's postings would simply be unreachable.
            let _ = builder.insert(key, start);
        }
        drop(pairs);
        self.word_fst = builder
            .into_inner()
            .ok()
            .and_then(|bytes| fst::Map::new(bytes).ok())
            .unwrap_or_default();
        self.word_postings = postings;
    }

    /// Computes the arrays that are derived from the serialised ones.
    fn derive(&mut self) {
        let n = self.sym_chunk.len();
        self.sym_name = vec![0; n];
        for ord in 0..self.name_count() {
            for sym in self.syms_of(ord) {
                self.sym_name[sym] = ord as u32;
            }
        }
        let c = self.container_count();
        let mut counts = vec![0u32; c + 1];
        for &cid in &self.sym_container {
            counts[cid as usize + 1] += 1;
        }
        for i in 0..c {
            counts[i + 1] += counts[i];
        }
        let mut next = counts.clone();
        let mut cont_syms = vec![0u32; n];
        for (sym, &cid) in self.sym_container.iter().enumerate() {
            let slot = &mut next[cid as usize];
            cont_syms[*slot as usize] = sym as u32;
            *slot += 1;
        }
        self.cont_sym_off = counts;
        self.cont_syms = cont_syms;

        self.scan = (0..self.name_count())
            .map(|ord| ScanEntry {
                mask: self.name_mask[ord],
                initials: self
                    .parts_of(ord)
                    .iter()
                    .filter_map(|&s| char_at(self.name(ord), s as usize))
                    .fold(0, |m, c| m | char_bit(c)),
                meta: (self.name_len(ord).min(SCAN_LEN_MAX) as u32) << SCAN_KIND_BITS
                    | (self.name_kinds[ord] & ((1 << SCAN_KIND_BITS) - 1)),
            })
            .collect();
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.sym_chunk.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sym_chunk.is_empty()
    }

    fn name_count(&self) -> usize {
        self.name_off.len().saturating_sub(1)
    }

    fn container_count(&self) -> usize {
        self.cont_off.len().saturating_sub(1)
    }

    fn name(&self, ord: usize) -> &[u8] {
        &self.name_bytes[self.name_off[ord] as usize..self.name_off[ord + 1] as usize]
    }

    fn parts_of(&self, ord: usize) -> &[u16] {
        &self.parts[self.part_off[ord] as usize..self.part_off[ord + 1] as usize]
    }

    fn syms_of(&self, ord: usize) -> Range<usize> {
        self.name_sym[ord] as usize..self.name_sym[ord + 1] as usize
    }

    fn container(&self, id: usize) -> &[u8] {
        &self.cont_bytes[self.cont_off[id] as usize..self.cont_off[id + 1] as usize]
    }

    fn name_len(&self, ord: usize) -> usize {
        (self.name_off[ord + 1] - self.name_off[ord]) as usize
    }

    /// First position in `lex[lo..hi]` whose name fails `pred`, assuming
    /// `pred` holds on a prefix of that range.
    fn partition(&self, mut lo: usize, mut hi: usize, pred: impl Fn(&[u8]) -> bool) -> usize {
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(self.name(self.lex[mid] as usize)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Ids of the names that start with `prefix`, in byte order.
    fn with_prefix(&self, prefix: &[u8]) -> &[u32] {
        let lo = self.partition(0, self.lex.len(), |n| n < prefix);
        let hi = self.partition(lo, self.lex.len(), |n| n.starts_with(prefix));
        &self.lex[lo..hi]
    }

    fn exact_name(&self, text: &[u8]) -> Option<usize> {
        let first = *self.with_prefix(text).first()? as usize;
        (self.name(first) == text).then_some(first)
    }

    /// The slice of `word_postings` for all word keys that start with
    /// `prefix` (truncated like the keys).
    fn word_postings_for(&self, prefix: &[u8]) -> &[u32] {
        let prefix = truncate_key(prefix);
        let total = self.word_postings.len();
        let first_at_or_after = |key: &[u8]| -> usize {
            let mut stream = self.word_fst.range().ge(key).into_stream();
            stream.next().map_or(total, |(_, v)| v as usize)
        };
        let start = first_at_or_after(prefix).min(total);
        let end = prefix_successor(prefix)
            .map_or(total, |succ| first_at_or_after(&succ))
            .min(total);
        self.word_postings.get(start..end).unwrap_or(&[])
    }

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
        self.search_with(query, is_live, limit, DIRECT_MAX, out);
    }

    /// [`SymbolTable::search`] with the direct-evaluation threshold for
    /// qualified queries as a parameter, so tests can force either path.
    fn search_with(
        &self,
        query: &SymbolQuery,
        is_live: &dyn Fn(u32) -> bool,
        limit: usize,
        direct_max: usize,
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
            top: TopK::new(limit),
            scratch: Scratch::default(),
            literal: None,
            direct_max,
        };
        s.run();
        s.top.drain_into(out);
    }

    /// Appends the serialised table to `out`. The encoding is
    /// self-delimiting: a 24-byte header holds the magic `QSYM`, the format
    /// version, the total length (header included) and a checksum of the
    /// rest; then come length-prefixed little-endian arrays and the raw fst
    /// bytes. [`SymbolTable::read_from`] ignores bytes after the total length.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&[0u8; 16]);
        put_u32s(out, &self.sym_chunk);
        put_bytes(out, &self.sym_kind);
        put_u32s(out, &self.sym_container);
        put_u32s(out, &self.sym_upper);
        put_u32s(out, &self.name_off);
        put_bytes(out, &self.name_bytes);
        put_u32s(out, &self.name_sym);
        put_u64s(out, &self.name_mask);
        put_u32s(out, &self.name_kinds);
        put_u32s(out, &self.part_off);
        put_u16s(out, &self.parts);
        put_u32s(out, &self.lex);
        put_u32s(out, &self.cont_off);
        put_bytes(out, &self.cont_bytes);
        put_u64s(out, &self.cont_mask);
        put_u32s(out, &self.word_postings);
        put_bytes(out, self.word_fst.as_fst().as_bytes());
        let total = (out.len() - start) as u64;
        let sum = checksum(&out[start + HEADER_LEN..]);
        out[start + 8..start + 16].copy_from_slice(&total.to_le_bytes());
        out[start + 16..start + 24].copy_from_slice(&sum.to_le_bytes());
    }

    /// Inverse of [`SymbolTable::write_to`]; `bytes` must start with a table
    /// and may continue with unrelated bytes. Checks the checksum and every
    /// length, offset and id, and never panics.
    pub fn read_from(bytes: &[u8]) -> Result<SymbolTable, SymbolFormatError> {
        use SymbolFormatError::*;
        if bytes.len() < HEADER_LEN {
            return Err(Truncated {
                needed: HEADER_LEN as u64,
                available: bytes.len() as u64,
            });
        }
        if bytes[..4] != MAGIC {
            return Err(BadMagic);
        }
        let version = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
        if version != FORMAT_VERSION {
            return Err(UnsupportedVersion(version));
        }
        let total = le_u64(&bytes[8..16]);
        if total < HEADER_LEN as u64 || total > bytes.len() as u64 {
            return Err(Truncated {
                needed: total.max(HEADER_LEN as u64),
                available: bytes.len() as u64,
            });
        }
        let body = &bytes[HEADER_LEN..total as usize];
        if checksum(body) != le_u64(&bytes[16..24]) {
            return Err(ChecksumMismatch);
        }
        let mut r = Reader {
            bytes: body,
            pos: 0,
        };
        let sym_chunk = r.u32s()?;
        let sym_kind = r.bytes()?;
        let sym_container = r.u32s()?;
        let sym_upper = r.u32s()?;
        let name_off = r.u32s()?;
        let name_bytes = r.bytes()?;
        let name_sym = r.u32s()?;
        let name_mask = r.u64s()?;
        let name_kinds = r.u32s()?;
        let part_off = r.u32s()?;
        let parts = r.u16s()?;
        let lex = r.u32s()?;
        let cont_off = r.u32s()?;
        let cont_bytes = r.bytes()?;
        let cont_mask = r.u64s()?;
        let word_postings = r.u32s()?;
        let fst_bytes = r.bytes()?;
        if r.pos != body.len() {
            return Err(Invalid("trailing bytes inside the table"));
        }

        let n = sym_chunk.len();
        if sym_kind.len() != n || sym_container.len() != n || sym_upper.len() != n {
            return Err(Invalid("symbol array lengths"));
        }
        if sym_kind.iter().any(|&k| ChunkKind::from_code(k).is_none()) {
            return Err(Invalid("symbol kind"));
        }
        check_offsets(&name_off, name_bytes.len(), "name offsets")?;
        let names = name_off.len() - 1;
        check_offsets(&name_sym, n, "name symbol ranges")?;
        if name_sym.len() != names + 1 || name_sym.windows(2).any(|w| w[0] >= w[1]) {
            return Err(Invalid("name symbol ranges"));
        }
        if name_mask.len() != names || name_kinds.len() != names {
            return Err(Invalid("name array lengths"));
        }
        check_offsets(&part_off, parts.len(), "part offsets")?;
        if part_off.len() != names + 1 {
            return Err(Invalid("part offsets"));
        }
        for i in 0..names {
            let p = &parts[part_off[i] as usize..part_off[i + 1] as usize];
            let len = (name_off[i + 1] - name_off[i]) as usize;
            if p.windows(2).any(|w| w[0] >= w[1]) || p.last().is_some_and(|&l| l as usize >= len) {
                return Err(Invalid("part starts"));
            }
        }
        if lex.len() != names || lex.iter().any(|&id| id as usize >= names) {
            return Err(Invalid("name order"));
        }
        check_offsets(&cont_off, cont_bytes.len(), "container offsets")?;
        let containers = cont_off.len() - 1;
        if cont_mask.len() != containers {
            return Err(Invalid("container masks"));
        }
        if sym_container.iter().any(|&c| c as usize >= containers) {
            return Err(Invalid("symbol container"));
        }
        if word_postings.iter().any(|&o| o as usize >= names) {
            return Err(Invalid("word postings"));
        }
        let word_fst = fst::Map::new(fst_bytes).map_err(|e| Fst(e.to_string()))?;

        let mut table = SymbolTable {
            sym_chunk,
            sym_kind,
            sym_container,
            sym_upper,
            name_off,
            name_bytes,
            name_sym,
            name_mask,
            name_kinds,
            part_off,
            parts,
            lex,
            cont_off,
            cont_bytes,
            cont_mask,
            word_fst,
            word_postings,
            sym_name: Vec::new(),
            cont_sym_off: Vec::new(),
            cont_syms: Vec::new(),
            scan: Vec::new(),
        };
        table.derive();
        Ok(table)
    }
}

// ---------------------------------------------------------------------------
// Serialisation helpers.
// ---------------------------------------------------------------------------

fn le_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

fn put_len(out: &mut Vec<u8>, len: usize) {
    out.extend_from_slice(&(len as u64).to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, v: &[u8]) {
    put_len(out, v.len());
    out.extend_from_slice(v);
}

fn put_u16s(out: &mut Vec<u8>, v: &[u16]) {
    put_len(out, v.len());
    out.extend(v.iter().flat_map(|x| x.to_le_bytes()));
}

fn put_u32s(out: &mut Vec<u8>, v: &[u32]) {
    put_len(out, v.len());
    out.extend(v.iter().flat_map(|x| x.to_le_bytes()));
}

fn put_u64s(out: &mut Vec<u8>, v: &[u64]) {
    put_len(out, v.len());
    out.extend(v.iter().flat_map(|x| x.to_le_bytes()));
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Reads a length prefix and returns the following `len * width` bytes.
    fn section(&mut self, width: usize) -> Result<&'a [u8], SymbolFormatError> {
        let truncated = |needed: u64| SymbolFormatError::Truncated {
            needed,
            available: self.bytes.len() as u64,
        };
        let rest = &self.bytes[self.pos..];
        if rest.len() < 8 {
            return Err(truncated(self.pos as u64 + 8));
        }
        let count = le_u64(rest);
        let size = count
            .checked_mul(width as u64)
            .filter(|&s| s <= (rest.len() - 8) as u64)
            .ok_or_else(|| {
                truncated((self.pos as u64 + 8).saturating_add(count.saturating_mul(width as u64)))
            })?;
        let data = &rest[8..8 + size as usize];
        self.pos += 8 + size as usize;
        Ok(data)
    }

    fn bytes(&mut self) -> Result<Vec<u8>, SymbolFormatError> {
        Ok(self.section(1)?.to_vec())
    }

    fn u16s(&mut self) -> Result<Vec<u16>, SymbolFormatError> {
        Ok(self
            .section(2)?
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect())
    }

    fn u32s(&mut self) -> Result<Vec<u32>, SymbolFormatError> {
        Ok(self
            .section(4)?
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    fn u64s(&mut self) -> Result<Vec<u64>, SymbolFormatError> {
        Ok(self.section(8)?.chunks_exact(8).map(le_u64).collect())
    }
}

/// Checks an offset array: at least one entry, starts at 0, never decreases,
/// ends at `end`.
fn check_offsets(off: &[u32], end: usize, what: &'static str) -> Result<(), SymbolFormatError> {
    let ok = off.first() == Some(&0)
        && off.last().is_some_and(|&l| l as usize == end)
        && off.windows(2).all(|w| w[0] <= w[1]);
    if ok {
        Ok(())
    } else {
        Err(SymbolFormatError::Invalid(what))
    }
}

/// A fast 64-bit checksum over four independent lanes. Every step is a
/// bijection of the lane state, so any single corrupted word always changes
/// the result; it is not meant to resist deliberate forgery.
fn checksum(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut lanes: [u64; 4] = [
        0x243F_6A88_85A3_08D3,
        0x1319_8A2E_0370_7344,
        0xA409_3822_299F_31D0,
        0x082E_FA98_EC4E_6C89,
    ];
    let step = |h: u64, w: u64| (h ^ w).wrapping_mul(K).rotate_left(29);
    let mut blocks = bytes.chunks_exact(32);
    for block in &mut blocks {
        for (i, lane) in lanes.iter_mut().enumerate() {
            *lane = step(*lane, le_u64(&block[i * 8..]));
        }
    }
    let mut tail = [0u8; 32];
    let rest = blocks.remainder();
    tail[..rest.len()].copy_from_slice(rest);
    for (i, lane) in lanes.iter_mut().enumerate() {
        *lane = step(*lane, le_u64(&tail[i * 8..]));
    }
    let mut h = step(0, bytes.len() as u64);
    for lane in lanes {
        h = step(h, lane);
    }
    h ^ (h >> 31)
}

// ---------------------------------------------------------------------------
// Matching.
// ---------------------------------------------------------------------------

/// How one name matched the query, before per-symbol adjustments.
#[derive(Clone, Copy, Debug)]
struct Eval {
    tier: MatchTier,
    /// Name part of the score: length, position and gap penalties.
    base: f32,
    /// Name byte positions (< 32) where a query char landed...
    considered: u32,
    /// ...and those of them where the query char was uppercase.
    expect: u32,
}

impl Eval {
    /// A match of the whole query as one run starting at byte `start`.
    fn contiguous(tier: MatchTier, q: &Folded, name_len: usize, start: usize) -> Eval {
        let shift = u32::try_from(start).unwrap_or(u32::MAX);
        Eval {
            tier,
            base: -cap(name_len) - 0.25 * cap(start),
            considered: q.starts.checked_shl(shift).unwrap_or(0),
            expect: q.upper.checked_shl(shift).unwrap_or(0),
        }
    }

    /// The share of matched chars whose case equals the query's, in `0..=1`.
    fn case_bonus(&self, sym_upper: u32) -> f32 {
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
fn upper_bound(len: usize) -> f32 {
    -cap(len) + 1.0
}

/// Reusable buffers for hump matching.
#[derive(Default)]
struct Scratch {
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
fn evaluate(
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
fn container_score(cq: &[u8], c: &[u8]) -> Option<f32> {
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

// ---------------------------------------------------------------------------
// Search.
// ---------------------------------------------------------------------------

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

/// The best `limit` matches seen so far.
struct TopK {
    limit: usize,
    heap: BinaryHeap<Worst>,
    /// Changes whenever the contents change, so callers can cache bounds.
    version: u64,
}

impl TopK {
    fn new(limit: usize) -> TopK {
        TopK {
            limit,
            heap: BinaryHeap::with_capacity(limit.min(4096) + 1),
            version: 0,
        }
    }

    fn full(&self) -> bool {
        self.heap.len() >= self.limit
    }

    /// False when a match of `tier` scoring at most `score` cannot enter.
    fn admits(&self, tier: MatchTier, score: f32) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Splits `Container::name` into its name (the last `::` segment).
    fn record(id: usize, qualified: &str) -> SymbolRecord<'_> {
        let name = qualified.rsplit("::").next().unwrap_or(qualified);
        SymbolRecord {
            chunk_id: id as u32,
            name,
            qualified_name: qualified,
            kind: ChunkKind::Function,
        }
    }

    fn table(names: &[&str]) -> SymbolTable {
        SymbolTable::build(names.iter().enumerate().map(|(i, n)| record(i, n)))
    }

    fn run(t: &SymbolTable, query: &SymbolQuery, limit: usize) -> Vec<SymbolMatch> {
        let mut out = Vec::new();
        t.search(query, &|_| true, limit, &mut out);
        out
    }

    /// Builds a table of `names` (chunk id = position; `A::b` is qualified)
    /// and asserts that `query` returns exactly `expected`, best first, with
    /// the given tiers, through both the direct and the indexed path.
    fn check(names: &[&str], query: &str, expected: &[(&str, MatchTier)]) {
        let t = table(names);
        let q = SymbolQuery::parse(query, None);
        for direct_max in [DIRECT_MAX, 0] {
            let mut out = Vec::new();
            t.search_with(&q, &|_| true, 100, direct_max, &mut out);
            let got: Vec<(&str, MatchTier)> = out
                .iter()
                .map(|m| (names[m.chunk_id as usize], m.tier))
                .collect();
            assert_eq!(
                got, expected,
                "query {query:?}, direct_max {direct_max}: {out:?}"
            );
        }
    }

    use MatchTier::*;

    #[test]
    fn tiers_are_strict_and_ordered() {
        check(
            &[
                "unrelated",
                "GraphStoreLookup",
                "lxoxoxkup",
                "graph_lookup",
                "lookupTable",
                "lookup",
            ],
            "lookup",
            &[
                ("lookup", Exact),
                ("lookupTable", Prefix),
                ("graph_lookup", WordBoundary),
                ("GraphStoreLookup", WordBoundary),
                ("lxoxoxkup", Subsequence),
            ],
        );
    }

    #[test]
    fn word_parts_split_case_acronyms_digits_and_separators() {
        let parts = |s: &str| {
            let mut v = Vec::new();
            part_starts(s, &mut v);
            v
        };
        assert_eq!(parts("HTTPServerError"), [0, 4, 10]);
        assert_eq!(parts("utf8Decode"), [0, 3, 4]);
        assert_eq!(parts("__init__"), [2]);
        assert_eq!(parts("snake_case-kebab"), [0, 6, 11]);
        assert_eq!(parts("parseURL"), [0, 5]);
        assert_eq!(parts("+="), Vec::<u16>::new());
        check(
            &["HTTPServerError"],
            "server",
            &[("HTTPServerError", WordBoundary)],
        );
        check(
            &["HTTPServerError"],
            "error",
            &[("HTTPServerError", WordBoundary)],
        );
        check(
            &["__init__", "initialize"],
            "init",
            &[("initialize", Prefix), ("__init__", WordBoundary)],
        );
        check(
            &["my-kebab-name"],
            "kebab",
            &[("my-kebab-name", WordBoundary)],
        );
        check(
            &["vec3_add", "Vec3"],
            "3",
            &[("Vec3", WordBoundary), ("vec3_add", WordBoundary)],
        );
    }

    #[test]
    fn camel_humps_and_initials() {
        let names = [
            "GraphStoreLookup",
            "GetStringLength",
            "gsl_helper",
            "gasoline",
        ];
        check(
            &names,
            "gsl",
            &[
                ("gsl_helper", Prefix),
                ("GetStringLength", WordBoundary),
                ("GraphStoreLookup", WordBoundary),
                ("gasoline", Subsequence),
            ],
        );
        check(&names, "GrStLo", &[("GraphStoreLookup", WordBoundary)]);
        // Skipping a part (`Store`) is still a hump.
        check(&names, "grlook", &[("GraphStoreLookup", WordBoundary)]);
        // Initials of inner parts.
        check(
            &names,
            "sl",
            &[
                ("GetStringLength", WordBoundary),
                ("GraphStoreLookup", WordBoundary),
                ("gsl_helper", Subsequence),
                ("gasoline", Subsequence),
            ],
        );
        check(
            &["HTTPServerError"],
            "hse",
            &[("HTTPServerError", WordBoundary)],
        );
        // Separators typed between pieces may be skipped, but like every
        // query char they must occur in the name.
        check(
            &["graph_store_lookup"],
            "gr_st",
            &[("graph_store_lookup", WordBoundary)],
        );
        check(
            &["graph_x_store"],
            "gr_st",
            &[("graph_x_store", WordBoundary)],
        );
        check(&["GraphStore"], "gr_st", &[]);
        check(&["graph_store"], "gr_", &[("graph_store", Subsequence)]);
        // Pieces must start at parts: `raph` starts inside `Graph`.
        check(
            &["GraphStoreLookup"],
            "raphst",
            &[("GraphStoreLookup", Subsequence)],
        );
    }

    #[test]
    fn score_prefers_short_names_early_matches_and_exact_case() {
        check(
            &["getValueFromCache", "getValue", "get_val"],
            "getv",
            &[
                ("getValue", Prefix),
                ("getValueFromCache", Prefix),
                ("get_val", WordBoundary),
            ],
        );
        check(
            &["Lookup", "lookup"],
            "lookup",
            &[("lookup", Exact), ("Lookup", Exact)],
        );
        check(
            &["Lookup", "lookup"],
            "Lookup",
            &[("Lookup", Exact), ("lookup", Exact)],
        );
        check(
            &["xx_yy_store", "x_store"],
            "store",
            &[("x_store", WordBoundary), ("xx_yy_store", WordBoundary)],
        );
        // Contiguous runs beat scattered ones of the same length.
        check(
            &["a_b_c_xyz", "axyzbbbbc"],
            "xyz",
            &[("a_b_c_xyz", WordBoundary), ("axyzbbbbc", Subsequence)],
        );
        check(
            &["xaxbxc", "xxxabc"],
            "abc",
            &[("xxxabc", Subsequence), ("xaxbxc", Subsequence)],
        );
        // Identical names are ordered by chunk id.
        check(
            &["dup", "dup", "dup"],
            "dup",
            &[("dup", Exact), ("dup", Exact), ("dup", Exact)],
        );
        let t = table(&["dup", "dup", "dup"]);
        let ids: Vec<u32> = run(&t, &SymbolQuery::parse("du", None), 10)
            .iter()
            .map(|m| m.chunk_id)
            .collect();
        assert_eq!(ids, [0, 1, 2]);
    }

    #[test]
    fn qualified_queries_match_containers() {
        let names = [
            "GraphStore::lookup",
            "Other::lookup",
            "GraphStoreImpl::lookup",
            "gs::lookupAll",
            "lookup",
            "a::b::GraphStore::lookup_twice",
        ];
        check(
            &names,
            "GraphStore::lookup",
            &[
                ("GraphStore::lookup", Exact),
                ("GraphStoreImpl::lookup", Exact),
                ("a::b::GraphStore::lookup_twice", Prefix),
            ],
        );
        check(
            &names,
            "graphstore.lookup",
            &[
                ("GraphStore::lookup", Exact),
                ("GraphStoreImpl::lookup", Exact),
                ("a::b::GraphStore::lookup_twice", Prefix),
            ],
        );
        // Subsequence containers are accepted but rank below exact ones.
        check(
            &names,
            "gs#lookup",
            &[
                ("GraphStore::lookup", Exact),
                ("GraphStoreImpl::lookup", Exact),
                ("gs::lookupAll", Prefix),
                ("a::b::GraphStore::lookup_twice", Prefix),
            ],
        );
        check(
            &names,
            "b::graphstore::twice",
            &[("a::b::GraphStore::lookup_twice", WordBoundary)],
        );
        check(&names, "other::lkp", &[("Other::lookup", Subsequence)]);
        // A trailing separator lists members.
        check(&names, "Other::", &[("Other::lookup", Prefix)]);
        check(&names, "nomatch::lookup", &[]);
    }

    #[test]
    fn qualified_query_containers_rank_by_match_quality() {
        let names = [
            "storeX::get",
            "graph_store::get",
            "StoreLike::get",
            "store::get",
        ];
        check(
            &names,
            "store::get",
            &[
                ("store::get", Exact),
                ("storeX::get", Exact),
                ("StoreLike::get", Exact),
                ("graph_store::get", Exact),
            ],
        );
    }

    #[test]
    fn literal_names_with_separators_match_exactly() {
        check(&["v1.2", "v1", "release"], "v1.2", &[("v1.2", Exact)]);
        check(&["1. Intro", "intro"], "1. intro", &[("1. Intro", Exact)]);
    }

    #[test]
    fn kind_filter_keeps_only_that_kind() {
        let recs = [
            SymbolRecord {
                chunk_id: 1,
                name: "Parser",
                qualified_name: "Parser",
                kind: ChunkKind::Struct,
            },
            SymbolRecord {
                chunk_id: 2,
                name: "Parser",
                qualified_name: "Parser",
                kind: ChunkKind::Trait,
            },
            SymbolRecord {
                chunk_id: 3,
                name: "parse",
                qualified_name: "Parser::parse",
                kind: ChunkKind::Method,
            },
            SymbolRecord {
                chunk_id: 4,
                name: "parse_all",
                qualified_name: "parse_all",
                kind: ChunkKind::Function,
            },
        ];
        let t = SymbolTable::build(recs);
        let ids = |q: &str, k: Option<ChunkKind>| -> Vec<u32> {
            run(&t, &SymbolQuery::parse(q, k), 10)
                .iter()
                .map(|m| m.chunk_id)
                .collect()
        };
        assert_eq!(ids("pars", Some(ChunkKind::Trait)), [2]);
        assert_eq!(ids("pars", Some(ChunkKind::Method)), [3]);
        assert_eq!(ids("pa", Some(ChunkKind::Function)), [4]);
        assert_eq!(ids("Parser::", Some(ChunkKind::Method)), [3]);
        assert_eq!(ids("pars", Some(ChunkKind::Enum)), Vec::<u32>::new());
        assert_eq!(ids("pars", None), [3, 1, 2, 4]);
    }

    #[test]
    fn dead_chunks_are_skipped_and_the_limit_is_filled_from_live_ones() {
        let names: Vec<String> = (0..50).map(|i| format!("item{i:02}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let t = table(&refs);
        let q = SymbolQuery::parse("item", None);
        let mut out = vec![SymbolMatch {
            chunk_id: 999,
            tier: Exact,
            score: 0.0,
        }];
        t.search(&q, &|id| id % 2 == 1, 5, &mut out);
        assert_eq!(out[0].chunk_id, 999, "search appends");
        let ids: Vec<u32> = out[1..].iter().map(|m| m.chunk_id).collect();
        assert_eq!(ids, [1, 3, 5, 7, 9]);
        assert!(run(&t, &q, 0).is_empty());
        let mut none = Vec::new();
        t.search(&q, &|_| false, 10, &mut none);
        assert!(none.is_empty());
    }

    #[test]
    fn limit_cuts_after_strict_tiers() {
        let mut names: Vec<String> = (0..20).map(|i| format!("get{i}")).collect();
        names.push("targets".into());
        names.push("forget".into());
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let t = table(&refs);
        let out = run(&t, &SymbolQuery::parse("get", None), 20);
        assert_eq!(out.len(), 20);
        assert!(out.iter().all(|m| m.tier == Prefix));
        let out = run(&t, &SymbolQuery::parse("get", None), 22);
        assert_eq!(out.len(), 22);
        assert_eq!(
            out[20].chunk_id, 21,
            "forget: subsequence at 3 is better than target's"
        );
        assert_eq!(out[21].chunk_id, 20);
    }

    #[test]
    fn unicode_and_odd_queries_never_panic() {
        let names = [
            "größe",
            "Größe",
            "ÄpfelBirnen",
            "日本語",
            "İstanbul",
            "naïve_café",
            "+=",
            "",
        ];
        check(&names, "grö", &[("größe", Prefix), ("Größe", Prefix)]);
        check(&names, "äb", &[("ÄpfelBirnen", WordBoundary)]);
        check(&names, "birnen", &[("ÄpfelBirnen", WordBoundary)]);
        check(&names, "本", &[("日本語", Subsequence)]);
        check(&names, "café", &[("naïve_café", WordBoundary)]);
        // `İ` lowercases to `i` plus a combining dot, so plain `i` still
        // matches as a subsequence.
        check(&names, "ISTANBUL", &[("İstanbul", Subsequence)]);
        check(&names, "i̇stanbul", &[("İstanbul", Exact)]);
        check(&names, "+=", &[("+=", Exact)]);
        let t = table(&names);
        let long = "ä".repeat(10_000);
        for q in [
            "",
            "   ",
            "::",
            ".",
            "#",
            ":::a",
            "a::",
            "é",
            long.as_str(),
            "\u{0}",
            "日本語::",
        ] {
            let q = SymbolQuery::parse(q, None);
            let _ = run(&t, &q, 10);
        }
        assert!(SymbolQuery::parse("  ", None).is_empty());
        assert!(SymbolQuery::parse("::", None).is_empty());
        assert!(!SymbolQuery::parse("a::", None).is_empty());
        let empty = SymbolTable::build(std::iter::empty());
        assert!(empty.is_empty());
        assert!(run(&empty, &SymbolQuery::parse("a", None), 10).is_empty());
    }

    #[test]
    fn merge_sorts_by_tier_score_and_chunk_id() {
        let m = |chunk_id, tier, score| SymbolMatch {
            chunk_id,
            tier,
            score,
        };
        let mut v = vec![
            m(5, Prefix, -3.0),
            m(1, Subsequence, 10.0),
            m(9, Exact, -9.0),
            m(2, Prefix, -1.0),
            m(1, Prefix, -3.0),
        ];
        merge_matches(&mut v, 4);
        assert_eq!(
            v,
            [
                m(9, Exact, -9.0),
                m(2, Prefix, -1.0),
                m(1, Prefix, -3.0),
                m(5, Prefix, -3.0)
            ]
        );
    }

    fn sample_table() -> SymbolTable {
        let recs = [
            ("GraphStore::lookup", ChunkKind::Method),
            ("GraphStore", ChunkKind::Struct),
            ("parse_args", ChunkKind::Function),
            ("HTTPServerError", ChunkKind::Enum),
            ("größe", ChunkKind::Variable),
            ("MAX_LEN", ChunkKind::Constant),
        ];
        SymbolTable::build(recs.iter().enumerate().map(|(i, (q, k))| SymbolRecord {
            kind: *k,
            ..record(i, q)
        }))
    }

    #[test]
    fn round_trip_preserves_results() {
        let t = sample_table();
        let mut bytes = vec![7u8; 3];
        t.write_to(&mut bytes);
        let body = &bytes[3..];
        let mut with_tail = body.to_vec();
        with_tail.extend_from_slice(b"trailing");
        let r = SymbolTable::read_from(&with_tail).unwrap();
        assert_eq!(r.len(), t.len());
        let mut again = Vec::new();
        r.write_to(&mut again);
        assert_eq!(again, body);
        for q in [
            "lookup",
            "gs",
            "hse",
            "graphstore::",
            "größe",
            "ml",
            "x",
            "pa",
        ] {
            for kind in [None, Some(ChunkKind::Struct)] {
                let q = SymbolQuery::parse(q, kind);
                assert_eq!(run(&t, &q, 10), run(&r, &q, 10));
            }
        }
        let empty = SymbolTable::build(std::iter::empty());
        let mut b = Vec::new();
        empty.write_to(&mut b);
        assert!(SymbolTable::read_from(&b).unwrap().is_empty());
    }

    #[test]
    fn corrupt_bytes_are_rejected() {
        let t = sample_table();
        let mut bytes = Vec::new();
        t.write_to(&mut bytes);
        for len in 0..bytes.len() {
            assert!(
                SymbolTable::read_from(&bytes[..len]).is_err(),
                "truncated to {len}"
            );
        }
        for i in 0..bytes.len() {
            for flip in [0x01u8, 0x80, 0xFF] {
                let mut b = bytes.clone();
                b[i] ^= flip;
                assert!(SymbolTable::read_from(&b).is_err(), "byte {i} ^ {flip:#x}");
            }
        }
        assert!(matches!(
            SymbolTable::read_from(b"NOPE00000000000000000000"),
            Err(SymbolFormatError::BadMagic)
        ));
        let mut b = bytes.clone();
        b[4] = 9;
        assert!(matches!(
            SymbolTable::read_from(&b),
            Err(SymbolFormatError::UnsupportedVersion(_))
        ));
    }

    #[test]
    fn structurally_invalid_bodies_with_valid_checksums_are_rejected() {
        let t = sample_table();
        let mut bytes = Vec::new();
        t.write_to(&mut bytes);
        // Overwrite a body byte, then fix the checksum so only validation
        // can catch it. Every position must be rejected or load safely.
        // The fst's internal structure is only guarded by the checksum.
        let fst_start = bytes.len() - t.word_fst.as_fst().as_bytes().len();
        for i in HEADER_LEN..fst_start {
            for v in [0u8, 1, 0x7F, 0xFF] {
                let mut b = bytes.clone();
                b[i] = v;
                let sum = checksum(&b[HEADER_LEN..]);
                b[16..24].copy_from_slice(&sum.to_le_bytes());
                if let Ok(r) = SymbolTable::read_from(&b) {
                    for q in ["lookup", "gs", "graphstore::", "größe", "e"] {
                        let _ = run(&r, &SymbolQuery::parse(q, None), 10);
                    }
                }
            }
        }
    }

    /// A tiny deterministic generator for the consistency test.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
            items[(self.next() % items.len() as u64) as usize]
        }
    }

    /// The index must find exactly what evaluating every name finds, when
    /// the limit is large enough that no tier is cut.
    #[test]
    fn index_agrees_with_brute_force_evaluation() {
        const WORDS: [&str; 16] = [
            "get", "set", "graph", "store", "lookup", "http", "server", "node", "id", "parse",
            "map", "x", "value", "2", "io", "buf",
        ];
        let mut rng = Rng(0x5EED);
        let mut names = Vec::new();
        for _ in 0..600 {
            let parts = 1 + rng.next() % 4;
            let style = rng.next() % 4;
            let mut name = String::new();
            for p in 0..parts {
                let w = rng.pick(&WORDS);
                match style {
                    0 => {
                        if p > 0 {
                            name.push('_');
                        }
                        name.push_str(w);
                    }
                    1 if p == 0 => name.push_str(w),
                    3 => name.push_str(&w.to_uppercase()),
                    _ => {
                        let mut c = w.chars();
                        if let Some(f) = c.next() {
                            name.extend(f.to_uppercase());
                            name.push_str(c.as_str());
                        }
                    }
                }
            }
            names.push(name);
        }
        const KINDS: [ChunkKind; 3] = [ChunkKind::Function, ChunkKind::Method, ChunkKind::Struct];
        let t = SymbolTable::build(names.iter().enumerate().map(|(i, n)| SymbolRecord {
            chunk_id: i as u32,
            name: n,
            qualified_name: n,
            kind: KINDS[i % 3],
        }));
        let queries = [
            "g",
            "gs",
            "get",
            "gsl",
            "store",
            "sl",
            "Lookup",
            "grlo",
            "hse",
            "xid",
            "2",
            "ge2",
            "idx",
            "pm",
            "Map",
            "vb",
            "zz",
            "serverid",
            "getValueMap",
        ];
        let live = |id: u32| id % 7 != 3;

        // Qualified queries: the indexed path (forced by a zero direct
        // threshold) must agree with evaluating every contained symbol.
        let quals: Vec<String> = names
            .iter()
            .enumerate()
            .map(|(i, n)| match i % 4 {
                0 => n.clone(),
                1 => format!("Graph::{n}"),
                2 => format!("graph_store::Node::{n}"),
                _ => format!("{}.{n}", WORDS[i % WORDS.len()]),
            })
            .collect();
        let qt = SymbolTable::build(quals.iter().enumerate().map(|(i, q)| SymbolRecord {
            chunk_id: i as u32,
            name: &names[i],
            qualified_name: q,
            kind: KINDS[i % 3],
        }));
        let mut found = 0;
        for text in [
            "graph::get",
            "gs::node",
            "node.s",
            "gr::",
            "x.id",
            "store::sl",
            "io::2",
        ] {
            for kind in [None, Some(ChunkKind::Function)] {
                let q = SymbolQuery::parse(text, kind);
                for limit in [10_000, 7] {
                    let (mut direct, mut indexed) = (Vec::new(), Vec::new());
                    qt.search_with(&q, &live, limit, usize::MAX, &mut direct);
                    qt.search_with(&q, &live, limit, 0, &mut indexed);
                    assert_eq!(
                        direct, indexed,
                        "query {text}, kind {kind:?}, limit {limit}"
                    );
                    found += direct.len();
                }
            }
        }
        assert!(found > 100, "the qualified queries match something");

        for text in queries {
            for kind in [None, Some(ChunkKind::Method)] {
                let q = SymbolQuery::parse(text, kind);
                let mut want = Vec::new();
                let mut scratch = Scratch::default();
                for ord in 0..t.name_count() {
                    let (name, parts) = (t.name(ord), t.parts_of(ord));
                    let Some(ev) = evaluate(&q.name, name, parts, true, true, &mut scratch) else {
                        continue;
                    };
                    for sym in t.syms_of(ord) {
                        let id = t.sym_chunk[sym];
                        let kind_ok = kind.is_none_or(|k| k.code() == t.sym_kind[sym]);
                        if kind_ok && live(id) {
                            let score = ev.base + ev.case_bonus(t.sym_upper[sym]);
                            want.push(SymbolMatch {
                                chunk_id: id,
                                tier: ev.tier,
                                score,
                            });
                        }
                    }
                }
                merge_matches(&mut want, usize::MAX);
                // Any limit returns the head of the full ranking.
                for limit in [10_000, 40, 7, 1] {
                    let mut got = Vec::new();
                    t.search(&q, &live, limit, &mut got);
                    let n = want.len().min(limit);
                    assert_eq!(
                        got[..],
                        want[..n],
                        "query {text}, kind {kind:?}, limit {limit}"
                    );
                }
            }
        }
    }
}
