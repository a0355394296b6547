//! The cache directory: where a workspace's index lives on disk.
//!
//! Layout: `manifest.qman` (the list of committed segments), one
//! `seg-*.qseg` file per segment, and `lock` (the advisory writer lock).
//! Every write goes to a temporary file, is fsynced and renamed into place,
//! so a crash leaves either the old or the new manifest, never a torn one.
//! Invariants: the manifest only names segment files that were fully
//! written before it; files the manifest does not name are garbage.
//! Never: interpret segment contents.

use crate::codec::{frame, unframe, FormatError, Reader, Writer};
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

pub const MANIFEST_MAGIC: &[u8; 4] = b"QMAN";
/// Bump when anything in the on-disk format changes; an older cache is
/// then rebuilt from scratch.
/// 4: nine more languages parse into definitions, so files indexed as text
/// windows before are read again.
/// 5: one identifier splitter (`ident`) for tokens and symbol names, so
/// names with caseless letters or numeric capitals are split again.
/// 6: each indexed file records whether its header says a tool generated
/// it (`generated::is_generated`), so every file is read again.
/// 7: C# files are parsed without their preprocessor lines
/// (`chunk::extract::blank_directive_lines`), so a class whose header an
/// `#if` splits keeps its members' names; every file is read again.
pub const SCHEMA_VERSION: u32 = 7;
pub const MANIFEST_FILE: &str = "manifest.qman";
pub const LOCK_FILE: &str = "lock";

/// The committed state: which segments make up the index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    pub root: String,
    pub next_chunk_id: u32,
    pub next_segment_id: u64,
    pub segment_ids: Vec<u64>,
}

impl Manifest {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.str(&self.root);
        w.u32(self.next_chunk_id);
        w.u64(self.next_segment_id);
        w.varint(self.segment_ids.len() as u64);
        for id in &self.segment_ids {
            w.u64(*id);
        }
        frame(MANIFEST_MAGIC, SCHEMA_VERSION, &w.buf)
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Manifest, FormatError> {
        let payload = unframe(bytes, MANIFEST_MAGIC, "manifest", SCHEMA_VERSION)?;
        let mut r = Reader::new(payload);
        let root = r.str()?.to_string();
        let next_chunk_id = r.u32()?;
        let next_segment_id = r.u64()?;
        let n = r.len()?;
        let mut segment_ids = Vec::with_capacity(n);
        for _ in 0..n {
            segment_ids.push(r.u64()?);
        }
        if segment_ids.windows(2).any(|w| w[0] >= w[1])
            || segment_ids
                .last()
                .is_some_and(|last| *last >= next_segment_id)
        {
            return Err(FormatError::Invalid("segment ids out of order".into()));
        }
        Ok(Manifest {
            root,
            next_chunk_id,
            next_segment_id,
            segment_ids,
        })
    }
}

/// The default cache directory for a workspace root:
/// `$XDG_CACHE_HOME/quarry/v<schema>/<name>-<hash>` (or `~/.cache/...`).
pub fn default_cache_dir(root: &Path) -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    let name: String = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".into())
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let hash = blake3::hash(root.as_os_str().as_encoded_bytes()).to_hex();
    base.join("quarry")
        .join(format!("v{SCHEMA_VERSION}"))
        .join(format!("{name}-{}", &hash[..16]))
}

/// Tries to take the writer lock of a cache directory without waiting.
/// `Ok(None)` means another process holds it.
pub fn try_lock(dir: &Path) -> io::Result<Option<File>> {
    // A FIFO or a directory in the lock's place is replaced, never waited on.
    let file = crate::cachefile::open_rw(&dir.join(LOCK_FILE))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(fs::TryLockError::WouldBlock) => Ok(None),
        Err(fs::TryLockError::Error(err)) => Err(err),
    }
}

/// Removes temporary files and segment files the manifest does not name,
/// and anything that is not a regular file where a cache file belongs (a
/// FIFO, a directory or a symlink in place of the manifest, a segment or
/// a vector file): it was refused as corrupt, and the files written next
/// take those names. Only the lock holder may call this.
pub fn collect_garbage(dir: &Path, manifest: &Manifest, segment_file_name: fn(u64) -> String) {
    let keep: std::collections::HashSet<String> = manifest
        .segment_ids
        .iter()
        .map(|id| segment_file_name(*id))
        .collect();
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        let garbage = name.contains(".tmp-") || (name.starts_with("seg-") && !keep.contains(name));
        let ours = name == MANIFEST_FILE || name.starts_with("seg-") || name.starts_with("vectors");
        if ours && crate::cachefile::remove_irregular(&entry.path()) {
            continue;
        }
        if garbage {
            let _ = fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_round_trip_and_validation() {
        let manifest = Manifest {
            root: "/w".into(),
            next_chunk_id: 10,
            next_segment_id: 5,
            segment_ids: vec![1, 3, 4],
        };
        assert_eq!(
            Manifest::from_bytes(&manifest.to_bytes()),
            Ok(manifest.clone())
        );
        let bad = Manifest {
            segment_ids: vec![3, 1],
            ..manifest
        };
        assert!(Manifest::from_bytes(&bad.to_bytes()).is_err());
    }

    #[test]
    fn second_lock_is_refused_while_held() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = try_lock(dir.path()).expect("lock");
        assert!(first.is_some());
        assert!(try_lock(dir.path()).expect("lock").is_none());
        drop(first);
        // Released, though not always at once: a process another test
        // thread forks (confine's `mkfifo`) holds a copy of every open
        // descriptor, and so the lock, until it execs. Once flaked in CI.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut again = try_lock(dir.path()).expect("lock");
        while again.is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
            again = try_lock(dir.path()).expect("lock");
        }
        assert!(again.is_some(), "the lock was not released");
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(256))]
        /// Random bytes, and a real manifest with random bytes changed (its
        /// checksum fixed up, so the decoder sees them): refused or decoded,
        /// never a panic or an unbounded allocation.
        #[test]
        fn random_and_corrupted_manifests_never_panic(
            noise in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256),
            edits in proptest::collection::vec((proptest::prelude::any::<proptest::sample::Index>(), proptest::prelude::any::<u8>()), 0..8),
        ) {
            let _ = Manifest::from_bytes(&noise);
            let manifest = Manifest {
                root: "/w".into(),
                next_chunk_id: 10,
                next_segment_id: 5,
                segment_ids: vec![1, 3, 4],
            };
            let bytes = manifest.to_bytes();
            let mut payload = bytes[8..bytes.len() - 32].to_vec();
            for (at, value) in &edits {
                let at = at.index(payload.len());
                payload[at] = *value;
            }
            let _ = Manifest::from_bytes(&frame(MANIFEST_MAGIC, SCHEMA_VERSION, &payload));
            let mut raw = bytes.clone();
            for (at, value) in &edits {
                let at = at.index(raw.len());
                raw[at] ^= value | 1;
            }
            if raw != bytes {
                proptest::prop_assert!(Manifest::from_bytes(&raw).is_err());
            }
        }
    }
}
