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
mod hits;
mod hub;
mod lanes;
pub mod overlay;
pub mod settings;
mod state;
#[cfg(unix)]
mod stdio;

use overlay::Overlay;
use quarry_engine::dense::DenseTier;
use quarry_engine::filter::Filter;
use quarry_engine::rank::FuseConfig;
use quarry_engine::search::{find_symbols, SearchOptions};
use serde_json::{json, Value};
use settings::Settings;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio::sync::Notify;
use tower_lsp_server::jsonrpc::{Error as RpcError, Result as RpcResult};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer, LspService, Server};

use hits::{search_all, symbol_information, SearchParams, SearchResponse};
use hub::{search_hub, symbols_hub};
use lanes::{embed_loop, follow_loop, save_vectors, update_loop};
use state::{log, Pending, State};

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

pub struct Backend {
    state: Arc<State>,
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

/// How much less the static tier's order counts where it stands in for
/// the transformer (`FuseConfig::fill_discount`; 2 measured best of 1, 2,
/// 3 and 5 on the development set).
const STATIC_FILL_DISCOUNT: f32 = 2.0;

fn path_of(uri: &Uri) -> Option<PathBuf> {
    uri.to_file_path().map(|p| p.into_owned())
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
            Some(e) if !settings.lexical_only && e.unavailable().is_none() => {
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
    use super::hits::{line_range, merge_folders, name_position, SearchHit};
    use super::hub::hub_uri;
    use super::*;
    use quarry_engine::search::Source;

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
                vec![Source::Lexical, Source::Phrase]
            } else {
                vec![Source::Lexical]
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
