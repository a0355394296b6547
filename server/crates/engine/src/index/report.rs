//! What the index tells its callers: a summary, an update's and an embedding call's counts, progress.

use serde::Serialize;
use std::collections::BTreeMap;

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
