//! A long-lived link to a shared hub, for the servers (the language
//! server, the MCP server) that ask it many queries.
//!
//! Owns: the connections to the hub's shards (made at the first query,
//! dropped when a query fails, tried again once `hubRetryMs` has passed),
//! and the overlay of the first folder's changes over the hub's commit
//! (rebuilt when the server has heard of a change since it was built: a
//! watched file, an edit, a save).
//! Never: decide what a surface shows when the hub fails (the caller
//! answers from its local index with the reason this returns), or show a
//! password (hub errors carry redacted URLs).

use super::candidates::RepoScope;
use super::conn::Hub;
use super::error::HubError;
use super::overlay::Overlay;
use super::query::{search, HubResults};
use super::read::{file, usages, HubFile, Usage};
use super::symbols::{symbols, HubSymbol};
use crate::chunk::ChunkKind;
use crate::dense::DenseEngine;
use crate::search::SearchOptions;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The hub connection and the overlay, shared by every query.
#[derive(Default)]
pub struct HubLink {
    /// Bumped by every change the server hears of.
    generation: AtomicU64,
    inner: tokio::sync::Mutex<Link>,
}

#[derive(Default)]
struct Link {
    /// The URLs `hubs` was opened with (a settings change reconnects).
    urls: Vec<String>,
    hubs: Option<Arc<Vec<Hub>>>,
    /// Since when the hub is counted down, and why.
    down: Option<(Instant, String)>,
    /// The overlay and the generation it was built at.
    overlay: Option<(u64, Option<Arc<Overlay>>)>,
}

/// The checkout a hub search overlays.
#[derive(Clone)]
pub struct Checkout {
    pub root: PathBuf,
    /// Its repository's name in the hub.
    pub repo: String,
    /// Open buffers with unsaved edits: (root-relative path, text).
    pub buffers: Vec<(String, String)>,
    pub max_file_size: u64,
}

/// What a hub search is asked.
pub struct Ask<'a> {
    pub urls: &'a [String],
    pub scope: &'a RepoScope,
    pub checkout: Option<&'a Checkout>,
    pub query: &'a str,
    pub options: &'a SearchOptions,
    pub dense: Option<&'a DenseEngine>,
    /// How long after a failure the hub is left alone.
    pub retry: Duration,
}

impl HubLink {
    /// Something in the workspace changed: the overlay is rebuilt at the
    /// next query.
    pub fn changed(&self) {
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// Searches the hub with the workspace's changes overlaid, or says why
    /// it cannot (the hub is down and not due for another try, it failed
    /// now). A failure drops the connection; the first query after `retry`
    /// connects again.
    pub async fn search(&self, ask: &Ask<'_>) -> Result<HubResults, String> {
        let (hubs, overlay) = self.prepare(ask).await?;
        let answer = search(
            &hubs,
            ask.scope,
            ask.query,
            ask.options,
            ask.dense,
            overlay.as_deref(),
        )
        .await;
        self.settle(answer).await
    }

    /// Definitions named like `ask.query` (see [`symbols`]), as
    /// [`search`](Self::search) answers or fails.
    pub async fn symbols(
        &self,
        ask: &Ask<'_>,
        kind: Option<ChunkKind>,
        limit: usize,
    ) -> Result<Vec<HubSymbol>, String> {
        let (hubs, overlay) = self.prepare(ask).await?;
        let answer = symbols(&hubs, ask.scope, ask.query, kind, limit, overlay.as_deref()).await;
        self.settle(answer).await
    }

    /// The usages of identifier `ask.query` (see [`usages`]), as
    /// [`search`](Self::search) answers or fails.
    pub async fn usages(&self, ask: &Ask<'_>, limit: usize) -> Result<Vec<Usage>, String> {
        let (hubs, overlay) = self.prepare(ask).await?;
        let answer = usages(&hubs, ask.scope, ask.query, limit, overlay.as_deref()).await;
        self.settle(answer).await
    }

    /// File `path` of repository `repo` as the hub holds it (see [`file`]).
    pub async fn file(
        &self,
        ask: &Ask<'_>,
        repo: &str,
        path: &str,
    ) -> Result<Option<HubFile>, String> {
        let (hubs, _) = self.prepare(ask).await?;
        let answer = file(&hubs, repo, path).await;
        self.settle(answer).await
    }

    /// The connections and the overlay a query runs on, made or rebuilt as
    /// needed; or why not (down and not due for another try, or failing
    /// now). The link is held only while they are made, not while a query
    /// runs.
    async fn prepare(
        &self,
        ask: &Ask<'_>,
    ) -> Result<(Arc<Vec<Hub>>, Option<Arc<Overlay>>), String> {
        let mut link = self.inner.lock().await;
        if link.urls != ask.urls {
            *link = Link {
                urls: ask.urls.to_vec(),
                ..Link::default()
            };
        }
        if let Some((since, why)) = &link.down {
            let waited = since.elapsed();
            if waited < ask.retry {
                return Err(format!(
                    "{why} (trying the hub again in {:.0} s)",
                    (ask.retry - waited).as_secs_f32().ceil()
                ));
            }
        }
        match self.connect(&mut link, ask).await {
            Ok(ready) => Ok(ready),
            Err(e) => Err(fail(&mut link, &e)),
        }
    }

    /// Records how a query ended: a failure drops the connection and starts
    /// the wait before the next try.
    async fn settle<T>(&self, answer: Result<T, HubError>) -> Result<T, String> {
        let mut link = self.inner.lock().await;
        match answer {
            Ok(answer) => {
                link.down = None;
                Ok(answer)
            }
            Err(e) => Err(fail(&mut link, &e)),
        }
    }

    async fn connect(
        &self,
        link: &mut Link,
        ask: &Ask<'_>,
    ) -> Result<(Arc<Vec<Hub>>, Option<Arc<Overlay>>), HubError> {
        let hubs = match &link.hubs {
            Some(hubs) => hubs.clone(),
            None => {
                let mut hubs = Vec::with_capacity(ask.urls.len());
                for url in ask.urls {
                    hubs.push(Hub::connect_read(url).await?);
                }
                let hubs = Arc::new(hubs);
                link.hubs = Some(hubs.clone());
                hubs
            }
        };
        let generation = self.generation.load(Ordering::Relaxed);
        let overlay = match (&link.overlay, ask.checkout) {
            (_, None) => None,
            (Some((built, overlay)), Some(_)) if *built == generation => overlay.clone(),
            (_, Some(ws)) => {
                let overlay = Overlay::build(
                    &hubs,
                    &ws.repo,
                    &ws.root,
                    &ws.buffers,
                    ws.max_file_size,
                    ask.dense,
                )
                .await?
                .map(Arc::new);
                link.overlay = Some((generation, overlay.clone()));
                overlay
            }
        };
        Ok((hubs, overlay))
    }
}

/// Waits at most `budget` for a hub call running on a blocking thread (the
/// servers run ranking off their protocol threads); one that runs over or
/// stops says so, and the caller answers from its local index.
pub async fn within<T>(
    budget: Duration,
    task: tokio::task::JoinHandle<Result<T, String>>,
) -> Result<T, String> {
    match tokio::time::timeout(budget, task).await {
        Err(_) => Err(format!("no answer within {} ms", budget.as_millis())),
        Ok(Err(_)) => Err("the hub call stopped".into()),
        Ok(Ok(answer)) => answer,
    }
}

/// The reason a local answer gives when the hub did not answer: why the
/// hub did not (`down`), then the local search's own reason, if any.
pub fn local_reason(down: &str, reason: Option<String>) -> String {
    match reason {
        Some(why) => format!("{down}; {why}"),
        None => down.to_string(),
    }
}

/// Drops the connection and the overlay, and counts the hub down from now.
fn fail(link: &mut Link, e: &HubError) -> String {
    let why = e.full();
    link.hubs = None;
    link.overlay = None;
    link.down = Some((Instant::now(), why.clone()));
    why
}
