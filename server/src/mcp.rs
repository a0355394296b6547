//! `quarry mcp`: the Model Context Protocol server (rmcp, stdio) that gives
//! coding agents the same index and cache as the editor.
//!
//! Owns: the four tools (`search_code`, `find_symbol`, `find_usages`,
//! `get_code_context`), their JSON schemas and their token-frugal output
//! (Markdown text plus structured content). Before every call the index is
//! brought up to date from the disk (a walk that only re-reads changed
//! files), so an agent never reads stale results.
//! Never: read or return files outside the workspace root; exit on a bad
//! call (errors come back as tool errors).

use crate::chunk::{chunk_file, detect_language, ChunkKind};
use crate::dense::DenseEngine;
use crate::filter::Filter;
use crate::index::Index;
use crate::search::{find_symbols, search_with, snippet, Branches, DiskText, SearchOptions};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{schemars, tool, tool_handler, tool_router, ErrorData as McpError, ServerHandler};
use serde::Deserialize;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Most lines `get_code_context` returns.
const MAX_CONTEXT_LINES: usize = 400;
/// Most bytes `get_code_context` returns.
const MAX_CONTEXT_BYTES: usize = 32 * 1024;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SearchCodeArgs {
    /// A concept ("where do we retry failed requests"), an identifier
    /// (`GraphStore::lookup`) or a "quoted phrase".
    pub query: String,
    /// Most hits (default 10).
    pub limit: Option<usize>,
    /// Only paths matching this glob (`src/index`, `*.rs`).
    pub path: Option<String>,
    /// Only this language (rust, python, typescript, ...).
    pub language: Option<String>,
    /// Only this kind of definition (function, method, class, ...).
    pub kind: Option<String>,
    /// Spread hits over files (default true): in the first seven places a
    /// file's second and later hits count less, so more files show; later
    /// places go by score. Set false to rank by score
    /// alone when looking for one definition among similar ones in a file
    /// (a doc-comment-like description of a function).
    pub spread_files: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct FindSymbolArgs {
    /// A name or qualified name; fuzzy unless `exact`.
    pub name: String,
    /// Only this kind of definition.
    pub kind: Option<String>,
    /// Only definitions whose name or qualified name equals `name`.
    pub exact: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct FindUsagesArgs {
    /// The identifier (`lookup`, `GraphStore::lookup`).
    pub symbol: String,
    /// Most occurrences (default 30).
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct GetCodeContextArgs {
    /// A path relative to the workspace root.
    pub path: String,
    /// A definition in that file (name or qualified name).
    pub symbol: Option<String>,
    /// First line (1-based) when no symbol is given.
    pub start_line: Option<usize>,
    /// Last line (1-based, inclusive).
    pub end_line: Option<usize>,
}

#[derive(Clone)]
pub struct QuarryMcp {
    index: Arc<Index>,
    engine: Arc<DenseEngine>,
    tool_router: ToolRouter<QuarryMcp>,
}

fn tool_error(message: impl Into<String>) -> Result<CallToolResult, McpError> {
    Ok(CallToolResult::error(vec![ContentBlock::text(
        message.into(),
    )]))
}

fn with_structure(text: String, value: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(value);
    result
}

fn parse_kind(kind: Option<&str>) -> Result<Option<ChunkKind>, String> {
    match kind {
        None => Ok(None),
        Some(name) => ChunkKind::from_name(&name.to_ascii_lowercase())
            .map(Some)
            .ok_or_else(|| {
                format!(
                    "unknown kind {name:?} (known: {})",
                    ChunkKind::ALL.map(ChunkKind::name).join(", ")
                )
            }),
    }
}

impl QuarryMcp {
    pub fn new(index: Arc<Index>, engine: Arc<DenseEngine>) -> QuarryMcp {
        QuarryMcp {
            index,
            engine,
            tool_router: Self::tool_router(),
        }
    }

    /// Brings the index up to date and embeds a few fresh chunks, off the
    /// async threads.
    async fn refresh(&self) {
        let index = self.index.clone();
        let engine = self.engine.clone();
        let _ = tokio::task::spawn_blocking(move || {
            let _ = index.refresh(&|_| {});
            if engine.unavailable_reason().is_none() {
                let _ = index.embed_pending(&engine, &[], Some(64), &|_| {});
            }
        })
        .await;
    }

    /// A root-relative path inside the workspace, or why not.
    fn resolve(&self, path: &str) -> Result<(PathBuf, String), String> {
        let root = self.index.root();
        let joined = root.join(path.trim_start_matches("./"));
        let real = crate::confine::check(root, &joined).map_err(|refusal| match refusal {
            crate::confine::Refusal::Outside(_) => format!("{path:?} is outside the workspace"),
            other => format!("cannot open {path:?}: {other}"),
        })?;
        let rel = crate::walk::relative_path(root, &real)
            .ok_or_else(|| format!("{path:?} is outside the workspace"))?;
        Ok((real, rel))
    }
}

#[tool_router]
impl QuarryMcp {
    #[tool(
        description = "Search the workspace's code: hybrid lexical + semantic + symbol-name search with exact-match priority. Returns the best definitions with path:lines and a short snippet."
    )]
    async fn search_code(
        &self,
        Parameters(args): Parameters<SearchCodeArgs>,
    ) -> Result<CallToolResult, McpError> {
        if args.query.trim().is_empty() {
            return tool_error("query is empty");
        }
        let own = |v: &Option<String>| v.iter().cloned().collect::<Vec<_>>();
        let filter = match Filter::new(
            &own(&args.path),
            &[],
            &own(&args.language),
            &own(&args.kind),
        ) {
            Ok(filter) => filter,
            Err(e) => return tool_error(e.to_string()),
        };
        self.refresh().await;
        let options = SearchOptions {
            limit: args.limit.unwrap_or(10).clamp(1, 100),
            snippet_lines: 4,
            filter,
            // 0 turns per-file diversity off.
            per_file_cap: match args.spread_files {
                Some(false) => 0,
                _ => SearchOptions::default().per_file_cap,
            },
            ..SearchOptions::default()
        };
        let snapshot = self.index.snapshot();
        let mut text = DiskText::new(self.index.root());
        let results = search_with(
            &snapshot,
            &args.query,
            &options,
            &mut text,
            Some(&self.engine),
        );
        let mut out = String::new();
        if let Some(reason) = &results.reason {
            let _ = writeln!(out, "_lexical-only: {reason}_\n");
        }
        if results.hits.is_empty() {
            out.push_str("No results.");
        }
        for hit in &results.hits {
            let _ = writeln!(
                out,
                "- `{}` ({}) {}:{}-{} [{}]\n```\n{}\n```",
                hit.symbol,
                hit.kind,
                hit.path,
                hit.start_line,
                hit.end_line,
                hit.sources.join("+"),
                hit.snippet.trim_end()
            );
        }
        let value = serde_json::to_value(&results).unwrap_or(Value::Null);
        Ok(with_structure(out, value))
    }

    #[tool(
        description = "Find definitions by name in the symbol index (exact, prefix, fuzzy; `Type::method` and `Class.method` work). Returns kind and path:lines."
    )]
    async fn find_symbol(
        &self,
        Parameters(args): Parameters<FindSymbolArgs>,
    ) -> Result<CallToolResult, McpError> {
        let kind = match parse_kind(args.kind.as_deref()) {
            Ok(kind) => kind,
            Err(e) => return tool_error(e),
        };
        self.refresh().await;
        let snapshot = self.index.snapshot();
        let mut hits = find_symbols(&snapshot, &args.name, kind, 50);
        if args.exact.unwrap_or(false) {
            hits.retain(|h| h.tier == "exact");
        }
        if hits.is_empty() {
            return tool_error(format!("no symbol matches {:?}", args.name));
        }
        let mut out = String::new();
        for h in &hits {
            let _ = writeln!(
                out,
                "- `{}` ({}, {}) {}:{}-{}",
                h.qualified_name, h.kind, h.tier, h.path, h.start_line, h.end_line
            );
        }
        Ok(with_structure(out, json!({ "symbols": hits })))
    }

    #[tool(
        description = "Find usages of an identifier: its whole-token occurrences from the lexical index, grouped by file with the enclosing definition of each, leaving out the definition itself."
    )]
    async fn find_usages(
        &self,
        Parameters(args): Parameters<FindUsagesArgs>,
    ) -> Result<CallToolResult, McpError> {
        let symbol = args.symbol.trim();
        let name = symbol
            .rsplit([':', '.', '#'])
            .next()
            .unwrap_or(symbol)
            .to_string();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        {
            return tool_error(format!("{symbol:?} is not an identifier"));
        }
        self.refresh().await;
        let limit = args.limit.unwrap_or(30).clamp(1, 200);
        let options = SearchOptions {
            limit: limit * 2,
            per_file_cap: 0,
            exact_priority: false,
            branches: Branches {
                lexical: true,
                dense: false,
                symbol: false,
            },
            signals: crate::rank::signals::Signals::off(),
            ..SearchOptions::default()
        };
        let snapshot = self.index.snapshot();
        let mut text = DiskText::new(self.index.root());
        let results = search_with(&snapshot, &name, &options, &mut text, None);
        // Grouped by file; a chunk counts when its current text holds the
        // identifier as a whole word and it is not the definition.
        let mut groups: Vec<(String, Vec<Value>)> = Vec::new();
        let mut shown = 0;
        for hit in &results.hits {
            if shown >= limit {
                break;
            }
            if hit.name == name || hit.symbol == symbol {
                continue;
            }
            let Ok(file) = crate::confine::read_text(self.index.root(), Path::new(&hit.path))
            else {
                continue;
            };
            let lines: Vec<(usize, &str)> = file
                .lines()
                .enumerate()
                .skip(hit.start_line.saturating_sub(1) as usize)
                .take((hit.end_line + 1).saturating_sub(hit.start_line) as usize)
                .filter(|(_, line)| has_word(line, &name))
                .map(|(i, line)| (i + 1, line))
                .collect();
            if lines.is_empty() {
                continue;
            }
            shown += 1;
            let entry = json!({
                "symbol": hit.symbol,
                "kind": hit.kind,
                "lines": lines.iter().map(|(n, l)| json!({"line": n, "text": l.trim()})).collect::<Vec<_>>(),
            });
            match groups.iter_mut().find(|(p, _)| *p == hit.path) {
                Some((_, entries)) => entries.push(entry),
                None => groups.push((hit.path.clone(), vec![entry])),
            }
        }
        if groups.is_empty() {
            return Ok(with_structure(
                format!("No usages of `{name}` outside its definition."),
                json!({ "files": [] }),
            ));
        }
        let mut out = String::new();
        for (path, entries) in &groups {
            let _ = writeln!(out, "{path}");
            for e in entries {
                let _ = writeln!(out, "  in `{}`:", e["symbol"].as_str().unwrap_or(""));
                for l in e["lines"].as_array().into_iter().flatten() {
                    let _ = writeln!(
                        out,
                        "    {}: {}",
                        l["line"],
                        l["text"].as_str().unwrap_or("")
                    );
                }
            }
        }
        let files: Vec<Value> = groups
            .into_iter()
            .map(|(path, usages)| json!({"path": path, "usages": usages}))
            .collect();
        Ok(with_structure(
            out,
            json!({ "symbol": name, "files": files }),
        ))
    }

    #[tool(
        description = "Read current code: a whole file, one definition in it (located by parsing the file as it is now), or a line range. Paths are relative to the workspace; output is capped."
    )]
    async fn get_code_context(
        &self,
        Parameters(args): Parameters<GetCodeContextArgs>,
    ) -> Result<CallToolResult, McpError> {
        let (abs, rel) = match self.resolve(&args.path) {
            Ok(found) => found,
            Err(e) => return tool_error(e),
        };
        let text = match crate::confine::read_text(self.index.root(), &abs) {
            Ok(text) => text,
            Err(e) => return tool_error(format!("cannot read {rel}: {e}")),
        };
        let total = text.lines().count().max(1);
        let (start, end, symbol) = match &args.symbol {
            Some(symbol) => {
                let Some(language) = detect_language(Path::new(&rel)) else {
                    return tool_error(format!("{rel}: no parser for this file type"));
                };
                let chunks = chunk_file(&rel, &text, language);
                let found = chunks
                    .iter()
                    .find(|c| c.qualified_name == *symbol)
                    .or_else(|| chunks.iter().find(|c| c.name == *symbol));
                match found {
                    Some(c) => (
                        c.start_line as usize,
                        c.end_line as usize,
                        Some(c.qualified_name.clone()),
                    ),
                    None => {
                        let names: Vec<&str> = chunks
                            .iter()
                            .filter(|c| c.kind.is_definition())
                            .map(|c| c.qualified_name.as_str())
                            .take(30)
                            .collect();
                        return tool_error(format!(
                            "no definition {symbol:?} in {rel}; it defines: {}",
                            names.join(", ")
                        ));
                    }
                }
            }
            None => {
                let start = args.start_line.unwrap_or(1).max(1);
                let end = args.end_line.unwrap_or(total).min(total);
                if start > end {
                    return tool_error(format!(
                        "empty range {start}-{end} ({rel} has {total} lines)"
                    ));
                }
                (start, end, None)
            }
        };
        let mut body = snippet(&text, start as u32, end as u32, MAX_CONTEXT_LINES);
        let mut truncated = end + 1 - start > MAX_CONTEXT_LINES;
        if body.len() > MAX_CONTEXT_BYTES {
            let mut cut = MAX_CONTEXT_BYTES;
            while !body.is_char_boundary(cut) {
                cut -= 1;
            }
            body.truncate(cut);
            truncated = true;
        }
        let shown_end = (start + body.lines().count()).saturating_sub(1).max(start);
        let mut out = format!("{rel}:{start}-{shown_end}\n```\n{}\n```\n", body.trim_end());
        if truncated {
            let _ = writeln!(
                out,
                "(truncated: lines {start}-{end} requested; ask for start_line={} to continue)",
                shown_end + 1
            );
        }
        Ok(with_structure(
            out,
            json!({
                "path": rel, "symbol": symbol, "start_line": start, "end_line": shown_end,
                "truncated": truncated, "text": body,
            }),
        ))
    }
}

/// Whether `line` holds `word` as a whole identifier.
fn has_word(line: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    line.match_indices(word).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for QuarryMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("quarry", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Code search over this workspace. search_code for concepts, identifiers and quoted phrases; find_symbol for definitions by name; find_usages for where an identifier is used; get_code_context to read current code.",
            )
    }
}

/// Serves MCP on stdin/stdout until the client disconnects.
pub async fn run_stdio(index: Arc<Index>, engine: Arc<DenseEngine>) -> Result<(), String> {
    use rmcp::ServiceExt;
    let service = QuarryMcp::new(index, engine)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| e.to_string())?;
    service.waiting().await.map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::has_word;

    #[test]
    fn whole_words_only() {
        assert!(has_word("let x = lookup(id);", "lookup"));
        assert!(has_word("store.lookup", "lookup"));
        assert!(!has_word("lookup_all(x)", "lookup"));
        assert!(!has_word("relookup", "lookup"));
    }
}
