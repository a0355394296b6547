//! Segments: the immutable unit of the index, in memory and on disk.
//!
//! A segment holds the file rows written by one update (indexed, skipped or
//! deleted files), the chunks parsed in that update, their postings and
//! their symbol table. Newer segments supersede older rows for the same
//! path; a chunk is live while the winning row of its path lists it.
//! Invariants: chunk ids inside a segment are strictly ascending and a
//! segment's ids are all larger than those of the segments before it; a
//! segment file is written once and never modified.
//! Never: decide liveness (the index owns that), read source files.

use super::generated::is_generated;
use crate::chunk::{Chunk, ChunkKind, Language};
use crate::codec::{unframe_with, Checksum, FormatError, FrameWriter, Reader, Text};
use crate::lexical::{DocFields, LexicalBuilder, LexicalSegment};
use crate::symbols::{SymbolRecord, SymbolTable};
use bytes::Bytes;

pub const SEGMENT_MAGIC: &[u8; 4] = b"QSEG";
pub const SEGMENT_VERSION: u32 = 6;

/// Why a file is in the walk but not in the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SkipReason {
    Binary,
    TooLarge,
    Minified,
    Unreadable,
}

impl SkipReason {
    pub const ALL: [SkipReason; 4] = [
        SkipReason::Binary,
        SkipReason::TooLarge,
        SkipReason::Minified,
        SkipReason::Unreadable,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SkipReason::Binary => "binary",
            SkipReason::TooLarge => "too large",
            SkipReason::Minified => "minified",
            SkipReason::Unreadable => "unreadable",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileState {
    Indexed {
        language: Language,
        chunk_ids: Vec<u32>,
        /// Its first lines say a tool wrote it (`generated::is_generated`).
        generated: bool,
    },
    Skipped(SkipReason),
    Deleted,
}

/// What the index knows about one path as of one segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileRow {
    pub path: String,
    pub size: u64,
    pub mtime_ns: u64,
    /// `walk::FileStat::stamp` when the file was read (0: compare by hash).
    pub stamp: u64,
    pub hash: [u8; 32],
    pub state: FileState,
}

/// A chunk as stored: everything but its text. Its strings are [`Text`]
/// views of the segment file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkRecord {
    pub chunk_id: u32,
    /// Index into `Segment::paths`.
    pub path_idx: u32,
    pub language: Language,
    pub kind: ChunkKind,
    pub name: Text,
    pub qualified_name: Text,
    pub container: Option<Text>,
    pub byte_start: u32,
    pub byte_end: u32,
    pub start_line: u32,
    pub end_line: u32,
    /// 1-based line and UTF-16 column of the written name (see
    /// [`crate::chunk::Chunk::name_line`]).
    pub name_line: u32,
    pub name_column: u32,
    pub signature: Text,
}

pub struct Segment {
    pub id: u64,
    pub rows: Vec<FileRow>,
    pub paths: Vec<Box<str>>,
    pub chunks: Vec<ChunkRecord>,
    pub lexical: LexicalSegment,
    pub symbols: SymbolTable,
    /// `chunks[i]`'s id and path, packed apart from the records: the
    /// lexical branch reads them for every matching document, and 8 bytes
    /// a document stay in cache where 120-byte records do not.
    keys: Vec<DocKey>,
}

/// The two fields of a chunk record that scoring reads per document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DocKey {
    pub chunk_id: u32,
    pub path_idx: u32,
}

impl Segment {
    fn new(
        id: u64,
        rows: Vec<FileRow>,
        paths: Vec<Box<str>>,
        chunks: Vec<ChunkRecord>,
        lexical: LexicalSegment,
        symbols: SymbolTable,
    ) -> Segment {
        let keys = chunks
            .iter()
            .map(|c| DocKey {
                chunk_id: c.chunk_id,
                path_idx: c.path_idx,
            })
            .collect();
        Segment {
            id,
            rows,
            paths,
            chunks,
            lexical,
            symbols,
            keys,
        }
    }

    /// Id and path of the chunk at position `doc` (its lexical document).
    pub fn key(&self, doc: usize) -> Option<DocKey> {
        self.keys.get(doc).copied()
    }

    pub fn path_of(&self, chunk: &ChunkRecord) -> &str {
        self.paths.get(chunk.path_idx as usize).map_or("", |p| p)
    }

    /// Position of `chunk_id` in `chunks`.
    pub fn position(&self, chunk_id: u32) -> Option<usize> {
        self.chunks
            .binary_search_by_key(&chunk_id, |c| c.chunk_id)
            .ok()
    }

    pub fn first_chunk_id(&self) -> Option<u32> {
        self.chunks.first().map(|c| c.chunk_id)
    }

    pub fn last_chunk_id(&self) -> Option<u32> {
        self.chunks.last().map(|c| c.chunk_id)
    }

    pub fn file_name(id: u64) -> String {
        format!("seg-{id:016x}.qseg")
    }

    /// The segment file's bytes (tests and tools; the index streams them
    /// to the file with [`Segment::write`]).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        // Writing into a `Vec` cannot fail.
        let written = self.write(&mut out);
        debug_assert!(written.is_ok());
        out
    }

    /// Encodes the segment file into `sink` as it goes, never holding it
    /// whole (two files of 85 MB on the cargo registry, which used to be
    /// encoded into fresh memory and then written).
    pub fn write(&self, sink: &mut dyn std::io::Write) -> std::io::Result<()> {
        let mut symbols = Vec::new();
        self.symbols.write_to(&mut symbols);
        let mut out = FrameWriter::new(sink, Checksum::Crc32, SEGMENT_MAGIC, SEGMENT_VERSION);
        out.w.u64(self.id);
        out.w.varint(self.paths.len() as u64);
        for path in &self.paths {
            out.w.str(path);
            out.spill()?;
        }
        out.w.varint(self.chunks.len() as u64);
        let mut prev_id = 0u32;
        for chunk in &self.chunks {
            let w = &mut out.w;
            w.varint(u64::from(chunk.chunk_id - prev_id));
            prev_id = chunk.chunk_id;
            w.varint(u64::from(chunk.path_idx));
            w.u8(chunk.language.code());
            w.u8(chunk.kind.code());
            w.str(&chunk.name);
            w.str(&chunk.qualified_name);
            w.str(chunk.container.as_deref().unwrap_or(""));
            w.varint(u64::from(chunk.byte_start));
            w.varint(u64::from(chunk.byte_end - chunk.byte_start));
            w.varint(u64::from(chunk.start_line));
            w.varint(u64::from(chunk.end_line - chunk.start_line));
            w.varint(u64::from(chunk.name_line.saturating_sub(chunk.start_line)));
            w.varint(u64::from(chunk.name_column));
            w.str(&chunk.signature);
            out.spill()?;
        }
        out.w.varint(self.rows.len() as u64);
        for row in &self.rows {
            let w = &mut out.w;
            w.str(&row.path);
            w.varint(row.size);
            w.u64(row.mtime_ns);
            w.u64(row.stamp);
            w.buf.extend_from_slice(&row.hash);
            match &row.state {
                FileState::Indexed {
                    language,
                    chunk_ids,
                    generated,
                } => {
                    w.u8(0);
                    w.u8(language.code());
                    w.u8(u8::from(*generated));
                    w.varint(chunk_ids.len() as u64);
                    for id in chunk_ids {
                        w.varint(u64::from(*id));
                    }
                }
                FileState::Skipped(reason) => {
                    w.u8(1);
                    w.u8(*reason as u8);
                }
                FileState::Deleted => w.u8(2),
            }
            out.spill()?;
        }
        self.lexical.write_to(&mut out)?;
        out.bytes(&symbols)?;
        out.finish()
    }

    /// Decodes a segment file. The postings are views of `bytes` (usually
    /// the mapped file), which the segment keeps alive.
    pub fn from_bytes(bytes: &Bytes) -> Result<Segment, FormatError> {
        let payload = unframe_with(
            Checksum::Crc32,
            bytes,
            SEGMENT_MAGIC,
            "segment",
            SEGMENT_VERSION,
        )?;
        let mut r = Reader::new(payload);
        let id = r.u64()?;
        let n_paths = r.len()?;
        let mut paths = Vec::with_capacity(n_paths);
        for _ in 0..n_paths {
            paths.push(Box::from(r.str()?));
        }
        let n_chunks = r.len()?;
        let mut chunks = Vec::with_capacity(n_chunks);
        let mut prev_id = 0u32;
        for i in 0..n_chunks {
            let delta = r.varint_u32()?;
            if i > 0 && delta == 0 {
                return Err(invalid("chunk ids not ascending"));
            }
            let chunk_id = prev_id
                .checked_add(delta)
                .ok_or_else(|| invalid("chunk id overflow"))?;
            prev_id = chunk_id;
            let path_idx = r.varint_u32()?;
            if path_idx as usize >= paths.len() {
                return Err(invalid("chunk path out of range"));
            }
            let language =
                Language::from_code(r.u8()?).ok_or_else(|| invalid("unknown language"))?;
            let kind = ChunkKind::from_code(r.u8()?).ok_or_else(|| invalid("unknown kind"))?;
            let name = Text::read(&mut r, bytes)?;
            let qualified_name = Text::read(&mut r, bytes)?;
            let container = Text::read(&mut r, bytes)?;
            let container = (!container.is_empty()).then_some(container);
            let byte_start = r.varint_u32()?;
            let byte_end = byte_start
                .checked_add(r.varint_u32()?)
                .ok_or_else(|| invalid("byte range"))?;
            let start_line = r.varint_u32()?;
            let end_line = start_line
                .checked_add(r.varint_u32()?)
                .ok_or_else(|| invalid("line range"))?;
            let name_line = start_line
                .checked_add(r.varint_u32()?)
                .filter(|line| *line <= end_line)
                .ok_or_else(|| invalid("name line"))?;
            let name_column = r.varint_u32()?;
            let signature = Text::read(&mut r, bytes)?;
            chunks.push(ChunkRecord {
                chunk_id,
                path_idx,
                language,
                kind,
                name,
                qualified_name,
                container,
                byte_start,
                byte_end,
                start_line,
                end_line,
                name_line,
                name_column,
                signature,
            });
        }
        let n_rows = r.len()?;
        let mut rows = Vec::with_capacity(n_rows);
        for _ in 0..n_rows {
            let path = r.str()?.to_string();
            let size = r.varint()?;
            let mtime_ns = r.u64()?;
            let stamp = r.u64()?;
            let mut hash = [0u8; 32];
            for byte in &mut hash {
                *byte = r.u8()?;
            }
            let state = match r.u8()? {
                0 => {
                    let language =
                        Language::from_code(r.u8()?).ok_or_else(|| invalid("unknown language"))?;
                    let generated = match r.u8()? {
                        0 => false,
                        1 => true,
                        _ => return Err(invalid("unknown generated flag")),
                    };
                    let n = r.len()?;
                    let mut chunk_ids = Vec::with_capacity(n);
                    for _ in 0..n {
                        chunk_ids.push(r.varint_u32()?);
                    }
                    FileState::Indexed {
                        language,
                        chunk_ids,
                        generated,
                    }
                }
                1 => {
                    let code = r.u8()? as usize;
                    let reason = *SkipReason::ALL
                        .get(code)
                        .ok_or_else(|| invalid("unknown skip reason"))?;
                    FileState::Skipped(reason)
                }
                2 => FileState::Deleted,
                _ => return Err(invalid("unknown file state")),
            };
            rows.push(FileRow {
                path,
                size,
                mtime_ns,
                stamp,
                hash,
                state,
            });
        }
        let lexical = LexicalSegment::read_from(&mut r, bytes)?;
        if lexical.n_docs() as usize != chunks.len() {
            return Err(invalid("postings and chunks disagree"));
        }
        let symbols = SymbolTable::read_from(r.bytes()?)
            .map_err(|e| FormatError::Invalid(format!("symbol table: {e}")))?;
        if !r.is_empty() {
            return Err(invalid("trailing bytes"));
        }
        Ok(Segment::new(id, rows, paths, chunks, lexical, symbols))
    }
}

fn invalid(what: &str) -> FormatError {
    FormatError::Invalid(what.to_string())
}

/// The parsed content of one file, ready to be added to a segment.
pub struct ParsedFile<'a> {
    pub path: &'a str,
    pub size: u64,
    pub mtime_ns: u64,
    pub stamp: u64,
    pub hash: [u8; 32],
    pub language: Language,
    pub text: &'a str,
    pub chunks: Vec<Chunk>,
}

/// Source bytes per chunk assumed when reserving a builder's chunk table:
/// below the registry's 217, so one reservation usually suffices.
const SOURCE_BYTES_PER_CHUNK_HINT: u64 = 128;

/// The most chunk records reserved ahead (about 480 MB of address space).
const MAX_RESERVED_CHUNKS: u64 = 4 << 20;

/// Accumulates files into a new segment. Chunks get local numbers here and
/// their global ids when the segment is finished.
#[derive(Default)]
pub struct SegmentBuilder {
    rows: Vec<FileRow>,
    /// Rows whose chunk ids are local numbers, to be offset at finish.
    local_rows: Vec<bool>,
    paths: Vec<Box<str>>,
    chunks: Vec<ChunkRecord>,
    lexical: LexicalBuilder,
}

impl SegmentBuilder {
    pub fn new() -> SegmentBuilder {
        SegmentBuilder::default()
    }

    /// A builder that expects about `bytes` of source: its chunk table is
    /// reserved for one chunk per `SOURCE_BYTES_PER_CHUNK_HINT` bytes up
    /// front. A table of 120-byte records grown by doubling copies itself
    /// at every step into memory never touched before, and on a VM a first
    /// touch is what costs (2.7% of a cold registry index); pages reserved
    /// but never written cost nothing.
    pub fn for_source_bytes(bytes: u64) -> SegmentBuilder {
        let expected = (bytes / SOURCE_BYTES_PER_CHUNK_HINT).min(MAX_RESERVED_CHUNKS) as usize;
        SegmentBuilder {
            chunks: Vec::with_capacity(expected),
            ..SegmentBuilder::default()
        }
    }

    pub fn n_chunks(&self) -> usize {
        self.chunks.len()
    }

    pub fn n_rows(&self) -> usize {
        self.rows.len()
    }

    /// Adds a row that does not bring chunks (skipped, deleted, or an
    /// unchanged file whose existing chunk ids stay live).
    pub fn add_row(&mut self, row: FileRow) {
        self.rows.push(row);
        self.local_rows.push(false);
    }

    /// Adds a parsed file: its row, its chunks and their postings.
    pub fn add_file(&mut self, mut file: ParsedFile<'_>) {
        let mut chunks = std::mem::take(&mut file.chunks);
        chunks.sort_by(|a, b| {
            a.byte_start
                .cmp(&b.byte_start)
                .then(b.byte_end.cmp(&a.byte_end))
        });
        let bodies = bodies_without_children(file.text, &chunks);
        file.chunks = chunks;
        self.add_file_with_bodies(file, bodies);
    }

    /// [`SegmentBuilder::add_file`] for some of a file's chunks, whose
    /// bodies without their children (`own_text`) the caller knows: the
    /// hub's candidate chunks, whose children may not be among them.
    /// `bodies[i]` is `file.chunks[i]`'s.
    pub fn add_file_with_bodies(&mut self, file: ParsedFile<'_>, bodies: Vec<Vec<&str>>) {
        let path_idx = self.paths.len() as u32;
        self.paths.push(Box::from(file.path));
        let chunks = file.chunks;
        let mut chunk_ids = Vec::with_capacity(chunks.len());
        for (chunk, body) in chunks.into_iter().zip(bodies) {
            let local = self.chunks.len() as u32;
            // A line window's name is its path and lines: the path field
            // already holds the path, so it is not a name to match.
            let named = chunk.kind != ChunkKind::Lines;
            self.lexical.add_doc(&DocFields {
                name: if named { &chunk.name } else { "" },
                qualified_name: if named { &chunk.qualified_name } else { "" },
                path: file.path,
                signature: &chunk.signature,
                doc: &chunk.doc,
                body: &body,
            });
            chunk_ids.push(local);
            self.chunks.push(ChunkRecord {
                chunk_id: local,
                path_idx,
                language: chunk.language,
                kind: chunk.kind,
                name: chunk.name.into(),
                qualified_name: chunk.qualified_name.into(),
                container: chunk.container.map(Into::into),
                byte_start: chunk.byte_start,
                byte_end: chunk.byte_end,
                start_line: chunk.start_line,
                end_line: chunk.end_line,
                name_line: chunk.name_line.clamp(chunk.start_line, chunk.end_line),
                name_column: chunk.name_column,
                signature: chunk.signature.into(),
            });
        }
        self.rows.push(FileRow {
            path: file.path.to_string(),
            size: file.size,
            mtime_ns: file.mtime_ns,
            stamp: file.stamp,
            hash: file.hash,
            state: FileState::Indexed {
                language: file.language,
                chunk_ids,
                generated: is_generated(file.text),
            },
        });
        self.local_rows.push(true);
    }

    /// Gives the chunks their global ids (`first_chunk_id` upwards) and
    /// freezes the segment.
    pub fn finish(mut self, id: u64, first_chunk_id: u32) -> Segment {
        for chunk in &mut self.chunks {
            chunk.chunk_id += first_chunk_id;
        }
        for (row, local) in self.rows.iter_mut().zip(&self.local_rows) {
            if let (true, FileState::Indexed { chunk_ids, .. }) = (*local, &mut row.state) {
                for id in chunk_ids {
                    *id += first_chunk_id;
                }
            }
        }
        let symbols = build_symbols(&self.chunks);
        Segment::new(
            id,
            self.rows,
            self.paths,
            self.chunks,
            self.lexical.finish(),
            symbols,
        )
    }
}

pub(crate) fn build_symbols(chunks: &[ChunkRecord]) -> SymbolTable {
    SymbolTable::build(
        chunks
            .iter()
            .filter(|c| c.kind.is_definition())
            .map(|c| SymbolRecord {
                chunk_id: c.chunk_id,
                name: &c.name,
                qualified_name: &c.qualified_name,
                kind: c.kind,
            }),
    )
}

/// The text of each chunk without the text of the chunks nested in it, so a
/// class or impl block is not a second hit for every method it contains.
/// `chunks` must be sorted by (start ascending, end descending).
fn bodies_without_children<'t>(text: &'t str, chunks: &[Chunk]) -> Vec<Vec<&'t str>> {
    chunks
        .iter()
        .zip(child_ranges(chunks))
        .map(|(chunk, holes)| own_text(text, chunk.byte_start, chunk.byte_end, &holes))
        .collect()
}

/// The byte ranges of each chunk's direct children (the chunks nested in
/// it and in no other chunk nested in it), in order. `chunks` must be
/// sorted by (start ascending, end descending); of two chunks with the
/// same range, the first holds the second.
pub fn child_ranges(chunks: &[Chunk]) -> Vec<Vec<(u32, u32)>> {
    // Direct children of each chunk, found with a stack of open ranges.
    let mut children: Vec<Vec<(u32, u32)>> = vec![Vec::new(); chunks.len()];
    let mut stack: Vec<usize> = Vec::new();
    for (i, chunk) in chunks.iter().enumerate() {
        while let Some(&top) = stack.last() {
            if chunks[top].byte_end >= chunk.byte_end && chunks[top].byte_start <= chunk.byte_start
            {
                break;
            }
            stack.pop();
        }
        if let Some(&parent) = stack.last() {
            children[parent].push((chunk.byte_start, chunk.byte_end));
        }
        stack.push(i);
    }
    children
}

/// The text of `text[start..end]` without the `holes` (its children's
/// ranges, in order): what the lexical index reads as a chunk's body.
pub fn own_text<'t>(text: &'t str, start: u32, end: u32, holes: &[(u32, u32)]) -> Vec<&'t str> {
    let slice = |a: u32, b: u32| -> &'t str { text.get(a as usize..b as usize).unwrap_or("") };
    let mut pieces = Vec::with_capacity(holes.len() + 1);
    let mut cursor = start;
    for &(hole_start, hole_end) in holes {
        if hole_start > cursor {
            pieces.push(slice(cursor, hole_start));
        }
        cursor = cursor.max(hole_end);
    }
    if end > cursor {
        pieces.push(slice(cursor, end));
    }
    pieces
}

/// Joins the live content of `segments` (oldest first) into one segment.
/// Rows: the newest row per path; `Deleted` rows are dropped when
/// `drop_deleted` (a full merge, where nothing older remains to supersede).
pub fn merge(
    segments: &[&Segment],
    is_live: &dyn Fn(u32) -> bool,
    drop_deleted: bool,
    id: u64,
) -> Segment {
    let mut rows: Vec<FileRow> = Vec::new();
    let mut row_of_path: rustc_hash::FxHashMap<&str, usize> = Default::default();
    for segment in segments {
        for row in &segment.rows {
            match row_of_path.get(row.path.as_str()) {
                Some(&idx) => rows[idx] = row.clone(),
                None => {
                    row_of_path.insert(&row.path, rows.len());
                    rows.push(row.clone());
                }
            }
        }
    }
    if drop_deleted {
        rows.retain(|row| row.state != FileState::Deleted);
    }
    let mut lexical = LexicalBuilder::new();
    let mut paths: Vec<Box<str>> = Vec::new();
    let mut path_ids: rustc_hash::FxHashMap<Box<str>, u32> = Default::default();
    let mut chunks = Vec::new();
    for segment in segments {
        let keep: Vec<bool> = segment.chunks.iter().map(|c| is_live(c.chunk_id)).collect();
        lexical.append_segment(&segment.lexical, &keep);
        for (chunk, kept) in segment.chunks.iter().zip(&keep) {
            if !kept {
                continue;
            }
            let path = segment.path_of(chunk);
            let path_idx = *path_ids.entry(Box::from(path)).or_insert_with(|| {
                paths.push(Box::from(path));
                (paths.len() - 1) as u32
            });
            chunks.push(ChunkRecord {
                path_idx,
                ..chunk.clone()
            });
        }
    }
    let symbols = build_symbols(&chunks);
    Segment::new(id, rows, paths, chunks, lexical.finish(), symbols)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed<'a>(path: &'a str, text: &'a str) -> ParsedFile<'a> {
        ParsedFile {
            path,
            size: text.len() as u64,
            mtime_ns: 1,
            stamp: 2,
            hash: [7; 32],
            language: Language::Rust,
            text,
            chunks: crate::chunk::chunk_file(path, text, Language::Rust),
        }
    }

    #[test]
    fn a_reserved_chunk_table_changes_nothing_in_the_segment() {
        let a = "pub struct GraphStore { nodes: Vec<u32> }\nimpl GraphStore {\n    pub fn lookup(&self, id: u32) -> Option<u32> { self.nodes.get(id as usize).copied() }\n}\n";
        let b = "/// Retries a failed request.\npub fn retry(n: u32) -> u32 { n + 1 }\nconst LIMIT: u32 = 3;\n";
        let build = |mut builder: SegmentBuilder| {
            builder.add_file(parsed("src/a.rs", a));
            builder.add_file(parsed("src/b.rs", b));
            builder.finish(3, 10).to_bytes()
        };
        let plain = build(SegmentBuilder::new());
        // Too small a guess (it grows as before), a close one, and the cap.
        for bytes in [0, (a.len() + b.len()) as u64, u64::MAX] {
            let reserved = SegmentBuilder::for_source_bytes(bytes);
            assert!(reserved.chunks.capacity() as u64 <= MAX_RESERVED_CHUNKS);
            assert_eq!(build(reserved), plain, "reserved for {bytes} bytes");
        }
        assert!(SegmentBuilder::for_source_bytes(1 << 20).chunks.capacity() >= 8192);
    }

    /// What a corruption does to a file's bytes.
    #[derive(Clone, Debug)]
    enum Damage {
        /// XOR a byte (never with 0).
        Flip(proptest::sample::Index, u8),
        /// Cut the file here.
        Cut(proptest::sample::Index),
        /// Overwrite a run with one byte (a zeroed or 0xff page).
        Fill(proptest::sample::Index, usize, u8),
    }

    fn damage() -> impl proptest::strategy::Strategy<Value = Damage> {
        use proptest::prelude::*;
        prop_oneof![
            (any::<proptest::sample::Index>(), 1..=255u8).prop_map(|(i, x)| Damage::Flip(i, x)),
            any::<proptest::sample::Index>().prop_map(Damage::Cut),
            (any::<proptest::sample::Index>(), 1..4096usize, any::<u8>())
                .prop_map(|(i, n, b)| Damage::Fill(i, n, b)),
        ]
    }

    fn apply(bytes: &mut Vec<u8>, damage: &Damage) {
        if bytes.is_empty() {
            return;
        }
        match damage {
            Damage::Flip(at, x) => {
                let at = at.index(bytes.len());
                bytes[at] ^= x;
            }
            Damage::Cut(at) => bytes.truncate(at.index(bytes.len())),
            Damage::Fill(at, n, b) => {
                let at = at.index(bytes.len());
                let end = (at + n).min(bytes.len());
                bytes[at..end].fill(*b);
            }
        }
    }

    fn sample_segment() -> Vec<u8> {
        let a = "pub struct GraphStore { nodes: Vec<u32> }\nimpl GraphStore {\n    pub fn lookup(&self, id: u32) -> Option<u32> { self.nodes.get(id as usize).copied() }\n}\n";
        let b = "/// Retries a failed request.\npub fn retry(n: u32) -> u32 { n + 1 }\nconst LIMIT: u32 = 3;\n";
        let mut builder = SegmentBuilder::new();
        builder.add_file(parsed("src/a.rs", a));
        builder.add_file(parsed("src/b.rs", b));
        builder.finish(3, 10).to_bytes()
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(256))]
        /// Random corruptions of a segment file: the checksum refuses
        /// every one; and the decoder behind it, handed corrupted payloads
        /// re-framed with a valid checksum (what a checksum collision or a
        /// hostile file would give it), refuses or decodes them, never
        /// panics or allocates without bound.
        #[test]
        fn a_corrupted_segment_is_refused_never_a_panic(
            damages in proptest::collection::vec(damage(), 1..6),
            reframe in proptest::bool::ANY,
        ) {
            let good = sample_segment();
            let mut bytes = good.clone();
            if reframe {
                // Damage the payload only, then frame it again.
                let payload_end = bytes.len() - 4;
                let mut payload = bytes[8..payload_end].to_vec();
                for d in &damages {
                    apply(&mut payload, d);
                }
                bytes = crate::codec::frame_with(
                    crate::codec::Checksum::Crc32,
                    SEGMENT_MAGIC,
                    SEGMENT_VERSION,
                    &payload,
                );
                let _ = Segment::from_bytes(&Bytes::from(bytes));
            } else {
                for d in &damages {
                    apply(&mut bytes, d);
                }
                if bytes != good {
                    proptest::prop_assert!(Segment::from_bytes(&Bytes::from(bytes)).is_err());
                }
            }
        }
    }
}
