//! Where an identifier's word parts begin and end: the one rule that both
//! the lexical tokenizer (`lexical::tokenize`) and the symbol index
//! (`symbols::fold`) split names by, so that a part the symbol search
//! matches is a part the lexical index holds.
//!
//! Owns: the character classes, the part boundaries, and the folded form
//! names are compared in ([`squash`]).
//! Never: knows about tokens, queries or indexes; `split_parts` never
//! lowercases or allocates.

/// Lowercase letters and digits only: `GraphStore`, `graph_store`,
/// `graph-store` and `zig-clap`'s `zigclap` compare equal this way.
pub fn squash(word: &str) -> String {
    word.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// What a character is to the splitter. Letters without case (CJK, Arabic,
/// ...) count as lowercase, so `データBase` splits like `dataBase`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    Separator,
    Upper,
    Lower,
    Digit,
}

fn class_of(c: char) -> Class {
    if c.is_numeric() {
        Class::Digit
    } else if c.is_uppercase() {
        Class::Upper
    } else if c.is_alphabetic() {
        Class::Lower
    } else {
        Class::Separator
    }
}

/// Calls `sink(start, end)` with the byte range of each part of `name`, in
/// order. Any character that is not a letter or digit (`_`, `-`, `::`)
/// separates parts and belongs to none; inside a run of letters and digits
/// a part ends at lower -> Upper, at letter <-> digit, and before the last
/// capital of an acronym followed by lowercase: `HTTPServerError2x` gives
/// `HTTP|Server|Error|2|x`, `snake_case-kebab` gives `snake|case|kebab`.
pub fn split_parts(name: &str, sink: &mut dyn FnMut(usize, usize)) {
    let mut start: Option<usize> = None;
    let mut prev = Class::Separator;
    let mut chars = name.char_indices().peekable();
    while let Some((offset, c)) = chars.next() {
        let cur = class_of(c);
        if cur == Class::Separator {
            if let Some(s) = start.take() {
                sink(s, offset);
            }
            prev = cur;
            continue;
        }
        let next = chars.peek().map_or(Class::Separator, |&(_, n)| class_of(n));
        let boundary = match (prev, cur) {
            (Class::Lower, Class::Upper) => true,
            (Class::Upper, Class::Upper) => next == Class::Lower,
            (Class::Digit, Class::Digit) => false,
            (Class::Digit, _) | (_, Class::Digit) => true,
            _ => false,
        };
        match start {
            None => start = Some(offset),
            Some(s) if boundary => {
                sink(s, offset);
                start = Some(offset);
            }
            Some(_) => {}
        }
        prev = cur;
    }
    if let Some(s) = start {
        sink(s, name.len());
    }
}

#[cfg(test)]
mod tests {
    use super::split_parts;

    fn parts(name: &str) -> Vec<&str> {
        let mut out = Vec::new();
        split_parts(name, &mut |s, e| out.push(&name[s..e]));
        out
    }

    #[test]
    fn splits_case_acronyms_digits_and_separators() {
        let cases: &[(&str, &[&str])] = &[
            ("HTTPServerError", &["HTTP", "Server", "Error"]),
            ("HTTPServerError2x", &["HTTP", "Server", "Error", "2", "x"]),
            ("utf8Decode", &["utf", "8", "Decode"]),
            ("parseURL", &["parse", "URL"]),
            ("__init__", &["init"]),
            ("snake_case-kebab", &["snake", "case", "kebab"]),
            ("GraphStore::lookup", &["Graph", "Store", "lookup"]),
            ("v2", &["v", "2"]),
            ("123", &["123"]),
            ("x", &["x"]),
            ("+=", &[]),
            ("", &[]),
        ];
        for (name, want) in cases {
            assert_eq!(parts(name), *want, "{name}");
        }
    }

    #[test]
    fn letters_without_case_split_like_lowercase() {
        assert_eq!(parts("データBase"), ["データ", "Base"]);
        assert_eq!(parts("名前2"), ["名前", "2"]);
        assert_eq!(parts("Größe"), ["Größe"]);
    }
}
