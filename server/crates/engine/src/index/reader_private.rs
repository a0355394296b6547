//! The reader's side of `private`: the [`Index`] methods that make a
//! reader's own buffers and saves searchable (see `private`'s module doc).
//!
//! Never: write to the cache.

use super::private::{
    detect, Held, Private, MAX_SAVED_ENTRIES, PRIVATE_FIRST_CHUNK_ID, PRIVATE_SEGMENT_ID,
};
use super::reader::Index;
use super::report::UpdateStats;
use super::segment::{FileRow, FileState, Segment, SegmentBuilder};
use super::snapshot::{set_bit, Snapshot};
use super::state::{empty_state, WriterState};
use crate::confine;
use crate::walk::WalkEntry;
use std::path::Path;
use std::sync::Arc;

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
                mtime_ns: super::config::BUFFER_MTIME,
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
