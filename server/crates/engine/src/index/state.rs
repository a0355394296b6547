//! The committed state a writer updates (the file table, segments, dead chunks) and loading it from the cache.

use super::report::Summary;
use super::segment::{FileRow, FileState, Segment};
use super::snapshot::{set_bit, Snapshot};
use super::store::{self, Manifest};
use crate::dense::vectors::VectorIndex;
use crate::layout::Layout;
use crate::lexical::{Bm25Config, CorpusStats};
use rustc_hash::FxHashMap;
use std::path::Path;
use std::sync::Arc;

/// Mutable state, owned by whoever updates the index.
pub(super) struct WriterState {
    pub(super) manifest: Manifest,
    pub(super) segments: Vec<Arc<Segment>>,
    /// The winning row of every present path.
    pub(super) files: FxHashMap<String, FileRow>,
    pub(super) dead: Vec<u64>,
    pub(super) n_dead: u64,
    pub(super) n_stored: u64,
    /// The layout of `files`, kept while the set of indexed paths and
    /// which of them are generated stay the same (an edit), read again
    /// when they change (`None`).
    pub(super) layout: Option<Arc<Layout>>,
}

/// Makes `row` the winning row of its path; pushes the ids of the chunks
/// that died onto `killed`.
pub(super) fn apply_row(state: &mut WriterState, row: &FileRow, killed: &mut Vec<u32>) {
    let new_ids: &[u32] = match &row.state {
        FileState::Indexed { chunk_ids, .. } => chunk_ids,
        _ => &[],
    };
    let n_before = killed.len();
    let old = if row.state == FileState::Deleted {
        state.files.remove(&row.path)
    } else {
        state.files.insert(row.path.clone(), row.clone())
    };
    // Whether a row is indexed, and generated: what the layout reads.
    let marks = |state: &FileState| match state {
        FileState::Indexed { generated, .. } => Some(*generated),
        _ => None,
    };
    if old.as_ref().and_then(|old| marks(&old.state)) != marks(&row.state) {
        state.layout = None;
    }
    if let Some(FileRow {
        state: FileState::Indexed { chunk_ids, .. },
        ..
    }) = old
    {
        for id in chunk_ids {
            if !new_ids.contains(&id) {
                set_bit(&mut state.dead, id);
                killed.push(id);
            }
        }
    }
    state.n_dead += (killed.len() - n_before) as u64;
}

pub(super) fn empty_state(root: &str) -> WriterState {
    WriterState {
        manifest: Manifest {
            root: root.to_string(),
            next_chunk_id: 0,
            next_segment_id: 1,
            segment_ids: Vec::new(),
        },
        segments: Vec::new(),
        files: FxHashMap::default(),
        dead: Vec::new(),
        n_dead: 0,
        n_stored: 0,
        layout: None,
    }
}

/// Loads the committed state. `Ok(None)`: there is no cache yet.
pub(super) fn load(
    cache_dir: &Path,
    root: &str,
    is_writer: bool,
    reuse: &[Arc<Segment>],
) -> Result<Option<WriterState>, String> {
    // A reader may race a writer that merges and deletes segment files
    // right after committing a new manifest: retry with the new manifest.
    let attempts = if is_writer { 1 } else { 5 };
    let mut last_error = String::new();
    for attempt in 0..attempts {
        if attempt > 0 {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        match load_once(cache_dir, root, reuse) {
            Ok(state) => return Ok(state),
            Err(err) => last_error = err,
        }
    }
    Err(last_error)
}

/// A segment file's bytes, read whole (`cachefile`): a segment is never
/// memory-mapped, so a file truncated or rewritten under a running server
/// can not fault a later search (`SIGBUS`); what was read was checked by
/// `Segment::from_bytes` and stays as it was checked.
pub(super) fn read_segment(path: &Path) -> std::io::Result<bytes::Bytes> {
    crate::cachefile::read(path).map(bytes::Bytes::from)
}

/// `reuse`: segments already loaded (by id), not read again.
pub(super) fn load_once(
    cache_dir: &Path,
    root: &str,
    reuse: &[Arc<Segment>],
) -> Result<Option<WriterState>, String> {
    let manifest_path = cache_dir.join(store::MANIFEST_FILE);
    let bytes = match crate::cachefile::read(&manifest_path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(format!("reading {}: {err}", manifest_path.display())),
    };
    let manifest =
        Manifest::from_bytes(&bytes).map_err(|e| format!("{}: {e}", manifest_path.display()))?;
    if manifest.root != root {
        return Err(format!("it belongs to {}", manifest.root));
    }
    let mut state = empty_state(root);
    // Segments decode and are checked independently: one per core.
    let decoded: Vec<Result<Arc<Segment>, String>> = {
        use rayon::prelude::*;
        manifest
            .segment_ids
            .par_iter()
            .map(|id| {
                if let Some(kept) = reuse.iter().find(|s| s.id == *id) {
                    return Ok(kept.clone());
                }
                let path = cache_dir.join(Segment::file_name(*id));
                let bytes =
                    read_segment(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
                let segment =
                    Segment::from_bytes(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
                if segment.id != *id {
                    return Err(format!("{}: wrong segment id", path.display()));
                }
                if segment
                    .last_chunk_id()
                    .is_some_and(|last| last >= manifest.next_chunk_id)
                {
                    return Err(format!("{}: chunk ids beyond the manifest", path.display()));
                }
                Ok(Arc::new(segment))
            })
            .collect()
    };
    for segment in decoded {
        let segment = segment?;
        state.n_stored += segment.chunks.len() as u64;
        state.segments.push(segment);
    }
    // Every stored chunk starts dead; the winning rows revive theirs.
    for segment in &state.segments {
        for chunk in &segment.chunks {
            set_bit(&mut state.dead, chunk.chunk_id);
        }
    }
    state.n_dead = state.n_stored;
    let segments = state.segments.clone();
    let mut killed = Vec::new();
    for segment in &segments {
        for row in &segment.rows {
            apply_row(&mut state, row, &mut killed);
            killed.clear();
        }
    }
    let mut n_live = 0u64;
    for row in state.files.values() {
        if let FileState::Indexed { chunk_ids, .. } = &row.state {
            for id in chunk_ids {
                if let Some(word) = state.dead.get_mut(*id as usize / 64) {
                    *word &= !(1 << (id % 64));
                }
                n_live += 1;
            }
        }
    }
    state.n_dead = state.n_stored.saturating_sub(n_live);
    state.manifest = manifest;
    Ok(Some(state))
}

pub(super) fn make_snapshot(
    root: &Path,
    state: &mut WriterState,
    bm25: &Bm25Config,
    vectors: Option<Arc<VectorIndex>>,
) -> Snapshot {
    let mut stats = CorpusStats::default();
    for segment in &state.segments {
        stats.add(&segment.lexical);
    }
    let mut summary = Summary {
        segments: state.segments.len() as u64,
        ..Summary::default()
    };
    for row in state.files.values() {
        match &row.state {
            FileState::Indexed {
                language,
                chunk_ids,
                ..
            } => {
                summary.files_indexed += 1;
                summary.chunks += chunk_ids.len() as u64;
                *summary.languages.entry(language.name()).or_default() += 1;
            }
            FileState::Skipped(reason) => *summary.skipped.entry(reason.name()).or_default() += 1,
            FileState::Deleted => {}
        }
    }
    let layout = state
        .layout
        .get_or_insert_with(|| {
            let indexed = || {
                state
                    .files
                    .iter()
                    .filter_map(|(path, row)| match row.state {
                        FileState::Indexed { generated, .. } => Some((path.as_str(), generated)),
                        _ => None,
                    })
            };
            // The workspace folder's name is the project's.
            let project = root.file_name().and_then(|n| n.to_str()).unwrap_or("");
            Arc::new(
                Layout::of(
                    indexed().map(|(path, _)| path),
                    indexed().filter(|(_, g)| *g).map(|(path, _)| path),
                )
                .for_project(project),
            )
        })
        .clone();
    Snapshot {
        root: root.to_path_buf(),
        segments: state.segments.clone(),
        dead: Arc::new(state.dead.clone()),
        stats,
        summary,
        bm25: bm25.clone(),
        vectors,
        static_vectors: None,
        layout,
        term_df: None,
    }
}
