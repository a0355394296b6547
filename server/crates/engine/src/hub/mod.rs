//! The hub: a shared index of many repositories in PostgreSQL with
//! pgvector, built once (by CI, by a server-side indexer) and searched by
//! every developer's CLI, language server and agent.
//!
//! Owns: the connection ([`Hub`] in `conn`, TLS in `tls`), the schema (`schema`),
//! writing a repository at a commit (`push`), answering a query over the
//! repositories a role may read, on one server or several shards
//! (`query`, `symbols`), the workspace's own changes laid over the hub's
//! commit (`overlay`) and the servers' long-lived link (`link`).
//! PostgreSQL retrieves candidates (HNSW over `halfvec` for meaning, a
//! term table for words, a name index for identifiers); Quarry ranks them
//! with the same stages as the local index (`search::search_blended` over
//! a snapshot of the candidate files, with the repositories' own corpus
//! statistics).
//!
//! Invariants: a push is one transaction, so readers see a repository at
//! its old commit or its new one, never a mix; every value in a statement
//! is a parameter (role names, the one identifier a statement must spell
//! out, go through [`quote_ident`]).
//! Never: show a connection string's password (errors and logs carry
//! [`redact`]ed URLs), or run without the schema version it was built for.

mod candidates;
mod conn;
mod error;
mod link;
mod overlay;
mod push;
mod query;
mod read;
mod schema;
mod symbols;
mod tls;

pub use candidates::RepoScope;
pub use conn::{Hub, CONNECT_TIMEOUT};
pub use error::{redact, HubError};
pub use link::{local_reason, within, Ask, Checkout, HubLink};
pub use overlay::{Overlay, OverlaySource};
pub use push::{push, PushStats};
pub use query::{search, HubHit, HubResults, OverlayInfo};
pub use read::{file, usages, HubFile, Usage};
pub use schema::quote_ident;
pub use symbols::{symbols, HubSymbol};
