//! Embedding orchestration: which live chunks lack vectors, in what order, read from which text, and saving the vector indexes.

use super::config::BUFFER_MTIME;
use super::embed_text::chunk_text;
use super::error::{vector_err, IndexError};
use super::reader::Index;
use super::report::{EmbedStats, Progress};
use super::segment::{FileRow, FileState};
use super::snapshot::bit;
use crate::confine::{self};
use crate::dense::vectors::VectorIndex;
use crate::dense::DenseEngine;
use crate::walk::{self};
use rustc_hash::FxHashMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// Chunks embedded per group: texts are read and vectors stored per group.
pub(super) const EMBED_GROUP: usize = 256;

/// Which pending chunks an embedding call takes, and how.
pub(super) struct EmbedWork<'a> {
    /// Paths whose chunks go first.
    pub(super) priority: &'a [String],
    /// Only the `priority` paths' chunks.
    pub(super) only_priority: bool,
    pub(super) limit: Option<usize>,
    /// Only vectors the cache has; never run the model.
    pub(super) cached_only: bool,
}

impl Index {
    /// Opens the vector index for `engine`'s model (or starts an empty one)
    /// and publishes it with the next snapshot. A no-op without a model.
    pub fn attach_dense(&self, engine: &DenseEngine) -> Result<(), IndexError> {
        let Some(model_id) = engine.model_id() else {
            return Ok(());
        };
        let slot = self.slot(engine.tier());
        if slot
            .load()
            .as_ref()
            .is_some_and(|v| v.model_id() == model_id)
        {
            return Ok(());
        }
        let dim = engine.dim();
        let id_bound = self.id_bound();
        let opened =
            match VectorIndex::open(&self.cache_dir, model_id, dim, self.is_writer(), id_bound) {
                Err(crate::dense::vectors::VectorError::Corrupt(why)) => {
                    // Never handed to usearch: refilled from the shared
                    // vector cache (the next save replaces the file).
                    self.note(format!("{why}; rebuilding the vector index"));
                    None
                }
                opened => opened.map_err(|e| vector_err(&self.cache_dir, e))?,
            };
        let vectors = match opened {
            Some(vectors) => vectors,
            None => VectorIndex::new(model_id, dim).map_err(|e| vector_err(&self.cache_dir, e))?,
        };
        slot.store(Some(Arc::new(vectors)));
        let mut state = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        self.publish(&mut state);
        Ok(())
    }

    /// Embeds live chunks that have no vector yet, most recently changed
    /// files first (`priority` paths before everything), at most `limit`
    /// chunks. Lexical search keeps answering meanwhile: the writer lock is
    /// only held to list the work. Saves the vector index at the end.
    pub fn embed_pending(
        &self,
        engine: &DenseEngine,
        priority: &[String],
        limit: Option<usize>,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<EmbedStats, IndexError> {
        self.embed_work(
            engine,
            EmbedWork {
                priority,
                only_priority: false,
                limit,
                cached_only: false,
            },
            progress,
        )
    }

    /// Gives the live chunks of `paths` that lack a vector the vectors the
    /// machine-wide cache already has for their text, without running the
    /// model: after an edit, every chunk whose text did not change has its
    /// vector again within milliseconds. Chunks the cache lacks stay
    /// pending for `embed_pending`.
    pub fn fill_from_cache(
        &self,
        engine: &DenseEngine,
        paths: &[String],
    ) -> Result<EmbedStats, IndexError> {
        self.embed_named(engine, paths, true)
    }

    /// Embeds the live chunks of `paths` that lack a vector, running the
    /// model: for an engine fast enough to run inside an update (the
    /// static tier), so edited code is semantically searchable at once.
    pub fn embed_paths(
        &self,
        engine: &DenseEngine,
        paths: &[String],
    ) -> Result<EmbedStats, IndexError> {
        self.embed_named(engine, paths, false)
    }

    /// Every live chunk of `paths` that lacks a vector, and nothing else
    /// (no walk over the workspace's chunks); `cached_only` never runs the
    /// model.
    pub(super) fn embed_named(
        &self,
        engine: &DenseEngine,
        paths: &[String],
        cached_only: bool,
    ) -> Result<EmbedStats, IndexError> {
        if paths.is_empty() {
            return Ok(EmbedStats::default());
        }
        self.embed_work(
            engine,
            EmbedWork {
                priority: paths,
                only_priority: true,
                limit: None,
                cached_only,
            },
            &|_| {},
        )
    }

    /// The text of `path` as indexed: the editor's buffer for a buffer row
    /// (if its hash still matches), else the file if it has not changed
    /// since (same modification time).
    pub(super) fn indexed_text(&self, path: &str, row: Option<&FileRow>) -> Option<String> {
        let row = row?;
        if row.mtime_ns == BUFFER_MTIME {
            let text = self
                .buffer_texts
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(path)
                .cloned()?;
            return (*blake3::hash(text.as_bytes()).as_bytes() == row.hash)
                .then(|| text.to_string());
        }
        // One confined open; the open file says whether it changed since.
        let mut file = confine::open(&self.root, Path::new(path)).ok()?;
        let meta = file.metadata().ok()?;
        if walk::mtime_ns(&meta) != row.mtime_ns || meta.len() != row.size {
            return None;
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut file, &mut bytes).ok()?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    pub(super) fn embed_work(
        &self,
        engine: &DenseEngine,
        request: EmbedWork<'_>,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<EmbedStats, IndexError> {
        let started = Instant::now();
        let mut stats = EmbedStats::default();
        self.attach_dense(engine)?;
        let Some(vectors) = self.slot(engine.tier()).load_full() else {
            stats.error = engine.unavailable_reason();
            return Ok(stats);
        };
        if !self.is_writer() {
            return Ok(stats);
        }
        let snapshot = self.snapshot();
        // (priority, mtime, path, chunk id), best first; the file rows as
        // they were when the work was listed.
        let mut work: Vec<(bool, u64, &str, u32)> = Vec::new();
        if request.only_priority {
            // Just the named files' chunks, from their rows: an editor's
            // update never walks every chunk of the workspace.
            let state = self.writer.lock().unwrap_or_else(|e| e.into_inner());
            for path in request.priority {
                if let Some(FileRow {
                    state: FileState::Indexed { chunk_ids, .. },
                    ..
                }) = state.files.get(path.as_str())
                {
                    work.extend(
                        chunk_ids
                            .iter()
                            .filter(|id| snapshot.is_live(**id) && !vectors.contains(**id))
                            .map(|id| (true, 0, path.as_str(), *id)),
                    );
                }
            }
        } else {
            for (segment, chunk) in snapshot.live_chunks() {
                if vectors.contains(chunk.chunk_id) {
                    continue;
                }
                let path = segment.path_of(chunk);
                let first = request.priority.iter().any(|p| p == path);
                work.push((first, 0, path, chunk.chunk_id));
            }
        }
        // The writer lock only for the rows of the files with work: an
        // update waits microseconds, not a walk over every chunk.
        let mut rows: FxHashMap<&str, Option<FileRow>> = FxHashMap::default();
        {
            let state = self.writer.lock().unwrap_or_else(|e| e.into_inner());
            for item in &mut work {
                let row = rows
                    .entry(item.2)
                    .or_insert_with(|| state.files.get(item.2).cloned());
                item.1 = row.as_ref().map_or(0, |row| row.mtime_ns);
            }
            // Forget buffer texts no row needs any more.
            self.buffer_texts
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|path, _| {
                    state
                        .files
                        .get(path.as_str())
                        .is_some_and(|row| row.mtime_ns == BUFFER_MTIME)
                });
        }
        stats.pending = work.len() as u64;
        work.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then(b.1.cmp(&a.1))
                .then(a.2.cmp(b.2))
                .then(a.3.cmp(&b.3))
        });
        work.truncate(request.limit.unwrap_or(usize::MAX));
        let total = work.len() as u64;
        let budget = engine.config().token_budget;
        let mut files: FxHashMap<&str, Option<String>> = FxHashMap::default();
        for group in work.chunks(EMBED_GROUP) {
            let mut ids = Vec::with_capacity(group.len());
            let mut texts = Vec::with_capacity(group.len());
            for (_, _, path, chunk_id) in group {
                let file = files.entry(path).or_insert_with(|| {
                    self.indexed_text(path, rows.get(path).and_then(Option::as_ref))
                });
                let found = snapshot
                    .chunk(*chunk_id)
                    .and_then(|(segment, _)| Some((segment, segment.position(*chunk_id)?)));
                let (Some(file), Some((segment, position))) = (file.as_deref(), found) else {
                    stats.stale += 1;
                    continue;
                };
                ids.push(*chunk_id);
                texts.push(chunk_text(segment, position, file, budget));
            }
            if files.len() > 64 {
                files.clear();
            }
            let embedded = if request.cached_only {
                engine.cached_vectors(&texts).map(|found| {
                    let n = found.iter().filter(|v| v.is_some()).count();
                    let counts = crate::dense::EmbedCounts {
                        from_cache: n,
                        computed: 0,
                    };
                    (found, counts)
                })
            } else {
                engine
                    .embed_texts(&texts)
                    .map(|(found, counts)| (found.into_iter().map(Some).collect(), counts))
            };
            match embedded {
                Ok((vectors_out, counts)) => {
                    let entries: Vec<(u32, &[f32])> = ids
                        .iter()
                        .zip(&vectors_out)
                        .filter_map(|(id, v)| Some((*id, v.as_ref()?.as_slice())))
                        .collect();
                    vectors
                        .add(&entries)
                        .map_err(|e| vector_err(&self.cache_dir, e))?;
                    // An update may have killed some of these chunks while
                    // they were embedded; updates remove vectors under the
                    // writer lock, so checking under it leaves no straggler
                    // to inflate the coverage.
                    let died: Vec<u32> = {
                        let state = self.writer.lock().unwrap_or_else(|e| e.into_inner());
                        entries
                            .iter()
                            .map(|(id, _)| *id)
                            .filter(|id| bit(&state.dead, *id))
                            .collect()
                    };
                    vectors.remove(&died);
                    stats.embedded += (entries.len() - died.len()) as u64;
                    stats.stale += died.len() as u64;
                    stats.from_cache += counts.from_cache as u64;
                    stats.computed += counts.computed as u64;
                }
                Err(reason) => {
                    stats.error = Some(reason.to_string());
                    break;
                }
            }
            progress(Progress {
                done: stats.embedded + stats.stale,
                total,
            });
        }
        stats.remaining = stats.pending - stats.embedded;
        if stats.embedded > 0 {
            self.vectors_dirty.store(true, Ordering::Release);
            if !self.defer_vector_saves.load(Ordering::Acquire) {
                self.save_vectors()?;
            }
        }
        stats.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        Ok(stats)
    }

    /// With `on`, `embed_pending` stops saving the vector index after each
    /// call; the owner calls `save_vectors` when it suits (a long-running
    /// server after big rounds and at shutdown). Nothing is lost meanwhile
    /// that matters: vectors also live in the machine-wide vector cache, so
    /// a restart re-attaches them without recomputing.
    pub fn defer_vector_saves(&self, on: bool) {
        self.defer_vector_saves.store(on, Ordering::Release);
    }

    /// Saves the vector index if vectors were added since the last save.
    pub fn save_vectors(&self) -> Result<(), IndexError> {
        if !self.vectors_dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        for slot in [&self.vectors, &self.static_vectors] {
            if let Some(vectors) = slot.load_full() {
                if let Err(e) = vectors.save(&self.cache_dir, self.id_bound()) {
                    self.vectors_dirty.store(true, Ordering::Release);
                    return Err(vector_err(&self.cache_dir, e));
                }
            }
        }
        Ok(())
    }
}
