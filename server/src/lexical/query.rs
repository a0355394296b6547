//! Parsing a search query into weighted terms and quoted phrases.
//!
//! Words outside quotes are tokenized like code, minus English stopwords
//! (only plain lowercase words count as stopwords; `For` or `is_empty` never
//! do). Text inside double quotes is a phrase: all its tokens must occur in a
//! chunk, and the exact phrase is verified against the chunk text later.
//! Never: look at the index (this is pure text processing).

use super::tokenize::{is_stopword, tokenize};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Query {
    /// The text as typed.
    pub raw: String,
    /// Distinct tokens to score, in first-seen order.
    pub terms: Vec<String>,
    /// Quoted phrases, in order.
    pub phrases: Vec<Phrase>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Phrase {
    /// The phrase as typed, without its quotes.
    pub text: String,
    /// Indices into `Query::terms` that must all occur in a chunk.
    pub term_idx: Vec<usize>,
}

impl Query {
    pub fn parse(raw: &str) -> Query {
        let mut query = Query {
            raw: raw.to_string(),
            ..Query::default()
        };
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
                            let idx = query.intern(t);
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
        for word in words_text.split_whitespace() {
            let stop = is_plain_lowercase(word) && is_stopword(strip_punct(word));
            all_stop &= stop;
            plain.push((word, stop));
        }
        for (word, stop) in plain {
            // A query made only of stopwords keeps them: something beats nothing.
            if stop && !all_stop {
                continue;
            }
            tokenize(word, &mut |t| {
                query.intern(t);
            });
        }
        query
    }

    fn intern(&mut self, term: &str) -> usize {
        match self.terms.iter().position(|t| t == term) {
            Some(idx) => idx,
            None => {
                self.terms.push(term.to_string());
                self.terms.len() - 1
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }
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
    fn unbalanced_and_empty_quotes() {
        check("\"\" foo \"bar", &["foo", "bar"], &[]);
        check("\"", &[], &[]);
    }
}
