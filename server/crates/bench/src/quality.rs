//! `quarry-bench --quality`: search quality on real code nobody here wrote.
//!
//! The corpus is five projects at pinned versions from the package
//! registries (scripts/fetch-quality-corpus.sh). The queries are committed in
//! `bench/quality/`: `queries.tsv` is generated from the corpus by
//! `generate` (concept, identifier and phrase queries, sampled
//! deterministically), `questions.tsv` holds hand-written natural-language
//! questions. Every query names its answers as `path#qualified name`.
//!
//! A run copies the corpus, deleting the doc comment of every concept
//! query's answer (so the query, that comment's first sentence, is not a
//! word match), indexes the copy with every chunk embedded, then runs each
//! query under a list of configurations, from single branches up to the full
//! ranking stack, and prints Recall@1/5/10, MRR@10 and NDCG@10 per class and
//! language. Recall@k here is success at k: whether any answer is in the top
//! k (a bare identifier may name several definitions, any of which answers).
//! Never: part of the test suite's pass/fail decisions; it prints numbers.

use quarry_engine::chunk::{chunk_file, ChunkKind, Language};
use quarry_engine::dense::{DenseConfig, DenseEngine, DenseTier};
use quarry_engine::index::{Index, IndexConfig};
use quarry_engine::rank::classes::{path_class, ContentPenalties, PathPenalties};
use quarry_engine::rank::signals::Signals;
use quarry_engine::rank::FuseConfig;
use quarry_engine::search::{search_with, Branches, DiskText, SearchOptions};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

/// A query class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// The first sentence of a doc comment removed from the indexed copy.
    Concept,
    /// A bare or qualified name.
    Identifier,
    /// A quoted distinctive string literal.
    Phrase,
    /// A hand-written question.
    Nl,
}

impl Class {
    pub const ALL: [Class; 4] = [Class::Concept, Class::Identifier, Class::Phrase, Class::Nl];

    pub fn name(self) -> &'static str {
        match self {
            Class::Concept => "concept",
            Class::Identifier => "identifier",
            Class::Phrase => "phrase",
            Class::Nl => "nl",
        }
    }

    fn parse(name: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// One benchmark query and its answers (`path#qualified name`).
#[derive(Clone, Debug, PartialEq)]
pub struct QualityQuery {
    pub class: Class,
    pub language: String,
    pub query: String,
    pub expected: Vec<String>,
}

const HEADER: &str = "class\tlanguage\tquery\texpected";

/// Reads a query file (the header line, then tab-separated rows; `#` lines
/// are comments).
pub fn read_queries(path: &Path) -> io::Result<Vec<QualityQuery>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    let mut queries = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if n == 0 || line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why: &str| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}:{}: {why}", path.display(), n + 1),
            )
        };
        let cols: Vec<&str> = line.split('\t').collect();
        let [class, language, query, expected] = cols[..] else {
            return Err(bad("expected 4 tab-separated columns"));
        };
        let class = Class::parse(class).ok_or_else(|| bad("unknown class"))?;
        let expected: Vec<String> = expected
            .split(" | ")
            .map(|e| e.trim().to_string())
            .filter(|e| e.contains('#'))
            .collect();
        if expected.is_empty() {
            return Err(bad("no expected answer (path#qualified name)"));
        }
        queries.push(QualityQuery {
            class,
            language: language.to_string(),
            query: query.to_string(),
            expected,
        });
    }
    Ok(queries)
}

/// Writes queries in the format `read_queries` reads.
pub fn write_queries(path: &Path, queries: &[QualityQuery]) -> io::Result<()> {
    let mut out = String::new();
    out.push_str(HEADER);
    out.push('\n');
    for q in queries {
        let _ = writeln!(
            out,
            "{}\t{}\t{}\t{}",
            q.class.name(),
            q.language,
            q.query,
            q.expected.join(" | ")
        );
    }
    std::fs::write(path, out)
}

/// The benchmark's language name for a file's language, if it takes part.
fn bench_language(language: Language) -> Option<&'static str> {
    match language {
        Language::Rust => Some("rust"),
        Language::Python => Some("python"),
        Language::JavaScript => Some("javascript"),
        Language::TypeScript | Language::Tsx => Some("typescript"),
        _ => None,
    }
}

/// One definition of the corpus.
struct Def {
    path: String,
    language: &'static str,
    name: String,
    qualified_name: String,
    kind: ChunkKind,
    doc: String,
    byte_start: usize,
    byte_end: usize,
}

impl Def {
    fn answer(&self) -> String {
        format!("{}#{}", self.path, self.qualified_name)
    }
}

/// Every file of the corpus in a benchmark language, with its text.
fn corpus_files(corpus: &Path) -> Vec<(String, Language, String)> {
    let mut files: Vec<(String, Language, String)> =
        quarry_engine::walk::walk(corpus, None, &Default::default())
            .files
            .into_iter()
            .filter(|f| bench_language(f.language).is_some())
            .filter_map(|f| {
                let text = std::fs::read_to_string(&f.abs_path).ok()?;
                Some((f.rel_path, f.language, text))
            })
            .collect();
    files.sort_by(|a, b| a.0.cmp(&b.0));
    files
}

/// Deterministic sample order: by a hash of the key.
fn sample_key(key: &str) -> [u8; 32] {
    *blake3::hash(format!("quarry-quality/1:{key}").as_bytes()).as_bytes()
}

/// Queries per language: concept, bare identifier, qualified identifier,
/// phrase.
const PER_LANGUAGE: [(Class, usize); 4] = [
    (Class::Concept, 14),
    (Class::Identifier, 7),
    (Class::Identifier, 5),
    (Class::Phrase, 10),
];

/// Generates the concept, identifier and phrase queries from the pristine
/// corpus.
pub fn generate(corpus: &Path) -> io::Result<Vec<QualityQuery>> {
    let files = corpus_files(corpus);
    if files.is_empty() {
        return Err(io::Error::other(format!(
            "no source files under {} (run scripts/fetch-quality-corpus.sh)",
            corpus.display()
        )));
    }
    let mut defs: Vec<Def> = Vec::new();
    for (path, language, text) in &files {
        let Some(lang) = bench_language(*language) else {
            continue;
        };
        for chunk in chunk_file(path, text, *language) {
            if !chunk.kind.is_definition() {
                continue;
            }
            defs.push(Def {
                path: path.clone(),
                language: lang,
                name: chunk.name,
                qualified_name: chunk.qualified_name,
                kind: chunk.kind,
                doc: chunk.doc,
                byte_start: chunk.byte_start as usize,
                byte_end: chunk.byte_end as usize,
            });
        }
    }
    let mut by_name: HashMap<&str, BTreeSet<String>> = HashMap::new();
    let mut by_qualified: HashMap<&str, BTreeSet<String>> = HashMap::new();
    for d in &defs {
        by_name.entry(&d.name).or_default().insert(d.answer());
        by_qualified
            .entry(&d.qualified_name)
            .or_default()
            .insert(d.answer());
    }
    let texts: HashMap<&str, &str> = files
        .iter()
        .map(|(p, _, t)| (p.as_str(), t.as_str()))
        .collect();
    let languages: Vec<&str> = ["rust", "python", "typescript", "javascript"].to_vec();
    let mut out = Vec::new();
    for language in languages {
        let own: Vec<&Def> = defs
            .iter()
            .filter(|d| d.language == language && !is_test_code(d))
            .collect();
        // Concept: the first sentence of a doc comment that can be removed.
        let mut sentences: HashMap<String, usize> = HashMap::new();
        for d in &own {
            *sentences.entry(first_sentence(&d.doc)).or_default() += 1;
        }
        let mut concept: Vec<(&Def, String)> = own
            .iter()
            .filter(|d| is_concept_kind(d.kind))
            .filter_map(|d| {
                let sentence = first_sentence(&d.doc);
                let words = sentence.split_whitespace().count();
                ((6..=40).contains(&words) && sentences.get(&sentence) == Some(&1))
                    .then_some((*d, sentence))
            })
            .collect();
        concept.sort_by_key(|(d, _)| sample_key(&d.answer()));
        let mut taken = 0;
        for (d, sentence) in concept {
            if taken == PER_LANGUAGE[0].1 {
                break;
            }
            let Some(text) = texts.get(d.path.as_str()) else {
                continue;
            };
            let language = quarry_engine::chunk::detect_language(Path::new(&d.path));
            let Some(language) = language else { continue };
            if strip_docs(&d.path, text, language, &[d.qualified_name.as_str()]).is_none() {
                continue;
            }
            out.push(QualityQuery {
                class: Class::Concept,
                language: d.language.to_string(),
                query: sentence.replace(['\t', '"'], " "),
                expected: vec![d.answer()],
            });
            taken += 1;
        }
        // Identifiers: distinct names of a few definitions at most.
        let mut bare: Vec<&str> = own
            .iter()
            .map(|d| d.name.as_str())
            .filter(|n| n.len() >= 4 && is_identifier(n))
            .filter(|n| by_name.get(n).is_some_and(|s| s.len() <= 3))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        bare.sort_by_key(|n| sample_key(&format!("{language}:{n}")));
        for name in bare.into_iter().take(PER_LANGUAGE[1].1) {
            out.push(QualityQuery {
                class: Class::Identifier,
                language: language.to_string(),
                query: name.to_string(),
                expected: by_name[name].iter().cloned().collect(),
            });
        }
        let mut qualified: Vec<&str> = own
            .iter()
            .filter(|d| d.qualified_name != d.name)
            // `S::into_stream` (a blanket impl over a type parameter) is
            // not something anyone types.
            .filter(|d| {
                let container = &d.qualified_name[..d.qualified_name.len() - d.name.len()];
                container.trim_end_matches([':', '.', '#']).len() > 2
            })
            .map(|d| d.qualified_name.as_str())
            .filter(|q| q.len() <= 80 && !q.contains(char::is_whitespace))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        qualified.sort_by_key(|q| sample_key(&format!("{language}:{q}")));
        for q in qualified.into_iter().take(PER_LANGUAGE[2].1) {
            out.push(QualityQuery {
                class: Class::Identifier,
                language: language.to_string(),
                query: q.to_string(),
                expected: by_qualified[q].iter().cloned().collect(),
            });
        }
        // Phrases: string literals found once in the whole corpus.
        let mut phrases: Vec<(String, String)> = Vec::new();
        for (path, file_language, text) in &files {
            if bench_language(*file_language) != Some(language) || path_class(path).is_some() {
                continue;
            }
            for (offset, literal) in string_literals(text, *file_language != Language::Rust) {
                let occurrences: usize = files
                    .iter()
                    .map(|(_, _, t)| t.matches(literal).count())
                    .sum();
                if occurrences != 1 {
                    continue;
                }
                // The innermost definition holding the literal answers it.
                let holder = defs
                    .iter()
                    .filter(|d| &d.path == path && d.byte_start <= offset && offset < d.byte_end)
                    .min_by_key(|d| d.byte_end - d.byte_start);
                if let Some(d) = holder {
                    phrases.push((literal.to_string(), d.answer()));
                }
            }
        }
        phrases.sort_by_key(|(literal, _)| sample_key(literal));
        for (literal, answer) in phrases.into_iter().take(PER_LANGUAGE[3].1) {
            out.push(QualityQuery {
                class: Class::Phrase,
                language: language.to_string(),
                query: format!("\"{literal}\""),
                expected: vec![answer],
            });
        }
    }
    Ok(out)
}

/// Test files, and Rust test modules inside source files.
fn is_test_code(d: &Def) -> bool {
    path_class(&d.path).is_some()
        || d.qualified_name.starts_with("tests::")
        || d.qualified_name.contains("::tests::")
}

/// A definition a doc comment describes: one with a body other than an
/// `impl` block or a macro, or a type alias or constant.
fn is_concept_kind(kind: ChunkKind) -> bool {
    (kind.has_body() && !matches!(kind, ChunkKind::Impl | ChunkKind::Macro))
        || matches!(kind, ChunkKind::TypeAlias | ChunkKind::Constant)
}

fn is_identifier(name: &str) -> bool {
    name.chars()
        .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        && name.chars().any(char::is_alphabetic)
}

/// The doc's first sentence: up to the first `. ` or blank line, on one
/// line, with Markdown code ticks and link brackets dropped.
fn first_sentence(doc: &str) -> String {
    let para = doc.split("\n\n").next().unwrap_or("");
    let flat = para.split_whitespace().collect::<Vec<_>>().join(" ");
    let end = flat.find(". ").map(|i| i + 1).unwrap_or(flat.len());
    flat[..end]
        .chars()
        .filter(|c| !matches!(c, '`' | '[' | ']'))
        .collect::<String>()
        .trim()
        .to_string()
}

/// Double-quoted (and, with `single_quotes`, single-quoted) literals on one line, 15 to 80 bytes, of
/// at least three words, without escapes or interpolation; with their byte
/// offsets.
fn string_literals(text: &str, single_quotes: bool) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let q = bytes[i];
        // A quote right after a letter is an apostrophe (`you're`); one
        // after another quote opens a docstring, which is a doc, not a
        // literal.
        let after_word = i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == q);
        if after_word || !(q == b'"' || (q == b'\'' && single_quotes)) {
            i += 1;
            continue;
        }
        let start = i + 1;
        let mut j = start;
        while j < bytes.len() && bytes[j] != q && bytes[j] != b'\n' && bytes[j] != b'\\' {
            j += 1;
        }
        if j < bytes.len() && bytes[j] == q {
            let literal = &text[start..j];
            let words = literal.split_whitespace().count();
            if (15..=80).contains(&literal.len())
                && words >= 3
                && !literal.contains(['{', '}', '%', '$', '"', '\'', '`', '<', '>'])
                && literal.chars().filter(|c| c.is_alphabetic()).count() >= 10
            {
                out.push((start, literal));
            }
            i = j + 1;
        } else {
            i = j.max(i + 1);
        }
    }
    out
}

/// `text` with the doc comments of the definitions named `targets` removed
/// (comment lines before the definition; a Python docstring becomes
/// `pass`), or `None` if a target is missing or keeps a doc afterwards.
pub fn strip_docs(path: &str, text: &str, language: Language, targets: &[&str]) -> Option<String> {
    let chunks = chunk_file(path, text, language);
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    // (first line, last line, replacement), 0-based inclusive.
    let mut edits: Vec<(usize, usize, Option<String>)> = Vec::new();
    for target in targets {
        let chunk = chunks
            .iter()
            .find(|c| c.qualified_name == *target && !c.doc.is_empty())?;
        let first = chunk.start_line as usize - 1;
        let last = (chunk.end_line as usize).min(lines.len()) - 1;
        if language == Language::Python {
            let open = (first + 1..=last).find(|&l| {
                let t = lines[l]
                    .trim_start()
                    .trim_start_matches(['r', 'u', 'R', 'U']);
                t.starts_with("\"\"\"") || t.starts_with("'''")
            })?;
            let t = lines[open]
                .trim_start()
                .trim_start_matches(['r', 'u', 'R', 'U']);
            let quote = &t[..3];
            let close = if t[3..].contains(quote) {
                open
            } else {
                (open + 1..=last).find(|&l| lines[l].contains(quote))?
            };
            let indent: String = lines[open]
                .chars()
                .take_while(|c| c.is_whitespace())
                .collect();
            edits.push((open, close, Some(format!("{indent}pass\n"))));
        } else {
            let is_comment = |l: &str| {
                let t = l.trim_start();
                t.starts_with("//") || t.starts_with("/*") || t.starts_with('*')
            };
            let is_attribute = |l: &str| {
                let t = l.trim_start();
                t.starts_with("#[") || t.starts_with('@') || t.is_empty()
            };
            let mut l = first;
            while l <= last && (is_comment(lines[l]) || is_attribute(lines[l])) {
                if is_comment(lines[l]) {
                    edits.push((l, l, None));
                }
                l += 1;
            }
        }
    }
    edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut lines: Vec<String> = lines.into_iter().map(str::to_string).collect();
    for (first, last, replacement) in edits {
        lines.splice(first..=last, replacement);
    }
    let stripped: String = lines.concat();
    let after = chunk_file(path, &stripped, language);
    let all_gone = targets.iter().all(|t| {
        let mut same = after.iter().filter(|c| c.qualified_name == *t).peekable();
        same.peek().is_some() && same.all(|c| c.doc.is_empty())
    });
    all_gone.then_some(stripped)
}

/// One configuration of the ablation table.
pub struct Config {
    pub label: String,
    pub options: SearchOptions,
}

/// The ablation configurations, from single branches to the full stack.
pub fn configs() -> Vec<Config> {
    let plain = SearchOptions {
        per_file_cap: 0,
        file_saturation: 0.0,
        exact_priority: false,
        signals: Signals::off(),
        fuse: FuseConfig {
            lexical_confidence: 0.0,
            long_dense: 1.0,
            missing: 0.0,
            ..FuseConfig::default()
        },
        ..SearchOptions::default()
    };
    let only = |lexical: bool, dense: bool| SearchOptions {
        branches: Branches {
            lexical,
            dense,
            symbol: false,
        },
        ..plain.clone()
    };
    let with_exact = SearchOptions {
        exact_priority: true,
        ..plain.clone()
    };
    let with_cap = SearchOptions {
        per_file_cap: 2,
        file_saturation: 0.0,
        ..with_exact.clone()
    };
    let with_saturation = SearchOptions {
        per_file_cap: 0,
        file_saturation: 0.85,
        ..with_exact.clone()
    };
    let signal = |f: &dyn Fn(&mut Signals)| {
        let mut options = with_saturation.clone();
        f(&mut options.signals);
        options
    };
    let fusion = |f: &dyn Fn(&mut FuseConfig)| {
        let mut options = with_saturation.clone();
        f(&mut options.fuse);
        options
    };
    let defaults = Signals::default();
    let fuse_defaults = FuseConfig::default();
    let row = |label: &str, options: SearchOptions| Config {
        label: label.into(),
        options,
    };
    vec![
        row("lexical only", only(true, false)),
        row("dense only", only(false, true)),
        row("RRF (lexical + dense + symbol)", plain.clone()),
        row("RRF + exact priority", with_exact),
        row("+ per-file cap 2", with_cap),
        row(
            "+ per-file saturation 0.85 (instead)",
            with_saturation.clone(),
        ),
        row("+ definition over mention", signal(&|s| s.definition = 1.5)),
        row(
            "+ symbol-query lexical weight",
            signal(&|s| s.symbol_query_weight = 2.0),
        ),
        row(
            "+ prose dense weight 2",
            signal(&|s| s.prose_dense_weight = 2.0),
        ),
        row(
            "+ path penalties (tests, examples...)",
            signal(&|s| s.penalties = PathPenalties::default()),
        ),
        row(
            "+ docs/config classes",
            signal(&|s| s.content = ContentPenalties::default()),
        ),
        row("+ file coherence 0.2", signal(&|s| s.file_coherence = 0.2)),
        row("+ path match 1.0", signal(&|s| s.path_match = 1.0)),
        row("+ identifier stems", signal(&|s| s.stems = true)),
        row("+ file evidence 0.1", signal(&|s| s.file_evidence = 0.1)),
        row(
            &format!(
                "+ lexical confidence {} (dense weight)",
                fuse_defaults.lexical_confidence
            ),
            fusion(&|f| f.lexical_confidence = fuse_defaults.lexical_confidence),
        ),
        row(
            &format!("+ long-query dense weight {}", fuse_defaults.long_dense),
            fusion(&|f| f.long_dense = fuse_defaults.long_dense),
        ),
        row(
            &format!(
                "+ left out of a cut list = rank {} x depth",
                fuse_defaults.missing
            ),
            fusion(&|f| f.missing = fuse_defaults.missing),
        ),
        Config {
            label: format!("{FULL_STACK}{})", describe(&defaults)),
            options: SearchOptions::default(),
        },
        row(
            "full stack, diversity over every place",
            SearchOptions {
                diverse_head: usize::MAX,
                ..SearchOptions::default()
            },
        ),
        row(
            "full stack, lexical only",
            SearchOptions {
                branches: Branches {
                    lexical: true,
                    dense: false,
                    symbol: true,
                },
                ..SearchOptions::default()
            },
        ),
    ]
}

/// How the full stack's label starts.
const FULL_STACK: &str = "full stack (defaults: ";

fn describe(s: &Signals) -> String {
    let mut on = Vec::new();
    if s.definition != 1.0 {
        on.push("definition");
    }
    if s.symbol_query_weight != 1.0 {
        on.push("symbol weight");
    }
    if s.prose_dense_weight != 1.0 {
        on.push("prose dense weight");
    }
    if s.penalties != PathPenalties::off() {
        on.push("penalties");
    }
    if s.content != ContentPenalties::off() {
        on.push("docs/config");
    }
    if s.file_coherence != 0.0 {
        on.push("coherence");
    }
    if s.path_match != 0.0 {
        on.push("path match");
    }
    if s.stems {
        on.push("stems");
    }
    if s.file_evidence != 0.0 {
        on.push("file evidence");
    }
    if s.classed_lexical {
        on.push("penalties in a long query's lexical list");
    }
    on.push("saturation over the first places");
    if FuseConfig::default().lexical_confidence != 0.0 {
        on.push("lexical confidence");
    }
    if FuseConfig::default().long_dense != 1.0 {
        on.push("long-query dense weight");
    }
    if FuseConfig::default().missing != 0.0 {
        on.push("rank past the cut");
    }
    on.join(", ")
}

/// Sums of the metrics over a group of queries.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Metrics {
    pub queries: usize,
    pub recall_1: f64,
    pub recall_5: f64,
    pub recall_10: f64,
    pub mrr_10: f64,
    pub ndcg_10: f64,
}

impl Metrics {
    fn add(&mut self, ranked: &[String], expected: &BTreeSet<String>) {
        self.queries += 1;
        // Distinct answers in rank order (overloads share a name).
        let mut seen = BTreeSet::new();
        let mut dcg = 0.0;
        let mut first: Option<usize> = None;
        for (i, id) in ranked.iter().take(10).enumerate() {
            if expected.contains(id) && seen.insert(id.clone()) {
                dcg += 1.0 / ((i + 2) as f64).log2();
                first.get_or_insert(i + 1);
            }
        }
        let ideal: f64 = (0..expected.len().min(10))
            .map(|i| 1.0 / ((i + 2) as f64).log2())
            .sum();
        if let Some(rank) = first {
            self.recall_1 += f64::from(u8::from(rank <= 1));
            self.recall_5 += f64::from(u8::from(rank <= 5));
            self.recall_10 += 1.0;
            self.mrr_10 += 1.0 / rank as f64;
        }
        if ideal > 0.0 {
            self.ndcg_10 += dcg / ideal;
        }
    }

    fn mean(&self) -> Metrics {
        let n = self.queries.max(1) as f64;
        Metrics {
            queries: self.queries,
            recall_1: self.recall_1 / n,
            recall_5: self.recall_5 / n,
            recall_10: self.recall_10 / n,
            mrr_10: self.mrr_10 / n,
            ndcg_10: self.ndcg_10 / n,
        }
    }
}

/// Metrics accumulated per query: overall, per class, per language.
#[derive(Default)]
struct Scores {
    overall: Metrics,
    by_class: BTreeMap<String, Metrics>,
    by_language: BTreeMap<String, Metrics>,
}

impl Scores {
    fn add(&mut self, q: &QualityQuery, ranked: &[String], expected: &BTreeSet<String>) {
        self.overall.add(ranked, expected);
        self.by_class
            .entry(q.class.name().to_string())
            .or_default()
            .add(ranked, expected);
        self.by_language
            .entry(q.language.clone())
            .or_default()
            .add(ranked, expected);
    }

    fn report(self, label: String) -> ConfigReport {
        ConfigReport {
            label,
            overall: self.overall.mean(),
            by_class: self
                .by_class
                .into_iter()
                .map(|(k, m)| (k, m.mean()))
                .collect(),
            by_language: self
                .by_language
                .into_iter()
                .map(|(k, m)| (k, m.mean()))
                .collect(),
        }
    }
}

/// The results of one configuration: overall, per class, per language.
#[derive(Debug, Serialize)]
pub struct ConfigReport {
    pub label: String,
    pub overall: Metrics,
    pub by_class: BTreeMap<String, Metrics>,
    pub by_language: BTreeMap<String, Metrics>,
}

#[derive(Debug, Serialize)]
pub struct QualityReport {
    pub corpus: String,
    pub chunks: u64,
    pub embedded: u64,
    pub queries: usize,
    /// Queries left out because an answer is not in the index, with why.
    pub unresolved: Vec<String>,
    pub configs: Vec<ConfigReport>,
    /// Full-stack misses: query, expected, what came first.
    pub misses: Vec<String>,
}

/// What to run.
pub struct QualityOptions {
    pub corpus: PathBuf,
    pub query_files: Vec<PathBuf>,
    pub model: Option<PathBuf>,
    pub token_budget: usize,
    /// The dense branch's vectors: the transformer's or the static tier's.
    pub tier: DenseTier,
    /// Only configurations whose label contains this.
    pub only: Option<String>,
    /// Ranking knobs (`SearchOptions::tune`) set in every configuration.
    pub rank: Vec<(String, String)>,
    /// A hub (PostgreSQL URL): the corpus is also pushed there as one
    /// repository, `quality`, and the full stack scored through it.
    pub hub: Option<String>,
}

/// Builds the doc-stripped copy, indexes and embeds it, and runs every
/// configuration over every query.
pub fn run(options: &QualityOptions) -> io::Result<QualityReport> {
    let mut queries = Vec::new();
    for file in &options.query_files {
        queries.extend(read_queries(file)?);
    }
    let work = tempfile::tempdir()?;
    let root = work.path().join("corpus");
    super::copy_tree(&options.corpus, &root)?;
    // Concept answers lose their doc comments in the copy.
    let mut targets: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for q in queries.iter().filter(|q| q.class == Class::Concept) {
        for answer in &q.expected {
            if let Some((path, name)) = answer.split_once('#') {
                targets.entry(path).or_default().push(name);
            }
        }
    }
    let mut unresolved = Vec::new();
    for (path, names) in &targets {
        let file = root.join(path);
        let language = quarry_engine::chunk::detect_language(Path::new(path));
        let stripped = std::fs::read_to_string(&file)
            .ok()
            .zip(language)
            .and_then(|(text, language)| strip_docs(path, &text, language, names));
        match stripped {
            Some(text) => std::fs::write(&file, text)?,
            None => unresolved.push(format!("{path}: could not remove the docs of {names:?}")),
        }
    }

    let to_io = |e: quarry_engine::index::IndexError| io::Error::other(e.to_string());
    let index = Index::open(IndexConfig {
        cache_dir: Some(work.path().join("cache")),
        ..IndexConfig::new(&root)
    })
    .map_err(to_io)?;
    index.refresh(&|_| {}).map_err(to_io)?;
    let engine = DenseEngine::load(DenseConfig {
        model_dir: options.model.clone(),
        token_budget: options.token_budget,
        tier: options.tier,
        ..DenseConfig::default()
    });
    if let Some(reason) = engine.unavailable_reason() {
        return Err(io::Error::other(format!("no embedding model: {reason}")));
    }
    index.attach_dense(&engine).map_err(to_io)?;
    index
        .embed_pending(&engine, &[], None, &|_| {})
        .map_err(to_io)?;
    let snapshot = index.snapshot();
    let (embedded, chunks) = snapshot.coverage_of(engine.tier());

    let known: BTreeSet<String> = snapshot
        .live_chunks()
        .map(|(segment, chunk)| format!("{}#{}", segment.path_of(chunk), chunk.qualified_name))
        .collect();
    queries.retain(|q| {
        let missing: Vec<&String> = q.expected.iter().filter(|e| !known.contains(*e)).collect();
        if missing.len() == q.expected.len() {
            unresolved.push(format!(
                "{:?}: no answer in the index: {missing:?}",
                q.query
            ));
            return false;
        }
        true
    });

    let mut reports = Vec::new();
    let mut misses = Vec::new();
    let mut text = DiskText::of(&index);
    let configs = configs();
    // The full stack always runs and its misses are listed (rows after it
    // are its variants).
    let full = configs
        .iter()
        .position(|c| c.label.starts_with(FULL_STACK))
        .unwrap_or(configs.len() - 1);
    // The configurations also served through a hub: the full stack, and
    // the full stack without the dense branch.
    let mut through: Vec<(String, SearchOptions)> = Vec::new();
    for (n, mut config) in configs.into_iter().enumerate() {
        if let Some(only) = &options.only {
            if n != full && !config.label.contains(only.as_str()) {
                continue;
            }
        }
        for (key, value) in &options.rank {
            config
                .options
                .tune(key, value)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        }
        if config.label.starts_with(FULL_STACK) || config.label == "full stack, lexical only" {
            through.push((config.label.clone(), config.options.clone()));
        }
        let mut scores = Scores::default();
        for q in &queries {
            let results = search_with(
                &snapshot,
                &q.query,
                &config.options,
                &mut text,
                Some(&engine),
            );
            let ranked: Vec<String> = results
                .hits
                .iter()
                .map(|h| format!("{}#{}", h.path, answer_of(&snapshot, h)))
                .collect();
            let expected: BTreeSet<String> = q.expected.iter().cloned().collect();
            scores.add(q, &ranked, &expected);
            if n == full && !ranked.iter().take(10).any(|r| expected.contains(r)) {
                misses.push(format!(
                    "[{} {}] {} -> expected {} ; got {}",
                    q.class.name(),
                    q.language,
                    q.query,
                    q.expected.join(" | "),
                    ranked.first().map_or("nothing", String::as_str)
                ));
            }
        }
        reports.push(scores.report(config.label));
    }
    if let Some(url) = &options.hub {
        reports.extend(through_hub(
            url, &index, &engine, &queries, &snapshot, &through,
        )?);
    }
    Ok(QualityReport {
        corpus: options.corpus.display().to_string(),
        chunks,
        embedded,
        queries: queries.len(),
        unresolved,
        configs: reports,
        misses,
    })
}

impl std::fmt::Display for QualityReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "quality corpus {} ({} chunks, {} embedded), {} queries",
            self.corpus, self.chunks, self.embedded, self.queries
        )?;
        for u in &self.unresolved {
            writeln!(f, "  left out: {u}")?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "| configuration | R@1 | R@5 | R@10 | MRR@10 | NDCG@10 | NDCG concept | NDCG identifier | NDCG phrase | NDCG nl |"
        )?;
        writeln!(
            f,
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
        )?;
        for c in &self.configs {
            let class = |name: &str| c.by_class.get(name).map_or(0.0, |m| m.ndcg_10);
            let o = &c.overall;
            writeln!(
                f,
                "| {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
                c.label,
                o.recall_1,
                o.recall_5,
                o.recall_10,
                o.mrr_10,
                o.ndcg_10,
                class("concept"),
                class("identifier"),
                class("phrase"),
                class("nl")
            )?;
        }
        for c in &self.configs {
            writeln!(f)?;
            writeln!(f, "{}", c.label)?;
            writeln!(f, "| group | n | R@1 | R@5 | R@10 | MRR@10 | NDCG@10 |")?;
            writeln!(f, "| --- | --- | --- | --- | --- | --- | --- |")?;
            let groups = c.by_class.iter().chain(c.by_language.iter());
            for (name, m) in groups.chain(std::iter::once((&"all".to_string(), &c.overall))) {
                writeln!(
                    f,
                    "| {name} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
                    m.queries, m.recall_1, m.recall_5, m.recall_10, m.mrr_10, m.ndcg_10
                )?;
            }
        }
        if !self.misses.is_empty() {
            writeln!(f)?;
            writeln!(f, "full-stack misses (no answer in the top 10):")?;
            for m in &self.misses {
                writeln!(f, "  {m}")?;
            }
        }
        Ok(())
    }
}

/// `configs` served through a hub: the indexed copy pushed as one
/// repository, `quality` (incrementally: a second run writes nothing), and
/// every query searched there with the same options and model, scored as
/// the local configurations are.
fn through_hub(
    url: &str,
    index: &Index,
    engine: &DenseEngine,
    queries: &[QualityQuery],
    snapshot: &quarry_engine::index::Snapshot,
    configs: &[(String, SearchOptions)],
) -> io::Result<Vec<ConfigReport>> {
    use quarry_engine::hub::{self, Hub, RepoScope};
    let to_io = |e: hub::HubError| io::Error::other(e.full());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut hub = rt.block_on(Hub::connect(url)).map_err(to_io)?;
    rt.block_on(hub::push(&mut hub, "quality", "bench", index, engine))
        .map_err(to_io)?;
    rt.block_on(hub.vacuum()).map_err(to_io)?;
    // A passage window stands for the definition it is a passage of.
    let windows: BTreeMap<(String, u32, u32), String> = snapshot
        .live_chunks()
        .filter(|(_, c)| c.kind == ChunkKind::Lines)
        .filter_map(|(segment, c)| {
            let container = c.container.as_deref()?;
            Some((
                (segment.path_of(c).to_string(), c.start_line, c.end_line),
                container.to_string(),
            ))
        })
        .collect();
    let scope = RepoScope {
        globs: vec!["quality".into()],
    };
    let mut reports = Vec::new();
    for (label, options) in configs {
        let mut scores = Scores::default();
        for q in queries {
            let results = rt
                .block_on(hub::search(
                    std::slice::from_ref(&hub),
                    &scope,
                    &q.query,
                    options,
                    Some(engine),
                    None,
                ))
                .map_err(to_io)?;
            let ranked: Vec<String> = results
                .hits
                .iter()
                .map(|h| {
                    let h = &h.hit;
                    let key = (h.path.clone(), h.start_line, h.end_line);
                    let answer = windows.get(&key).map_or(h.symbol.as_str(), String::as_str);
                    format!("{}#{answer}", h.path)
                })
                .collect();
            let expected: BTreeSet<String> = q.expected.iter().cloned().collect();
            scores.add(q, &ranked, &expected);
        }
        let label = match label.split_once(" (") {
            Some((head, _)) => head,
            None => label,
        };
        reports.push(scores.report(format!("{label}, served through the hub")));
    }
    Ok(reports)
}

/// The definition a hit stands for: a passage of a long definition (a
/// line window whose container is that definition, see
/// `chunk::text::passage_windows`) is that definition, found where the
/// query matched it.
fn answer_of<'a>(
    snapshot: &'a quarry_engine::index::Snapshot,
    hit: &'a quarry_engine::search::Hit,
) -> &'a str {
    snapshot
        .chunk(hit.chunk_id)
        .filter(|(_, chunk)| chunk.kind == ChunkKind::Lines)
        .and_then(|(_, chunk)| chunk.container.as_deref())
        .unwrap_or(&hit.symbol)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_count_first_answer_and_distinct_hits() {
        let mut m = Metrics::default();
        let expected: BTreeSet<String> = ["a#x".to_string()].into();
        m.add(&["b#y".into(), "a#x".into(), "a#x".into()], &expected);
        let mean = m.mean();
        assert_eq!(mean.recall_1, 0.0);
        assert_eq!(mean.recall_5, 1.0);
        assert!((mean.mrr_10 - 0.5).abs() < 1e-9);
        assert!((mean.ndcg_10 - 1.0 / 3f64.log2()).abs() < 1e-9);
        m.add(&["c#z".into()], &expected);
        assert_eq!(m.mean().recall_10, 0.5);
    }

    #[test]
    fn docs_are_stripped_from_rust_and_python() {
        let rust = "/// Adds one to the value given.\n#[inline]\npub fn inc(x: u32) -> u32 {\n    x + 1\n}\n";
        let out = strip_docs("a.rs", rust, Language::Rust, &["inc"]).unwrap();
        assert_eq!(
            out,
            "#[inline]\npub fn inc(x: u32) -> u32 {\n    x + 1\n}\n"
        );
        let py =
            "def inc(x):\n    \"\"\"Adds one to the value\n    given.\"\"\"\n    return x + 1\n";
        let out = strip_docs("a.py", py, Language::Python, &["inc"]).unwrap();
        assert_eq!(out, "def inc(x):\n    pass\n    return x + 1\n");
        assert!(strip_docs("a.py", py, Language::Python, &["missing"]).is_none());
    }

    #[test]
    fn literals_and_sentences() {
        let text =
            r#"x = "the quick brown fox jumps"; y = "short"; z = 'no {interp} here at all ok'"#;
        let found: Vec<&str> = string_literals(text, true)
            .into_iter()
            .map(|(_, l)| l)
            .collect();
        assert_eq!(found, vec!["the quick brown fox jumps"]);
        assert_eq!(
            first_sentence("Returns the `index` of a key. More text.\n\nDetails."),
            "Returns the index of a key."
        );
    }
}
