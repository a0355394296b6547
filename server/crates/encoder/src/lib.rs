//! Quarry's sentence encoder: text in, vectors out.
//!
//! Owns: finding and loading a sentence-transformers model from a local
//! folder (`embed`), our BERT forward pass on candle (`bert`) with its
//! hand-written kernels (`kernels`, `qgemm`, `fused`), and the static tier
//! distilled from it (`static_tier`).
//! Never: network access, any file I/O beyond reading the model folder,
//! knowledge of chunks, indexes or ranking, a panic on any text. The engine
//! (`quarry-engine`'s `dense`) decides what is embedded and keeps vectors.

mod bert;
pub mod embed;
mod fused;
mod kernels;
mod qgemm;
pub mod static_tier;

pub use embed::{locate_model, Embedder, EmbedderOptions, ModelError, Precision};
pub use static_tier::StaticModel;
