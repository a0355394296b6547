//! Parsing a search query into weighted terms and quoted phrases.
//!
//! Words outside quotes are tokenized like code, minus English stopwords
//! (only plain lowercase words count as stopwords; `For` or `is_empty` never
//! do). Text inside double quotes is a phrase: all its tokens must occur in a
//! chunk, and the exact phrase is verified against the chunk text later.
//! Never: look at the index (this is pure text processing).

use super::tokenize::{is_code_word, is_stopword, tokenize};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Query {
    /// The text as typed.
    pub raw: String,
    /// Distinct tokens to score, in first-seen order.
    pub terms: Vec<String>,
    /// How much each term counts (multiplies its idf), indexed like
    /// `terms`: 1 for short queries; in a long query, code-like evidence
    /// (identifiers, paths, backticked words) and repeated words count more.
    pub weights: Vec<f32>,
    /// Quoted phrases, in order.
    pub phrases: Vec<Phrase>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Phrase {
    /// The phrase as typed, without its quotes.
    pub text: String,
    /// Indices into `Query::terms`; a chunk holding all of them is checked
    /// for the exact phrase.
    pub term_idx: Vec<usize>,
}

/// From this many plain words on, a query is long (an issue text, a stack
/// trace) and its terms are weighted by evidence.
pub const LONG_QUERY_WORDS: usize = 12;
/// Whether a query's text is long (an issue, a traceback, a long
/// description) for the ranking and the dense branch: [`LONG_QUERY_WORDS`]
/// words or more, stopwords included. (The term weights below count only
/// the words that are not stopwords.)
pub fn is_long_query(text: &str) -> bool {
    text.split_whitespace().count() >= LONG_QUERY_WORDS
}

/// Weight of a term from a code-like word of a long query.
const CODE_EVIDENCE_WEIGHT: f32 = 2.0;
/// How much each repetition of a term adds in a long query (log-scaled).
const REPEAT_WEIGHT: f32 = 0.5;
/// Weight of a name assigned in a pasted snippet (`expr1 = ...`).
const LOCAL_NAME_WEIGHT: f32 = 0.5;
/// Fewest terms of a phrase that ranks first in a long query.
const LONG_QUERY_MIN_PHRASE_TERMS: usize = 3;

impl Query {
    pub fn parse(raw: &str) -> Query {
        let mut query = Query {
            raw: raw.to_string(),
            ..Query::default()
        };
        // Per term: occurrences and whether any occurrence looked like code.
        let mut seen: Vec<(u32, bool)> = Vec::new();
        let mut words_text = String::new();
        let mut rest = raw;
        while let Some(open) = rest.find('"') {
            words_text.push_str(&rest[..open]);
            words_text.push(' ');
            let after = &rest[open + 1..];
            match after.find('"') {
                Some(close) => {
                    let text = after[..close].trim();
                    if !text.is_empty() {
                        let mut term_idx = Vec::new();
                        tokenize(text, &mut |t| {
                            let idx = query.intern(t, &mut seen, false);
                            if !term_idx.contains(&idx) {
                                term_idx.push(idx);
                            }
                        });
                        if !term_idx.is_empty() {
                            query.phrases.push(Phrase {
                                text: text.to_string(),
                                term_idx,
                            });
                        }
                    }
                    rest = &after[close + 1..];
                }
                None => {
                    // An unbalanced quote: treat the rest as plain words.
                    rest = after;
                }
            }
        }
        words_text.push_str(rest);

        let mut plain = Vec::new();
        let mut all_stop = true;
        let mut in_backticks = false;
        let words: Vec<&str> = words_text.split_whitespace().collect();
        // `x = ...` in a pasted snippet: `x` is a local name of the example,
        // not a name in the code base.
        let assigned: Vec<bool> = (0..words.len())
            .map(|i| words.get(i + 1).is_some_and(|next| *next == "="))
            .collect();
        for &word in &words {
            let stop = is_plain_lowercase(word) && is_stopword(strip_punct(word));
            all_stop &= stop;
            // `code` spans: a backtick opens or closes one (an odd count).
            let ticks = word.matches('`').count();
            let code = in_backticks || ticks > 0 || looks_like_code(word);
            if ticks % 2 == 1 {
                in_backticks = !in_backticks;
            }
            plain.push((word, stop, code));
        }
        let mut local = vec![false; seen.len()];
        for (i, &(word, stop, code)) in plain.iter().enumerate() {
            // A query made only of stopwords keeps them: something beats nothing.
            if stop && !all_stop {
                continue;
            }
            tokenize(word, &mut |t| {
                let idx = query.intern(t, &mut seen, code);
                local.resize(seen.len(), false);
                local[idx] |= assigned[i];
            });
        }
        let long = plain.iter().filter(|(_, stop, _)| !stop).count() >= LONG_QUERY_WORDS;
        if long {
            // In a long text, quoted single words and short strings ("foo",
            // "x") are example values, not messages to find: they count as
            // words. Longer phrases (an error message) still rank first
            // when verified.
            query
                .phrases
                .retain(|p| p.term_idx.len() >= LONG_QUERY_MIN_PHRASE_TERMS);
        }
        query.weights = seen
            .iter()
            .zip(&local)
            .map(|(&(count, code), &local)| {
                if !long {
                    return 1.0;
                }
                let base = if local {
                    LOCAL_NAME_WEIGHT
                } else if code {
                    CODE_EVIDENCE_WEIGHT
                } else {
                    1.0
                };
                base * (1.0 + REPEAT_WEIGHT * (count as f32).ln())
            })
            .collect();
        query
    }

    fn intern(&mut self, term: &str, seen: &mut Vec<(u32, bool)>, code: bool) -> usize {
        let idx = match self.terms.iter().position(|t| t == term) {
            Some(idx) => idx,
            None => {
                self.terms.push(term.to_string());
                seen.push((0, false));
                self.terms.len() - 1
            }
        };
        seen[idx].0 += 1;
        seen[idx].1 |= code;
        idx
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The weight of term `idx` (1 when out of range).
    pub fn weight(&self, idx: usize) -> f32 {
        self.weights.get(idx).copied().unwrap_or(1.0)
    }
}

/// Code evidence in a long query: a word written like code, or a path.
fn looks_like_code(word: &str) -> bool {
    is_code_word(word) || word.contains('/')
}

fn strip_punct(word: &str) -> &str {
    word.trim_matches(|c: char| !c.is_alphanumeric())
}

fn is_plain_lowercase(word: &str) -> bool {
    let core = strip_punct(word);
    !core.is_empty() && core.chars().all(|c| c.is_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(raw: &str, terms: &[&str], phrases: &[(&str, &[usize])]) {
        let q = Query::parse(raw);
        assert_eq!(q.terms, terms, "terms of {raw:?}");
        let got: Vec<(&str, &[usize])> = q
            .phrases
            .iter()
            .map(|p| (p.text.as_str(), p.term_idx.as_slice()))
            .collect();
        assert_eq!(got, phrases, "phrases of {raw:?}");
    }

    #[test]
    fn natural_language_drops_stopwords() {
        check(
            "where do we retry failed requests?",
            &["retry", "failed", "requests"],
            &[],
        );
    }

    #[test]
    fn identifiers_are_never_stopwords() {
        check("For is_a", &["for", "is_a", "is"], &[]);
    }

    #[test]
    fn only_stopwords_are_kept() {
        check("the", &["the"], &[]);
    }

    #[test]
    fn quoted_phrase_and_words() {
        check(
            "\"graph_store mutex poisoned\" lock",
            &["graph_store", "graph", "store", "mutex", "poisoned", "lock"],
            &[("graph_store mutex poisoned", &[0, 1, 2, 3, 4])],
        );
    }

    #[test]
    fn long_queries_weight_code_evidence_and_repeats() {
        let q = Query::parse(
            "When I call the parser on a file with a `BOM` header the reader fails, \
             see src/io/reader.py and parse_header: the parser fails again and again",
        );
        let w = |t: &str| q.weight(q.terms.iter().position(|x| x == t).expect(t));
        assert_eq!(w("call"), 1.0);
        assert_eq!(w("bom"), 2.0);
        assert_eq!(w("parse_header"), 2.0);
        assert!(w("reader") > 2.0, "a path word, seen twice");
        assert!(
            w("fails") > 1.0 && w("fails") < 2.0,
            "a prose word, seen twice"
        );
        // Names assigned in a snippet are the example's locals; short quoted
        // values are plain words in a long text, messages stay phrases.
        let q = Query::parse(
            "Calling simplify on the sum fails when I build the expression like this in \
             the shell: expr1 = Symbol(\"x\") + cos_term and the error reads \
             \"cannot simplify nested cosine terms\" every time",
        );
        let w = |t: &str| q.weight(q.terms.iter().position(|x| x == t).expect(t));
        assert_eq!(w("expr1"), 0.5);
        assert_eq!(w("cos_term"), 2.0);
        let phrases: Vec<&str> = q.phrases.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(phrases, ["cannot simplify nested cosine terms"]);
        // Short queries weigh every term alike.
        let q = Query::parse("parse_header reader fails");
        assert!(q.weights.iter().all(|w| *w == 1.0));
    }

    #[test]
    fn unbalanced_and_empty_quotes() {
        check("\"\" foo \"bar", &["foo", "bar"], &[]);
        check("\"", &[], &[]);
    }
}
