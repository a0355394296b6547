//! What the ranking signals read of a query ([`QueryFacts`]): its words
//! written like code, the identifiers and qualified names it names, its
//! stems and the file names it mentions; and the name folding they compare
//! with ([`squash`], [`same_name`]).
//!
//! Never: look at an index or a chunk.

use crate::ident::squash;
use crate::lexical::stem::stem;
use crate::lexical::tokenize::{is_code_word, is_stopword, tokenize};
use rustc_hash::{FxHashMap, FxHashSet};

/// What the signals need to know about the query.
#[derive(Clone, Debug, Default)]
pub struct QueryFacts {
    /// Whole words of the query, lowercased with `_`, `-`, `:` and `.`
    /// removed (`GraphStore::lookup` gives `graphstorelookup`, `graphstore`,
    /// `lookup`).
    pub(super) identifiers: FxHashSet<String>,
    /// The last part of each qualified query word with the part before it
    /// (`std::ostream`: (`std`, `ostream`)), squashed like `identifiers`.
    pub(super) qualified: Vec<(String, String)>,
    /// The query's tokens, as the lexical tokenizer makes them.
    pub(super) terms: FxHashSet<String>,
    /// The word parts of each query word written like code, without the
    /// joined forms (`Node.js`: `node`, `js`): the parts of
    /// `dynamic_format_arg_store` in a query do not name a
    /// `format_arg_store` (but `toString builder` names `ToStringBuilder`).
    pub(super) code_word_parts: Vec<FxHashSet<String>>,
    /// The tokens of the query's words written like prose (every token
    /// of a one-word query).
    pub(super) prose_terms: FxHashSet<String>,
    /// Where each word stands in the query, for how near one another a
    /// name's words are said: the places, in order, of each token of a
    /// word of prose or part of a word written like code (`DocBook`: `doc`,
    /// `book`), stopwords left out; a how-question's verb stands at its
    /// place in the singular too (`reads`, `read`).
    pub(super) places: FxHashMap<String, Vec<u32>>,
    /// How many places the query has.
    pub(super) place_count: u32,
    /// The query mentions tests, so test files are not penalised.
    pub(super) wants_tests: bool,
    /// The query asks for documentation or for configuration/build files.
    pub(super) wants_docs: bool,
    pub(super) wants_config: bool,
    /// For each query word (split on whitespace and `-`) the stems of its parts
    /// (3+ letters, no stopwords), for matching file and folder names:
    /// `tRPC` is one word (`trpc`, `rpc`), not two.
    pub(super) word_stems: Vec<FxHashSet<String>>,
    /// What a file named after the query's subject is called, squashed:
    /// each word of 3+ letters that is not a stopword, and each run of two
    /// or three such words (`CORS middleware`: `cors`, `middleware`,
    /// `corsmiddleware`).
    pub(super) file_names: FxHashSet<String>,
    /// The query is one word (an identifier search, not a description).
    pub(super) single_word: bool,
    /// The query is a long text (an issue, a traceback):
    /// [`is_long_query`](crate::lexical::query::is_long_query).
    pub(super) long: bool,
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
        let verb = asked_verb(query);
        for word in words {
            let code = single || is_code_word(word);
            let whole = squash(word);
            let mut tokens: Vec<String> = Vec::new();
            tokenize(word, &mut |t| tokens.push(t.to_string()));
            // The query splits into words only where no path joins its
            // tokens (spaces, quotes, parentheses): the words' tokens are
            // the query's.
            facts.terms.extend(tokens.iter().cloned());
            // A code word's joined forms (`docbook`, `a.b`) take no place
            // among the places; its parts all do (the `to` of `toString`),
            // prose stopwords none.
            for t in &tokens {
                let joined = t.contains(['_', ':', '.']) || (code && !single && *t == whole);
                if joined || (!code && is_stopword(t)) {
                    continue;
                }
                let place = facts.place_count;
                facts.place_count += 1;
                facts.places.entry(t.clone()).or_default().push(place);
                if let Some(verb) = verb.as_ref().filter(|v| {
                    t.strip_prefix(v.as_str())
                        .is_some_and(|ending| ending == "s" || ending == "es")
                }) {
                    facts.places.entry(verb.clone()).or_default().push(place);
                }
            }
            // In prose only words written like code name a definition.
            if !code {
                facts.prose_terms.extend(tokens);
                continue;
            }
            facts.code_word_parts.push(
                tokens
                    .into_iter()
                    .filter(|t| !t.contains(['_', ':', '.']) && *t != whole)
                    .collect(),
            );
            facts.identifiers.insert(whole);
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
        if single {
            facts.prose_terms = facts.terms.clone();
        }
        if let Some(verb) = verb {
            facts.prose_terms.insert(verb);
        }
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

/// The verb a "how <subject> <verb>s" question asks about, without its
/// `s` (`how pandoc reads a DocBook document`: `read`): a definition
/// named for the action (`readDocBook`) answers it.
fn asked_verb(query: &str) -> Option<String> {
    let mut words = query.split_whitespace();
    if !words.next()?.eq_ignore_ascii_case("how") {
        return None;
    }
    let subject = words.next()?.to_lowercase();
    if is_stopword(&subject) {
        return None;
    }
    let verb = words.next()?.to_lowercase();
    // `switches`, `fixes`, `passes` lose `es`; `reads` its `s`, and
    // `class` is no verb.
    let base = match ["ches", "shes", "sses", "xes", "zes"]
        .iter()
        .find(|ending| verb.ends_with(*ending))
    {
        Some(_) => &verb[..verb.len() - 2],
        None => verb.strip_suffix('s').filter(|base| !base.ends_with('s'))?,
    };
    (base.len() >= 3 && base.bytes().all(|b| b.is_ascii_lowercase())).then(|| base.to_string())
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
pub(super) fn named_file(query: &QueryFacts, path: &str) -> bool {
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

/// Whether a word of the query is `module` (a module's name,
/// `layout::module_name`), in any case, singular or plural: `railties`
/// names `railtie`, `generator` names `generators`. Stems do not count:
/// "parses" does not name `Parsing`.
pub(super) fn names_module(query: &QueryFacts, module: &str) -> bool {
    let name = squash(module);
    if name.len() < 3 {
        return false;
    }
    let plural =
        |a: &str, b: &str| a.strip_suffix('s') == Some(b) || a.strip_suffix("es") == Some(b);
    query
        .terms
        .iter()
        .any(|t| !is_stopword(t) && (*t == name || plural(t, &name) || plural(&name, t)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_how_question_asks_about_its_verb_in_the_singular() {
        assert_eq!(
            asked_verb("how pandoc reads a DocBook XML document").as_deref(),
            Some("read")
        );
        assert_eq!(
            asked_verb("How zls gets doc comments").as_deref(),
            Some("get")
        );
        // `-es` after a hissing sound.
        assert_eq!(
            asked_verb("how nvm switches versions").as_deref(),
            Some("switch")
        );
        assert_eq!(asked_verb("how git passes args").as_deref(), Some("pass"));
        assert_eq!(
            asked_verb("how xmonad handles events").as_deref(),
            Some("handle")
        );
        // Not a verb in the third person, not a how-question, no subject.
        assert_eq!(asked_verb("how it handles errors"), None);
        assert_eq!(asked_verb("how vitest statically collects tests"), None);
        assert_eq!(asked_verb("where pandoc reads DocBook"), None);
        assert_eq!(asked_verb("how the router works"), None);
        assert_eq!(asked_verb("how pandoc"), None);
        // It names a definition as a prose word would.
        let facts = QueryFacts::new("how pandoc reads a DocBook XML document");
        assert!(facts.prose_terms.contains("read"));
    }

    #[test]
    fn a_module_is_named_in_any_case_and_number_not_by_stem() {
        let names = |query: &str, module: &str| names_module(&QueryFacts::new(query), module);
        assert!(names("how generators are registered", "generators"));
        assert!(names("the generator framework", "generators"));
        assert!(names("how railties are sorted", "railtie"));
        assert!(names("Engine middleware", "engine"));
        assert!(names("each match in a query", "matches"));
        assert!(!names("how pandoc parses tables", "Parsing"));
        assert!(!names("engines", "en"));
        assert!(!names("how the router works", "the"));
    }
}
