//! Incremental updates and cache robustness: one edited file costs one
//! re-parse; adds, deletes and renames show up; a corrupt, truncated or
//! old-version cache is rebuilt; a second process answers from the last
//! committed state; snapshots never change under a reader.

use crate::common::Workspace;
use quarry_engine::index::Index;
use quarry_engine::search::{find_symbols, search, DiskText, SearchOptions};

fn top_symbol(index: &Index, query: &str) -> Option<String> {
    let snapshot = index.snapshot();
    let mut text = DiskText::of(index);
    search(&snapshot, query, &SearchOptions::default(), &mut text)
        .hits
        .first()
        .map(|h| h.symbol.clone())
}

fn has_symbol(snapshot: &quarry_engine::index::Snapshot, name: &str) -> bool {
    find_symbols(snapshot, name, None, 10)
        .iter()
        .any(|h| h.name == name)
}

fn small_workspace() -> Workspace {
    let ws = Workspace::empty();
    ws.write(
        "src/alpha.rs",
        "/// Alpha.\npub fn alpha_one() -> u32 { 1 }\n",
    );
    ws.write("src/beta.py", "def beta_two():\n    return 2\n");
    ws.write(
        "lib/gamma.go",
        "package gamma\n\nfunc GammaThree() int { return 3 }\n",
    );
    ws
}

#[test]
fn cold_then_noop_then_one_edit() {
    let ws = small_workspace();
    ws.settle();
    let index = ws.open();
    let cold = index.refresh(&|_| {}).expect("cold");
    assert_eq!(
        (cold.files_scanned, cold.files_reparsed, cold.files_added),
        (3, 3, 3)
    );

    let noop = index.refresh(&|_| {}).expect("noop");
    // A write here means a file looked racily clean again (its stat within
    // the window of the clock): the stats and stamps say which.
    assert_eq!(
        (noop.files_unchanged, noop.files_reparsed, noop.wrote),
        (3, 0, false),
        "{noop:?}; stats now: {:?}",
        ws.files()
            .iter()
            .map(|path| quarry_engine::walk::stat(path)
                .map(|s| (s.mtime_ns, s.stamp))
                .ok())
            .collect::<Vec<_>>()
    );

    ws.write(
        "src/alpha.rs",
        "pub fn alpha_renamed() -> u32 { 1 }\npub fn alpha_extra() {}\n",
    );
    let edit = index.refresh(&|_| {}).expect("edit");
    assert_eq!(
        (edit.files_reparsed, edit.files_unchanged),
        (1, 2),
        "{edit:?}"
    );
    // The files written just before the cold index are racily clean and
    // hashed again until they age; the edited one is always hashed.
    assert!((1..=3).contains(&edit.files_hashed), "{edit:?}");
    assert_eq!(edit.chunks_removed, 1);
    assert_eq!(edit.chunks_added, 2);
    assert_eq!(
        top_symbol(&index, "alpha_renamed").as_deref(),
        Some("alpha_renamed")
    );
    assert_ne!(
        top_symbol(&index, "alpha_one").as_deref(),
        Some("alpha_one")
    );
}

#[test]
fn add_delete_rename_and_touch() {
    let ws = small_workspace();
    let index = ws.open();
    index.refresh(&|_| {}).expect("cold");

    ws.write(
        "src/delta.ts",
        "export function deltaFour(): number { return 4; }\n",
    );
    let add = index.refresh(&|_| {}).expect("add");
    assert_eq!((add.files_added, add.files_reparsed), (1, 1));
    assert_eq!(
        top_symbol(&index, "deltaFour").as_deref(),
        Some("deltaFour")
    );

    std::fs::remove_file(ws.root().join("src/beta.py")).expect("rm");
    let delete = index.refresh(&|_| {}).expect("delete");
    assert_eq!((delete.files_removed, delete.files_reparsed), (1, 0));
    assert_ne!(top_symbol(&index, "beta_two").as_deref(), Some("beta_two"));

    std::fs::rename(
        ws.root().join("lib/gamma.go"),
        ws.root().join("lib/gamma2.go"),
    )
    .expect("mv");
    let rename = index.refresh(&|_| {}).expect("rename");
    assert_eq!(
        (
            rename.files_removed,
            rename.files_added,
            rename.files_reparsed
        ),
        (1, 1, 1)
    );
    let snapshot = index.snapshot();
    let hits = find_symbols(&snapshot, "GammaThree", None, 5);
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].path, "lib/gamma2.go");

    // Same bytes, new mtime: hashed, not re-parsed.
    let text = std::fs::read(ws.root().join("src/delta.ts")).expect("read");
    std::thread::sleep(std::time::Duration::from_millis(20));
    ws.write("src/delta.ts", &text);
    let touch = index.refresh(&|_| {}).expect("touch");
    // Racily clean files (written within the timestamp granularity) are
    // hashed again too; none is re-parsed.
    assert!(touch.files_hashed >= 1, "{touch:?}");
    assert_eq!(touch.files_reparsed, 0, "{touch:?}");
    assert_eq!(
        top_symbol(&index, "deltaFour").as_deref(),
        Some("deltaFour")
    );
}

#[test]
fn targeted_update_reparses_only_that_file() {
    let ws = small_workspace();
    let index = ws.open();
    index.refresh(&|_| {}).expect("cold");
    ws.write("src/beta.py", "def beta_changed():\n    return 5\n");
    let stats = index
        .update_paths(&[ws.root().join("src/beta.py")])
        .expect("update");
    assert_eq!((stats.files_scanned, stats.files_reparsed), (1, 1));
    assert_eq!(
        top_symbol(&index, "beta_changed").as_deref(),
        Some("beta_changed")
    );
}

#[test]
fn index_survives_restart_without_reparsing() {
    let ws = small_workspace();
    ws.open().refresh(&|_| {}).expect("cold");
    let index = ws.open();
    assert!(index.take_notes().is_empty());
    assert_eq!(
        top_symbol(&index, "GammaThree").as_deref(),
        Some("gamma.GammaThree")
    );
    let stats = index.refresh(&|_| {}).expect("warm");
    assert_eq!((stats.files_unchanged, stats.files_reparsed), (3, 0));
}

#[test]
fn many_updates_merge_segments_and_keep_results() {
    let ws = small_workspace();
    let index = ws.open();
    index.refresh(&|_| {}).expect("cold");
    for i in 0..30 {
        ws.write("src/alpha.rs", format!("pub fn alpha_v{i}() {{}}\n"));
        ws.write(
            &format!("src/new_{i}.rs"),
            format!("pub fn fresh_{i}() {{}}\n"),
        );
        index.refresh(&|_| {}).expect("update");
    }
    let snapshot = index.snapshot();
    assert!(
        snapshot.summary.segments <= 9,
        "{} segments",
        snapshot.summary.segments
    );
    assert_eq!(snapshot.summary.files_indexed, 33);
    assert_eq!(
        top_symbol(&index, "alpha_v29").as_deref(),
        Some("alpha_v29")
    );
    assert_ne!(top_symbol(&index, "alpha_v3").as_deref(), Some("alpha_v3"));
    assert_eq!(top_symbol(&index, "fresh_0").as_deref(), Some("fresh_0"));
    drop(index);
    // The merged state persists.
    let index = ws.open();
    assert_eq!(index.snapshot().summary.files_indexed, 33);
    assert_eq!(top_symbol(&index, "fresh_17").as_deref(), Some("fresh_17"));
    let cache_files = std::fs::read_dir(ws.cache()).expect("ls").count();
    assert!(cache_files <= 12, "{cache_files} files left in the cache");
}

#[test]
fn snapshot_is_unchanged_by_later_updates() {
    let ws = small_workspace();
    let index = ws.open();
    index.refresh(&|_| {}).expect("cold");
    let before = index.snapshot();
    ws.write("src/alpha.rs", "pub fn alpha_after() {}\n");
    index.refresh(&|_| {}).expect("edit");
    // The old snapshot still holds the old chunks...
    assert!(before.live_chunks().any(|(_, c)| &*c.name == "alpha_one"));
    assert!(!index
        .snapshot()
        .live_chunks()
        .any(|(_, c)| &*c.name == "alpha_one"));
    // ...but a hit is always resolved against the file as it is now: a
    // symbol gone from it is never shown with its old range.
    let mut text = DiskText::of(&index);
    let old = search(&before, "alpha_one", &SearchOptions::default(), &mut text);
    assert!(
        old.hits.iter().all(|h| h.symbol != "alpha_one"),
        "{:?}",
        old.hits
    );
    assert_ne!(
        top_symbol(&index, "alpha_one").as_deref(),
        Some("alpha_one")
    );
}

fn segment_files(ws: &Workspace) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(ws.cache())
        .expect("ls")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "qseg"))
        .collect();
    files.sort();
    files
}

fn assert_rebuilt(ws: &Workspace) {
    let index = ws.open();
    let notes = index.take_notes();
    assert!(
        notes.iter().any(|n| n.contains("rebuilding")),
        "expected a rebuild note, got {notes:?}"
    );
    // Nothing from the damaged cache is served.
    assert_eq!(index.snapshot().summary.files_indexed, 0);
    let stats = index.refresh(&|_| {}).expect("rebuild");
    assert_eq!(stats.files_reparsed, 3);
    assert_eq!(
        top_symbol(&index, "alpha_one").as_deref(),
        Some("alpha_one")
    );
}

#[test]
fn corrupt_segment_is_rebuilt() {
    let ws = small_workspace();
    ws.open().refresh(&|_| {}).expect("cold");
    let segment = segment_files(&ws).pop().expect("a segment file");
    let mut bytes = std::fs::read(&segment).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x55;
    std::fs::write(&segment, bytes).expect("corrupt");
    assert_rebuilt(&ws);
}

#[test]
fn truncated_segment_is_rebuilt() {
    let ws = small_workspace();
    ws.open().refresh(&|_| {}).expect("cold");
    let segment = segment_files(&ws).pop().expect("a segment file");
    let bytes = std::fs::read(&segment).expect("read");
    std::fs::write(&segment, &bytes[..bytes.len() / 3]).expect("truncate");
    assert_rebuilt(&ws);
}

#[test]
fn old_version_manifest_is_rebuilt() {
    let ws = small_workspace();
    ws.open().refresh(&|_| {}).expect("cold");
    let manifest = ws.cache().join("manifest.qman");
    let mut bytes = std::fs::read(&manifest).expect("read");
    bytes[4..8].copy_from_slice(&0u32.to_le_bytes());
    std::fs::write(&manifest, bytes).expect("write");
    assert_rebuilt(&ws);
}

#[test]
fn missing_segment_is_rebuilt() {
    let ws = small_workspace();
    ws.open().refresh(&|_| {}).expect("cold");
    for segment in segment_files(&ws) {
        std::fs::remove_file(segment).expect("rm");
    }
    assert_rebuilt(&ws);
}

#[test]
fn crash_leftovers_are_ignored_and_collected() {
    let ws = small_workspace();
    ws.open().refresh(&|_| {}).expect("cold");
    // What a kill -9 mid-commit leaves: a half-written temp file and a
    // segment file the manifest never named.
    std::fs::write(ws.cache().join("manifest.qman.tmp-999-0"), b"QMAN garbage").expect("w");
    std::fs::write(
        ws.cache().join("seg-00000000000000ff.qseg"),
        b"QSEG partial",
    )
    .expect("w");
    let index = ws.open();
    assert!(index.take_notes().is_empty());
    assert_eq!(
        top_symbol(&index, "alpha_one").as_deref(),
        Some("alpha_one")
    );
    assert!(!ws.cache().join("manifest.qman.tmp-999-0").exists());
    assert!(!ws.cache().join("seg-00000000000000ff.qseg").exists());
}

#[test]
fn second_process_reads_last_committed_state() {
    let ws = small_workspace();
    let writer = ws.open();
    writer.refresh(&|_| {}).expect("cold");
    assert!(writer.is_writer());

    let reader = ws.open();
    assert!(!reader.is_writer());
    // Nothing alarming while the writer is up to date.
    assert!(reader.take_notes().is_empty());
    let idle = reader.refresh(&|_| {}).expect("read-only refresh");
    assert_eq!(idle.files_behind, 0);
    ws.write("src/alpha.rs", "pub fn alpha_new() {}\n");
    let stats = reader.refresh(&|_| {}).expect("read-only refresh");
    assert!(!stats.wrote);
    assert_eq!(stats.files_behind, 1, "the reader says what it cannot see");
    // The reader answers from the committed state, resolved against the
    // files as they are now: other files' symbols as committed, a symbol
    // gone from its file not at all.
    assert_eq!(top_symbol(&reader, "beta_two").as_deref(), Some("beta_two"));
    assert_ne!(
        top_symbol(&reader, "alpha_one").as_deref(),
        Some("alpha_one")
    );

    writer.refresh(&|_| {}).expect("writer update");
    // A reader opened after the commit sees it.
    let later = ws.open();
    assert_eq!(
        top_symbol(&later, "alpha_new").as_deref(),
        Some("alpha_new")
    );
}

/// A reader answers for what it holds itself: an editor's unsaved text,
/// a file it saw change, a file it saw deleted. Once the writer commits
/// the same content, the committed rows answer again.
#[test]
fn a_reader_overlays_its_own_buffers_and_saves_until_the_writer_commits() {
    let ws = small_workspace();
    let writer = ws.open();
    writer.refresh(&|_| {}).expect("cold");
    let reader = ws.open();
    assert!(!reader.is_writer());
    let root = std::fs::canonicalize(ws.root()).expect("root");

    // An unsaved buffer: searchable in the reader, its old text gone.
    let buffer = (
        root.join("src/alpha.rs"),
        "pub fn alpha_typed() {}\n".to_string(),
    );
    reader.update_buffers(&[buffer]).expect("buffers");
    assert!(has_symbol(&reader.snapshot(), "alpha_typed"));
    assert!(!has_symbol(&reader.snapshot(), "alpha_one"));
    assert!(!has_symbol(&writer.snapshot(), "alpha_typed"));
    // The buffer closes without a save: the committed text is back.
    reader.update_buffers(&[]).expect("no buffers");
    assert!(has_symbol(&reader.snapshot(), "alpha_one"));

    // A save and a deletion seen by the reader before the writer commits.
    ws.write("src/beta.py", "def beta_saved():\n    return 2\n");
    std::fs::remove_file(root.join("lib/gamma.go")).expect("remove");
    let paths = [root.join("src/beta.py"), root.join("lib/gamma.go")];
    reader.update_paths(&paths).expect("reader update");
    assert_eq!(
        top_symbol(&reader, "beta_saved").as_deref(),
        Some("beta_saved")
    );
    assert!(!has_symbol(&reader.snapshot(), "beta_two"));
    assert!(!has_symbol(&reader.snapshot(), "GammaThree"));

    // The writer commits both; the reader follows and serves its rows.
    writer.update_paths(&paths).expect("writer update");
    assert_eq!(
        reader.catch_up().expect("follow"),
        quarry_engine::index::CatchUp::Reloaded
    );
    let snapshot = reader.snapshot();
    assert!(has_symbol(&snapshot, "beta_saved"));
    assert!(!has_symbol(&snapshot, "GammaThree"));
    assert!(
        snapshot.segments.iter().all(|s| s.id != u64::MAX),
        "the private segment is gone once the writer caught up"
    );
}

#[test]
fn bad_files_are_skipped_with_reasons_and_lose_nothing() {
    let ws = small_workspace();
    ws.write("data/blob.rs", b"fn a() {}\0\0\0binary");
    ws.write("web/bundle.js", format!("var a={};", "x".repeat(10_000)));
    ws.write("big/huge.rs", "// pad\n".repeat(200_000));
    let mut latin1 = b"fn latin_one() { let s = \"".to_vec();
    latin1.extend_from_slice(&[0xe9, 0xff, 0xfe]);
    latin1.extend_from_slice(b"\"; }\n");
    ws.write("src/latin.rs", latin1);
    // Hand-written code with one 4.4k-character line (a data URI) is not
    // minified: its functions are found.
    let mut elixir = String::from("defmodule Icons do\n");
    for i in 0..60 {
        elixir.push_str(&format!("  def icon_{i}(size), do: size * {i}\n"));
    }
    elixir.push_str(&format!(
        "  @logo \"data:image/png;base64,{}\"\n",
        "A".repeat(4400)
    ));
    elixir.push_str("  def render_logo_badge, do: @logo\nend\n");
    ws.write("lib/icons.ex", elixir);
    let index = ws.open();
    let stats = index.refresh(&|_| {}).expect("index");
    assert_eq!(stats.files_skipped, 3);
    assert!(has_symbol(&index.snapshot(), "render_logo_badge"));
    let summary = index.snapshot().summary.clone();
    assert_eq!(summary.skipped.get("binary"), Some(&1));
    assert_eq!(summary.skipped.get("minified"), Some(&1));
    assert_eq!(summary.skipped.get("too large"), Some(&1));
    assert_eq!(
        top_symbol(&index, "latin_one").as_deref(),
        Some("latin_one")
    );
    assert_eq!(
        top_symbol(&index, "alpha_one").as_deref(),
        Some("alpha_one")
    );
}

#[test]
fn content_rewritten_with_its_old_size_and_mtime_is_read_again() {
    let ws = small_workspace();
    // Let the files age past the racy window, so their rows carry a stamp.
    ws.settle();
    let index = ws.open();
    index.refresh(&|_| {}).expect("cold");
    let noop = index.refresh(&|_| {}).expect("aged");
    assert_eq!(noop.files_reparsed, 0);

    // `touch -r`: same size, mtime put back, different content.
    let path = ws.root().join("src/alpha.rs");
    let mtime = std::fs::metadata(&path)
        .expect("meta")
        .modified()
        .expect("mtime");
    let before = std::fs::read_to_string(&path).expect("read");
    let after = before.replace("alpha_one", "alpha_uno");
    assert_eq!(before.len(), after.len());
    write_keeping_mtime(&path, &after, mtime);
    let stats = index.refresh(&|_| {}).expect("refresh");
    assert_eq!(stats.files_reparsed, 1, "{stats:?}");
    assert_eq!(
        top_symbol(&index, "alpha_uno").as_deref(),
        Some("alpha_uno")
    );
    // A targeted update (the editor's save) sees it too.
    let again = before.replace("alpha_one", "alpha_two");
    assert_eq!(before.len(), again.len());
    write_keeping_mtime(&path, &again, mtime);
    let stats = index
        .update_paths(std::slice::from_ref(&path))
        .expect("update");
    assert_eq!(stats.files_reparsed, 1, "{stats:?}");
}

/// Writes `text` to `path` and puts its modification time back (`touch -r`).
fn write_keeping_mtime(path: &std::path::Path, text: &str, mtime: std::time::SystemTime) {
    std::fs::write(path, text).expect("write");
    std::fs::File::options()
        .write(true)
        .open(path)
        .expect("open")
        .set_modified(mtime)
        .expect("set mtime");
}

#[test]
fn the_layout_follows_added_and_removed_files_not_edits() {
    let ws = Workspace::empty();
    ws.write("src/time/wheel.rs", "pub fn poll() {}\n");
    ws.write("src/time_alt/wheel.rs", "pub fn poll() {}\n");
    let index = ws.open();
    index.refresh(&|_| {}).expect("cold");
    let before = index.snapshot().layout.clone();
    assert_eq!(before.superseded(), ["src/time_alt"]);
    // An edit keeps the set of paths: the same layout is reused.
    ws.write("src/time_alt/wheel.rs", "pub fn poll() -> u32 { 1 }\n");
    let edit = index.refresh(&|_| {}).expect("edit");
    assert!(edit.wrote && edit.files_reparsed == 1, "{edit:?}");
    assert!(std::sync::Arc::ptr_eq(&before, &index.snapshot().layout));
    // Without the original beside it, the copy is no longer one.
    std::fs::remove_file(ws.root().join("src/time/wheel.rs")).expect("remove");
    index.refresh(&|_| {}).expect("delete");
    assert!(index.snapshot().layout.superseded().is_empty());
    // Nor after a reopen from the cache.
    drop(index);
    assert!(ws.open().snapshot().layout.superseded().is_empty());
}
