//! The language server's state: its workspace folders (one index each),
//! the work waiting for the update loop, the loaded dense tiers, the open
//! buffers and the hub link. The request handlers (`mod.rs`) and the
//! background lanes (`lanes`) both read and change it through here.
//!
//! Never: answer a request or run index work itself.

use super::overlay::Overlay;
use super::settings::Settings;
use quarry_engine::dense::DenseEngine;
use quarry_engine::index::Index;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::Notify;
use tower_lsp_server::ls_types::*;
use tower_lsp_server::Client;

/// A `$/progress` stream the server reports on.
pub(super) type Progress =
    tower_lsp_server::OngoingProgress<tower_lsp_server::Bounded, tower_lsp_server::NotCancellable>;

/// A line for the server's stderr (the client shows it in its log).
pub(super) fn log(message: &str) {
    eprintln!("quarry: {message}");
}

/// One workspace folder and its index.
pub(super) struct Folder {
    pub(super) root: PathBuf,
    /// Opened in the background after `initialized`.
    pub(super) index: RwLock<Option<Arc<Index>>>,
    /// One index job at a time per folder.
    pub(super) busy: tokio::sync::Mutex<()>,
    pub(super) last_error: Mutex<Option<String>>,
    /// What the last full walk did (for `quarry/status`).
    pub(super) last_walk: Mutex<Option<quarry_engine::index::UpdateStats>>,
    /// Vectors computed by the model, and taken from the vector cache,
    /// since the server started.
    pub(super) vectors_computed: AtomicU64,
    pub(super) vectors_from_cache: AtomicU64,
    /// Held by the embedding lane while it embeds this folder.
    pub(super) embedding: tokio::sync::Mutex<()>,
    /// The lane is embedding this folder now.
    pub(super) embedding_active: AtomicBool,
    /// Paths whose chunks the lane embeds first (edited, saved, changed).
    pub(super) embed_priority: Mutex<BTreeSet<String>>,
}

impl Folder {
    pub(super) fn index(&self) -> Option<Arc<Index>> {
        self.index.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(super) fn set_error(&self, error: Option<String>) {
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = error;
    }
}

/// Work waiting for the update loop.
#[derive(Default)]
pub(super) struct Pending {
    /// Files changed on disk (saved, watched, or reported by the client).
    pub(super) paths: BTreeSet<PathBuf>,
    /// Open buffers whose unsaved text should be indexed.
    pub(super) buffers: BTreeSet<PathBuf>,
    /// Folders to walk in full (new folders, `quarry.reindex`).
    pub(super) walks: BTreeSet<PathBuf>,
    /// A save is waiting: run without the debounce delay.
    pub(super) urgent: bool,
}

pub(super) struct State {
    pub(super) client: Client,
    pub(super) settings: RwLock<Settings>,
    pub(super) folders: RwLock<Vec<Arc<Folder>>>,
    pub(super) overlay: Overlay,
    pub(super) engine: RwLock<Option<Arc<DenseEngine>>>,
    /// The static tier of `engine`'s model, when the setting asks for it.
    pub(super) static_engine: RwLock<Option<Arc<DenseEngine>>>,
    pub(super) pending: Mutex<Pending>,
    pub(super) wake: Notify,
    /// Wakes the embedding lane.
    pub(super) embed_wake: Notify,
    pub(super) progress_supported: AtomicBool,
    pub(super) next_token: AtomicU64,
    pub(super) shutting_down: AtomicBool,
    pub(super) watcher: Mutex<Option<notify::RecommendedWatcher>>,
    /// The shared hub `quarry/search` asks first, when the settings name one.
    pub(super) hub: quarry_engine::hub::HubLink,
}

impl State {
    pub(super) fn settings(&self) -> Settings {
        self.settings
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(super) fn folders(&self) -> Vec<Arc<Folder>> {
        self.folders
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(super) fn engine(&self) -> Option<Arc<DenseEngine>> {
        self.engine
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(super) fn static_engine(&self) -> Option<Arc<DenseEngine>> {
        self.static_engine
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .filter(|e| e.unavailable().is_none())
    }

    /// The tiers this server has loaded: the transformer, and with the
    /// `staticTier` setting the static tier (`engine::Tiers::choose` says
    /// which answers a snapshot, as on every surface).
    pub(super) fn tiers(&self) -> quarry_engine::engine::Tiers {
        quarry_engine::engine::Tiers::new(self.engine(), self.static_engine())
    }

    /// The folder holding `path` (the innermost, for nested roots).
    pub(super) fn folder_of(&self, path: &Path) -> Option<Arc<Folder>> {
        self.folders()
            .into_iter()
            .filter(|f| path.starts_with(&f.root))
            .max_by_key(|f| f.root.as_os_str().len())
    }

    /// A message for the user, through `window/logMessage` only: clients
    /// also show the server's stderr, so writing both doubled every line.
    pub(super) async fn log(&self, typ: MessageType, message: String) {
        self.client.log_message(typ, message).await;
    }

    pub(super) fn queue(&self, f: impl FnOnce(&mut Pending)) {
        f(&mut self.pending.lock().unwrap_or_else(|e| e.into_inner()));
        self.hub.changed();
        self.wake.notify_one();
    }

    pub(super) fn add_folder(&self, root: PathBuf) -> bool {
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

    pub(super) fn remove_folder(&self, root: &Path) {
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
    pub(super) async fn progress(&self, title: &str) -> Option<Progress> {
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
