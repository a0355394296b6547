//! Quarry: hybrid code search over a workspace.
//!
//! Data flows one way: files -> `walk` -> `chunk` -> (`lexical`, `symbols`)
//! stores inside `index` segments -> `search` -> hits resolved against live
//! text. See ARCHITECTURE.md for the map.

pub mod bench;
pub mod cachefile;
pub mod chunk;
pub mod codec;
pub mod confine;
pub mod dense;
pub mod engine;
pub mod filter;
pub mod hub;
pub mod index;
pub mod jsonrpc;
pub mod layout;
pub mod lexical;
pub mod lsp;
pub mod mcp;
pub mod memory;
pub mod priority;
pub mod rank;
pub mod search;
pub mod symbols;
pub mod walk;
