//! Ranking passes after fusion: exact-name priority, the per-file cap
//! with backfill and the diverse head, filters and the code-aware signals.

use crate::common::Workspace;
use quarry_engine::filter::Filter;
use quarry_engine::rank::classes::PathPenalties;
use quarry_engine::rank::signals::Signals;
use quarry_engine::search::{find_symbols, search, DiskText, SearchOptions};

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
    let mut text = DiskText::of(&index);
    search(&snapshot, query, options, &mut text)
        .hits
        .into_iter()
        .map(|h| {
            (
                h.path,
                h.symbol,
                h.score,
                h.sources.iter().map(|s| s.name()).collect(),
            )
        })
        .collect()
}

/// The hard per-file cap (soft saturation off).
fn hard_cap(limit: usize, per_file_cap: usize) -> SearchOptions {
    SearchOptions {
        limit,
        per_file_cap,
        file_saturation: 0.0,
        ..SearchOptions::default()
    }
}

#[test]
fn per_file_cap_lets_other_files_in_and_backfills() {
    let ws = crowded_workspace();
    // A natural-language query: no symbol branch, so the cap applies.
    let query = "spend or refill a token";
    let capped = run(&ws, query, &hard_cap(4, 2));
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

    let uncapped = run(&ws, query, &hard_cap(4, 0));
    let n_crowded = uncapped.iter().filter(|h| h.0 == "src/crowded.rs").count();
    assert!(
        n_crowded >= 3,
        "without the cap one file crowds: {uncapped:?}"
    );

    // Fewer other files than slots: the crowded file fills the rest.
    let wide = run(&ws, query, &hard_cap(6, 2));
    assert_eq!(wide.len(), 6);
}

#[test]
fn soft_saturation_lets_other_files_in_without_a_hard_cap() {
    let ws = crowded_workspace();
    let query = "spend or refill a token";
    let options = SearchOptions {
        limit: 4,
        ..SearchOptions::default()
    };
    assert!(options.file_saturation > 0.0, "saturation is the default");
    let hits = run(&ws, query, &options);
    let paths: Vec<&str> = hits.iter().map(|h| h.0.as_str()).collect();
    assert!(paths.contains(&"src/other.rs"), "{paths:?}");
    assert_eq!(hits.len(), 4);
    // Wide enough: every file that matched is listed.
    let wide = run(
        &ws,
        query,
        &SearchOptions {
            limit: 7,
            ..SearchOptions::default()
        },
    );
    assert_eq!(wide.len(), 7, "{wide:?}");
    // The first hit of another file beats a third hit of the crowded one.
    let paths: Vec<&str> = wide.iter().map(|h| h.0.as_str()).collect();
    let other = paths.iter().position(|p| *p == "src/other.rs");
    let third_crowded = paths
        .iter()
        .enumerate()
        .filter(|(_, p)| **p == "src/crowded.rs")
        .nth(2)
        .map(|(i, _)| i);
    let (Some(other), Some(third)) = (other, third_crowded) else {
        panic!("other.rs and three crowded.rs hits expected: {paths:?}");
    };
    assert!(other < third, "{paths:?}");
}

#[test]
fn past_the_diverse_head_hits_come_by_score() {
    let ws = crowded_workspace();
    let query = "spend or refill a token";
    let with_head = |diverse_head| SearchOptions {
        limit: 7,
        diverse_head,
        ..SearchOptions::default()
    };
    let symbols = |hits: &[(String, String, f32, Vec<&'static str>)]| -> Vec<String> {
        hits.iter().map(|h| h.1.clone()).collect()
    };
    // Score order: no per-file diversity at all.
    let by_score = symbols(&run(
        &ws,
        query,
        &SearchOptions {
            limit: 7,
            file_saturation: 0.0,
            ..SearchOptions::default()
        },
    ));
    // Diversity over every place reorders: another file's first hit
    // comes before the crowded file's better-scored later hits.
    let spread = run(&ws, query, &with_head(usize::MAX));
    assert_ne!(symbols(&spread), by_score, "{spread:?}");
    // With a head of two places, the rest of the list is in score order,
    // and it holds the same hits.
    let headed = run(&ws, query, &with_head(2));
    let rest: Vec<String> = by_score
        .iter()
        .filter(|s| !symbols(&headed[..2]).contains(s))
        .cloned()
        .collect();
    assert_eq!(symbols(&headed[2..]), rest, "{headed:?}");
    // Whatever the order, scores fall down the list.
    assert!(headed.windows(2).all(|w| w[0].2 > w[1].2), "{headed:?}");
    let names = |hits: &[(String, String, f32, Vec<&'static str>)]| {
        let mut names: Vec<String> = hits.iter().map(|h| h.1.clone()).collect();
        names.sort();
        names
    };
    assert_eq!(names(&headed), names(&spread));
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
fn a_name_spelt_as_written_outranks_one_equal_when_case_is_folded() {
    // vitest's `Vitest` class against its `vitest` constant: both are exact
    // names for `Vitest`, and the short constant scores as well as the long
    // class on every branch; the spelling decides. Typed the other way, the
    // constant comes first.
    let ws = Workspace::empty();
    ws.write(
        "src/vi.ts",
        "export const vitest: VitestUtils = createVitest()\n",
    );
    let mut class = String::from("export class Vitest {\n");
    for i in 0..40 {
        class.push_str(&format!("  step{i}(): number {{ return {i} }}\n"));
    }
    class.push_str("}\n");
    ws.write("src/node/core.ts", class);
    let hits = run(&ws, "Vitest", &SearchOptions::default());
    assert_eq!(hits[0].1, "Vitest", "{hits:?}");
    assert!(hits[0].3.contains(&"exact"), "{:?}", hits[0]);
    assert!(hits[1].3.contains(&"exact"), "{:?}", hits[1]);
    let hits = run(&ws, "vitest", &SearchOptions::default());
    assert_eq!(hits[0].1, "vitest", "{hits:?}");
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

#[test]
fn equal_names_are_ordered_by_their_files_not_by_chunk_ids() {
    // Four definitions of one name, equal for every branch. The file named
    // after it comes first, then shorter paths; the first-indexed file
    // (`a.rs`, the lowest chunk id) does not win by being first.
    let ws = Workspace::empty();
    for path in ["a.rs", "zz.rs", "src/b.rs", "src/formatter.rs"] {
        ws.write(path, "pub struct Formatter { width: usize }\n");
    }
    let index = ws.open();
    index.refresh(&|_| {}).expect("index");
    let snapshot = index.snapshot();
    let paths: Vec<String> = find_symbols(&snapshot, "Formatter", None, 10)
        .into_iter()
        .map(|s| s.path)
        .collect();
    assert_eq!(paths, ["src/formatter.rs", "a.rs", "zz.rs", "src/b.rs"]);
    let hits = run(&ws, "Formatter", &SearchOptions::default());
    assert_eq!(hits[0].0, "src/formatter.rs", "{hits:?}");
}

fn filtered(include: &[&str], exclude: &[&str], langs: &[&str], kinds: &[&str]) -> SearchOptions {
    let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    SearchOptions {
        filter: Filter::new(&own(include), &own(exclude), &own(langs), &own(kinds))
            .expect("valid filter"),
        ..SearchOptions::default()
    }
}

fn filter_workspace() -> Workspace {
    let ws = Workspace::empty();
    // Many strong matches in one excluded file, weaker ones elsewhere: a
    // filter applied after truncation would leave the result short.
    let mut strong = String::new();
    for i in 0..80 {
        strong.push_str(&format!(
            "/// Parse the config file and parse its config values.\npub fn parse_config_{i}() {{ parse_config(); }}\n\n"
        ));
    }
    ws.write("vendor/strong.rs", strong);
    ws.write(
        "src/config.rs",
        "/// Reads the config.\npub struct Config { path: String }\n\n/// Parse a config file.\npub fn load_config() {}\n",
    );
    ws.write(
        "tools/config.py",
        "def parse_config(path):\n    \"\"\"Parse the config file.\"\"\"\n    return path\n",
    );
    ws
}

#[test]
fn filters_apply_inside_the_branches_before_fusion() {
    let ws = filter_workspace();
    let hits = run(&ws, "parse config", &filtered(&[], &["vendor"], &[], &[]));
    let paths: Vec<&str> = hits.iter().map(|h| h.0.as_str()).collect();
    assert!(!paths.is_empty());
    assert!(paths.iter().all(|p| !p.starts_with("vendor/")), "{paths:?}");
    assert!(paths.contains(&"src/config.rs") && paths.contains(&"tools/config.py"));

    let hits = run(&ws, "parse config", &filtered(&["src"], &[], &[], &[]));
    assert!(
        !hits.is_empty() && hits.iter().all(|h| h.0 == "src/config.rs"),
        "{hits:?}"
    );

    let hits = run(&ws, "parse config", &filtered(&[], &[], &["python"], &[]));
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].1, "parse_config");

    let hits = run(&ws, "config", &filtered(&[], &[], &["rust"], &["struct"]));
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].1, "Config");

    // The identifier branch and exact priority respect the filter too.
    let hits = run(&ws, "parse_config", &filtered(&["*.rs"], &[], &[], &[]));
    assert!(hits.iter().all(|h| h.0.ends_with(".rs")), "{hits:?}");
    assert!(hits.iter().all(|h| !h.3.contains(&"exact")), "{hits:?}");
}

#[test]
fn stems_match_other_inflections_only_when_on() {
    let ws = Workspace::empty();
    ws.write(
        "src/net.rs",
        "pub fn send_with_retries(attempts: u32) { let retrying = attempts > 0; }\n\npub fn unrelated() {}\n",
    );
    let on = SearchOptions {
        signals: Signals {
            stems: true,
            ..Signals::default()
        },
        ..SearchOptions::default()
    };
    let hits = run(&ws, "retry", &on);
    assert_eq!(
        hits.first().map(|h| h.1.as_str()),
        Some("send_with_retries"),
        "{hits:?}"
    );
    let off = SearchOptions {
        signals: Signals {
            stems: false,
            ..Signals::default()
        },
        ..SearchOptions::default()
    };
    assert!(run(&ws, "retry", &off).is_empty());
}

#[test]
fn tests_sink_unless_asked_for_and_definitions_beat_mentions() {
    let ws = Workspace::empty();
    ws.write(
        "tests/retry_test.rs",
        "/// Retry a failed request in a test.\npub fn retry_failed_request_works() { retry_request(); retry_request(); }\n",
    );
    ws.write(
        "src/client.rs",
        "/// Sends a request and retries it when it fails.\npub fn retry_request() {}\n\npub fn caller() { retry_request(); retry_request(); retry_request(); }\n",
    );
    let position = |hits: &[(String, String, f32, Vec<&'static str>)]| {
        hits.iter()
            .position(|h| h.0 == "tests/retry_test.rs")
            .expect("the test is still found")
    };
    let off = SearchOptions {
        signals: Signals::off(),
        ..SearchOptions::default()
    };
    let plain = run(&ws, "retry failed request", &off);
    assert_eq!(position(&plain), 0, "{plain:?}");
    // The definition (its name's words are all in the query) rises above
    // the test that matches more words, and the test sinks further.
    let hits = run(&ws, "retry failed request", &SearchOptions::default());
    assert_eq!(hits[0].1, "retry_request", "{hits:?}");
    let no_penalty = SearchOptions {
        signals: Signals {
            penalties: PathPenalties::off(),
            ..Signals::default()
        },
        ..SearchOptions::default()
    };
    let unpenalised = run(&ws, "retry failed request", &no_penalty);
    assert!(
        position(&hits) > position(&unpenalised),
        "{hits:?} {unpenalised:?}"
    );
    // Asking for tests lifts the penalty: the test ranks at least where it
    // does unpenalised (the word `test` also names its file).
    let asked = run(&ws, "retry failed request test", &SearchOptions::default());
    assert!(
        position(&asked) <= position(&unpenalised),
        "{asked:?} {unpenalised:?}"
    );
}

/// The lexical list's confidence (what lowers the dense weight in fusion):
/// 1 when one chunk holds every query word, a share weighted by rarity when
/// the best chunk misses some, 0 when nothing matches.
#[test]
fn lexical_coverage_measures_how_much_of_the_query_the_best_hit_holds() {
    let ws = crowded_workspace();
    ws.write(
        "src/zebra.rs",
        "/// Paints stripes on a zebra.\npub fn zebra_stripes() {}\n",
    );
    let index = ws.open();
    index.refresh(&|_| {}).expect("index");
    let snapshot = index.snapshot();
    let mut text = DiskText::of(&index);
    let coverage = |query: &str, text: &mut DiskText| {
        search(&snapshot, query, &SearchOptions::default(), text).lexical_coverage
    };
    let whole = coverage("spends one token", &mut text);
    assert!((whole - 1.0).abs() < 1e-4, "{whole}");
    let part = coverage("spends token zebra", &mut text);
    assert!(part > 0.0 && part < 1.0, "{part}");
    assert_eq!(coverage("quokka", &mut text), 0.0);
}

/// A pasted traceback points at code: the definition a frame names (by
/// path suffix, line and, when given, function) rises to the top, even over
/// chunks that match more of the prose, while a frame of a file outside the
/// index points at nothing.
#[test]
fn traceback_frames_raise_the_definitions_they_point_at() {
    let ws = Workspace::empty();
    ws.write(
        "pkg/printing.py",
        "def render_table(rows):\n    \"\"\"Renders rows as a table of numbers.\"\"\"\n    return [cell(r) for r in rows]\n\n\ndef cell(row):\n    return ' | '.join(str(c) for c in row)\n",
    );
    ws.write(
        "pkg/numbers.py",
        "def parse_number(text):\n    \"\"\"Parses numbers in a table of rows: numbers, rows, numbers.\"\"\"\n    return float(text)\n",
    );
    let prose = "Printing a table of numbers fails for rows with numbers, rows of numbers\n";
    let off = SearchOptions {
        signals: Signals {
            frames: 0.0,
            ..Signals::default()
        },
        ..SearchOptions::default()
    };
    let names = |hits: Vec<(String, String, f32, Vec<&'static str>)>| -> Vec<String> {
        hits.into_iter().map(|h| h.1).collect()
    };
    // A bare location: line 7 of pkg/printing.py is inside `cell`.
    let query = format!("{prose}TypeError raised at /srv/app/pkg/printing.py:7:12");
    let plain = names(run(&ws, &query, &off));
    assert_ne!(plain[0], "cell", "{plain:?}");
    let hits = names(run(&ws, &query, &SearchOptions::default()));
    assert_eq!(hits[0], "cell", "{hits:?}");
    // A Python frame names the function; another machine's prefix is fine.
    let query = format!("{prose}  File \"C:\\work\\pkg\\printing.py\", line 7, in cell\n");
    let plain = names(run(&ws, &query, &off));
    assert_ne!(plain[0], "cell", "{plain:?}");
    let hits = names(run(&ws, &query, &SearchOptions::default()));
    assert_eq!(hits[0], "cell", "{hits:?}");
    // `other/printing.py` is not `pkg/printing.py`: nothing moves, though
    // `cell` would rise if the paths were taken for one file.
    let query = format!("{prose}  File \"/x/other/printing.py\", line 7, in cell\n");
    assert_eq!(
        names(run(&ws, &query, &SearchOptions::default())),
        names(run(&ws, &query, &off))
    );
}

/// Of a traceback's frames, the one where the error was raised (the last
/// in Python) rises most; the entry point that called it rises too, but
/// less. With every frame raised alike (`frame_decay` 1) the entry point,
/// which matches more of the prose, stays first.
#[test]
fn the_deepest_frame_rises_above_the_entry_point() {
    let ws = Workspace::empty();
    ws.write(
        "app/management.py",
        "def execute_command(argv):\n    \"\"\"Runs a management command: parse the command, load settings, run the command.\"\"\"\n    return run_command(argv)\n",
    );
    ws.write(
        "app/checks.py",
        "def check_field(field):\n    return field.name\n",
    );
    let query = "Running the check command fails: the management command crashes\n\
                 Traceback (most recent call last):\n  \
                 File \"/srv/app/management.py\", line 3, in execute_command\n  \
                 File \"/srv/app/checks.py\", line 2, in check_field\n\
                 AttributeError: 'NoneType' object has no attribute 'name'\n";
    let names = |options: &SearchOptions| -> Vec<String> {
        run(&ws, query, options).into_iter().map(|h| h.1).collect()
    };
    let hits = names(&SearchOptions::default());
    assert_eq!(hits[..2], ["check_field", "execute_command"], "{hits:?}");
    let alike = SearchOptions {
        signals: Signals {
            frame_decay: 1.0,
            ..Signals::default()
        },
        ..SearchOptions::default()
    };
    let hits = names(&alike);
    assert_eq!(hits[0], "execute_command", "{hits:?}");
}

#[test]
fn a_superseded_copy_ranks_below_the_code_it_copies() {
    let ws = Workspace::empty();
    // The same function in the current timer and in its alternative copy,
    // which a plain ranking puts first (its file name matches more).
    let body = "/// Advances the timer wheel to the next sleep deadline.\npub fn advance_wheel(now: u64) -> u64 { now + 1 }\n";
    ws.write("src/time/driver.rs", body);
    ws.write("src/time_alt/wheel.rs", body);
    let options = SearchOptions {
        limit: 2,
        ..SearchOptions::default()
    };
    let query = "how the timer wheel advances to the next sleep deadline";
    let paths = |options: &SearchOptions| -> Vec<String> {
        run(&ws, query, options).into_iter().map(|h| h.0).collect()
    };
    let snapshot = {
        let index = ws.open();
        index.refresh(&|_| {}).expect("index");
        index.snapshot()
    };
    assert_eq!(snapshot.layout.superseded(), ["src/time_alt"]);
    assert_eq!(
        paths(&options),
        ["src/time/driver.rs", "src/time_alt/wheel.rs"]
    );
    // Without the penalty the copy's file name wins.
    let mut kept = options.clone();
    kept.tune("superseded", "1").expect("knob");
    assert_eq!(
        paths(&kept),
        ["src/time_alt/wheel.rs", "src/time/driver.rs"]
    );
}

#[test]
fn a_quoted_phrase_comes_first_in_a_search_but_not_in_an_issue_text() {
    let ws = Workspace::empty();
    ws.write(
        "docs/errors.md",
        "# Errors\n\nThe message \"graph store mutex poisoned\" means a writer panicked.\n",
    );
    ws.write(
        "src/store.rs",
        "/// Looks a node up in the graph store, waiting on the store's mutex;\n\
         /// a poisoned mutex is recovered, so a lookup never panics.\n\
         pub fn graph_store_lookup(store: &GraphStore, key: u64) -> Option<Node> {\n    \
         let guard = store.mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner());\n    \
         guard.lookup(key)\n}\n",
    );
    let options = SearchOptions {
        limit: 5,
        ..SearchOptions::default()
    };
    let first = |query: &str, options: &SearchOptions| -> (String, Vec<&'static str>) {
        let hits = run(&ws, query, options);
        (hits[0].0.clone(), hits[0].3.clone())
    };
    // A search for the phrase: the chunk holding it comes first.
    let (path, sources) = first("\"graph store mutex poisoned\"", &options);
    assert_eq!(path, "docs/errors.md");
    assert!(sources.contains(&"phrase"), "{sources:?}");
    // An issue quoting it: the quote is marked where found, not pinned, so
    // the code the issue is about keeps its place.
    let issue = "graph_store_lookup panics when the graph store mutex is poisoned\n\
                 After a writer thread panicked, every lookup in the graph store \
                 fails and the log says \"graph store mutex poisoned\" for each \
                 graph_store_lookup call; the lookup should recover the mutex.";
    let hits = run(&ws, issue, &options);
    assert_eq!(hits[0].0, "src/store.rs", "{hits:?}");
    let quoted = hits
        .iter()
        .find(|h| h.0 == "docs/errors.md")
        .expect("listed");
    assert!(quoted.3.contains(&"phrase"), "{quoted:?}");
    // Pinned again when asked for.
    let mut pinned = options.clone();
    pinned.tune("long_phrases", "1").expect("knob");
    assert_eq!(first(issue, &pinned).0, "docs/errors.md");
}

#[test]
fn an_issue_its_tests_repeat_still_reaches_the_code_it_is_about() {
    // Sixty tests paste the issue's example; the code it is about holds
    // fewer of its words. Lexical-only, five hits: the branch lists 50.
    let ws = Workspace::empty();
    let mut tests = String::new();
    for i in 0..60 {
        tests.push_str(&format!(
            "def test_refund_rounding_{i}():\n    \
             invoice = Invoice(currency='EUR', total=Decimal('10.005'))\n    \
             refund = invoice.refund(partial=True)\n    \
             assert refund.total == Decimal('10.01')\n\n"
        ));
    }
    ws.write("tests/test_refunds.py", tests);
    ws.write(
        "billing/refunds.py",
        "def refund(invoice, partial=False):\n    \
         total = invoice.total / 2 if partial else invoice.total\n    \
         return Refund(invoice.currency, total.quantize(Decimal('0.01')))\n",
    );
    let issue = "Partial refund rounds the invoice total the wrong way\n\
                 invoice = Invoice(currency='EUR', total=Decimal('10.005'))\n\
                 refund = invoice.refund(partial=True)\n\
                 The refund total should be 10.01 but the partial refund gives 10.00.";
    let options = SearchOptions {
        limit: 5,
        ..SearchOptions::default()
    };
    let hits = run(&ws, issue, &options);
    assert_eq!(hits[0].0, "billing/refunds.py", "{hits:?}");
    // Unclassed, the tests fill the lexical list and the code is not in it.
    let mut unclassed = options.clone();
    unclassed.tune("classed_lexical", "0").expect("knob");
    let hits = run(&ws, issue, &unclassed);
    assert!(hits.iter().all(|h| h.0 != "billing/refunds.py"), "{hits:?}");
}

#[test]
fn a_file_whose_header_says_it_was_generated_sinks_below_hand_written_code() {
    let ws = Workspace::empty();
    let body = "def parse_expression(tokens):\n    \
                \"\"\"Parses an arithmetic expression from its tokens.\"\"\"\n    \
                return Expression(tokens)\n";
    ws.write("lib/parser.py", body);
    ws.write(
        "lib/_antlr/exprparser.py",
        format!("# *** GENERATED BY `setup.py antlr`, DO NOT EDIT BY HAND ***\n\n{body}"),
    );
    // The same text without the header: not generated.
    ws.write("lib/copy/parser.py", format!("# A copy.\n\n{body}"));
    let options = SearchOptions {
        limit: 5,
        ..SearchOptions::default()
    };
    let hits = run(&ws, "parse an arithmetic expression", &options);
    let place = |path: &str| hits.iter().position(|h| h.0 == path).expect(path);
    assert!(
        place("lib/_antlr/exprparser.py") > place("lib/parser.py")
            && place("lib/_antlr/exprparser.py") > place("lib/copy/parser.py"),
        "{hits:?}"
    );
    // Its penalty is the generated one: off, it ranks as the others do.
    let mut off = options.clone();
    off.tune("generated", "1").expect("knob");
    let hits = run(&ws, "parse an arithmetic expression", &off);
    let score = |path: &str| hits.iter().find(|h| h.0 == path).expect(path).2;
    assert!(
        score("lib/_antlr/exprparser.py") >= score("lib/copy/parser.py") * 0.99,
        "{hits:?}"
    );
}

#[test]
fn a_pasted_text_is_ranked_by_score_and_a_typed_question_spread_over_files() {
    let ws = crowded_workspace();
    let options = SearchOptions {
        limit: 5,
        ..SearchOptions::default()
    };
    let files = |query: &str| -> Vec<String> {
        run(&ws, query, &options)
            .into_iter()
            .take(3)
            .map(|h| h.0)
            .collect()
    };
    let words = "refill the token bucket token by token then spend one token from the bucket";
    // Typed on one line: the head spreads over files.
    let typed = files(words);
    assert!(typed.iter().any(|p| p != "src/crowded.rs"), "{typed:?}");
    // Pasted on two lines, the same words: by score, the refills first.
    let pasted = files(&words.replacen(" then ", "\n", 1));
    assert_eq!(pasted, ["src/crowded.rs"; 3], "{pasted:?}");
}

/// A Ruby module's entry file beside its folder of parts, and a file
/// outside the module that mentions it more.
fn module_workspace() -> Workspace {
    let ws = Workspace::empty();
    ws.write(
        "lib/generators.rb",
        "module Generators\n  def self.lookup(namespaces)\n    namespaces.each { |n| require_path(n) }\n  end\n\n  def self.invoke(namespace, args)\n    klass = find_by_namespace(namespace)\n    klass.start(args)\n  end\nend\n",
    );
    for part in ["app", "model", "controller"] {
        ws.write(
            &format!("lib/generators/{part}_generator.rb"),
            format!(
                "class {}Generator < Base\n  def create_{part}_files\n    template \"{part}.rb\"\n  end\nend\n",
                part[..1].to_uppercase() + &part[1..]
            ),
        );
    }
    ws.write(
        "lib/engine.rb",
        "class Engine\n  # Loads the generators an engine registers.\n  def load_generators(app)\n    registered_generators.each { |g| g.call(app) }\n  end\nend\n",
    );
    ws
}

#[test]
fn a_question_about_a_module_finds_its_entry_file_and_one_about_a_part_the_part() {
    let ws = module_workspace();
    let options = SearchOptions::default();
    let files = |query: &str, options: &SearchOptions| -> Vec<String> {
        let mut files: Vec<String> = Vec::new();
        for hit in run(&ws, query, options) {
            if !files.contains(&hit.0) {
                files.push(hit.0);
            }
        }
        files
    };
    let about_module = "how generators are discovered and registered";
    let hits = files(about_module, &options);
    assert_eq!(hits[0], "lib/generators.rb", "{hits:?}");
    // Without the signal the parts and the engine's mention come first.
    let mut off = options.clone();
    off.tune("module_file", "0").expect("knob");
    let hits = files(about_module, &off);
    assert_ne!(hits[0], "lib/generators.rb", "{hits:?}");
    // A question naming one part asks for that part.
    let hits = files("how the model generator creates model files", &options);
    assert_eq!(hits[0], "lib/generators/model_generator.rb", "{hits:?}");
}

/// A C# type split over files named after it: `Mapper.cs` holds the class
/// and its main API, each `Mapper.<Concern>.cs` one concern.
fn split_type_workspace() -> Workspace {
    let ws = Workspace::empty();
    ws.write(
        "src/Mapper.cs",
        "namespace Orm {\n    public static partial class Mapper {\n        /// Runs the query and maps each row's columns to the properties of T.\n        public static IEnumerable<T> Query<T>(IDbConnection cnn, string sql) {\n            using var reader = cnn.ExecuteReader(sql);\n            while (reader.Read()) yield return Materialize<T>(reader);\n        }\n    }\n}\n",
    );
    ws.write(
        "src/Mapper.Columns.cs",
        "namespace Orm {\n    public static partial class Mapper {\n        /// Finds the property a column maps to, by name.\n        public static PropertyInfo ColumnProperty(Type type, string column) {\n            return type.GetProperty(column, BindingFlags.IgnoreCase);\n        }\n    }\n}\n",
    );
    ws
}

#[test]
fn a_question_about_a_split_type_finds_its_home_file() {
    let ws = split_type_workspace();
    let options = SearchOptions::default();
    let query = "how rows are mapped to object properties by column name";
    let first = |options: &SearchOptions| run(&ws, query, options)[0].0.clone();
    assert_eq!(first(&options), "src/Mapper.cs");
    // Without the signal the part whose one method repeats the words wins.
    let mut off = options.clone();
    off.tune("home_file", "1").expect("knob");
    assert_eq!(first(&off), "src/Mapper.Columns.cs");
}
