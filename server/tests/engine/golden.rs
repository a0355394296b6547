//! Search quality pins: every definition of the polyglot fixture is the
//! first hit for its own name and for its qualified name, in both the
//! lexical search and the symbol index.

use crate::common::{golden, Workspace};
use quarry_engine::search::{find_symbols, search, DiskText, SearchOptions, Source};

#[test]
fn every_fixture_definition_ranks_first_by_name_and_qualified_name() {
    let ws = Workspace::fixture();
    let index = ws.open();
    index.refresh(&|_| {}).expect("index fixture");
    let snapshot = index.snapshot();
    let entries = golden();
    assert!(
        entries.len() >= 60,
        "golden file too small: {}",
        entries.len()
    );
    let languages: std::collections::BTreeSet<&str> = entries
        .iter()
        .map(|g| g.path.rsplit('.').next().unwrap_or(""))
        .collect();
    assert!(languages.len() >= 10, "golden covers {languages:?}");

    let mut text = DiskText::of(&index);
    let options = SearchOptions::default();
    let mut failures = Vec::new();
    for g in &entries {
        // Search is case-insensitive, so names equal up to case compete.
        let same_name = entries
            .iter()
            .filter(|o| o.name.eq_ignore_ascii_case(&g.name))
            .count();
        let same_qualified = entries
            .iter()
            .filter(|o| o.qualified_name.eq_ignore_ascii_case(&g.qualified_name))
            .count();

        // Lexical: by name. With several definitions of one name, rank 1
        // must be one of them.
        let hits = search(&snapshot, &g.name, &options, &mut text).hits;
        let ok = hits.first().is_some_and(|h| {
            if same_name == 1 {
                h.path == g.path && h.start_line == g.start_line
            } else {
                h.name.eq_ignore_ascii_case(&g.name)
            }
        });
        if !ok {
            failures.push(format!(
                "search {:?}: top {:?}",
                g.name,
                hits.first().map(|h| (&h.path, h.start_line, &h.symbol))
            ));
        }
        // Lexical: by qualified name.
        let hits = search(&snapshot, &g.qualified_name, &options, &mut text).hits;
        let ok = hits.first().is_some_and(|h| {
            if same_qualified == 1 {
                h.path == g.path && h.start_line == g.start_line && h.end_line == g.end_line
            } else {
                h.symbol.eq_ignore_ascii_case(&g.qualified_name)
            }
        });
        if !ok {
            failures.push(format!(
                "search {:?}: top {:?}",
                g.qualified_name,
                hits.first().map(|h| (&h.path, h.start_line, &h.symbol))
            ));
        }
        // Symbol index: by qualified name, exact.
        let symbols = find_symbols(&snapshot, &g.qualified_name, None, 10);
        let ok = symbols.first().is_some_and(|s| {
            s.tier == "exact"
                && (same_qualified > 1 || (s.path == g.path && s.start_line == g.start_line))
        });
        if !ok {
            failures.push(format!(
                "symbols {:?}: top {:?}",
                g.qualified_name,
                symbols
                    .first()
                    .map(|s| (&s.path, s.start_line, &s.qualified_name, s.tier))
            ));
        }
        // Symbol index: by name, exact tier first.
        let symbols = find_symbols(&snapshot, &g.name, None, 10);
        if !symbols
            .first()
            .is_some_and(|s| s.tier == "exact" && s.name.eq_ignore_ascii_case(&g.name))
        {
            failures.push(format!("symbols {:?}: top {:?}", g.name, symbols.first()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn quoted_error_string_is_a_verified_phrase_match() {
    let ws = Workspace::fixture();
    let index = ws.open();
    index.refresh(&|_| {}).expect("index fixture");
    let snapshot = index.snapshot();
    let mut text = DiskText::of(&index);
    let hits = search(
        &snapshot,
        "\"graph_store mutex poisoned\"",
        &SearchOptions::default(),
        &mut text,
    )
    .hits;
    let first = hits.first().expect("a phrase hit");
    assert!(first.sources.contains(&Source::Phrase), "{first:?}");
    let file = std::fs::read_to_string(index.root().join(&first.path)).expect("read");
    let body: Vec<&str> = file
        .lines()
        .skip(first.start_line as usize - 1)
        .take((first.end_line - first.start_line + 1) as usize)
        .collect();
    assert!(body.join("\n").contains("graph_store mutex poisoned"));
}

#[test]
fn an_unmatched_or_unbalanced_phrase_never_empties_the_result() {
    let ws = Workspace::fixture();
    let index = ws.open();
    index.refresh(&|_| {}).expect("index fixture");
    let snapshot = index.snapshot();
    let mut text = DiskText::of(&index);
    let options = SearchOptions::default();
    // A quoted message found nowhere: its words still count.
    let hits = search(
        &snapshot,
        "\"graph store lookup exploded\" GraphStore",
        &options,
        &mut text,
    )
    .hits;
    assert!(!hits.is_empty(), "an unmatched phrase emptied the result");
    assert!(hits.iter().all(|h| !h.sources.contains(&Source::Phrase)));
    assert!(hits.iter().any(|h| h.symbol.starts_with("GraphStore")));
    // An issue text: an unbalanced quote, a quoted word, a verified message.
    let issue = "After upgrading, the graph store panics when two threads insert at once. \
                 The log says \"graph_store mutex poisoned\" and then the 'lookup' of the \
                 node fails with \"unexpected state. I think GraphStore::insert should not \
                 hold the lock while it calls back into user code.";
    let hits = search(&snapshot, issue, &options, &mut text).hits;
    assert!(hits.len() >= 5, "issue text gave {} hits", hits.len());
    // An issue's quotes are its writer's: the message is marked where it
    // is found, not pinned above the code the issue is about.
    let first = hits.first().expect("a hit");
    assert_eq!(first.symbol, "GraphStore::insert", "{first:?}");
    assert!(
        hits.iter().any(|h| h.sources.contains(&Source::Phrase)),
        "{hits:?}"
    );
}
