//! Unit tests of the symbol index; most drive a whole table (build, query,
//! search and the on-disk format) through one `check` helper.

use super::fold::part_starts;
use super::format::{checksum, HEADER_LEN};
use super::matching::{evaluate, Scratch};
use super::search::DIRECT_MAX;
use super::*;
use crate::chunk::ChunkKind;

/// Splits `Container::name` into its name (the last `::` segment).
fn record(id: usize, qualified: &str) -> SymbolRecord<'_> {
    let name = qualified.rsplit("::").next().unwrap_or(qualified);
    SymbolRecord {
        chunk_id: id as u32,
        name,
        qualified_name: qualified,
        kind: ChunkKind::Function,
    }
}

fn table(names: &[&str]) -> SymbolTable {
    SymbolTable::build(names.iter().enumerate().map(|(i, n)| record(i, n)))
}

fn run(t: &SymbolTable, query: &SymbolQuery, limit: usize) -> Vec<SymbolMatch> {
    let mut out = Vec::new();
    t.search(query, &|_| true, limit, &mut out);
    out
}

/// Builds a table of `names` (chunk id = position; `A::b` is qualified)
/// and asserts that `query` returns exactly `expected`, best first, with
/// the given tiers, through both the direct and the indexed path.
fn check(names: &[&str], query: &str, expected: &[(&str, MatchTier)]) {
    let t = table(names);
    let q = SymbolQuery::parse(query, None);
    for direct_max in [DIRECT_MAX, 0] {
        let mut out = Vec::new();
        t.search_with(&q, &|_| true, 100, direct_max, &mut out);
        let got: Vec<(&str, MatchTier)> = out
            .iter()
            .map(|m| (names[m.chunk_id as usize], m.tier))
            .collect();
        assert_eq!(
            got, expected,
            "query {query:?}, direct_max {direct_max}: {out:?}"
        );
    }
}

use MatchTier::*;

#[test]
fn tiers_are_strict_and_ordered() {
    check(
        &[
            "unrelated",
            "GraphStoreLookup",
            "lxoxoxkup",
            "graph_lookup",
            "lookupTable",
            "lookup",
        ],
        "lookup",
        &[
            ("lookup", Exact),
            ("lookupTable", Prefix),
            ("graph_lookup", WordBoundary),
            ("GraphStoreLookup", WordBoundary),
            ("lxoxoxkup", Subsequence),
        ],
    );
}

#[test]
fn word_parts_split_case_acronyms_digits_and_separators() {
    let parts = |s: &str| {
        let mut v = Vec::new();
        part_starts(s, &mut v);
        v
    };
    assert_eq!(parts("HTTPServerError"), [0, 4, 10]);
    assert_eq!(parts("utf8Decode"), [0, 3, 4]);
    assert_eq!(parts("__init__"), [2]);
    assert_eq!(parts("snake_case-kebab"), [0, 6, 11]);
    assert_eq!(parts("parseURL"), [0, 5]);
    assert_eq!(parts("+="), Vec::<u16>::new());
    check(
        &["HTTPServerError"],
        "server",
        &[("HTTPServerError", WordBoundary)],
    );
    check(
        &["HTTPServerError"],
        "error",
        &[("HTTPServerError", WordBoundary)],
    );
    check(
        &["__init__", "initialize"],
        "init",
        &[("initialize", Prefix), ("__init__", WordBoundary)],
    );
    check(
        &["my-kebab-name"],
        "kebab",
        &[("my-kebab-name", WordBoundary)],
    );
    check(
        &["vec3_add", "Vec3"],
        "3",
        &[("Vec3", WordBoundary), ("vec3_add", WordBoundary)],
    );
}

#[test]
fn camel_humps_and_initials() {
    let names = [
        "GraphStoreLookup",
        "GetStringLength",
        "gsl_helper",
        "gasoline",
    ];
    check(
        &names,
        "gsl",
        &[
            ("gsl_helper", Prefix),
            ("GetStringLength", WordBoundary),
            ("GraphStoreLookup", WordBoundary),
            ("gasoline", Subsequence),
        ],
    );
    check(&names, "GrStLo", &[("GraphStoreLookup", WordBoundary)]);
    // Skipping a part (`Store`) is still a hump.
    check(&names, "grlook", &[("GraphStoreLookup", WordBoundary)]);
    // Initials of inner parts.
    check(
        &names,
        "sl",
        &[
            ("GetStringLength", WordBoundary),
            ("GraphStoreLookup", WordBoundary),
            ("gsl_helper", Subsequence),
            ("gasoline", Subsequence),
        ],
    );
    check(
        &["HTTPServerError"],
        "hse",
        &[("HTTPServerError", WordBoundary)],
    );
    // Separators typed between pieces may be skipped, but like every
    // query char they must occur in the name.
    check(
        &["graph_store_lookup"],
        "gr_st",
        &[("graph_store_lookup", WordBoundary)],
    );
    check(
        &["graph_x_store"],
        "gr_st",
        &[("graph_x_store", WordBoundary)],
    );
    check(&["GraphStore"], "gr_st", &[]);
    check(&["graph_store"], "gr_", &[("graph_store", Subsequence)]);
    // Pieces must start at parts: `raph` starts inside `Graph`.
    check(
        &["GraphStoreLookup"],
        "raphst",
        &[("GraphStoreLookup", Subsequence)],
    );
}

#[test]
fn score_prefers_short_names_early_matches_and_exact_case() {
    check(
        &["getValueFromCache", "getValue", "get_val"],
        "getv",
        &[
            ("getValue", Prefix),
            ("getValueFromCache", Prefix),
            ("get_val", WordBoundary),
        ],
    );
    check(
        &["Lookup", "lookup"],
        "lookup",
        &[("lookup", Exact), ("Lookup", Exact)],
    );
    check(
        &["Lookup", "lookup"],
        "Lookup",
        &[("Lookup", Exact), ("lookup", Exact)],
    );
    check(
        &["xx_yy_store", "x_store"],
        "store",
        &[("x_store", WordBoundary), ("xx_yy_store", WordBoundary)],
    );
    // Contiguous runs beat scattered ones of the same length.
    check(
        &["a_b_c_xyz", "axyzbbbbc"],
        "xyz",
        &[("a_b_c_xyz", WordBoundary), ("axyzbbbbc", Subsequence)],
    );
    check(
        &["xaxbxc", "xxxabc"],
        "abc",
        &[("xxxabc", Subsequence), ("xaxbxc", Subsequence)],
    );
    // Identical names are ordered by chunk id.
    check(
        &["dup", "dup", "dup"],
        "dup",
        &[("dup", Exact), ("dup", Exact), ("dup", Exact)],
    );
    let t = table(&["dup", "dup", "dup"]);
    let ids: Vec<u32> = run(&t, &SymbolQuery::parse("du", None), 10)
        .iter()
        .map(|m| m.chunk_id)
        .collect();
    assert_eq!(ids, [0, 1, 2]);
}

#[test]
fn qualified_queries_match_containers() {
    let names = [
        "GraphStore::lookup",
        "Other::lookup",
        "GraphStoreImpl::lookup",
        "gs::lookupAll",
        "lookup",
        "a::b::GraphStore::lookup_twice",
    ];
    check(
        &names,
        "GraphStore::lookup",
        &[
            ("GraphStore::lookup", Exact),
            ("GraphStoreImpl::lookup", Exact),
            ("a::b::GraphStore::lookup_twice", Prefix),
        ],
    );
    check(
        &names,
        "graphstore.lookup",
        &[
            ("GraphStore::lookup", Exact),
            ("GraphStoreImpl::lookup", Exact),
            ("a::b::GraphStore::lookup_twice", Prefix),
        ],
    );
    // Subsequence containers are accepted but rank below exact ones.
    check(
        &names,
        "gs#lookup",
        &[
            ("GraphStore::lookup", Exact),
            ("GraphStoreImpl::lookup", Exact),
            ("gs::lookupAll", Prefix),
            ("a::b::GraphStore::lookup_twice", Prefix),
        ],
    );
    check(
        &names,
        "b::graphstore::twice",
        &[("a::b::GraphStore::lookup_twice", WordBoundary)],
    );
    check(&names, "other::lkp", &[("Other::lookup", Subsequence)]);
    // A trailing separator lists members.
    check(&names, "Other::", &[("Other::lookup", Prefix)]);
    check(&names, "nomatch::lookup", &[]);
}

#[test]
fn qualified_query_containers_rank_by_match_quality() {
    let names = [
        "storeX::get",
        "graph_store::get",
        "StoreLike::get",
        "store::get",
    ];
    check(
        &names,
        "store::get",
        &[
            ("store::get", Exact),
            ("storeX::get", Exact),
            ("StoreLike::get", Exact),
            ("graph_store::get", Exact),
        ],
    );
}

#[test]
fn literal_names_with_separators_match_exactly() {
    check(&["v1.2", "v1", "release"], "v1.2", &[("v1.2", Exact)]);
    check(&["1. Intro", "intro"], "1. intro", &[("1. Intro", Exact)]);
}

#[test]
fn kind_filter_keeps_only_that_kind() {
    let recs = [
        SymbolRecord {
            chunk_id: 1,
            name: "Parser",
            qualified_name: "Parser",
            kind: ChunkKind::Struct,
        },
        SymbolRecord {
            chunk_id: 2,
            name: "Parser",
            qualified_name: "Parser",
            kind: ChunkKind::Trait,
        },
        SymbolRecord {
            chunk_id: 3,
            name: "parse",
            qualified_name: "Parser::parse",
            kind: ChunkKind::Method,
        },
        SymbolRecord {
            chunk_id: 4,
            name: "parse_all",
            qualified_name: "parse_all",
            kind: ChunkKind::Function,
        },
    ];
    let t = SymbolTable::build(recs);
    let ids = |q: &str, k: Option<ChunkKind>| -> Vec<u32> {
        run(&t, &SymbolQuery::parse(q, k), 10)
            .iter()
            .map(|m| m.chunk_id)
            .collect()
    };
    assert_eq!(ids("pars", Some(ChunkKind::Trait)), [2]);
    assert_eq!(ids("pars", Some(ChunkKind::Method)), [3]);
    assert_eq!(ids("pa", Some(ChunkKind::Function)), [4]);
    assert_eq!(ids("Parser::", Some(ChunkKind::Method)), [3]);
    assert_eq!(ids("pars", Some(ChunkKind::Enum)), Vec::<u32>::new());
    assert_eq!(ids("pars", None), [3, 1, 2, 4]);
}

#[test]
fn dead_chunks_are_skipped_and_the_limit_is_filled_from_live_ones() {
    let names: Vec<String> = (0..50).map(|i| format!("item{i:02}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let t = table(&refs);
    let q = SymbolQuery::parse("item", None);
    let mut out = vec![SymbolMatch {
        chunk_id: 999,
        tier: Exact,
        score: 0.0,
    }];
    t.search(&q, &|id| id % 2 == 1, 5, &mut out);
    assert_eq!(out[0].chunk_id, 999, "search appends");
    let ids: Vec<u32> = out[1..].iter().map(|m| m.chunk_id).collect();
    assert_eq!(ids, [1, 3, 5, 7, 9]);
    assert!(run(&t, &q, 0).is_empty());
    let mut none = Vec::new();
    t.search(&q, &|_| false, 10, &mut none);
    assert!(none.is_empty());
}

#[test]
fn limit_cuts_after_strict_tiers() {
    let mut names: Vec<String> = (0..20).map(|i| format!("get{i}")).collect();
    names.push("targets".into());
    names.push("forget".into());
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let t = table(&refs);
    let out = run(&t, &SymbolQuery::parse("get", None), 20);
    assert_eq!(out.len(), 20);
    assert!(out.iter().all(|m| m.tier == Prefix));
    let out = run(&t, &SymbolQuery::parse("get", None), 22);
    assert_eq!(out.len(), 22);
    assert_eq!(
        out[20].chunk_id, 21,
        "forget: subsequence at 3 is better than target's"
    );
    assert_eq!(out[21].chunk_id, 20);
}

#[test]
fn unicode_and_odd_queries_never_panic() {
    let names = [
        "größe",
        "Größe",
        "ÄpfelBirnen",
        "日本語",
        "İstanbul",
        "naïve_café",
        "+=",
        "",
    ];
    check(&names, "grö", &[("größe", Prefix), ("Größe", Prefix)]);
    check(&names, "äb", &[("ÄpfelBirnen", WordBoundary)]);
    check(&names, "birnen", &[("ÄpfelBirnen", WordBoundary)]);
    check(&names, "本", &[("日本語", Subsequence)]);
    check(&names, "café", &[("naïve_café", WordBoundary)]);
    // `İ` lowercases to `i` plus a combining dot, so plain `i` still
    // matches as a subsequence.
    check(&names, "ISTANBUL", &[("İstanbul", Subsequence)]);
    check(&names, "i̇stanbul", &[("İstanbul", Exact)]);
    check(&names, "+=", &[("+=", Exact)]);
    let t = table(&names);
    let long = "ä".repeat(10_000);
    for q in [
        "",
        "   ",
        "::",
        ".",
        "#",
        ":::a",
        "a::",
        "é",
        long.as_str(),
        "\u{0}",
        "日本語::",
    ] {
        let q = SymbolQuery::parse(q, None);
        let _ = run(&t, &q, 10);
    }
    assert!(SymbolQuery::parse("  ", None).is_empty());
    assert!(SymbolQuery::parse("::", None).is_empty());
    assert!(!SymbolQuery::parse("a::", None).is_empty());
    let empty = SymbolTable::build(std::iter::empty());
    assert!(empty.is_empty());
    assert!(run(&empty, &SymbolQuery::parse("a", None), 10).is_empty());
}

#[test]
fn merge_sorts_by_tier_score_and_chunk_id() {
    let m = |chunk_id, tier, score| SymbolMatch {
        chunk_id,
        tier,
        score,
    };
    let mut v = vec![
        m(5, Prefix, -3.0),
        m(1, Subsequence, 10.0),
        m(9, Exact, -9.0),
        m(2, Prefix, -1.0),
        m(1, Prefix, -3.0),
    ];
    merge_matches(&mut v, 4);
    assert_eq!(
        v,
        [
            m(9, Exact, -9.0),
            m(2, Prefix, -1.0),
            m(1, Prefix, -3.0),
            m(5, Prefix, -3.0)
        ]
    );
}

fn sample_table() -> SymbolTable {
    let recs = [
        ("GraphStore::lookup", ChunkKind::Method),
        ("GraphStore", ChunkKind::Struct),
        ("parse_args", ChunkKind::Function),
        ("HTTPServerError", ChunkKind::Enum),
        ("größe", ChunkKind::Variable),
        ("MAX_LEN", ChunkKind::Constant),
    ];
    SymbolTable::build(recs.iter().enumerate().map(|(i, (q, k))| SymbolRecord {
        kind: *k,
        ..record(i, q)
    }))
}

#[test]
fn round_trip_preserves_results() {
    let t = sample_table();
    let mut bytes = vec![7u8; 3];
    t.write_to(&mut bytes);
    let body = &bytes[3..];
    let mut with_tail = body.to_vec();
    with_tail.extend_from_slice(b"trailing");
    let r = SymbolTable::read_from(&with_tail).unwrap();
    assert_eq!(r.len(), t.len());
    let mut again = Vec::new();
    r.write_to(&mut again);
    assert_eq!(again, body);
    for q in [
        "lookup",
        "gs",
        "hse",
        "graphstore::",
        "größe",
        "ml",
        "x",
        "pa",
    ] {
        for kind in [None, Some(ChunkKind::Struct)] {
            let q = SymbolQuery::parse(q, kind);
            assert_eq!(run(&t, &q, 10), run(&r, &q, 10));
        }
    }
    let empty = SymbolTable::build(std::iter::empty());
    let mut b = Vec::new();
    empty.write_to(&mut b);
    assert!(SymbolTable::read_from(&b).unwrap().is_empty());
}

#[test]
fn corrupt_bytes_are_rejected() {
    let t = sample_table();
    let mut bytes = Vec::new();
    t.write_to(&mut bytes);
    for len in 0..bytes.len() {
        assert!(
            SymbolTable::read_from(&bytes[..len]).is_err(),
            "truncated to {len}"
        );
    }
    for i in 0..bytes.len() {
        for flip in [0x01u8, 0x80, 0xFF] {
            let mut b = bytes.clone();
            b[i] ^= flip;
            assert!(SymbolTable::read_from(&b).is_err(), "byte {i} ^ {flip:#x}");
        }
    }
    assert!(matches!(
        SymbolTable::read_from(b"NOPE00000000000000000000"),
        Err(SymbolFormatError::BadMagic)
    ));
    let mut b = bytes.clone();
    b[4] = 9;
    assert!(matches!(
        SymbolTable::read_from(&b),
        Err(SymbolFormatError::UnsupportedVersion(_))
    ));
}

#[test]
fn structurally_invalid_bodies_with_valid_checksums_are_rejected() {
    let t = sample_table();
    let mut bytes = Vec::new();
    t.write_to(&mut bytes);
    // Overwrite a body byte, then fix the checksum so only validation
    // can catch it. Every position must be rejected or load safely.
    // The fst's internal structure is only guarded by the checksum.
    let fst_start = bytes.len() - t.word_fst.as_fst().as_bytes().len();
    for i in HEADER_LEN..fst_start {
        for v in [0u8, 1, 0x7F, 0xFF] {
            let mut b = bytes.clone();
            b[i] = v;
            let sum = checksum(&b[HEADER_LEN..]);
            b[16..24].copy_from_slice(&sum.to_le_bytes());
            if let Ok(r) = SymbolTable::read_from(&b) {
                for q in ["lookup", "gs", "graphstore::", "größe", "e"] {
                    let _ = run(&r, &SymbolQuery::parse(q, None), 10);
                }
            }
        }
    }
}

/// A tiny deterministic generator for the consistency test.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

/// The index must find exactly what evaluating every name finds, when
/// the limit is large enough that no tier is cut.
#[test]
fn index_agrees_with_brute_force_evaluation() {
    const WORDS: [&str; 16] = [
        "get", "set", "graph", "store", "lookup", "http", "server", "node", "id", "parse", "map",
        "x", "value", "2", "io", "buf",
    ];
    let mut rng = Rng(0x5EED);
    let mut names = Vec::new();
    for _ in 0..600 {
        let parts = 1 + rng.next() % 4;
        let style = rng.next() % 4;
        let mut name = String::new();
        for p in 0..parts {
            let w = rng.pick(&WORDS);
            match style {
                0 => {
                    if p > 0 {
                        name.push('_');
                    }
                    name.push_str(w);
                }
                1 if p == 0 => name.push_str(w),
                3 => name.push_str(&w.to_uppercase()),
                _ => {
                    let mut c = w.chars();
                    if let Some(f) = c.next() {
                        name.extend(f.to_uppercase());
                        name.push_str(c.as_str());
                    }
                }
            }
        }
        names.push(name);
    }
    const KINDS: [ChunkKind; 3] = [ChunkKind::Function, ChunkKind::Method, ChunkKind::Struct];
    let t = SymbolTable::build(names.iter().enumerate().map(|(i, n)| SymbolRecord {
        chunk_id: i as u32,
        name: n,
        qualified_name: n,
        kind: KINDS[i % 3],
    }));
    let queries = [
        "g",
        "gs",
        "get",
        "gsl",
        "store",
        "sl",
        "Lookup",
        "grlo",
        "hse",
        "xid",
        "2",
        "ge2",
        "idx",
        "pm",
        "Map",
        "vb",
        "zz",
        "serverid",
        "getValueMap",
    ];
    let live = |id: u32| id % 7 != 3;

    // Qualified queries: the indexed path (forced by a zero direct
    // threshold) must agree with evaluating every contained symbol.
    let quals: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| match i % 4 {
            0 => n.clone(),
            1 => format!("Graph::{n}"),
            2 => format!("graph_store::Node::{n}"),
            _ => format!("{}.{n}", WORDS[i % WORDS.len()]),
        })
        .collect();
    let qt = SymbolTable::build(quals.iter().enumerate().map(|(i, q)| SymbolRecord {
        chunk_id: i as u32,
        name: &names[i],
        qualified_name: q,
        kind: KINDS[i % 3],
    }));
    let mut found = 0;
    for text in [
        "graph::get",
        "gs::node",
        "node.s",
        "gr::",
        "x.id",
        "store::sl",
        "io::2",
    ] {
        for kind in [None, Some(ChunkKind::Function)] {
            let q = SymbolQuery::parse(text, kind);
            for limit in [10_000, 7] {
                let (mut direct, mut indexed) = (Vec::new(), Vec::new());
                qt.search_with(&q, &live, limit, usize::MAX, &mut direct);
                qt.search_with(&q, &live, limit, 0, &mut indexed);
                assert_eq!(
                    direct, indexed,
                    "query {text}, kind {kind:?}, limit {limit}"
                );
                found += direct.len();
            }
        }
    }
    assert!(found > 100, "the qualified queries match something");

    for text in queries {
        for kind in [None, Some(ChunkKind::Method)] {
            let q = SymbolQuery::parse(text, kind);
            let mut want = Vec::new();
            let mut scratch = Scratch::default();
            for ord in 0..t.name_count() {
                let (name, parts) = (t.name(ord), t.parts_of(ord));
                let Some(ev) = evaluate(&q.name, name, parts, true, true, &mut scratch) else {
                    continue;
                };
                for sym in t.syms_of(ord) {
                    let id = t.sym_chunk[sym];
                    let kind_ok = kind.is_none_or(|k| k.code() == t.sym_kind[sym]);
                    if kind_ok && live(id) {
                        let score = ev.base + ev.case_bonus(t.sym_upper[sym]);
                        want.push(SymbolMatch {
                            chunk_id: id,
                            tier: ev.tier,
                            score,
                        });
                    }
                }
            }
            merge_matches(&mut want, usize::MAX);
            // Any limit returns the head of the full ranking.
            for limit in [10_000, 40, 7, 1] {
                let mut got = Vec::new();
                t.search(&q, &live, limit, &mut got);
                let n = want.len().min(limit);
                assert_eq!(
                    got[..],
                    want[..n],
                    "query {text}, kind {kind:?}, limit {limit}"
                );
            }
        }
    }
}

/// `search_tables`, each table searched above the floor the ones before
/// set, gives exactly what merging unbounded searches gives.
#[test]
fn searches_above_a_floor_merge_to_the_unbounded_answer() {
    const WORDS: [&str; 10] = [
        "parse", "args", "attr", "array", "read", "to", "string", "str", "node", "x",
    ];
    let mut rng = Rng(0xF100);
    let names: Vec<String> = (0..1500)
        .map(|_| {
            let parts = 1 + rng.next() % 3;
            let words: Vec<&str> = (0..parts).map(|_| rng.pick(&WORDS)).collect();
            if rng.next().is_multiple_of(2) {
                words.join("_")
            } else {
                words.concat()
            }
        })
        .collect();
    // Three tables with disjoint chunk ids, as segments are.
    let tables: Vec<SymbolTable> = (0..3)
        .map(|part| {
            SymbolTable::build(
                names
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| i % 3 == part)
                    .map(|(i, n)| record(i, n)),
            )
        })
        .collect();
    let live = |id: u32| id % 11 != 5;
    let mut skipped = 0;
    for text in [
        "parse_a",
        "parse_ar",
        "read_to_s",
        "pa",
        "p",
        "rts",
        "node",
        "xs",
        "zz",
    ] {
        for limit in [1, 7, 40, 10_000] {
            let q = SymbolQuery::parse(text, None);
            let mut want = Vec::new();
            for t in &tables {
                t.search(&q, &live, limit, &mut want);
            }
            merge_matches(&mut want, limit);
            let got = search_tables(&tables, &q, &live, limit);
            // The floor a full first answer sets keeps the other tables
            // from reporting everything they match.
            let mut first = Vec::new();
            tables[0].search(&q, &live, limit, &mut first);
            if first.len() >= limit {
                let floor = first.last().map(|m| (m.tier, m.score));
                for t in &tables[1..] {
                    let (mut above, mut alone) = (Vec::new(), Vec::new());
                    t.search_above(&q, &live, limit, floor, &mut above);
                    t.search(&q, &live, limit, &mut alone);
                    skipped += alone.len() - above.len();
                }
            }
            assert_eq!(got, want, "query {text}, limit {limit}");
        }
    }
    assert!(skipped > 0, "the floor never cut anything");
}
