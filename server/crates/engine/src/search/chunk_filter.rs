//! The query's [`Filter`] applied to chunks, with its per-path answers
//! remembered (paths repeat across a file's chunks): what every branch
//! asks before it lists a candidate.
//!
//! Never: change what the filter accepts.

use crate::filter::Filter;
use crate::index::segment::{ChunkRecord, Segment};
use crate::index::Snapshot;
use rustc_hash::FxHashMap;
use std::cell::RefCell;

/// The query's `Filter`, with its per-path answers remembered (paths repeat
/// across a file's chunks).
pub(super) struct ChunkFilter<'a> {
    snapshot: &'a Snapshot,
    filter: &'a Filter,
    paths: RefCell<FxHashMap<(u64, u32), bool>>,
}

impl<'a> ChunkFilter<'a> {
    pub(super) fn new(snapshot: &'a Snapshot, filter: &'a Filter) -> ChunkFilter<'a> {
        ChunkFilter {
            snapshot,
            filter,
            paths: RefCell::new(FxHashMap::default()),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.filter.is_empty()
    }

    /// Whether `chunk` (of `segment`) may be returned.
    /// [`Self::accepts_in`] for the chunk at position `doc`, reading its
    /// record only when a filter is set.
    pub(super) fn accepts_doc(&self, segment: &Segment, doc: u32) -> bool {
        if self.filter.is_empty() {
            return true;
        }
        segment
            .chunks
            .get(doc as usize)
            .is_some_and(|chunk| self.accepts_in(segment, chunk))
    }

    pub(super) fn accepts_in(&self, segment: &Segment, chunk: &ChunkRecord) -> bool {
        if self.filter.is_empty() {
            return true;
        }
        if !self
            .filter
            .accepts_language_and_kind(chunk.language, chunk.kind)
        {
            return false;
        }
        *self
            .paths
            .borrow_mut()
            .entry((segment.id, chunk.path_idx))
            .or_insert_with(|| self.filter.accepts_path(segment.path_of(chunk)))
    }

    /// Whether the live chunk `chunk_id` may be returned.
    pub(super) fn accepts(&self, chunk_id: u32) -> bool {
        if self.filter.is_empty() {
            return self.snapshot.is_live(chunk_id);
        }
        self.snapshot.is_live(chunk_id)
            && self
                .snapshot
                .chunk(chunk_id)
                .is_some_and(|(segment, chunk)| self.accepts_in(segment, chunk))
    }
}
