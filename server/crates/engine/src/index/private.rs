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

use super::{
    confine, empty_state, set_bit, FileRow, FileState, Index, Segment, SegmentBuilder, Snapshot,
    UpdateStats, WalkEntry, WriterState,
};
use rustc_hash::FxHashMap;
use std::path::Path;
use std::sync::Arc;

/// The first chunk id of the private segment: a writer would need three
/// billion chunk ids before reaching it.
pub(super) const PRIVATE_FIRST_CHUNK_ID: u32 = 0xC000_0000;
/// The private segment's id (never written, never merged).
const PRIVATE_SEGMENT_ID: u64 = u64::MAX;
/// More changed files than this (a checkout, a branch switch) are left to
/// the writer: chunking them again here would only duplicate its work.
pub(super) const MAX_SAVED_ENTRIES: usize = 256;

/// What one private entry holds for a path.
#[derive(Clone, Debug, PartialEq)]
enum Held {
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
    entries: FxHashMap<String, Held>,
    /// Built from `entries`; `None` when it must be built again.
    segment: Option<Arc<Segment>>,
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
    fn set_saved(&mut self, path: String, held: Held, committed: Option<&FileRow>) {
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
    fn forget_committed(&mut self, files: &FxHashMap<String, FileRow>) {
        let before = self.entries.len();
        self.entries
            .retain(|path, held| !caught_up(held, files.get(path.as_str())));
        if self.entries.len() != before {
            self.segment = None;
        }
    }
}

/// Whether the committed row already says what `held` says.
fn caught_up(held: &Held, committed: Option<&FileRow>) -> bool {
    match held {
        Held::Buffer(_) => false,
        Held::Saved(_, hash) => committed.is_some_and(|row| row.hash == *hash),
        Held::Deleted => committed.is_none(),
    }
}

impl Index {
    /// A reader's `update_paths`: each path's disk state becomes a private
    /// entry until the writer commits it (see the module doc).
    pub(super) fn note_private_paths(&self, paths: &[std::path::PathBuf], stats: &mut UpdateStats) {
        if paths.len() > MAX_SAVED_ENTRIES {
            return;
        }
        let mut state = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let mut private = self.private.lock().unwrap_or_else(|e| e.into_inner());
        let mut admission = self.admission();
        for path in paths {
            let Some((abs_path, rel_path)) = self.locate(path) else {
                continue;
            };
            stats.files_scanned += 1;
            let committed = state.files.get(&rel_path);
            let language = crate::chunk::detect_language(Path::new(&rel_path));
            let readable = admission.admits(&rel_path)
                && language.is_some()
                && confine::check(&self.root, &abs_path).is_ok();
            let held = if readable {
                match confine::read(&self.root, &abs_path, self.config.max_file_size) {
                    Ok(bytes) => {
                        let hash = *blake3::hash(&bytes).as_bytes();
                        let text = String::from_utf8_lossy(&bytes);
                        Held::Saved(Arc::from(text.as_ref()), hash)
                    }
                    // Too large or unreadable: the writer decides.
                    Err(_) => continue,
                }
            } else if committed.is_some() {
                Held::Deleted
            } else {
                continue;
            };
            if private.entries.len() >= MAX_SAVED_ENTRIES
                && !private.entries.contains_key(&rel_path)
            {
                continue;
            }
            private.set_saved(rel_path, held, committed);
        }
        drop(private);
        self.publish(&mut state);
    }

    /// A reader's `update_buffers`: the dirty set replaces the private
    /// buffer entries, and the next snapshot shows them.
    pub(super) fn set_private_buffers(&self, buffers: Vec<(String, String)>) {
        let mut state = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        self.private
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .set_buffers(buffers);
        self.publish(&mut state);
    }

    /// Puts a reader's private segment into `snapshot`: the committed
    /// chunks of its paths are masked, its own chunks added.
    pub(super) fn overlay_private(&self, state: &WriterState, snapshot: &mut Snapshot) {
        let mut private = self.private.lock().unwrap_or_else(|e| e.into_inner());
        private.forget_committed(&state.files);
        if private.is_empty() {
            private.segment = None;
            return;
        }
        let segment = match &private.segment {
            Some(segment) => segment.clone(),
            None => {
                let built = Arc::new(self.build_private(&private));
                private.segment = Some(built.clone());
                built
            }
        };
        let mut dead = (*snapshot.dead).clone();
        for path in private.entries.keys() {
            if let Some(FileRow {
                state: FileState::Indexed { chunk_ids, .. },
                ..
            }) = state.files.get(path)
            {
                snapshot.summary.chunks -= chunk_ids.len() as u64;
                for id in chunk_ids {
                    set_bit(&mut dead, *id);
                }
            }
        }
        snapshot.summary.chunks += segment.chunks.len() as u64;
        snapshot.dead = Arc::new(dead);
        snapshot.segments.push(segment);
    }

    /// Chunks every private entry into one in-memory segment.
    fn build_private(&self, private: &Private) -> Segment {
        let nothing = empty_state("");
        let mut builder = SegmentBuilder::for_source_bytes(0);
        let mut stats = UpdateStats::default();
        let mut paths: Vec<&String> = private.entries.keys().collect();
        paths.sort();
        for path in paths {
            let (text, language) = match (&private.entries[path], detect(path)) {
                (Held::Buffer(text) | Held::Saved(text, _), Some(language)) => (text, language),
                // A deleted file only masks its committed chunks.
                _ => continue,
            };
            let entry = WalkEntry {
                rel_path: path.clone(),
                abs_path: self.root.join(path),
                language,
                size: text.len() as u64,
                mtime_ns: super::BUFFER_MTIME,
                stamp: 0,
            };
            let text = text.to_string();
            self.build_file(
                &entry,
                Some(&text),
                nothing.files.get(path),
                &mut builder,
                &mut stats,
            );
        }
        builder.finish(PRIVATE_SEGMENT_ID, PRIVATE_FIRST_CHUNK_ID)
    }
}

fn detect(path: &str) -> Option<crate::chunk::Language> {
    crate::chunk::detect_language(Path::new(path))
}
