//! The stemmer the lexical branch and the ranking signals share: query
//! words and identifier parts meet at their stems (`retries`, `retrying`
//! and `retry` are one term).
//!
//! Never: allocate more than the stem, or change a word that is not
//! lowercase ASCII.

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
}
