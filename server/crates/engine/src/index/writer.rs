//! The writer: walking and updating files and buffers, building segments in parallel, committing and merging.

use super::classify::{classify, safe_chunk};
use super::config::BUFFER_MTIME;
use super::error::{io_err, IndexError};
use super::reader::Index;
use super::report::{Progress, UpdateStats};
use super::segment;
use super::segment::{FileRow, FileState, ParsedFile, Segment, SegmentBuilder, SkipReason};
use super::snapshot::bit;
use super::state::make_snapshot;
use super::state::{apply_row, WriterState};
use super::store::{self, Manifest};
use crate::confine::{self, Refusal};
use crate::walk::{self, WalkEntry};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// At most this many segments before the newest ones are merged.
pub(super) const MAX_SEGMENTS: usize = 8;
/// The oldest segments left alone by a partial merge.
pub(super) const KEPT_SEGMENTS: usize = 3;
/// A full merge happens when this fraction of stored chunks is dead.
pub(super) const MAX_DEAD_FRACTION: f64 = 0.3;
/// Updates with fewer bytes than this are parsed on the calling thread.
pub(super) const PARALLEL_MIN_BYTES: u64 = 256 * 1024;

/// Blocks dealt to each worker (see [`deal`]): enough that a block of slow
/// files evens out over the others.
const BLOCKS_PER_WORKER: u64 = 16;

/// Deals `files` (in their sorted order) to `n_workers`: contiguous blocks
/// of about equal bytes, handed out in turn, so each worker gets a similar
/// mix and the shares depend on the file list alone, never on timing.
/// Returns one list of indices per worker (none empty, at most
/// `n_workers`).
fn deal(files: &[WalkEntry], n_workers: usize, max_file_size: u64) -> Vec<Vec<usize>> {
    let n_workers = n_workers.clamp(1, files.len().max(1));
    let total: u64 = files.iter().map(|f| f.size.min(max_file_size)).sum();
    let block_bytes = (total / (n_workers as u64 * BLOCKS_PER_WORKER)).max(1);
    let mut shares: Vec<Vec<usize>> = vec![Vec::new(); n_workers];
    let (mut block, mut in_block) = (0usize, 0u64);
    for (i, file) in files.iter().enumerate() {
        shares[block % n_workers].push(i);
        in_block += file.size.min(max_file_size);
        if in_block >= block_bytes {
            block += 1;
            in_block = 0;
        }
    }
    shares.retain(|share| !share.is_empty());
    if shares.is_empty() {
        shares.push(Vec::new());
    }
    shares
}

/// Unsaved editor texts by root-relative path, indexed in place of the disk.
pub(super) type Buffers = rustc_hash::FxHashMap<String, String>;

impl Index {
    /// Walks the workspace and brings the index up to date with the disk.
    pub fn refresh(&self, progress: &(dyn Fn(Progress) + Sync)) -> Result<UpdateStats, IndexError> {
        let started = Instant::now();
        // A reader serves the newest commit, or writes if the writer left.
        self.catch_up()?;
        let mut stats = UpdateStats::default();
        let exclude = self
            .cache_dir
            .starts_with(&self.root)
            .then_some(self.cache_dir.as_path());
        let outcome = walk::walk(&self.root, exclude, &self.stopped);
        if self.is_stopped() {
            return Err(IndexError::Stopped);
        }
        stats.unsupported = outcome.n_unsupported;
        stats.symlinks_skipped = outcome.n_symlinks_skipped + outcome.n_bad_paths;
        stats.walk_errors = outcome.errors.len() as u64;
        let mut state = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let mut present: rustc_hash::FxHashSet<&str> = Default::default();
        let mut changed = Vec::new();
        for entry in &outcome.files {
            present.insert(&entry.rel_path);
            let now = walk::FileStat {
                size: entry.size,
                mtime_ns: entry.mtime_ns,
                stamp: entry.stamp,
            };
            match state.files.get(&entry.rel_path) {
                Some(row) if now.same_as(row.size, row.mtime_ns, row.stamp) => {
                    stats.files_unchanged += 1;
                }
                _ => changed.push(entry.clone()),
            }
        }
        let removed: Vec<String> = state
            .files
            .keys()
            .filter(|path| !present.contains(path.as_str()))
            .cloned()
            .collect();
        stats.files_scanned = outcome.files.len() as u64;
        drop(present);
        if !self.is_writer() {
            // Another process writes: this one only says how far behind
            // the committed index the files are (a racily clean row, or a
            // file touched without a change, is compared by its hash).
            let differs = |entry: &walk::WalkEntry| {
                let Some(row) = state.files.get(&entry.rel_path) else {
                    return true;
                };
                if row.size != entry.size {
                    return true;
                }
                // Too large either way: the writer would skip it again.
                entry.size <= self.config.max_file_size
                    && confine::read(&self.root, &entry.abs_path, self.config.max_file_size)
                        .map_or(true, |bytes| *blake3::hash(&bytes).as_bytes() != row.hash)
            };
            let behind = changed.iter().filter(|entry| differs(entry)).count();
            stats.files_behind = (behind + removed.len()) as u64;
            stats.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
            return Ok(stats);
        }
        self.apply(
            &mut state,
            changed,
            removed,
            &Buffers::default(),
            &mut stats,
            progress,
        )?;
        stats.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        Ok(stats)
    }

    /// The walk's rules for single paths (`walk::Admission`), the cache
    /// directory left out when it lives inside the root.
    pub(super) fn admission(&self) -> walk::Admission {
        let exclude = self
            .cache_dir
            .starts_with(&self.root)
            .then_some(self.cache_dir.as_path());
        walk::Admission::new(&self.root, exclude)
    }

    /// `path` (absolute or root-relative) as an absolute path and its
    /// root-relative form, or `None` outside the root.
    pub(super) fn locate(&self, path: &Path) -> Option<(PathBuf, String)> {
        let abs_path = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.root.join(path)
        };
        let rel_path = walk::relative_path(&self.root, &abs_path)?;
        Some((abs_path, rel_path))
    }

    /// Re-examines just these paths (absolute or root-relative), e.g. after
    /// an editor saved them. Missing files are removed from the index.
    pub fn update_paths(&self, paths: &[PathBuf]) -> Result<UpdateStats, IndexError> {
        let started = Instant::now();
        let mut stats = UpdateStats::default();
        self.catch_up()?;
        if !self.is_writer() {
            // The writer indexes them too; until it commits, this process
            // answers for them from its private segment.
            self.note_private_paths(paths, &mut stats);
            stats.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
            return Ok(stats);
        }
        let mut state = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let mut changed = Vec::new();
        let mut removed = Vec::new();
        let mut admission = self.admission();
        for path in paths {
            let Some((abs_path, rel_path)) = self.locate(path) else {
                continue;
            };
            stats.files_scanned += 1;
            // The walk's rules: a file it would not list (hidden, ignored,
            // in the cache) never enters through a save or the watcher.
            if !admission.admits(&rel_path) {
                if state.files.contains_key(&rel_path) {
                    removed.push(rel_path);
                }
                continue;
            }
            let language = crate::chunk::detect_language(Path::new(&rel_path));
            // The one confinement check: a symlink (or a symlinked folder)
            // leading out of the root, a FIFO or a device is never read.
            let checked = confine::check(&self.root, &abs_path)
                .and_then(|real| walk::stat(&real).map_err(|e| Refusal::Unreadable(e.to_string())));
            match (checked, language) {
                (Ok(now), Some(language)) => match state.files.get(&rel_path) {
                    Some(row) if now.same_as(row.size, row.mtime_ns, row.stamp) => {
                        stats.files_unchanged += 1;
                    }
                    _ => changed.push(WalkEntry {
                        rel_path,
                        abs_path,
                        language,
                        size: now.size,
                        mtime_ns: now.mtime_ns,
                        stamp: now.stamp,
                    }),
                },
                (checked, _) => {
                    if state.files.contains_key(&rel_path) {
                        if let Err(refusal @ (Refusal::Outside(_) | Refusal::NotRegular(_))) =
                            &checked
                        {
                            self.note(format!("removed {rel_path} from the index: {refusal}"));
                        }
                        removed.push(rel_path);
                    }
                }
            }
        }
        self.apply(
            &mut state,
            changed,
            removed,
            &Buffers::default(),
            &mut stats,
            &|_| {},
        )?;
        stats.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        Ok(stats)
    }

    /// Indexes editors' unsaved texts in place of the files on disk: each
    /// `(path, text)` is chunked and indexed as if the file held `text`.
    /// Its row records modification time 0 (`BUFFER_MTIME`), which no file
    /// on disk has, so the next `update_paths` or `refresh` of that path
    /// reads the disk again (and keeps the chunks if the text is the same).
    /// Paths outside the root or of no known language are ignored. A
    /// reader keeps them in its private segment instead (`private`): pass
    /// every dirty buffer each time, an empty list included.
    pub fn update_buffers(&self, buffers: &[(PathBuf, String)]) -> Result<UpdateStats, IndexError> {
        let started = Instant::now();
        let mut stats = UpdateStats::default();
        let mut admitted = Vec::new();
        let mut admission = self.admission();
        for (path, text) in buffers {
            let Some((abs_path, rel_path)) = self.locate(path) else {
                continue;
            };
            // An open buffer of a file the walk leaves out (`.npmrc`, an
            // ignored folder) is never indexed.
            if !admission.admits(&rel_path) {
                continue;
            }
            // A buffer may be a new file, but never one that resolves
            // outside the root or to a special file.
            if let Err(refusal) = confine::check_new(&self.root, &abs_path) {
                self.note(format!("not indexing the buffer of {rel_path}: {refusal}"));
                continue;
            }
            let Some(language) = crate::chunk::detect_language(Path::new(&rel_path)) else {
                continue;
            };
            stats.files_scanned += 1;
            admitted.push((abs_path, rel_path, language, text));
        }
        if !self.is_writer() {
            let own = admitted
                .into_iter()
                .map(|(_, rel_path, _, text)| (rel_path, text.clone()))
                .collect();
            self.set_private_buffers(own);
            stats.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
            return Ok(stats);
        }
        let mut state = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let mut changed = Vec::new();
        let mut texts = Buffers::default();
        for (abs_path, rel_path, language, text) in admitted {
            changed.push(WalkEntry {
                rel_path: rel_path.clone(),
                abs_path,
                language,
                size: text.len() as u64,
                mtime_ns: BUFFER_MTIME,
                stamp: 0,
            });
            texts.insert(rel_path, text.clone());
        }
        {
            let mut kept = self.buffer_texts.lock().unwrap_or_else(|e| e.into_inner());
            for (path, text) in &texts {
                kept.insert(path.clone(), Arc::from(text.as_str()));
            }
        }
        self.apply(&mut state, changed, Vec::new(), &texts, &mut stats, &|_| {})?;
        stats.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        Ok(stats)
    }

    /// Parses changed files into new segments, commits them and publishes
    /// the next snapshot.
    pub(super) fn apply(
        &self,
        state: &mut WriterState,
        changed: Vec<WalkEntry>,
        removed: Vec<String>,
        buffers: &Buffers,
        stats: &mut UpdateStats,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<(), IndexError> {
        if changed.is_empty() && removed.is_empty() {
            return Ok(());
        }
        let builders = self.build(state, &changed, buffers, stats, progress);
        if self.is_stopped() {
            return Err(IndexError::Stopped);
        }
        let mut manifest = state.manifest.clone();
        // Ids are handed out in order; freezing and writing run in parallel.
        let mut plan = Vec::with_capacity(builders.len());
        let n_builders = builders.len();
        for (i, mut builder) in builders.into_iter().enumerate() {
            if i + 1 == n_builders {
                for path in &removed {
                    builder.add_row(FileRow {
                        path: path.clone(),
                        size: 0,
                        mtime_ns: 0,
                        stamp: 0,
                        hash: [0; 32],
                        state: FileState::Deleted,
                    });
                }
            }
            if builder.n_rows() == 0 {
                continue;
            }
            let n_chunks = builder.n_chunks() as u32;
            plan.push((builder, manifest.next_segment_id, manifest.next_chunk_id));
            manifest.next_segment_id += 1;
            manifest.next_chunk_id += n_chunks;
        }
        let freeze = |(builder, id, first_chunk_id): (SegmentBuilder, u64, u32)| {
            let segment = builder.finish(id, first_chunk_id);
            self.write_segment(&segment).map(|()| Arc::new(segment))
        };
        let new_segments: Vec<Arc<Segment>> = if plan.len() == 1 {
            plan.into_iter().map(freeze).collect::<Result<_, _>>()?
        } else {
            use rayon::prelude::*;
            plan.into_par_iter().map(freeze).collect::<Result<_, _>>()?
        };
        if new_segments.is_empty() && removed.is_empty() {
            // Every file was hashed again and found unchanged.
            return Ok(());
        }
        stats.files_removed = removed.len() as u64;
        stats.segments_written += new_segments.len() as u64;
        // Apply rows in order: the newest row of a path wins.
        let mut killed = Vec::new();
        for segment in &new_segments {
            stats.chunks_added += segment.chunks.len() as u64;
            state.n_stored += segment.chunks.len() as u64;
            manifest.segment_ids.push(segment.id);
            state.segments.push(segment.clone());
            for row in &segment.rows {
                apply_row(state, row, &mut killed);
            }
        }
        stats.chunks_removed = killed.len() as u64;
        for slot in [&self.vectors, &self.static_vectors] {
            if let Some(vectors) = slot.load_full() {
                vectors.remove(&killed);
            }
        }
        if let Some(merged) = self.merge_if_needed(state, &mut manifest, stats)? {
            state.segments.retain(|s| !merged.replaced.contains(&s.id));
            let position = state.segments.partition_point(|s| s.id < merged.segment.id);
            state.segments.insert(position, merged.segment);
        }
        manifest.segment_ids = state.segments.iter().map(|s| s.id).collect();
        let manifest_bytes = manifest.to_bytes();
        crate::cachefile::write_atomic(&self.cache_dir, store::MANIFEST_FILE, &manifest_bytes)
            .map_err(io_err(&self.cache_dir.join(store::MANIFEST_FILE)))?;
        state.manifest = manifest;
        store::collect_garbage(&self.cache_dir, &state.manifest, Segment::file_name);
        stats.wrote = true;
        self.publish(state);
        Ok(())
    }

    pub(super) fn publish(&self, state: &mut WriterState) {
        let mut snapshot = make_snapshot(
            &self.root,
            state,
            &self.config.bm25,
            self.vectors.load_full(),
        );
        snapshot.static_vectors = self.static_vectors.load_full();
        if !self.is_writer() {
            self.overlay_private(state, &mut snapshot);
        }
        self.current.store(Arc::new(snapshot));
    }

    pub(super) fn write_segment(&self, segment: &Segment) -> Result<(), IndexError> {
        let name = Segment::file_name(segment.id);
        crate::cachefile::write_atomic_with(&self.cache_dir, &name, &mut |file| segment.write(file))
            .map_err(io_err(&self.cache_dir.join(name)))
    }

    /// Reads and chunks changed files, in parallel for big updates. Returns
    /// one builder per worker.
    pub(super) fn build(
        &self,
        state: &WriterState,
        changed: &[WalkEntry],
        buffers: &Buffers,
        stats: &mut UpdateStats,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Vec<SegmentBuilder> {
        let total_bytes: u64 = changed
            .iter()
            .map(|e| e.size.min(self.config.max_file_size))
            .sum();
        let n_workers = if total_bytes < PARALLEL_MIN_BYTES {
            1
        } else {
            rayon::current_num_threads().clamp(1, changed.len().max(1))
        };
        // Each worker chunks its own share of the files into its own
        // builder. The shares are dealt from the sorted file list alone,
        // never by which thread is free first, so a file lands in the same
        // segment, with the same chunk ids, on every build of the same
        // tree (ties in a ranking break on chunk id).
        let shares = deal(changed, n_workers, self.config.max_file_size);
        let done = AtomicU64::new(0);
        let total = changed.len() as u64;
        let work = |mine: &Vec<usize>| {
            self.build_worker(state, changed, mine, buffers, &done, total, progress)
        };
        let results: Vec<(SegmentBuilder, UpdateStats)> = if shares.len() == 1 {
            shares.iter().map(work).collect()
        } else {
            use rayon::prelude::*;
            shares.par_iter().map(work).collect()
        };
        let mut builders = Vec::with_capacity(results.len());
        for (builder, worker_stats) in results {
            stats.files_hashed += worker_stats.files_hashed;
            stats.files_reparsed += worker_stats.files_reparsed;
            stats.files_added += worker_stats.files_added;
            stats.files_skipped += worker_stats.files_skipped;
            stats.files_unchanged += worker_stats.files_unchanged;
            builders.push(builder);
        }
        builders
    }

    /// Chunks the files `mine` (indices into `entries`) into one builder.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn build_worker(
        &self,
        state: &WriterState,
        entries: &[WalkEntry],
        mine: &[usize],
        buffers: &Buffers,
        done: &AtomicU64,
        total: u64,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> (SegmentBuilder, UpdateStats) {
        let max = self.config.max_file_size;
        let source_bytes = mine.iter().map(|&i| entries[i].size.min(max)).sum();
        let mut builder = SegmentBuilder::for_source_bytes(source_bytes);
        let mut stats = UpdateStats::default();
        for entry in mine.iter().filter_map(|&i| entries.get(i)) {
            if self.is_stopped() {
                break;
            }
            let previous = state.files.get(&entry.rel_path);
            if previous.is_none() {
                stats.files_added += 1;
            }
            self.build_file(
                entry,
                buffers.get(&entry.rel_path),
                previous,
                &mut builder,
                &mut stats,
            );
            let n = done.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_multiple_of(64) || n == total {
                progress(Progress { done: n, total });
            }
        }
        (builder, stats)
    }

    /// Indexes one file: its text on disk, or `buffer` (an editor's unsaved
    /// text) when given.
    pub(super) fn build_file(
        &self,
        entry: &WalkEntry,
        buffer: Option<&String>,
        previous: Option<&FileRow>,
        builder: &mut SegmentBuilder,
        stats: &mut UpdateStats,
    ) {
        let skip = |builder: &mut SegmentBuilder, hash: [u8; 32], reason: SkipReason| {
            builder.add_row(FileRow {
                path: entry.rel_path.clone(),
                size: entry.size,
                mtime_ns: entry.mtime_ns,
                stamp: entry.stamp,
                hash,
                state: FileState::Skipped(reason),
            });
        };
        if entry.size > self.config.max_file_size {
            stats.files_skipped += 1;
            return skip(builder, [0; 32], SkipReason::TooLarge);
        }
        let read = match buffer {
            Some(text) => Ok(text.clone().into_bytes()),
            None => confine::read(&self.root, &entry.abs_path, self.config.max_file_size),
        };
        let bytes = match read {
            Ok(bytes) => bytes,
            Err(Refusal::TooLarge { .. }) => {
                // Grew past the limit since the walk saw it.
                stats.files_skipped += 1;
                return skip(builder, [0; 32], SkipReason::TooLarge);
            }
            Err(refusal) => {
                if let Refusal::Outside(_) | Refusal::NotRegular(_) = refusal {
                    self.note(format!("not indexing {}: {refusal}", entry.rel_path));
                }
                stats.files_skipped += 1;
                return skip(builder, [0; 32], SkipReason::Unreadable);
            }
        };
        stats.files_hashed += 1;
        let hash = *blake3::hash(&bytes).as_bytes();
        if let Some(previous) = previous.filter(|p| p.hash == hash) {
            stats.files_unchanged += 1;
            if (previous.size, previous.mtime_ns, previous.stamp)
                == (entry.size, entry.mtime_ns, entry.stamp)
            {
                // A racily clean file, hashed again: nothing to write.
                return;
            }
            // Same content, new mtime: keep the chunks, refresh the row.
            return builder.add_row(FileRow {
                size: entry.size,
                mtime_ns: entry.mtime_ns,
                stamp: entry.stamp,
                ..previous.clone()
            });
        }
        let text = match classify(bytes) {
            Ok(text) => text,
            Err(reason) => {
                stats.files_skipped += 1;
                return skip(builder, hash, reason);
            }
        };
        stats.files_reparsed += 1;
        let chunks = safe_chunk(&entry.rel_path, &text, entry.language);
        builder.add_file(ParsedFile {
            path: &entry.rel_path,
            size: entry.size,
            mtime_ns: entry.mtime_ns,
            stamp: entry.stamp,
            hash,
            language: entry.language,
            text: &text,
            chunks,
        });
    }

    /// Merges segments when there are too many or too much is dead.
    pub(super) fn merge_if_needed(
        &self,
        state: &WriterState,
        manifest: &mut Manifest,
        stats: &mut UpdateStats,
    ) -> Result<Option<Merged>, IndexError> {
        let dead_fraction = state.n_dead as f64 / state.n_stored.max(1) as f64;
        let full = dead_fraction > MAX_DEAD_FRACTION && state.segments.len() > 1;
        let range = if full {
            0..state.segments.len()
        } else if state.segments.len() > MAX_SEGMENTS {
            KEPT_SEGMENTS..state.segments.len()
        } else {
            return Ok(None);
        };
        let inputs: Vec<&Segment> = state.segments[range].iter().map(|s| &**s).collect();
        let dead = &state.dead;
        let merged = segment::merge(
            &inputs,
            &|id| !bit(dead, id),
            full,
            manifest.next_segment_id,
        );
        manifest.next_segment_id += 1;
        self.write_segment(&merged)?;
        stats.segments_merged += inputs.len() as u64;
        stats.segments_written += 1;
        Ok(Some(Merged {
            segment: Arc::new(merged),
            replaced: inputs.iter().map(|s| s.id).collect(),
        }))
    }
}

/// A segment produced by a merge and the ids of the segments it replaces.
pub(super) struct Merged {
    pub(super) segment: Arc<Segment>,
    pub(super) replaced: Vec<u64>,
}

#[cfg(test)]
mod tests {
    use super::deal;
    use crate::chunk::Language;
    use crate::walk::WalkEntry;

    fn files(sizes: &[u64]) -> Vec<WalkEntry> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, &size)| WalkEntry {
                rel_path: format!("f{i:04}.rs"),
                abs_path: format!("/r/f{i:04}.rs").into(),
                language: Language::Rust,
                size,
                mtime_ns: 0,
                stamp: 0,
            })
            .collect()
    }

    #[test]
    fn every_file_is_dealt_once_the_same_way_every_time_in_even_shares() {
        let sizes: Vec<u64> = (0..1000u64).map(|i| 100 + (i * 7919) % 50_000).collect();
        let list = files(&sizes);
        let shares = deal(&list, 4, u64::MAX);
        assert_eq!(shares, deal(&list, 4, u64::MAX));
        assert_eq!(shares.len(), 4);
        let mut seen: Vec<usize> = shares.iter().flatten().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..1000).collect::<Vec<_>>());
        let bytes: Vec<u64> = shares
            .iter()
            .map(|s| s.iter().map(|&i| sizes[i]).sum())
            .collect();
        let (lo, hi) = (bytes.iter().min().unwrap(), bytes.iter().max().unwrap());
        assert!(hi - lo < hi / 5, "{bytes:?}");
    }

    #[test]
    fn few_files_make_few_shares_and_none_make_one_empty_share() {
        assert_eq!(deal(&files(&[10, 20]), 8, u64::MAX).len(), 2);
        assert_eq!(deal(&files(&[]), 4, u64::MAX), vec![Vec::<usize>::new()]);
        // One huge file (capped at the size limit) does not starve the rest.
        let shares = deal(&files(&[1 << 40, 5, 5, 5]), 2, 1 << 20);
        assert_eq!(shares.iter().map(Vec::len).sum::<usize>(), 4);
    }
}
