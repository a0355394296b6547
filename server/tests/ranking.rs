//! Ranking passes after fusion: exact-name priority and the per-file cap
//! with backfill.

mod common;

use common::Workspace;
use quarry::search::{search, DiskText, SearchOptions};

fn crowded_workspace() -> Workspace {
    let ws = Workspace::empty();
    let mut crowded = String::new();
    for i in 0..5 {
        crowded.push_str(&format!(
            "/// Refills the token bucket, token by token.\npub fn refill_token_{i}(token: u32) -> u32 {{ token + {i} }}\n\n"
        ));
    }
    ws.write("src/crowded.rs", crowded);
    ws.write(
        "src/other.rs",
        "/// Spends one token.\npub fn spend(token: u32) -> u32 { token - 1 }\n",
    );
    ws.write(
        "src/mention.rs",
        "pub fn caller() { let _ = refill_token_3(refill_token_3(refill_token_3(1))); }\n",
    );
    ws
}

fn run(
    ws: &Workspace,
    query: &str,
    options: &SearchOptions,
) -> Vec<(String, String, f32, Vec<&'static str>)> {
    let index = ws.open();
    index.refresh(&|_| {}).expect("index");
    let snapshot = index.snapshot();
    let mut text = DiskText::new(index.root());
    search(&snapshot, query, options, &mut text)
        .hits
        .into_iter()
        .map(|h| (h.path, h.symbol, h.score, h.sources))
        .collect()
}

#[test]
fn per_file_cap_lets_other_files_in_and_backfills() {
    let ws = crowded_workspace();
    // A natural-language query: no symbol branch, so the cap applies.
    let query = "spend or refill a token";
    let capped = run(
        &ws,
        query,
        &SearchOptions {
            limit: 4,
            ..SearchOptions::default()
        },
    );
    let paths: Vec<&str> = capped.iter().map(|h| h.0.as_str()).collect();
    assert_eq!(
        paths.iter().filter(|p| **p == "src/crowded.rs").count(),
        2,
        "{paths:?}"
    );
    assert!(paths.contains(&"src/other.rs"), "{paths:?}");
    assert_eq!(capped.len(), 4, "backfilled to the limit");
    // Never reordered: scores do not increase down the list.
    assert!(capped.windows(2).all(|w| w[0].2 >= w[1].2), "{capped:?}");

    let uncapped = run(
        &ws,
        query,
        &SearchOptions {
            limit: 4,
            per_file_cap: 0,
            ..SearchOptions::default()
        },
    );
    let n_crowded = uncapped.iter().filter(|h| h.0 == "src/crowded.rs").count();
    assert_eq!(
        n_crowded, 3,
        "without the cap one file crowds: {uncapped:?}"
    );

    // Fewer other files than slots: the crowded file fills the rest.
    let wide = run(
        &ws,
        query,
        &SearchOptions {
            limit: 6,
            ..SearchOptions::default()
        },
    );
    assert_eq!(wide.len(), 6);
}

#[test]
fn exact_definition_outranks_mentions() {
    let ws = crowded_workspace();
    let hits = run(&ws, "refill_token_3", &SearchOptions::default());
    assert_eq!(hits[0].1, "refill_token_3");
    assert!(hits[0].3.contains(&"exact"), "{:?}", hits[0]);
    assert!(hits.iter().skip(1).all(|h| !h.3.contains(&"exact")));
}

#[test]
fn symbol_name_hits_are_exempt_from_the_cap() {
    // An identifier query: its symbol-branch hits cluster as they earned.
    let ws = crowded_workspace();
    let options = SearchOptions {
        limit: 4,
        ..SearchOptions::default()
    };
    let hits = run(&ws, "refill_token", &options);
    assert!(hits.iter().all(|h| h.0 == "src/crowded.rs"), "{hits:?}");
    assert!(hits.iter().all(|h| h.3.contains(&"symbol")), "{hits:?}");
}
