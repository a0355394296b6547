//! The server's two background lanes and the jobs they run: the update
//! loop (changed paths, dirty buffers and folder walks, debounced, then
//! re-indexed on a thread of its own at background priority) and the
//! embedding lane (the model loaded on first use, vectors computed in small
//! rounds, open files first).
//!
//! Owns: `in_background` (the one way an index job runs), progress
//! reporting, and which paths the embedding lane takes first (saved and
//! open files).
//! Never: blocks a request, or runs index work on the runtime's threads.

use super::state::{Folder, Progress, State};
use quarry_engine::dense::{DenseConfig, DenseEngine, DenseTier};
use quarry_engine::engine::EMBED_ROUND;
use quarry_engine::index::{Index, IndexConfig};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tower_lsp_server::ls_types::MessageType;

/// A background job that ended without a result: it panicked, or its
/// thread could not start.
#[derive(Debug)]
struct JobLost;

/// Runs an index job (walk, parse, merge, embed) on a thread of its own at
/// background priority ([`quarry_engine::priority`]) and awaits it without blocking
/// the runtime. Not `spawn_blocking`: a nice value cannot be raised back
/// without privileges, and a pooled thread lowered for one job could later
/// answer a `workspace/symbol` request at the lowered priority.
async fn in_background<T: Send + 'static>(
    job: impl FnOnce() -> T + Send + 'static,
) -> Result<T, JobLost> {
    let (send, receive) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("quarry-index-job".into())
        .spawn(move || {
            quarry_engine::priority::lower_this_thread();
            let _ = send.send(job());
        })
        .map_err(|_| JobLost)?;
    receive.await.map_err(|_| JobLost)
}

/// Reports `done`/`total` on `progress` every 200 ms while `job` runs in
/// the background ([`in_background`]).
async fn with_progress<T: Send + 'static>(
    progress: Option<&Progress>,
    what: &'static str,
    counter: Arc<(AtomicU64, AtomicU64)>,
    job: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let task = in_background(job);
    tokio::pin!(task);
    loop {
        tokio::select! {
            result = &mut task => return result.ok(),
            _ = tokio::time::sleep(Duration::from_millis(200)) => {
                if let Some(progress) = progress {
                    let done = counter.0.load(Ordering::Relaxed);
                    let total = counter.1.load(Ordering::Relaxed);
                    let pct = (done * 100).checked_div(total).map_or(0, |p| p.min(100) as u32);
                    progress
                        .report_with_message(format!("{what} {done}/{total}"), pct)
                        .await;
                }
            }
        }
    }
}

/// The update loop: waits for work, lets changes settle for the debounce
/// interval, then runs it folder by folder on blocking threads. It never
/// waits for embedding: that is `embed_loop`'s lane.
pub(super) async fn update_loop(state: Arc<State>) {
    loop {
        state.wake.notified().await;
        if state.shutting_down.load(Ordering::Relaxed) {
            return;
        }
        // Watcher events and typing settle for the debounce interval; a
        // save (even one arriving meanwhile) runs at once.
        let settle_until =
            tokio::time::Instant::now() + Duration::from_millis(state.settings().debounce_ms);
        loop {
            let urgent = state
                .pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .urgent;
            if urgent || tokio::time::Instant::now() >= settle_until {
                break;
            }
            // Every queued change wakes it (`State::queue`): a save ends
            // the wait at once, anything else waits out the interval.
            let _ = tokio::time::timeout_at(settle_until, state.wake.notified()).await;
        }
        let work = std::mem::take(&mut *state.pending.lock().unwrap_or_else(|e| e.into_inner()));
        for folder in state.folders() {
            let walk = work.walks.contains(&folder.root) || folder.index().is_none();
            let in_folder =
                |p: &&PathBuf| state.folder_of(p).is_some_and(|f| Arc::ptr_eq(&f, &folder));
            let paths: Vec<PathBuf> = work.paths.iter().filter(in_folder).cloned().collect();
            let edited = work.buffers.iter().any(|p| in_folder(&p));
            if !walk && paths.is_empty() && !edited {
                continue;
            }
            let _busy = folder.busy.lock().await;
            if walk {
                index_folder(&state, &folder).await;
            } else {
                update_folder(&state, &folder, paths).await;
            }
        }
    }
}

/// How often a server that reads another process's index looks for its
/// commits (one small file read when nothing changed).
const FOLLOW_INTERVAL: Duration = Duration::from_millis(300);

/// The follow loop: while another process writes a folder's index, this
/// server serves that process's newest commit (`Index::catch_up`) and, when
/// the writer exits or dies, takes the writing over and walks the folder,
/// which indexes what was saved here meanwhile.
pub(super) async fn follow_loop(state: Arc<State>) {
    loop {
        tokio::time::sleep(FOLLOW_INTERVAL).await;
        if state.shutting_down.load(Ordering::SeqCst) {
            return;
        }
        for folder in state.folders() {
            let Some(index) = folder.index() else {
                continue;
            };
            if index.is_writer() {
                continue;
            }
            let caught = in_background(move || index.catch_up()).await.ok();
            match caught {
                Some(Ok(quarry_engine::index::CatchUp::BecameWriter)) => {
                    state
                        .log(
                            MessageType::INFO,
                            format!(
                                "{}: the process that wrote this index is gone; this server writes it now",
                                folder.root.display()
                            ),
                        )
                        .await;
                    let root = folder.root.clone();
                    state.queue(|p| {
                        p.walks.insert(root);
                        p.urgent = true;
                    });
                }
                Some(Ok(quarry_engine::index::CatchUp::Reloaded)) => {
                    request_embedding(&state, &folder, Vec::new());
                }
                Some(Ok(quarry_engine::index::CatchUp::Unchanged)) | None => {}
                Some(Err(e)) => {
                    let context = format!("following the index of {}", folder.root.display());
                    report_error(&state, &folder, &context, e.to_string()).await;
                }
            }
        }
    }
}

/// A background step failed: the folder's status (`quarry/status`) keeps
/// `error`, and the client's log gets it after `context`.
async fn report_error(state: &State, folder: &Folder, context: &str, error: String) {
    let message = format!("{context}: {error}");
    folder.set_error(Some(error));
    state.log(MessageType::ERROR, message).await;
}

/// Opens (or re-walks) a folder's index with progress, then embeds.
async fn index_folder(state: &Arc<State>, folder: &Arc<Folder>) {
    let progress = state.progress("Quarry: indexing").await;
    let counter = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    // Open the persistent index first: requests are answered from its last
    // committed state while the walk runs.
    if folder.index().is_none() {
        let root = folder.root.clone();
        let opened =
            tokio::task::spawn_blocking(move || Index::open(IndexConfig::new(&root))).await;
        match opened {
            Ok(Ok(index)) => {
                // Saves happen after big embedding rounds and at shutdown,
                // not after every one-chunk re-embed on save.
                index.defer_vector_saves(true);
                for note in index.take_notes() {
                    state.log(MessageType::INFO, note).await;
                }
                *folder.index.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(index));
            }
            Ok(Err(e)) => {
                let context = format!("opening the index of {}", folder.root.display());
                report_error(state, folder, &context, e.to_string()).await;
                if let Some(progress) = progress {
                    progress.finish_with_message(format!("failed: {e}")).await;
                }
                return;
            }
            Err(_) => return,
        }
    }
    let Some(index) = folder.index() else { return };
    if state.shutting_down.load(Ordering::SeqCst) {
        // `shutdown` may have looked for this index before it was open.
        index.stop();
    }
    let job_index = index.clone();
    let job_counter = counter.clone();
    let result = with_progress(progress.as_ref(), "files", counter.clone(), move || {
        job_index
            .refresh(&|p| {
                job_counter.0.store(p.done, Ordering::Relaxed);
                job_counter.1.store(p.total, Ordering::Relaxed);
            })
            .map_err(|e| e.to_string())
    })
    .await;
    match result {
        Some(Ok(stats)) => {
            folder.set_error(None);
            *folder.last_walk.lock().unwrap_or_else(|e| e.into_inner()) = Some(stats);
            reapply_buffers(state, folder, &index).await;
            for note in index.take_notes() {
                state.log(MessageType::WARNING, note).await;
            }
            let (_, total) = index.snapshot().coverage();
            state
                .log(
                    MessageType::INFO,
                    format!("indexed {} ({total} chunks)", folder.root.display()),
                )
                .await;
            request_embedding(state, folder, Vec::new());
        }
        Some(Err(_)) if state.shutting_down.load(Ordering::SeqCst) => {}
        Some(Err(e)) => {
            let context = format!("indexing {}", folder.root.display());
            report_error(state, folder, &context, e).await;
        }
        None => folder.set_error(Some("indexing stopped unexpectedly".into())),
    }
    if let Some(progress) = progress {
        progress.finish_with_message("done").await;
    }
}

/// Reindexes changed files, then open buffers' unsaved text, then embeds
/// what changed.
async fn update_folder(state: &Arc<State>, folder: &Arc<Folder>, paths: Vec<PathBuf>) {
    let Some(index) = folder.index() else {
        return;
    };
    if !paths.is_empty() {
        let job_index = index.clone();
        let job_paths = paths.clone();
        let result = in_background(move || job_index.update_paths(&job_paths)).await;
        match result {
            Ok(Ok(_)) => folder.set_error(None),
            Ok(Err(e)) => report_error(state, folder, "updating the index", e.to_string()).await,
            Err(_) => folder.set_error(Some("index update stopped unexpectedly".into())),
        }
    }
    // Disk updates replace buffer rows, and edited buffers are why we may
    // be here at all: index every dirty buffer's text again.
    let buffers = reapply_buffers(state, folder, &index).await;
    // Files refused by the confinement check, and why.
    for note in index.take_notes() {
        state.log(MessageType::WARNING, note).await;
    }
    let mut priority: Vec<String> = paths
        .iter()
        .filter_map(|p| quarry_engine::walk::relative_path(&folder.root, p))
        .collect();
    priority.extend(buffers);
    if priority.is_empty() {
        return;
    }
    // One blocking job: edited chunks get static vectors at once
    // (milliseconds), and chunks whose text did not change get their
    // transformer vectors back from the cache; the lane computes the rest
    // in the background.
    let fast = state.static_engine();
    let engine = state.engine().filter(|e| e.unavailable().is_none());
    if fast.is_some() || engine.is_some() {
        let job_index = index.clone();
        let job_priority = priority.clone();
        let done = in_background(move || {
            let fast = fast.map(|fast| job_index.embed_paths(&fast, &job_priority));
            let filled = engine.map(|engine| job_index.fill_from_cache(&engine, &job_priority));
            (fast, filled)
        })
        .await;
        if let Ok((fast, filled)) = done {
            if let Some(Err(e)) = fast {
                state
                    .log(MessageType::ERROR, format!("static vectors: {e}"))
                    .await
            }
            match filled {
                Some(Ok(stats)) => {
                    folder
                        .vectors_from_cache
                        .fetch_add(stats.from_cache, Ordering::Relaxed);
                }
                Some(Err(e)) => {
                    state
                        .log(MessageType::ERROR, format!("vectors from the cache: {e}"))
                        .await
                }
                None => {}
            }
        }
    }
    request_embedding(state, folder, priority);
}

/// Indexes the unsaved text of every dirty open buffer under the folder
/// (a reader keeps them in its private segment); returns their paths
/// relative to the root.
async fn reapply_buffers(
    state: &Arc<State>,
    folder: &Arc<Folder>,
    index: &Arc<Index>,
) -> Vec<String> {
    let dirty = state.overlay.dirty_under(&folder.root);
    // A reader is sent the empty set too: its private buffer entries go.
    if dirty.is_empty() && index.is_writer() {
        return Vec::new();
    }
    let paths = dirty
        .iter()
        .filter_map(|(p, _)| quarry_engine::walk::relative_path(&folder.root, p))
        .collect();
    let index = index.clone();
    if let Ok(Err(e)) = in_background(move || index.update_buffers(&dirty)).await {
        state
            .log(MessageType::ERROR, format!("indexing open buffers: {e}"))
            .await;
    }
    paths
}

/// Asks the embedding lane to embed what `folder` lacks, `priority`
/// paths first.
fn request_embedding(state: &State, folder: &Folder, priority: Vec<String>) {
    folder
        .embed_priority
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .extend(priority);
    state.embed_wake.notify_one();
}

/// The engine, loading the model on first use (unless lexical-only).
async fn load_engine(state: &Arc<State>) -> Option<Arc<DenseEngine>> {
    let settings = state.settings();
    if settings.lexical_only {
        return None;
    }
    if let Some(engine) = state.engine() {
        return Some(engine);
    }
    let model_dir = settings.model_path.clone();
    // Every core: the compute pool's threads run niced (`priority`), so
    // requests and index updates still go first. With one core left free
    // (the engine's default) a cold regex-automata (4,230 chunks) took
    // 43.2 s to embed over LSP on two cores; with both, docs/performance.md
    // ("Semantic from the first seconds").
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let loaded = tokio::task::spawn_blocking(move || {
        Arc::new(DenseEngine::load(DenseConfig {
            model_dir,
            threads: Some(threads),
            ..DenseConfig::default()
        }))
    })
    .await
    .ok()?;
    match loaded.unavailable_reason() {
        Some(reason) => {
            state
                .log(
                    MessageType::WARNING,
                    format!("lexical-only search: {reason}"),
                )
                .await
        }
        None => {
            state
                .log(
                    MessageType::INFO,
                    format!("embedding model {}", loaded.model_id().unwrap_or("")),
                )
                .await
        }
    }
    *state.engine.write().unwrap_or_else(|e| e.into_inner()) = Some(loaded.clone());
    if settings.static_tier && loaded.unavailable().is_none() {
        let transformer = loaded.clone();
        let fast = in_background(move || transformer.static_from().map(Arc::new))
            .await
            .ok()
            .flatten();
        match fast.as_ref().and_then(|f| f.unavailable_reason()) {
            Some(reason) => {
                state
                    .log(MessageType::WARNING, format!("no static tier: {reason}"))
                    .await
            }
            None => {
                if let Some(id) = fast.as_ref().and_then(|f| f.model_id()) {
                    state
                        .log(MessageType::INFO, format!("static tier {id}"))
                        .await
                }
            }
        }
        *state
            .static_engine
            .write()
            .unwrap_or_else(|e| e.into_inner()) = fast;
    }
    Some(loaded)
}

/// Chunks per round of the static tier (tens of milliseconds).
const STATIC_ROUND: usize = 2048;

/// The embedding lane: a background task, separate from the update loop,
/// that embeds what lacks a vector in every folder, in rounds, picking up
/// priority paths (edits) between rounds. The vector cache means nothing
/// it has seen before is computed again.
pub(super) async fn embed_loop(state: Arc<State>) {
    loop {
        state.embed_wake.notified().await;
        if state.shutting_down.load(Ordering::Relaxed) {
            return;
        }
        let Some(engine) = load_engine(&state).await else {
            continue;
        };
        if engine.unavailable().is_some() {
            continue;
        }
        // Every chunk gets a static vector first (seconds), then the
        // transformer's (minutes on a cold workspace). Freed layer outputs
        // are reused meanwhile, and returned to the OS once it is done.
        let fast = state.static_engine();
        let held = quarry_engine::memory::HeldFreedMemory::new();
        for folder in state.folders() {
            if let Some(index) = folder.index() {
                if let Some(fast) = &fast {
                    embed_folder(&state, &folder, &index, fast).await;
                }
                embed_folder(&state, &folder, &index, &engine).await;
            }
        }
        drop(held);
    }
}

/// Embeds one folder's pending chunks in rounds until none is left, the
/// model fails, or the server shuts down.
async fn embed_folder(
    state: &Arc<State>,
    folder: &Arc<Folder>,
    index: &Arc<Index>,
    engine: &Arc<DenseEngine>,
) {
    let _lane = folder.embedding.lock().await;
    let attach_index = index.clone();
    let attach_engine = engine.clone();
    if let Ok(Err(e)) =
        tokio::task::spawn_blocking(move || attach_index.attach_dense(&attach_engine)).await
    {
        folder.set_error(Some(e.to_string()));
        return;
    }
    folder.embedding_active.store(true, Ordering::SeqCst);
    // The static tier embeds thousands of chunks a second: big rounds.
    let (round, title) = match engine.tier() {
        DenseTier::Static => (STATIC_ROUND, "Quarry: static vectors"),
        DenseTier::Transformer => (EMBED_ROUND, "Quarry: embedding"),
    };
    let mut progress = None;
    let mut priority: BTreeSet<String> = BTreeSet::new();
    let mut since_save = 0u64;
    loop {
        if state.shutting_down.load(Ordering::Relaxed) {
            break;
        }
        priority.extend(std::mem::take(
            &mut *folder
                .embed_priority
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        ));
        let counter = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
        let (embedded, total) = index.snapshot().coverage_of(engine.tier());
        counter.0.store(embedded, Ordering::Relaxed);
        counter.1.store(total, Ordering::Relaxed);
        let job_index = index.clone();
        let job_engine = engine.clone();
        let job_priority: Vec<String> = priority.iter().cloned().collect();
        let result = with_progress(progress.as_ref(), "embedded", counter, move || {
            job_index.embed_pending(&job_engine, &job_priority, Some(round), &|_| {})
        })
        .await;
        match result {
            Some(Ok(stats)) => {
                folder
                    .vectors_computed
                    .fetch_add(stats.computed, Ordering::Relaxed);
                folder
                    .vectors_from_cache
                    .fetch_add(stats.from_cache, Ordering::Relaxed);
                since_save += stats.embedded;
                // A long job shows progress; a few edited chunks do not.
                if progress.is_none() && stats.remaining > round as u64 {
                    progress = state.progress(title).await;
                }
                if since_save >= 1024 {
                    save_vectors(state, index).await;
                    since_save = 0;
                }
                if let Some(error) = stats.error {
                    folder.set_error(Some(format!("embedding: {error}")));
                    state
                        .log(MessageType::ERROR, format!("embedding: {error}"))
                        .await;
                    break;
                }
                if stats.remaining == 0 || stats.embedded == 0 {
                    break;
                }
            }
            Some(Err(e)) => {
                report_error(state, folder, "embedding", e.to_string()).await;
                break;
            }
            None => break,
        }
    }
    // A long session's vectors are saved; a few re-embedded chunks wait
    // for the next big round or shutdown (the vector cache has them, so a
    // crash costs no model time).
    if since_save >= EMBED_ROUND as u64 {
        save_vectors(state, index).await;
    }
    folder.embedding_active.store(false, Ordering::SeqCst);
    if let Some(progress) = progress {
        progress.finish_with_message("done").await;
    }
}

/// Saves a folder's vector index on a blocking thread.
pub(super) async fn save_vectors(state: &Arc<State>, index: &Arc<Index>) {
    let index = index.clone();
    if let Ok(Err(e)) = in_background(move || index.save_vectors()).await {
        state
            .log(MessageType::ERROR, format!("saving vectors: {e}"))
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn background_jobs_run_lowered_on_their_own_thread_and_report_panics() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let caller = std::thread::current().id();
        let (thread, value) = runtime
            .block_on(in_background(|| (std::thread::current().id(), 7)))
            .expect("the job's result");
        assert_ne!(thread, caller);
        assert_eq!(value, 7);
        #[cfg(target_os = "linux")]
        {
            // SAFETY: plain syscalls on the calling thread.
            let nice = |()| unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
            let before = nice(());
            let inside = runtime.block_on(in_background(move || nice(())));
            assert_eq!(
                inside.expect("nice value"),
                (before + quarry_engine::priority::BACKGROUND_NICE).min(19)
            );
            assert_eq!(nice(()), before, "the caller keeps its priority");
        }
        let lost = runtime.block_on(in_background(|| -> u32 { panic!("job failed") }));
        assert!(
            lost.is_err(),
            "a panicking job is reported, not awaited forever"
        );
    }
}
