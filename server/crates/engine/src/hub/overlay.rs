//! The overlay: the workspace's own repository as it differs from the
//! commit the hub holds, so a hub-backed search is never stale.
//!
//! Owns: finding the files that differ from the hub's commit (git when the
//! checkout knows that commit: committed, uncommitted, untracked and deleted
//! files; otherwise by comparing content hashes with the hub's), reading and
//! chunking only those files and the open buffers, and embedding their
//! chunks. The query masks the hub's rows for every path here and ranks
//! these files in their place.
//! Never: index the whole checkout (only what differs), or read a file
//! outside the root (reads go through `confine`).

use super::conn::Hub;
use super::error::{sql, HubError};
use super::push::{parse, NewFile};
use super::schema::DIM;
use crate::chunk::detect_language;
use crate::dense::DenseEngine;
use crate::index::chunk_text;
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::Path;
use std::process::{Command, Stdio};

/// Most overlay chunks embedded when an overlay is built; the rest rank
/// by their words alone (a checkout far from the hub's commit: push it).
pub const MAX_EMBEDDED: usize = 512;

/// How the overlay found the files that differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OverlaySource {
    /// `git diff` against the hub's commit, plus untracked files.
    Git,
    /// The checkout's content hashes against the hub's (the checkout does
    /// not know the hub's commit, or is not a git checkout).
    Hashes,
}

impl OverlaySource {
    /// `git` or `hashes`, as every surface writes it.
    pub fn name(self) -> &'static str {
        match self {
            OverlaySource::Git => "git",
            OverlaySource::Hashes => "hashes",
        }
    }
}

/// The workspace's files that differ from the hub's copy of its repository.
pub struct Overlay {
    /// The hub repository the workspace is a checkout of.
    pub repo: String,
    /// The hub's commit of it.
    pub commit: String,
    pub source: OverlaySource,
    /// Every path whose hub rows are hidden: changed, added, deleted or open.
    pub(super) masked: FxHashSet<String>,
    /// The local text of the masked paths that exist, chunked.
    pub(super) files: Vec<NewFile>,
    /// Per file, per chunk: its vector, when embedded.
    pub(super) vectors: Vec<Vec<Option<Vec<f32>>>>,
}

impl Overlay {
    /// The overlay of `root` over the hub's `repo`, or `None` when no hub
    /// holds a repository of that name. `buffers` are open editor buffers
    /// (root-relative path, text), which win over the files on disk.
    pub async fn build(
        hubs: &[Hub],
        repo: &str,
        root: &Path,
        buffers: &[(String, String)],
        max_file_size: u64,
        dense: Option<&DenseEngine>,
    ) -> Result<Option<Overlay>, HubError> {
        let mut commit = None;
        let mut holder = None;
        for hub in hubs {
            let row = hub
                .client
                .query_opt(
                    "SELECT commit_id FROM quarry_repos WHERE name = $1",
                    &[&repo],
                )
                .await
                .map_err(sql("finding the workspace's repository"))?;
            if let Some(row) = row {
                commit = Some(row.get::<_, String>(0));
                holder = Some(hub);
                break;
            }
        }
        let (Some(commit), Some(holder)) = (commit, holder) else {
            return Ok(None);
        };
        // Reads are confined to the root as it really is.
        let root = &std::fs::canonicalize(root)
            .map_err(|e| HubError::Invalid(format!("the checkout {}: {e}", root.display())))?;
        let (source, changed) = match git_changes(root, &commit) {
            Some(changed) => (OverlaySource::Git, changed),
            None => (
                OverlaySource::Hashes,
                hash_changes(holder, repo, root, max_file_size).await?,
            ),
        };
        let mut overlay = Overlay {
            repo: repo.to_string(),
            commit,
            source,
            masked: FxHashSet::default(),
            files: Vec::new(),
            vectors: Vec::new(),
        };
        overlay.fill(root, changed, buffers, max_file_size, dense);
        Ok(Some(overlay))
    }

    /// Reads and chunks `changed` (buffers first), and embeds up to
    /// [`MAX_EMBEDDED`] of their chunks.
    fn fill(
        &mut self,
        root: &Path,
        changed: Vec<String>,
        buffers: &[(String, String)],
        max_file_size: u64,
        dense: Option<&DenseEngine>,
    ) {
        let open: FxHashMap<&str, &str> = buffers
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect();
        let mut paths: Vec<String> = changed;
        paths.extend(buffers.iter().map(|(p, _)| p.clone()));
        paths.sort();
        paths.dedup();
        for path in paths {
            let language = detect_language(Path::new(&path));
            let text = match open.get(path.as_str()) {
                Some(text) => Some(text.to_string()),
                None => read(root, &path, max_file_size),
            };
            if let (Some(language), Some(text)) = (language, text) {
                let hash = *blake3::hash(text.as_bytes()).as_bytes();
                self.files.push(parse(&path, text, language, hash));
            }
            self.masked.insert(path);
        }
        self.vectors = self
            .files
            .iter()
            .map(|f| vec![None; f.chunks.len()])
            .collect();
        let Some(engine) = dense.filter(|e| e.unavailable().is_none() && e.dim() == DIM) else {
            return;
        };
        let budget = engine.config().token_budget;
        let mut wanted = Vec::new();
        let mut slots = Vec::new();
        'files: for (f, file) in self.files.iter().enumerate() {
            for pos in 0..file.chunks.len() {
                if wanted.len() >= MAX_EMBEDDED {
                    break 'files;
                }
                wanted.push(chunk_text(&file.segment, pos, &file.text, budget));
                slots.push((f, pos));
            }
        }
        if let Ok((vectors, _)) = engine.embed_texts(&wanted) {
            for ((f, pos), vector) in slots.into_iter().zip(vectors) {
                self.vectors[f][pos] = Some(vector);
            }
        }
    }

    /// Paths whose hub rows are hidden.
    pub fn masked(&self) -> usize {
        self.masked.len()
    }

    /// Whether the hub's rows for `path` are hidden.
    pub fn masks(&self, path: &str) -> bool {
        self.masked.contains(path)
    }

    /// Files ranked from their local text.
    pub fn files(&self) -> usize {
        self.files.len()
    }
}

/// The file at `path` as text, or `None` when it is gone, refused (outside
/// the root, too large) or not text the index would read.
fn read(root: &Path, path: &str, max_file_size: u64) -> Option<String> {
    let bytes = crate::confine::read(root, Path::new(path), max_file_size).ok()?;
    crate::index::classify(bytes).ok()
}

/// The root-relative paths that differ between the checkout at `root` and
/// `commit` (tracked changes, committed or not, deletions included, and
/// untracked files git does not ignore), or `None` when git cannot tell
/// (no git, not a checkout, a commit the checkout has not fetched).
pub fn git_changes(root: &Path, commit: &str) -> Option<Vec<String>> {
    if commit.is_empty() || commit.starts_with('-') {
        return None;
    }
    git(
        root,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{commit}^{{commit}}"),
        ],
    )?;
    let diff = git(
        root,
        &[
            "diff",
            "--name-only",
            "-z",
            "--no-renames",
            "--relative",
            "--ignore-submodules",
            commit,
            "--",
        ],
    )?;
    let untracked = git(root, &["ls-files", "--others", "--exclude-standard", "-z"])?;
    let mut paths: Vec<String> = diff
        .split('\0')
        .chain(untracked.split('\0'))
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    paths.sort();
    paths.dedup();
    Some(paths)
}

/// A git command's standard output, or `None` when it fails.
fn git(root: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8(out.stdout).ok()
}

/// The paths whose content differs from the hub's copy of `repo`: walked
/// and hashed (every file is read once), then compared.
async fn hash_changes(
    hub: &Hub,
    repo: &str,
    root: &Path,
    max_file_size: u64,
) -> Result<Vec<String>, HubError> {
    let held: FxHashMap<String, Vec<u8>> = hub
        .client
        .query(
            "SELECT f.path, f.hash FROM quarry_files f
             JOIN quarry_repos r ON r.id = f.repo_id WHERE r.name = $1",
            &[&repo],
        )
        .await
        .map_err(sql("reading the repository's file hashes"))?
        .into_iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let walked = crate::walk::walk(root, None, &stop);
    let mut changed = Vec::new();
    let mut seen = FxHashSet::default();
    for entry in walked.files {
        let Ok(bytes) = crate::confine::read(root, Path::new(&entry.rel_path), max_file_size)
        else {
            continue;
        };
        let hash = blake3::hash(&bytes);
        if held.get(&entry.rel_path).map(Vec::as_slice) != Some(hash.as_bytes().as_slice()) {
            changed.push(entry.rel_path.clone());
        }
        seen.insert(entry.rel_path);
    }
    changed.extend(held.into_keys().filter(|p| !seen.contains(p)));
    changed.sort();
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(root: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .arg("-C")
            .arg(root)
            .args(["-c", "user.email=q@q", "-c", "user.name=q"])
            .args(args)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn git_names_committed_uncommitted_untracked_and_deleted_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        if git(root, &["--version"]).is_none() {
            eprintln!("skipping: no git");
            return;
        }
        for name in ["a.rs", "b.rs", "c.rs", "d.rs", "same.rs"] {
            std::fs::write(root.join(name), format!("fn {}() {{}}\n", &name[..1])).unwrap();
        }
        run(root, &["init", "-q"]);
        run(root, &["add", "."]);
        run(root, &["commit", "-q", "-m", "base"]);
        let base = git(root, &["rev-parse", "HEAD"])
            .unwrap()
            .trim()
            .to_string();
        std::fs::write(root.join("a.rs"), "fn a2() {}\n").unwrap();
        run(root, &["commit", "-q", "-am", "committed change"]);
        std::fs::write(root.join("b.rs"), "fn b2() {}\n").unwrap();
        std::fs::remove_file(root.join("c.rs")).unwrap();
        std::fs::write(root.join("new.rs"), "fn n() {}\n").unwrap();
        let changed = git_changes(root, &base).unwrap();
        assert_eq!(changed, ["a.rs", "b.rs", "c.rs", "new.rs"]);
        assert_eq!(
            git_changes(root, "0123456789abcdef0123456789abcdef01234567"),
            None
        );
        assert_eq!(git_changes(root, "--output=x"), None);
    }
}
