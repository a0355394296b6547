//! The workspace's vector index: one usearch HNSW graph (cosine, bf16
//! scalars) keyed by chunk id, persisted beside the segments.
//!
//! Invariants: a key is a chunk id that was live when its vector was added;
//! dead chunks are removed when the index learns of them, and any stragglers
//! are filtered by the snapshot's liveness at query time, so a lagging
//! vector file can cost recall but never serve a dead chunk. Updates are
//! remove-then-add. The file is written to a temp path and renamed, and its
//! model id lives in a checksummed sidecar: a file from another model, a
//! torn or unreadable file means starting empty (the shared vector cache
//! makes refilling cheap).
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
    if crate::dense::static_tier::is_static_id(model_id) {
        (STATIC_VECTORS_FILE, STATIC_VECTORS_META_FILE)
    } else {
        (VECTORS_FILE, VECTORS_META_FILE)
    }
}
const META_MAGIC: &[u8; 4] = b"QVMT";
const META_VERSION: u32 = 2;

#[derive(Debug, thiserror::Error)]
pub enum VectorError {
    #[error("vector index: {0}")]
    Usearch(String),
    #[error("vector index {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
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
/// a further 40% of size (see `quarry bench --dense`).
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
        })
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

    /// Vectors stored.
    pub fn len(&self) -> usize {
        self.read().size()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn contains(&self, chunk_id: u32) -> bool {
        self.read().contains(u64::from(chunk_id))
    }

    /// Adds (or replaces) vectors.
    pub fn add(&self, entries: &[(u32, &[f32])]) -> Result<(), VectorError> {
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
            if vector.len() != self.dim {
                return Err(VectorError::Usearch(format!(
                    "vector of {} dimensions, index has {}",
                    vector.len(),
                    self.dim
                )));
            }
            let key = u64::from(*chunk_id);
            if index.contains(key) {
                index.remove(key).map_err(usearch_err)?;
            }
            index.add(key, vector).map_err(usearch_err)?;
        }
        Ok(())
    }

    pub fn remove(&self, chunk_ids: &[u32]) {
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

    /// Writes the index and its sidecar atomically into `dir`. `id_bound`
    /// is above every chunk id the index holds (the manifest's next chunk
    /// id): `open` refuses the file for a manifest that has not reached it,
    /// whose ids name other chunks (a rebuilt or rolled-back cache).
    pub fn save(&self, dir: &Path, id_bound: u32) -> Result<(), VectorError> {
        let (file, meta_file) = file_names(&self.model_id);
        let tmp = dir.join(format!("{file}.tmp-{}", std::process::id()));
        let tmp_str = tmp.to_string_lossy().into_owned();
        self.read().save(&tmp_str).map_err(usearch_err)?;
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| VectorError::Io { path, source }
        };
        std::fs::File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(io(&tmp))?;
        std::fs::rename(&tmp, dir.join(file)).map_err(io(&tmp))?;
        let mut w = Writer::new();
        w.str(&self.model_id);
        w.u32(self.dim as u32);
        w.u64(self.len() as u64);
        w.u32(id_bound);
        crate::index::store::write_atomic(dir, meta_file, &frame(META_MAGIC, META_VERSION, &w.buf))
            .map_err(io(&dir.join(meta_file)))
    }

    /// Opens the saved index in `dir` if it was built by `model_id` with
    /// `dim` dimensions for chunk ids below `id_bound` (the manifest's next
    /// chunk id); `Ok(None)` when there is none or it does not match.
    /// `writable` copies it into memory; otherwise it is memory-mapped.
    pub fn open(
        dir: &Path,
        model_id: &str,
        dim: usize,
        writable: bool,
        id_bound: u32,
    ) -> Result<Option<VectorIndex>, VectorError> {
        let (file, meta_file) = file_names(model_id);
        let Ok(meta) = std::fs::read(dir.join(meta_file)) else {
            return Ok(None);
        };
        let Ok(payload) = unframe(&meta, META_MAGIC, "vector sidecar", META_VERSION) else {
            return Ok(None);
        };
        let mut r = Reader::new(payload);
        let (Ok(saved_model), Ok(saved_dim), Ok(_), Ok(saved_bound)) =
            (r.str(), r.u32(), r.u64(), r.u32())
        else {
            return Ok(None);
        };
        if saved_model != model_id || saved_dim as usize != dim || saved_bound > id_bound {
            return Ok(None);
        }
        let path = dir.join(file);
        let path_str = path.to_string_lossy().into_owned();
        // The header must agree before usearch reads the body; a file of
        // another scalar kind (f16 before bf16) is refilled from the vector
        // cache.
        let wanted = options(dim);
        match usearch::Index::metadata(&path_str) {
            Ok(meta)
                if meta.dimensions == dim as u64 && meta.quantization == wanted.quantization => {}
            _ => return Ok(None),
        }
        let index = usearch::Index::new(&options(dim)).map_err(usearch_err)?;
        let loaded = if writable {
            index.load(&path_str)
        } else {
            index.view(&path_str)
        };
        if loaded.is_err() {
            return Ok(None);
        }
        // A memory-mapped view may refuse to reserve: it keeps usearch's
        // default of one context per core.
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
        std::fs::write(dir.path().join(VECTORS_FILE), b"torn").expect("corrupt");
        assert!(VectorIndex::open(dir.path(), "m", 4, true, 4)
            .expect("open")
            .is_none());
    }

    #[test]
    fn many_concurrent_searches_all_get_the_same_answer() {
        let index = VectorIndex::new("m", 8).expect("new");
        let vectors: Vec<Vec<f32>> = (0..500u32)
            .map(|i| {
                unit(
                    &(0..8)
                        .map(|d| ((i * 7 + d * 13) % 17) as f32 + 0.5)
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
}
