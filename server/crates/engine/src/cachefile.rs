//! Cache files: the one place that opens the files Quarry itself wrote in
//! its caches (the manifest, segments, vector indexes and sidecars, the
//! machine-wide vector cache, the writer lock).
//!
//! The rule: a cache file is a regular file or it is corrupt. It is opened
//! without following a symlink and without blocking, checked with `fstat`
//! on the open file, and read whole into memory, never mapped: a FIFO, a
//! directory, a device or a symlink (to `/dev/zero`, say) in its place is
//! an `InvalidData` error that the caller treats as a corrupt file and
//! rebuilds, and a file truncated while Quarry runs can not fault a later
//! read (`SIGBUS` on a mapping).
//!
//! Writing is the other half of the rule: a cache file is written whole to
//! a temporary name and renamed into place (`write_atomic`), so a reader
//! sees the old file or the new one, never a torn one.
//!
//! Never: block on a special file; read past the size the file had when it
//! was opened; delete anything but an entry that stands where a cache file
//! belongs.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::Path;

/// The error for an entry that is not a regular file.
fn irregular(path: &Path, meta: &std::fs::Metadata) -> io::Error {
    let what = if meta.is_dir() {
        "a directory"
    } else if meta.file_type().is_symlink() {
        "a symlink"
    } else {
        "a special file"
    };
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{} is {what}, not a cache file", path.display()),
    )
}

fn options() -> OpenOptions {
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    options
}

/// Maps the errors of an open that met something other than a regular
/// file (a symlink: `ELOOP`; a FIFO opened for writing: `ENXIO`; a
/// directory: `EISDIR`) to `InvalidData`.
fn open_error(path: &Path, err: io::Error) -> io::Error {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if !meta.is_file() => irregular(path, &meta),
        _ => err,
    }
}

/// Checks the open file is a regular file; its size.
fn regular(path: &Path, file: &File) -> io::Result<u64> {
    let meta = file.metadata()?;
    if meta.is_file() {
        Ok(meta.len())
    } else {
        Err(irregular(path, &meta))
    }
}

/// The bytes of the cache file at `path` (`NotFound` when there is none;
/// `InvalidData` when something other than a regular file stands there).
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let file = options()
        .read(true)
        .open(path)
        .map_err(|e| open_error(path, e))?;
    let size = regular(path, &file)?;
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(size).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Opens the cache file at `path` for reading and writing, creating it if
/// missing. Whatever stands there that is not a regular file is removed
/// first (the caller owns the name).
pub fn open_rw(path: &Path) -> io::Result<File> {
    let open = || {
        options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| open_error(path, e))
            .and_then(|file| regular(path, &file).map(|_| file))
    };
    match open() {
        Err(err) if err.kind() == io::ErrorKind::InvalidData => {
            remove_irregular(path);
            open()
        }
        other => other,
    }
}

/// Removes the entry at `path` if it is not a regular file (a directory
/// with what it holds, a symlink itself, never its target); whether
/// something was removed.
pub fn remove_irregular(path: &Path) -> bool {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path).is_ok(),
        Ok(meta) if !meta.is_file() => std::fs::remove_file(path).is_ok(),
        _ => false,
    }
}

/// Writes `bytes` to `dir/name` atomically: temp file, fsync, rename, fsync dir.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(dir, name, &mut |file| file.write_all(bytes))
}

/// As [`write_atomic`], with the contents written by `write` (which may
/// encode them as it goes) instead of given whole.
pub fn write_atomic_with(
    dir: &Path,
    name: &str,
    write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let tmp = dir.join(format!(
        "{name}.tmp-{}-{}",
        std::process::id(),
        unique_suffix()
    ));
    let result = (|| {
        let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        write(&mut file)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, dir.join(name))?;
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn unique_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    COUNTER.fetch_add(1, Ordering::Relaxed)
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().expect("tempdir");
        write_atomic(dir.path(), "f", b"one").expect("write");
        write_atomic(dir.path(), "f", b"two").expect("write");
        assert_eq!(fs::read(dir.path().join("f")).expect("read"), b"two");
        assert_eq!(fs::read_dir(dir.path()).expect("ls").count(), 1);
    }

    #[test]
    fn only_regular_files_are_cache_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("manifest");
        std::fs::write(&file, b"bytes").expect("write");
        assert_eq!(read(&file).expect("read"), b"bytes");
        assert_eq!(
            read(&dir.path().join("none")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        // A symlink to /dev/zero would never end; a FIFO would block.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("/dev/zero", &link).expect("symlink");
        assert_eq!(read(&link).unwrap_err().kind(), io::ErrorKind::InvalidData);
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo")
            .success());
        assert_eq!(read(&fifo).unwrap_err().kind(), io::ErrorKind::InvalidData);
        let sub = dir.path().join("sub");
        std::fs::create_dir_all(sub.join("inner")).expect("mkdir");
        assert_eq!(read(&sub).unwrap_err().kind(), io::ErrorKind::InvalidData);
        // Opening for writing replaces each with a regular file; the
        // symlink's target is untouched.
        for path in [&link, &fifo, &sub] {
            let file = open_rw(path).expect("open_rw");
            assert!(file.metadata().expect("meta").is_file());
        }
        assert!(std::fs::metadata("/dev/zero").is_ok());
        assert!(!remove_irregular(&file));
    }
}
