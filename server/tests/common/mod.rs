//! Helpers shared by the end-to-end tests: fixture copies and index setup.
#![allow(dead_code)]

pub mod lsp;
pub mod mcp;
pub mod postgres;

use quarry_engine::index::{Index, IndexConfig};
use std::path::{Path, PathBuf};

pub fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/polyglot")
}

pub fn golden_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/polyglot.golden.tsv")
}

/// A scratch workspace and its cache directory, removed on drop.
pub struct Workspace {
    pub dir: tempfile::TempDir,
}

impl Workspace {
    /// Runs git in the workspace's root with a fixed author (no user
    /// configuration needed); its trimmed output.
    pub fn git(&self, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(self.root())
            .args(["-c", "user.email=q@example.com", "-c", "user.name=q"])
            .args(args)
            .output()
            .expect("run git");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// An empty workspace.
    pub fn empty() -> Workspace {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("root")).expect("mkdir root");
        Workspace { dir }
    }

    /// A copy of the polyglot fixture.
    pub fn fixture() -> Workspace {
        let ws = Workspace::empty();
        copy_dir(&fixture_dir(), &ws.root());
        ws
    }

    /// A copy of a crate's source from the cargo registry (`prefix` is
    /// its name; the newest version there): real code nobody here wrote,
    /// present wherever this crate was built, since Quarry depends on it.
    pub fn registry_crate(name: &str) -> Workspace {
        let home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))
            .expect("CARGO_HOME or HOME");
        let registry = home.join("registry/src");
        let prefix = format!("{name}-");
        let mut found: Vec<PathBuf> = std::fs::read_dir(&registry)
            .into_iter()
            .flatten()
            .flatten()
            .flat_map(|index| {
                std::fs::read_dir(index.path())
                    .into_iter()
                    .flatten()
                    .flatten()
            })
            .map(|entry| entry.path())
            .filter(|path| {
                path.file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_prefix(&prefix))
                    .is_some_and(|version| version.starts_with(|c: char| c.is_ascii_digit()))
            })
            .collect();
        found.sort();
        let source = found.pop().unwrap_or_else(|| {
            panic!(
                "crate {name} not found under {}: build Quarry first",
                registry.display()
            )
        });
        let ws = Workspace::empty();
        copy_dir(&source, &ws.root());
        ws
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    pub fn cache(&self) -> PathBuf {
        self.dir.path().join("cache")
    }

    pub fn config(&self) -> IndexConfig {
        IndexConfig {
            cache_dir: Some(self.cache()),
            ..IndexConfig::new(self.root())
        }
    }

    pub fn open(&self) -> Index {
        Index::open(self.config()).expect("open index")
    }

    pub fn write(&self, rel: &str, text: impl AsRef<[u8]>) {
        let path = self.root().join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(path, text).expect("write");
    }

    /// Every file under the root, at any depth.
    pub fn files(&self) -> Vec<PathBuf> {
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            for entry in std::fs::read_dir(dir).expect("read_dir").flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, out);
                } else {
                    out.push(path);
                }
            }
        }
        let mut paths = Vec::new();
        walk(&self.root(), &mut paths);
        paths
    }

    /// Waits until every file of the workspace has aged past the "racily
    /// clean" window (`quarry_engine::walk::stat` gives it a non-zero stamp), so
    /// the next refresh records settled rows and a refresh after it has
    /// nothing to write, however fast the machine runs the test. Waits on
    /// the condition, not for a fixed time; gives up after 10 s.
    pub fn settle(&self) {
        let paths = self.files();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while paths
            .iter()
            .any(|p| quarry_engine::walk::stat(p).expect("stat").stamp == 0)
        {
            assert!(
                std::time::Instant::now() < deadline,
                "files still racily clean after 10 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

pub fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).expect("mkdir");
    for entry in std::fs::read_dir(src).expect("read fixture") {
        let entry = entry.expect("entry");
        let target = dst.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// One line of the golden file.
#[derive(Debug, Clone)]
pub struct Golden {
    pub path: String,
    pub kind: String,
    pub name: String,
    pub qualified_name: String,
    pub start_line: u32,
    pub end_line: u32,
}

pub fn golden() -> Vec<Golden> {
    let text = std::fs::read_to_string(golden_file()).expect("golden file");
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 6, "golden line {line:?}");
            Golden {
                path: f[0].to_string(),
                kind: f[1].to_string(),
                name: f[2].to_string(),
                qualified_name: f[3].to_string(),
                start_line: f[4].parse().expect("start line"),
                end_line: f[5].parse().expect("end line"),
            }
        })
        .collect()
}
