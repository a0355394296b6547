//! The in-memory [`SymbolTable`]: building it from records, its word index,
//! the arrays derived after a build or a load, and read-only accessors.
//! Owns: the table layout and the invariants listed in the module docs
//! (name ids ordered by (length, bytes), `lex` by bytes, every name has a
//! symbol); the serialised arrays are written and validated in `format`.
//! Never: mutate a table after `build` or `read_from`, score or rank
//! matches, do I/O, or panic on any record.

use std::fmt;
use std::ops::Range;

use fst::{IntoStreamer, Streamer};

use crate::chunk::ChunkKind;

use super::fold::{
    char_at, char_bit, container_of, fold, mask_of, normalize_container, part_starts, utf8_len,
};

/// Longest word key stored in the fst, in bytes; longer keys are truncated
/// and candidates are verified against the full name.
const KEY_MAX: usize = 64;
/// Word parts per name that produce word keys.
const MAX_PARTS_INDEXED: usize = 64;

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

/// The symbol index of one segment; immutable. See the module docs for the
/// layout.
pub struct SymbolTable {
    // Per symbol, sorted by (name id, container, case, kind, chunk id).
    pub(super) sym_chunk: Vec<u32>,
    pub(super) sym_kind: Vec<u8>,
    pub(super) sym_container: Vec<u32>,
    /// Uppercase bits of the original name over its first 32 folded bytes.
    pub(super) sym_upper: Vec<u32>,

    // Per unique lowercase name ("name id"), ordered by (byte length, bytes)
    // so that the scan, which goes shortest first, reads memory in order.
    pub(super) name_off: Vec<u32>,
    pub(super) name_bytes: Vec<u8>,
    /// Symbols of name `i` are `name_sym[i]..name_sym[i + 1]`.
    pub(super) name_sym: Vec<u32>,
    pub(super) name_mask: Vec<u64>,
    /// Bit `kind.code()` is set when some symbol of the name has that kind.
    pub(super) name_kinds: Vec<u32>,
    /// Word part starts of name `i` are `parts[part_off[i]..part_off[i + 1]]`
    /// (the union over the case variants that share the lowercase name).
    pub(super) part_off: Vec<u32>,
    pub(super) parts: Vec<u16>,
    /// Name ids sorted by their bytes, for the exact and prefix searches.
    pub(super) lex: Vec<u32>,

    // Unique normalised containers, sorted ascending; id 0 is "" when present.
    pub(super) cont_off: Vec<u32>,
    pub(super) cont_bytes: Vec<u8>,
    pub(super) cont_mask: Vec<u64>,

    /// Word keys -> offset of their first posting in `word_postings`.
    pub(super) word_fst: fst::Map<Vec<u8>>,
    /// Name ids, grouped by word key in key order.
    pub(super) word_postings: Vec<u32>,

    // Derived from the above; not serialised.
    /// The name id of every symbol.
    pub(super) sym_name: Vec<u32>,
    /// Symbols of container `c` are `cont_syms[cont_sym_off[c]..cont_sym_off[c + 1]]`.
    pub(super) cont_sym_off: Vec<u32>,
    pub(super) cont_syms: Vec<u32>,
    /// Per name id, what the scan checks before touching any string.
    pub(super) scan: Vec<ScanEntry>,
}

/// One name as the scan sees it, packed so the scan reads memory in order.
#[derive(Clone, Copy, Debug)]
pub(super) struct ScanEntry {
    pub(super) mask: u64,
    /// Class bits of the first char of every word part.
    pub(super) initials: u64,
    /// Kind bits in the low [`SCAN_KIND_BITS`] bits, the name length
    /// (saturated) above them.
    meta: u32,
}

pub(super) const SCAN_KIND_BITS: u32 = 20;
const SCAN_LEN_MAX: usize = (1 << (32 - SCAN_KIND_BITS)) - 1;
const _: () = assert!(ChunkKind::ALL.len() <= SCAN_KIND_BITS as usize);

impl ScanEntry {
    pub(super) fn kinds(self) -> u32 {
        self.meta & ((1 << SCAN_KIND_BITS) - 1)
    }

    pub(super) fn len(self) -> usize {
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
        let records = records.into_iter();
        // Room for the most records the iterator may give (a filter's
        // lower bound is 0): grown by doubling, a table of 280k records
        // was copied into fresh memory at every step, 3% of a cold
        // registry index on a VM.
        let (at_least, at_most) = records.size_hint();
        let mut prepared: Vec<Prepared> = Vec::with_capacity(at_most.unwrap_or(at_least));
        prepared.extend(records.map(|r| {
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
        }));
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
    pub(super) fn derive(&mut self) {
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

    pub(super) fn name_count(&self) -> usize {
        self.name_off.len().saturating_sub(1)
    }

    pub(super) fn container_count(&self) -> usize {
        self.cont_off.len().saturating_sub(1)
    }

    pub(super) fn name(&self, ord: usize) -> &[u8] {
        &self.name_bytes[self.name_off[ord] as usize..self.name_off[ord + 1] as usize]
    }

    pub(super) fn parts_of(&self, ord: usize) -> &[u16] {
        &self.parts[self.part_off[ord] as usize..self.part_off[ord + 1] as usize]
    }

    pub(super) fn syms_of(&self, ord: usize) -> Range<usize> {
        self.name_sym[ord] as usize..self.name_sym[ord + 1] as usize
    }

    pub(super) fn container(&self, id: usize) -> &[u8] {
        &self.cont_bytes[self.cont_off[id] as usize..self.cont_off[id + 1] as usize]
    }

    pub(super) fn name_len(&self, ord: usize) -> usize {
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
    pub(super) fn with_prefix(&self, prefix: &[u8]) -> &[u32] {
        let lo = self.partition(0, self.lex.len(), |n| n < prefix);
        let hi = self.partition(lo, self.lex.len(), |n| n.starts_with(prefix));
        &self.lex[lo..hi]
    }

    pub(super) fn exact_name(&self, text: &[u8]) -> Option<usize> {
        let first = *self.with_prefix(text).first()? as usize;
        (self.name(first) == text).then_some(first)
    }

    /// The slice of `word_postings` for all word keys that start with
    /// `prefix` (truncated like the keys).
    pub(super) fn word_postings_for(&self, prefix: &[u8]) -> &[u32] {
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
