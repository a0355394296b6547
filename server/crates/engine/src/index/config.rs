//! The index's settings ([`IndexConfig`]) and the limits a user can set.

use crate::lexical::Bm25Config;
use std::path::PathBuf;

/// Default largest file indexed.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 1024 * 1024;

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
