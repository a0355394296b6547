//! Workspace walk: which files under a root are candidates for indexing.
//!
//! Honours .gitignore, .ignore and .quarryignore (also outside a git
//! repository), skips hidden files and special files (FIFOs, sockets,
//! devices), follows a symlink only where `confine::check` allows (a
//! regular file inside the root) and never loops. Reports every file it
//! passes over with a reason.
//! Never: read file contents (the index decides binary/minified after
//! reading), panic on odd paths.

use crate::chunk::{detect_language, Language};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::UNIX_EPOCH;

/// One file the index should consider.
#[derive(Clone, Debug)]
pub struct WalkEntry {
    /// Root-relative path with `/` separators.
    pub rel_path: String,
    pub abs_path: PathBuf,
    pub language: Language,
    pub size: u64,
    pub mtime_ns: u64,
    /// Change time and inode folded together (`FileStat::stamp`).
    pub stamp: u64,
}

#[derive(Debug, Default)]
pub struct WalkOutcome {
    pub files: Vec<WalkEntry>,
    /// Files with no grammar and no known text type.
    pub n_unsupported: u64,
    /// Symlinks that point outside the root, or at directories.
    pub n_symlinks_skipped: u64,
    /// Paths that are not valid UTF-8.
    pub n_bad_paths: u64,
    /// Directory entries that could not be read (permissions, loops, races).
    pub errors: Vec<String>,
}

/// File metadata the index compares to decide whether to re-read a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStat {
    pub size: u64,
    pub mtime_ns: u64,
    /// The change time and inode folded together, as git compares them:
    /// content rewritten with its old size and mtime (`touch -r`, some
    /// build tools) still moves the change time, and a file replaced by
    /// another has a new inode. 0 when the file is "racily clean": changed
    /// within a clock tick of now, when a later write in the same clock tick
    /// could leave every field equal; such a file is hashed again next time.
    pub stamp: u64,
}

/// Files changed this recently are hashed again at the next update: a
/// clock tick (a jiffy on Linux) for nanosecond timestamps, two seconds for
/// file systems that keep whole seconds.
const RACY_NS: u64 = 20_000_000;
const RACY_COARSE_NS: u64 = 2_000_000_000;

fn nanos(t: std::io::Result<std::time::SystemTime>) -> u64 {
    t.ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64)
}

/// A file's modification time in nanoseconds since the epoch (0 if the
/// platform has none), as `FileStat` and the index record it.
pub fn mtime_ns(meta: &std::fs::Metadata) -> u64 {
    nanos(meta.modified())
}

/// `FileStat` of `path` (following symlinks: callers pass checked paths).
pub fn stat(path: &Path) -> std::io::Result<FileStat> {
    let meta = std::fs::metadata(path)?;
    let mtime_ns = mtime_ns(&meta);
    #[cfg(unix)]
    let (ctime_ns, inode) = {
        use std::os::unix::fs::MetadataExt;
        (
            (meta.ctime() as u64)
                .wrapping_mul(1_000_000_000)
                .wrapping_add(meta.ctime_nsec() as u64),
            meta.ino(),
        )
    };
    #[cfg(not(unix))]
    let (ctime_ns, inode) = (mtime_ns, 0u64);
    let now = nanos(Ok(std::time::SystemTime::now()));
    let window = if mtime_ns.is_multiple_of(1_000_000_000) {
        RACY_COARSE_NS
    } else {
        RACY_NS
    };
    let racy = now.saturating_sub(mtime_ns.max(ctime_ns)) < window;
    let stamp = if racy {
        0
    } else {
        (ctime_ns ^ inode.rotate_left(32)).max(1)
    };
    Ok(FileStat {
        size: meta.len(),
        mtime_ns,
        stamp,
    })
}

impl FileStat {
    /// Whether a file with this stat is the one a row recorded (a racy
    /// row, stamp 0, never is).
    pub fn same_as(&self, size: u64, mtime_ns: u64, stamp: u64) -> bool {
        stamp != 0 && self.size == size && self.mtime_ns == mtime_ns && self.stamp == stamp
    }
}

/// Root-relative `/`-separated path of `path`, if it is under `root` and UTF-8.
pub fn relative_path(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let mut out = String::new();
    for component in rel.components() {
        let std::path::Component::Normal(part) = component else {
            return None;
        };
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(part.to_str()?);
    }
    (!out.is_empty()).then_some(out)
}

/// What one entry of the walk turned out to be.
enum Visit {
    File(WalkEntry),
    Error(String),
    SymlinkSkipped,
    BadPath,
    Unsupported,
    Other,
}

fn visit(root: &Path, result: Result<ignore::DirEntry, ignore::Error>) -> Visit {
    let entry = match result {
        Ok(entry) => entry,
        Err(err) => return Visit::Error(err.to_string()),
    };
    let Some(file_type) = entry.file_type() else {
        return Visit::Other;
    };
    let path = entry.path();
    let abs_path = if file_type.is_symlink() {
        // Follow a symlink only to a regular file inside the root.
        match crate::confine::check(root, path) {
            Ok(_) => path.to_path_buf(),
            Err(_) => return Visit::SymlinkSkipped,
        }
    } else if file_type.is_file() {
        path.to_path_buf()
    } else {
        return Visit::Other;
    };
    let Some(rel_path) = relative_path(root, &abs_path) else {
        return Visit::BadPath;
    };
    let Some(language) = detect_language(Path::new(&rel_path)) else {
        return Visit::Unsupported;
    };
    match stat(&abs_path) {
        Ok(st) => Visit::File(WalkEntry {
            rel_path,
            abs_path,
            language,
            size: st.size,
            mtime_ns: st.mtime_ns,
            stamp: st.stamp,
        }),
        Err(err) => Visit::Error(format!("{rel_path}: {err}")),
    }
}

/// Lists the files under `root` (canonical) that the index should look at.
/// `exclude` (the cache directory, when it lives inside the root) is skipped.
/// Setting `stop` ends the walk early (what it found so far is returned).
pub fn walk(root: &Path, exclude: Option<&Path>, stop: &AtomicBool) -> WalkOutcome {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(true)
        .follow_links(false)
        .require_git(false)
        .git_global(false)
        .add_custom_ignore_filename(".quarryignore");
    let exclude = exclude.map(Path::to_path_buf);
    if let Some(exclude) = exclude.clone() {
        builder.filter_entry(move |entry| entry.path() != exclude);
    }
    // Directories are read and files stat'ed on several threads: on a
    // large tree the walk is most of a no-change refresh (the CLI pays it
    // on every call). The order is restored by the sort below.
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    builder.threads(threads);
    let shared = std::sync::Mutex::new(WalkOutcome::default());
    builder.build_parallel().run(|| {
        let shared = &shared;
        Box::new(move |result| {
            if stop.load(Ordering::Relaxed) {
                return ignore::WalkState::Quit;
            }
            let visited = visit(root, result);
            let mut outcome = shared.lock().unwrap_or_else(|e| e.into_inner());
            match visited {
                Visit::File(entry) => outcome.files.push(entry),
                Visit::Error(err) => outcome.errors.push(err),
                Visit::SymlinkSkipped => outcome.n_symlinks_skipped += 1,
                Visit::BadPath => outcome.n_bad_paths += 1,
                Visit::Unsupported => outcome.n_unsupported += 1,
                Visit::Other => {}
            }
            ignore::WalkState::Continue
        })
    });
    let mut outcome = shared.into_inner().unwrap_or_else(|e| e.into_inner());
    outcome.files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    outcome.errors.sort();
    outcome
}

/// The walk's rules for one path at a time: what a save, a watcher event
/// or an open buffer may bring into the index. The same as [`walk`]'s:
/// no hidden component, nothing a `.gitignore`, `.ignore`,
/// `.quarryignore` or `.git/info/exclude` on the way down from the root
/// leaves out (an ignored folder hides everything under it, as the walk
/// never enters it), nothing under the cache directory. Ignore files are
/// read once per `Admission`.
pub struct Admission {
    root: PathBuf,
    exclude: Option<PathBuf>,
    matchers: rustc_hash::FxHashMap<PathBuf, Option<ignore::gitignore::Gitignore>>,
}

impl Admission {
    /// Rules for paths under `root` (canonical); `exclude` as for [`walk`].
    pub fn new(root: &Path, exclude: Option<&Path>) -> Admission {
        Admission {
            root: root.to_path_buf(),
            exclude: exclude.map(Path::to_path_buf),
            matchers: Default::default(),
        }
    }

    /// The ignore files of `dir`, lowest precedence first.
    fn matcher(&mut self, dir: &Path) -> Option<&ignore::gitignore::Gitignore> {
        let root = &self.root;
        self.matchers
            .entry(dir.to_path_buf())
            .or_insert_with(|| {
                let mut builder = ignore::gitignore::GitignoreBuilder::new(dir);
                let mut any = false;
                let mut files = vec![];
                if dir == root {
                    files.push(dir.join(".git/info/exclude"));
                }
                files.extend([".gitignore", ".ignore", ".quarryignore"].map(|f| dir.join(f)));
                for file in files {
                    if file.is_file() {
                        // A line that does not parse is skipped, as the walk does.
                        let _ = builder.add(&file);
                        any = true;
                    }
                }
                any.then(|| builder.build().ok()).flatten()
            })
            .as_ref()
    }

    /// Whether the walk would list `rel_path` (root-relative, `/`-separated)
    /// as far as hidden and ignored paths go.
    pub fn admits(&mut self, rel_path: &str) -> bool {
        let parts: Vec<&str> = rel_path.split('/').filter(|p| !p.is_empty()).collect();
        let mut dirs: Vec<PathBuf> = vec![self.root.clone()];
        for (i, part) in parts.iter().enumerate() {
            if part.starts_with('.') {
                return false;
            }
            let path = dirs[i].join(part);
            if self.exclude.as_deref() == Some(path.as_path()) {
                return false;
            }
            let is_dir = i + 1 < parts.len();
            // The nearest ignore file that says anything decides.
            for dir in dirs.clone().iter().rev() {
                let Some(matcher) = self.matcher(dir) else {
                    continue;
                };
                match matcher.matched(&path, is_dir) {
                    ignore::Match::Ignore(_) => return false,
                    ignore::Match::Whitelist(_) => break,
                    ignore::Match::None => {}
                }
            }
            dirs.push(path);
        }
        !parts.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn one_path_follows_the_walks_rules() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = fs::canonicalize(dir.path()).expect("canonical");
        for folder in ["src/gen", "build", "node_modules/x", "docs", "cache"] {
            fs::create_dir_all(root.join(folder)).expect("mkdir");
        }
        fs::write(
            root.join(".gitignore"),
            "build/\n*.log\nnode_modules\n!keep.log\n",
        )
        .expect("write");
        fs::write(root.join("src/.ignore"), "gen/\n").expect("write");
        fs::create_dir_all(root.join(".git/info")).expect("mkdir");
        fs::write(root.join(".git/info/exclude"), "secret.rs\n").expect("write");
        fs::write(root.join("docs/.quarryignore"), "draft.md\n").expect("write");
        let mut rules = Admission::new(&root, Some(&root.join("cache")));
        for (path, admitted) in [
            ("src/a.rs", true),
            ("src/gen/b.rs", false),
            ("build/out.rs", false),
            ("build/deep/out.rs", false),
            ("node_modules/x/index.js", false),
            ("app.log", false),
            ("keep.log", true),
            ("secret.rs", false),
            ("docs/draft.md", false),
            ("docs/guide.md", true),
            (".npmrc", false),
            ("src/.env", false),
            (".github/workflows/ci.yml", false),
            ("cache/seg.rs", false),
            ("", false),
        ] {
            assert_eq!(rules.admits(path), admitted, "{path}");
        }
        // The walk agrees on the files it can see.
        let files = [
            "src/a.rs",
            "src/gen/b.rs",
            "build/out.rs",
            "secret.rs",
            "docs/guide.md",
        ];
        for file in files {
            fs::write(root.join(file), "fn x() {}").expect("write");
        }
        let listed = names(&walk(
            &root,
            Some(&root.join("cache")),
            &AtomicBool::new(false),
        ))
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
        for file in files {
            assert_eq!(
                listed.contains(&file.to_string()),
                rules.admits(file),
                "{file}"
            );
        }
    }

    fn names(outcome: &WalkOutcome) -> Vec<&str> {
        outcome.files.iter().map(|f| f.rel_path.as_str()).collect()
    }

    #[test]
    fn honours_ignore_files_and_hidden() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = fs::canonicalize(dir.path()).expect("canonical");
        fs::create_dir_all(root.join("src")).expect("mkdir");
        fs::create_dir_all(root.join("build")).expect("mkdir");
        fs::write(root.join("src/a.rs"), "fn a() {}").expect("write");
        fs::write(root.join("src/gen.rs"), "fn g() {}").expect("write");
        fs::write(root.join("build/out.rs"), "fn o() {}").expect("write");
        fs::write(root.join(".hidden.rs"), "fn h() {}").expect("write");
        fs::write(root.join("image.png"), [0u8, 1, 2]).expect("write");
        fs::write(root.join(".gitignore"), "build/\n").expect("write");
        fs::write(root.join(".quarryignore"), "src/gen.rs\n").expect("write");
        let outcome = walk(&root, None, &AtomicBool::new(false));
        assert_eq!(names(&outcome), vec!["src/a.rs"]);
        assert_eq!(outcome.n_unsupported, 1);
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_of_root_and_loops_are_skipped() {
        let outside = tempfile::tempdir().expect("tempdir");
        fs::write(outside.path().join("secret.rs"), "fn s() {}").expect("write");
        let dir = tempfile::tempdir().expect("tempdir");
        let root = fs::canonicalize(dir.path()).expect("canonical");
        fs::write(root.join("real.rs"), "fn r() {}").expect("write");
        std::os::unix::fs::symlink(outside.path().join("secret.rs"), root.join("out.rs"))
            .expect("symlink");
        std::os::unix::fs::symlink(&root, root.join("loop")).expect("symlink");
        std::os::unix::fs::symlink(root.join("real.rs"), root.join("alias.rs")).expect("symlink");
        let outcome = walk(&root, None, &AtomicBool::new(false));
        assert_eq!(names(&outcome), vec!["alias.rs", "real.rs"]);
        assert_eq!(outcome.n_symlinks_skipped, 2);
    }
}
