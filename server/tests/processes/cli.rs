//! The `quarry` binary end to end: index, search (human and JSON), symbols,
//! status, version and error handling.

use crate::common::Workspace;
use std::process::{Command, Output};

fn quarry(ws: &Workspace, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args(args)
        .env("XDG_CACHE_HOME", ws.dir.path().join("xdg"))
        .current_dir(ws.root())
        .output()
        .expect("run quarry")
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "quarry failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn version_is_printed() {
    let ws = Workspace::empty();
    let out = stdout(&quarry(&ws, &["--version"]));
    assert!(out.starts_with("quarry "), "{out}");
}

#[test]
fn search_json_has_the_documented_shape() {
    let ws = Workspace::fixture();
    let out = stdout(&quarry(
        &ws,
        &["search", "GraphStore::lookup", "--json", "--limit", "3"],
    ));
    let value: serde_json::Value = serde_json::from_str(&out).expect("json");
    // 150-odd fixture chunks are more than `search` embeds inline, so
    // without `quarry index` this is lexical and says why.
    assert_eq!(value["mode"], "lexical");
    assert!(value["reason"].is_string(), "{value}");
    assert!(
        value["coverage"]["total"].as_u64().unwrap_or(0) > 100,
        "{value}"
    );
    let hits = value["hits"].as_array().expect("hits");
    assert!(!hits.is_empty() && hits.len() <= 3);
    let first = &hits[0];
    for field in [
        "path",
        "start_line",
        "end_line",
        "symbol",
        "kind",
        "language",
        "score",
        "sources",
        "snippet",
    ] {
        assert!(first.get(field).is_some(), "missing {field} in {first}");
    }
    assert_eq!(first["symbol"], "GraphStore::lookup");
    assert!(!first["path"].as_str().unwrap_or("/").starts_with('/'));
    assert!(first["snippet"].as_str().unwrap_or("").contains("lookup"));
}

#[test]
fn human_output_and_other_commands() {
    let ws = Workspace::fixture();
    let cache = ws.dir.path().join("explicit-cache");
    let cache = cache.to_str().expect("utf8");
    let out = stdout(&quarry(&ws, &["index", ".", "--cache-dir", cache]));
    assert!(out.contains("files"), "{out}");
    assert!(std::path::Path::new(cache).join("manifest.qman").exists());

    let out = stdout(&quarry(&ws, &["search", "lookup", "--cache-dir", cache]));
    let first = out.lines().next().expect("a hit line");
    assert!(first.contains(':') && first.contains("lookup"), "{out}");

    let out = stdout(&quarry(
        &ws,
        &["symbols", "GraphStore::lookup", "--cache-dir", cache],
    ));
    assert!(
        out.lines()
            .next()
            .is_some_and(|l| l.contains("GraphStore::lookup")),
        "{out}"
    );

    let out = stdout(&quarry(&ws, &["status", "--json", "--cache-dir", cache]));
    let value: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert!(
        value["summary"]["files_indexed"].as_u64().unwrap_or(0) >= 10,
        "{value}"
    );
}

#[test]
fn user_errors_are_one_line_without_panic() {
    let ws = Workspace::empty();
    for args in [
        &["search", "x", "--root", "/definitely/not/here"][..],
        &["symbols", "x", "--kind", "gizmo"][..],
    ] {
        let output = quarry(&ws, args);
        assert!(!output.status.success(), "{args:?} should fail");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("quarry: error:"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn huge_limits_and_depths_are_bounded_not_fatal() {
    let ws = Workspace::fixture();
    // Out of range: a usage error naming the flag (it used to panic in
    // the vector index, exit 134).
    for limit in ["18446744073709551615", "100000000", "0"] {
        let output = quarry(&ws, &["search", "lookup", "--limit", limit]);
        assert_eq!(output.status.code(), Some(2), "--limit {limit}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("--limit"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    // A depth past the bound is read as the bound.
    for depth in ["1e30", "inf", "0"] {
        let knob = format!("fuse.depth={depth}");
        let output = quarry(&ws, &["search", "lookup", "--json", "--rank", &knob]);
        let value: serde_json::Value = serde_json::from_str(&stdout(&output)).expect("json");
        assert!(!value["hits"].as_array().unwrap().is_empty(), "{knob}");
    }
    let output = quarry(&ws, &["search", "lookup", "--rank", "fuse.depth=NaN"]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("not a number"));
}

#[test]
fn odd_queries_never_fail() {
    let ws = Workspace::fixture();
    for query in ["", "\"", "\"\"", "::", "🙂", &"x".repeat(5000), "a\"b\"c\""] {
        let output = quarry(&ws, &["search", query, "--json"]);
        let out = stdout(&output);
        let value: serde_json::Value = serde_json::from_str(&out).expect("json");
        assert!(value["hits"].is_array());
        let output = quarry(&ws, &["symbols", query, "--json"]);
        stdout(&output);
    }
}

#[test]
fn embed_limit_leaves_the_rest_pending_for_the_next_run() {
    let ws = Workspace::fixture();
    let index = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["index", ".", "--json"];
        args.extend_from_slice(extra);
        serde_json::from_str(&stdout(&quarry(&ws, &args))).expect("json")
    };
    let first = index(&["--embed-limit", "3"]);
    if let Some(reason) = first["embedding"]["error"].as_str() {
        assert!(
            std::env::var("QUARRY_REQUIRE_MODEL").as_deref() != Ok("1"),
            "QUARRY_REQUIRE_MODEL=1 but the model is unavailable: {reason}"
        );
        eprintln!("skipping: no embedding model ({reason})");
        return;
    }
    let total = first["coverage"]["total"].as_u64().expect("total");
    assert!(total > 3, "{first}");
    assert_eq!(first["coverage"]["embedded"].as_u64(), Some(3), "{first}");
    assert_eq!(first["embedding"]["remaining"].as_u64(), Some(total - 3));

    let second = index(&[]);
    assert_eq!(
        second["coverage"]["embedded"].as_u64(),
        Some(total),
        "{second}"
    );
}

#[test]
fn status_names_the_superseded_folders_and_counts_generated_files() {
    let ws = Workspace::empty();
    ws.write("src/time/wheel.rs", "pub fn poll() {}\n");
    ws.write("src/time_alt/wheel.rs", "pub fn poll() {}\n");
    ws.write(
        "src/time/wheel_pb.rs",
        "// Code generated by protoc-gen-rust. DO NOT EDIT.\npub fn poll_pb() {}\n",
    );
    let cache = ws.dir.path().join("cache");
    let cache = cache.to_str().expect("utf8");
    stdout(&quarry(
        &ws,
        &["index", ".", "--lexical", "--cache-dir", cache],
    ));
    let out = stdout(&quarry(&ws, &["status", "--lexical", "--cache-dir", cache]));
    assert!(
        out.lines()
            .any(|l| l.starts_with("superseded src/time_alt/")),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l.starts_with("generated  1 file (")),
        "{out}"
    );
    let out = stdout(&quarry(
        &ws,
        &["status", "--json", "--lexical", "--cache-dir", cache],
    ));
    let value: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(value["superseded"], serde_json::json!(["src/time_alt"]));
    assert_eq!(
        value["generated"],
        serde_json::json!(["src/time/wheel_pb.rs"])
    );
}
