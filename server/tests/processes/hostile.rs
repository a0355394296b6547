//! End-to-end: a hostile cache (issue 43, items 11, 12 and 14) never
//! crashes, hangs or silences Quarry, over the real binary: cache files
//! replaced by a FIFO, a directory or a symlink to `/dev/zero` are rebuilt;
//! segments truncated under a running server are never faulted on; a disk
//! that takes no more bytes still gets answers from the committed index.

#![cfg(unix)]

use crate::common::mcp::Mcp;
use crate::common::Workspace;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `quarry ARGS` on the workspace (lexical, its cache dir), killed and
/// failed if it takes more than 30 s.
fn quarry(ws: &Workspace, args: &[&str], full_disk: bool) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_quarry"));
    command
        .args(args)
        .arg("--cache-dir")
        .arg(ws.cache())
        .env("XDG_CACHE_HOME", ws.dir.path().join("xdg"))
        .current_dir(ws.root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if full_disk {
        use std::os::unix::process::CommandExt;
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            command.pre_exec(|| {
                // Every write past 0 bytes fails (EFBIG), as on a full
                // disk; the signal that would kill the process is ignored.
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let limit = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: libc::RLIM_INFINITY,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let child = command.spawn().expect("run quarry");
    let id = child.id();
    let started = Instant::now();
    let watchdog = std::thread::spawn(move || {
        while started.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(50));
            // SAFETY: signal 0 only probes whether the process exists.
            if unsafe { libc::kill(id as i32, 0) } != 0 {
                return false;
            }
        }
        // SAFETY: the child's pid, still running after 30 s.
        unsafe { libc::kill(id as i32, libc::SIGKILL) };
        true
    });
    let output = child.wait_with_output().expect("wait");
    assert!(!watchdog.join().expect("watchdog"), "quarry {args:?} hung");
    output
}

/// The hits (path and symbol) of a lexical search, in order.
fn search(ws: &Workspace, query: &str, full_disk: bool) -> (Vec<(String, String)>, String) {
    let out = quarry(
        ws,
        &["search", "--json", "--lexical", "--limit", "20", query],
        full_disk,
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    let found: Value = serde_json::from_slice(&out.stdout).expect("json");
    let hits = found["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .map(|h| {
            (
                h["path"].as_str().unwrap_or("").to_string(),
                h["symbol"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    (hits, stderr)
}

fn segments(cache: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(cache)
        .expect("cache")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "qseg"))
        .collect();
    found.sort();
    found
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(status.success());
}

/// Replaces whatever is at `path` by `what`.
fn replace(path: &Path, what: &str) {
    if path.is_dir() {
        std::fs::remove_dir_all(path).expect("rm dir");
    } else {
        let _ = std::fs::remove_file(path);
    }
    match what {
        "fifo" => mkfifo(path),
        "dir" => std::fs::create_dir_all(path.join("inside")).expect("mkdir"),
        "dev-zero" => std::os::unix::fs::symlink("/dev/zero", path).expect("symlink"),
        _ => unreachable!(),
    }
}

/// Item 11: the manifest, a segment or the lock replaced by a FIFO (a 60 s
/// hang), a directory (an error and no rebuild) or a symlink to
/// `/dev/zero` (killed at 24 GB): each is refused as corrupt, rebuilt, and
/// the search answers as before.
#[test]
fn cache_files_that_are_not_regular_files_are_rebuilt() {
    let ws = Workspace::fixture();
    let (before, _) = search(&ws, "EventBus publish", false);
    assert!(!before.is_empty());
    for what in ["fifo", "dir", "dev-zero"] {
        for target in ["manifest", "segment", "lock"] {
            let path = match target {
                "manifest" => ws.cache().join("manifest.qman"),
                "segment" => segments(&ws.cache())[0].clone(),
                _ => ws.cache().join("lock"),
            };
            replace(&path, what);
            let (after, stderr) = search(&ws, "EventBus publish", false);
            assert_eq!(after, before, "{target} as a {what}: {stderr}");
            assert!(
                std::fs::symlink_metadata(ws.cache().join("manifest.qman"))
                    .is_ok_and(|m| m.is_file()),
                "{target} as a {what}: the manifest was not rebuilt"
            );
            for segment in segments(&ws.cache()) {
                assert!(std::fs::symlink_metadata(&segment).is_ok_and(|m| m.is_file()));
            }
        }
    }
}

/// Item 12: segments truncated (`truncate -s 0`) under a running MCP server
/// killed it with SIGBUS at the next search (they were memory-mapped).
/// Now it answers as before, and the next process rebuilds the cache.
#[test]
fn segments_truncated_under_a_running_server_are_never_faulted_on() {
    let ws = Workspace::fixture();
    // Indexed by another process first: the server loads these segments
    // from disk (the ones it writes itself it already holds).
    ws.open().refresh(&|_| {}).expect("index");
    let mut mcp = Mcp::start(&ws);
    let ask = |mcp: &mut Mcp| {
        let (error, text, data) = mcp.call("search_code", json!({"query": "EventBus publish"}));
        assert!(!error, "{text}");
        data["hits"].clone()
    };
    let before = ask(&mut mcp);
    assert!(before.as_array().is_some_and(|h| !h.is_empty()), "{before}");
    let truncated = segments(&ws.cache());
    assert!(!truncated.is_empty());
    for segment in &truncated {
        std::fs::OpenOptions::new()
            .write(true)
            .open(segment)
            .and_then(|f| f.set_len(0))
            .expect("truncate");
    }
    assert_eq!(ask(&mut mcp), before);
    assert!(
        mcp.child.try_wait().expect("wait").is_none(),
        "the server died"
    );
    let _ = mcp.child.kill();
    let _ = mcp.child.wait();
    // The next process finds the damage and rebuilds.
    let (hits, stderr) = search(&ws, "EventBus publish", false);
    assert!(!hits.is_empty(), "{stderr}");
    assert!(stderr.contains("rebuilding"), "{stderr}");
}

/// Item 14: on a full disk `quarry search` exited 1 ("No space left on
/// device") although the committed index could answer. Now it says why it
/// could not update and answers from the committed index; nothing is lost.
#[test]
fn a_full_disk_still_gets_answers_from_the_committed_index() {
    let ws = Workspace::fixture();
    let (before, _) = search(&ws, "EventBus publish", false);
    assert!(!before.is_empty());
    // A change the search would write a segment for.
    ws.write(
        "src/added.py",
        "def freshly_added_helper():\n    return 1\n",
    );
    let (during, stderr) = search(&ws, "EventBus publish", true);
    assert_eq!(during, before, "{stderr}");
    assert!(
        stderr.contains("answering from the last committed index"),
        "{stderr}"
    );
    let out = quarry(&ws, &["symbols", "--json", "EventBus"], true);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // With room again, the change is indexed and nothing was lost.
    let (after, stderr) = search(&ws, "freshly_added_helper", false);
    assert!(
        after.iter().any(|(_, s)| s == "freshly_added_helper"),
        "{after:?} {stderr}"
    );
    let (again, _) = search(&ws, "EventBus publish", false);
    assert_eq!(again, before);
}

/// Item 6: `get_code_context` on a 50 MB one-line file did not answer in
/// 120 s, and read-only searches stalled when an indexed file had grown to
/// 200 MB: the size limit was not applied on those paths. Now a file over
/// the limit is refused (and its hits dropped) without being read whole.
#[test]
fn files_over_the_size_limit_are_never_read_whole() {
    let ws = Workspace::fixture();
    // The test holds the writer lock: the server answers read-only.
    let writer = ws.open();
    writer.refresh(&|_| {}).expect("index");
    let mut mcp = Mcp::start(&ws);
    let (_, _, data) = mcp.call("search_code", json!({"query": "GraphStore insert lookup"}));
    let in_store = |data: &Value| {
        data["hits"]
            .as_array()
            .is_some_and(|h| h.iter().any(|h| h["path"] == "src/graph_store.rs"))
    };
    assert!(in_store(&data), "{data}");
    // Grown past the 1 MiB limit since it was indexed.
    let grown = ws.root().join("src/graph_store.rs");
    let mut text = std::fs::read_to_string(&grown).expect("read");
    text.push_str(&"// filler filler filler filler filler filler filler\n".repeat(60_000));
    std::fs::write(&grown, text).expect("grow");
    ws.write("big.js", "x".repeat(12 << 20));
    let (error, text, _) = mcp.call("get_code_context", json!({"path": "big.js"}));
    assert!(error && text.contains("limit"), "{text}");
    let (error, text, data) = mcp.call("search_code", json!({"query": "GraphStore insert lookup"}));
    assert!(!error, "{text}");
    assert!(!in_store(&data), "a hit from the grown file: {data}");
    let (hits, stderr) = search(&ws, "GraphStore insert lookup", false);
    assert!(
        !hits.iter().any(|(path, _)| path == "src/graph_store.rs"),
        "{hits:?} {stderr}"
    );
    let _ = mcp.child.kill();
    drop(writer);
}

/// The fixture, indexed once, and what it answers: the baseline every
/// corrupted copy of its cache must give again.
struct Baseline {
    ws: Workspace,
    answers: String,
}

fn answers(index: &quarry_engine::index::Index) -> String {
    use quarry_engine::search::{find_symbols, search, DiskText, SearchOptions};
    let snapshot = index.snapshot();
    let mut text = DiskText::of(index);
    let mut out = String::new();
    for query in [
        "EventBus publish",
        "retry failed request",
        "GraphStore::lookup",
    ] {
        for hit in search(&snapshot, query, &SearchOptions::default(), &mut text).hits {
            out.push_str(&format!("{} {} {}\n", hit.path, hit.symbol, hit.start_line));
        }
    }
    for hit in find_symbols(&snapshot, "GraphStore", None, 20) {
        out.push_str(&format!("{} {}\n", hit.path, hit.qualified_name));
    }
    out
}

fn baseline() -> &'static Baseline {
    static BASE: std::sync::OnceLock<Baseline> = std::sync::OnceLock::new();
    BASE.get_or_init(|| {
        let ws = Workspace::fixture();
        ws.settle();
        let index = ws.open();
        index.refresh(&|_| {}).expect("index");
        let answers = answers(&index);
        assert!(!answers.is_empty());
        Baseline { ws, answers }
    })
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(48))]
    /// Random corruptions of a random file of a committed cache (a flipped
    /// byte, a cut, 4 KB of 0xff, or the file replaced by a FIFO, a
    /// directory or a symlink to `/dev/zero`): opening it never panics,
    /// hangs or faults, the cache is rebuilt, and it answers exactly as
    /// before the corruption.
    #[test]
    fn a_randomly_corrupted_cache_is_rebuilt_and_answers_as_before(
        pick in proptest::prelude::any::<proptest::sample::Index>(),
        at in proptest::prelude::any::<proptest::sample::Index>(),
        how in 0..6u8,
        flip in 1..=255u8,
    ) {
        let base = baseline();
        let scratch = tempfile::tempdir().expect("tempdir");
        let cache = scratch.path().join("cache");
        std::fs::create_dir_all(&cache).expect("mkdir");
        let mut files: Vec<PathBuf> = std::fs::read_dir(base.ws.cache())
            .expect("cache")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().is_some_and(|n| n != "lock"))
            .collect();
        files.sort();
        for file in &files {
            std::fs::copy(file, cache.join(file.file_name().expect("name"))).expect("copy");
        }
        let target = cache.join(files[pick.index(files.len())].file_name().expect("name"));
        let mut bytes = std::fs::read(&target).expect("read");
        match how {
            0 if !bytes.is_empty() => {
                let i = at.index(bytes.len());
                bytes[i] ^= flip;
                std::fs::write(&target, &bytes).expect("write");
            }
            1 => {
                bytes.truncate(at.index(bytes.len().max(1)));
                std::fs::write(&target, &bytes).expect("write");
            }
            2 if !bytes.is_empty() => {
                let i = at.index(bytes.len());
                let end = (i + 4096).min(bytes.len());
                bytes[i..end].fill(0xff);
                std::fs::write(&target, &bytes).expect("write");
            }
            3 => replace(&target, "fifo"),
            4 => replace(&target, "dir"),
            _ => replace(&target, "dev-zero"),
        }
        let index = quarry_engine::index::Index::open(quarry_engine::index::IndexConfig {
            cache_dir: Some(cache.clone()),
            ..quarry_engine::index::IndexConfig::new(base.ws.root())
        })
        .expect("open");
        index.refresh(&|_| {}).expect("refresh");
        proptest::prop_assert_eq!(&answers(&index), &base.answers, "{:?} by {}", target, how);
    }
}
