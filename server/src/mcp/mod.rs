//! `quarry mcp`: the Model Context Protocol server (rmcp, stdio) that gives
//! coding agents the same index and cache as the editor.
//!
//! Owns: the five tools (`search_code`, `find_symbol`, `find_usages`,
//! `get_code_context`, `index_status`), their JSON schemas and their token-frugal output
//! (Markdown text plus structured content). Before every call the index is
//! brought up to date from the disk (a walk that only re-reads changed
//! files), so an agent never reads stale results.
//! Never: read or return files outside the workspace root; exit on a bad
//! call (errors come back as tool errors).

pub mod lines;
mod schemas;
mod text;
use crate::wire::{HubResultsJson, ResultsJson};
use quarry_engine::chunk::{chunk_file, detect_language, ChunkKind};
use quarry_engine::engine::Engine;
use quarry_engine::filter::Filter;
use quarry_engine::search::{
    find_symbols, search_with, snippet, Branches, DiskText, Mode, SearchOptions, Source, TextSource,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{schemars, tool, tool_handler, tool_router, ErrorData as McpError, ServerHandler};
use serde::Deserialize;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemas::{
    schema, FIND_SYMBOL_OUTPUT, FIND_USAGES_OUTPUT, GET_CODE_CONTEXT_OUTPUT, INDEX_STATUS_OUTPUT,
    SEARCH_CODE_OUTPUT,
};
use text::{
    agent_snippet, has_word, hub_usages, tool_error, usage_entry, with_structure, write_usages,
};

/// Most lines `get_code_context` returns.
const MAX_CONTEXT_LINES: usize = 400;
/// Most bytes `get_code_context` returns.
const MAX_CONTEXT_BYTES: usize = 32 * 1024;
/// Most definitions a `get_code_context` error lists.
const MAX_LISTED_DEFINITIONS: usize = 30;
/// Most hits `search_code` returns.
const MAX_SEARCH_HITS: usize = 100;
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SearchCodeArgs {
    /// A concept ("where do we retry failed requests"), an identifier
    /// (`GraphStore::lookup`) or a "quoted phrase".
    pub query: String,
    /// Most hits, 1 to 100 (default 10).
    pub limit: Option<usize>,
    /// Only paths matching this glob (`src/index`, `*.rs`).
    pub path: Option<String>,
    /// Only this language (rust, python, typescript, ...).
    pub language: Option<String>,
    /// Only this kind of definition (function, method, class, ...).
    pub kind: Option<String>,
    /// Spread hits over files (default: true, but false for a pasted text
    /// of 12 words or more on several lines, such as an issue, which is
    /// usually about several functions of one file): in the first five places a file's
    /// second and later hits count less, so more files show; later places
    /// go by score. Set false to rank by score alone when looking for one
    /// definition among similar ones in a file (a doc-comment-like
    /// description of a function).
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
    /// A path relative to the workspace root (or to `repo`'s root).
    pub path: String,
    /// With a hub: the repository a hit came from, when it is not this
    /// workspace's (its file is read from the hub, at the hub's commit).
    pub repo: Option<String>,
    /// A definition in that file (name or qualified name).
    pub symbol: Option<String>,
    /// First line (1-based) when no symbol is given.
    pub start_line: Option<usize>,
    /// Last line (1-based, inclusive).
    pub end_line: Option<usize>,
}

/// How long a tool call waits for a running update of the index before it
/// answers from what is committed.
const REFRESH_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Said first when a tool answers before the index caught up.
const STILL_INDEXING: &str =
    "_The workspace is still being indexed: these results cover what is indexed so far._\n\n";

/// A shared hub `search_code` asks first (`quarry mcp --hub`).
pub struct HubSearch {
    /// Shards (each a primary or a read replica).
    pub urls: Vec<String>,
    pub scope: quarry_engine::hub::RepoScope,
    /// The hub repository the workspace is a checkout of; `None`: no
    /// overlay (the hub's commits alone).
    pub repo: Option<String>,
    /// How long a query waits for the hub before the local index answers.
    pub timeout: std::time::Duration,
    /// After a failure, how long until the hub is tried again.
    pub retry: std::time::Duration,
    pub link: quarry_engine::hub::HubLink,
}

#[derive(Clone)]
pub struct QuarryMcp {
    engine: Arc<Engine>,
    hub: Option<Arc<HubSearch>>,
    /// Held while the index is being brought up to date.
    updating: Arc<tokio::sync::Mutex<()>>,
    tool_router: ToolRouter<QuarryMcp>,
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
    pub fn new(engine: Arc<Engine>, hub: Option<HubSearch>) -> QuarryMcp {
        QuarryMcp {
            engine,
            hub: hub.map(Arc::new),
            updating: Default::default(),
            tool_router: Self::tool_router(),
        }
    }

    /// Brings the index up to date and embeds a few fresh chunks, off the
    /// async threads. Waits at most `REFRESH_WAIT` for an update already
    /// running (the first walk of a huge root): then answers come from the
    /// committed index and say so. Whether the index is up to date.
    async fn refresh(&self) -> bool {
        let Ok(_updating) =
            tokio::time::timeout(REFRESH_WAIT, self.updating.clone().lock_owned()).await
        else {
            return false;
        };
        let engine = self.engine.clone();
        let _ = tokio::task::spawn_blocking(move || {
            let _ = engine.index().refresh(&|_| {});
            let _ = engine.catch_up();
        })
        .await;
        true
    }

    /// `search_code` over the hub, the workspace's changes overlaid; or why
    /// the hub did not answer (the caller answers from the local index).
    async fn search_hub(
        &self,
        hub: &Arc<HubSearch>,
        query: &str,
        options: &SearchOptions,
    ) -> Result<CallToolResult, String> {
        let results = self
            .on_hub(hub, query, options.clone(), true, |link, ask, rt| {
                rt.block_on(link.search(ask))
            })
            .await?;
        let mut out = String::new();
        if let Some(reason) = &results.reason {
            let _ = writeln!(out, "_{} search: {reason}_\n", results.mode);
        }
        if results.hits.is_empty() {
            out.push_str("No results.");
        } else if results.no_match {
            let _ = writeln!(
                out,
                "_No code matches the words of the query; these hits are only the nearest by meaning._\n"
            );
        }
        for found in &results.hits {
            let hit = &found.hit;
            let at = if found.local {
                "working tree".to_string()
            } else {
                found.commit.chars().take(12).collect()
            };
            let _ = writeln!(
                out,
                "- `{}` ({}) {}:{}:{}-{} ({at}) [{}]\n```\n{}\n```",
                hit.label,
                hit.kind,
                found.repo,
                hit.path,
                hit.start_line,
                hit.end_line,
                Source::joined(&hit.sources),
                hit.snippet.trim_end()
            );
        }
        let mut value = serde_json::to_value(HubResultsJson::from(&results)).unwrap_or(Value::Null);
        value["source"] = json!("hub");
        Ok(with_structure(out, value))
    }

    /// `find_symbol` over the hub, the workspace's changes overlaid; or why
    /// the hub did not answer.
    async fn symbols_hub(
        &self,
        hub: &Arc<HubSearch>,
        name: &str,
        kind: Option<ChunkKind>,
    ) -> Result<Vec<quarry_engine::hub::HubSymbol>, String> {
        self.on_hub(
            hub,
            name,
            SearchOptions::default(),
            true,
            move |link, ask, rt| rt.block_on(link.symbols(ask, kind, 50)),
        )
        .await
    }

    /// `find_usages` over the hub, the workspace's changes overlaid; or why
    /// the hub did not answer.
    async fn usages_hub(
        &self,
        hub: &Arc<HubSearch>,
        name: &str,
        limit: usize,
    ) -> Result<Vec<quarry_engine::hub::Usage>, String> {
        self.on_hub(
            hub,
            name,
            SearchOptions::default(),
            true,
            move |link, ask, rt| rt.block_on(link.usages(ask, limit)),
        )
        .await
    }

    /// A file of another repository of the hub (no overlay: the workspace's
    /// own repository is read from disk).
    async fn file_hub(
        &self,
        hub: &Arc<HubSearch>,
        repo: &str,
        path: &str,
    ) -> Result<Option<quarry_engine::hub::HubFile>, String> {
        let (repo, path) = (repo.to_string(), path.to_string());
        self.on_hub(
            hub,
            "",
            SearchOptions::default(),
            false,
            move |link, ask, rt| rt.block_on(link.file(ask, &repo, &path)),
        )
        .await
    }

    /// Runs `call` against the hub on a blocking thread, within the hub's
    /// timeout: the workspace compared afresh with the hub's commit (no
    /// watcher here; vectors of unchanged chunks come from the cache),
    /// meaning embedded with the transformer when it is usable.
    async fn on_hub<T: Send + 'static>(
        &self,
        hub: &Arc<HubSearch>,
        query: &str,
        options: SearchOptions,
        overlaid: bool,
        call: impl FnOnce(
                &quarry_engine::hub::HubLink,
                &quarry_engine::hub::Ask<'_>,
                &tokio::runtime::Handle,
            ) -> Result<T, String>
            + Send
            + 'static,
    ) -> Result<T, String> {
        let (hub, engine, query) = (hub.clone(), self.engine.clone(), query.to_string());
        let timeout = hub.timeout;
        let handle = tokio::runtime::Handle::current();
        let task =
            tokio::task::spawn_blocking(move || {
                hub.link.changed();
                let index = engine.index();
                let checkout = hub.repo.clone().filter(|_| overlaid).map(|repo| {
                    quarry_engine::hub::Checkout {
                        root: index.root().to_path_buf(),
                        repo,
                        buffers: Vec::new(),
                        max_file_size: index.max_file_size(),
                    }
                });
                let dense = engine.tiers().transformer().cloned();
                let dense = dense.filter(|e| e.unavailable().is_none());
                let ask = quarry_engine::hub::Ask {
                    urls: &hub.urls,
                    scope: &hub.scope,
                    checkout: checkout.as_ref(),
                    query: &query,
                    options: &options,
                    dense: dense.as_deref(),
                    retry: hub.retry,
                };
                call(&hub.link, &ask, &handle)
            });
        quarry_engine::hub::within(timeout, task).await
    }

    /// A root-relative path inside the workspace, or why not.
    fn resolve(&self, path: &str) -> Result<(PathBuf, String), String> {
        let root = self.engine.index().root();
        let joined = root.join(path.trim_start_matches("./"));
        let real =
            quarry_engine::confine::check(root, &joined).map_err(|refusal| match refusal {
                quarry_engine::confine::Refusal::Outside(_) => {
                    format!("{path:?} is outside the workspace")
                }
                other => format!("cannot open {path:?}: {other}"),
            })?;
        let rel = quarry_engine::walk::relative_path(root, &real)
            .ok_or_else(|| format!("{path:?} is outside the workspace"))?;
        Ok((real, rel))
    }
}

#[tool_router]
impl QuarryMcp {
    #[tool(
        annotations(read_only_hint = true, open_world_hint = false),
        output_schema = schema(SEARCH_CODE_OUTPUT),
        description = "Search the workspace's code: hybrid lexical + semantic + symbol-name search with exact-match priority. Returns the best definitions with path:lines, and for each its signature and the line that matched, numbered. `no_match` says when nothing matched the query's words (the hits are then only near it in meaning)."
    )]
    async fn search_code(
        &self,
        Parameters(args): Parameters<SearchCodeArgs>,
    ) -> Result<CallToolResult, McpError> {
        if args.query.trim().is_empty() {
            return tool_error("query is empty");
        }
        if let Err(e) = quarry_engine::search::check_query(&args.query) {
            return tool_error(e);
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
        let limit = args.limit.unwrap_or(10);
        if !(1..=MAX_SEARCH_HITS).contains(&limit) {
            return tool_error(format!("limit must be 1 to {MAX_SEARCH_HITS}, not {limit}"));
        }
        let current = self.refresh().await;
        let options = SearchOptions {
            limit,
            snippet_lines: 4,
            filter,
            // As asked, for any query; by default as the defaults say.
            file_saturation: match args.spread_files {
                Some(false) => 0.0,
                _ => SearchOptions::default().file_saturation,
            },
            long_file_saturation: match args.spread_files {
                Some(true) => SearchOptions::default().file_saturation,
                Some(false) => 0.0,
                None => SearchOptions::default().long_file_saturation,
            },
            ..SearchOptions::default()
        };
        let mut hub_down = None;
        if let Some(hub) = &self.hub {
            match self.search_hub(hub, &args.query, &options).await {
                Ok(answer) => return Ok(answer),
                Err(why) => hub_down = Some(format!("hub: {why}; answered from the local index")),
            }
        }
        let snapshot = self.engine.index().snapshot();
        let mut text = DiskText::of(self.engine.index());
        let mut results = self
            .engine
            .tiers()
            .search(&snapshot, &args.query, &options, &mut text);
        if let Some(down) = &hub_down {
            results.reason = Some(quarry_engine::hub::local_reason(
                down,
                results.reason.take(),
            ));
        }
        for hit in &mut results.hits {
            if let Some(file) = text.text(&hit.path) {
                hit.snippet = agent_snippet(file, hit);
            }
        }
        let mut out = String::new();
        if !current {
            out.push_str(STILL_INDEXING);
        }
        if let Some(down) = &hub_down {
            let _ = writeln!(out, "_{down}_\n");
        }
        match (results.mode, &results.reason) {
            (Mode::Lexical, Some(reason)) => {
                let _ = writeln!(out, "_lexical-only: {reason}_\n");
            }
            (Mode::Partial, Some(reason)) => {
                let _ = writeln!(out, "_partial hybrid: {reason}_\n");
            }
            _ => {}
        }
        if results.hits.is_empty() {
            out.push_str("No results.");
        } else if results.no_match {
            let _ = writeln!(
                out,
                "_No code matches the words of the query; these hits are only the nearest by meaning._\n"
            );
        }
        for hit in &results.hits {
            let _ = writeln!(
                out,
                "- `{}` ({}) {}:{}-{} [{}]\n```\n{}\n```",
                hit.label,
                hit.kind,
                hit.path,
                hit.start_line,
                hit.end_line,
                Source::joined(&hit.sources),
                hit.snippet.trim_end()
            );
        }
        let value = serde_json::to_value(ResultsJson::from(&results)).unwrap_or(Value::Null);
        Ok(with_structure(out, value))
    }

    #[tool(
        annotations(read_only_hint = true, open_world_hint = false),
        output_schema = schema(FIND_SYMBOL_OUTPUT),
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
        let mut hub_down = None;
        if let Some(hub) = &self.hub {
            match self.symbols_hub(hub, &args.name, kind).await {
                Ok(mut found) => {
                    if args.exact.unwrap_or(false) {
                        found.retain(|h| h.symbol.tier == "exact");
                    }
                    if found.is_empty() {
                        return tool_error(format!("no symbol matches {:?} in the hub", args.name));
                    }
                    let mut out = String::new();
                    for h in &found {
                        let at = if h.local {
                            "working tree".to_string()
                        } else {
                            h.commit.chars().take(12).collect()
                        };
                        let s = &h.symbol;
                        let _ = writeln!(
                            out,
                            "- `{}` ({}, {}) {}:{}:{}-{} ({at})",
                            s.qualified_name,
                            s.kind,
                            s.tier,
                            h.repo,
                            s.path,
                            s.start_line,
                            s.end_line
                        );
                    }
                    return Ok(with_structure(
                        out,
                        json!({ "symbols": crate::wire::hub_symbols(&found), "source": "hub" }),
                    ));
                }
                Err(why) => hub_down = Some(format!("hub: {why}; answered from the local index")),
            }
        }
        let snapshot = self.engine.index().snapshot();
        let mut hits = find_symbols(&snapshot, &args.name, kind, 50);
        if args.exact.unwrap_or(false) {
            hits.retain(|h| h.tier == "exact");
        }
        if hits.is_empty() {
            return tool_error(format!("no symbol matches {:?}", args.name));
        }
        let mut out = String::new();
        if let Some(down) = &hub_down {
            let _ = writeln!(out, "_{down}_\n");
        }
        for h in &hits {
            let _ = writeln!(
                out,
                "- `{}` ({}, {}) {}:{}-{}",
                h.qualified_name, h.kind, h.tier, h.path, h.start_line, h.end_line
            );
        }
        let mut value = json!({ "symbols": crate::wire::symbols(&hits) });
        if let Some(down) = hub_down {
            value["reason"] = json!(down);
        }
        Ok(with_structure(out, value))
    }

    #[tool(
        annotations(read_only_hint = true, open_world_hint = false),
        output_schema = schema(FIND_USAGES_OUTPUT),
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
        let mut hub_down = None;
        if let Some(hub) = &self.hub {
            match self.usages_hub(hub, &name, limit).await {
                Ok(found) => return Ok(hub_usages(&name, found)),
                Err(why) => hub_down = Some(format!("hub: {why}; answered from the local index")),
            }
        }
        let options = SearchOptions {
            limit: limit * 2,
            per_file_cap: 0,
            file_saturation: 0.0,
            exact_priority: false,
            branches: Branches {
                lexical: true,
                dense: false,
                symbol: false,
            },
            signals: quarry_engine::rank::signals::Signals::off(),
            ..SearchOptions::default()
        };
        let snapshot = self.engine.index().snapshot();
        let mut text = DiskText::of(self.engine.index());
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
            let Ok(file) = quarry_engine::confine::read_text(
                self.engine.index().root(),
                Path::new(&hit.path),
                self.engine.index().max_file_size(),
            ) else {
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
            let entry = usage_entry(
                &hit.symbol,
                hit.kind,
                lines.iter().map(|(n, l)| (*n, l.trim())),
            );
            match groups.iter_mut().find(|(p, _)| *p == hit.path) {
                Some((_, entries)) => entries.push(entry),
                None => groups.push((hit.path.clone(), vec![entry])),
            }
        }
        if groups.is_empty() {
            let mut value = json!({ "symbol": name, "files": [] });
            if let Some(down) = hub_down {
                value["reason"] = json!(down);
            }
            return Ok(with_structure(
                format!("No usages of `{name}` outside its definition."),
                value,
            ));
        }
        let mut out = String::new();
        if let Some(down) = &hub_down {
            let _ = writeln!(out, "_{down}_\n");
        }
        for (path, entries) in &groups {
            write_usages(&mut out, path, entries);
        }
        let files: Vec<Value> = groups
            .into_iter()
            .map(|(path, usages)| json!({"path": path, "usages": usages}))
            .collect();
        let mut value = json!({ "symbol": name, "files": files });
        if let Some(down) = hub_down {
            value["reason"] = json!(down);
        }
        Ok(with_structure(out, value))
    }

    #[tool(
        annotations(read_only_hint = true, open_world_hint = false),
        output_schema = schema(INDEX_STATUS_OUTPUT),
        description = "How current the index is: whether this server writes the workspace's index or reads one another Quarry process (an editor's language server) writes, how many seconds ago it was last committed, files and definitions indexed, how many have vectors, and the model."
    )]
    async fn index_status(&self) -> Result<CallToolResult, McpError> {
        let indexing = self.updating.try_lock().is_err();
        let index = self.engine.index();
        let snapshot = index.snapshot();
        let (embedded, chunks) = snapshot.coverage_of(self.engine.dense().tier());
        let role = if index.is_writer() {
            "writer"
        } else {
            "reader"
        };
        let age = index.committed_age_secs();
        let value = json!({
            "root": index.root(),
            "role": role,
            "index_age_secs": age,
            "indexing": indexing,
            "files": snapshot.summary.files_indexed,
            "chunks": chunks,
            "embedded": embedded,
            "model": self.engine.dense().model_id(),
            "model_error": self.engine.dense().unavailable_reason(),
        });
        let mut out = String::new();
        let age = age.map_or("no commit yet".to_string(), |s| {
            format!("committed {s:.0} s ago")
        });
        if index.is_writer() {
            let _ = writeln!(out, "This server writes the index ({age}).");
        } else {
            let _ = writeln!(
                out,
                "Another Quarry process writes the index; this server reads its commits ({age}) and its own refreshes wait for that process."
            );
        }
        if indexing {
            let _ = writeln!(out, "An update is running.");
        }
        let _ = writeln!(
            out,
            "{} files, {chunks} definitions, {embedded} with vectors.",
            snapshot.summary.files_indexed
        );
        match (
            self.engine.dense().model_id(),
            self.engine.dense().unavailable_reason(),
        ) {
            (Some(model), _) => {
                let _ = writeln!(out, "Model: {model}.");
            }
            (None, reason) => {
                let _ = writeln!(
                    out,
                    "No model ({}): search is lexical-only.",
                    reason.as_deref().unwrap_or("unknown")
                );
            }
        }
        Ok(with_structure(out, value))
    }

    #[tool(
        annotations(read_only_hint = true, open_world_hint = false),
        output_schema = schema(GET_CODE_CONTEXT_OUTPUT),
        description = "Read current code: a whole file, one definition in it (located by parsing the file as it is now), or a line range. Paths are relative to the workspace; output is capped."
    )]
    async fn get_code_context(
        &self,
        Parameters(args): Parameters<GetCodeContextArgs>,
    ) -> Result<CallToolResult, McpError> {
        let own = self.hub.as_ref().and_then(|h| h.repo.as_deref());
        let other_repo = args.repo.as_deref().filter(|r| Some(*r) != own);
        let (text, rel, from) = match (other_repo, &self.hub) {
            (Some(repo), Some(hub)) => {
                let path = args.path.trim_start_matches("./");
                match self.file_hub(hub, repo, path).await {
                    Ok(Some(file)) => (file.text, file.path, Some((file.repo, file.commit))),
                    Ok(None) => {
                        return tool_error(format!(
                            "no file {path:?} in repository {repo:?} of the hub (or this role may not read it)"
                        ))
                    }
                    Err(why) => return tool_error(format!("hub: {why}")),
                }
            }
            (Some(repo), None) => {
                return tool_error(format!(
                    "repository {repo:?} is not this workspace, and this server has no hub (`quarry mcp --hub URL`)"
                ))
            }
            (None, _) => {
                let (abs, rel) = match self.resolve(&args.path) {
                    Ok(found) => found,
                    Err(e) => return tool_error(e),
                };
                match quarry_engine::confine::read_text(
                    self.engine.index().root(),
                    &abs,
                    self.engine.index().max_file_size(),
                ) {
                    Ok(text) => (text, rel, None),
                    Err(e) => return tool_error(format!("cannot read {rel}: {e}")),
                }
            }
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
                            .collect();
                        let listed = if names.len() > MAX_LISTED_DEFINITIONS {
                            format!(
                                "the first {MAX_LISTED_DEFINITIONS} of its {} definitions",
                                names.len()
                            )
                        } else {
                            "it defines".to_string()
                        };
                        return tool_error(format!(
                            "no definition {symbol:?} in {rel}; {listed}: {}",
                            names[..names.len().min(MAX_LISTED_DEFINITIONS)].join(", ")
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
        let mut value = json!({
            "path": rel, "symbol": symbol, "start_line": start, "end_line": shown_end,
            "truncated": truncated, "text": body,
        });
        if let Some((repo, commit)) = from {
            out = format!(
                "{repo} at {}: {out}",
                commit.chars().take(12).collect::<String>()
            );
            value["repo"] = json!(repo);
            value["commit"] = json!(commit);
            value["source"] = json!("hub");
        }
        Ok(with_structure(out, value))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for QuarryMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("quarry", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Code search over this workspace. search_code for concepts, identifiers and quoted phrases; find_symbol for definitions by name; find_usages for where an identifier is used; get_code_context to read current code; index_status for how current the index is.",
            )
    }
}

/// Serves MCP on stdin/stdout until the client disconnects. rmcp speaks
/// to `lines`' gate, never to the client's raw bytes.
pub async fn run_stdio(engine: Arc<Engine>, hub: Option<HubSearch>) -> Result<(), String> {
    use rmcp::ServiceExt;
    let (rmcp_in, gate_out) = tokio::io::duplex(1 << 16);
    let (rmcp_out, gate_in) = tokio::io::duplex(1 << 16);
    let (answers, answered) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(lines::pump_input(tokio::io::stdin(), gate_out, answers));
    let output = tokio::spawn(lines::pump_output(gate_in, answered, tokio::io::stdout()));
    let server = QuarryMcp::new(engine, hub);
    // The first update runs while the client initializes: `initialize`
    // is answered at once even on a root of millions of files.
    let first = server.clone();
    tokio::spawn(async move { first.refresh().await });
    let service = server
        .serve((rmcp_in, rmcp_out))
        .await
        .map_err(|e| e.to_string())?;
    let waited = service.waiting().await.map_err(|e| e.to_string());
    let _ = output.await;
    waited?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use quarry_engine::search::Hit;

    #[test]
    fn output_schemas_are_json_objects() {
        for text in [
            SEARCH_CODE_OUTPUT,
            FIND_SYMBOL_OUTPUT,
            FIND_USAGES_OUTPUT,
            GET_CODE_CONTEXT_OUTPUT,
            INDEX_STATUS_OUTPUT,
        ] {
            let value: Value = serde_json::from_str(text).expect("schema parses");
            assert_eq!(value["type"], "object");
            assert!(!schema(text).is_empty());
        }
    }

    #[test]
    fn an_agent_sees_the_signature_and_the_matched_line() {
        let file = "/// Builds.\n///\n/// More docs.\npub fn build_parallel(&self) {\n    let a = 1;\n    let b = 2;\n    spawn_workers();\n    done();\n}\n";
        let hit = Hit {
            chunk_id: 0,
            path: "walk.rs".into(),
            start_line: 1,
            end_line: 9,
            symbol: "build_parallel".into(),
            name: "build_parallel".into(),
            label: "build_parallel".into(),
            kind: "function",
            language: "rust",
            score: 1.0,
            sources: vec![],
            ranks: Default::default(),
            snippet: String::new(),
            detail: "spawn_workers();".into(),
            detail_line: 7,
        };
        assert_eq!(
            agent_snippet(file, &hit),
            "4: pub fn build_parallel(&self) {\n5:     let a = 1;\n…\n7:     spawn_workers();\n8:     done();"
        );
    }

    #[test]
    fn whole_words_only() {
        assert!(has_word("let x = lookup(id);", "lookup"));
        assert!(has_word("store.lookup", "lookup"));
        assert!(!has_word("lookup_all(x)", "lookup"));
        assert!(!has_word("relookup", "lookup"));
    }
}
