//! The query, analysed once: [`SearchQuery`] holds everything a stage
//! reads of the query text (its lexical terms and phrases, whether it is
//! an identifier or written like code, its symbol query, the text the
//! dense branch embeds, its stack frames and the facts the ranking signals
//! use), so no stage parses the raw string again.
//!
//! Never: look at an index, or keep more of a query than
//! [`MAX_QUERY_BYTES`].

use crate::lexical::query::is_long_query;
use crate::lexical::tokenize::is_code_word;
use crate::lexical::Query;
use crate::rank::frames::{frames, Frame};
use crate::rank::query_facts::QueryFacts;
use crate::symbols::SymbolQuery;
use std::borrow::Cow;

/// A query text and what every stage needs to know of it.
pub struct SearchQuery<'t> {
    /// The text searched: the query cut to [`MAX_QUERY_BYTES`].
    pub text: &'t str,
    /// Its terms and quoted phrases.
    pub lexical: Query,
    /// Its whitespace-separated words.
    pub words: usize,
    /// A pasted issue or trace rather than a search (`is_long_query`).
    pub long: bool,
    /// Long and on several lines: a text pasted in (an issue, a report, a
    /// trace), not a question typed on one line, however long.
    pub pasted: bool,
    /// Long even without its quoted text: an issue or report quoting
    /// messages, whose quotes are its writer's, not a search operator
    /// (a long error message pasted in quotes alone is not one).
    pub quotes_aside: bool,
    /// The symbol query, when the text is one identifier or qualified name
    /// (`GraphStore::lookup`): the symbol branch and exact-name priority.
    pub symbol: Option<SymbolQuery>,
    /// Written like code: an identifier, or a word in `snake_case`,
    /// `camelCase` or joined by `::`, `.` or `->`.
    pub code: bool,
    /// What the dense branch embeds (a long query's prose, without its
    /// code blocks and session transcripts).
    pub embedding: Cow<'t, str>,
    /// Stack frames quoted in the text (`file.rs:12`, `at f (x.js:3:1)`).
    pub frames: Vec<Frame>,
    /// What the ranking signals read of the text.
    pub facts: QueryFacts,
}

impl<'t> SearchQuery<'t> {
    /// Analyses `text` (cut to [`MAX_QUERY_BYTES`] first).
    pub fn new(text: &'t str) -> SearchQuery<'t> {
        let text = bounded(text);
        let identifier = looks_like_identifier(text);
        let long = is_long_query(text);
        SearchQuery {
            text,
            lexical: Query::parse(text),
            words: text.split_whitespace().count(),
            long,
            pasted: long && text.trim().contains('\n'),
            quotes_aside: is_long_query(&outside_quotes(text)),
            symbol: identifier.then(|| SymbolQuery::parse(text.trim(), None)),
            code: looks_like_code(text),
            embedding: embedding_text(text),
            frames: frames(text),
            facts: QueryFacts::new(text),
        }
    }

    /// Nothing to search for.
    pub fn is_blank(&self) -> bool {
        self.text.trim().is_empty()
    }
}

/// The longest query text searched, in bytes: a pasted issue or stack
/// trace fits many times over. The surfaces refuse a longer one with
/// [`check_query`]'s message; the engine itself reads only this much.
pub const MAX_QUERY_BYTES: usize = 64 * 1024;

/// Why a query text is refused (longer than [`MAX_QUERY_BYTES`]).
pub fn check_query(query: &str) -> Result<(), String> {
    if query.len() > MAX_QUERY_BYTES {
        return Err(format!(
            "the query is {} bytes; at most {MAX_QUERY_BYTES} are searched (quote the part that matters)",
            query.len()
        ));
    }
    Ok(())
}

/// `query` cut to at most [`MAX_QUERY_BYTES`], at a character boundary.
pub(super) fn bounded(query: &str) -> &str {
    let mut end = query.len().min(MAX_QUERY_BYTES);
    while !query.is_char_boundary(end) {
        end -= 1;
    }
    &query[..end]
}

/// A query that is one identifier or qualified name (`GraphStore::lookup`).
pub(super) fn looks_like_identifier(query: &str) -> bool {
    let query = query.trim();
    !query.is_empty()
        && query.len() <= 200
        && !query.contains(char::is_whitespace)
        && !query.contains('"')
        && query.chars().any(char::is_alphabetic)
}

/// A query written like code: one identifier or path, or a word in
/// `snake_case`, `camelCase` or joined by `::`, `.` or `->`.
pub(super) fn looks_like_code(query: &str) -> bool {
    looks_like_identifier(query) || query.split_whitespace().any(is_code_word)
}

/// What of a query the encoder sees: the whole query, or for a long one
/// ([`is_long_query`](crate::lexical::query::is_long_query): an issue
/// text) its prose, without fenced code blocks, REPL lines
/// (`>>>`, `...`, `In [1]:`, `Out[1]:`) and traceback lines (`Traceback`,
/// `File "..."`). The encoder reads the first 128 tokens, and in an issue
/// those are often the pasted reproduction, not what the issue is about;
/// the code stays in the lexical branch, and traceback frames reach the
/// code they name through `rank::frames`. A query that is all code is
/// embedded whole.
fn embedding_text(query: &str) -> Cow<'_, str> {
    if !crate::lexical::query::is_long_query(query) {
        return Cow::Borrowed(query);
    }
    let mut prose = String::with_capacity(query.len());
    let mut fenced = false;
    for line in query.lines() {
        let text = line.trim_start();
        if text.starts_with("```") || text.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        let session = text.starts_with(">>>")
            || text == "..."
            || text.starts_with("... ")
            || text.starts_with("In [")
            || text.starts_with("Out[")
            || text.starts_with("Traceback (")
            || text.starts_with("File \"");
        if fenced || session {
            continue;
        }
        prose.push_str(line);
        prose.push('\n');
    }
    if prose.split_whitespace().count() < 3 {
        return Cow::Borrowed(query);
    }
    Cow::Owned(prose)
}

/// The text outside double quotes.
fn outside_quotes(text: &str) -> String {
    text.split('"').step_by(2).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_aside_means_a_long_text_besides_its_quotes() {
        let message =
            "\"the graph store mutex was poisoned by a writer that panicked while holding it\"";
        let alone = SearchQuery::new(message);
        assert!(alone.long && !alone.quotes_aside);
        let issue = format!("lookups fail after a writer panics and every later call logs {message} for each lookup");
        assert!(SearchQuery::new(&issue).quotes_aside);
        assert!(!SearchQuery::new("retry a failed request").quotes_aside);
    }

    #[test]
    fn pasted_means_long_and_on_several_lines() {
        let question = "how are several sorted key streams merged in order with a priority queue";
        assert!(SearchQuery::new(question).long && !SearchQuery::new(question).pasted);
        let issue = "Merging sorted streams drops keys\nWith three streams of ten keys each the merged stream holds twenty-nine.";
        assert!(SearchQuery::new(issue).pasted);
        assert!(!SearchQuery::new("retry\nfailed requests").pasted);
        assert!(!SearchQuery::new(&format!("{question}\n")).pasted);
    }

    #[test]
    fn a_long_query_is_embedded_without_its_code() {
        let issue = "Exponent doesn't fully simplify\n\
                     Say I have code like this:\n\
                     ```\n\
                     expr1 = S(1)/2*x**2.5\n\
                     res = simplify(res.evalf(5))\n\
                     ```\n\
                     >>> print(res)\n\
                     ... more\n\
                     Traceback (most recent call last):\n  \
                       File \"sympy/core/expr.py\", line 12, in evalf\n\
                     The output is -0.5*x**2.5 + 0.5*x**2.5, how do I simplify it to 0?\n";
        let text = embedding_text(issue);
        assert_eq!(
            text,
            "Exponent doesn't fully simplify\nSay I have code like this:\n\
             The output is -0.5*x**2.5 + 0.5*x**2.5, how do I simplify it to 0?\n"
        );
        // Short queries, and a long one that is all code, stay whole.
        assert_eq!(
            embedding_text("retry a failed request"),
            "retry a failed request"
        );
        let code = "```\nlet a = b + c + d + e + f + g + h + i + j + k + l + m;\n```";
        assert_eq!(embedding_text(code), code);
    }
}
