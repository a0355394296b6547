//! Hybrid search with the real embedding model, the shared vector cache,
//! and the lexical-only fallback.
//!
//! The model comes from the normal lookup (`QUARRY_MODEL`, the user data
//! dir, the Hugging Face cache); `scripts/fetch-model.sh` installs it and
//! `.ci/run` runs that first and sets `QUARRY_REQUIRE_MODEL=1`, so in CI
//! these tests can not silently skip.

use crate::common::Workspace;
use quarry_engine::dense::{DenseConfig, DenseEngine};
use quarry_engine::index::{EmbedStats, Index};
use quarry_engine::search::{
    search_blended, search_with, DiskText, Mode, SearchOptions, SearchResults, Source,
};
use std::path::Path;

/// The real model, or `None` (with a note) when it is not installed and
/// not required.
fn engine(vector_cache: &Path) -> Option<DenseEngine> {
    let engine = DenseEngine::load(DenseConfig {
        cache_dir: Some(vector_cache.to_path_buf()),
        threads: Some(2),
        ..DenseConfig::default()
    });
    if let Some(reason) = engine.unavailable_reason() {
        let required = std::env::var("QUARRY_REQUIRE_MODEL").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "QUARRY_REQUIRE_MODEL=1 but the model is unavailable: {reason}; run scripts/fetch-model.sh"
        );
        eprintln!("skipping: no embedding model ({reason}); run scripts/fetch-model.sh");
        return None;
    }
    Some(engine)
}

fn run(index: &Index, engine: &DenseEngine, query: &str) -> SearchResults {
    let snapshot = index.snapshot();
    let mut text = DiskText::of(index);
    let options = SearchOptions {
        limit: 5,
        ..SearchOptions::default()
    };
    search_with(&snapshot, query, &options, &mut text, Some(engine))
}

/// Embeds every pending chunk of `index`.
fn embed_all(index: &Index, engine: &DenseEngine) -> EmbedStats {
    index
        .embed_pending(engine, &[], None, &|_| {})
        .expect("embed")
}

/// `ws`'s index, refreshed, nothing embedded.
fn refreshed(ws: &Workspace) -> Index {
    let index = ws.open();
    index.refresh(&|_| {}).expect("index");
    index
}

fn indexed(ws: &Workspace, engine: &DenseEngine) -> Index {
    let index = refreshed(ws);
    let stats = embed_all(&index, engine);
    assert_eq!(stats.error, None);
    assert_eq!(stats.remaining, 0);
    index
}

#[test]
fn concept_queries_find_code_without_shared_words() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let Some(engine) = engine(scratch.path()) else {
        return;
    };
    let ws = Workspace::fixture();
    let index = indexed(&ws, &engine);
    for (query, expected_paths) in [
        (
            "probabilistic set membership",
            &["native/bloom_filter.cpp"][..],
        ),
        (
            "limit how many calls a client may make per second",
            &["dotnet/TokenBucket.cs", "ratelimit/limiter.go"][..],
        ),
        (
            "evict the least recently used entry",
            &["web/lru_cache.js"][..],
        ),
    ] {
        let results = run(&index, &engine, query);
        assert_eq!(results.mode, Mode::Hybrid, "{query}: {:?}", results.reason);
        let coverage = results.coverage;
        assert_eq!(coverage.embedded, coverage.total);
        let found = results
            .hits
            .iter()
            .find(|h| {
                expected_paths.contains(&h.path.as_str()) && h.sources.contains(&Source::Dense)
            })
            .unwrap_or_else(|| {
                panic!(
                    "{query:?}: {expected_paths:?} not found by the dense branch in {:?}",
                    results
                        .hits
                        .iter()
                        .map(|h| (&h.path, &h.symbol))
                        .collect::<Vec<_>>()
                )
            });
        assert!(found.sources.contains(&Source::Dense), "{found:?}");
        assert!(found.ranks.contains_key("dense"));
    }
    // Identifiers still win through the lexical and symbol branches.
    let results = run(&index, &engine, "GraphStore::lookup");
    let first = &results.hits[0];
    assert_eq!(first.symbol, "GraphStore::lookup");
    assert!(first.sources.contains(&Source::Lexical) && first.sources.contains(&Source::Symbol));
}

#[test]
fn unchanged_functions_are_never_embedded_twice() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let Some(engine) = engine(scratch.path()) else {
        return;
    };
    let ws = Workspace::fixture();
    let index = refreshed(&ws);
    let cold = embed_all(&index, &engine);
    assert!(cold.computed > 50, "{cold:?}");

    // One function edited: the whole file is re-chunked, one text changed.
    let path = ws.root().join("python/retry_policy.py");
    let source = std::fs::read_to_string(&path).expect("read");
    let edited = source.replace(
        "return attempt < self.attempts",
        "return attempt <= self.attempts",
    );
    assert_ne!(source, edited);
    std::fs::write(&path, edited).expect("write");
    index.refresh(&|_| {}).expect("refresh");
    let edit = embed_all(&index, &engine);
    assert_eq!(edit.computed, 1, "{edit:?}");
    assert!(edit.from_cache > 0);

    // A move keeps every vector.
    std::fs::rename(&path, ws.root().join("python/policies.py")).expect("mv");
    index.refresh(&|_| {}).expect("refresh");
    let moved = embed_all(&index, &engine);
    assert_eq!(moved.computed, 0, "{moved:?}");

    // A second worktree of the same code shares the machine-wide cache.
    let other = Workspace::fixture();
    let second = other.open();
    second.refresh(&|_| {}).expect("index");
    let stats = embed_all(&second, &engine);
    assert_eq!(stats.computed, 0, "{stats:?}");
    assert_eq!(stats.embedded, stats.pending);

    // Restart: the vector index is persisted and opened from disk.
    drop(index);
    let reopened = ws.open();
    reopened.attach_dense(&engine).expect("attach");
    let (embedded, total) = reopened.snapshot().coverage();
    assert_eq!(embedded, total);
    let again = embed_all(&reopened, &engine);
    assert_eq!(again.pending, 0);
}

#[test]
fn embedding_failure_falls_back_to_lexical_and_recovers() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let Some(engine) = engine(scratch.path()) else {
        return;
    };
    let ws = Workspace::fixture();
    let index = indexed(&ws, &engine);
    assert_eq!(run(&index, &engine, "retry budget").mode, Mode::Hybrid);

    engine.inject_failure(true);
    let results = run(&index, &engine, "retry budget exhausted");
    assert_eq!(results.mode, Mode::Lexical);
    let reason = results.reason.expect("a reason");
    assert!(reason.contains("embedding failed"), "{reason}");
    assert!(!results.hits.is_empty(), "lexical results still come back");

    engine.inject_failure(false);
    let results = run(&index, &engine, "retry budget exhausted");
    assert_eq!(results.mode, Mode::Hybrid, "{:?}", results.reason);
}

#[test]
fn partial_coverage_is_reported() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let Some(engine) = engine(scratch.path()) else {
        return;
    };
    let ws = Workspace::fixture();
    let index = refreshed(&ws);
    let stats = index
        .embed_pending(&engine, &[], Some(10), &|_| {})
        .expect("embed");
    assert_eq!(stats.embedded, 10);
    let results = run(&index, &engine, "token bucket");
    assert_eq!(results.mode, Mode::Partial);
    assert!(results.reason.unwrap().contains("10 of"));
    assert_eq!(results.coverage.embedded, 10);
    assert!(results.coverage.total > 10);
}

/// While the transformer covers a share `c` of the chunks, its list
/// weighs `c` of a full one: a hit only the dense branch found scores `c`
/// times what it scores with the list at full weight.
#[test]
fn a_partial_dense_list_counts_in_proportion_to_its_coverage() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let Some(engine) = engine(scratch.path()) else {
        return;
    };
    let ws = Workspace::fixture();
    let index = refreshed(&ws);
    let total = index.snapshot().coverage().1;
    index
        .embed_pending(&engine, &[], Some(total as usize / 2), &|_| {})
        .expect("embed");
    let snapshot = index.snapshot();
    let (embedded, total) = snapshot.coverage();
    let coverage = embedded as f32 / total as f32;
    let dense_only = |power: f32| {
        // Plain fusion: no signal that weighs a hit by its neighbours.
        let mut options = SearchOptions {
            limit: 30,
            signals: quarry_engine::rank::signals::Signals::off(),
            ..SearchOptions::default()
        };
        options.fuse.partial_power = power;
        let mut text = DiskText::of(&index);
        let results = search_with(
            &snapshot,
            "probabilistic set membership",
            &options,
            &mut text,
            Some(&engine),
        );
        assert_eq!(results.mode, Mode::Partial, "{:?}", results.reason);
        results
            .hits
            .into_iter()
            .filter(|h| h.sources == [Source::Dense])
            .map(|h| ((h.path, h.start_line), h.score))
            .collect::<std::collections::HashMap<_, _>>()
    };
    let (full, scaled) = (dense_only(0.0), dense_only(1.0));
    let both: Vec<_> = full.keys().filter(|k| scaled.contains_key(*k)).collect();
    assert!(
        !both.is_empty(),
        "no hit only the dense branch found: {full:?}"
    );
    for key in both {
        let ratio = scaled[key] / full[key];
        assert!(
            (ratio - coverage).abs() < 1e-3,
            "{key:?}: {ratio} against coverage {coverage}"
        );
    }
}

/// With a stand-in asked for, the static tier's vectors reach the chunks
/// the transformer has not embedded yet; without one they are found by
/// the lexical and symbol branches only.
#[test]
fn the_static_tier_stands_in_where_the_transformer_has_no_vector() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let Some(engine) = engine(scratch.path()) else {
        return;
    };
    let fast = engine.static_from().expect("a static tier");
    let ws = Workspace::fixture();
    let index = refreshed(&ws);
    embed_all(&index, &fast);
    // The transformer embeds one file's chunks only.
    let stats = index
        .embed_pending(
            &engine,
            &["dotnet/TokenBucket.cs".to_string()],
            Some(3),
            &|_| {},
        )
        .expect("embed");
    assert_eq!(stats.embedded, 3);
    let snapshot = index.snapshot();
    let search = |fill_discount: f32| {
        let mut options = SearchOptions {
            limit: 10,
            ..SearchOptions::default()
        };
        options.fuse.fill_discount = fill_discount;
        let mut text = DiskText::of(&index);
        search_blended(
            &snapshot,
            "probabilistic set membership",
            &options,
            &mut text,
            Some(&engine),
            Some(&fast),
        )
    };
    let bloom_sources = |results: &SearchResults| {
        results
            .hits
            .iter()
            .find(|h| h.path == "native/bloom_filter.cpp")
            .map(|h| h.sources.clone())
            .unwrap_or_default()
    };
    let with = search(2.0);
    assert_eq!(with.mode, Mode::Partial);
    assert!(
        with.reason.as_deref().unwrap_or("").contains("stand in"),
        "{:?}",
        with.reason
    );
    assert!(
        bloom_sources(&with).contains(&Source::Dense),
        "{:?}",
        with.hits
    );
    let without = search(f32::INFINITY);
    assert!(
        without
            .reason
            .as_deref()
            .unwrap_or("")
            .contains("lexical and symbol branches only"),
        "{:?}",
        without.reason
    );
    assert!(
        !bloom_sources(&without).contains(&Source::Dense),
        "{:?}",
        without.hits
    );
}

#[test]
fn without_a_model_search_is_lexical_and_says_why() {
    let empty = tempfile::tempdir().expect("tempdir");
    let engine = DenseEngine::load(DenseConfig {
        model_dir: Some(empty.path().to_path_buf()),
        cache_dir: Some(empty.path().join("vectors")),
        ..DenseConfig::default()
    });
    assert!(engine.unavailable().is_some());
    let ws = Workspace::fixture();
    let index = refreshed(&ws);
    let stats = index
        .embed_pending(&engine, &[], None, &|_| {})
        .expect("embed without model");
    assert_eq!(stats.embedded, 0);
    let results = run(&index, &engine, "GraphStore::lookup");
    assert_eq!(results.mode, Mode::Lexical);
    assert!(
        results.reason.as_deref().unwrap_or("").contains("model"),
        "{:?}",
        results.reason
    );
    assert_eq!(results.hits[0].symbol, "GraphStore::lookup");
}

#[test]
fn lexical_search_answers_while_embedding_runs() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let Some(engine) = engine(scratch.path()) else {
        return;
    };
    let ws = Workspace::fixture();
    let index = refreshed(&ws);
    std::thread::scope(|scope| {
        let embedding = scope.spawn(|| embed_all(&index, &engine));
        // Searches run on the snapshot while the embedder works.
        let results = run(&index, &engine, "GraphStore::lookup");
        assert_eq!(results.hits[0].symbol, "GraphStore::lookup");
        assert!(
            results.coverage.embedded < results.coverage.total,
            "the first search should not have waited for the embedder: {:?}",
            results.coverage
        );
        let stats = embedding.join().expect("embedder thread");
        assert_eq!(stats.remaining, 0);
    });
    let results = run(&index, &engine, "GraphStore::lookup");
    assert_eq!(results.mode, Mode::Hybrid);
    assert_eq!(results.coverage.embedded, results.coverage.total);
}

/// A rebuilt cache hands out chunk ids from zero again: the vectors saved
/// for the old ids must not be read as the new chunks' (they were, and the
/// dense branch returned unrelated code until the vector file was deleted).
#[test]
fn a_rebuilt_cache_never_reuses_vectors_by_stale_chunk_ids() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let Some(engine) = engine(scratch.path()) else {
        return;
    };
    let ws = Workspace::fixture();
    drop(indexed(&ws, &engine));
    // A segment the current version can not read: the index is rebuilt.
    let cache = ws.cache();
    let mut corrupted = 0;
    for entry in std::fs::read_dir(&cache).expect("cache dir").flatten() {
        if entry.file_name().to_string_lossy().starts_with("seg-") {
            std::fs::write(entry.path(), b"QSEG from another version").expect("corrupt");
            corrupted += 1;
        }
    }
    assert!(corrupted > 0, "no segment under {}", cache.display());
    let index = ws.open();
    index.refresh(&|_| {}).expect("rebuild");
    index.attach_dense(&engine).expect("attach");
    assert_eq!(index.snapshot().coverage().0, 0, "stale vectors attached");
    let again = embed_all(&index, &engine);
    assert_eq!(again.computed, 0, "the machine-wide cache has every text");
    let results = run(&index, &engine, "probabilistic set membership");
    assert_eq!(
        results.hits[0].path, "native/bloom_filter.cpp",
        "{:?}",
        results.hits
    );
}

/// The static tier, distilled from the installed model, gives every chunk
/// a vector in one fast pass, and its dense branch finds code by meaning.
#[test]
fn the_static_tier_covers_every_chunk_in_one_fast_pass() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let Some(engine) = engine(scratch.path()) else {
        return;
    };
    let fast = engine.static_from().expect("a static tier");
    assert_eq!(fast.unavailable_reason(), None);
    assert_eq!(fast.tier(), quarry_engine::dense::DenseTier::Static);
    assert_ne!(fast.model_id(), engine.model_id());
    let ws = Workspace::fixture();
    let index = refreshed(&ws);
    let started = std::time::Instant::now();
    let stats = embed_all(&index, &fast);
    let elapsed = started.elapsed();
    let snapshot = index.snapshot();
    let (covered, total) = snapshot.coverage_of(quarry_engine::dense::DenseTier::Static);
    assert_eq!((covered, stats.computed), (total, total), "{stats:?}");
    // The transformer's coverage is its own: nothing yet.
    assert_eq!(snapshot.coverage().0, 0);
    eprintln!("static tier: {total} chunks in {elapsed:?}");
    let results = run(&index, &fast, "probabilistic set membership");
    assert_eq!(results.mode, Mode::Hybrid, "{:?}", results.reason);
    let bloom = results
        .hits
        .iter()
        .find(|h| h.path == "native/bloom_filter.cpp")
        .unwrap_or_else(|| panic!("{:?}", results.hits));
    assert!(bloom.sources.contains(&Source::Dense), "{bloom:?}");
    // Both tiers' vectors persist side by side.
    index.save_vectors().expect("save");
    embed_all(&index, &engine);
    drop(index);
    let index = ws.open();
    index.attach_dense(&fast).expect("attach static");
    index.attach_dense(&engine).expect("attach transformer");
    let snapshot = index.snapshot();
    assert_eq!(
        snapshot
            .coverage_of(quarry_engine::dense::DenseTier::Static)
            .0,
        total
    );
    assert_eq!(snapshot.coverage().0, total);
}

/// The result contract, on real code nobody here wrote (ripgrep's `ignore`
/// crate, from the cargo registry), hybrid: the head of a list never
/// depends on the limit, scores fall, no two hits repeat the same lines,
/// a per-file cap holds, a query that matches nothing says so, and an
/// impl block is labelled and ranked below the type it implements.
#[test]
fn the_result_contract_holds_on_a_real_crate() {
    // Vectors persist between runs (the crate does not change).
    let vectors = Path::new(env!("CARGO_TARGET_TMPDIR")).join("contract-vectors");
    let Some(engine) = engine(&vectors) else {
        return;
    };
    let ws = Workspace::registry_crate("ignore");
    let index = indexed(&ws, &engine);
    let snapshot = index.snapshot();
    let at = |query: &str, limit: usize, per_file_cap: usize| {
        let mut text = DiskText::of(&index);
        let options = SearchOptions {
            limit,
            per_file_cap,
            ..SearchOptions::default()
        };
        search_with(&snapshot, query, &options, &mut text, Some(&engine))
    };
    let key = |r: &SearchResults| -> Vec<(String, u32, String)> {
        r.hits
            .iter()
            .map(|h| (h.path.clone(), h.start_line, h.symbol.clone()))
            .collect()
    };
    for query in [
        "how does it decide that a file is hidden",
        "parse gitignore glob patterns and match paths",
        "walk directories in parallel with several threads",
        "WalkBuilder::build_parallel",
        "\"hidden\"",
        "max filesize",
    ] {
        let (r10, r30, r100) = (at(query, 10, 0), at(query, 30, 0), at(query, 100, 0));
        assert_eq!(r10.mode, Mode::Hybrid);
        let (k10, k30, k100) = (key(&r10), key(&r30), key(&r100));
        assert_eq!(k10.len(), 10, "{query}");
        assert_eq!(k10[..], k30[..10], "{query}: limit 30 reordered the head");
        assert_eq!(
            k30[..],
            k100[..k30.len()],
            "{query}: limit 100 reordered the head"
        );
        for r in [&r10, &r30, &r100] {
            assert!(!r.no_match, "{query}");
            assert!(
                r.hits.windows(2).all(|w| w[0].score > w[1].score),
                "{query}: scores rise: {:?}",
                r.hits.iter().map(|h| h.score).collect::<Vec<_>>()
            );
            for (i, a) in r.hits.iter().enumerate() {
                for b in &r.hits[i + 1..] {
                    let windows = a.kind == "lines" || b.kind == "lines";
                    let overlap = a.path == b.path
                        && a.start_line <= b.end_line
                        && b.start_line <= a.end_line;
                    assert!(!(windows && overlap), "{query}: {a:?} overlaps {b:?}");
                }
                assert!(!a.detail.is_empty(), "{query}: {a:?}");
            }
        }
        // At most two hits of a file before every other file has had its
        // turn: once a file's third hit shows, only such hits follow.
        let capped = at(query, 10, 2);
        let mut seen: std::collections::HashMap<&str, usize> = Default::default();
        let mut deferred = false;
        for hit in &capped.hits {
            let n = seen.entry(hit.path.as_str()).or_default();
            *n += 1;
            let over = *n > 2 && !hit.sources.contains(&Source::Exact);
            assert!(over || !deferred, "{query}: {:?}", key(&capped));
            deferred |= over;
        }
    }
    let nothing = at("quokka_trampoline_gauge", 10, 0);
    assert!(nothing.no_match, "an identifier that exists nowhere");
    assert!(!at("WalkBuilder", 10, 0).no_match);
    // The struct first; its impl blocks labelled as such.
    let builder = at("WalkBuilder", 10, 0);
    assert_eq!(
        (builder.hits[0].kind, builder.hits[0].label.as_str()),
        ("struct", "WalkBuilder"),
        "{:?}",
        key(&builder)
    );
    let impls: Vec<&str> = builder
        .hits
        .iter()
        .filter(|h| h.kind == "impl")
        .map(|h| h.label.as_str())
        .collect();
    assert!(impls.contains(&"impl WalkBuilder"), "{impls:?}");
    // workspace/symbol: the struct before the impl block of the same name.
    let symbols = quarry_engine::search::find_symbols(&snapshot, "WalkBuilder", None, 10);
    let kinds: Vec<&str> = symbols
        .iter()
        .filter(|s| s.qualified_name == "WalkBuilder")
        .map(|s| s.kind)
        .collect();
    assert_eq!(kinds.first(), Some(&"struct"), "{kinds:?}");
    assert!(kinds.contains(&"impl"), "{kinds:?}");
}
