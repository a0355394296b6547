//! The engine in one process: chunk golden files, incremental updates, ranking, the real model and hybrid search.
//! One test binary per group: each links candle, tokenizers and
//! tree-sitter once.

#[path = "../common/mod.rs"]
mod common;

mod embeddings;
mod golden;
mod hybrid;
mod incremental;
mod ranking;
