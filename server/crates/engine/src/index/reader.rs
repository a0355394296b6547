//! The [`Index`] handle: opening a cache (as writer or reader), the current snapshot, notes and the vector slots.

use super::config::IndexConfig;
use super::error::{io_err, IndexError};
use super::segment::Segment;
use super::snapshot::Snapshot;
use super::state::make_snapshot;
use super::state::{empty_state, load, WriterState};
use super::store::{self};
use crate::dense::vectors::VectorIndex;
use crate::dense::DenseTier;
use arc_swap::{ArcSwap, ArcSwapOption};
use rustc_hash::FxHashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// A workspace index: the committed segments plus the writer lock, if held.
pub struct Index {
    pub(super) root: PathBuf,
    pub(super) cache_dir: PathBuf,
    pub(super) config: IndexConfig,
    /// The writer lock while this process holds it (`follow` may take it
    /// later, when the writer exits).
    pub(super) lock: Mutex<Option<File>>,
    pub(super) writer: Mutex<WriterState>,
    pub(super) current: ArcSwap<Snapshot>,
    pub(super) vectors: ArcSwapOption<VectorIndex>,
    pub(super) static_vectors: ArcSwapOption<VectorIndex>,
    pub(super) notes: Mutex<Vec<String>>,
    /// `embed_pending` leaves saving the vector index to `save_vectors`.
    pub(super) defer_vector_saves: std::sync::atomic::AtomicBool,
    /// Set by `stop`: updates end before their commit.
    pub(super) stopped: std::sync::atomic::AtomicBool,
    /// Vectors were added since the vector index was last saved.
    pub(super) vectors_dirty: std::sync::atomic::AtomicBool,
    /// The editors' texts indexed by `update_buffers`, by path: the chunks
    /// of a buffer row are embedded from here (the file on disk differs).
    pub(super) buffer_texts: Mutex<FxHashMap<String, Arc<str>>>,
    /// A reader's own buffers and saves (`private`).
    pub(super) private: Mutex<super::private::Private>,
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
            private: Mutex::new(super::private::Private::default()),
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
    pub(super) fn note(&self, note: String) {
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

    pub(super) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    pub fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut *self.notes.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Above every chunk id the committed manifest has handed out.
    pub(super) fn id_bound(&self) -> u32 {
        let state = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        state.manifest.next_chunk_id
    }

    /// Where one tier's vectors are kept.
    pub(super) fn slot(&self, tier: DenseTier) -> &ArcSwapOption<VectorIndex> {
        match tier {
            DenseTier::Transformer => &self.vectors,
            DenseTier::Static => &self.static_vectors,
        }
    }
}
