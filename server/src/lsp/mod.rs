//! `quarry lsp`: the language server. Speaks LSP over stdio with
//! tower-lsp-server on tokio and serves the whole engine to an editor.
//!
//! Owns: workspace folders (one `Index` each, opened from the persistent
//! cache), the overlay of open buffers, background indexing with
//! `$/progress`, the file watcher, and the requests: `workspace/symbol`,
//! `quarry/search`, `quarry/status` and the `quarry.reindex` command.
//!
//! Invariants: the message loop never waits on indexing: index work runs on
//! blocking threads, one job per folder at a time, and requests read the
//! last published snapshot. Every hit's range and snippet come from the
//! text as it is now: the open buffer (the symbol re-located by re-parsing
//! it; dropped if gone) or the file on disk. Logs go to stderr and
//! `window/logMessage`, never stdout.
//! Never: panic on client input; block a request behind the writer.

mod framing;
mod lanes;
pub mod overlay;
pub mod settings;
#[cfg(unix)]
mod stdio;

use overlay::Overlay;
use quarry_engine::chunk::{detect_language, ChunkKind};
use quarry_engine::dense::{DenseEngine, DenseTier};
use quarry_engine::filter::Filter;
use quarry_engine::index::Index;
use quarry_engine::rank::FuseConfig;
use quarry_engine::search::{
    find_again, find_symbols, is_preamble, snippet, DiskText, Hit, SearchOptions, SymbolHit,
    TextSource,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use settings::Settings;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio::sync::Notify;
use tower_lsp_server::jsonrpc::{Error as RpcError, Result as RpcResult};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer, LspService, Server};

use lanes::{embed_loop, follow_loop, save_vectors, update_loop, Progress};

/// The command that rebuilds every folder's index.
pub const REINDEX_COMMAND: &str = "quarry.reindex";

/// Requests of ours that take no parameters (`{}` and `null` are accepted).
const PARAMLESS: &[&str] = &["quarry/status"];

/// How the session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// `shutdown` then `exit`, or the client closed stdin.
    Clean,
    /// `exit` without a prior `shutdown` (LSP: the process exits with 1).
    ExitWithoutShutdown,
}

/// Runs the server on stdin/stdout until the client exits. Messages over
/// `max_message` bytes are refused.
///
/// Messages pass through `framing`, which answers malformed frames and
/// invalid JSON-RPC itself: the protocol library stops reading at the first
/// of them.
pub async fn run_stdio(max_message: usize) -> Ended {
    let (service, socket) = LspService::build(Backend::new)
        .custom_method("quarry/search", Backend::quarry_search)
        .custom_method("quarry/status", Backend::quarry_status)
        .finish();
    let state = service.inner().state.clone();
    let (to_server, server_input) = tokio::io::duplex(1 << 16);
    let (server_output, from_server) = tokio::io::duplex(1 << 16);
    // Everything written to stdout, whole frames in order: the server's
    // messages and the gate's answers to bad ones.
    let (frames_tx, frames_rx) = tokio::sync::mpsc::unbounded_channel();
    let gate = framing::Gate {
        max_message,
        paramless: PARAMLESS,
        exit_seen: Arc::new(AtomicBool::new(false)),
        exit: Arc::new(Notify::new()),
    };
    let exit_seen = gate.exit_seen.clone();
    let exit = gate.exit.clone();
    let input = tokio::spawn(framing::pump_input(
        stdin(),
        to_server,
        frames_tx.clone(),
        gate,
    ));
    tokio::spawn(framing::read_server(from_server, frames_tx));
    let output = tokio::spawn(framing::write_output(frames_rx, stdout()));
    {
        let serve = Server::new(server_input, server_output, socket).serve(service);
        tokio::pin!(serve);
        tokio::select! {
            _ = &mut serve => {}
            _ = exit.notified() => {
                // The library waits for every handler in flight, and one
                // may be waiting for an answer from a client that has
                // stopped listening: `exit` means now.
                let _ = tokio::time::timeout(Duration::from_millis(300), &mut serve).await;
            }
        }
    }
    // Stop reading stdin (the client may keep it open after `exit`), then
    // let the writer drain what is queued.
    input.abort();
    let _ = tokio::time::timeout(Duration::from_secs(2), output).await;
    if exit_seen.load(Ordering::SeqCst) && !state.shutting_down.load(Ordering::SeqCst) {
        log("exit without shutdown");
        Ended::ExitWithoutShutdown
    } else {
        Ended::Clean
    }
}

type Input = Box<dyn tokio::io::AsyncRead + Unpin + Send>;
type Output = Box<dyn tokio::io::AsyncWrite + Unpin + Send>;

/// fd 0: read on the runtime's threads where it is a pipe or socket
/// (`stdio::PipeIo`), through tokio's blocking stdin otherwise.
fn stdin() -> Input {
    #[cfg(unix)]
    if let Some(pipe) = stdio::PipeIo::stdin() {
        return Box::new(pipe);
    }
    Box::new(tokio::io::stdin())
}

/// fd 1, as `stdin`.
fn stdout() -> Output {
    #[cfg(unix)]
    if let Some(pipe) = stdio::PipeIo::stdout() {
        return Box::new(pipe);
    }
    Box::new(tokio::io::stdout())
}

/// One workspace folder and its index.
struct Folder {
    root: PathBuf,
    /// Opened in the background after `initialized`.
    index: RwLock<Option<Arc<Index>>>,
    /// One index job at a time per folder.
    busy: tokio::sync::Mutex<()>,
    last_error: Mutex<Option<String>>,
    /// What the last full walk did (for `quarry/status`).
    last_walk: Mutex<Option<quarry_engine::index::UpdateStats>>,
    /// Vectors computed by the model, and taken from the vector cache,
    /// since the server started.
    vectors_computed: AtomicU64,
    vectors_from_cache: AtomicU64,
    /// Held by the embedding lane while it embeds this folder.
    embedding: tokio::sync::Mutex<()>,
    /// The lane is embedding this folder now.
    embedding_active: AtomicBool,
    /// Paths whose chunks the lane embeds first (edited, saved, changed).
    embed_priority: Mutex<BTreeSet<String>>,
}

impl Folder {
    fn index(&self) -> Option<Arc<Index>> {
        self.index.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn set_error(&self, error: Option<String>) {
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = error;
    }
}

/// Work waiting for the update loop.
#[derive(Default)]
struct Pending {
    /// Files changed on disk (saved, watched, or reported by the client).
    paths: BTreeSet<PathBuf>,
    /// Open buffers whose unsaved text should be indexed.
    buffers: BTreeSet<PathBuf>,
    /// Folders to walk in full (new folders, `quarry.reindex`).
    walks: BTreeSet<PathBuf>,
    /// A save is waiting: run without the debounce delay.
    urgent: bool,
}

struct State {
    client: Client,
    settings: RwLock<Settings>,
    folders: RwLock<Vec<Arc<Folder>>>,
    overlay: Overlay,
    engine: RwLock<Option<Arc<DenseEngine>>>,
    /// The static tier of `engine`'s model, when the setting asks for it.
    static_engine: RwLock<Option<Arc<DenseEngine>>>,
    pending: Mutex<Pending>,
    wake: Notify,
    /// Wakes the embedding lane.
    embed_wake: Notify,
    progress_supported: AtomicBool,
    next_token: AtomicU64,
    shutting_down: AtomicBool,
    watcher: Mutex<Option<notify::RecommendedWatcher>>,
    /// The shared hub `quarry/search` asks first, when the settings name one.
    hub: quarry_engine::hub::HubLink,
}

pub struct Backend {
    state: Arc<State>,
}

fn log(message: &str) {
    eprintln!("quarry: {message}");
}

impl Backend {
    fn new(client: Client) -> Backend {
        Backend {
            state: Arc::new(State {
                client,
                settings: RwLock::new(Settings::default()),
                folders: RwLock::new(Vec::new()),
                overlay: Overlay::default(),
                engine: RwLock::new(None),
                static_engine: RwLock::new(None),
                pending: Mutex::new(Pending::default()),
                wake: Notify::new(),
                embed_wake: Notify::new(),
                progress_supported: AtomicBool::new(false),
                next_token: AtomicU64::new(1),
                shutting_down: AtomicBool::new(false),
                hub: quarry_engine::hub::HubLink::default(),
                watcher: Mutex::new(None),
            }),
        }
    }
}

impl State {
    fn settings(&self) -> Settings {
        self.settings
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn folders(&self) -> Vec<Arc<Folder>> {
        self.folders
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn engine(&self) -> Option<Arc<DenseEngine>> {
        self.engine
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn static_engine(&self) -> Option<Arc<DenseEngine>> {
        self.static_engine
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .filter(|e| e.unavailable_reason().is_none())
    }

    /// The tiers this server has loaded: the transformer, and with the
    /// `staticTier` setting the static tier (`engine::Tiers::choose` says
    /// which answers a snapshot, as on every surface).
    fn tiers(&self) -> quarry_engine::engine::Tiers {
        quarry_engine::engine::Tiers::new(self.engine(), self.static_engine())
    }

    /// The folder holding `path` (the innermost, for nested roots).
    fn folder_of(&self, path: &Path) -> Option<Arc<Folder>> {
        self.folders()
            .into_iter()
            .filter(|f| path.starts_with(&f.root))
            .max_by_key(|f| f.root.as_os_str().len())
    }

    /// A message for the user, through `window/logMessage` only: clients
    /// also show the server's stderr, so writing both doubled every line.
    async fn log(&self, typ: MessageType, message: String) {
        self.client.log_message(typ, message).await;
    }

    fn queue(&self, f: impl FnOnce(&mut Pending)) {
        f(&mut self.pending.lock().unwrap_or_else(|e| e.into_inner()));
        self.hub.changed();
        self.wake.notify_one();
    }

    fn add_folder(&self, root: PathBuf) -> bool {
        let root = std::fs::canonicalize(&root).unwrap_or(root);
        let mut folders = self.folders.write().unwrap_or_else(|e| e.into_inner());
        if folders.iter().any(|f| f.root == root) {
            return false;
        }
        folders.push(Arc::new(Folder {
            root: root.clone(),
            index: RwLock::new(None),
            busy: tokio::sync::Mutex::new(()),
            last_error: Mutex::new(None),
            last_walk: Mutex::new(None),
            vectors_computed: AtomicU64::new(0),
            vectors_from_cache: AtomicU64::new(0),
            embedding: tokio::sync::Mutex::new(()),
            embedding_active: AtomicBool::new(false),
            embed_priority: Mutex::new(BTreeSet::new()),
        }));
        drop(folders);
        if let Some(watcher) = self
            .watcher
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
        {
            use notify::Watcher;
            if let Err(e) = watcher.watch(&root, notify::RecursiveMode::Recursive) {
                log(&format!("cannot watch {}: {e}", root.display()));
            }
        }
        self.queue(|p| {
            p.walks.insert(root);
        });
        true
    }

    fn remove_folder(&self, root: &Path) {
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        self.folders
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|f| f.root != root);
        if let Some(watcher) = self
            .watcher
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
        {
            use notify::Watcher;
            let _ = watcher.unwatch(&root);
        }
    }

    /// Starts a `$/progress` stream if the client supports it.
    async fn progress(&self, title: &str) -> Option<Progress> {
        if !self.progress_supported.load(Ordering::Relaxed) {
            return None;
        }
        let token = NumberOrString::String(format!(
            "quarry/{}",
            self.next_token.fetch_add(1, Ordering::Relaxed)
        ));
        if self
            .client
            .create_work_done_progress(token.clone())
            .await
            .is_err()
        {
            return None;
        }
        let progress = self
            .client
            .progress(token, title.to_string())
            .with_percentage(0)
            .begin()
            .await;
        Some(progress)
    }
}

/// How much less the static tier's order counts where it stands in for
/// the transformer (`FuseConfig::fill_discount`; 2 measured best of 1, 2,
/// 3 and 5 on the development set).
const STATIC_FILL_DISCOUNT: f32 = 2.0;

fn path_of(uri: &Uri) -> Option<PathBuf> {
    uri.to_file_path().map(|p| p.into_owned())
}

fn symbol_kind(kind: &str) -> SymbolKind {
    match ChunkKind::from_name(kind) {
        Some(ChunkKind::Function) => SymbolKind::FUNCTION,
        Some(ChunkKind::Method) => SymbolKind::METHOD,
        Some(ChunkKind::Class) => SymbolKind::CLASS,
        Some(ChunkKind::Struct) => SymbolKind::STRUCT,
        Some(ChunkKind::Enum) => SymbolKind::ENUM,
        Some(ChunkKind::Trait | ChunkKind::Interface) => SymbolKind::INTERFACE,
        Some(ChunkKind::Impl) => SymbolKind::CLASS,
        Some(ChunkKind::Module) => SymbolKind::MODULE,
        Some(ChunkKind::Constant | ChunkKind::Static) => SymbolKind::CONSTANT,
        Some(ChunkKind::Variable) => SymbolKind::VARIABLE,
        Some(ChunkKind::TypeAlias) => SymbolKind::TYPE_PARAMETER,
        Some(ChunkKind::Macro) => SymbolKind::FUNCTION,
        Some(ChunkKind::Field) => SymbolKind::FIELD,
        Some(ChunkKind::Section | ChunkKind::Lines) | None => SymbolKind::STRING,
    }
}

/// Lines `start..=end` (1-based) as an LSP range: line starts, the end
/// exclusive at the start of the next line.
fn line_range(start_line: u32, end_line: u32) -> Range {
    Range {
        start: Position::new(start_line.saturating_sub(1), 0),
        end: Position::new(end_line, 0),
    }
}

/// `quarry/search` parameters.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchParams {
    pub query: String,
    pub limit: Option<usize>,
    pub per_file_cap: Option<usize>,
    #[serde(default)]
    pub paths: Vec<String>,
    #[serde(default)]
    pub languages: Vec<String>,
    #[serde(default)]
    pub kinds: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    pub uri: Uri,
    /// The whole definition, doc comment and attributes included.
    pub range: Range,
    /// Where to open it: the symbol's name (past its doc comment and
    /// decorators), or for a phrase hit the first place the phrase is.
    pub selection_range: Range,
    pub symbol: String,
    /// How to show the hit (`impl Trait for X` for an impl block).
    pub label: String,
    /// The line that matched the query, or the signature.
    pub detail: String,
    pub kind: &'static str,
    pub language: &'static str,
    /// Falls strictly down the list.
    pub score: f32,
    pub sources: Vec<&'static str>,
    pub snippet: String,
    /// Over a hub: the repository and commit the hit comes from (the
    /// commit is absent for the workspace's own, current text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResponse {
    pub mode: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub coverage: Value,
    pub hits: Vec<SearchHit>,
    /// No chunk matched the query's words or names: the hits, if any, are
    /// only near it in meaning.
    pub no_match: bool,
    /// `starting` while a folder's index is still loading (the answer may
    /// be empty for that reason alone), else `ready`.
    pub state: &'static str,
    /// Who answered: `hub` (the shared index, the workspace's changes
    /// overlaid) or `local` (the workspace's own index).
    pub source: &'static str,
    /// Over a hub: repositories searched, candidate files and the overlay.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hub: Option<Value>,
}

/// A hit re-located in an open buffer: the chunk of the same qualified name
/// and kind nearest its indexed line, or `None` if the symbol is gone.
fn relocate(hit: &Hit, text: &str, snippet_lines: usize) -> Option<(Range, String)> {
    let language = detect_language(Path::new(&hit.path))?;
    let kind = ChunkKind::from_name(hit.kind)?;
    let chunk = find_again(&hit.path, text, language, &hit.symbol, kind, hit.start_line)?;
    let range = Range {
        start: overlay::position(text, chunk.byte_start as usize),
        end: overlay::position(text, chunk.byte_end as usize),
    };
    let snippet = snippet(text, chunk.start_line, chunk.end_line, snippet_lines);
    Some((range, snippet))
}

/// A hit as the response shows it, at `uri`: re-located in `buffer` when
/// the file is open (`None` when its symbol is gone from the buffer), its
/// selection at the name (or the phrase) in the file's current `text`.
fn shape_hit(
    hit: Hit,
    uri: Uri,
    buffer: Option<&str>,
    text: &mut dyn TextSource,
    phrases: &[String],
    snippet_lines: usize,
) -> Option<SearchHit> {
    let (range, snippet) = match buffer {
        Some(buffer) => relocate(&hit, buffer, snippet_lines)?,
        None => (
            line_range(hit.start_line, hit.end_line),
            hit.snippet.clone(),
        ),
    };
    let pinned_phrase = hit.sources.contains(&"phrase");
    let selection_range = text
        .text(&hit.path)
        .and_then(|file| {
            let needles: Vec<&str> = if pinned_phrase {
                phrases.iter().map(String::as_str).collect()
            } else {
                Vec::new()
            };
            name_position(file, range.start.line, range.end.line, &hit.name, &needles)
        })
        // A text window opens at the line that matched.
        .or_else(|| {
            (!ChunkKind::from_name(hit.kind).is_some_and(ChunkKind::is_definition))
                .then(|| Position::new(hit.detail_line.saturating_sub(1), 0))
        })
        .map_or(Range::new(range.start, range.start), |at| {
            Range::new(at, at)
        });
    Some(SearchHit {
        uri,
        range,
        selection_range,
        symbol: hit.symbol,
        label: hit.label,
        detail: hit.detail,
        kind: hit.kind,
        language: hit.language,
        score: hit.score,
        sources: hit.sources,
        snippet,
        repo: None,
        commit: None,
    })
}

impl Backend {
    async fn quarry_search(&self, params: Value) -> RpcResult<SearchResponse> {
        let params: SearchParams = serde_json::from_value(params)
            .map_err(|e| RpcError::invalid_params(format!("quarry/search: {e}")))?;
        quarry_engine::search::check_query(&params.query)
            .map_err(|e| RpcError::invalid_params(format!("quarry/search: {e}")))?;
        let settings = self.state.settings();
        let filter = Filter::new(
            &params.paths,
            &settings.exclude,
            &params.languages,
            &params.kinds,
        )
        .map_err(|e| RpcError::invalid_params(e.to_string()))?;
        let limit = params.limit.unwrap_or(settings.limit).clamp(1, 1000);
        let options = SearchOptions {
            limit,
            per_file_cap: params.per_file_cap.unwrap_or(settings.per_file_cap),
            fuse: FuseConfig {
                k: settings.rrf_k,
                depth: settings.depth,
                fill_discount: if settings.static_tier {
                    STATIC_FILL_DISCOUNT
                } else {
                    f32::INFINITY
                },
                ..FuseConfig::default()
            },
            filter,
            ..SearchOptions::default()
        };
        let state = self.state.clone();
        let query = params.query;
        let mut hub_down = None;
        if !settings.hub.is_empty() {
            match search_hub(&state, &settings, &query, &options).await {
                Ok(response) => return Ok(response),
                Err(why) => {
                    log(&format!("hub: {why}"));
                    hub_down = Some(format!("hub: {why}; answered from the local index"));
                }
            }
        }
        let mut response =
            tokio::task::spawn_blocking(move || search_all(&state, &query, &options))
                .await
                .map_err(|_| RpcError::internal_error())?;
        if let Some(down) = hub_down {
            response.reason = Some(quarry_engine::hub::local_reason(
                &down,
                response.reason.take(),
            ));
        }
        Ok(response)
    }

    /// `quarry/status` (no params; `{}` and `null` are accepted too). `mode`
    /// is `hybrid` only once every chunk of every folder has a vector.
    async fn quarry_status(&self) -> RpcResult<Value> {
        let engine = self.state.engine();
        let settings = self.state.settings();
        let model = match (&engine, settings.lexical_only) {
            (_, true) => json!({"id": null, "error": "lexical-only by setting"}),
            (None, false) => json!({"id": null, "error": "not loaded yet"}),
            (Some(e), false) => json!({"id": e.model_id(), "error": e.unavailable_reason()}),
        };
        let folders: Vec<Value> = self
            .state
            .folders()
            .iter()
            .map(|folder| {
                let error = folder
                    .last_error
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                match folder.index() {
                    Some(index) => {
                        let snapshot = index.snapshot();
                        let (embedded, total) = snapshot.coverage();
                        let (static_embedded, _) = snapshot.coverage_of(DenseTier::Static);
                        json!({
                            "root": folder.root,
                            "cacheDir": index.cache_dir(),
                            "ready": true,
                            "files": snapshot.summary.files_indexed,
                            "chunks": total,
                            "embedded": embedded,
                            "staticEmbedded": static_embedded,
                            "skipped": snapshot.summary.skipped,
                            "lastWalk": *folder.last_walk.lock().unwrap_or_else(|e| e.into_inner()),
                            "vectorsComputed": folder.vectors_computed.load(Ordering::Relaxed),
                            "vectorsFromCache": folder.vectors_from_cache.load(Ordering::Relaxed),
                            "embedding": folder.embedding_active.load(Ordering::SeqCst),
                            "lastError": error,
                            // Whether this server writes the index or
                            // serves another process's commits, and how
                            // old the newest commit it serves is.
                            "role": if index.is_writer() { "writer" } else { "reader" },
                            "indexAgeSecs": index.committed_age_secs(),
                        })
                    }
                    None => json!({"root": folder.root, "ready": false, "lastError": error}),
                }
            })
            .collect();
        let complete = folders
            .iter()
            .all(|f| f["ready"] == true && f["embedded"] == f["chunks"]);
        let (mode, reason) = match &engine {
            Some(e) if !settings.lexical_only && e.unavailable_reason().is_none() => {
                if complete {
                    ("hybrid", None)
                } else {
                    let sum = |key: &str| -> u64 {
                        folders.iter().map(|f| f[key].as_u64().unwrap_or(0)).sum()
                    };
                    let (done, all, fast) = (sum("embedded"), sum("chunks"), sum("staticEmbedded"));
                    let reason = if all > 0 && fast >= all {
                        format!(
                            "static vectors cover every chunk; transformer vectors for {done} of {all} are filling in"
                        )
                    } else {
                        format!("embedding in progress: {done} of {all} chunks have vectors")
                    };
                    ("partial", Some(reason))
                }
            }
            _ => ("lexical", None),
        };
        // Starting: a folder's index or the model is still loading, so
        // "lexical-only, 0 files" would be a false alarm.
        let loading_index = folders.iter().any(|f| f["ready"] != true);
        let first_walk = folders.iter().any(|f| f["lastWalk"].is_null());
        let loading_model = engine.is_none() && !settings.lexical_only;
        let index = if loading_index {
            Some("loading the index")
        } else if first_walk {
            Some("indexing the workspace")
        } else {
            None
        };
        let (state, state_reason) = match (index, loading_model) {
            (Some(index), true) => ("starting", Some(format!("{index} and the embedding model"))),
            (Some(index), false) => ("starting", Some(index.to_string())),
            (None, true) => ("starting", Some("loading the embedding model".to_string())),
            (None, false) => ("ready", None),
        };
        Ok(json!({
            "state": state,
            "stateReason": state_reason,
            "mode": mode,
            "reason": reason,
            "model": model,
            "folders": folders,
        }))
    }
}

/// Current text for a search: an open buffer if the file is open, else the
/// disk; each file is fetched at most once, and only if a hit needs it.
struct LiveText<'a> {
    root: &'a Path,
    overlay: &'a Overlay,
    disk: DiskText,
}

impl quarry_engine::search::TextSource for LiveText<'_> {
    fn text(&mut self, path: &str) -> Option<&str> {
        if !self.disk.has_text(path) {
            if let Some(buffer) = open_buffer(self.overlay, self.root, path) {
                self.disk.set_text(path, buffer.text);
            }
        }
        self.disk.text(path)
    }
}

/// The open buffer of `path` (relative to `root`), if there is one and its
/// path passes `confine::check_new`: a buffer opened through a symlink
/// that leads out of the root is never served.
fn open_buffer(overlay: &Overlay, root: &Path, path: &str) -> Option<overlay::Buffer> {
    let abs = root.join(path);
    let buffer = overlay.get(&abs)?;
    quarry_engine::confine::check_new(root, &abs).ok()?;
    Some(buffer)
}

/// Where a hit spanning lines `start..end` (0-based, end exclusive) of
/// `text` should open: the first of `phrases` found (case-insensitive),
/// else `name` as a whole word on a line that is not a comment or
/// decorator, else `name` anywhere. UTF-16 columns.
fn name_position(
    text: &str,
    start: u32,
    end: u32,
    name: &str,
    phrases: &[&str],
) -> Option<Position> {
    let lines: Vec<(u32, &str)> = text
        .lines()
        .enumerate()
        .skip(start as usize)
        .take(end.saturating_sub(start).max(1) as usize)
        .map(|(i, l)| (i as u32, l))
        .collect();
    let column = |line: &str, byte: usize| line[..byte].encode_utf16().count() as u32;
    for phrase in phrases {
        let phrase = phrase.to_lowercase();
        for (n, line) in &lines {
            if let Some(at) = line.to_lowercase().find(&phrase) {
                // Lowercasing can move bytes; then the line's start.
                let at = if line.is_char_boundary(at) { at } else { 0 };
                return Some(Position::new(*n, column(line, at)));
            }
        }
    }
    if name.is_empty() {
        return None;
    }
    let word_at = |line: &str| {
        line.match_indices(name).map(|(i, _)| i).find(|&i| {
            let before = line[..i].chars().next_back();
            let after = line[i + name.len()..].chars().next();
            let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            !ident(before) && !ident(after)
        })
    };
    let found = lines
        .iter()
        .filter(|(_, line)| !is_preamble(line))
        .find_map(|(n, line)| word_at(line).map(|i| (*n, *line, i)))
        .or_else(|| {
            lines
                .iter()
                .find_map(|(n, line)| word_at(line).map(|i| (*n, *line, i)))
        })?;
    Some(Position::new(found.0, column(found.1, found.2)))
}

/// The range of a symbol's written name; empty when the name as indexed
/// is not how it is written (`Display for GraphStore`).
fn name_range(hit: &SymbolHit) -> Range {
    let start = Position::new(hit.name_line.saturating_sub(1), hit.name_column);
    let simple = !hit.name.is_empty()
        && hit
            .name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '$'));
    let width = if simple {
        hit.name.encode_utf16().count() as u32
    } else {
        0
    };
    Range::new(start, Position::new(start.line, start.character + width))
}

/// How much a mode promises, least first: the merged response claims no
/// more than its weakest folder.
fn mode_strength(mode: &str) -> u8 {
    match mode {
        "hybrid" => 2,
        "partial" => 1,
        _ => 0,
    }
}

/// Whether a hit was pinned above the fused order (exact name, verified
/// phrase).
fn is_pinned(hit: &SearchHit) -> bool {
    hit.sources.iter().any(|s| *s == "exact" || *s == "phrase")
}

/// Merges each folder's ranked hits without breaking any folder's order:
/// pinned hits of every folder first, then by score, comparing only the
/// folders' next hits (ties go to the earlier folder). One folder's list
/// comes back as it is.
fn merge_folders(lists: Vec<Vec<SearchHit>>, limit: usize) -> Vec<SearchHit> {
    let mut lists: Vec<std::iter::Peekable<std::vec::IntoIter<SearchHit>>> = lists
        .into_iter()
        .map(|l| l.into_iter().peekable())
        .collect();
    let mut out = Vec::new();
    while out.len() < limit {
        let mut best: Option<(usize, bool, f32)> = None;
        for (i, list) in lists.iter_mut().enumerate() {
            let Some(head) = list.peek() else { continue };
            let key = (is_pinned(head), head.score);
            let better = match best {
                None => true,
                Some((_, pinned, score)) => {
                    (key.0 && !pinned) || (key.0 == pinned && key.1 > score)
                }
            };
            if better {
                best = Some((i, key.0, key.1));
            }
        }
        let Some((i, _, _)) = best else { break };
        out.extend(lists[i].next());
    }
    out
}

/// The first folder as a checkout of its hub repository (`hubRepo`, else
/// the folder's name), with its unsaved buffers.
fn hub_checkout(state: &State, settings: &Settings, f: &Folder) -> quarry_engine::hub::Checkout {
    quarry_engine::hub::Checkout {
        root: f.root.clone(),
        repo: settings.hub_repo.clone().unwrap_or_else(|| {
            f.root
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        }),
        buffers: state
            .overlay
            .dirty_under(&f.root)
            .into_iter()
            .filter_map(|(abs, text)| {
                quarry_engine::confine::check_new(&f.root, &abs).ok()?;
                Some((quarry_engine::walk::relative_path(&f.root, &abs)?, text))
            })
            .collect(),
        max_file_size: f
            .index()
            .map_or(quarry_engine::index::DEFAULT_MAX_FILE_SIZE, |i| {
                i.max_file_size()
            }),
    }
}

/// Searches the hub, the first folder's changes overlaid (its repository
/// is `hubRepo`, else the folder's name), within `hubTimeoutMs`; or says
/// why it could not (the caller then answers from the local index).
async fn search_hub(
    state: &Arc<State>,
    settings: &Settings,
    query: &str,
    options: &SearchOptions,
) -> Result<SearchResponse, String> {
    let folder = state.folders().into_iter().next();
    let workspace = folder.as_ref().map(|f| hub_checkout(state, settings, f));
    let dense = state
        .engine()
        .filter(|e| !settings.lexical_only && e.unavailable_reason().is_none());
    let scope = quarry_engine::hub::RepoScope {
        globs: settings.hub_repos.clone(),
    };
    let task = {
        let (state, urls, query, options) = (
            state.clone(),
            settings.hub.clone(),
            query.to_string(),
            options.clone(),
        );
        let retry = Duration::from_millis(settings.hub_retry_ms);
        let workspace = workspace.clone();
        let handle = tokio::runtime::Handle::current();
        // Ranking and embedding are CPU work: off the protocol's threads.
        tokio::task::spawn_blocking(move || {
            handle.block_on(state.hub.search(&quarry_engine::hub::Ask {
                urls: &urls,
                scope: &scope,
                checkout: workspace.as_ref(),
                query: &query,
                options: &options,
                dense: dense.as_deref(),
                retry,
            }))
        })
    };
    let budget = Duration::from_millis(settings.hub_timeout_ms);
    let results = quarry_engine::hub::within(budget, task).await?;
    let phrases: Vec<String> = quarry_engine::lexical::Query::parse(query)
        .phrases
        .into_iter()
        .map(|p| p.text)
        .collect();
    let mut response = SearchResponse {
        mode: results.mode,
        reason: results.reason,
        coverage: json!({"embedded": results.coverage.embedded, "total": results.coverage.total}),
        hits: Vec::with_capacity(results.hits.len()),
        no_match: results.no_match,
        state: "ready",
        source: "hub",
        hub: Some(json!({
            "repos": results.repos,
            "candidateFiles": results.candidate_files,
            "overlayFiles": results.overlay_files,
            "overlay": results.overlay,
        })),
    };
    let mut live = folder.as_ref().map(|f| LiveText {
        root: &f.root,
        overlay: &state.overlay,
        disk: DiskText::new(
            f.root.clone(),
            workspace
                .as_ref()
                .map_or(quarry_engine::index::DEFAULT_MAX_FILE_SIZE, |w| {
                    w.max_file_size
                }),
        ),
    });
    let mut no_text = NoText;
    for found in results.hits {
        let commit = (!found.local).then(|| found.commit.clone());
        let own = workspace.as_ref().is_some_and(|w| w.repo == found.repo);
        let shaped = match (own, folder.as_ref(), live.as_mut()) {
            (true, Some(f), Some(text)) => {
                let Some(uri) = Uri::from_file_path(f.root.join(&found.hit.path)) else {
                    continue;
                };
                let buffer = open_buffer(&state.overlay, &f.root, &found.hit.path);
                let buffer = buffer.as_ref().map(|b| b.text.as_str());
                shape_hit(
                    found.hit,
                    uri,
                    buffer,
                    text,
                    &phrases,
                    options.snippet_lines,
                )
            }
            _ => {
                let Some(uri) = hub_uri(&found.repo, &found.hit.path) else {
                    continue;
                };
                shape_hit(
                    found.hit,
                    uri,
                    None,
                    &mut no_text,
                    &phrases,
                    options.snippet_lines,
                )
            }
        };
        if let Some(mut hit) = shaped {
            hit.repo = Some(found.repo);
            hit.commit = commit;
            response.hits.push(hit);
        }
    }
    Ok(response)
}

/// A symbol hit as `workspace/symbol` shows it, with its tier's rank
/// (exact first).
fn symbol_information(hit: SymbolHit, uri: Uri) -> (u8, SymbolInformation) {
    let tier = match hit.tier {
        "exact" => 0,
        "prefix" => 1,
        "word" => 2,
        _ => 3,
    };
    let is_impl = hit.kind == ChunkKind::Impl.name();
    let container = hit
        .qualified_name
        .strip_suffix(hit.name.as_str())
        .map(|c| c.trim_end_matches([':', '.', '#']).to_string())
        .filter(|c| !c.is_empty() && !is_impl);
    let range = name_range(&hit);
    // `impl X` never looks like the type X itself.
    let name = if is_impl {
        ChunkKind::Impl.label(&hit.qualified_name)
    } else {
        hit.name
    };
    #[allow(deprecated)]
    (
        tier,
        SymbolInformation {
            name,
            kind: symbol_kind(hit.kind),
            tags: None,
            deprecated: None,
            // At the name, not the doc comment or
            // decorator above it (the editor opens and
            // highlights this range).
            location: Location { uri, range },
            container_name: container,
        },
    )
}

/// `workspace/symbol` over the hub, the first folder's changes overlaid,
/// within `hubTimeoutMs`; or why not (the local index answers then).
async fn symbols_hub(
    state: &Arc<State>,
    settings: &Settings,
    query: &str,
    limit: usize,
) -> Result<Vec<SymbolInformation>, String> {
    let folder = state.folders().into_iter().next();
    let checkout = folder.as_ref().map(|f| hub_checkout(state, settings, f));
    let dense = state
        .engine()
        .filter(|e| !settings.lexical_only && e.unavailable_reason().is_none());
    let task = {
        let (state, urls, query) = (state.clone(), settings.hub.clone(), query.to_string());
        let scope = quarry_engine::hub::RepoScope {
            globs: settings.hub_repos.clone(),
        };
        let retry = Duration::from_millis(settings.hub_retry_ms);
        let checkout = checkout.clone();
        let handle = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            let options = SearchOptions::default();
            handle.block_on(state.hub.symbols(
                &quarry_engine::hub::Ask {
                    urls: &urls,
                    scope: &scope,
                    checkout: checkout.as_ref(),
                    query: &query,
                    options: &options,
                    dense: dense.as_deref(),
                    retry,
                },
                None,
                limit,
            ))
        })
    };
    let budget = Duration::from_millis(settings.hub_timeout_ms);
    let found = quarry_engine::hub::within(budget, task).await?;
    Ok(found
        .into_iter()
        .filter_map(|h| {
            let own = checkout.as_ref().is_some_and(|c| c.repo == h.repo);
            let uri = match (&folder, own) {
                (Some(f), true) => Uri::from_file_path(f.root.join(&h.symbol.path))?,
                _ => hub_uri(&h.repo, &h.symbol.path)?,
            };
            Some(symbol_information(h.symbol, uri).1)
        })
        .collect())
}

/// Where a hit in another repository of the hub is:
/// `quarry-hub:/REPO/PATH`, percent-encoded. Editors list it with its
/// snippet; opening it needs the hub's text (not served yet).
fn hub_uri(repo: &str, path: &str) -> Option<Uri> {
    let encode = |s: &str, keep_slash: bool| -> String {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (b as char).to_string()
                }
                b'/' if keep_slash => "/".to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect()
    };
    format!("quarry-hub:/{}/{}", encode(repo, false), encode(path, true))
        .parse()
        .ok()
}

/// No text at all: hits of other repositories keep their indexed ranges.
struct NoText;

impl TextSource for NoText {
    fn text(&mut self, _path: &str) -> Option<&str> {
        None
    }
}

/// Runs a search over every folder and merges the hits (`merge_folders`).
/// A branch that failed at run time is logged and named in `reason`.
fn search_all(state: &State, query: &str, options: &SearchOptions) -> SearchResponse {
    let engine = state.engine();
    let mut response = SearchResponse {
        mode: "hybrid",
        reason: None,
        coverage: json!({"embedded": 0, "total": 0}),
        hits: Vec::new(),
        no_match: true,
        state: "ready",
        source: "local",
        hub: None,
    };
    let weaken = |response: &mut SearchResponse, mode: &'static str, reason: Option<String>| {
        if mode_strength(mode) < mode_strength(response.mode) {
            response.mode = mode;
            response.reason = reason;
        } else if mode == response.mode && response.reason.is_none() {
            response.reason = reason;
        }
    };
    let (mut embedded, mut total) = (0u64, 0u64);
    let mut any = false;
    let mut walked_any = false;
    let mut lists = Vec::new();
    let tiers = state.tiers();
    for folder in state.folders() {
        let Some(index) = folder.index() else {
            weaken(
                &mut response,
                "lexical",
                Some(format!("{} is still being indexed", folder.root.display())),
            );
            response.state = "starting";
            continue;
        };
        let walked = folder
            .last_walk
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some();
        if !walked {
            // Open but not walked yet: an empty answer says nothing.
            response.state = "starting";
        }
        any = true;
        walked_any |= walked;
        let snapshot = index.snapshot();
        let mut text = LiveText {
            root: &folder.root,
            overlay: &state.overlay,
            disk: DiskText::of(&index),
        };
        let results = tiers.search(&snapshot, query, options, &mut text);
        let phrases: Vec<String> = quarry_engine::lexical::Query::parse(query)
            .phrases
            .into_iter()
            .map(|p| p.text)
            .collect();
        let usable = engine
            .as_ref()
            .is_some_and(|e| e.unavailable_reason().is_none());
        if results.mode == "lexical" && usable && snapshot.vectors.is_some() {
            // The model is there and vectors exist: the dense branch
            // failed at run time.
            log(&format!(
                "search {query:?} in {}: {}",
                folder.root.display(),
                results.reason.as_deref().unwrap_or("dense branch failed")
            ));
        }
        weaken(&mut response, results.mode, results.reason.clone());
        response.no_match &= results.no_match;
        embedded += results.coverage.embedded;
        total += results.coverage.total;
        let mut hits = Vec::with_capacity(results.hits.len());
        for hit in results.hits {
            let Some(uri) = Uri::from_file_path(folder.root.join(&hit.path)) else {
                continue;
            };
            let buffer = open_buffer(&state.overlay, &folder.root, &hit.path);
            let buffer = buffer.as_ref().map(|b| b.text.as_str());
            hits.extend(shape_hit(
                hit,
                uri,
                buffer,
                &mut text,
                &phrases,
                options.snippet_lines,
            ));
        }
        lists.push(hits);
    }
    if !any && response.reason.is_none() {
        response.mode = "lexical";
        response.reason = Some("no workspace folder is open".into());
    }
    if engine.is_none() && response.mode != "lexical" {
        response.mode = "lexical";
        response.reason = Some("the embedding model is not loaded yet".into());
    }
    response.hits = merge_folders(lists, options.limit);
    quarry_engine::rank::make_falling(&mut response.hits, |hit| &mut hit.score);
    if !walked_any {
        response.no_match = false;
    }
    response.coverage = json!({"embedded": embedded, "total": total});
    response
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> RpcResult<InitializeResult> {
        let (settings, unknown) = Settings::from_options(params.initialization_options.as_ref())
            .map_err(RpcError::invalid_params)?;
        for key in unknown {
            log(&format!(
                "ignoring unknown initializationOptions key {key:?}"
            ));
        }
        let mut settings = settings;
        if settings.hub.is_empty() {
            if let Some(url) = std::env::var("QUARRY_HUB").ok().filter(|u| !u.is_empty()) {
                settings.hub = vec![url];
            }
        }
        *self
            .state
            .settings
            .write()
            .unwrap_or_else(|e| e.into_inner()) = settings;
        let progress = params
            .capabilities
            .window
            .as_ref()
            .and_then(|w| w.work_done_progress)
            .unwrap_or(false);
        self.state
            .progress_supported
            .store(progress, Ordering::Relaxed);

        let mut roots: Vec<PathBuf> = params
            .workspace_folders
            .unwrap_or_default()
            .iter()
            .filter_map(|f| path_of(&f.uri))
            .collect();
        #[allow(deprecated)]
        if roots.is_empty() {
            if let Some(root) = params.root_uri.as_ref().and_then(path_of) {
                roots.push(root);
            }
        }
        // The watcher feeds changed paths into the update loop.
        let state = self.state.clone();
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            let Ok(event) = event else { return };
            if matches!(event.kind, notify::EventKind::Access(_)) {
                return;
            }
            let paths: Vec<PathBuf> = event
                .paths
                .into_iter()
                .filter(|p| !p.components().any(|c| c.as_os_str() == ".git"))
                .collect();
            if !paths.is_empty() {
                state.queue(|p| p.paths.extend(paths));
            }
        });
        match watcher {
            Ok(w) => *self.state.watcher.lock().unwrap_or_else(|e| e.into_inner()) = Some(w),
            Err(e) => log(&format!("file watching is off: {e}")),
        }
        for root in roots {
            self.state.add_folder(root);
        }
        tokio::spawn(update_loop(self.state.clone()));
        tokio::spawn(embed_loop(self.state.clone()));
        tokio::spawn(follow_loop(self.state.clone()));

        Ok(InitializeResult {
            server_info: Some(ServerInfo {
                name: "quarry".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            capabilities: ServerCapabilities {
                text_document_sync: Some(TextDocumentSyncCapability::Options(
                    TextDocumentSyncOptions {
                        open_close: Some(true),
                        change: Some(TextDocumentSyncKind::INCREMENTAL),
                        save: Some(TextDocumentSyncSaveOptions::SaveOptions(SaveOptions {
                            include_text: Some(false),
                        })),
                        ..TextDocumentSyncOptions::default()
                    },
                )),
                workspace_symbol_provider: Some(OneOf::Left(true)),
                execute_command_provider: Some(ExecuteCommandOptions {
                    commands: vec![REINDEX_COMMAND.into()],
                    ..ExecuteCommandOptions::default()
                }),
                workspace: Some(WorkspaceServerCapabilities {
                    workspace_folders: Some(WorkspaceFoldersServerCapabilities {
                        supported: Some(true),
                        change_notifications: Some(OneOf::Left(true)),
                    }),
                    file_operations: None,
                }),
                ..ServerCapabilities::default()
            },
            offset_encoding: None,
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        let registration = Registration {
            id: "quarry-watched-files".into(),
            method: "workspace/didChangeWatchedFiles".into(),
            register_options: Some(json!({"watchers": [{"globPattern": "**/*"}]})),
        };
        // Clients without dynamic registration refuse; the watcher still runs.
        let _ = self
            .state
            .client
            .register_capability(vec![registration])
            .await;
        self.state
            .log(MessageType::INFO, "quarry language server started".into())
            .await;
    }

    async fn shutdown(&self) -> RpcResult<()> {
        self.state.shutting_down.store(true, Ordering::SeqCst);
        self.state.wake.notify_one();
        self.state.embed_wake.notify_one();
        // A running walk or chunking pass ends before its commit (a first
        // walk of `/` would otherwise hold `shutdown` for minutes).
        for folder in self.state.folders() {
            if let Some(index) = folder.index() {
                index.stop();
            }
        }
        // Wait for each folder's running job and embedding round (index
        // writes are atomic), then save vectors added since the last save.
        for folder in self.state.folders() {
            let _busy = folder.busy.lock().await;
            let _lane = folder.embedding.lock().await;
            if let Some(index) = folder.index() {
                save_vectors(&self.state, &index).await;
            }
        }
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        let doc = params.text_document;
        if let Some(path) = path_of(&doc.uri) {
            self.state.overlay.open(path, doc.text, doc.version);
        }
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        let doc = params.text_document;
        if let Some(path) = path_of(&doc.uri) {
            self.state
                .overlay
                .change(&path, doc.version, params.content_changes);
            self.state.queue(|p| {
                p.buffers.insert(path);
            });
        }
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        if let Some(path) = path_of(&params.text_document.uri) {
            self.state.overlay.saved(&path, params.text);
            self.state.queue(|p| {
                p.paths.insert(path);
                p.urgent = true;
            });
        }
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        if let Some(path) = path_of(&params.text_document.uri) {
            if self.state.overlay.close(&path).is_some_and(|b| b.dirty) {
                // Closed without saving: the index goes back to the disk.
                self.state.queue(|p| {
                    p.paths.insert(path);
                });
            }
        }
    }

    async fn did_change_watched_files(&self, params: DidChangeWatchedFilesParams) {
        let paths: Vec<PathBuf> = params
            .changes
            .iter()
            .filter_map(|c| path_of(&c.uri))
            .collect();
        self.state.queue(|p| p.paths.extend(paths));
    }

    async fn did_change_workspace_folders(&self, params: DidChangeWorkspaceFoldersParams) {
        for removed in &params.event.removed {
            if let Some(root) = path_of(&removed.uri) {
                self.state.remove_folder(&root);
            }
        }
        for added in &params.event.added {
            if let Some(root) = path_of(&added.uri) {
                self.state.add_folder(root);
            }
        }
    }

    async fn symbol(
        &self,
        params: WorkspaceSymbolParams,
    ) -> RpcResult<Option<WorkspaceSymbolResponse>> {
        let settings = self.state.settings();
        let limit = settings.max_symbols;
        let state = self.state.clone();
        let query = params.query;
        if !settings.hub.is_empty() {
            match symbols_hub(&state, &settings, &query, limit).await {
                Ok(symbols) => return Ok(Some(WorkspaceSymbolResponse::Flat(symbols))),
                Err(why) => log(&format!(
                    "hub: {why}; workspace/symbol answered from the local index"
                )),
            }
        }
        let job = move || {
            let mut out: Vec<(u8, SymbolInformation)> = Vec::new();
            for folder in state.folders() {
                let Some(index) = folder.index() else {
                    continue;
                };
                let snapshot = index.snapshot();
                for hit in find_symbols(&snapshot, &query, None, limit) {
                    let Some(uri) = Uri::from_file_path(folder.root.join(&hit.path)) else {
                        continue;
                    };
                    out.push(symbol_information(hit, uri));
                }
            }
            // Several folders: better tiers first, each folder's order kept.
            out.sort_by_key(|(tier, _)| *tier);
            out.truncate(limit);
            out.into_iter().map(|(_, s)| s).collect::<Vec<_>>()
        };
        // On this thread, handing the runtime's other tasks to another
        // (`block_in_place`): a keystroke's answer then waits for no thread
        // wake-up in between, where `spawn_blocking` added two.
        let symbols = if tokio::runtime::Handle::current().runtime_flavor()
            == tokio::runtime::RuntimeFlavor::MultiThread
        {
            tokio::task::block_in_place(job)
        } else {
            tokio::task::spawn_blocking(job)
                .await
                .map_err(|_| RpcError::internal_error())?
        };
        Ok(Some(WorkspaceSymbolResponse::Flat(symbols)))
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> RpcResult<Option<LSPAny>> {
        if params.command != REINDEX_COMMAND {
            return Err(RpcError::invalid_params(format!(
                "unknown command {:?} (known: {REINDEX_COMMAND})",
                params.command
            )));
        }
        let roots: Vec<PathBuf> = self
            .state
            .folders()
            .iter()
            .map(|f| f.root.clone())
            .collect();
        let n = roots.len();
        self.state.queue(|p| p.walks.extend(roots));
        Ok(Some(json!({"reindexing": n})))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_uris_encode_what_a_path_may_hold() {
        let uri = hub_uri("team/app", "src/a b#.rs").expect("a uri");
        assert_eq!(uri.as_str(), "quarry-hub:/team%2Fapp/src/a%20b%23.rs");
    }

    fn hit(name: &str, score: f32, pinned: bool) -> SearchHit {
        SearchHit {
            uri: Uri::from_file_path("/w/a.rs").unwrap(),
            range: line_range(1, 1),
            selection_range: line_range(1, 1),
            symbol: name.into(),
            label: name.into(),
            detail: String::new(),
            kind: "function",
            language: "rust",
            score,
            sources: if pinned {
                vec!["lexical", "phrase"]
            } else {
                vec!["lexical"]
            },
            snippet: String::new(),
            repo: None,
            commit: None,
        }
    }

    fn names(hits: &[SearchHit]) -> Vec<&str> {
        hits.iter().map(|h| h.symbol.as_str()).collect()
    }

    #[test]
    fn hits_open_at_the_name_or_the_phrase() {
        let text = "/// Inserts a node.\n#[inline]\npub fn insert(&mut self) {\n    // \u{e9}t\u{e9} insert\n    bail!(\"node exists\")\n}\n";
        assert_eq!(
            name_position(text, 0, 6, "insert", &[]),
            Some(Position::new(2, 7))
        );
        assert_eq!(
            name_position(text, 0, 6, "insert", &["Node Exists"]),
            Some(Position::new(4, 11))
        );
        let py = "@dataclass\nclass RetryPolicy:\n    pass\n";
        assert_eq!(
            name_position(py, 0, 3, "RetryPolicy", &[]),
            Some(Position::new(1, 6))
        );
        assert_eq!(name_position(py, 0, 3, "src/x.py:1-3", &[]), None);
    }

    #[test]
    fn merging_folders_keeps_each_folders_order() {
        // One folder: its order as it is, pinned low scores included.
        let one = vec![
            hit("p", 0.1, true),
            hit("a", 0.9, false),
            hit("b", 0.5, false),
        ];
        assert_eq!(names(&merge_folders(vec![one], 10)), ["p", "a", "b"]);
        // Two: pinned hits of both first, then by score among the heads.
        let first = vec![
            hit("p1", 0.2, true),
            hit("a", 0.9, false),
            hit("c", 0.3, false),
        ];
        let second = vec![hit("p2", 0.1, true), hit("b", 0.5, false)];
        assert_eq!(
            names(&merge_folders(vec![first, second], 10)),
            ["p1", "p2", "a", "b", "c"]
        );
        let first = vec![hit("a", 0.9, false), hit("c", 0.3, false)];
        let second = vec![hit("b", 0.5, false)];
        assert_eq!(names(&merge_folders(vec![first, second], 2)), ["a", "b"]);
    }
}
