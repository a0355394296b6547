//! Code-aware ranking signals: score multipliers applied to fused results
//! before exact-match priority and the per-file cap. Each is switchable and
//! kept on by default only where the quality benchmark showed it helps (see
//! docs/quality.md).
//!
//! - definition over mention: a chunk that *defines* what the query names
//!   (its name is the query, or a query word written like code, or all of
//!   its multi-word name's words are in the query) beats chunks that only
//!   mention it;
//! - path penalties: tests (test files and Rust `tests` modules),
//!   vendored, generated and minified files sink (unless the query asks
//!   for tests);
//! - file coherence: several matching chunks in one file lift each other.
//!
//! More live where they act: raising the lexical and symbol branches'
//! weights for code-like queries (`symbol_query_weight`) or the dense
//! weight for prose (`prose_dense_weight`), both applied to the fusion
//! weights, identifier-stem matching (`stems`, a query expansion in the
//! lexical branch) and traceback frames (`frames`, resolved against the
//! index by `search`).
//!
//! Never: look at text or the index; callers pass the facts of each chunk.

use super::Fused;
use crate::chunk::ChunkKind;
use crate::chunk::Language;
pub use crate::lexical::tokenize::is_code_word;
use crate::lexical::tokenize::{is_stopword, tokenize};
use rustc_hash::{FxHashMap, FxHashSet};

/// Which signals run, and how strongly. A factor of 1 (or 0 for weights
/// that add) turns a signal off.
#[derive(Clone, Debug, PartialEq)]
pub struct Signals {
    /// Multiplier for a chunk that defines what the query names.
    pub definition: f32,
    /// In a long query (an issue text), the definition boost of a name the
    /// text writes like code is shared among the candidates that define
    /// it: an issue that pastes `def _print_Derivative(self, expr)` into
    /// `MCodePrinter` names one class but a method a dozen printers
    /// define, and the one definition is the evidence. SWE-bench
    /// development instances: file Acc@5 0.75 -> 0.77, four gold files
    /// higher and none lower; the semble development set and the committed
    /// benchmark, whose queries are short, are unchanged.
    pub shared_definitions: bool,
    /// Multiplier of the lexical and symbol branch weights when the query
    /// looks like code (an identifier, a path, `snake_case`, `camelCase`):
    /// a query that spells a name (`fmt::arg named arguments`) is answered
    /// by the chunks holding that name, which a neighbour in embedding
    /// space should not outrank. 2 raised the development set's hybrid
    /// NDCG@10 from 0.887 to 0.890 (fmtlib 0.939 -> 0.953, level with
    /// semble; no repository or query class lower); 1.5 / 2.5 / 3.5 gave
    /// 0.889 / 0.889 / 0.890. It leaves lexical-only ranking as it was
    /// (both weights it scales move together there).
    pub symbol_query_weight: f32,
    /// Multiplier of the dense branch weight when the query reads as prose
    /// (no word of it looks like code).
    pub prose_dense_weight: f32,
    /// Multipliers for chunks in test, vendored, generated and minified
    /// files.
    pub penalties: PathPenalties,
    /// Added per other matching chunk of the same file (at most 3 count),
    /// as a fraction of the score.
    pub file_coherence: f32,
    /// Match query words to identifier parts with the same stem (retry,
    /// retries, retrying).
    pub stems: bool,
    /// Multipliers for chunks of documentation and configuration/build
    /// files, unless the query asks for that kind of content.
    pub content: ContentPenalties,
    /// Strength of the boost for query words naming the chunk's file (its
    /// stem or its folder): `path_match * top * fraction` is added, where
    /// `fraction` is the (weighed) share of query words naming it.
    pub path_match: f32,
    /// Weigh each query word of the path match by how few candidate files
    /// it names (`path_matches`).
    pub path_idf: bool,
    /// Added (in units of the best fused score) to the best chunk of a file
    /// whose whole name is what a short query names: `Request.swift` for
    /// "Request type in Vapor", `CORSMiddleware.swift` for "CORS
    /// middleware" (`file_names`). A file per type is how Swift, Kotlin,
    /// Java and C# code is laid out, and that file is the answer to a
    /// question about the type (0 = off). Only words written like names
    /// count (`file_names`): every query word raised Swift and Kotlin but
    /// cost Redux (`types/store.ts` for "store creation") and the mean.
    /// Development set (31 repositories, hybrid NDCG@10): 0 / 0.3 / 0.5 /
    /// 1 gave 0.862 / 0.872 / 0.880 / 0.880 (vapor 0.678 -> 0.881,
    /// exposed 0.711 -> 0.821).
    pub file_name: f32,
    /// Weight of whole-file lexical evidence added to each chunk's own
    /// BM25 score in the lexical branch (0 = off).
    pub file_evidence: f32,
    /// Multiplier for chunks of at most two lines (a `#define`, an import,
    /// a one-line constant) when the query is a description, not a name.
    pub short_chunk: f32,
    /// Multiplier for line windows of a source file (text outside any
    /// definition: imports, top-level statements) for descriptions.
    pub outside_definitions: f32,
    /// Added to a definition a traceback frame of the query points at
    /// (`rank::frames`), in units of the best fused score (0 = off).
    pub frames: f32,
}

impl Signals {
    /// Every signal off: plain fusion.
    pub fn off() -> Signals {
        Signals {
            definition: 1.0,
            shared_definitions: false,
            symbol_query_weight: 1.0,
            prose_dense_weight: 1.0,
            penalties: PathPenalties::off(),
            file_coherence: 0.0,
            stems: false,
            content: ContentPenalties::off(),
            path_match: 0.0,
            path_idf: false,
            file_name: 0.0,
            file_evidence: 0.0,
            short_chunk: 1.0,
            outside_definitions: 1.0,
            frames: 0.0,
        }
    }
}

impl Default for Signals {
    /// The signals the development set (bench/dev: semble's benchmark
    /// repositories and SWE-bench Lite issues) and the committed quality
    /// benchmark kept, at their chosen strengths (docs/quality.md).
    fn default() -> Self {
        Signals {
            definition: 1.5,
            shared_definitions: true,
            symbol_query_weight: 2.0,
            prose_dense_weight: 1.0,
            penalties: PathPenalties::default(),
            file_coherence: 0.2,
            stems: true,
            content: ContentPenalties::default(),
            path_match: 1.5,
            path_idf: true,
            file_name: 0.5,
            file_evidence: 0.0,
            short_chunk: 1.0,
            outside_definitions: 1.0,
            frames: 1.0,
        }
    }
}

/// Score multipliers by content class (1 = no penalty).
#[derive(Clone, Debug, PartialEq)]
pub struct ContentPenalties {
    pub docs: f32,
    pub config: f32,
}

impl ContentPenalties {
    pub fn off() -> ContentPenalties {
        ContentPenalties {
            docs: 1.0,
            config: 1.0,
        }
    }
}

impl Default for ContentPenalties {
    fn default() -> Self {
        ContentPenalties {
            docs: 0.5,
            config: 0.5,
        }
    }
}

/// What a file holds, as far as ranking cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContentClass {
    Code,
    /// Prose: Markdown, reStructuredText, plain text, anything under a
    /// documentation or website folder.
    Docs,
    /// Configuration, build and data files (TOML, YAML, JSON, Makefile,
    /// Dockerfile, shell scripts...).
    Config,
}

/// Classifies a workspace-relative path by its extension and folders;
/// `language` is the chunker's (`Text` means no grammar).
pub fn content_class(path: &str, language: Language) -> ContentClass {
    let lower = path.to_ascii_lowercase();
    let mut parts: Vec<&str> = lower.split('/').collect();
    let file = parts.pop().unwrap_or("");
    let ext = file.rsplit_once('.').map_or("", |(_, e)| e);
    const DOC_EXTS: [&str; 7] = ["md", "mdx", "markdown", "rst", "txt", "adoc", "asciidoc"];
    const DOC_DIRS: [&str; 5] = ["docs", "doc", "documentation", "website", "site"];
    if language == Language::Markdown
        || DOC_EXTS.contains(&ext)
        || parts.iter().any(|p| DOC_DIRS.contains(p))
    {
        return ContentClass::Docs;
    }
    if language == Language::Text {
        return ContentClass::Config;
    }
    ContentClass::Code
}

/// Score multipliers by kind of file (1 = no penalty).
#[derive(Clone, Debug, PartialEq)]
pub struct PathPenalties {
    pub test: f32,
    pub vendored: f32,
    pub generated: f32,
    pub minified: f32,
    /// Examples and tutorial sources (`examples/`, `docs_src/`).
    pub example: f32,
    /// Re-export files (`__init__.py`, `package-info.java`).
    pub barrel: f32,
    /// Compatibility shims and superseded code (`compat/`, `legacy/`,
    /// `deprecated/`).
    pub compat: f32,
    /// TypeScript declaration files (`.d.ts`).
    pub declaration: f32,
    /// Superseded copies of code kept beside it (`pydantic/v1/`,
    /// `runtime/time_alt/`: see `layout`).
    pub superseded: f32,
}

impl PathPenalties {
    pub fn off() -> PathPenalties {
        PathPenalties {
            test: 1.0,
            vendored: 1.0,
            generated: 1.0,
            minified: 1.0,
            example: 1.0,
            barrel: 1.0,
            compat: 1.0,
            declaration: 1.0,
            superseded: 1.0,
        }
    }

    fn factor(&self, class: PathClass) -> f32 {
        match class {
            PathClass::Test => self.test,
            PathClass::Vendored => self.vendored,
            PathClass::Generated => self.generated,
            PathClass::Minified => self.minified,
            PathClass::Example => self.example,
            PathClass::Barrel => self.barrel,
            PathClass::Compat => self.compat,
            PathClass::Declaration => self.declaration,
            PathClass::Superseded => self.superseded,
        }
    }
}

impl Default for PathPenalties {
    fn default() -> Self {
        PathPenalties {
            test: 0.3,
            vendored: 0.5,
            generated: 0.5,
            minified: 0.3,
            example: 0.3,
            barrel: 0.5,
            compat: 0.3,
            declaration: 0.7,
            superseded: 0.3,
        }
    }
}

/// A kind of file whose chunks are rarely what a search is after.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathClass {
    Test,
    Vendored,
    Generated,
    Minified,
    Example,
    Barrel,
    Compat,
    Declaration,
    Superseded,
}

/// The lesser classes of a path, which can stack on `path_class`'s:
/// examples, re-export files, compatibility shims, declaration files.
pub fn secondary_classes(path: &str) -> impl Iterator<Item = PathClass> {
    let lower = path.to_ascii_lowercase();
    let mut parts: Vec<&str> = lower.split('/').collect();
    let file = parts.pop().unwrap_or("");
    let in_dir = |names: &[&str]| parts.iter().any(|p| names.contains(p));
    let classes = [
        (
            in_dir(&["example", "examples", "_example", "_examples", "docs_src"]),
            PathClass::Example,
        ),
        (
            file == "__init__.py" || file == "package-info.java",
            PathClass::Barrel,
        ),
        (
            in_dir(&["compat", "_compat", "legacy", "deprecated"]),
            PathClass::Compat,
        ),
        (file.ends_with(".d.ts"), PathClass::Declaration),
    ];
    classes
        .into_iter()
        .filter_map(|(is, class)| is.then_some(class))
}

/// Classifies a workspace-relative path by its folders and file name.
pub fn path_class(path: &str) -> Option<PathClass> {
    let lower = path.to_ascii_lowercase();
    let mut parts: Vec<&str> = lower.split('/').collect();
    let file = parts.pop().unwrap_or("");
    if file.ends_with(".min.js") || file.ends_with(".min.css") || file.ends_with("-min.js") {
        return Some(PathClass::Minified);
    }
    const VENDORED: [&str; 6] = [
        "vendor",
        "vendored",
        "third_party",
        "third-party",
        "node_modules",
        "bower_components",
    ];
    if parts.iter().any(|p| VENDORED.contains(p)) {
        return Some(PathClass::Vendored);
    }
    const GENERATED_SUFFIXES: [&str; 6] = [
        ".pb.go",
        "_pb2.py",
        ".g.dart",
        ".designer.cs",
        ".pb.rs",
        ".pb.ts",
    ];
    if parts
        .iter()
        .any(|p| *p == "generated" || *p == "__generated__")
        || file.contains(".generated.")
        || file.contains("_generated.")
        || GENERATED_SUFFIXES.iter().any(|s| file.ends_with(s))
    {
        return Some(PathClass::Generated);
    }
    const TEST_DIRS: [&str; 8] = [
        "test",
        "tests",
        "__tests__",
        "spec",
        "specs",
        "testing",
        "testdata",
        "benches",
    ];
    let stem = file.split('.').next().unwrap_or(file);
    let extension = file.rsplit_once('.').map_or("", |(_, e)| e);
    // `test_*` names tests where the test runner says so (pytest,
    // minitest); elsewhere it is a name like any other: bats-core's own
    // library is `lib/bats-core/test_functions.bash`.
    let test_prefix = matches!(extension, "py" | "pyi" | "rb");
    // JUnit, XCTest, PHPUnit, ScalaTest and Hspec name a test file after
    // the class it tests: `RouterTests.swift`, `ParserSpec.scala`.
    let class_suffix = matches!(
        extension,
        "java" | "kt" | "kts" | "scala" | "swift" | "php" | "cs" | "groovy" | "hs"
    ) && {
        let name = path.rsplit('/').next().unwrap_or("");
        let stem = name.split('.').next().unwrap_or(name);
        stem.len() > 4
            && ["Test", "Tests", "Spec", "Specs"]
                .iter()
                .any(|s| stem.ends_with(s))
    };
    let is_test_file = (test_prefix && stem.starts_with("test_"))
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || stem.ends_with("_spec")
        || stem == "conftest"
        || stem == "tests"
        || file.contains(".test.")
        || file.contains(".spec.")
        || extension == "bats"
        || class_suffix;
    if is_test_file || parts.iter().any(|p| TEST_DIRS.contains(p)) {
        return Some(PathClass::Test);
    }
    None
}

/// What the signals need to know about the query.
#[derive(Clone, Debug, Default)]
pub struct QueryFacts {
    /// Whole words of the query, lowercased with `_`, `-`, `:` and `.`
    /// removed (`GraphStore::lookup` gives `graphstorelookup`, `graphstore`,
    /// `lookup`).
    identifiers: FxHashSet<String>,
    /// The last part of each qualified query word with the part before it
    /// (`std::ostream`: (`std`, `ostream`)), squashed like `identifiers`.
    qualified: Vec<(String, String)>,
    /// The query's tokens, as the lexical tokenizer makes them.
    terms: FxHashSet<String>,
    /// The tokens of each query word written like code: the parts of
    /// `dynamic_format_arg_store` in a query do not name a
    /// `format_arg_store` (but `toString builder` names `ToStringBuilder`).
    code_word_terms: Vec<FxHashSet<String>>,
    /// The query mentions tests, so test files are not penalised.
    wants_tests: bool,
    /// The query asks for documentation or for configuration/build files.
    wants_docs: bool,
    wants_config: bool,
    /// For each query word (split on whitespace and `-`) the stems of its parts
    /// (3+ letters, no stopwords), for matching file and folder names:
    /// `tRPC` is one word (`trpc`, `rpc`), not two.
    word_stems: Vec<FxHashSet<String>>,
    /// What a file named after the query's subject is called, squashed:
    /// each word of 3+ letters that is not a stopword, and each run of two
    /// or three such words (`CORS middleware`: `cors`, `middleware`,
    /// `corsmiddleware`).
    file_names: FxHashSet<String>,
    /// The query is one word (an identifier search, not a description).
    single_word: bool,
    /// The query is a long text (an issue, a traceback):
    /// [`is_long_query`](crate::lexical::query::is_long_query).
    long: bool,
}

impl QueryFacts {
    pub fn new(query: &str) -> QueryFacts {
        let mut facts = QueryFacts::default();
        let words: Vec<&str> = query
            .split(|c: char| c.is_whitespace() || c == '"' || c == '(' || c == ')')
            .filter(|w| !w.is_empty())
            .collect();
        let single = words.len() == 1;
        facts.single_word = single;
        for word in words {
            // In prose only words written like code name a definition.
            if !single && !is_code_word(word) {
                continue;
            }
            let mut parts = FxHashSet::default();
            tokenize(word, &mut |t| {
                parts.insert(t.to_string());
            });
            facts.code_word_terms.push(parts);
            facts.identifiers.insert(squash(word));
            let parts: Vec<String> = word
                .split("::")
                .flat_map(|p| p.split(['.', '#', '/']))
                .map(squash)
                .filter(|p| !p.is_empty())
                .collect();
            // `std::ostream` names an `ostream` only under `std`: the last
            // part of a qualified word keeps its qualifier.
            if let [.., qualifier, last] = parts.as_slice() {
                facts.qualified.push((qualifier.clone(), last.clone()));
                facts
                    .identifiers
                    .extend(parts[..parts.len() - 1].iter().cloned());
            } else {
                facts.identifiers.extend(parts);
            }
        }
        tokenize(query, &mut |t| {
            facts.terms.insert(t.to_string());
        });
        // A long text (an issue) mentions tests and docs in passing; only a
        // short query that names them asks for them.
        let long = crate::lexical::query::is_long_query(query);
        facts.long = long;
        facts.wants_tests = !long
            && facts
                .terms
                .iter()
                .any(|t| matches!(t.as_str(), "test" | "tests" | "spec" | "testing"));
        facts.wants_docs = !long
            && facts.terms.iter().any(|t| {
                matches!(
                    t.as_str(),
                    "doc"
                        | "docs"
                        | "documentation"
                        | "documented"
                        | "readme"
                        | "guide"
                        | "tutorial"
                        | "changelog"
                        | "markdown"
                )
            });
        facts.wants_config = !long
            && facts.terms.iter().any(|t| {
                matches!(
                    t.as_str(),
                    "config"
                        | "configuration"
                        | "yaml"
                        | "yml"
                        | "toml"
                        | "json"
                        | "makefile"
                        | "dockerfile"
                        | "cmake"
                        | "build"
                        | "ci"
                        | "workflow"
                        | "script"
                        | "scripts"
                        | "manifest"
                        | "dependencies"
                        | "package"
                )
            });
        if !long {
            facts.file_names = file_names(query);
        }
        let mut seen: FxHashSet<String> = FxHashSet::default();
        for word in query.split(|c: char| c.is_whitespace() || c == '-') {
            let mut stems = FxHashSet::default();
            tokenize(word, &mut |t| {
                if t.len() >= 3 && t.bytes().all(|b| b.is_ascii_alphanumeric()) && !is_stopword(t) {
                    stems.insert(stem(t));
                }
            });
            // A word said twice counts once.
            stems.retain(|s| !seen.contains(s));
            if !stems.is_empty() {
                seen.extend(stems.iter().cloned());
                facts.word_stems.push(stems);
            }
        }
        facts
    }
}

/// The names a file named after what `query` asks about could have
/// (`QueryFacts::file_names`): each word written like a name (with a
/// capital, `Request`, `CORS`, or with `_`) and the runs of two or three
/// words it opens (`CORS middleware`), never across a stopword. A word in
/// lower case is a description (`store creation` does not ask for
/// `types/store.ts`).
fn file_names(query: &str) -> FxHashSet<String> {
    let mut names = FxHashSet::default();
    // The current run of words, each squashed, with whether it is a name.
    let mut run: Vec<(String, bool)> = Vec::new();
    for word in query.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        let squashed = squash(word);
        if squashed.len() < 3 || is_stopword(&squashed) {
            run.clear();
            continue;
        }
        let is_name = word.chars().any(|c| c.is_uppercase()) || word.contains('_');
        run.push((squashed, is_name));
        let end = run.len();
        for start in end.saturating_sub(3)..end {
            if run[start].1 {
                names.insert(run[start..].iter().map(|(w, _)| w.as_str()).collect());
            }
        }
    }
    names
}

/// Whether `path`'s file is named after what the query asks about: its name
/// up to the first `.` (`CoroutineContext.common.kt`), squashed, is one of
/// `QueryFacts::file_names`, or one of them with a plural ending.
fn named_file(query: &QueryFacts, path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = squash(file.split('.').next().unwrap_or(file));
    let singular = stem
        .strip_suffix("es")
        .into_iter()
        .chain(stem.strip_suffix('s'));
    stem.len() >= 3
        && (query.file_names.contains(&stem)
            || query.file_names.contains(&format!("{stem}s"))
            || singular.into_iter().any(|s| query.file_names.contains(s)))
}

/// Two words name one thing when they are equal, or one begins the other
/// and the shorter has five letters or more (`format` and `formatter`,
/// `middleware` and `middlewares`; not `map` and `mapper`).
pub(crate) fn same_name(a: &str, b: &str) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    !short.is_empty() && (short == long || (short.len() >= 5 && long.starts_with(short)))
}

/// Lowercase without separators: `GraphStore`, `graph_store` and
/// `graph-store` are all `graphstore`.
pub(crate) fn squash(word: &str) -> String {
    word.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// What the signals need to know about one chunk.
pub struct ChunkFacts<'a> {
    pub path: &'a str,
    pub name: &'a str,
    /// With containers (`tests::parses_empty` is a Rust test module's).
    pub qualified_name: &'a str,
    pub kind: ChunkKind,
    pub language: Language,
    /// Lines in the chunk's range.
    pub lines: u32,
    /// In a superseded copy of code kept beside it (`layout::Layout`).
    pub superseded: bool,
}

/// Which query words name a file (bit `i` for `word_stems[i]`, the first
/// 64): a word names it when one of its stems is the stem of a word of the
/// file's name (`zsh_completions.go`: zsh, completions) or of its folder's.
fn path_words(query: &QueryFacts, path: &str) -> u64 {
    let mut parts = path.rsplit('/');
    let file = parts.next().unwrap_or("");
    let file_stem = file.split('.').next().unwrap_or(file);
    let dir = parts.next().unwrap_or("");
    let mut named: FxHashSet<String> = FxHashSet::default();
    for name in [file_stem, dir] {
        tokenize(name, &mut |t| {
            if t.len() >= 3 && t.bytes().all(|b| b.is_ascii_alphanumeric()) {
                named.insert(stem(t));
            }
        });
    }
    let names = |w: &str| named.contains(w) || named.iter().any(|n| same_name(n, w));
    let mut bits = 0u64;
    for (i, stems) in query.word_stems.iter().take(64).enumerate() {
        if stems.iter().any(|w| names(w)) {
            bits |= 1 << i;
        }
    }
    bits
}

/// How much the query names each candidate file: the weighted fraction of
/// the query's words that name it (`path_words`). A word weighs
/// `ln(n / df) / ln(n)` over the `n` candidate files, `df` of which it
/// names: the project's own name (`tRPC` in `parseTRPCMessage.ts`,
/// `initTRPC.ts`, `TRPCError.ts`) tells the files apart less than
/// `middleware` does.
fn path_matches<'a>(query: &QueryFacts, paths: &[&'a str], idf: bool) -> FxHashMap<&'a str, f32> {
    let words = query.word_stems.len().min(64);
    let bits: Vec<u64> = paths.iter().map(|p| path_words(query, p)).collect();
    let n = paths.len();
    let weights: Vec<f32> = (0..words)
        .map(|i| {
            let df = bits.iter().filter(|b| *b & (1 << i) != 0).count();
            if !idf || n < 2 || df == 0 {
                1.0
            } else {
                ((n as f32 / df as f32).ln() / (n as f32).ln()).clamp(0.0, 1.0)
            }
        })
        .collect();
    paths
        .iter()
        .zip(bits)
        .map(|(path, bits)| {
            let named: f32 = (0..words)
                .filter(|i| bits & (1 << i) != 0)
                .map(|i| weights[i])
                .sum();
            (*path, named / query.word_stems.len().max(1) as f32)
        })
        .collect()
}

/// A file's class, or `Test` for code in a Rust `tests` module inside a
/// source file (what `apply` computes from its per-path cache).
#[cfg(test)]
fn chunk_class(chunk: &ChunkFacts<'_>) -> Option<PathClass> {
    path_class(chunk.path)
        .or_else(|| in_rust_tests_module(chunk.qualified_name).then_some(PathClass::Test))
}

/// `tests::parses` or `lexical::tests::parses`: a Rust test module's code.
fn in_rust_tests_module(qualified_name: &str) -> bool {
    qualified_name.starts_with("tests::") || qualified_name.contains("::tests::")
}

/// Whether a chunk defines what the query names: its whole name is a query
/// word, or every word of a multi-word name is in the query, though not all
/// inside one longer identifier of it.
fn defines(query: &QueryFacts, chunk: &ChunkFacts<'_>) -> bool {
    if !chunk.kind.is_definition() || chunk.name.is_empty() {
        return false;
    }
    let name = squash(chunk.name);
    if query.identifiers.contains(&name) {
        return true;
    }
    if query.qualified.iter().any(|(_, last)| *last == name) {
        // Where the qualifier must appear, squashed once per chunk.
        let home = format!("{} {}", squash(chunk.qualified_name), squash(chunk.path));
        if query
            .qualified
            .iter()
            .any(|(qualifier, last)| *last == name && home.contains(qualifier.as_str()))
        {
            return true;
        }
    }
    let mut words = Vec::new();
    tokenize(chunk.name, &mut |t| {
        if !t.contains(['_', ':', '.']) && t != chunk.name.to_lowercase() {
            words.push(t.to_string());
        }
    });
    words.len() >= 2
        && words.iter().all(|w| query.terms.contains(w))
        && !query
            .code_word_terms
            .iter()
            .any(|parts| words.iter().all(|w| parts.contains(w)))
}

/// Applies the signals to `fused` and re-sorts it by score (ties keep
/// their order). `facts` gives a chunk's path, name, kind and language.
///
/// Two boosts are additive, in units of the best fused score, so they can
/// lift a chunk from deep in the list: file coherence (each file's best
/// chunk gains `file_coherence * top * file_sum / max_file_sum`, where a
/// file's sum is over its chunks in the list) and the path match
/// (`path_match * top * share of query words naming the file`, each word
/// weighed by how few candidate files it names: `path_matches`). The rest
/// multiply.
pub fn apply<'a>(
    fused: &mut [Fused],
    signals: &Signals,
    query: &QueryFacts,
    facts: impl Fn(u32) -> Option<ChunkFacts<'a>>,
) {
    let top = fused.iter().map(|f| f.score).fold(0.0f32, f32::max);
    // Each candidate's facts, looked up once for every pass below.
    let chunks: Vec<Option<ChunkFacts<'a>>> = fused.iter().map(|f| facts(f.chunk_id)).collect();
    let coherence = signals.file_coherence > 0.0 && top > 0.0;
    let file_name = signals.file_name > 0.0 && top > 0.0 && !query.file_names.is_empty();
    if coherence || file_name {
        // Per file: the sum of its scores and its best chunk's position.
        let mut files: FxHashMap<&str, (f32, usize)> = FxHashMap::default();
        for (i, (f, chunk)) in fused.iter().zip(&chunks).enumerate() {
            if let Some(chunk) = chunk {
                let entry = files.entry(chunk.path).or_insert((0.0, i));
                entry.0 += f.score;
                if f.score > fused[entry.1].score {
                    entry.1 = i;
                }
            }
        }
        let max_sum = files.values().map(|v| v.0).fold(0.0f32, f32::max);
        for (path, (sum, best)) in files {
            if coherence && max_sum > 0.0 {
                fused[best].score += signals.file_coherence * top * sum / max_sum;
            }
            // A file named after the query's subject.
            if file_name && named_file(query, path) {
                fused[best].score += signals.file_name * top;
            }
        }
    }
    // In a long text, how many candidates define each name it writes
    // like code (`shared_definitions`).
    let mut definers: FxHashMap<String, u32> = FxHashMap::default();
    if signals.definition != 1.0 && signals.shared_definitions && query.long {
        for chunk in chunks.iter().flatten().filter(|c| c.kind.is_definition()) {
            let name = squash(chunk.name);
            if query.identifiers.contains(&name) {
                *definers.entry(name).or_insert(0) += 1;
            }
        }
    }
    // What depends only on the path, computed once per file: candidates
    // cluster in few files, and these walk the path's text.
    let mut by_path: FxHashMap<&str, (f32, f32, ContentClass, bool)> = FxHashMap::default();
    let named = if signals.path_match > 0.0 && !query.word_stems.is_empty() {
        let mut paths: Vec<&str> = chunks.iter().flatten().map(|c| c.path).collect();
        paths.sort_unstable();
        paths.dedup();
        path_matches(query, &paths, signals.path_idf)
    } else {
        FxHashMap::default()
    };
    for (f, chunk) in fused.iter_mut().zip(&chunks) {
        let Some(chunk) = chunk else {
            continue;
        };
        let (boost, path_factor, class, classed) =
            *by_path.entry(chunk.path).or_insert_with(|| {
                let boost = signals.path_match * named.get(chunk.path).copied().unwrap_or(0.0);
                let mut factor = 1.0;
                let main = path_class(chunk.path);
                let superseded = chunk.superseded.then_some(PathClass::Superseded);
                for class in main
                    .into_iter()
                    .chain(secondary_classes(chunk.path))
                    .chain(superseded)
                {
                    if !(class == PathClass::Test && query.wants_tests) {
                        factor *= signals.penalties.factor(class);
                    }
                }
                let class = content_class(chunk.path, chunk.language);
                match class {
                    ContentClass::Docs if !query.wants_docs => factor *= signals.content.docs,
                    ContentClass::Config if !query.wants_config => factor *= signals.content.config,
                    _ => {}
                }
                (boost, factor, class, main.is_some())
            });
        f.score += boost * top;
        let mut factor = path_factor;
        if signals.definition != 1.0 && defines(query, chunk) {
            let sharers = if definers.is_empty() {
                1
            } else {
                definers.get(&squash(chunk.name)).copied().unwrap_or(1)
            };
            factor *= 1.0 + (signals.definition - 1.0) / sharers as f32;
        }
        // Code in a Rust `tests` module of a source file.
        if !classed && !query.wants_tests && in_rust_tests_module(chunk.qualified_name) {
            factor *= signals.penalties.test;
        }
        if !query.single_word {
            if chunk.lines <= 2 {
                factor *= signals.short_chunk;
            }
            if class == ContentClass::Code && chunk.kind == ChunkKind::Lines {
                factor *= signals.outside_definitions;
            }
        }
        f.score *= factor;
    }
    // Stable: equal scores keep the fused tie-break order.
    fused.sort_by(|a, b| b.score.total_cmp(&a.score));
}

/// A crude English stemmer for identifier parts: strips plural and verb
/// endings so `retry`, `retries`, `retried` and `retrying` share `retry`,
/// and `parse`, `parses`, `parsed` and `parsing` share `pars`. Words of
/// three letters or fewer and anything not lowercase ASCII stay as they are.
pub fn stem(word: &str) -> String {
    let w = word;
    if w.len() <= 3 || !w.bytes().all(|b| b.is_ascii_lowercase()) {
        return w.to_string();
    }
    let strip = |suffix: &str| w.strip_suffix(suffix).filter(|s| s.len() >= 3);
    let drop_e = |s: &str| -> String {
        s.strip_suffix('e')
            .filter(|s| s.len() >= 3)
            .unwrap_or(s)
            .to_string()
    };
    if let Some(s) = strip("ies").or_else(|| strip("ied")) {
        return format!("{s}y");
    }
    if let Some(s) = strip("ing").or_else(|| strip("ed")) {
        return drop_e(undouble(s));
    }
    if let Some(s) = strip("es") {
        if s.ends_with(['s', 'x', 'z']) || s.ends_with("ch") || s.ends_with("sh") {
            return s.to_string();
        }
        return drop_e(&w[..w.len() - 1]);
    }
    // `status`, `axis`, `alias`, `canvas` are not plurals (and their
    // plurals lose `es` above, meeting them here).
    let singular_s = ["ss", "us", "is", "ias", "vas"]
        .iter()
        .any(|end| w.ends_with(end));
    if let Some(s) = w.strip_suffix('s').filter(|s| !singular_s && s.len() >= 3) {
        return drop_e(s);
    }
    drop_e(w)
}

/// `runn` -> `run`, `stopp` -> `stop`; keeps `ll`, `ss`, `zz` (`call`).
fn undouble(s: &str) -> &str {
    let b = s.as_bytes();
    let n = b.len();
    if n >= 4 && b[n - 1] == b[n - 2] && !matches!(b[n - 1], b'l' | b's' | b'z') {
        &s[..n - 1]
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_join_inflections() {
        for (word, expected) in [
            ("retry", "retry"),
            ("retries", "retry"),
            ("retried", "retry"),
            ("retrying", "retry"),
            ("parse", "pars"),
            ("parses", "pars"),
            ("parsed", "pars"),
            ("parsing", "pars"),
            ("running", "run"),
            ("calls", "call"),
            ("calling", "call"),
            ("matches", "match"),
            ("class", "class"),
            ("alias", "alias"),
            ("aliases", "alias"),
            ("status", "status"),
            ("statuses", "status"),
            ("analysis", "analysis"),
            ("canvas", "canvas"),
            ("schemas", "schema"),
            ("ideas", "idea"),
            ("index", "index"),
            ("go", "go"),
            ("files", "fil"),
            ("file", "fil"),
            ("cached", "cach"),
            ("Retry", "Retry"),
        ] {
            assert_eq!(stem(word), expected, "{word}");
        }
    }

    #[test]
    fn a_file_named_after_the_query_subject() {
        let named = |query: &str, path: &str| named_file(&QueryFacts::new(query), path);
        assert!(named("Request type in Vapor", "Request/Request.swift"));
        assert!(named(
            "CORS middleware for cross-origin",
            "CORSMiddleware.swift"
        ));
        assert!(named(
            "CoroutineContext and elements",
            "CoroutineContext.common.kt"
        ));
        assert!(named("Session driver", "Sessions.swift"));
        assert!(named("Sessions and drivers", "Session.swift"));
        // Lower case describes; it does not name a file.
        assert!(!named("store creation and dispatch", "types/store.ts"));
        assert!(!named("Request logging", "request_id.go"));
        assert!(!named("Request type in Vapor", "Request+Session.swift"));
        assert!(!named("format a string", "formatter.rs"));
        // Stopwords split runs and name nothing.
        assert!(!named("how the router works", "HowThe.swift"));
        assert!(!named("how the router works", "the.py"));
        // An issue text names too many things.
        let issue = "Request fails ".repeat(40);
        assert!(!named(&issue, "Request.swift"));
    }

    #[test]
    fn paths_are_classified() {
        for (path, class) in [
            ("tests/test_requests.py", Some(PathClass::Test)),
            ("src/foo_test.go", Some(PathClass::Test)),
            ("src/__tests__/a.ts", Some(PathClass::Test)),
            ("web/app.spec.ts", Some(PathClass::Test)),
            ("src/raw/tests.rs", Some(PathClass::Test)),
            ("vendor/lib/a.go", Some(PathClass::Vendored)),
            ("api/service.pb.go", Some(PathClass::Generated)),
            ("static/app.min.js", Some(PathClass::Minified)),
            ("src/requests/sessions.py", None),
            ("src/testimony.rs", None),
            ("src/contest/entry.py", None),
            ("pkg/test_cli.py", Some(PathClass::Test)),
            ("lib/bats-core/test_functions.bash", None),
            ("test/suite.bats", Some(PathClass::Test)),
            ("Tests/VaporTests/RouteTests.swift", Some(PathClass::Test)),
            ("src/test/kotlin/ParserTest.kt", Some(PathClass::Test)),
            ("core/src/ParserSpec.scala", Some(PathClass::Test)),
            ("Sources/Vapor/Routing/Test.swift", None),
            ("Sources/Vapor/Request/Request.swift", None),
            ("src/Illuminate/LatestManifest.php", None),
        ] {
            assert_eq!(path_class(path), class, "{path}");
        }
    }

    fn fused(id: u32, score: f32) -> Fused {
        Fused {
            chunk_id: id,
            score,
            ranks: [Some(id), None, None],
        }
    }

    /// The facts of chunks given as (path, name, kind), ten lines each.
    fn facts_of<'a>(
        chunks: &'a [(&'a str, &'a str, ChunkKind)],
        language: Language,
    ) -> impl Fn(u32) -> Option<ChunkFacts<'a>> + Copy + 'a {
        move |id| {
            chunks
                .get(id as usize)
                .map(|&(path, name, kind)| ChunkFacts {
                    path,
                    name,
                    qualified_name: name,
                    kind,
                    language,
                    lines: 10,
                    superseded: false,
                })
        }
    }

    #[test]
    fn definitions_beat_mentions_and_tests_sink() {
        let chunks = [
            ("src/client.rs", "send_request", ChunkKind::Function),
            ("src/retry.rs", "retry_failed", ChunkKind::Function),
            ("tests/retry.rs", "retry_failed_test", ChunkKind::Function),
        ];
        let facts = facts_of(&chunks, Language::Rust);
        let mut list = vec![fused(0, 1.0), fused(2, 0.95), fused(1, 0.9)];
        let query = QueryFacts::new("where do we retry failed requests");
        apply(&mut list, &Signals::default(), &query, facts);
        let order: Vec<u32> = list.iter().map(|f| f.chunk_id).collect();
        assert_eq!(order, vec![1, 0, 2]);

        // Off: fused order stays.
        let mut list = vec![fused(0, 1.0), fused(2, 0.95), fused(1, 0.9)];
        apply(&mut list, &Signals::off(), &query, facts);
        let order: Vec<u32> = list.iter().map(|f| f.chunk_id).collect();
        assert_eq!(order, vec![0, 2, 1]);

        // Asking for tests lifts the penalty.
        let mut list = vec![fused(0, 1.0), fused(2, 0.95)];
        let signals = Signals {
            definition: 1.0,
            path_match: 0.0,
            file_coherence: 0.0,
            ..Signals::default()
        };
        apply(&mut list, &signals, &QueryFacts::new("retry test"), facts);
        assert_eq!(list[0].chunk_id, 0);
        assert!((list[1].score - 0.95).abs() < 1e-6);
    }

    #[test]
    fn content_classes_by_extension_and_folder() {
        for (path, language, class) in [
            ("src/router.go", Language::Go, ContentClass::Code),
            ("README.md", Language::Markdown, ContentClass::Docs),
            ("docs/en/tutorial.py", Language::Python, ContentClass::Docs),
            ("docs_src/tutorial.py", Language::Python, ContentClass::Code),
            ("SECURITY.txt", Language::Text, ContentClass::Docs),
            ("Makefile", Language::Text, ContentClass::Config),
            ("config/app.yaml", Language::Text, ContentClass::Config),
        ] {
            assert_eq!(content_class(path, language), class, "{path}");
        }
    }

    /// The path match of one file alone (no weighing over candidates).
    fn path_match(query: &QueryFacts, path: &str) -> f32 {
        path_matches(query, &[path], false)[path]
    }

    #[test]
    fn words_naming_many_candidate_files_weigh_less() {
        // Three words: trpc/rpc (one word), middleware, chains.
        let query = QueryFacts::new("how tRPC middleware chains");
        let paths = [
            "core/initTRPC.ts",
            "core/TRPCError.ts",
            "core/rpc/parseTRPCMessage.ts",
            "core/middleware.ts",
        ];
        let named = path_matches(&query, &paths, true);
        // `trpc` names three of four files: ln(4/3)/ln(4) of a word.
        let trpc = (4.0f32 / 3.0).ln() / 4.0f32.ln() / 3.0;
        assert!((named["core/initTRPC.ts"] - trpc).abs() < 1e-6);
        // `middleware` names one: a whole word.
        assert!((named["core/middleware.ts"] - 1.0 / 3.0).abs() < 1e-6);
        assert!(named["core/middleware.ts"] > 2.0 * named["core/TRPCError.ts"]);
        // Unweighed, both count a whole word.
        let flat = path_matches(&query, &paths, false);
        assert_eq!(flat["core/initTRPC.ts"], flat["core/middleware.ts"]);
    }

    #[test]
    fn query_words_naming_a_file_match_its_path() {
        // Four words: zsh, completion, script, generation.
        let query = QueryFacts::new("zsh completion script generation");
        assert_eq!(path_match(&query, "zsh_completions.go"), 0.5);
        assert_eq!(path_match(&query, "bash_completions.go"), 0.25);
        assert_eq!(path_match(&query, "completions/zsh.go"), 0.5);
        assert_eq!(path_match(&query, "src/args.go"), 0.0);
        let query = QueryFacts::new("retry policy for failed requests");
        assert_eq!(path_match(&query, "lib/retry_policy.py"), 0.5);
        let query = QueryFacts::new("formatter");
        assert_eq!(path_match(&query, "include/fmt/format.h"), 1.0);
        assert_eq!(path_match(&query, "include/fmt/form.h"), 0.0);
        for (path, classes) in [
            ("examples/app.js", vec![PathClass::Example]),
            ("src/pkg/__init__.py", vec![PathClass::Barrel]),
            ("lib/compat/x.py", vec![PathClass::Compat]),
            ("pydantic/deprecated/decorator.py", vec![PathClass::Compat]),
            ("types/index.d.ts", vec![PathClass::Declaration]),
            ("src/router.go", vec![]),
        ] {
            assert_eq!(
                secondary_classes(path).collect::<Vec<_>>(),
                classes,
                "{path}"
            );
        }
    }

    #[test]
    fn docs_and_config_sink_unless_asked_for() {
        let chunks = [
            ("README.md", Language::Markdown),
            ("src/router.go", Language::Go),
            ("Makefile", Language::Text),
        ];
        let facts = |id: u32| {
            chunks.get(id as usize).map(|(path, language)| ChunkFacts {
                path,
                name: "x",
                qualified_name: "x",
                kind: ChunkKind::Section,
                language: *language,
                lines: 10,
                superseded: false,
            })
        };
        let signals = Signals {
            content: ContentPenalties {
                docs: 0.5,
                config: 0.5,
            },
            ..Signals::off()
        };
        let mut list = vec![fused(0, 1.0), fused(2, 0.95), fused(1, 0.9)];
        apply(
            &mut list,
            &signals,
            &QueryFacts::new("route group handlers"),
            facts,
        );
        assert_eq!(list[0].chunk_id, 1);
        let mut list = vec![fused(0, 1.0), fused(2, 0.95), fused(1, 0.9)];
        apply(
            &mut list,
            &signals,
            &QueryFacts::new("route group docs"),
            facts,
        );
        assert_eq!(list[0].chunk_id, 0);
    }

    #[test]
    fn a_long_text_shares_a_definition_boost_among_the_definers() {
        // Three printers define the pasted method; one file defines the
        // class the issue says to change.
        let chunks = [
            ("printing/latex.py", "_print_Derivative", ChunkKind::Method),
            ("printing/str.py", "_print_Derivative", ChunkKind::Method),
            ("printing/fcode.py", "_print_Derivative", ChunkKind::Method),
            ("printing/mathematica.py", "MCodePrinter", ChunkKind::Class),
        ];
        let facts = facts_of(&chunks, Language::Python);
        let signals = Signals {
            definition: 1.5,
            shared_definitions: true,
            ..Signals::off()
        };
        let order = |query: &str, signals: &Signals| {
            let mut list = vec![fused(0, 1.0), fused(1, 0.98), fused(2, 0.96), fused(3, 0.8)];
            apply(&mut list, signals, &QueryFacts::new(query), facts);
            list.iter().map(|f| f.chunk_id).collect::<Vec<u32>>()
        };
        let issue = "the code printer does not handle derivatives correctly, this has an \
                     easy fix by adding def _print_Derivative(self, expr) to MCodePrinter";
        // 0.8 * 1.5 = 1.2 beats 1.0 * (1 + 0.5 / 3).
        assert_eq!(order(issue, &signals)[0], 3);
        // Not shared, each printer's method keeps the whole boost.
        let whole = Signals {
            shared_definitions: false,
            ..signals.clone()
        };
        assert_eq!(order(issue, &whole), vec![0, 1, 2, 3]);
        // A short query names what it asks for: nothing is shared.
        assert_eq!(
            order("_print_Derivative MCodePrinter", &signals),
            vec![0, 1, 2, 3]
        );
    }

    #[test]
    fn coherence_lifts_the_best_chunk_of_a_file_with_much_evidence() {
        // File a.rs has three matching chunks, b.rs one slightly better one.
        let paths = ["src/b.rs", "src/a.rs", "src/a.rs", "src/a.rs"];
        let facts = |id: u32| {
            paths.get(id as usize).map(|path| ChunkFacts {
                path,
                name: "x",
                qualified_name: "x",
                kind: ChunkKind::Function,
                language: Language::Rust,
                lines: 10,
                superseded: false,
            })
        };
        let signals = Signals {
            file_coherence: 0.2,
            ..Signals::off()
        };
        let query = QueryFacts::new("merge the sorted runs");
        let mut list = vec![fused(0, 1.0), fused(1, 0.95), fused(2, 0.9), fused(3, 0.85)];
        apply(&mut list, &signals, &query, facts);
        let order: Vec<u32> = list.iter().map(|f| f.chunk_id).collect();
        // a.rs's best chunk rises; its other chunks keep their scores.
        assert_eq!(order, vec![1, 0, 2, 3]);
        assert!((list[2].score - 0.9).abs() < 1e-6);
    }

    #[test]
    fn superseded_copies_rank_below_the_code_they_copy() {
        // The same definition twice, the copy (time_alt) first by a hair.
        let paths = ["runtime/time_alt/wheel.rs", "runtime/time/wheel.rs"];
        let facts = |id: u32| {
            paths.get(id as usize).map(|path| ChunkFacts {
                path,
                name: "poll",
                qualified_name: "Wheel::poll",
                kind: ChunkKind::Method,
                language: Language::Rust,
                lines: 10,
                superseded: path.contains("_alt/"),
            })
        };
        let query = QueryFacts::new("how the timer wheel expires entries");
        let order = |signals: &Signals| {
            let mut list = vec![fused(0, 1.0), fused(1, 0.99)];
            apply(&mut list, signals, &query, facts);
            list.iter().map(|f| f.chunk_id).collect::<Vec<u32>>()
        };
        assert_eq!(order(&Signals::default()), vec![1, 0]);
        let kept = Signals {
            penalties: PathPenalties {
                superseded: 1.0,
                ..PathPenalties::default()
            },
            ..Signals::default()
        };
        assert_eq!(order(&kept), vec![0, 1]);
    }

    #[test]
    fn rust_test_modules_count_as_tests() {
        let facts = |qualified_name| ChunkFacts {
            path: "src/lexical/query.rs",
            name: "parses",
            qualified_name,
            kind: ChunkKind::Function,
            language: Language::Rust,
            lines: 10,
            superseded: false,
        };
        assert_eq!(chunk_class(&facts("tests::parses")), Some(PathClass::Test));
        assert_eq!(
            chunk_class(&facts("lexical::tests::parses")),
            Some(PathClass::Test)
        );
        assert_eq!(chunk_class(&facts("Query::parses")), None);
    }

    /// A definition's facts for `defines`, named by its qualified name's
    /// last `::` part (language and size do not matter there).
    fn definition(
        path: &'static str,
        qualified_name: &'static str,
        kind: ChunkKind,
    ) -> ChunkFacts<'static> {
        ChunkFacts {
            path,
            name: qualified_name.rsplit("::").next().unwrap_or(qualified_name),
            qualified_name,
            kind,
            language: Language::Rust,
            lines: 10,
            superseded: false,
        }
    }

    #[test]
    fn qualified_identifiers_define_their_last_part() {
        let query = QueryFacts::new("GraphStore::lookup");
        let method = |q| definition("src/graph.rs", q, ChunkKind::Method);
        assert!(defines(&query, &method("GraphStore::lookup")));
        assert!(!defines(&query, &method("GraphStore::lookup_all")));
        // The last part keeps its qualifier: `std::ostream` is not fmt's
        // `ostream`, `fmt::arg` is the `arg` in `include/fmt/`.
        let query = QueryFacts::new("writing to std::ostream");
        let ostream = definition("include/fmt/os.h", "ostream", ChunkKind::Class);
        assert!(!defines(&query, &ostream));
        let query = QueryFacts::new("fmt::arg named arguments");
        let arg = definition("include/fmt/base.h", "arg", ChunkKind::Function);
        assert!(defines(&query, &arg));
    }

    #[test]
    fn a_longer_identifier_does_not_define_its_parts() {
        let named = |name| definition("include/fmt/base.h", name, ChunkKind::Struct);
        let query = QueryFacts::new("dynamic_format_arg_store for argument lists");
        assert!(defines(&query, &named("dynamic_format_arg_store")));
        assert!(!defines(&query, &named("format_arg_store")));
        // Words from code and prose together still name a definition.
        let query = QueryFacts::new("toString builder for object descriptions");
        assert!(defines(&query, &named("ToStringBuilder")));
        let query = QueryFacts::new("the graph store lookup");
        assert!(defines(&query, &named("GraphStore")));
    }
}
