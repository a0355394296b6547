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

use super::classes::{
    content_class, path_class, secondary_classes, ContentClass, ContentPenalties, PathClass,
    PathPenalties,
};
use super::query_facts::{named_file, names_module, same_name, QueryFacts};
use super::Fused;
use crate::chunk::ChunkKind;
use crate::chunk::Language;
use crate::ident::squash;
pub use crate::layout::FileMarks;
use crate::layout::{module_folder, module_name};
use crate::lexical::stem::stem;
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
    /// define, and the one definition is the evidence.
    pub shared_definitions: bool,
    /// Multiplier of the lexical and symbol branch weights when the query
    /// looks like code (an identifier, a path, `snake_case`, `camelCase`):
    /// a query that spells a name (`fmt::arg named arguments`) is answered
    /// by the chunks holding that name, which a neighbour in embedding
    /// space should not outrank. Default 2. It leaves lexical-only ranking
    /// as it was (both weights it scales move together there).
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
    /// cost Redux (`types/store.ts` for "store creation"). Default 0.6
    /// (0.5 before the head of 5 places at 0.7; 0.7 is as good).
    pub file_name: f32,
    /// For a short query with a word that is a module's name, in any
    /// case and number (`generators`; `railties` for `railtie.rb`), added
    /// to the best chunk of the module's entry file
    /// (`layout::FileMarks::module`: `generators.rb` beside `generators/`):
    /// `module_file * top / words`, `words` the query's words that are
    /// not stopwords, so that the module counts as much as the question
    /// is about it. The file that declares the module and wires its parts
    /// together answers a question about the module, and the parts'
    /// chunks, each holding the module's words, crowd it out. Applied
    /// after every other signal, and never past a part (a chunk of a file
    /// in the module's folder) that another query word names and that
    /// ranks above it: a question that names a module and one of its
    /// parts asks for the part. Default 1.5 (0 =
    /// off; 0.5 without the division by words lifted Rails but cost
    /// tokio, Plug and pandoc).
    pub module_file: f32,
    /// Multiplier for the chunks of a split type's home file
    /// (`layout::FileMarks::home`: `SqlMapper.cs` beside
    /// `SqlMapper.Async.cs`, `SqlMapper.GridReader.cs`, ...). The file the
    /// type is named after declares it and holds its main API; its parts
    /// each add one concern, and a question about what the type does is
    /// answered in the home file more often than in the part whose one
    /// method repeats the question's words. 1 = off.
    pub home_file: f32,
    /// Weight of whole-file lexical evidence added to each chunk's own
    /// BM25 score in the lexical branch (0 = off).
    pub file_evidence: f32,
    /// For a long query (an issue text), the lexical branch ranks its
    /// candidates by BM25 times their file's path and content-class
    /// penalties (`path_factor`): tests that paste the issue's code, docs
    /// and migrations that repeat its words otherwise fill the branch's
    /// list before fusion, and the code they repeat falls past its depth
    /// (SWE-bench development set, 241 issues: file Acc@5 0.830 -> 0.846
    /// hybrid, 0.747 -> 0.793 lexical). A short query's few words match
    /// few such chunks, and the signals after fusion sort them.
    pub classed_lexical: bool,
    /// Multiplier for chunks of at most two lines (a `#define`, an import,
    /// a one-line constant) when the query is a description, not a name.
    pub short_chunk: f32,
    /// Multiplier for line windows of a source file (text outside any
    /// definition: imports, top-level statements) for descriptions.
    pub outside_definitions: f32,
    /// Added to a definition a traceback frame of the query points at
    /// (`rank::frames`), in units of the best fused score (0 = off).
    pub frames: f32,
    /// What a frame's weight is multiplied by per call made after it in its
    /// trace (`Frame::depth`): 1 raises every frame alike.
    pub frame_decay: f32,
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
            module_file: 0.0,
            home_file: 1.0,
            file_evidence: 0.0,
            classed_lexical: false,
            short_chunk: 1.0,
            outside_definitions: 1.0,
            frames: 0.0,
            frame_decay: 1.0,
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
            file_name: 0.6,
            module_file: 1.5,
            home_file: 1.3,
            file_evidence: 0.0,
            classed_lexical: true,
            short_chunk: 1.0,
            outside_definitions: 1.0,
            frames: 1.0,
            frame_decay: 0.5,
        }
    }
}

/// What the signals read of a chunk's path, computed once per file.
#[derive(Clone, Copy)]
struct PathFacts {
    /// Added in units of the best fused score (the path match).
    boost: f32,
    /// Path and content-class penalties, the re-export one aside.
    factor: f32,
    class: ContentClass,
    /// A main path class (test, vendored, generated, minified) holds.
    classed: bool,
    /// A re-export file: its chunks without a body take `penalties.barrel`.
    barrel: bool,
}

/// The path and content-class penalties of a file (the re-export one
/// aside, which depends on the chunk), as `apply` and the lexical branch's
/// classed order (`Signals::classed_lexical`) read them.
fn path_facts(
    signals: &Signals,
    query: &QueryFacts,
    path: &str,
    language: Language,
    marks: FileMarks,
) -> PathFacts {
    let mut factor = 1.0;
    let mut barrel = false;
    // A generated header counts once, where the path says so too.
    let main = path_class(path).or(marks.generated.then_some(PathClass::Generated));
    let superseded = marks.superseded.then_some(PathClass::Superseded);
    for class in main
        .into_iter()
        .chain(secondary_classes(path))
        .chain(superseded)
    {
        if class == PathClass::Barrel {
            barrel = true;
        } else if !(class == PathClass::Test && query.wants_tests) {
            factor *= signals.penalties.factor(class);
        }
    }
    let class = content_class(path, language);
    match class {
        ContentClass::Docs if !query.wants_docs => factor *= signals.content.docs,
        ContentClass::Config if !query.wants_config => factor *= signals.content.config,
        _ => {}
    }
    PathFacts {
        boost: 0.0,
        factor,
        class,
        classed: main.is_some(),
        barrel,
    }
}

/// The multiplier a file's path and content classes put on its chunks'
/// scores for this query (1: none).
pub fn path_factor(
    signals: &Signals,
    query: &QueryFacts,
    path: &str,
    language: Language,
    marks: FileMarks,
) -> f32 {
    path_facts(signals, query, path, language, marks).factor
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
    /// What the index knows of its file beyond the path.
    pub marks: FileMarks,
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

/// How surely a chunk defines what the query names, 0 to 1: 1 when its
/// whole name is a query word, or when every word of a multi-word name is
/// said in the query ([`said_of`]) near one another ([`said_together`]),
/// though not all inside one longer identifier of it; [`SPREAD`] when
/// those words are scattered over the query ("request retrying ... retry
/// conditions" barely names `retryRequest`).
fn naming(query: &QueryFacts, chunk: &ChunkFacts<'_>) -> f32 {
    if !chunk.kind.defines_its_name() || chunk.name.is_empty() {
        return 0.0;
    }
    let name = squash(chunk.name);
    if query.identifiers.contains(&name) {
        return 1.0;
    }
    if query.qualified.iter().any(|(_, last)| *last == name) {
        // Where the qualifier must appear, squashed once per chunk.
        let home = format!("{} {}", squash(chunk.qualified_name), squash(chunk.path));
        if query
            .qualified
            .iter()
            .any(|(qualifier, last)| *last == name && home.contains(qualifier.as_str()))
        {
            return 1.0;
        }
    }
    let mut words = Vec::new();
    tokenize(chunk.name, &mut |t| {
        if !t.contains(['_', ':', '.']) && t != chunk.name.to_lowercase() {
            words.push(t.to_string());
        }
    });
    let named = words.len() >= 2
        && words.iter().all(|w| said_of(query, w, &words))
        && !query
            .code_word_parts
            .iter()
            .any(|parts| words.iter().all(|w| parts.contains(w)));
    if !named {
        0.0
    } else if said_together(query, &words) {
        1.0
    } else {
        SPREAD
    }
}

/// What a multi-word name whose words are scattered over the query gets of
/// the definition boost: a sentence that describes a function mentions
/// its words apart ("find which transition ... matches a given input" for
/// `find_input`), a question about something else too ("number parsing
/// with defaults and range checks" for `NumberRange`).
const SPREAD: f32 = 0.25;

/// Whether the query says `word` of a name made of `words`: as a word of
/// prose, or inside a word written like code whose parts are all the
/// name's (`toString` for `ToStringBuilder`). The `node` of `Node.js` is
/// said of Node.js, not of `nvm_node_version`.
fn said_of(query: &QueryFacts, word: &str, words: &[String]) -> bool {
    query.prose_terms.contains(word)
        || query
            .code_word_parts
            .iter()
            .any(|parts| parts.contains(word) && parts.iter().all(|p| words.contains(p)))
}

/// Whether the query says a name's words near one another: all of them
/// within a run of as many words and [`SLACK`] more (stopwords left out,
/// the query's and the name's: the `is` of `is_empty` takes no place, as
/// the one of "is empty" does not), in any order (`window focus` for
/// `focusWindow`, "reads a DocBook" for `readDocBook`, "HTTP exception
/// types and error" for `HTTPError`; not "number parsing with defaults and
/// range" for `NumberRange`).
fn said_together(query: &QueryFacts, words: &[String]) -> bool {
    let placed: Vec<&String> = words.iter().filter(|w| !is_stopword(w)).collect();
    if placed.is_empty() {
        return query.place_count > 0;
    }
    // Every place of every word, in query order; then the narrowest run
    // holding each word once (a window sliding over them).
    let mut at: Vec<(u32, usize)> = Vec::new();
    for (i, word) in placed.iter().enumerate() {
        let Some(places) = query.places.get(word.as_str()) else {
            return false;
        };
        at.extend(places.iter().map(|&p| (p, i)));
    }
    at.sort_unstable();
    let span = (placed.len() + SLACK) as u32;
    let mut seen = vec![0u32; placed.len()];
    let mut missing = placed.len();
    let mut first = 0;
    for &(place, i) in &at {
        if seen[i] == 0 {
            missing -= 1;
        }
        seen[i] += 1;
        while at[first].0 + span <= place {
            let j = at[first].1;
            seen[j] -= 1;
            if seen[j] == 0 {
                missing += 1;
            }
            first += 1;
        }
        if missing == 0 {
            return true;
        }
    }
    false
}

/// Other words a name's words may have among them and still be said
/// together (`said_together`).
const SLACK: usize = 2;

/// How close below its best part a raised module entry file may come.
const PAST_NO_PART: f32 = 0.999;

/// The best score of a chunk of a part of the module whose entry file is
/// `module` (a file in its folder) that a query word other than those
/// naming the entry file names (`path_words`): `model_generator.rb` for
/// "how the model generator creates files", not for "how generators are
/// registered".
fn best_named_part(
    query: &QueryFacts,
    fused: &[Fused],
    chunks: &[Option<ChunkFacts<'_>>],
    module: &str,
) -> f32 {
    let folder = module_folder(module);
    let entry_words = path_words(query, module);
    let mut named: FxHashMap<&str, bool> = FxHashMap::default();
    let mut best = 0.0f32;
    for (f, chunk) in fused.iter().zip(chunks) {
        let Some(chunk) = chunk else { continue };
        let in_folder = chunk.path != module
            && chunk
                .path
                .strip_prefix(folder)
                .is_some_and(|rest| rest.starts_with('/'));
        if in_folder
            && *named
                .entry(chunk.path)
                .or_insert_with(|| path_words(query, chunk.path) & !entry_words != 0)
        {
            best = best.max(f.score);
        }
    }
    best
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
    let module_file = signals.module_file > 0.0 && top > 0.0 && !query.long;
    // A named module's entry file: its best chunk's position and path.
    let mut modules: Vec<(usize, &str)> = Vec::new();
    if coherence || file_name || module_file {
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
        // Named modules' entry files, raised last (below).
        if module_file {
            modules.extend(
                files
                    .iter()
                    .filter(|(path, (_, best))| {
                        chunks[*best].as_ref().is_some_and(|c| c.marks.module)
                            && names_module(query, module_name(path))
                    })
                    .map(|(path, (_, best))| (*best, *path)),
            );
            // In list order, whatever order the map holds them in.
            modules.sort_unstable();
        }
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
        for chunk in chunks
            .iter()
            .flatten()
            .filter(|c| c.kind.defines_its_name())
        {
            let name = squash(chunk.name);
            if query.identifiers.contains(&name) {
                *definers.entry(name).or_insert(0) += 1;
            }
        }
    }
    // What depends only on the path, computed once per file: candidates
    // cluster in few files, and these walk the path's text.
    let mut by_path: FxHashMap<&str, PathFacts> = FxHashMap::default();
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
        let path = *by_path.entry(chunk.path).or_insert_with(|| PathFacts {
            boost: signals.path_match * named.get(chunk.path).copied().unwrap_or(0.0),
            ..path_facts(signals, query, chunk.path, chunk.language, chunk.marks)
        });
        f.score += path.boost * top;
        let mut factor = path.factor;
        // A re-export file's imports and `__all__` sink; a function or class
        // written in it is code like any other (`django/db/models/fields/
        // __init__.py` holds every model field).
        if path.barrel && !chunk.kind.has_body() {
            factor *= signals.penalties.barrel;
        }
        if chunk.marks.home {
            factor *= signals.home_file;
        }
        let named = if signals.definition != 1.0 {
            naming(query, chunk)
        } else {
            0.0
        };
        if named > 0.0 {
            let sharers = if definers.is_empty() {
                1
            } else {
                definers.get(&squash(chunk.name)).copied().unwrap_or(1)
            };
            factor *= 1.0 + named * (signals.definition - 1.0) / sharers as f32;
        }
        // Code in a Rust `tests` module of a source file.
        if !path.classed && !query.wants_tests && in_rust_tests_module(chunk.qualified_name) {
            factor *= signals.penalties.test;
        }
        if !query.single_word {
            if chunk.lines <= 2 {
                factor *= signals.short_chunk;
            }
            if path.class == ContentClass::Code && chunk.kind == ChunkKind::Lines {
                factor *= signals.outside_definitions;
            }
        }
        f.score *= factor;
    }
    // Last, so that no later signal lifts a named part it was kept below.
    for (best, module) in modules {
        let before = fused[best].score;
        let part = best_named_part(query, fused, &chunks, module);
        let share = 1.0 / query.word_stems.len().max(1) as f32;
        let raised = before + signals.module_file * share * top;
        fused[best].score = if part > before {
            raised.min(part * PAST_NO_PART).max(before)
        } else {
            raised
        };
    }
    // Stable: equal scores keep the fused tie-break order.
    fused.sort_by(|a, b| b.score.total_cmp(&a.score));
}

#[cfg(test)]
mod tests {
    use super::*;

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
            (
                "django/contrib/auth/migrations/0001_initial.py",
                Some(PathClass::Generated),
            ),
            (
                "db/migrate/20190101120000_create_users.rb",
                Some(PathClass::Generated),
            ),
            ("django/db/migrations/autodetector.py", None),
            ("django/db/migrations/operations/models.py", None),
            ("migrations/README.md", None),
            (
                "tests/sites_framework/migrations/0001_initial.py",
                Some(PathClass::Test),
            ),
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
                    marks: FileMarks::default(),
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
    fn a_re_export_file_sinks_its_imports_but_not_its_code() {
        let chunks = [
            (
                "django/db/models/fields/__init__.py",
                "FilePathField",
                ChunkKind::Class,
            ),
            (
                "django/db/models/fields/__init__.py",
                "__all__",
                ChunkKind::Variable,
            ),
            (
                "django/db/models/fields/__init__.py",
                "imports",
                ChunkKind::Lines,
            ),
            ("django/forms/fields.py", "FileField", ChunkKind::Class),
        ];
        let facts = facts_of(&chunks, Language::Python);
        let signals = Signals {
            definition: 1.0,
            path_match: 0.0,
            file_coherence: 0.0,
            short_chunk: 1.0,
            outside_definitions: 1.0,
            ..Signals::default()
        };
        let mut list = vec![fused(0, 1.0), fused(1, 1.0), fused(2, 1.0), fused(3, 1.0)];
        let query = QueryFacts::new("allow the path of a file field to be a callable");
        apply(&mut list, &signals, &query, facts);
        let score = |id: u32| list.iter().find(|f| f.chunk_id == id).map(|f| f.score);
        assert_eq!(score(0), Some(1.0));
        assert_eq!(score(3), Some(1.0));
        let barrel = signals.penalties.barrel;
        assert_eq!(score(1), Some(barrel));
        assert_eq!(score(2), Some(barrel));
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
                marks: FileMarks::default(),
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
                marks: FileMarks::default(),
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
                marks: FileMarks {
                    superseded: path.contains("_alt/"),
                    ..FileMarks::default()
                },
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
            marks: FileMarks::default(),
        };
        assert_eq!(chunk_class(&facts("tests::parses")), Some(PathClass::Test));
        assert_eq!(
            chunk_class(&facts("lexical::tests::parses")),
            Some(PathClass::Test)
        );
        assert_eq!(chunk_class(&facts("Query::parses")), None);
    }

    /// Whether the query names the chunk's definition fully.
    fn defines(query: &QueryFacts, chunk: &ChunkFacts<'_>) -> bool {
        naming(query, chunk) == 1.0
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
            marks: FileMarks::default(),
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

    #[test]
    fn a_word_said_inside_another_identifier_does_not_name_a_definition() {
        let function = |name| definition("install.sh", name, ChunkKind::Function);
        // The `node` of `Node.js` is said of Node.js: the query does not
        // name `nvm_node_version` though it holds all three of its words.
        let query = QueryFacts::new("how nvm installs a specific Node.js version");
        assert!(!defines(&query, &function("nvm_node_version")));
        let query = QueryFacts::new("how nvm prints the node version");
        assert!(defines(&query, &function("nvm_node_version")));
        // A one-word query is all identifier: its parts are its words.
        let query = QueryFacts::new("node_version");
        assert!(defines(&query, &function("node_version")));
    }

    #[test]
    fn a_name_said_in_scattered_words_is_named_less_surely() {
        let class = |name| definition("Source/Core/Request.swift", name, ChunkKind::Method);
        let apart = QueryFacts::new(
            "how request retrying is implemented with backoff and retry conditions",
        );
        assert_eq!(naming(&apart, &class("retryRequest")), SPREAD);
        // Near one another, in any order, a stopword or two between.
        let near = QueryFacts::new("how a request is retried: retry the request");
        assert_eq!(naming(&near, &class("retryRequest")), 1.0);
        let near = QueryFacts::new("HTTP exception types and error responses");
        assert_eq!(naming(&near, &class("HTTPError")), 1.0);
        // A name's stopwords take no place, as the query's do not.
        let near = QueryFacts::new("check whether the buffer is empty");
        assert_eq!(naming(&near, &class("is_empty")), 1.0);
        let verb = QueryFacts::new("how pandoc reads a DocBook XML document");
        assert_eq!(naming(&verb, &class("readDocBook")), 1.0);
        assert_eq!(naming(&verb, &class("writeDocBook")), 0.0);
    }

    #[test]
    fn an_impl_block_does_not_name_the_definition_it_adds_to() {
        let query = QueryFacts::new("how multipart form data encodes fields");
        let path = "Source/Features/MultipartFormData.swift";
        let class = definition(path, "MultipartFormData", ChunkKind::Class);
        let extension = definition(path, "MultipartFormData", ChunkKind::Impl);
        assert_eq!(naming(&query, &class), 1.0);
        assert_eq!(naming(&query, &extension), 0.0);
        let identifier = QueryFacts::new("MultipartFormData");
        assert!(defines(&identifier, &class));
        assert!(!defines(&identifier, &extension));
    }
}
