//! Lexical stage: BM25F postings over chunks.
//!
//! Owns: the tokenizer, query parsing, the per-segment term dictionary (an
//! fst map from term to ordinal), postings and field lengths, and BM25F
//! scoring. A `LexicalSegment` is immutable; the index module stacks
//! segments and merges them.
//! Invariants: postings of a term are sorted by document (chunk position in
//! its segment) and hold one entry per document; documents are numbered
//! densely from 0 in insertion order.
//! Never: file-system access, chunking, protocol types.

pub mod query;
pub mod stem;
pub mod tokenize;

use crate::codec::{get_varint, put_varint, share, FormatError, FrameWriter, Reader};
use bytes::Bytes;
use rustc_hash::FxHashMap;

pub use query::{Phrase, Query};

/// The fields of a chunk document, in storage order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Name = 0,
    QualifiedName = 1,
    Path = 2,
    SignatureDoc = 3,
    Body = 4,
}

pub const N_FIELDS: usize = 5;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FieldParams {
    pub weight: f32,
    pub b: f32,
}

/// BM25F parameters: one saturation constant and per-field weight and
/// length normalisation.
#[derive(Clone, Debug, PartialEq)]
pub struct Bm25Config {
    pub k1: f32,
    pub fields: [FieldParams; N_FIELDS],
}

impl Default for Bm25Config {
    fn default() -> Self {
        // k1 and the body/doc length normalisation were tuned on the
        // development set (bench/dev): long definitions were over-penalised
        // at b = 0.75 next to one-line neighbours.
        Bm25Config {
            k1: 1.5,
            fields: [
                FieldParams {
                    weight: 6.0,
                    b: 0.5,
                },
                FieldParams {
                    weight: 4.0,
                    b: 0.5,
                },
                FieldParams {
                    weight: 1.0,
                    b: 0.5,
                },
                FieldParams {
                    weight: 2.0,
                    b: 0.3,
                },
                FieldParams {
                    weight: 1.0,
                    b: 0.3,
                },
            ],
        }
    }
}

/// The text of one chunk, field by field. The body may come in pieces
/// (a container's text without its children).
pub struct DocFields<'a> {
    pub name: &'a str,
    pub qualified_name: &'a str,
    pub path: &'a str,
    pub signature: &'a str,
    pub doc: &'a str,
    pub body: &'a [&'a str],
}

/// Builds one segment's postings, document by document.
#[derive(Default)]
pub struct LexicalBuilder {
    term_ids: FxHashMap<Box<str>, u32>,
    postings: Vec<Vec<u8>>,
    last_doc: Vec<u32>,
    df: Vec<u32>,
    field_lens: Vec<[u16; N_FIELDS]>,
    /// Scratch for `add_doc`: per-term counts of the current document
    /// (indexed by term id) and the ids it touched.
    doc_counts: Vec<[u32; N_FIELDS]>,
    doc_terms: Vec<u32>,
}

impl LexicalBuilder {
    pub fn new() -> LexicalBuilder {
        LexicalBuilder::default()
    }

    pub fn n_docs(&self) -> u32 {
        self.field_lens.len() as u32
    }

    fn term_id(&mut self, term: &str) -> u32 {
        if let Some(id) = self.term_ids.get(term) {
            return *id;
        }
        let id = self.postings.len() as u32;
        self.term_ids.insert(term.into(), id);
        self.postings.push(Vec::new());
        self.last_doc.push(u32::MAX);
        self.df.push(0);
        self.doc_counts.push([0; N_FIELDS]);
        id
    }

    /// Tokenizes and adds one document; returns its number.
    pub fn add_doc(&mut self, doc: &DocFields<'_>) -> u32 {
        let mut lens = [0u32; N_FIELDS];
        let fields: [(Field, &str); 5] = [
            (Field::Name, doc.name),
            (Field::QualifiedName, doc.qualified_name),
            (Field::Path, doc.path),
            (Field::SignatureDoc, doc.signature),
            (Field::SignatureDoc, doc.doc),
        ];
        let body = doc.body.iter().map(|piece| (Field::Body, *piece));
        for (field, text) in fields.into_iter().chain(body) {
            let f = field as usize;
            tokenize::tokenize(text, &mut |token| {
                let id = self.term_id(token);
                let counts = &mut self.doc_counts[id as usize];
                if counts.iter().all(|c| *c == 0) {
                    self.doc_terms.push(id);
                }
                counts[f] += 1;
                lens[f] += 1;
            });
        }
        let doc_id = self.n_docs();
        self.field_lens
            .push(lens.map(|l| u16::try_from(l).unwrap_or(u16::MAX)));
        let doc_terms = std::mem::take(&mut self.doc_terms);
        for &term_id in &doc_terms {
            let tfs = std::mem::take(&mut self.doc_counts[term_id as usize]);
            self.push_posting(term_id, doc_id, &tfs);
        }
        self.doc_terms = doc_terms;
        self.doc_terms.clear();
        doc_id
    }

    fn push_posting(&mut self, term_id: u32, doc_id: u32, tfs: &[u32; N_FIELDS]) {
        let idx = term_id as usize;
        let last = self.last_doc[idx];
        let delta = if last == u32::MAX {
            doc_id
        } else {
            doc_id - last
        };
        let buf = &mut self.postings[idx];
        put_varint(buf, u64::from(delta));
        let mut mask = 0u8;
        for (f, tf) in tfs.iter().enumerate() {
            if *tf > 0 {
                mask |= 1 << f;
            }
        }
        buf.push(mask);
        for tf in tfs.iter().filter(|tf| **tf > 0) {
            put_varint(buf, u64::from(*tf));
        }
        self.last_doc[idx] = doc_id;
        self.df[idx] += 1;
    }

    /// Copies the live documents of `segment` (in order) into this builder.
    /// `new_doc[d]` is `Some(n)` for a kept document `d`, where `n` counts up
    /// from this builder's `n_docs()` at the time of the call.
    pub fn append_segment(&mut self, segment: &LexicalSegment, keep: &[bool]) -> Vec<Option<u32>> {
        let n_docs = segment.n_docs() as usize;
        let mut new_doc = Vec::with_capacity(n_docs);
        for d in 0..n_docs {
            if keep.get(d).copied().unwrap_or(false) {
                new_doc.push(Some(self.n_docs()));
                self.field_lens
                    .push(segment.field_lens(d).unwrap_or_default());
            } else {
                new_doc.push(None);
            }
        }
        let mut stream = segment.terms.stream();
        use fst::Streamer;
        while let Some((term, ordinal)) = stream.next() {
            let Ok(term) = std::str::from_utf8(term) else {
                continue;
            };
            let mut term_id = None;
            for posting in segment.postings_at(ordinal as usize) {
                let Some(Some(doc)) = new_doc.get(posting.doc as usize) else {
                    continue;
                };
                let id = *term_id.get_or_insert_with(|| self.term_id(term));
                self.push_posting(id, *doc, &posting.tfs);
            }
        }
        new_doc
    }

    pub fn finish(self) -> LexicalSegment {
        let mut order: Vec<(&str, u32)> = self
            .term_ids
            .iter()
            .filter(|(_, id)| self.df[**id as usize] > 0)
            .map(|(t, id)| (&**t, *id))
            .collect();
        order.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut map_builder = fst::MapBuilder::memory();
        let mut table = Vec::with_capacity(order.len() * TERM_ENTRY);
        let total: usize = self.postings.iter().map(Vec::len).sum();
        let mut postings = Vec::with_capacity(total);
        for (ordinal, (term, id)) in order.iter().enumerate() {
            // Keys are sorted and distinct, so insertion cannot fail.
            let _ = map_builder.insert(term, ordinal as u64);
            table.extend_from_slice(&self.df[*id as usize].to_le_bytes());
            table.extend_from_slice(&(postings.len() as u64).to_le_bytes());
            postings.extend_from_slice(&self.postings[*id as usize]);
        }
        let fst_bytes = map_builder.into_inner().unwrap_or_default();
        let terms = fst::Map::new(Bytes::from(fst_bytes)).unwrap_or_else(|_| empty_map());
        let mut lens = Vec::with_capacity(self.field_lens.len() * LENS_ENTRY);
        for doc in &self.field_lens {
            for l in doc {
                lens.extend_from_slice(&l.to_le_bytes());
            }
        }
        let mut segment = LexicalSegment {
            terms,
            table: Bytes::from(table),
            postings: Bytes::from(postings),
            lens: Bytes::from(lens),
            sums: [0; N_FIELDS],
        };
        segment.sums = segment.sum_lens();
        segment
    }
}

/// The map of no terms, should building the real one ever fail (it cannot:
/// its keys are sorted and distinct).
fn empty_map() -> fst::Map<Bytes> {
    let empty = fst::MapBuilder::memory().into_inner().unwrap_or_default();
    fst::Map::new(Bytes::from(empty)).expect("the empty map is well-formed")
}

/// One posting: a document and its term frequency per field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Posting {
    pub doc: u32,
    pub tfs: [u32; N_FIELDS],
}

/// Immutable postings of one segment. Every part is a [`Bytes`] view: a
/// segment read from disk points into the mapped file instead of copying
/// it, so opening an index allocates nothing per term or per document.
pub struct LexicalSegment {
    terms: fst::Map<Bytes>,
    /// Per term ordinal, [`TERM_ENTRY`] bytes: document frequency (u32 LE)
    /// and the start of its postings (u64 LE).
    table: Bytes,
    postings: Bytes,
    /// Per document, [`N_FIELDS`] field lengths (u16 LE).
    lens: Bytes,
    sums: [u64; N_FIELDS],
}

const TERM_ENTRY: usize = 12;
const LENS_ENTRY: usize = 2 * N_FIELDS;

fn le_u32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn le_u64(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

impl LexicalSegment {
    pub fn n_docs(&self) -> u32 {
        (self.lens.len() / LENS_ENTRY) as u32
    }

    pub fn n_terms(&self) -> usize {
        self.table.len() / TERM_ENTRY
    }

    /// The field lengths of document `doc`.
    pub fn field_lens(&self, doc: usize) -> Option<[u16; N_FIELDS]> {
        let raw = self.lens.get(doc * LENS_ENTRY..(doc + 1) * LENS_ENTRY)?;
        let mut lens = [0u16; N_FIELDS];
        for (f, l) in lens.iter_mut().enumerate() {
            *l = u16::from_le_bytes([raw[2 * f], raw[2 * f + 1]]);
        }
        Some(lens)
    }

    pub fn field_len_sums(&self) -> [u64; N_FIELDS] {
        self.sums
    }

    pub fn postings_bytes(&self) -> usize {
        self.postings.len()
    }

    /// Ordinal of `term`, if this segment has it.
    pub fn term_ordinal(&self, term: &str) -> Option<usize> {
        self.terms.get(term).map(|o| o as usize)
    }

    /// Up to `limit` terms that start with `prefix` and satisfy `keep`, in
    /// byte order, looking at no more than `limit * 64` candidates.
    pub fn terms_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
        keep: impl Fn(&str) -> bool,
    ) -> Vec<String> {
        use fst::{Automaton, IntoStreamer, Streamer};
        let matcher = fst::automaton::Str::new(prefix).starts_with();
        let mut stream = self.terms.search(matcher).into_stream();
        let mut found = Vec::new();
        let mut seen = 0;
        while let Some((term, _)) = stream.next() {
            seen += 1;
            if found.len() >= limit || seen > limit * 64 {
                break;
            }
            if let Ok(term) = std::str::from_utf8(term) {
                if keep(term) {
                    found.push(term.to_string());
                }
            }
        }
        found
    }

    /// Calls `f` with every term and its ordinal, in byte order.
    pub fn for_each_term(&self, mut f: impl FnMut(&str, usize)) {
        use fst::{IntoStreamer, Streamer};
        let mut stream = self.terms.stream().into_stream();
        while let Some((term, ordinal)) = stream.next() {
            if let Ok(term) = std::str::from_utf8(term) {
                f(term, ordinal as usize);
            }
        }
    }

    pub fn df(&self, ordinal: usize) -> u32 {
        le_u32(&self.table, ordinal * TERM_ENTRY).unwrap_or(0)
    }

    /// Where term `ordinal`'s postings start (the postings' length past the
    /// last term).
    fn postings_start(&self, ordinal: usize) -> usize {
        if ordinal == self.n_terms() {
            return self.postings.len();
        }
        le_u64(&self.table, ordinal * TERM_ENTRY + 4).unwrap_or(0) as usize
    }

    pub fn postings_at(&self, ordinal: usize) -> PostingIter<'_> {
        let start = self.postings_start(ordinal);
        let end = self.postings_start(ordinal + 1);
        PostingIter {
            buf: self.postings.get(start..end).unwrap_or(&[]),
            pos: 0,
            doc: None,
        }
    }

    /// Writes the four blobs into a segment's frame, each from where it
    /// lies.
    pub fn write_to(&self, out: &mut FrameWriter<'_>) -> std::io::Result<()> {
        out.bytes(self.terms.as_fst().as_bytes())?;
        out.bytes(&self.table)?;
        out.bytes(&self.postings)?;
        out.bytes(&self.lens)
    }

    /// Reads what [`LexicalSegment::write_to`] wrote. `r` reads from inside
    /// `base`, which the segment then shares instead of copying.
    pub fn read_from(r: &mut Reader<'_>, base: &Bytes) -> Result<LexicalSegment, FormatError> {
        let invalid = |what: &str| FormatError::Invalid(what.to_string());
        let terms = fst::Map::new(share(base, r.bytes()?))
            .map_err(|e| FormatError::Invalid(format!("term dictionary: {e}")))?;
        let table = share(base, r.bytes()?);
        let postings = share(base, r.bytes()?);
        let lens = share(base, r.bytes()?);
        if !table.len().is_multiple_of(TERM_ENTRY) || table.len() / TERM_ENTRY != terms.len() {
            return Err(invalid("term count mismatch"));
        }
        if !lens.len().is_multiple_of(LENS_ENTRY) {
            return Err(invalid("field lengths"));
        }
        let mut segment = LexicalSegment {
            terms,
            table,
            postings,
            lens,
            sums: [0; N_FIELDS],
        };
        let starts = (0..=segment.n_terms()).map(|o| segment.postings_start(o));
        let mut prev = 0;
        for start in starts {
            if start < prev || start > segment.postings.len() {
                return Err(invalid("postings offsets out of order"));
            }
            prev = start;
        }
        segment.sums = segment.sum_lens();
        Ok(segment)
    }

    fn sum_lens(&self) -> [u64; N_FIELDS] {
        let mut sums = [0u64; N_FIELDS];
        for raw in self.lens.chunks_exact(LENS_ENTRY) {
            for (f, s) in sums.iter_mut().enumerate() {
                *s += u64::from(u16::from_le_bytes([raw[2 * f], raw[2 * f + 1]]));
            }
        }
        sums
    }
}

/// Decodes one term's postings. Stops quietly at malformed bytes.
pub struct PostingIter<'a> {
    buf: &'a [u8],
    pos: usize,
    doc: Option<u32>,
}

impl Iterator for PostingIter<'_> {
    type Item = Posting;

    fn next(&mut self) -> Option<Posting> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let delta = u32::try_from(get_varint(self.buf, &mut self.pos)?).ok()?;
        let doc = match self.doc {
            None => delta,
            Some(prev) => prev.checked_add(delta)?,
        };
        self.doc = Some(doc);
        let mask = *self.buf.get(self.pos)?;
        self.pos += 1;
        let mut tfs = [0u32; N_FIELDS];
        for (f, tf) in tfs.iter_mut().enumerate() {
            if mask & (1 << f) != 0 {
                *tf = u32::try_from(get_varint(self.buf, &mut self.pos)?).ok()?;
            }
        }
        Some(Posting { doc, tfs })
    }
}

/// Corpus-wide statistics BM25 needs, summed over live segments.
#[derive(Clone, Copy, Debug, Default)]
pub struct CorpusStats {
    pub n_docs: u64,
    pub field_len_sums: [u64; N_FIELDS],
}

impl CorpusStats {
    pub fn add(&mut self, segment: &LexicalSegment) {
        self.n_docs += u64::from(segment.n_docs());
        for (s, x) in self.field_len_sums.iter_mut().zip(segment.sums) {
            *s += x;
        }
    }

    pub fn idf(&self, df: u64) -> f32 {
        let n = self.n_docs as f64;
        let df = df as f64;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln().max(0.0) as f32
    }

    fn avg_lens(&self) -> [f32; N_FIELDS] {
        let n = self.n_docs.max(1) as f32;
        self.field_len_sums.map(|s| (s as f32 / n).max(1.0))
    }
}

/// Per-query scoring accumulator for one segment: a dense score array with
/// a list of touched documents, a bitmask of which query terms matched, and
/// (when grouping is on) the same per group of documents (a file).
#[derive(Default)]
pub struct Accumulator {
    pub scores: Vec<f32>,
    pub matched: Vec<u64>,
    pub touched: Vec<u32>,
    /// BM25 over each group, every document's term frequencies summed
    /// before saturation: evidence that a whole file matches.
    pub group_scores: Vec<f32>,
    group_tf: Vec<f32>,
    group_touched: Vec<u32>,
    groups_touched_any: Vec<u32>,
}

impl Accumulator {
    /// Clears the previous segment's scores; `n_groups` is 0 when grouping
    /// is off.
    pub fn reset(&mut self, n_docs: usize, n_groups: usize) {
        for d in self.touched.drain(..) {
            self.scores[d as usize] = 0.0;
            self.matched[d as usize] = 0;
        }
        for g in self.groups_touched_any.drain(..) {
            self.group_scores[g as usize] = 0.0;
        }
        if self.scores.len() < n_docs {
            self.scores.resize(n_docs, 0.0);
            self.matched.resize(n_docs, 0);
        }
        if self.group_scores.len() < n_groups {
            self.group_scores.resize(n_groups, 0.0);
            self.group_tf.resize(n_groups, 0.0);
        }
    }
}

impl Accumulator {
    /// The highest group score so far (0 with no group).
    pub fn max_group_score(&self) -> f32 {
        self.groups_touched_any
            .iter()
            .filter_map(|&g| self.group_scores.get(g as usize))
            .fold(0.0, |max, &s| if s > max { s } else { max })
    }
}

/// Adds the BM25F contribution of one query term (index `term_bit` < 64,
/// global inverse document frequency `idf`) to every document of `segment`
/// that contains it. With `group_of` (a document's group, below the
/// `n_groups` given to `reset`), the term also scores each group once, on
/// the sum of its documents' term frequencies.
#[allow(clippy::too_many_arguments)]
pub fn score_term<G: Fn(u32) -> usize>(
    segment: &LexicalSegment,
    ordinal: usize,
    term_bit: usize,
    idf: f32,
    stats: &CorpusStats,
    config: &Bm25Config,
    acc: &mut Accumulator,
    group_of: Option<&G>,
) {
    let avg = stats.avg_lens();
    let bit = 1u64 << (term_bit.min(63));
    // Per field: weight, and the length norm `1 - b + b * len / avg` as
    // `fixed + per_len * len`.
    let weight = config.fields.map(|p| p.weight);
    let fixed = config.fields.map(|p| 1.0 - p.b);
    let mut per_len = [0f32; N_FIELDS];
    for (f, slot) in per_len.iter_mut().enumerate() {
        *slot = config.fields[f].b / avg[f];
    }
    let saturate = |tf: f32| idf * tf * (config.k1 + 1.0) / (config.k1 + tf);
    // The postings decoded in place (the loop `PostingIter` runs, without
    // materialising each posting's five frequencies): a common word has
    // hundreds of thousands.
    let start = segment.postings_start(ordinal);
    let end = segment.postings_start(ordinal + 1);
    let buf = segment.postings.get(start..end).unwrap_or(&[]);
    let lens = &segment.lens[..];
    let mut pos = 0;
    let mut doc: Option<u32> = None;
    while pos < buf.len() {
        let Some(delta) = get_varint(buf, &mut pos).and_then(|v| u32::try_from(v).ok()) else {
            break;
        };
        let Some(d32) = doc.map_or(Some(delta), |prev| prev.checked_add(delta)) else {
            break;
        };
        doc = Some(d32);
        let d = d32 as usize;
        let (Some(&mask), Some(doc_lens)) =
            (buf.get(pos), lens.get(d * LENS_ENTRY..(d + 1) * LENS_ENTRY))
        else {
            break;
        };
        pos += 1;
        let mut tf = 0.0f32;
        let mut fields = mask & ((1 << N_FIELDS) - 1);
        let mut truncated = false;
        while fields != 0 {
            let f = fields.trailing_zeros() as usize;
            fields &= fields - 1;
            let Some(raw) = get_varint(buf, &mut pos) else {
                truncated = true;
                break;
            };
            let len = f32::from(u16::from_le_bytes([doc_lens[2 * f], doc_lens[2 * f + 1]]));
            let norm = fixed[f] + per_len[f] * len;
            tf += weight[f] * raw as f32 / norm.max(0.01);
        }
        if truncated {
            break;
        }
        if acc.matched[d] == 0 {
            acc.touched.push(d32);
        }
        acc.scores[d] += saturate(tf);
        acc.matched[d] |= bit;
        if let Some(group_of) = group_of {
            let g = group_of(d32);
            if let Some(slot) = acc.group_tf.get_mut(g) {
                if *slot == 0.0 {
                    acc.group_touched.push(g as u32);
                }
                *slot += tf;
            }
        }
    }
    for g in acc.group_touched.drain(..) {
        let g = g as usize;
        let tf = std::mem::take(&mut acc.group_tf[g]);
        if acc.group_scores[g] == 0.0 {
            acc.groups_touched_any.push(g as u32);
        }
        acc.group_scores[g] += saturate(tf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc<'a>(name: &'a str, body: &'a [&'a str]) -> DocFields<'a> {
        DocFields {
            name,
            qualified_name: name,
            path: "src/lib.rs",
            signature: "",
            doc: "",
            body,
        }
    }

    fn build(docs: &[(&str, &str)]) -> LexicalSegment {
        let mut builder = LexicalBuilder::new();
        for (name, body) in docs {
            builder.add_doc(&doc(name, &[body]));
        }
        builder.finish()
    }

    fn search(segment: &LexicalSegment, query: &str) -> Vec<u32> {
        let mut stats = CorpusStats::default();
        stats.add(segment);
        let query = Query::parse(query);
        let mut acc = Accumulator::default();
        acc.reset(segment.n_docs() as usize, 0);
        for (i, term) in query.terms.iter().enumerate() {
            if let Some(ordinal) = segment.term_ordinal(term) {
                let idf = stats.idf(u64::from(segment.df(ordinal)));
                score_term(
                    segment,
                    ordinal,
                    i,
                    idf,
                    &stats,
                    &Bm25Config::default(),
                    &mut acc,
                    None::<&fn(u32) -> usize>,
                );
            }
        }
        let mut hits: Vec<u32> = acc.touched.clone();
        hits.sort_by(|a, b| acc.scores[*b as usize].total_cmp(&acc.scores[*a as usize]));
        hits
    }

    #[test]
    fn groups_sum_term_frequencies_before_saturation() {
        // Documents 0 and 1 form group 0, document 2 is group 1.
        let segment = build(&[
            ("a", "retry the request"),
            ("b", "retry once more"),
            ("c", "retry later"),
        ]);
        let mut stats = CorpusStats::default();
        stats.add(&segment);
        let mut acc = Accumulator::default();
        acc.reset(segment.n_docs() as usize, 2);
        let ordinal = segment.term_ordinal("retry").expect("term");
        let group_of = |doc: u32| usize::from(doc == 2);
        let idf = stats.idf(u64::from(segment.df(ordinal)));
        let config = Bm25Config::default();
        score_term(
            &segment,
            ordinal,
            0,
            idf,
            &stats,
            &config,
            &mut acc,
            Some(&group_of),
        );
        let (two, one) = (acc.group_scores[0], acc.group_scores[1]);
        assert!(two > one, "two matching documents beat one: {two} vs {one}");
        assert!(two < 2.0 * one, "saturated, not summed: {two} vs {one}");
        // A new segment starts from zero.
        acc.reset(segment.n_docs() as usize, 2);
        assert_eq!(acc.group_scores[0], 0.0);
    }

    #[test]
    fn exact_identifier_outscores_its_parts() {
        let segment = build(&[
            ("graph", "let store = graph.store();"),
            ("GraphStore", "struct GraphStore {}"),
            ("store_graph", "fn store_graph() {}"),
        ]);
        assert_eq!(search(&segment, "GraphStore")[0], 1);
    }

    /// What `write_to` puts in a frame: the payload of a frame holding
    /// only this segment.
    fn encoded(segment: &LexicalSegment) -> Bytes {
        use crate::codec::{unframe_with, Checksum};
        let mut out = Vec::new();
        let mut frame = FrameWriter::new(&mut out, Checksum::Crc32, b"TEST", 1);
        segment.write_to(&mut frame).expect("in memory");
        frame.finish().expect("in memory");
        let payload = unframe_with(Checksum::Crc32, &out, b"TEST", "test", 1).expect("framed");
        Bytes::copy_from_slice(payload)
    }

    #[test]
    fn postings_round_trip_through_bytes() {
        let segment = build(&[("alpha", "beta gamma"), ("beta", "beta beta delta")]);
        let base = encoded(&segment);
        let mut r = Reader::new(&base);
        let loaded = LexicalSegment::read_from(&mut r, &base).expect("round trip");
        assert_eq!(loaded.n_docs(), 2);
        assert_eq!(loaded.field_len_sums(), segment.field_len_sums());
        // Loading shares the bytes it read instead of copying them.
        let inside = |part: &Bytes| {
            let at = part.as_ptr() as usize;
            at >= base.as_ptr() as usize && at + part.len() <= base.as_ptr() as usize + base.len()
        };
        assert!(inside(&loaded.postings) && inside(&loaded.table) && inside(&loaded.lens));
        let ordinal = loaded.term_ordinal("beta").expect("beta indexed");
        let postings: Vec<Posting> = loaded.postings_at(ordinal).collect();
        assert_eq!(postings.len(), 2);
        assert_eq!(postings[1].doc, 1);
        assert_eq!(postings[1].tfs[Field::Name as usize], 1);
        assert_eq!(postings[1].tfs[Field::Body as usize], 2);
        assert_eq!(search(&loaded, "delta"), vec![1]);
    }

    #[test]
    fn corrupt_bytes_are_an_error_not_a_panic() {
        let segment = build(&[("alpha", "beta")]);
        let base = encoded(&segment);
        for cut in 0..base.len() {
            let mut r = Reader::new(&base[..cut]);
            assert!(LexicalSegment::read_from(&mut r, &base).is_err());
        }
    }

    #[test]
    fn append_segment_drops_deleted_docs() {
        let first = build(&[("alpha", "x1"), ("beta", "shared")]);
        let second = build(&[("gamma", "shared")]);
        let mut builder = LexicalBuilder::new();
        let map1 = builder.append_segment(&first, &[false, true]);
        let map2 = builder.append_segment(&second, &[true]);
        assert_eq!(map1, vec![None, Some(0)]);
        assert_eq!(map2, vec![Some(1)]);
        let merged = builder.finish();
        assert_eq!(merged.n_docs(), 2);
        assert!(merged.term_ordinal("alpha").is_none());
        assert_eq!(search(&merged, "shared").len(), 2);
    }
}
