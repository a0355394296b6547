//! Identifier-aware tokenizer shared by indexing and queries.
//!
//! A token is lowercase. For every identifier we emit the whole identifier
//! and, when it has several parts, each part (camelCase and PascalCase with
//! acronyms, snake_case, kebab-case, letter/digit boundaries). Paths joined by
//! `::`, `.`, `/`, `#` or `-` additionally emit the whole path and each
//! adjacent pair, canonicalised with `.` as the separator, so that
//! `GraphStore::lookup` and `GraphStore.lookup` are the same token.
//!
//! Invariant: the same function tokenizes code and queries, so whatever a
//! query can spell, the index holds in the same form.
//! Never: drop words from code (stopwords are a query-side decision).

use crate::ident::split_parts;

/// Longest token we keep; longer runs are almost always data, not names.
pub const MAX_TOKEN_LEN: usize = 64;
/// Paths with more words than this only emit their pairs.
const MAX_PATH_WORDS: usize = 8;

#[inline]
fn is_word_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// Where in `line` the identifier `word` occurs whole: no identifier
/// character (`_`, `$`, a letter or digit) on either side. How usages are
/// told from longer names that contain the word.
pub fn whole_word_matches<'l>(line: &'l str, word: &'l str) -> impl Iterator<Item = usize> + 'l {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    line.match_indices(word)
        .filter(move |(at, _)| {
            !word.is_empty()
                && !line[..*at].chars().next_back().is_some_and(is_ident)
                && !line[at + word.len()..].chars().next().is_some_and(is_ident)
        })
        .map(|(at, _)| at)
}

/// Calls `sink` with every token of `text`, in order, possibly repeated.
pub fn tokenize(text: &str, sink: &mut dyn FnMut(&str)) {
    let mut scratch = Scratch::default();
    let bytes = text.as_bytes();
    let mut pos = 0;
    while pos < bytes.len() {
        // Skip to the start of a word.
        let Some(start) = next_word_start(text, pos) else {
            break;
        };
        // Collect a path: word (sep word)*.
        scratch.words.clear();
        let mut cursor = start;
        loop {
            let end = word_end(text, cursor);
            scratch.words.push((cursor, end));
            match separator_len(bytes, end) {
                Some(sep) if end + sep < bytes.len() && starts_word(text, end + sep) => {
                    cursor = end + sep;
                }
                _ => {
                    pos = end;
                    break;
                }
            }
        }
        emit_path(text, &mut scratch, sink);
    }
}

#[derive(Default)]
struct Scratch {
    words: Vec<(usize, usize)>,
    lower: String,
    path: String,
}

fn next_word_start(text: &str, from: usize) -> Option<usize> {
    text[from..]
        .char_indices()
        .find(|(_, c)| is_word_char(*c))
        .map(|(i, _)| from + i)
}

fn starts_word(text: &str, at: usize) -> bool {
    text[at..].chars().next().is_some_and(is_word_char)
}

fn word_end(text: &str, from: usize) -> usize {
    text[from..]
        .char_indices()
        .find(|(_, c)| !is_word_char(*c))
        .map_or(text.len(), |(i, _)| from + i)
}

/// Length of a path separator at `at`, if there is one.
fn separator_len(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b':' if bytes.get(at + 1) == Some(&b':') => Some(2),
        b'.' | b'/' | b'#' | b'-' => Some(1),
        _ => None,
    }
}

fn push_lower(out: &mut String, word: &str) {
    if word.is_ascii() {
        out.extend(word.bytes().map(|b| b.to_ascii_lowercase() as char));
    } else {
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
}

fn emit_path(text: &str, scratch: &mut Scratch, sink: &mut dyn FnMut(&str)) {
    let n_words = scratch.words.len();
    for &(start, end) in &scratch.words {
        emit_word(&text[start..end], &mut scratch.lower, sink);
    }
    if n_words < 2 {
        return;
    }
    if n_words <= MAX_PATH_WORDS {
        join_lower(text, &scratch.words, &mut scratch.path);
        if scratch.path.len() <= MAX_TOKEN_LEN * 2 {
            sink(&scratch.path);
        }
    }
    if n_words > 2 {
        for pair in scratch.words.windows(2) {
            join_lower(text, pair, &mut scratch.path);
            if scratch.path.len() <= MAX_TOKEN_LEN * 2 {
                sink(&scratch.path);
            }
        }
    }
}

fn join_lower(text: &str, words: &[(usize, usize)], out: &mut String) {
    out.clear();
    for (i, &(start, end)) in words.iter().enumerate() {
        if i > 0 {
            out.push('.');
        }
        push_lower(out, &text[start..end]);
    }
}

/// Emits the whole identifier and its parts.
fn emit_word(word: &str, lower: &mut String, sink: &mut dyn FnMut(&str)) {
    if word.len() > MAX_TOKEN_LEN {
        return;
    }
    let trimmed = word.trim_matches('_');
    if trimmed.is_empty() {
        return;
    }
    lower.clear();
    push_lower(lower, trimmed);
    if trimmed.chars().nth(1).is_some() {
        sink(lower);
    }
    let mut n_parts = 0;
    let mut first_part = (0, 0);
    split_parts(trimmed, &mut |start, end| {
        n_parts += 1;
        if n_parts == 1 {
            first_part = (start, end);
            return;
        }
        if n_parts == 2 {
            emit_part(&trimmed[first_part.0..first_part.1], lower, sink);
        }
        emit_part(&trimmed[start..end], lower, sink);
    });
}

fn emit_part(part: &str, lower: &mut String, sink: &mut dyn FnMut(&str)) {
    if part.chars().nth(1).is_none() {
        return;
    }
    lower.clear();
    push_lower(lower, part);
    sink(lower);
}

/// `text` with every identifier spelled out as its parts ([`split_parts`]),
/// one space between them, and the text between identifiers kept as it is:
/// `fn retryFailedRequest(max_retries)` -> `fn retry Failed Request(max
/// retries)`. For embedding models, whose vocabularies cut a joined
/// identifier into pieces that mean little (`##fa`, `##iled`).
pub fn spell_out(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut rest = text;
    while let Some(start) = rest.find(is_word_char) {
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let end = rest.find(|c| !is_word_char(c)).unwrap_or(rest.len());
        let word = &rest[..end];
        let mut first = true;
        split_parts(word, &mut |s, e| {
            if !first {
                out.push(' ');
            }
            first = false;
            out.push_str(&word[s..e]);
        });
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// English words a natural-language query may contain that carry no
/// meaning for search. Only applied to lowercase query words.
const STOPWORDS: &[&str] = &[
    "a", "about", "all", "an", "and", "any", "are", "as", "at", "be", "been", "by", "can", "code",
    "could", "did", "do", "does", "doing", "done", "each", "for", "from", "how", "i", "if", "in",
    "into", "is", "it", "its", "me", "my", "of", "on", "or", "our", "should", "so", "some", "that",
    "the", "their", "them", "then", "there", "these", "this", "those", "to", "us", "was", "we",
    "were", "what", "when", "where", "which", "who", "whom", "why", "will", "with", "would", "you",
    "your",
];

/// A word written like code: `snake_case`, `camelCase`, `a::b`, `a.b`,
/// `a->b` (surrounding punctuation ignored).
pub fn is_code_word(word: &str) -> bool {
    let word = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
    let inner_upper = word.char_indices().any(|(i, c)| i > 0 && c.is_uppercase())
        && word.chars().any(char::is_lowercase);
    word.contains('_')
        || word.contains("::")
        || word.contains("->")
        || inner_upper
        || (word.contains('.') && !word.ends_with('.'))
}

pub fn is_stopword(word: &str) -> bool {
    STOPWORDS.binary_search(&word).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        tokenize(text, &mut |t| out.push(t.to_string()));
        out
    }

    fn check(text: &str, expect: &[&str]) {
        assert_eq!(tokens(text), expect, "tokens of {text:?}");
    }

    #[test]
    fn identifiers_are_spelled_out_as_words() {
        assert_eq!(
            spell_out("fn retryFailedRequest(max_retries: u32) -> HTTPError {"),
            "fn retry Failed Request(max retries: u 32) -> HTTP Error {"
        );
        assert_eq!(spell_out("résumé — naïve"), "résumé — naïve");
        assert_eq!(spell_out("__init__"), "init");
    }

    #[test]
    fn stopwords_are_sorted() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn camel_case_with_acronyms() {
        check(
            "HTTPServerError",
            &["httpservererror", "http", "server", "error"],
        );
        check(
            "parseJSON2Html",
            &["parsejson2html", "parse", "json", "html"],
        );
    }

    #[test]
    fn snake_and_screaming_case() {
        check(
            "MAX_CHUNK_CHARS",
            &["max_chunk_chars", "max", "chunk", "chars"],
        );
        check("_private", &["private"]);
        check("x = y", &[]);
    }

    #[test]
    fn qualified_paths_are_canonical() {
        check(
            "GraphStore::lookup",
            &[
                "graphstore",
                "graph",
                "store",
                "lookup",
                "graphstore.lookup",
            ],
        );
        assert_eq!(tokens("GraphStore::lookup"), tokens("GraphStore.lookup"));
        check("a::bb::cc", &["bb", "cc", "a.bb.cc", "a.bb", "bb.cc"]);
    }

    #[test]
    fn kebab_and_file_paths() {
        check(
            "default-features",
            &["default", "features", "default.features"],
        );
        check(
            "src/index.rs",
            &[
                "src",
                "index",
                "rs",
                "src.index.rs",
                "src.index",
                "index.rs",
            ],
        );
    }

    #[test]
    fn separators_without_words_are_ignored() {
        check(":: . / # -", &[]);
        check("a.", &[]);
        check("foo:: bar", &["foo", "bar"]);
    }

    #[test]
    fn unicode_never_panics() {
        check("größeZahl", &["größezahl", "größe", "zahl"]);
        check("日本語", &["日本語"]);
        let _ = tokens("\u{0}\u{ffff}é::ü-🙂");
    }

    #[test]
    fn overlong_words_are_dropped() {
        let long = "a".repeat(MAX_TOKEN_LEN + 1);
        check(&long, &[]);
    }
}
