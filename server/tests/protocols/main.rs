//! The language server and the MCP server over stdio, the real binaries.
//! One test binary per group: each links candle, tokenizers and
//! tree-sitter once.

#[path = "../common/mod.rs"]
mod common;

mod hub;
mod lsp;
mod lsp_embedding;
mod lsp_protocol;
mod mcp;
