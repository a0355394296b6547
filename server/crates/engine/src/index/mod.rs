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

mod classify;
mod config;
mod embed_text;
mod embedding;
mod error;
mod follow;
mod generated;
mod private;
mod reader;
mod reader_private;
mod report;
pub mod segment;
mod snapshot;
mod state;
pub mod store;
mod writer;

pub(crate) use classify::{classify, safe_chunk};
pub use config::{IndexConfig, BUFFER_MTIME, DEFAULT_MAX_FILE_SIZE};
pub use embed_text::chunk_text;
pub use error::IndexError;
pub use follow::CatchUp;
pub use reader::Index;
pub use report::{EmbedStats, Progress, Summary, UpdateStats};
pub use snapshot::Snapshot;
