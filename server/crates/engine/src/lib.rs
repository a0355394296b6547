//! Quarry's engine: hybrid code search over a workspace, as plain typed
//! data. The surfaces (the `quarry` binary's CLI, language server and MCP
//! server) call `engine` and serialise what it returns.
//!
//! Files -> `walk` -> `chunk` -> (`lexical`, `dense`, `symbols`) stores
//! inside `index` segments (or the shared `hub`) -> `search` -> hits
//! resolved against live text. See ARCHITECTURE.md for the map.

pub mod cachefile;
pub mod chunk;
pub mod codec;
pub mod confine;
pub mod dense;
pub mod engine;
pub mod filter;
pub mod hub;
pub mod ident;
pub mod index;
pub mod layout;
pub mod lexical;
pub mod memory;
pub mod priority;
pub mod rank;
pub mod search;
pub mod symbols;
pub mod walk;
