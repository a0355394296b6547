//! Index stage: the persistent, incremental store of segments and the
//! snapshots searches run on.
//!
//! Owns: the cache directory (via `store`), segment files (via `segment`),
//! the file table (the winning row per path), chunk liveness, the merge
//! policy and the published `Snapshot`.
//! Invariants: readers never wait for the writer: `snapshot()` is a lock-free
//! load of an immutable `Arc<Snapshot>`, and an update builds the next
//! snapshot before swapping it in. Only the holder of the cache's advisory
//! lock writes; others answer from the last committed manifest. A corrupt,
//! truncated or old-version cache is rebuilt, never served.
//! Never: search ranking, protocol types, printing (notes go to `notes()`).

mod embed_text;
mod follow;
mod private;
pub mod segment;
pub mod store;

pub use embed_text::chunk_text;
pub use follow::CatchUp;

use crate::chunk::{chunk_file, Chunk, Language};
use crate::confine::{self, Refusal};
use crate::dense::vectors::VectorIndex;
use crate::dense::DenseEngine;
use crate::dense::DenseTier;
use crate::layout::Layout;
use crate::lexical::{Bm25Config, CorpusStats};
use crate::walk::{self, WalkEntry};
use arc_swap::{ArcSwap, ArcSwapOption};
use rustc_hash::FxHashMap;
use segment::{ChunkRecord, FileRow, FileState, ParsedFile, Segment, SegmentBuilder, SkipReason};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use store::Manifest;
use thiserror::Error;

/// Default largest file indexed.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 1024 * 1024;
/// Bytes inspected for a NUL to call a file binary.
const BINARY_SNIFF_BYTES: usize = 8 * 1024;
/// A line longer than this is a long line (minified code, a data URI).
const MINIFIED_MAX_LINE: usize = 4096;
/// A file whose long lines hold more than this share of its bytes is
/// minified / generated; a hand-written file with one long line (a data
/// URI, an embedded table) is indexed.
const MINIFIED_LONG_SHARE: f64 = 0.8;
/// Files whose average line is longer than this are minified.
const MINIFIED_AVG_LINE: usize = 300;
/// At most this many segments before the newest ones are merged.
const MAX_SEGMENTS: usize = 8;
/// The oldest segments left alone by a partial merge.
const KEPT_SEGMENTS: usize = 3;
/// A full merge happens when this fraction of stored chunks is dead.
const MAX_DEAD_FRACTION: f64 = 0.3;
/// Updates with fewer bytes than this are parsed on the calling thread.
const PARALLEL_MIN_BYTES: u64 = 256 * 1024;

#[derive(Debug, Error)]
pub enum IndexError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("workspace root {0} is not a directory")]
    NotADirectory(PathBuf),
    #[error("{path}: {reason}")]
    Vectors { path: PathBuf, reason: String },
    /// `Index::stop` was called (a server shutting down): the update was
    /// abandoned before its commit, so the committed index is unchanged.
    #[error("stopped before the update was committed")]
    Stopped,
}

fn vector_err(dir: &Path, err: crate::dense::vectors::VectorError) -> IndexError {
    IndexError::Vectors {
        path: dir.to_path_buf(),
        reason: err.to_string(),
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> IndexError + '_ {
    move |source| IndexError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Unsaved editor texts by root-relative path, indexed in place of the disk.
type Buffers = rustc_hash::FxHashMap<String, String>;

/// The modification time recorded for a file indexed from an editor buffer.
pub const BUFFER_MTIME: u64 = 0;

#[derive(Clone, Debug)]
pub struct IndexConfig {
    pub root: PathBuf,
    /// `None`: the per-user cache directory for this root.
    pub cache_dir: Option<PathBuf>,
    pub max_file_size: u64,
    pub bm25: Bm25Config,
}

impl IndexConfig {
    pub fn new(root: impl Into<PathBuf>) -> IndexConfig {
        IndexConfig {
            root: root.into(),
            cache_dir: None,
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            bm25: Bm25Config::default(),
        }
    }
}

/// Counts describing the index contents.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Summary {
    pub files_indexed: u64,
    pub chunks: u64,
    pub segments: u64,
    pub skipped: BTreeMap<&'static str, u64>,
    pub languages: BTreeMap<&'static str, u64>,
}

/// What one update did. Tests use these counters to prove incrementality.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct UpdateStats {
    /// False when another process holds the writer lock.
    pub wrote: bool,
    pub files_scanned: u64,
    pub files_unchanged: u64,
    /// Files read and hashed because size or mtime changed.
    pub files_hashed: u64,
    /// Files chunked and re-indexed.
    pub files_reparsed: u64,
    pub files_added: u64,
    pub files_removed: u64,
    pub files_skipped: u64,
    pub chunks_added: u64,
    pub chunks_removed: u64,
    pub segments_written: u64,
    pub segments_merged: u64,
    pub unsupported: u64,
    pub symlinks_skipped: u64,
    pub walk_errors: u64,
    /// In a process that does not hold the writer lock: files whose
    /// metadata differs from the committed index (changed, new or
    /// deleted since the writer last committed). Nothing is written.
    pub files_behind: u64,
    pub elapsed_ms: f64,
}

/// Progress of a long update, for progress bars.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub done: u64,
    pub total: u64,
}

/// An immutable view of the index. Cheap to clone (an `Arc`).
pub struct Snapshot {
    pub root: PathBuf,
    pub segments: Vec<Arc<Segment>>,
    dead: Arc<Vec<u64>>,
    pub stats: CorpusStats,
    pub summary: Summary,
    pub bm25: Bm25Config,
    /// The workspace's transformer vectors, shared by every snapshot: adds
    /// and removes land in place, so results are filtered by this
    /// snapshot's liveness.
    pub vectors: Option<Arc<VectorIndex>>,
    /// The static tier's vectors (see `quarry_encoder::static_tier`), the same way.
    pub static_vectors: Option<Arc<VectorIndex>>,
    /// Folder-layout facts of the indexed files (superseded copies).
    pub layout: Arc<Layout>,
    /// Document frequencies counted over a larger corpus than `segments`
    /// (a hub's candidate snapshot holds a few files of a repository whose
    /// statistics are the whole repository's); `None`: count the segments.
    pub term_df: Option<Arc<FxHashMap<String, u64>>>,
}

impl Snapshot {
    /// A snapshot of segments built apart from any workspace index (a hub
    /// query's candidate files), with the corpus statistics and document
    /// frequencies of the corpus they were drawn from. Chunk ids must not
    /// overlap between segments.
    pub fn assemble(
        root: PathBuf,
        segments: Vec<Arc<Segment>>,
        stats: CorpusStats,
        term_df: FxHashMap<String, u64>,
        vectors: Option<Arc<VectorIndex>>,
        layout: Arc<Layout>,
    ) -> Snapshot {
        let mut summary = Summary {
            segments: segments.len() as u64,
            ..Summary::default()
        };
        for segment in &segments {
            summary.chunks += segment.chunks.len() as u64;
            summary.files_indexed += segment.paths.len() as u64;
        }
        Snapshot {
            root,
            segments,
            dead: Arc::new(Vec::new()),
            stats,
            summary,
            bm25: Bm25Config::default(),
            vectors,
            static_vectors: None,
            layout,
            term_df: Some(Arc::new(term_df)),
        }
    }

    /// Documents holding `term`: from `term_df` when the snapshot carries
    /// its corpus's counts, else over every segment.
    pub fn df(&self, term: &str) -> u64 {
        if let Some(counts) = &self.term_df {
            return counts.get(term).copied().unwrap_or(0);
        }
        self.segments
            .iter()
            .filter_map(|s| {
                s.lexical
                    .term_ordinal(term)
                    .map(|ord| u64::from(s.lexical.df(ord)))
            })
            .sum()
    }

    /// Embedded chunks and live chunks. The first can lag or lead by a few
    /// while an update races the embedder.
    pub fn coverage(&self) -> (u64, u64) {
        self.coverage_of(DenseTier::Transformer)
    }

    /// `coverage` for one tier's vectors.
    pub fn coverage_of(&self, tier: DenseTier) -> (u64, u64) {
        let total = self.summary.chunks;
        let embedded = self.vectors_of(tier).map_or(0, |v| v.len() as u64);
        (embedded.min(total), total)
    }

    /// One tier's vectors.
    pub fn vectors_of(&self, tier: DenseTier) -> Option<&Arc<VectorIndex>> {
        match tier {
            DenseTier::Transformer => self.vectors.as_ref(),
            DenseTier::Static => self.static_vectors.as_ref(),
        }
    }

    pub fn is_live(&self, chunk_id: u32) -> bool {
        !bit(&self.dead, chunk_id)
    }

    /// The segment and record of a chunk id.
    pub fn chunk(&self, chunk_id: u32) -> Option<(&Segment, &ChunkRecord)> {
        // Few segments (the merge policy keeps them under ten): scan ranges.
        self.segments.iter().find_map(|segment| {
            let (first, last) = (segment.first_chunk_id()?, segment.last_chunk_id()?);
            if chunk_id < first || chunk_id > last {
                return None;
            }
            let pos = segment.position(chunk_id)?;
            Some((&**segment, &segment.chunks[pos]))
        })
    }

    /// Every live chunk, segment by segment.
    pub fn live_chunks(&self) -> impl Iterator<Item = (&Segment, &ChunkRecord)> {
        self.segments.iter().flat_map(move |segment| {
            segment
                .chunks
                .iter()
                .filter(move |c| self.is_live(c.chunk_id))
                .map(move |c| (&**segment, c))
        })
    }
}

fn bit(bits: &[u64], id: u32) -> bool {
    bits.get(id as usize / 64)
        .is_some_and(|word| word & (1 << (id % 64)) != 0)
}

fn set_bit(bits: &mut Vec<u64>, id: u32) {
    let word = id as usize / 64;
    if bits.len() <= word {
        bits.resize(word + 1, 0);
    }
    bits[word] |= 1 << (id % 64);
}

/// Mutable state, owned by whoever updates the index.
struct WriterState {
    manifest: Manifest,
    segments: Vec<Arc<Segment>>,
    /// The winning row of every present path.
    files: FxHashMap<String, FileRow>,
    dead: Vec<u64>,
    n_dead: u64,
    n_stored: u64,
    /// The layout of `files`, kept while the set of indexed paths stays
    /// the same (an edit), read again when it changes (`None`).
    layout: Option<Arc<Layout>>,
}

/// A workspace index: the committed segments plus the writer lock, if held.
pub struct Index {
    root: PathBuf,
    cache_dir: PathBuf,
    config: IndexConfig,
    /// The writer lock while this process holds it (`follow` may take it
    /// later, when the writer exits).
    lock: Mutex<Option<File>>,
    writer: Mutex<WriterState>,
    current: ArcSwap<Snapshot>,
    vectors: ArcSwapOption<VectorIndex>,
    static_vectors: ArcSwapOption<VectorIndex>,
    notes: Mutex<Vec<String>>,
    /// `embed_pending` leaves saving the vector index to `save_vectors`.
    defer_vector_saves: std::sync::atomic::AtomicBool,
    /// Set by `stop`: updates end before their commit.
    stopped: std::sync::atomic::AtomicBool,
    /// Vectors were added since the vector index was last saved.
    vectors_dirty: std::sync::atomic::AtomicBool,
    /// The editors' texts indexed by `update_buffers`, by path: the chunks
    /// of a buffer row are embedded from here (the file on disk differs).
    buffer_texts: Mutex<FxHashMap<String, Arc<str>>>,
    /// A reader's own buffers and saves (`private`).
    private: Mutex<private::Private>,
}

/// What one `embed_pending` call did.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct EmbedStats {
    /// Live chunks without a vector before the call.
    pub pending: u64,
    /// Chunks given a vector.
    pub embedded: u64,
    pub from_cache: u64,
    pub computed: u64,
    /// Chunks skipped because their file changed since it was indexed.
    pub stale: u64,
    pub remaining: u64,
    pub elapsed_ms: f64,
    /// Why embedding stopped early, if it did.
    pub error: Option<String>,
}

/// Chunks embedded per group: texts are read and vectors stored per group.
const EMBED_GROUP: usize = 256;

/// Which pending chunks an embedding call takes, and how.
struct EmbedWork<'a> {
    /// Paths whose chunks go first.
    priority: &'a [String],
    /// Only the `priority` paths' chunks.
    only_priority: bool,
    limit: Option<usize>,
    /// Only vectors the cache has; never run the model.
    cached_only: bool,
}

impl Index {
    /// Opens (or creates) the index of `config.root`, loading the committed
    /// cache. Takes the writer lock when no other process holds it.
    pub fn open(config: IndexConfig) -> Result<Index, IndexError> {
        let root = std::fs::canonicalize(&config.root).map_err(io_err(&config.root))?;
        if !root.is_dir() {
            return Err(IndexError::NotADirectory(root));
        }
        let cache_dir = config
            .cache_dir
            .clone()
            .unwrap_or_else(|| store::default_cache_dir(&root));
        std::fs::create_dir_all(&cache_dir).map_err(io_err(&cache_dir))?;
        let cache_dir = std::fs::canonicalize(&cache_dir).map_err(io_err(&cache_dir))?;
        let lock = store::try_lock(&cache_dir).map_err(io_err(&cache_dir))?;
        let mut notes = Vec::new();
        let root_str = root.to_string_lossy().into_owned();
        let state = match load(&cache_dir, &root_str, lock.is_some(), &[]) {
            Ok(Some(state)) => Some(state),
            Ok(None) => None,
            Err(reason) => {
                notes.push(format!(
                    "cache at {} is unusable ({reason}); rebuilding the index",
                    cache_dir.display()
                ));
                None
            }
        };
        let mut state = state.unwrap_or_else(|| {
            // A new index hands out chunk ids from zero: vectors saved
            // under the old ids would name other chunks.
            if lock.is_some() {
                crate::dense::vectors::remove_files(&cache_dir);
            }
            empty_state(&root_str)
        });
        if lock.is_some() {
            store::collect_garbage(&cache_dir, &state.manifest, Segment::file_name);
        }
        let snapshot = make_snapshot(&root, &mut state, &config.bm25, None);
        Ok(Index {
            root,
            cache_dir,
            config,
            lock: Mutex::new(lock),
            writer: Mutex::new(state),
            current: ArcSwap::from_pointee(snapshot),
            vectors: ArcSwapOption::empty(),
            static_vectors: ArcSwapOption::empty(),
            notes: Mutex::new(notes),
            defer_vector_saves: std::sync::atomic::AtomicBool::new(false),
            stopped: std::sync::atomic::AtomicBool::new(false),
            vectors_dirty: std::sync::atomic::AtomicBool::new(false),
            buffer_texts: Mutex::new(FxHashMap::default()),
            private: Mutex::new(private::Private::default()),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The most bytes of one file that are read (`--max-file-size`).
    pub fn max_file_size(&self) -> u64 {
        self.config.max_file_size
    }

    pub fn cache_dir(&self) -> &Path {
        &self.cache_dir
    }

    /// Whether some process saved `tier`'s vector index in this index's
    /// cache (it may still be for another model: `attach_dense` checks).
    pub fn has_saved_vectors(&self, tier: DenseTier) -> bool {
        let meta = match tier {
            DenseTier::Transformer => crate::dense::vectors::VECTORS_META_FILE,
            DenseTier::Static => crate::dense::vectors::STATIC_VECTORS_META_FILE,
        };
        self.cache_dir.join(meta).is_file()
    }

    /// True when this process holds the writer lock.
    pub fn is_writer(&self) -> bool {
        self.lock
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// The current snapshot. Never blocks.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Messages worth showing a user once (a rebuilt cache, a read-only open).
    fn note(&self, note: String) {
        self.notes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(note);
    }

    /// Abandons any running and later update (a walk, chunking) before its
    /// commit: a server shutting down while its first walk of a huge root
    /// runs answers `shutdown` at once. Searches keep working.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }

    fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    pub fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut *self.notes.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Walks the workspace and brings the index up to date with the disk.
    pub fn refresh(&self, progress: &(dyn Fn(Progress) + Sync)) -> Result<UpdateStats, IndexError> {
        let started = Instant::now();
        // A reader serves the newest commit, or writes if the writer left.
        self.catch_up()?;
        let mut stats = UpdateStats::default();
        let exclude = self
            .cache_dir
            .starts_with(&self.root)
            .then_some(self.cache_dir.as_path());
        let outcome = walk::walk(&self.root, exclude, &self.stopped);
        if self.is_stopped() {
            return Err(IndexError::Stopped);
        }
        stats.unsupported = outcome.n_unsupported;
        stats.symlinks_skipped = outcome.n_symlinks_skipped + outcome.n_bad_paths;
        stats.walk_errors = outcome.errors.len() as u64;
        let mut state = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let mut present: rustc_hash::FxHashSet<&str> = Default::default();
        let mut changed = Vec::new();
        for entry in &outcome.files {
            present.insert(&entry.rel_path);
            let now = walk::FileStat {
                size: entry.size,
                mtime_ns: entry.mtime_ns,
                stamp: entry.stamp,
            };
            match state.files.get(&entry.rel_path) {
                Some(row) if now.same_as(row.size, row.mtime_ns, row.stamp) => {
                    stats.files_unchanged += 1;
                }
                _ => changed.push(entry.clone()),
            }
        }
        let removed: Vec<String> = state
            .files
            .keys()
            .filter(|path| !present.contains(path.as_str()))
            .cloned()
            .collect();
        stats.files_scanned = outcome.files.len() as u64;
        drop(present);
        if !self.is_writer() {
            // Another process writes: this one only says how far behind
            // the committed index the files are (a racily clean row, or a
            // file touched without a change, is compared by its hash).
            let differs = |entry: &walk::WalkEntry| {
                let Some(row) = state.files.get(&entry.rel_path) else {
                    return true;
                };
                if row.size != entry.size {
                    return true;
                }
                // Too large either way: the writer would skip it again.
                entry.size <= self.config.max_file_size
                    && confine::read(&self.root, &entry.abs_path, self.config.max_file_size)
                        .map_or(true, |bytes| *blake3::hash(&bytes).as_bytes() != row.hash)
            };
            let behind = changed.iter().filter(|entry| differs(entry)).count();
            stats.files_behind = (behind + removed.len()) as u64;
            stats.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
            return Ok(stats);
        }
        self.apply(
            &mut state,
            changed,
            removed,
            &Buffers::default(),
            &mut stats,
            progress,
        )?;
        stats.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        Ok(stats)
    }

    /// The walk's rules for single paths (`walk::Admission`), the cache
    /// directory left out when it lives inside the root.
    fn admission(&self) -> walk::Admission {
        let exclude = self
            .cache_dir
            .starts_with(&self.root)
            .then_some(self.cache_dir.as_path());
        walk::Admission::new(&self.root, exclude)
    }

    /// `path` (absolute or root-relative) as an absolute path and its
    /// root-relative form, or `None` outside the root.
    fn locate(&self, path: &Path) -> Option<(PathBuf, String)> {
        let abs_path = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.root.join(path)
        };
        let rel_path = walk::relative_path(&self.root, &abs_path)?;
        Some((abs_path, rel_path))
    }

    /// Re-examines just these paths (absolute or root-relative), e.g. after
    /// an editor saved them. Missing files are removed from the index.
    pub fn update_paths(&self, paths: &[PathBuf]) -> Result<UpdateStats, IndexError> {
        let started = Instant::now();
        let mut stats = UpdateStats::default();
        self.catch_up()?;
        if !self.is_writer() {
            // The writer indexes them too; until it commits, this process
            // answers for them from its private segment.
            self.note_private_paths(paths, &mut stats);
            stats.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
            return Ok(stats);
        }
        let mut state = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let mut changed = Vec::new();
        let mut removed = Vec::new();
        let mut admission = self.admission();
        for path in paths {
            let Some((abs_path, rel_path)) = self.locate(path) else {
                continue;
            };
            stats.files_scanned += 1;
            // The walk's rules: a file it would not list (hidden, ignored,
            // in the cache) never enters through a save or the watcher.
            if !admission.admits(&rel_path) {
                if state.files.contains_key(&rel_path) {
                    removed.push(rel_path);
                }
                continue;
            }
            let language = crate::chunk::detect_language(Path::new(&rel_path));
            // The one confinement check: a symlink (or a symlinked folder)
            // leading out of the root, a FIFO or a device is never read.
            let checked = confine::check(&self.root, &abs_path)
                .and_then(|real| walk::stat(&real).map_err(|e| Refusal::Unreadable(e.to_string())));
            match (checked, language) {
                (Ok(now), Some(language)) => match state.files.get(&rel_path) {
                    Some(row) if now.same_as(row.size, row.mtime_ns, row.stamp) => {
                        stats.files_unchanged += 1;
                    }
                    _ => changed.push(WalkEntry {
                        rel_path,
                        abs_path,
                        language,
                        size: now.size,
                        mtime_ns: now.mtime_ns,
                        stamp: now.stamp,
                    }),
                },
                (checked, _) => {
                    if state.files.contains_key(&rel_path) {
                        if let Err(refusal @ (Refusal::Outside(_) | Refusal::NotRegular(_))) =
                            &checked
                        {
                            self.note(format!("removed {rel_path} from the index: {refusal}"));
                        }
                        removed.push(rel_path);
                    }
                }
            }
        }
        self.apply(
            &mut state,
            changed,
            removed,
            &Buffers::default(),
            &mut stats,
            &|_| {},
        )?;
        stats.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        Ok(stats)
    }

    /// Indexes editors' unsaved texts in place of the files on disk: each
    /// `(path, text)` is chunked and indexed as if the file held `text`.
    /// Its row records modification time 0 (`BUFFER_MTIME`), which no file
    /// on disk has, so the next `update_paths` or `refresh` of that path
    /// reads the disk again (and keeps the chunks if the text is the same).
    /// Paths outside the root or of no known language are ignored. A
    /// reader keeps them in its private segment instead (`private`): pass
    /// every dirty buffer each time, an empty list included.
    pub fn update_buffers(&self, buffers: &[(PathBuf, String)]) -> Result<UpdateStats, IndexError> {
        let started = Instant::now();
        let mut stats = UpdateStats::default();
        let mut admitted = Vec::new();
        let mut admission = self.admission();
        for (path, text) in buffers {
            let Some((abs_path, rel_path)) = self.locate(path) else {
                continue;
            };
            // An open buffer of a file the walk leaves out (`.npmrc`, an
            // ignored folder) is never indexed.
            if !admission.admits(&rel_path) {
                continue;
            }
            // A buffer may be a new file, but never one that resolves
            // outside the root or to a special file.
            if let Err(refusal) = confine::check_new(&self.root, &abs_path) {
                self.note(format!("not indexing the buffer of {rel_path}: {refusal}"));
                continue;
            }
            let Some(language) = crate::chunk::detect_language(Path::new(&rel_path)) else {
                continue;
            };
            stats.files_scanned += 1;
            admitted.push((abs_path, rel_path, language, text));
        }
        if !self.is_writer() {
            let own = admitted
                .into_iter()
                .map(|(_, rel_path, _, text)| (rel_path, text.clone()))
                .collect();
            self.set_private_buffers(own);
            stats.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
            return Ok(stats);
        }
        let mut state = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let mut changed = Vec::new();
        let mut texts = Buffers::default();
        for (abs_path, rel_path, language, text) in admitted {
            changed.push(WalkEntry {
                rel_path: rel_path.clone(),
                abs_path,
                language,
                size: text.len() as u64,
                mtime_ns: BUFFER_MTIME,
                stamp: 0,
            });
            texts.insert(rel_path, text.clone());
        }
        {
            let mut kept = self.buffer_texts.lock().unwrap_or_else(|e| e.into_inner());
            for (path, text) in &texts {
                kept.insert(path.clone(), Arc::from(text.as_str()));
            }
        }
        self.apply(&mut state, changed, Vec::new(), &texts, &mut stats, &|_| {})?;
        stats.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        Ok(stats)
    }

    /// Parses changed files into new segments, commits them and publishes
    /// the next snapshot.
    fn apply(
        &self,
        state: &mut WriterState,
        changed: Vec<WalkEntry>,
        removed: Vec<String>,
        buffers: &Buffers,
        stats: &mut UpdateStats,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<(), IndexError> {
        if changed.is_empty() && removed.is_empty() {
            return Ok(());
        }
        let builders = self.build(state, &changed, buffers, stats, progress);
        if self.is_stopped() {
            return Err(IndexError::Stopped);
        }
        let mut manifest = state.manifest.clone();
        // Ids are handed out in order; freezing and writing run in parallel.
        let mut plan = Vec::with_capacity(builders.len());
        let n_builders = builders.len();
        for (i, mut builder) in builders.into_iter().enumerate() {
            if i + 1 == n_builders {
                for path in &removed {
                    builder.add_row(FileRow {
                        path: path.clone(),
                        size: 0,
                        mtime_ns: 0,
                        stamp: 0,
                        hash: [0; 32],
                        state: FileState::Deleted,
                    });
                }
            }
            if builder.n_rows() == 0 {
                continue;
            }
            let n_chunks = builder.n_chunks() as u32;
            plan.push((builder, manifest.next_segment_id, manifest.next_chunk_id));
            manifest.next_segment_id += 1;
            manifest.next_chunk_id += n_chunks;
        }
        let freeze = |(builder, id, first_chunk_id): (SegmentBuilder, u64, u32)| {
            let segment = builder.finish(id, first_chunk_id);
            self.write_segment(&segment).map(|()| Arc::new(segment))
        };
        let new_segments: Vec<Arc<Segment>> = if plan.len() == 1 {
            plan.into_iter().map(freeze).collect::<Result<_, _>>()?
        } else {
            use rayon::prelude::*;
            plan.into_par_iter().map(freeze).collect::<Result<_, _>>()?
        };
        if new_segments.is_empty() && removed.is_empty() {
            // Every file was hashed again and found unchanged.
            return Ok(());
        }
        stats.files_removed = removed.len() as u64;
        stats.segments_written += new_segments.len() as u64;
        // Apply rows in order: the newest row of a path wins.
        let mut killed = Vec::new();
        for segment in &new_segments {
            stats.chunks_added += segment.chunks.len() as u64;
            state.n_stored += segment.chunks.len() as u64;
            manifest.segment_ids.push(segment.id);
            state.segments.push(segment.clone());
            for row in &segment.rows {
                apply_row(state, row, &mut killed);
            }
        }
        stats.chunks_removed = killed.len() as u64;
        for slot in [&self.vectors, &self.static_vectors] {
            if let Some(vectors) = slot.load_full() {
                vectors.remove(&killed);
            }
        }
        if let Some(merged) = self.merge_if_needed(state, &mut manifest, stats)? {
            state.segments.retain(|s| !merged.replaced.contains(&s.id));
            let position = state.segments.partition_point(|s| s.id < merged.segment.id);
            state.segments.insert(position, merged.segment);
        }
        manifest.segment_ids = state.segments.iter().map(|s| s.id).collect();
        let manifest_bytes = manifest.to_bytes();
        crate::cachefile::write_atomic(&self.cache_dir, store::MANIFEST_FILE, &manifest_bytes)
            .map_err(io_err(&self.cache_dir.join(store::MANIFEST_FILE)))?;
        state.manifest = manifest;
        store::collect_garbage(&self.cache_dir, &state.manifest, Segment::file_name);
        stats.wrote = true;
        self.publish(state);
        Ok(())
    }

    fn publish(&self, state: &mut WriterState) {
        let mut snapshot = make_snapshot(
            &self.root,
            state,
            &self.config.bm25,
            self.vectors.load_full(),
        );
        snapshot.static_vectors = self.static_vectors.load_full();
        if !self.is_writer() {
            self.overlay_private(state, &mut snapshot);
        }
        self.current.store(Arc::new(snapshot));
    }

    /// Above every chunk id the committed manifest has handed out.
    fn id_bound(&self) -> u32 {
        let state = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        state.manifest.next_chunk_id
    }

    /// Where one tier's vectors are kept.
    fn slot(&self, tier: DenseTier) -> &ArcSwapOption<VectorIndex> {
        match tier {
            DenseTier::Transformer => &self.vectors,
            DenseTier::Static => &self.static_vectors,
        }
    }

    /// Opens the vector index for `engine`'s model (or starts an empty one)
    /// and publishes it with the next snapshot. A no-op without a model.
    pub fn attach_dense(&self, engine: &DenseEngine) -> Result<(), IndexError> {
        let Some(model_id) = engine.model_id() else {
            return Ok(());
        };
        let slot = self.slot(engine.tier());
        if slot
            .load()
            .as_ref()
            .is_some_and(|v| v.model_id() == model_id)
        {
            return Ok(());
        }
        let dim = engine.dim();
        let id_bound = self.id_bound();
        let opened =
            match VectorIndex::open(&self.cache_dir, model_id, dim, self.is_writer(), id_bound) {
                Err(crate::dense::vectors::VectorError::Corrupt(why)) => {
                    // Never handed to usearch: refilled from the shared
                    // vector cache (the next save replaces the file).
                    self.note(format!("{why}; rebuilding the vector index"));
                    None
                }
                opened => opened.map_err(|e| vector_err(&self.cache_dir, e))?,
            };
        let vectors = match opened {
            Some(vectors) => vectors,
            None => VectorIndex::new(model_id, dim).map_err(|e| vector_err(&self.cache_dir, e))?,
        };
        slot.store(Some(Arc::new(vectors)));
        let mut state = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        self.publish(&mut state);
        Ok(())
    }

    /// Embeds live chunks that have no vector yet, most recently changed
    /// files first (`priority` paths before everything), at most `limit`
    /// chunks. Lexical search keeps answering meanwhile: the writer lock is
    /// only held to list the work. Saves the vector index at the end.
    pub fn embed_pending(
        &self,
        engine: &DenseEngine,
        priority: &[String],
        limit: Option<usize>,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<EmbedStats, IndexError> {
        self.embed_work(
            engine,
            EmbedWork {
                priority,
                only_priority: false,
                limit,
                cached_only: false,
            },
            progress,
        )
    }

    /// Gives the live chunks of `paths` that lack a vector the vectors the
    /// machine-wide cache already has for their text, without running the
    /// model: after an edit, every chunk whose text did not change has its
    /// vector again within milliseconds. Chunks the cache lacks stay
    /// pending for `embed_pending`.
    pub fn fill_from_cache(
        &self,
        engine: &DenseEngine,
        paths: &[String],
    ) -> Result<EmbedStats, IndexError> {
        self.embed_named(engine, paths, true)
    }

    /// Embeds the live chunks of `paths` that lack a vector, running the
    /// model: for an engine fast enough to run inside an update (the
    /// static tier), so edited code is semantically searchable at once.
    pub fn embed_paths(
        &self,
        engine: &DenseEngine,
        paths: &[String],
    ) -> Result<EmbedStats, IndexError> {
        self.embed_named(engine, paths, false)
    }

    /// Every live chunk of `paths` that lacks a vector, and nothing else
    /// (no walk over the workspace's chunks); `cached_only` never runs the
    /// model.
    fn embed_named(
        &self,
        engine: &DenseEngine,
        paths: &[String],
        cached_only: bool,
    ) -> Result<EmbedStats, IndexError> {
        if paths.is_empty() {
            return Ok(EmbedStats::default());
        }
        self.embed_work(
            engine,
            EmbedWork {
                priority: paths,
                only_priority: true,
                limit: None,
                cached_only,
            },
            &|_| {},
        )
    }

    /// The text of `path` as indexed: the editor's buffer for a buffer row
    /// (if its hash still matches), else the file if it has not changed
    /// since (same modification time).
    fn indexed_text(&self, path: &str, row: Option<&FileRow>) -> Option<String> {
        let row = row?;
        if row.mtime_ns == BUFFER_MTIME {
            let text = self
                .buffer_texts
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(path)
                .cloned()?;
            return (*blake3::hash(text.as_bytes()).as_bytes() == row.hash)
                .then(|| text.to_string());
        }
        // One confined open; the open file says whether it changed since.
        let mut file = confine::open(&self.root, Path::new(path)).ok()?;
        let meta = file.metadata().ok()?;
        if walk::mtime_ns(&meta) != row.mtime_ns || meta.len() != row.size {
            return None;
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut file, &mut bytes).ok()?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn embed_work(
        &self,
        engine: &DenseEngine,
        request: EmbedWork<'_>,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<EmbedStats, IndexError> {
        let started = Instant::now();
        let mut stats = EmbedStats::default();
        self.attach_dense(engine)?;
        let Some(vectors) = self.slot(engine.tier()).load_full() else {
            stats.error = engine.unavailable_reason().map(str::to_string);
            return Ok(stats);
        };
        if !self.is_writer() {
            return Ok(stats);
        }
        let snapshot = self.snapshot();
        // (priority, mtime, path, chunk id), best first; the file rows as
        // they were when the work was listed.
        let mut work: Vec<(bool, u64, &str, u32)> = Vec::new();
        if request.only_priority {
            // Just the named files' chunks, from their rows: an editor's
            // update never walks every chunk of the workspace.
            let state = self.writer.lock().unwrap_or_else(|e| e.into_inner());
            for path in request.priority {
                if let Some(FileRow {
                    state: FileState::Indexed { chunk_ids, .. },
                    ..
                }) = state.files.get(path.as_str())
                {
                    work.extend(
                        chunk_ids
                            .iter()
                            .filter(|id| snapshot.is_live(**id) && !vectors.contains(**id))
                            .map(|id| (true, 0, path.as_str(), *id)),
                    );
                }
            }
        } else {
            for (segment, chunk) in snapshot.live_chunks() {
                if vectors.contains(chunk.chunk_id) {
                    continue;
                }
                let path = segment.path_of(chunk);
                let first = request.priority.iter().any(|p| p == path);
                work.push((first, 0, path, chunk.chunk_id));
            }
        }
        // The writer lock only for the rows of the files with work: an
        // update waits microseconds, not a walk over every chunk.
        let mut rows: FxHashMap<&str, Option<FileRow>> = FxHashMap::default();
        {
            let state = self.writer.lock().unwrap_or_else(|e| e.into_inner());
            for item in &mut work {
                let row = rows
                    .entry(item.2)
                    .or_insert_with(|| state.files.get(item.2).cloned());
                item.1 = row.as_ref().map_or(0, |row| row.mtime_ns);
            }
            // Forget buffer texts no row needs any more.
            self.buffer_texts
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|path, _| {
                    state
                        .files
                        .get(path.as_str())
                        .is_some_and(|row| row.mtime_ns == BUFFER_MTIME)
                });
        }
        stats.pending = work.len() as u64;
        work.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then(b.1.cmp(&a.1))
                .then(a.2.cmp(b.2))
                .then(a.3.cmp(&b.3))
        });
        work.truncate(request.limit.unwrap_or(usize::MAX));
        let total = work.len() as u64;
        let budget = engine.config().token_budget;
        let mut files: FxHashMap<&str, Option<String>> = FxHashMap::default();
        for group in work.chunks(EMBED_GROUP) {
            let mut ids = Vec::with_capacity(group.len());
            let mut texts = Vec::with_capacity(group.len());
            for (_, _, path, chunk_id) in group {
                let file = files.entry(path).or_insert_with(|| {
                    self.indexed_text(path, rows.get(path).and_then(Option::as_ref))
                });
                let found = snapshot
                    .chunk(*chunk_id)
                    .and_then(|(segment, _)| Some((segment, segment.position(*chunk_id)?)));
                let (Some(file), Some((segment, position))) = (file.as_deref(), found) else {
                    stats.stale += 1;
                    continue;
                };
                ids.push(*chunk_id);
                texts.push(chunk_text(segment, position, file, budget));
            }
            if files.len() > 64 {
                files.clear();
            }
            let embedded = if request.cached_only {
                engine.cached_vectors(&texts).map(|found| {
                    let n = found.iter().filter(|v| v.is_some()).count();
                    let counts = crate::dense::EmbedCounts {
                        from_cache: n,
                        computed: 0,
                    };
                    (found, counts)
                })
            } else {
                engine
                    .embed_texts(&texts)
                    .map(|(found, counts)| (found.into_iter().map(Some).collect(), counts))
            };
            match embedded {
                Ok((vectors_out, counts)) => {
                    let entries: Vec<(u32, &[f32])> = ids
                        .iter()
                        .zip(&vectors_out)
                        .filter_map(|(id, v)| Some((*id, v.as_ref()?.as_slice())))
                        .collect();
                    vectors
                        .add(&entries)
                        .map_err(|e| vector_err(&self.cache_dir, e))?;
                    // An update may have killed some of these chunks while
                    // they were embedded; updates remove vectors under the
                    // writer lock, so checking under it leaves no straggler
                    // to inflate the coverage.
                    let died: Vec<u32> = {
                        let state = self.writer.lock().unwrap_or_else(|e| e.into_inner());
                        entries
                            .iter()
                            .map(|(id, _)| *id)
                            .filter(|id| bit(&state.dead, *id))
                            .collect()
                    };
                    vectors.remove(&died);
                    stats.embedded += (entries.len() - died.len()) as u64;
                    stats.stale += died.len() as u64;
                    stats.from_cache += counts.from_cache as u64;
                    stats.computed += counts.computed as u64;
                }
                Err(reason) => {
                    stats.error = Some(reason);
                    break;
                }
            }
            progress(Progress {
                done: stats.embedded + stats.stale,
                total,
            });
        }
        stats.remaining = stats.pending - stats.embedded;
        if stats.embedded > 0 {
            self.vectors_dirty.store(true, Ordering::Release);
            if !self.defer_vector_saves.load(Ordering::Acquire) {
                self.save_vectors()?;
            }
        }
        stats.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        Ok(stats)
    }

    /// With `on`, `embed_pending` stops saving the vector index after each
    /// call; the owner calls `save_vectors` when it suits (a long-running
    /// server after big rounds and at shutdown). Nothing is lost meanwhile
    /// that matters: vectors also live in the machine-wide vector cache, so
    /// a restart re-attaches them without recomputing.
    pub fn defer_vector_saves(&self, on: bool) {
        self.defer_vector_saves.store(on, Ordering::Release);
    }

    /// Saves the vector index if vectors were added since the last save.
    pub fn save_vectors(&self) -> Result<(), IndexError> {
        if !self.vectors_dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        for slot in [&self.vectors, &self.static_vectors] {
            if let Some(vectors) = slot.load_full() {
                if let Err(e) = vectors.save(&self.cache_dir, self.id_bound()) {
                    self.vectors_dirty.store(true, Ordering::Release);
                    return Err(vector_err(&self.cache_dir, e));
                }
            }
        }
        Ok(())
    }

    fn write_segment(&self, segment: &Segment) -> Result<(), IndexError> {
        let name = Segment::file_name(segment.id);
        crate::cachefile::write_atomic_with(&self.cache_dir, &name, &mut |file| segment.write(file))
            .map_err(io_err(&self.cache_dir.join(name)))
    }

    /// Reads and chunks changed files, in parallel for big updates. Returns
    /// one builder per worker.
    fn build(
        &self,
        state: &WriterState,
        changed: &[WalkEntry],
        buffers: &Buffers,
        stats: &mut UpdateStats,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Vec<SegmentBuilder> {
        let total_bytes: u64 = changed
            .iter()
            .map(|e| e.size.min(self.config.max_file_size))
            .sum();
        let n_workers = if total_bytes < PARALLEL_MIN_BYTES {
            1
        } else {
            rayon::current_num_threads().clamp(1, changed.len().max(1))
        };
        // Workers pull files from a shared cursor, each into its own
        // builder, so a slow file never leaves a core idle.
        let next = AtomicUsize::new(0);
        let done = AtomicU64::new(0);
        let total = changed.len() as u64;
        let share = total_bytes / n_workers as u64;
        let work = || {
            self.build_worker(
                state, changed, buffers, share, &next, &done, total, progress,
            )
        };
        let results: Vec<(SegmentBuilder, UpdateStats)> = if n_workers == 1 {
            vec![work()]
        } else {
            use rayon::prelude::*;
            (0..n_workers).into_par_iter().map(|_| work()).collect()
        };
        let mut builders = Vec::with_capacity(results.len());
        for (builder, worker_stats) in results {
            stats.files_hashed += worker_stats.files_hashed;
            stats.files_reparsed += worker_stats.files_reparsed;
            stats.files_added += worker_stats.files_added;
            stats.files_skipped += worker_stats.files_skipped;
            stats.files_unchanged += worker_stats.files_unchanged;
            builders.push(builder);
        }
        builders
    }

    #[allow(clippy::too_many_arguments)]
    fn build_worker(
        &self,
        state: &WriterState,
        entries: &[WalkEntry],
        buffers: &Buffers,
        source_bytes: u64,
        next: &AtomicUsize,
        done: &AtomicU64,
        total: u64,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> (SegmentBuilder, UpdateStats) {
        let mut builder = SegmentBuilder::for_source_bytes(source_bytes);
        let mut stats = UpdateStats::default();
        while let Some(entry) = entries.get(next.fetch_add(1, Ordering::Relaxed)) {
            if self.is_stopped() {
                break;
            }
            let previous = state.files.get(&entry.rel_path);
            if previous.is_none() {
                stats.files_added += 1;
            }
            self.build_file(
                entry,
                buffers.get(&entry.rel_path),
                previous,
                &mut builder,
                &mut stats,
            );
            let n = done.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_multiple_of(64) || n == total {
                progress(Progress { done: n, total });
            }
        }
        (builder, stats)
    }

    /// Indexes one file: its text on disk, or `buffer` (an editor's unsaved
    /// text) when given.
    fn build_file(
        &self,
        entry: &WalkEntry,
        buffer: Option<&String>,
        previous: Option<&FileRow>,
        builder: &mut SegmentBuilder,
        stats: &mut UpdateStats,
    ) {
        let skip = |builder: &mut SegmentBuilder, hash: [u8; 32], reason: SkipReason| {
            builder.add_row(FileRow {
                path: entry.rel_path.clone(),
                size: entry.size,
                mtime_ns: entry.mtime_ns,
                stamp: entry.stamp,
                hash,
                state: FileState::Skipped(reason),
            });
        };
        if entry.size > self.config.max_file_size {
            stats.files_skipped += 1;
            return skip(builder, [0; 32], SkipReason::TooLarge);
        }
        let read = match buffer {
            Some(text) => Ok(text.clone().into_bytes()),
            None => confine::read(&self.root, &entry.abs_path, self.config.max_file_size),
        };
        let bytes = match read {
            Ok(bytes) => bytes,
            Err(Refusal::TooLarge { .. }) => {
                // Grew past the limit since the walk saw it.
                stats.files_skipped += 1;
                return skip(builder, [0; 32], SkipReason::TooLarge);
            }
            Err(refusal) => {
                if let Refusal::Outside(_) | Refusal::NotRegular(_) = refusal {
                    self.note(format!("not indexing {}: {refusal}", entry.rel_path));
                }
                stats.files_skipped += 1;
                return skip(builder, [0; 32], SkipReason::Unreadable);
            }
        };
        stats.files_hashed += 1;
        let hash = *blake3::hash(&bytes).as_bytes();
        if let Some(previous) = previous.filter(|p| p.hash == hash) {
            stats.files_unchanged += 1;
            if (previous.size, previous.mtime_ns, previous.stamp)
                == (entry.size, entry.mtime_ns, entry.stamp)
            {
                // A racily clean file, hashed again: nothing to write.
                return;
            }
            // Same content, new mtime: keep the chunks, refresh the row.
            return builder.add_row(FileRow {
                size: entry.size,
                mtime_ns: entry.mtime_ns,
                stamp: entry.stamp,
                ..previous.clone()
            });
        }
        let text = match classify(bytes) {
            Ok(text) => text,
            Err(reason) => {
                stats.files_skipped += 1;
                return skip(builder, hash, reason);
            }
        };
        stats.files_reparsed += 1;
        let chunks = safe_chunk(&entry.rel_path, &text, entry.language);
        builder.add_file(ParsedFile {
            path: &entry.rel_path,
            size: entry.size,
            mtime_ns: entry.mtime_ns,
            stamp: entry.stamp,
            hash,
            language: entry.language,
            text: &text,
            chunks,
        });
    }

    /// Merges segments when there are too many or too much is dead.
    fn merge_if_needed(
        &self,
        state: &WriterState,
        manifest: &mut Manifest,
        stats: &mut UpdateStats,
    ) -> Result<Option<Merged>, IndexError> {
        let dead_fraction = state.n_dead as f64 / state.n_stored.max(1) as f64;
        let full = dead_fraction > MAX_DEAD_FRACTION && state.segments.len() > 1;
        let range = if full {
            0..state.segments.len()
        } else if state.segments.len() > MAX_SEGMENTS {
            KEPT_SEGMENTS..state.segments.len()
        } else {
            return Ok(None);
        };
        let inputs: Vec<&Segment> = state.segments[range].iter().map(|s| &**s).collect();
        let dead = &state.dead;
        let merged = segment::merge(
            &inputs,
            &|id| !bit(dead, id),
            full,
            manifest.next_segment_id,
        );
        manifest.next_segment_id += 1;
        self.write_segment(&merged)?;
        stats.segments_merged += inputs.len() as u64;
        stats.segments_written += 1;
        Ok(Some(Merged {
            segment: Arc::new(merged),
            replaced: inputs.iter().map(|s| s.id).collect(),
        }))
    }
}

/// A segment produced by a merge and the ids of the segments it replaces.
struct Merged {
    segment: Arc<Segment>,
    replaced: Vec<u64>,
}

/// Makes `row` the winning row of its path; pushes the ids of the chunks
/// that died onto `killed`.
fn apply_row(state: &mut WriterState, row: &FileRow, killed: &mut Vec<u32>) {
    let new_ids: &[u32] = match &row.state {
        FileState::Indexed { chunk_ids, .. } => chunk_ids,
        _ => &[],
    };
    let n_before = killed.len();
    let old = if row.state == FileState::Deleted {
        state.files.remove(&row.path)
    } else {
        state.files.insert(row.path.clone(), row.clone())
    };
    let was_indexed = old
        .as_ref()
        .is_some_and(|old| matches!(old.state, FileState::Indexed { .. }));
    if was_indexed != matches!(row.state, FileState::Indexed { .. }) {
        state.layout = None;
    }
    if let Some(FileRow {
        state: FileState::Indexed { chunk_ids, .. },
        ..
    }) = old
    {
        for id in chunk_ids {
            if !new_ids.contains(&id) {
                set_bit(&mut state.dead, id);
                killed.push(id);
            }
        }
    }
    state.n_dead += (killed.len() - n_before) as u64;
}

/// Decodes file bytes (lossily when they are not UTF-8), or says why the
/// file is not indexed.
pub(crate) fn classify(bytes: Vec<u8>) -> Result<String, SkipReason> {
    let sniff = &bytes[..bytes.len().min(BINARY_SNIFF_BYTES)];
    if sniff.contains(&0) {
        return Err(SkipReason::Binary);
    }
    let mut n_lines = 1usize;
    let mut long_bytes = 0usize;
    let mut line_start = 0usize;
    for (i, byte) in bytes.iter().enumerate() {
        if *byte == b'\n' {
            if i - line_start > MINIFIED_MAX_LINE {
                long_bytes += i - line_start;
            }
            line_start = i + 1;
            n_lines += 1;
        }
    }
    if bytes.len() - line_start > MINIFIED_MAX_LINE {
        long_bytes += bytes.len() - line_start;
    }
    let long_share = long_bytes as f64 / bytes.len().max(1) as f64;
    if long_share > MINIFIED_LONG_SHARE
        || (n_lines > 1 && bytes.len() / n_lines > MINIFIED_AVG_LINE)
    {
        return Err(SkipReason::Minified);
    }
    Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
    })
}

/// Chunks a file; a panic inside a grammar or query is contained and the
/// file is indexed as plain text instead.
pub(crate) fn safe_chunk(path: &str, text: &str, language: Language) -> Vec<Chunk> {
    std::panic::catch_unwind(|| chunk_file(path, text, language))
        .or_else(|_| std::panic::catch_unwind(|| chunk_file(path, text, Language::Text)))
        .unwrap_or_default()
}

fn empty_state(root: &str) -> WriterState {
    WriterState {
        manifest: Manifest {
            root: root.to_string(),
            next_chunk_id: 0,
            next_segment_id: 1,
            segment_ids: Vec::new(),
        },
        segments: Vec::new(),
        files: FxHashMap::default(),
        dead: Vec::new(),
        n_dead: 0,
        n_stored: 0,
        layout: None,
    }
}

/// Loads the committed state. `Ok(None)`: there is no cache yet.
fn load(
    cache_dir: &Path,
    root: &str,
    is_writer: bool,
    reuse: &[Arc<Segment>],
) -> Result<Option<WriterState>, String> {
    // A reader may race a writer that merges and deletes segment files
    // right after committing a new manifest: retry with the new manifest.
    let attempts = if is_writer { 1 } else { 5 };
    let mut last_error = String::new();
    for attempt in 0..attempts {
        if attempt > 0 {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        match load_once(cache_dir, root, reuse) {
            Ok(state) => return Ok(state),
            Err(err) => last_error = err,
        }
    }
    Err(last_error)
}

/// A segment file's bytes, read whole (`cachefile`): a segment is never
/// memory-mapped, so a file truncated or rewritten under a running server
/// can not fault a later search (`SIGBUS`); what was read was checked by
/// `Segment::from_bytes` and stays as it was checked.
fn read_segment(path: &Path) -> std::io::Result<bytes::Bytes> {
    crate::cachefile::read(path).map(bytes::Bytes::from)
}

/// `reuse`: segments already loaded (by id), not read again.
fn load_once(
    cache_dir: &Path,
    root: &str,
    reuse: &[Arc<Segment>],
) -> Result<Option<WriterState>, String> {
    let manifest_path = cache_dir.join(store::MANIFEST_FILE);
    let bytes = match crate::cachefile::read(&manifest_path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(format!("reading {}: {err}", manifest_path.display())),
    };
    let manifest =
        Manifest::from_bytes(&bytes).map_err(|e| format!("{}: {e}", manifest_path.display()))?;
    if manifest.root != root {
        return Err(format!("it belongs to {}", manifest.root));
    }
    let mut state = empty_state(root);
    // Segments decode and are checked independently: one per core.
    let decoded: Vec<Result<Arc<Segment>, String>> = {
        use rayon::prelude::*;
        manifest
            .segment_ids
            .par_iter()
            .map(|id| {
                if let Some(kept) = reuse.iter().find(|s| s.id == *id) {
                    return Ok(kept.clone());
                }
                let path = cache_dir.join(Segment::file_name(*id));
                let bytes =
                    read_segment(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
                let segment =
                    Segment::from_bytes(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
                if segment.id != *id {
                    return Err(format!("{}: wrong segment id", path.display()));
                }
                if segment
                    .last_chunk_id()
                    .is_some_and(|last| last >= manifest.next_chunk_id)
                {
                    return Err(format!("{}: chunk ids beyond the manifest", path.display()));
                }
                Ok(Arc::new(segment))
            })
            .collect()
    };
    for segment in decoded {
        let segment = segment?;
        state.n_stored += segment.chunks.len() as u64;
        state.segments.push(segment);
    }
    // Every stored chunk starts dead; the winning rows revive theirs.
    for segment in &state.segments {
        for chunk in &segment.chunks {
            set_bit(&mut state.dead, chunk.chunk_id);
        }
    }
    state.n_dead = state.n_stored;
    let segments = state.segments.clone();
    let mut killed = Vec::new();
    for segment in &segments {
        for row in &segment.rows {
            apply_row(&mut state, row, &mut killed);
            killed.clear();
        }
    }
    let mut n_live = 0u64;
    for row in state.files.values() {
        if let FileState::Indexed { chunk_ids, .. } = &row.state {
            for id in chunk_ids {
                if let Some(word) = state.dead.get_mut(*id as usize / 64) {
                    *word &= !(1 << (id % 64));
                }
                n_live += 1;
            }
        }
    }
    state.n_dead = state.n_stored.saturating_sub(n_live);
    state.manifest = manifest;
    Ok(Some(state))
}

fn make_snapshot(
    root: &Path,
    state: &mut WriterState,
    bm25: &Bm25Config,
    vectors: Option<Arc<VectorIndex>>,
) -> Snapshot {
    let mut stats = CorpusStats::default();
    for segment in &state.segments {
        stats.add(&segment.lexical);
    }
    let mut summary = Summary {
        segments: state.segments.len() as u64,
        ..Summary::default()
    };
    for row in state.files.values() {
        match &row.state {
            FileState::Indexed {
                language,
                chunk_ids,
            } => {
                summary.files_indexed += 1;
                summary.chunks += chunk_ids.len() as u64;
                *summary.languages.entry(language.name()).or_default() += 1;
            }
            FileState::Skipped(reason) => *summary.skipped.entry(reason.name()).or_default() += 1,
            FileState::Deleted => {}
        }
    }
    let layout = state
        .layout
        .get_or_insert_with(|| {
            Arc::new(Layout::of(
                state
                    .files
                    .iter()
                    .filter(|(_, row)| matches!(row.state, FileState::Indexed { .. }))
                    .map(|(path, _)| path.as_str()),
            ))
        })
        .clone();
    Snapshot {
        root: root.to_path_buf(),
        segments: state.segments.clone(),
        dead: Arc::new(state.dead.clone()),
        stats,
        summary,
        bm25: bm25.clone(),
        vectors,
        static_vectors: None,
        layout,
        term_df: None,
    }
}
