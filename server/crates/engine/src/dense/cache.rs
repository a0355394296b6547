//! The shared vector cache: embeddings keyed by (model, blake3 of the
//! embedded text), shared by every workspace on the machine, so an unchanged
//! function is embedded once: not again after an edit elsewhere in its
//! file, a rename or move, or in a second worktree of the same repository.
//!
//! One append-only file per model: a header, then records
//! `key (16 bytes) | vector (dim x f16) | check (4 bytes)`. Appends take an
//! advisory lock on the file; a torn last record (a crash mid-append) fails
//! its check and is cut off by the next writer. A record that fails its
//! check is never served.
//! Never: hold the whole vector set in the per-query path; block readers of
//! the workspace index.

use half::f16;
use rustc_hash::FxHashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 4] = b"QVEC";
const VERSION: u32 = 1;
const HEADER_LEN: usize = 12;
const KEY_LEN: usize = 16;
const CHECK_LEN: usize = 4;

pub type CacheKey = [u8; KEY_LEN];

/// The cache key of a text embedded by a model.
pub fn cache_key(model_id: &str, text: &str) -> CacheKey {
    let mut hasher = blake3::Hasher::new();
    hasher.update(model_id.as_bytes());
    hasher.update(&[0]);
    hasher.update(text.as_bytes());
    let mut key = [0u8; KEY_LEN];
    key.copy_from_slice(&hasher.finalize().as_bytes()[..KEY_LEN]);
    key
}

fn check_of(record: &[u8]) -> [u8; CHECK_LEN] {
    let mut out = [0u8; CHECK_LEN];
    out.copy_from_slice(&blake3::hash(record).as_bytes()[..CHECK_LEN]);
    out
}

/// The default location: `$XDG_CACHE_HOME/quarry/vectors` (or `~/.cache/...`).
pub fn default_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("quarry")
        .join("vectors")
}

/// An opened cache file for one model.
pub struct VectorCache {
    path: PathBuf,
    dim: usize,
    /// Record bytes read at open or appended since.
    data: Vec<u8>,
    offsets: FxHashMap<CacheKey, usize>,
    /// Bytes of `data` known to be valid records (from the header on).
    valid_len: u64,
}

impl VectorCache {
    fn record_len(dim: usize) -> usize {
        KEY_LEN + dim * 2 + CHECK_LEN
    }

    /// Opens (or creates) the cache for `model_id` under `dir`.
    pub fn open(dir: &Path, model_id: &str, dim: usize) -> io::Result<VectorCache> {
        std::fs::create_dir_all(dir)?;
        let name: String = model_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path = dir.join(format!("{name}.qvec"));
        let mut cache = VectorCache {
            path,
            dim,
            data: Vec::new(),
            offsets: FxHashMap::default(),
            valid_len: HEADER_LEN as u64,
        };
        cache.reload()?;
        Ok(cache)
    }

    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads every valid record of the file. A record that fails its
    /// check (a flipped bit) is skipped, never served, and the records
    /// after it are kept: records have one fixed length, so one bad record
    /// cannot hide the rest.
    fn reload(&mut self) -> io::Result<()> {
        let bytes = match crate::cachefile::read(&self.path) {
            Ok(bytes) => bytes,
            // None yet, or not a file this cache wrote (the next append
            // replaces it).
            Err(err)
                if matches!(
                    err.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::InvalidData
                ) =>
            {
                Vec::new()
            }
            Err(err) => return Err(err),
        };
        self.data.clear();
        self.offsets.clear();
        self.valid_len = HEADER_LEN as u64;
        if bytes.len() < HEADER_LEN || !self.header_ok(&bytes) {
            return Ok(());
        }
        let record_len = Self::record_len(self.dim);
        let whole = HEADER_LEN + (bytes.len() - HEADER_LEN) / record_len * record_len;
        self.valid_len = whole as u64;
        self.data = bytes;
        self.data.truncate(whole);
        self.index_records(HEADER_LEN);
        Ok(())
    }

    /// Adds the keys of the whole records in `data` from `from` on that
    /// pass their check.
    fn index_records(&mut self, from: usize) {
        let record_len = Self::record_len(self.dim);
        let mut at = from;
        while at + record_len <= self.data.len() {
            let record = &self.data[at..at + record_len];
            let (body, check) = record.split_at(record_len - CHECK_LEN);
            if check_of(body) == check {
                let mut key = [0u8; KEY_LEN];
                key.copy_from_slice(&record[..KEY_LEN]);
                self.offsets.insert(key, at + KEY_LEN);
            }
            at += record_len;
        }
    }

    fn header_ok(&self, bytes: &[u8]) -> bool {
        bytes.len() >= HEADER_LEN
            && &bytes[..4] == MAGIC
            && bytes[4..8] == VERSION.to_le_bytes()
            && bytes[8..12] == (self.dim as u32).to_le_bytes()
    }

    /// The cached vector for `key`, as f32.
    pub fn get(&self, key: &CacheKey) -> Option<Vec<f32>> {
        let offset = *self.offsets.get(key)?;
        let raw = self.data.get(offset..offset + self.dim * 2)?;
        Some(
            raw.chunks_exact(2)
                .map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
        )
    }

    /// Appends vectors under the file's advisory lock. A file with a bad
    /// header (another version, corruption) is started afresh.
    pub fn append(&mut self, entries: &[(CacheKey, &[f32])]) -> io::Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut file = crate::cachefile::open_rw(&self.path)?;
        file.lock()?;
        let result = self.append_locked(&mut file, entries);
        let _ = file.unlock();
        result
    }

    fn append_locked(&mut self, file: &mut File, entries: &[(CacheKey, &[f32])]) -> io::Result<()> {
        let len = file.metadata()?.len();
        let mut header = [0u8; HEADER_LEN];
        let header_ok = len >= HEADER_LEN as u64 && {
            file.seek(SeekFrom::Start(0))?;
            file.read_exact(&mut header)?;
            self.header_ok(&header)
        };
        if !header_ok {
            file.set_len(0)?;
            file.seek(SeekFrom::Start(0))?;
            let mut header = Vec::with_capacity(HEADER_LEN);
            header.extend_from_slice(MAGIC);
            header.extend_from_slice(&VERSION.to_le_bytes());
            header.extend_from_slice(&(self.dim as u32).to_le_bytes());
            file.write_all(&header)?;
            self.data.clear();
            self.data.extend_from_slice(&header);
            self.offsets.clear();
            self.valid_len = HEADER_LEN as u64;
        } else {
            // Cut a torn tail: everything must be whole records.
            let record_len = Self::record_len(self.dim) as u64;
            let whole = HEADER_LEN as u64 + (len - HEADER_LEN as u64) / record_len * record_len;
            if whole != len {
                file.set_len(whole)?;
            }
            if self.data.is_empty() {
                self.data.extend_from_slice(&header);
            }
        }
        file.seek(SeekFrom::End(0))?;
        let mut buf = Vec::with_capacity(entries.len() * Self::record_len(self.dim));
        for (key, vector) in entries {
            if vector.len() != self.dim {
                continue;
            }
            let start = buf.len();
            buf.extend_from_slice(key);
            for value in *vector {
                buf.extend_from_slice(&f16::from_f32(*value).to_le_bytes());
            }
            let check = check_of(&buf[start..]);
            buf.extend_from_slice(&check);
        }
        file.write_all(&buf)?;
        let base = self.data.len();
        self.data.extend_from_slice(&buf);
        self.index_records(base);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector(seed: f32) -> Vec<f32> {
        (0..8).map(|i| (i as f32 + seed) / 10.0).collect()
    }

    #[test]
    fn round_trip_between_processes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = cache_key("m", "fn a() {}");
        let mut first = VectorCache::open(dir.path(), "m", 8).expect("open");
        first.append(&[(key, &vector(1.0))]).expect("append");
        let second = VectorCache::open(dir.path(), "m", 8).expect("open");
        let got = second.get(&key).expect("cached");
        for (a, b) in got.iter().zip(vector(1.0)) {
            assert!((a - b).abs() < 1e-3);
        }
        assert_ne!(cache_key("m", "fn a() {}"), cache_key("other", "fn a() {}"));
    }

    #[test]
    fn torn_tail_and_garbage_are_never_served() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (k1, k2) = (cache_key("m", "one"), cache_key("m", "two"));
        let mut cache = VectorCache::open(dir.path(), "m", 8).expect("open");
        cache
            .append(&[(k1, &vector(1.0)), (k2, &vector(2.0))])
            .expect("append");
        let path = cache.path().to_path_buf();
        let bytes = std::fs::read(&path).expect("read");
        // A crash in the middle of the second record.
        std::fs::write(&path, &bytes[..bytes.len() - 5]).expect("truncate");
        let mut reopened = VectorCache::open(dir.path(), "m", 8).expect("open");
        assert!(reopened.get(&k1).is_some());
        assert!(reopened.get(&k2).is_none());
        reopened
            .append(&[(k2, &vector(3.0))])
            .expect("append after tear");
        let again = VectorCache::open(dir.path(), "m", 8).expect("open");
        assert_eq!(again.len(), 2);
        // A flipped bit loses that record only: the ones after it are
        // still served, and appending does not copy them again.
        let mut bytes = std::fs::read(&path).expect("read");
        bytes[HEADER_LEN + 3] ^= 1;
        std::fs::write(&path, &bytes).expect("corrupt");
        let mut damaged = VectorCache::open(dir.path(), "m", 8).expect("open");
        assert_eq!(damaged.len(), 1);
        assert!(damaged.get(&k1).is_none() && damaged.get(&k2).is_some());
        damaged.append(&[(k1, &vector(1.0))]).expect("append");
        assert_eq!(
            std::fs::metadata(&path).expect("meta").len(),
            (bytes.len() + VectorCache::record_len(8)) as u64
        );
        assert_eq!(
            VectorCache::open(dir.path(), "m", 8).expect("open").len(),
            2
        );
        // Another dimension or version starts afresh.
        std::fs::write(&path, b"garbage").expect("garbage");
        let mut fresh = VectorCache::open(dir.path(), "m", 8).expect("open");
        assert!(fresh.is_empty());
        fresh.append(&[(k1, &vector(1.0))]).expect("append");
        assert_eq!(
            VectorCache::open(dir.path(), "m", 8).expect("open").len(),
            1
        );
    }
}
