//! Confinement: the one place that decides whether a path of the workspace
//! may be read. Every read of workspace content goes through `open` or
//! `read`: the walk, targeted updates (editor saves, the watcher,
//! `didChangeWatchedFiles`), snippets, usages and MCP's context.
//!
//! The rule: after resolving every symlink, the path is a regular file
//! inside the canonical root. Anything else (a symlink or a symlinked
//! directory leading out, `..`, a FIFO, socket or device, a directory) is
//! refused with a `Refusal` that says why. The open is confined too: the
//! checked real path is resolved beneath a descriptor of the root in one
//! step (`openat2` + `RESOLVE_BENEATH`, or `O_NOFOLLOW` per component), so
//! a directory swapped for a symlink out of the root between the check and
//! the open (a race) is refused, never followed. The open file is checked
//! again (`fstat`), so a file swapped for a FIFO is refused too, and `read`
//! never reads more than its byte limit.
//!
//! Never: open a path by a name that the kernel resolves outside the root;
//! block on a special file; read a file whole past the limit; panic on any
//! path.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Why a path may not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("it resolves to {0}, outside the workspace root")]
    Outside(PathBuf),
    #[error("it is not a regular file ({0})")]
    NotRegular(&'static str),
    #[error("it does not exist")]
    Missing,
    #[error("it cannot be read: {0}")]
    Unreadable(String),
    #[error("it holds {size} bytes, over the {limit}-byte limit")]
    TooLarge { size: u64, limit: u64 },
}

/// A short name for a file type.
fn kind(file_type: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_socket() {
            return "a socket";
        }
        if file_type.is_block_device() || file_type.is_char_device() {
            return "a device";
        }
    }
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_symlink() {
        "a symlink"
    } else if file_type.is_file() {
        "a regular file"
    } else {
        "a special file"
    }
}

/// The real path of `path` (absolute, or relative to `root`) if it is a
/// regular file inside `root`, which must be canonical.
pub fn check(root: &Path, path: &Path) -> Result<PathBuf, Refusal> {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        root.join(path)
    };
    let real = match std::fs::canonicalize(&joined) {
        Ok(real) => real,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Refusal::Missing),
        Err(e) => return Err(Refusal::Unreadable(e.to_string())),
    };
    if !real.starts_with(root) {
        return Err(Refusal::Outside(real));
    }
    let meta = std::fs::metadata(&real).map_err(|e| Refusal::Unreadable(e.to_string()))?;
    if !meta.file_type().is_file() {
        return Err(Refusal::NotRegular(kind(&meta.file_type())));
    }
    Ok(real)
}

/// For a file that may not exist yet (an editor's new, unsaved buffer):
/// its folder must resolve inside `root`, and if the file exists it must
/// pass `check`.
pub fn check_new(root: &Path, path: &Path) -> Result<(), Refusal> {
    match check(root, path) {
        Ok(_) => Ok(()),
        Err(Refusal::Missing) => {
            let joined = if path.is_absolute() {
                path.to_path_buf()
            } else {
                root.join(path)
            };
            if std::fs::symlink_metadata(&joined).is_ok() {
                // A dangling symlink.
                return Err(Refusal::NotRegular("a dangling symlink"));
            }
            let parent = joined.parent().ok_or(Refusal::Missing)?;
            let real = std::fs::canonicalize(parent).map_err(|_| Refusal::Missing)?;
            if real.starts_with(root) {
                Ok(())
            } else {
                Err(Refusal::Outside(real))
            }
        }
        Err(refusal) => Err(refusal),
    }
}

/// Opens `path` for reading if `check` allows it. The open itself is
/// confined: the real path, relative to the root, is resolved beneath a
/// descriptor of the root in one step (Linux `openat2` with
/// `RESOLVE_BENEATH`; elsewhere, or where the kernel lacks it, one
/// `O_NOFOLLOW` `openat` per component). A directory swapped for a symlink
/// leading out between the check and the open is refused, never followed.
/// No blocking on special files; the open file is checked again (`fstat`).
pub fn open(root: &Path, path: &Path) -> Result<File, Refusal> {
    let real = check(root, path)?;
    let rel = real
        .strip_prefix(root)
        .map_err(|_| Refusal::Outside(real.clone()))?;
    let file = open_beneath(root, rel)?;
    let meta = file
        .metadata()
        .map_err(|e| Refusal::Unreadable(e.to_string()))?;
    if !meta.file_type().is_file() {
        return Err(Refusal::NotRegular(kind(&meta.file_type())));
    }
    Ok(file)
}

/// Maps an open error to a refusal: a link out of the root (`EXDEV` from
/// `openat2`, `ELOOP` from `O_NOFOLLOW`) is `Outside`.
#[cfg(unix)]
fn refusal(e: std::io::Error, root: &Path, rel: &Path) -> Refusal {
    match e.raw_os_error() {
        Some(libc::EXDEV) | Some(libc::ELOOP) => Refusal::Outside(root.join(rel)),
        Some(libc::ENOENT) | Some(libc::ENOTDIR) => Refusal::Missing,
        _ => Refusal::Unreadable(e.to_string()),
    }
}

#[cfg(unix)]
fn open_beneath(root: &Path, rel: &Path) -> Result<File, Refusal> {
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    let c_path = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|_| Refusal::Unreadable("a NUL byte in the path".into()))
    };
    let root_c = c_path(root)?;
    // SAFETY: a valid NUL-terminated path; the result is checked.
    let dir = unsafe {
        libc::open(
            root_c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if dir < 0 {
        return Err(Refusal::Unreadable(format!(
            "the workspace root: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: `dir` was just opened and is owned here.
    let dir = unsafe { OwnedFd::from_raw_fd(dir) };
    #[cfg(target_os = "linux")]
    if let Some(opened) = openat2_beneath(&dir, &c_path(rel)?) {
        return opened.map_err(|e| refusal(e, root, rel));
    }
    open_by_components(dir, rel).map_err(|e| refusal(e, root, rel))
}

/// `openat2(dir, rel, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`; `None`
/// where the kernel (or a seccomp filter) does not offer it.
#[cfg(target_os = "linux")]
fn openat2_beneath(
    dir: &std::os::fd::OwnedFd,
    rel: &std::ffi::CStr,
) -> Option<std::io::Result<File>> {
    use std::os::fd::{AsRawFd, FromRawFd};
    // SAFETY: `open_how` is plain data; zeroed is its documented default.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: valid descriptor, NUL-terminated path, and `how` with its size.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            rel.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENOSYS) | Some(libc::EPERM) | Some(libc::E2BIG) => None,
            Some(libc::EAGAIN) => None, // a racing rename: resolve again below
            _ => Some(Err(e)),
        };
    }
    // SAFETY: a descriptor just returned by the kernel, owned here.
    Some(Ok(unsafe { File::from_raw_fd(fd as i32) }))
}

/// Resolves `rel` (a real path: no `..`, no symlinks when it was checked)
/// one component at a time beneath `dir`, never following a symlink: a
/// component that became one since the check ends the open (`ELOOP` or
/// `ENOTDIR`).
#[cfg(unix)]
fn open_by_components(dir: std::os::fd::OwnedFd, rel: &Path) -> std::io::Result<File> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    let parts: Vec<_> = rel.components().collect();
    let mut dir = dir;
    for (i, part) in parts.iter().enumerate() {
        let std::path::Component::Normal(name) = part else {
            return Err(std::io::Error::from_raw_os_error(libc::EXDEV));
        };
        let name = std::ffi::CString::new(name.as_bytes())
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        let last = i + 1 == parts.len();
        let flags = libc::O_NOFOLLOW
            | libc::O_CLOEXEC
            | if last {
                libc::O_RDONLY | libc::O_NONBLOCK
            } else {
                libc::O_RDONLY | libc::O_DIRECTORY
            };
        // SAFETY: valid descriptor and NUL-terminated name; checked below.
        let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if last {
            // SAFETY: a descriptor just returned by the kernel, owned here.
            return Ok(unsafe { File::from_raw_fd(fd) });
        }
        // SAFETY: as above.
        dir = unsafe { OwnedFd::from_raw_fd(fd) };
    }
    Err(std::io::Error::from_raw_os_error(libc::EISDIR))
}

#[cfg(not(unix))]
fn open_beneath(root: &Path, rel: &Path) -> Result<File, Refusal> {
    File::open(root.join(rel)).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Refusal::Missing,
        _ => Refusal::Unreadable(e.to_string()),
    })
}

/// The bytes of `path` if `check` allows it (see `open`) and it holds at
/// most `limit` bytes: a larger file (or one that grew past it since it
/// was indexed) is refused as `TooLarge`, never read whole.
pub fn read(root: &Path, path: &Path, limit: u64) -> Result<Vec<u8>, Refusal> {
    let file = open(root, path)?;
    let size = file
        .metadata()
        .map_err(|e| Refusal::Unreadable(e.to_string()))?
        .len();
    if size > limit {
        return Err(Refusal::TooLarge { size, limit });
    }
    let mut bytes = Vec::with_capacity(size as usize);
    // One byte past the limit tells a file that grows while it is read.
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Refusal::Unreadable(e.to_string()))?;
    if bytes.len() as u64 > limit {
        return Err(Refusal::TooLarge {
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

/// The text of `path` (invalid UTF-8 replaced) if `read` allows it.
pub fn read_text(root: &Path, path: &Path, limit: u64) -> Result<String, Refusal> {
    read(root, path, limit).map(|bytes| match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Tree {
        _dir: tempfile::TempDir,
        root: PathBuf,
        outside: PathBuf,
    }

    fn tree() -> Tree {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = std::fs::canonicalize(dir.path()).expect("canonical");
        let root = base.join("root");
        let outside = base.join("outside");
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::fs::write(root.join("src/a.rs"), "fn a() {}").expect("write");
        std::fs::write(outside.join("secret.rs"), "fn secret() {}").expect("write");
        Tree {
            _dir: dir,
            root,
            outside,
        }
    }

    #[test]
    fn regular_files_inside_pass_everything_else_is_refused() {
        let t = tree();
        let root = &t.root;
        symlink(&t.outside, root.join("escape_dir")).expect("symlink");
        symlink(t.outside.join("secret.rs"), root.join("link.rs")).expect("symlink");
        symlink(root.join("src/a.rs"), root.join("alias.rs")).expect("symlink");
        assert!(check(root, Path::new("src/a.rs")).is_ok());
        assert_eq!(
            check(root, Path::new("alias.rs")).unwrap(),
            root.join("src/a.rs")
        );
        assert!(matches!(
            check(root, Path::new("escape_dir/secret.rs")),
            Err(Refusal::Outside(_))
        ));
        assert!(matches!(
            check(root, &root.join("link.rs")),
            Err(Refusal::Outside(_))
        ));
        assert!(matches!(
            check(root, Path::new("../outside/secret.rs")),
            Err(Refusal::Outside(_))
        ));
        assert!(matches!(
            check(root, &t.outside.join("secret.rs")),
            Err(Refusal::Outside(_))
        ));
        assert_eq!(
            check(root, Path::new("src")),
            Err(Refusal::NotRegular("a directory"))
        );
        assert_eq!(check(root, Path::new("gone.rs")), Err(Refusal::Missing));
        assert_eq!(
            read_text(root, Path::new("src/a.rs"), 1 << 20).unwrap(),
            "fn a() {}"
        );
        assert!(read(root, Path::new("link.rs"), 1 << 20).is_err());
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let t = tree();
        let fifo = t.root.join("pipe.rs");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo");
        assert!(status.success());
        assert_eq!(
            check(&t.root, Path::new("pipe.rs")),
            Err(Refusal::NotRegular("a FIFO"))
        );
        assert!(read(&t.root, Path::new("pipe.rs"), 1 << 20).is_err());
    }

    /// What one node of a random tree is.
    #[derive(Clone, Debug)]
    enum Node {
        File,
        Dir,
        Fifo,
        /// A symlink to another node, by index, inside or outside the root.
        Link(usize, bool),
        /// A symlink to `..`-paths or nowhere.
        Odd(&'static str),
    }

    fn node() -> impl proptest::strategy::Strategy<Value = Node> {
        use proptest::prelude::*;
        prop_oneof![
            Just(Node::File),
            Just(Node::Dir),
            Just(Node::Fifo),
            (0..6usize, any::<bool>()).prop_map(|(i, inside)| Node::Link(i, inside)),
            prop_oneof![Just(".."), Just("../.."), Just("/etc"), Just("nowhere")]
                .prop_map(Node::Odd),
        ]
    }

    /// One component of a probed path.
    fn part() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            (0..6usize).prop_map(|i| format!("n{i}")),
            Just("..".to_string()),
            Just(".".to_string()),
            Just("sub".to_string()),
        ]
    }

    /// Builds `nodes` as `n0..` both in `root/sub` and in `outside`, links
    /// pointing into either tree.
    fn build(base: &Path, nodes: &[Node]) {
        for tree in ["root/sub", "outside"] {
            std::fs::create_dir_all(base.join(tree)).expect("mkdir");
            for (i, node) in nodes.iter().enumerate() {
                let path = base.join(tree).join(format!("n{i}"));
                match node {
                    Node::File => std::fs::write(&path, format!("{tree} {i}")).expect("write"),
                    Node::Dir => std::fs::create_dir_all(path.join("n0")).expect("mkdir"),
                    Node::Fifo => {
                        let _ = std::process::Command::new("mkfifo").arg(&path).status();
                    }
                    Node::Link(target, inside) => {
                        let dir = if *inside { "root/sub" } else { "outside" };
                        let _ = symlink(base.join(dir).join(format!("n{target}")), &path);
                    }
                    Node::Odd(target) => {
                        let _ = symlink(target, &path);
                    }
                }
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(256))]
        /// The confinement invariant over random symlink graphs, file types
        /// and paths: whatever `check` accepts is a regular file inside the
        /// root (after every symlink), `read` gives exactly its bytes, and
        /// whatever resolves elsewhere is refused. Never blocks, never
        /// panics.
        #[test]
        fn check_accepts_only_regular_files_inside_the_root(
            nodes in proptest::collection::vec(node(), 1..6usize),
            parts in proptest::collection::vec(part(), 1..5),
            absolute in proptest::bool::ANY,
        ) {
            let dir = tempfile::tempdir().expect("tempdir");
            let base = std::fs::canonicalize(dir.path()).expect("canonical");
            build(&base, &nodes);
            let root = base.join("root");
            let rel: PathBuf = parts.iter().collect();
            let path = if absolute { root.join(&rel) } else { rel.clone() };
            let truth = std::fs::canonicalize(root.join(&rel));
            match check(&root, &path) {
                Ok(real) => {
                    proptest::prop_assert!(real.starts_with(&root), "{real:?}");
                    let meta = std::fs::symlink_metadata(&real).expect("meta");
                    proptest::prop_assert!(meta.file_type().is_file());
                    proptest::prop_assert_eq!(truth.as_ref().ok(), Some(&real));
                    let bytes = read(&root, &path, 1 << 20).expect("read");
                    proptest::prop_assert_eq!(bytes, std::fs::read(&real).expect("read"));
                }
                Err(_) => {
                    // Refused: the truth is outside, missing or not a
                    // regular file, and `read` refuses too.
                    let allowed = truth.as_ref().is_ok_and(|real| {
                        real.starts_with(&root)
                            && std::fs::symlink_metadata(real).is_ok_and(|m| m.file_type().is_file())
                    });
                    proptest::prop_assert!(!allowed, "refused {path:?} -> {truth:?}");
                    proptest::prop_assert!(read(&root, &path, 1 << 20).is_err());
                }
            }
        }
    }
}
