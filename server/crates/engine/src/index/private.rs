//! A reader's own texts: the one place where a process that does not write
//! the index makes what it holds searchable anyway.
//!
//! A reader (another process holds the writer lock) keeps two kinds of
//! private entries: the unsaved text of its editors' dirty buffers, and the
//! disk text of files it saw change (its own saves, its watcher's events)
//! that the committed index does not hold yet. They are chunked into one
//! in-memory segment with chunk ids from `PRIVATE_FIRST_CHUNK_ID` up (above
//! any id a writer hands out), and every snapshot this process publishes
//! masks the committed chunks of those paths and adds that segment. A
//! saved entry is dropped once the writer commits the same content (same
//! hash); buffer entries are replaced whenever the dirty set changes.
//! Never: write to the cache, or give private chunks vectors (the dense
//! branch answers for them from the committed text until the writer
//! commits; the lexical and symbol branches see the private text at once).

use super::segment::{FileRow, Segment};
use rustc_hash::FxHashMap;
use std::path::Path;
use std::sync::Arc;

/// The first chunk id of the private segment: a writer would need three
/// billion chunk ids before reaching it.
pub(super) const PRIVATE_FIRST_CHUNK_ID: u32 = 0xC000_0000;
/// The private segment's id (never written, never merged).
pub(super) const PRIVATE_SEGMENT_ID: u64 = u64::MAX;
/// More changed files than this (a checkout, a branch switch) are left to
/// the writer: chunking them again here would only duplicate its work.
pub(super) const MAX_SAVED_ENTRIES: usize = 256;

/// What one private entry holds for a path.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Held {
    /// An editor's unsaved text.
    Buffer(Arc<str>),
    /// The file's disk text and its hash, until the writer commits it.
    Saved(Arc<str>, [u8; 32]),
    /// The file is gone from the disk; the writer has not committed that.
    Deleted,
}

/// A reader's private entries and the segment built from them.
#[derive(Default)]
pub(super) struct Private {
    pub(super) entries: FxHashMap<String, Held>,
    /// Built from `entries`; `None` when it must be built again.
    pub(super) segment: Option<Arc<Segment>>,
}

impl Private {
    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(super) fn clear(&mut self) {
        self.entries.clear();
        self.segment = None;
    }

    /// Replaces every buffer entry with `buffers` (root-relative path, text).
    pub(super) fn set_buffers(&mut self, buffers: Vec<(String, String)>) {
        let next: FxHashMap<String, Held> = buffers
            .into_iter()
            .map(|(path, text)| (path, Held::Buffer(Arc::from(text))))
            .collect();
        let same = next.len()
            == self
                .entries
                .values()
                .filter(|held| matches!(held, Held::Buffer(_)))
                .count()
            && next
                .iter()
                .all(|(path, held)| self.entries.get(path) == Some(held));
        if same {
            return;
        }
        self.entries
            .retain(|_, held| !matches!(held, Held::Buffer(_)));
        // A dirty buffer wins over a saved entry of the same path.
        self.entries.extend(next);
        self.segment = None;
    }

    /// Records a file's disk state as this process saw it, unless the
    /// committed row already has that content. It replaces a buffer entry
    /// (a save comes before the dirty set is sent again, without it); a
    /// buffer still dirty comes back with the next `set_buffers`.
    pub(super) fn set_saved(&mut self, path: String, held: Held, committed: Option<&FileRow>) {
        if caught_up(&held, committed) {
            if self.entries.remove(&path).is_some() {
                self.segment = None;
            }
            return;
        }
        if self.entries.get(&path) != Some(&held) {
            self.entries.insert(path, held);
            self.segment = None;
        }
    }

    /// Drops saved entries the committed file table now holds.
    pub(super) fn forget_committed(&mut self, files: &FxHashMap<String, FileRow>) {
        let before = self.entries.len();
        self.entries
            .retain(|path, held| !caught_up(held, files.get(path.as_str())));
        if self.entries.len() != before {
            self.segment = None;
        }
    }
}

/// Whether the committed row already says what `held` says.
pub(super) fn caught_up(held: &Held, committed: Option<&FileRow>) -> bool {
    match held {
        Held::Buffer(_) => false,
        Held::Saved(_, hash) => committed.is_some_and(|row| row.hash == *hash),
        Held::Deleted => committed.is_none(),
    }
}

pub(super) fn detect(path: &str) -> Option<crate::chunk::Language> {
    crate::chunk::detect_language(Path::new(path))
}
