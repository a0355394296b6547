//! Following the writer: the one place where a process that opened the
//! cache read-only catches up with commits made by another process, and
//! takes the writer lock over when that process exits or dies.
//!
//! `Index::catch_up` compares the committed manifest (a small file, read
//! whole) with the one this process loaded; a newer one is loaded, reusing
//! every segment already in memory (only new segments are read), the
//! saved vectors are reopened if the writer saved new ones (their sidecar
//! changed), and a new snapshot is published. When the
//! lock is free, this process takes it, loads the newest commit as the
//! writer and says so (`CatchUp::BecameWriter`): the caller then walks
//! the workspace, which indexes whatever changed while it was a reader
//! (its own saves included), so nothing is lost.
//! Never: write to the cache without the lock; block a search (the
//! snapshot is swapped in whole, as after any update).

use super::error::IndexError;
use super::reader::Index;
use super::segment::Segment;
use super::state::{empty_state, load};
use super::store;
use crate::dense::vectors::VectorIndex;
use std::sync::Arc;

/// What `catch_up` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CatchUp {
    /// This process writes, or nothing was committed since it loaded.
    Unchanged,
    /// A newer commit by another process is now served.
    Reloaded,
    /// The writer lock was free: this process now writes the index.
    BecameWriter,
}

impl Index {
    /// Brings a reader up to the newest commit, or makes it the writer when
    /// the lock is free. Cheap when nothing changed (one small read).
    pub fn catch_up(&self) -> Result<CatchUp, IndexError> {
        if self.is_writer() {
            return Ok(CatchUp::Unchanged);
        }
        let root = self.root.to_string_lossy().into_owned();
        let taken = store::try_lock(&self.cache_dir).map_err(|source| IndexError::Io {
            path: self.cache_dir.clone(),
            source,
        })?;
        if let Some(file) = taken {
            let mut state = self.writer.lock().unwrap_or_else(|e| e.into_inner());
            let reuse = state.segments.clone();
            *state = match load(&self.cache_dir, &root, true, &reuse) {
                Ok(Some(fresh)) => fresh,
                Ok(None) => empty_state(&root),
                Err(reason) => {
                    self.note(format!(
                        "cache at {} is unusable ({reason}); rebuilding the index",
                        self.cache_dir.display()
                    ));
                    crate::dense::vectors::remove_files(&self.cache_dir);
                    empty_state(&root)
                }
            };
            *self.lock.lock().unwrap_or_else(|e| e.into_inner()) = Some(file);
            // The walk that follows indexes its saves, and the editor's
            // dirty buffers are indexed again as the writer's.
            self.private
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clear();
            store::collect_garbage(&self.cache_dir, &state.manifest, Segment::file_name);
            self.reopen_vectors(state.manifest.next_chunk_id, true);
            self.publish(&mut state);
            self.note("the process that wrote this index is gone: this one writes it now".into());
            return Ok(CatchUp::BecameWriter);
        }
        let committed = match crate::cachefile::read(&self.cache_dir.join(store::MANIFEST_FILE)) {
            Ok(bytes) => store::Manifest::from_bytes(&bytes).ok(),
            Err(_) => None,
        };
        let mut state = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if committed.is_none_or(|manifest| manifest == state.manifest) {
            return Ok(CatchUp::Unchanged);
        }
        let reuse = state.segments.clone();
        match load(&self.cache_dir, &root, false, &reuse) {
            Ok(Some(fresh)) => *state = fresh,
            // Mid-rebuild by the writer: keep serving what was loaded.
            Ok(None) | Err(_) => return Ok(CatchUp::Unchanged),
        }
        self.reopen_vectors(state.manifest.next_chunk_id, false);
        self.publish(&mut state);
        Ok(CatchUp::Reloaded)
    }

    /// Reopens each attached tier's saved vectors (the writer's, as last
    /// committed); a tier whose file is missing, older than the manifest
    /// or damaged keeps the vectors it had.
    fn reopen_vectors(&self, id_bound: u32, writable: bool) {
        for slot in [&self.vectors, &self.static_vectors] {
            let Some(current) = slot.load_full() else {
                continue;
            };
            if !writable && current.is_saved_in(&self.cache_dir) {
                // The writer committed segments but not new vectors.
                continue;
            }
            if let Ok(Some(saved)) = VectorIndex::open(
                &self.cache_dir,
                current.model_id(),
                current.dim(),
                writable,
                id_bound,
            ) {
                if writable || saved.len() >= current.len() {
                    slot.store(Some(Arc::new(saved)));
                }
            }
        }
    }

    /// Seconds since the index this process answers from was committed
    /// (the manifest's modification time); `None` before any commit.
    pub fn committed_age_secs(&self) -> Option<f64> {
        let meta = std::fs::metadata(self.cache_dir.join(store::MANIFEST_FILE)).ok()?;
        let age = meta.modified().ok()?.elapsed().unwrap_or_default();
        Some(age.as_secs_f64())
    }
}
