//! The workspace's vector index: one usearch HNSW graph (cosine, bf16
//! scalars) keyed by chunk id, persisted beside the segments.
//!
//! Invariants: a key is a chunk id that was live when its vector was added;
//! dead chunks are removed when the index learns of them, and any stragglers
//! are filtered by the snapshot's liveness at query time, so a lagging
//! vector file can cost recall but never serve a dead chunk. Updates are
//! remove-then-add. The file is written to a temp path and renamed, and its
//! model id lives in a checksummed sidecar: a file from another model, a
//! torn, corrupted (its length and blake3 hash are in the sidecar and are
//! checked before usearch parses it) or unreadable file means starting
//! empty (the shared vector cache makes refilling cheap).
//! Never: embed text, decide which chunks are live.

use crate::codec::{frame, unframe, Reader, Writer};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, RwLock};
use usearch::ffi::{IndexOptions, MetricKind, ScalarKind};

pub const VECTORS_FILE: &str = "vectors.usearch";
pub const VECTORS_META_FILE: &str = "vectors.meta";
/// The static tier's index lives beside the transformer's (a workspace
/// keeps both while the transformer's fill in).
pub const STATIC_VECTORS_FILE: &str = "vectors-static.usearch";
pub const STATIC_VECTORS_META_FILE: &str = "vectors-static.meta";

/// Deletes every tier's saved vectors in `dir`: their chunk ids belong to
/// an index that is being rebuilt.
pub fn remove_files(dir: &Path) {
    for name in [
        VECTORS_FILE,
        VECTORS_META_FILE,
        STATIC_VECTORS_FILE,
        STATIC_VECTORS_META_FILE,
    ] {
        let _ = std::fs::remove_file(dir.join(name));
    }
}

/// The index and sidecar file names for vectors of `model_id`.
pub fn file_names(model_id: &str) -> (&'static str, &'static str) {
    if quarry_encoder::static_tier::is_static_id(model_id) {
        (STATIC_VECTORS_FILE, STATIC_VECTORS_META_FILE)
    } else {
        (VECTORS_FILE, VECTORS_META_FILE)
    }
}
const META_MAGIC: &[u8; 4] = b"QVMT";
/// 3: the sidecar records the vector file's length and blake3 hash.
const META_VERSION: u32 = 3;

#[derive(Debug, thiserror::Error)]
pub enum VectorError {
    #[error("vector index: {0}")]
    Usearch(String),
    /// The saved file failed its checks (length, hash, usearch's own
    /// parse) or is not a regular file: start empty and refill.
    #[error("saved vector index is corrupt ({0})")]
    Corrupt(String),
    #[error("vector index {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The `k` of `vectors` nearest `query` by cosine similarity, best first
/// (ties on chunk id).
fn nearest<'v>(
    query: &[f32],
    k: usize,
    vectors: impl Iterator<Item = (u32, &'v [f32])>,
) -> Vec<(u32, f32)> {
    let norm = query.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    let mut scored: Vec<(u32, f32)> = vectors
        .filter(|(_, v)| v.len() == query.len())
        .map(|(id, v)| {
            let dot: f32 = v.iter().zip(query).map(|(a, b)| a * b).sum();
            let len = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
            (id, dot / (norm * len))
        })
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(k);
    scored
}

fn usearch_err(err: impl std::fmt::Display) -> VectorError {
    VectorError::Usearch(err.to_string())
}

pub struct VectorIndex {
    /// Writes that change capacity take the write lock; adds, removes and
    /// searches share the read lock (usearch synchronises them itself).
    index: RwLock<usearch::Index>,
    model_id: String,
    dim: usize,
    /// usearch serves at most as many concurrent adds and searches as it
    /// has thread contexts and fails the rest; callers queue here instead.
    contexts: Slots,
    /// The sidecar this index was opened with (`None`: built in memory):
    /// a reader following the writer reopens the file only when it changed.
    sidecar: Option<Vec<u8>>,
    /// A flat index ([`VectorIndex::flat`]): the vectors alone, searched
    /// exhaustively; `index` stays empty.
    flat: Option<RwLock<rustc_hash::FxHashMap<u32, Vec<f32>>>>,
}

/// Thread contexts reserved in usearch, and handed out one per operation.
/// More than the cores: requests run on many blocking threads at once.
fn wanted_contexts() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores * 2).max(4)
}

/// A counting semaphore over usearch's thread contexts.
struct Slots {
    free: Mutex<usize>,
    freed: Condvar,
}

struct Slot<'a>(&'a Slots);

impl Slots {
    fn new(n: usize) -> Slots {
        Slots {
            free: Mutex::new(n.max(1)),
            freed: Condvar::new(),
        }
    }

    fn take(&self) -> Slot<'_> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            free = self.freed.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        Slot(self)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.0.freed.notify_one();
    }
}

/// How vectors are stored in the graph. BF16 is the default: on the bench
/// (regex-automata, 4,230 vectors) its recall@10 equals f32's and f16's
/// (0.960) at f16's size, and an insert takes 0.12 ms against f16's 0.72
/// ms, whose conversion to f32 usearch builds without SIMD does bit by bit
/// (a seventh of a cold embedding's time went to it). I8 loses recall for
/// a further 40% of size (see `quarry-bench --dense`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantization {
    F32,
    F16,
    BF16,
    I8,
}

/// The scalar kind every workspace's index uses.
const QUANTIZATION: Quantization = Quantization::BF16;

fn options(dim: usize) -> IndexOptions {
    options_with(dim, QUANTIZATION)
}

fn options_with(dim: usize, quantization: Quantization) -> IndexOptions {
    IndexOptions {
        dimensions: dim,
        metric: MetricKind::Cos,
        quantization: match quantization {
            Quantization::F32 => ScalarKind::F32,
            Quantization::F16 => ScalarKind::F16,
            Quantization::BF16 => ScalarKind::BF16,
            Quantization::I8 => ScalarKind::I8,
        },
        connectivity: 0,
        expansion_add: 0,
        expansion_search: 0,
        multi: false,
    }
}

impl VectorIndex {
    pub fn new(model_id: &str, dim: usize) -> Result<VectorIndex, VectorError> {
        VectorIndex::with_quantization(model_id, dim, QUANTIZATION)
    }

    pub fn with_quantization(
        model_id: &str,
        dim: usize,
        quantization: Quantization,
    ) -> Result<VectorIndex, VectorError> {
        let index = usearch::Index::new(&options_with(dim, quantization)).map_err(usearch_err)?;
        let contexts = wanted_contexts();
        index
            .reserve_capacity_and_threads(1024, contexts)
            .map_err(usearch_err)?;
        Ok(VectorIndex {
            index: RwLock::new(index),
            model_id: model_id.to_string(),
            dim,
            contexts: Slots::new(contexts),
            sidecar: None,
            flat: None,
        })
    }

    /// An index that keeps its vectors as they are and searches them all:
    /// for a few thousand vectors gathered for one query (a hub's candidate
    /// snapshot), where building a graph costs far more than every search
    /// it would serve. Exact, like `exact_search`, over vectors rounded to
    /// bf16 as [`QUANTIZATION`] stores them; never saved.
    pub fn flat(model_id: &str, dim: usize) -> Result<VectorIndex, VectorError> {
        let index = usearch::Index::new(&options(dim)).map_err(usearch_err)?;
        Ok(VectorIndex {
            index: RwLock::new(index),
            model_id: model_id.to_string(),
            dim,
            contexts: Slots::new(1),
            sidecar: None,
            flat: Some(RwLock::new(rustc_hash::FxHashMap::default())),
        })
    }

    fn flat_read(
        &self,
    ) -> Option<std::sync::RwLockReadGuard<'_, rustc_hash::FxHashMap<u32, Vec<f32>>>> {
        self.flat
            .as_ref()
            .map(|f| f.read().unwrap_or_else(|e| e.into_inner()))
    }

    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, usearch::Index> {
        self.index.read().unwrap_or_else(|e| e.into_inner())
    }

    fn check_dim(&self, len: usize) -> Result<(), VectorError> {
        if len == self.dim {
            return Ok(());
        }
        Err(VectorError::Usearch(format!(
            "vector of {len} dimensions, index has {}",
            self.dim
        )))
    }

    /// Vectors stored.
    pub fn len(&self) -> usize {
        if let Some(flat) = self.flat_read() {
            return flat.len();
        }
        self.read().size()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn contains(&self, chunk_id: u32) -> bool {
        if let Some(flat) = self.flat_read() {
            return flat.contains_key(&chunk_id);
        }
        self.read().contains(u64::from(chunk_id))
    }

    /// Adds (or replaces) vectors.
    pub fn add(&self, entries: &[(u32, &[f32])]) -> Result<(), VectorError> {
        if let Some(flat) = &self.flat {
            let mut flat = flat.write().unwrap_or_else(|e| e.into_inner());
            for (chunk_id, vector) in entries {
                self.check_dim(vector.len())?;
                // Rounded as the graph index stores them, so a flat index
                // ranks as a saved one would.
                flat.insert(
                    *chunk_id,
                    vector
                        .iter()
                        .map(|x| half::bf16::from_f32(*x).to_f32())
                        .collect(),
                );
            }
            return Ok(());
        }
        let needed = self.len() + entries.len();
        {
            let index = self.index.write().unwrap_or_else(|e| e.into_inner());
            if index.capacity() < needed {
                // `reserve` alone would reset the thread contexts to one
                // per core.
                index
                    .reserve_capacity_and_threads(
                        needed.max(index.capacity() * 2).max(1024),
                        wanted_contexts(),
                    )
                    .map_err(usearch_err)?;
            }
        }
        let index = self.read();
        let _slot = self.contexts.take();
        for (chunk_id, vector) in entries {
            self.check_dim(vector.len())?;
            let key = u64::from(*chunk_id);
            if index.contains(key) {
                index.remove(key).map_err(usearch_err)?;
            }
            index.add(key, vector).map_err(usearch_err)?;
        }
        Ok(())
    }

    pub fn remove(&self, chunk_ids: &[u32]) {
        if let Some(flat) = &self.flat {
            let mut flat = flat.write().unwrap_or_else(|e| e.into_inner());
            for id in chunk_ids {
                flat.remove(id);
            }
            return;
        }
        let index = self.read();
        let _slot = self.contexts.take();
        for id in chunk_ids {
            let key = u64::from(*id);
            if index.contains(key) {
                let _ = index.remove(key);
            }
        }
    }

    /// The `k` nearest of `candidates` by exact cosine similarity, best
    /// first (ties on chunk id). For filtered queries whose filter leaves few
    /// chunks, where the graph search may stop short of `k`. Candidates
    /// without a vector are skipped.
    pub fn exact_search(
        &self,
        query: &[f32],
        k: usize,
        candidates: impl Iterator<Item = u32>,
    ) -> Vec<(u32, f32)> {
        if query.len() != self.dim || k == 0 {
            return Vec::new();
        }
        if let Some(flat) = self.flat_read() {
            return nearest(
                query,
                k,
                candidates.filter_map(|id| Some((id, flat.get(&id)?.as_slice()))),
            );
        }
        let index = self.read();
        let norm = query.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
        let mut buf = vec![0f32; self.dim];
        let mut scored: Vec<(u32, f32)> = Vec::new();
        for id in candidates {
            let key = u64::from(id);
            if !index.contains(key) || !matches!(index.get(key, &mut buf), Ok(n) if n > 0) {
                continue;
            }
            let dot: f32 = buf.iter().zip(query).map(|(a, b)| a * b).sum();
            let len = buf.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
            scored.push((id, dot / (norm * len)));
        }
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(k);
        scored
    }

    /// The `k` nearest chunk ids accepted by `keep`, with cosine similarity.
    /// Any number of threads may search at once: beyond usearch's thread
    /// contexts they wait their turn. A usearch failure is an error, never
    /// an empty answer.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        keep: &dyn Fn(u32) -> bool,
    ) -> Result<Vec<(u32, f32)>, VectorError> {
        if query.len() != self.dim {
            return Err(VectorError::Usearch(format!(
                "query of {} dimensions, index has {}",
                query.len(),
                self.dim
            )));
        }
        if let Some(flat) = self.flat_read() {
            let kept = flat
                .iter()
                .filter(|(id, _)| keep(**id))
                .map(|(id, v)| (*id, v.as_slice()));
            return Ok(nearest(query, k, kept));
        }
        let index = self.read();
        if index.size() == 0 || k == 0 {
            return Ok(Vec::new());
        }
        let filter = |key: u64| u32::try_from(key).is_ok_and(keep);
        let matches = {
            let _slot = self.contexts.take();
            index
                .filtered_search(query, k, filter)
                .map_err(usearch_err)?
        };
        Ok(matches
            .keys
            .iter()
            .zip(&matches.distances)
            .filter_map(|(key, distance)| Some((u32::try_from(*key).ok()?, 1.0 - distance)))
            .collect())
    }

    /// Whether the file saved in `dir` is the one this index was opened
    /// from (its sidecar, which holds the file's hash, is unchanged): one
    /// small read instead of reading and hashing the vectors again.
    pub fn is_saved_in(&self, dir: &Path) -> bool {
        let (_, meta_file) = file_names(&self.model_id);
        self.sidecar.as_deref().is_some_and(|known| {
            crate::cachefile::read(&dir.join(meta_file)).is_ok_and(|now| now == known)
        })
    }

    /// Writes the index and its sidecar atomically into `dir`. `id_bound`
    /// is above every chunk id the index holds (the manifest's next chunk
    /// id): `open` refuses the file for a manifest that has not reached it,
    /// whose ids name other chunks (a rebuilt or rolled-back cache). The
    /// sidecar holds the file's length and blake3 hash: `open` hands
    /// usearch only bytes that match them.
    pub fn save(&self, dir: &Path, id_bound: u32) -> Result<(), VectorError> {
        if self.flat.is_some() {
            return Err(VectorError::Usearch("a flat index is never saved".into()));
        }
        let (file, meta_file) = file_names(&self.model_id);
        let bytes = {
            let index = self.read();
            let mut bytes = vec![0u8; index.serialized_length()];
            index.save_to_buffer(&mut bytes).map_err(usearch_err)?;
            bytes
        };
        let io = |path: PathBuf| move |source| VectorError::Io { path, source };
        crate::cachefile::write_atomic(dir, file, &bytes).map_err(io(dir.join(file)))?;
        let mut w = Writer::new();
        w.str(&self.model_id);
        w.u32(self.dim as u32);
        w.u64(self.len() as u64);
        w.u32(id_bound);
        w.u64(bytes.len() as u64);
        w.bytes(blake3::hash(&bytes).as_bytes());
        crate::cachefile::write_atomic(dir, meta_file, &frame(META_MAGIC, META_VERSION, &w.buf))
            .map_err(io(dir.join(meta_file)))
    }

    /// Opens the saved index in `dir` if it was built by `model_id` with
    /// `dim` dimensions for chunk ids below `id_bound` (the manifest's next
    /// chunk id); `Ok(None)` when there is none or it does not match,
    /// `Err(Corrupt)` when it is damaged. The
    /// file is read whole (`cachefile`: a regular file, never mapped) and
    /// must have the length and hash its sidecar recorded before usearch
    /// parses a byte of it: a corrupted graph would crash usearch, so it is
    /// refilled from the shared vector cache instead. `writable` (the
    /// writer) also clears anything that is not a regular file in its
    /// place.
    pub fn open(
        dir: &Path,
        model_id: &str,
        dim: usize,
        writable: bool,
        id_bound: u32,
    ) -> Result<Option<VectorIndex>, VectorError> {
        let (file, meta_file) = file_names(model_id);
        let read = |name: &str| match crate::cachefile::read(&dir.join(name)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(err) => {
                if writable && err.kind() == std::io::ErrorKind::InvalidData {
                    crate::cachefile::remove_irregular(&dir.join(name));
                }
                Err(VectorError::Corrupt(err.to_string()))
            }
        };
        let Some(meta) = read(meta_file)? else {
            return Ok(None);
        };
        let Ok(payload) = unframe(&meta, META_MAGIC, "vector sidecar", META_VERSION) else {
            // Torn, or written by another version: refilled silently.
            return Ok(None);
        };
        let mut r = Reader::new(payload);
        let (Ok(saved_model), Ok(saved_dim), Ok(_), Ok(saved_bound), Ok(saved_len), Ok(saved_hash)) =
            (r.str(), r.u32(), r.u64(), r.u32(), r.u64(), r.bytes())
        else {
            return Ok(None);
        };
        if saved_model != model_id || saved_dim as usize != dim || saved_bound > id_bound {
            return Ok(None);
        }
        let Some(bytes) = read(file)? else {
            return Ok(None);
        };
        if bytes.len() as u64 != saved_len {
            return Err(VectorError::Corrupt(format!(
                "{file} holds {} bytes, {saved_len} were written",
                bytes.len()
            )));
        }
        if blake3::hash(&bytes).as_bytes()[..] != *saved_hash {
            return Err(VectorError::Corrupt(format!(
                "{file} does not match the hash it was written with"
            )));
        }
        // The header must agree too; a file of another scalar kind (f16
        // before bf16) is refilled from the vector cache.
        let wanted = options(dim);
        match usearch::Index::metadata_from_buffer(&bytes) {
            Ok(meta)
                if meta.dimensions == dim as u64 && meta.quantization == wanted.quantization => {}
            _ => return Ok(None),
        }
        let index = usearch::Index::new(&options(dim)).map_err(usearch_err)?;
        if let Err(e) = index.load_from_buffer(&bytes) {
            return Err(VectorError::Corrupt(format!("{file}: {e}")));
        }
        // If usearch refuses to reserve, it keeps its default of one
        // context per core.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let contexts = match index
            .reserve_capacity_and_threads(index.size().max(index.capacity()), wanted_contexts())
        {
            Ok(()) => wanted_contexts(),
            Err(_) => cores,
        };
        Ok(Some(VectorIndex {
            index: RwLock::new(index),
            model_id: model_id.to_string(),
            dim,
            contexts: Slots::new(contexts),
            sidecar: Some(meta),
            flat: None,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(values: &[f32]) -> Vec<f32> {
        let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
        values.iter().map(|v| v / norm).collect()
    }

    #[test]
    fn a_flat_index_answers_as_exact_search_does() {
        let (graph, vectors) = filled(300, 7, 3, 11);
        let flat = VectorIndex::flat("m", 8).expect("flat");
        let entries: Vec<(u32, &[f32])> = vectors
            .iter()
            .enumerate()
            .map(|(i, v)| (i as u32, v.as_slice()))
            .collect();
        flat.add(&entries).expect("add");
        assert_eq!(flat.len(), 300);
        assert!(flat.contains(5) && !flat.contains(300));
        let query = unit(&[1.0, 2.0, 0.5, 0.0, 3.0, 1.0, 0.0, 2.0]);
        // (The graph index stores quantised vectors: the same order, scores
        // within rounding.)
        let exact = graph.exact_search(&query, 10, 0..300);
        let found = flat.search(&query, 10, &|id| id != 999).expect("search");
        let ids = |hits: &[(u32, f32)]| hits.iter().map(|h| h.0).collect::<Vec<_>>();
        assert_eq!(ids(&found), ids(&exact));
        assert!(found
            .iter()
            .zip(&exact)
            .all(|(a, b)| (a.1 - b.1).abs() < 1e-3));
        assert_eq!(flat.exact_search(&query, 10, 0..300), found);
        flat.remove(&[exact[0].0]);
        let found = flat.search(&query, 1, &|_| true).expect("search");
        assert_eq!(found[0].0, exact[1].0);
        assert!(flat.save(Path::new("/nonexistent"), 1).is_err());
    }

    /// An 8-dimensional index of `n` spread unit vectors (dimension `d` of
    /// vector `i` is `(i * a + d * b) % m`), with the vectors.
    fn filled(n: u32, a: u32, b: u32, m: u32) -> (VectorIndex, Vec<Vec<f32>>) {
        let index = VectorIndex::new("m", 8).expect("new");
        let vectors: Vec<Vec<f32>> = (0..n)
            .map(|i| {
                unit(
                    &(0..8)
                        .map(|d| ((i * a + d * b) % m) as f32 + 0.5)
                        .collect::<Vec<_>>(),
                )
            })
            .collect();
        let entries: Vec<(u32, &[f32])> = vectors
            .iter()
            .enumerate()
            .map(|(i, v)| (i as u32, v.as_slice()))
            .collect();
        index.add(&entries).expect("add");
        (index, vectors)
    }

    #[cfg(unix)]
    /// Issue 43, item 10: a saved graph with 16 words set to 0x7fffffff,
    /// or 4 KB of 0xff, crashed usearch on load (SIGSEGV, "Linking to
    /// missing level"). Now every corruption, and a FIFO or a symlink in
    /// the file's place, is refused as `Corrupt` before usearch sees a byte,
    /// and the intact file still opens.
    #[test]
    fn a_corrupted_vector_file_is_refused_before_usearch_reads_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (index, _) = filled(300, 7, 3, 11);
        index.save(dir.path(), 1000).expect("save");
        let path = dir.path().join(VECTORS_FILE);
        let good = std::fs::read(&path).expect("read");
        let reopened = VectorIndex::open(dir.path(), "m", 8, true, 1000).expect("open");
        assert_eq!(reopened.expect("intact file opens").len(), 300);
        let mut corruptions: Vec<Vec<u8>> = Vec::new();
        for start in [64usize, good.len() / 3, good.len() / 2, good.len() - 80] {
            let mut bytes = good.clone();
            for word in 0..16 {
                let at = (start + word * 4).min(bytes.len() - 4);
                bytes[at..at + 4].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
            }
            corruptions.push(bytes);
        }
        let mut ff = good.clone();
        let n = ff.len().min(4096);
        let from = ff.len() - n;
        ff[from..].fill(0xff);
        corruptions.push(ff);
        corruptions.push(good[..good.len() / 2].to_vec());
        for bytes in corruptions {
            std::fs::write(&path, &bytes).expect("corrupt");
            assert!(matches!(
                VectorIndex::open(dir.path(), "m", 8, true, 1000),
                Err(VectorError::Corrupt(_))
            ));
        }
        std::fs::remove_file(&path).expect("rm");
        std::os::unix::fs::symlink("/dev/zero", &path).expect("symlink");
        assert!(matches!(
            VectorIndex::open(dir.path(), "m", 8, true, 1000),
            Err(VectorError::Corrupt(_))
        ));
        // The writer cleared the symlink: a save takes the name again.
        index.save(dir.path(), 1000).expect("save");
        assert!(VectorIndex::open(dir.path(), "m", 8, true, 1000)
            .expect("open")
            .is_some());
    }

    #[test]
    fn add_search_remove_and_persist() {
        let dir = tempfile::tempdir().expect("tempdir");
        let index = VectorIndex::new("m", 4).expect("new");
        let (a, b, c) = (
            unit(&[1.0, 0.0, 0.0, 0.0]),
            unit(&[0.9, 0.1, 0.0, 0.0]),
            unit(&[0.0, 0.0, 1.0, 0.0]),
        );
        index.add(&[(1, &a), (2, &b), (3, &c)]).expect("add");
        let hits = index.search(&a, 2, &|_| true).unwrap();
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![1, 2]);
        assert!((hits[0].1 - 1.0).abs() < 1e-2);
        // The filter hides chunks the snapshot says are dead.
        let hits = index.search(&a, 2, &|id| id != 1).unwrap();
        assert_eq!(hits[0].0, 2);
        // Update = remove then add.
        index.add(&[(2, &c)]).expect("replace");
        assert_eq!(index.search(&c, 1, &|id| id != 3).unwrap()[0].0, 2);
        index.remove(&[3]);
        assert_eq!(index.len(), 2);
        index.save(dir.path(), 4).expect("save");

        let viewed = VectorIndex::open(dir.path(), "m", 4, false, 4)
            .expect("open")
            .expect("some");
        assert_eq!(viewed.len(), 2);
        assert_eq!(viewed.search(&a, 1, &|_| true).unwrap()[0].0, 1);
        assert!(VectorIndex::open(dir.path(), "other-model", 4, false, 4)
            .expect("open")
            .is_none());
        // A manifest that never reached these ids (a rebuilt cache) names
        // other chunks by them: the vectors are not used.
        assert!(VectorIndex::open(dir.path(), "m", 4, false, 3)
            .expect("open")
            .is_none());
        // A file of another scalar kind (an f16 index saved before bf16)
        // is not read: the caller refills it from the vector cache.
        let f16 = VectorIndex::with_quantization("m", 4, Quantization::F16).expect("new");
        f16.add(&[(1, &a)]).expect("add");
        f16.save(dir.path(), 4).expect("save");
        assert!(VectorIndex::open(dir.path(), "m", 4, true, 4)
            .expect("open")
            .is_none());
        // A torn file is corrupt: said, and refilled by the caller.
        std::fs::write(dir.path().join(VECTORS_FILE), b"torn").expect("corrupt");
        assert!(matches!(
            VectorIndex::open(dir.path(), "m", 4, true, 4),
            Err(VectorError::Corrupt(_))
        ));
    }

    #[test]
    fn many_concurrent_searches_all_get_the_same_answer() {
        let (index, vectors) = filled(500, 7, 13, 17);
        let query = vectors[42].clone();
        let alone = index.search(&query, 10, &|id| id % 3 != 0).unwrap();
        assert_eq!(alone.len(), 10);
        // Far more threads than usearch has contexts.
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..64)
                .map(|_| {
                    scope.spawn(|| {
                        (0..20)
                            .map(|_| index.search(&query, 10, &|id| id % 3 != 0).unwrap())
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            for handle in handles {
                for found in handle.join().unwrap() {
                    assert_eq!(found, alone);
                }
            }
        });
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(64))]
        /// Random corruptions of a saved vector file (flips, cuts, runs of
        /// one byte) never reach usearch: each is `Corrupt`, never a
        /// signal, and the caller refills the index.
        #[test]
        fn a_randomly_corrupted_vector_file_is_corrupt_never_a_crash(
            edits in proptest::collection::vec(
                (proptest::prelude::any::<proptest::sample::Index>(), 1..=255u8, 0..3u8),
                1..6,
            ),
        ) {
            let dir = tempfile::tempdir().expect("tempdir");
            let (index, _) = filled(64, 5, 3, 7);
            index.save(dir.path(), 100).expect("save");
            let path = dir.path().join(VECTORS_FILE);
            let good = std::fs::read(&path).expect("read");
            let mut bytes = good.clone();
            for (at, value, how) in &edits {
                if bytes.is_empty() {
                    break;
                }
                let i = at.index(bytes.len());
                match how {
                    0 => bytes[i] ^= value,
                    1 => bytes.truncate(i),
                    _ => {
                        let end = (i + 4096).min(bytes.len());
                        bytes[i..end].fill(*value);
                    }
                }
            }
            std::fs::write(&path, &bytes).expect("write");
            let opened = VectorIndex::open(dir.path(), "m", 8, true, 100);
            if bytes == good {
                proptest::prop_assert!(matches!(opened, Ok(Some(_))));
            } else {
                proptest::prop_assert!(matches!(opened, Err(VectorError::Corrupt(_))));
            }
        }
    }
}
