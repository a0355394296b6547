//! Search filters: path globs (include and exclude), languages and symbol
//! kinds. A `Filter` is built once per query from user input (which it
//! validates) and asked about each candidate by every branch before fusion,
//! so a filtered query still fills its limit.
//!
//! Never: look at the index or the file system; a filter is a pure predicate
//! over (path, language, kind).

use crate::chunk::{ChunkKind, Language};
use globset::{Glob, GlobSet, GlobSetBuilder};

/// Why user-supplied filter values were refused.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    #[error("bad path glob {glob:?}: {reason}")]
    Glob { glob: String, reason: String },
    #[error("unknown language {0:?} (known: {known})", known = known_languages())]
    Language(String),
    #[error("unknown symbol kind {0:?} (known: {known})", known = known_kinds())]
    Kind(String),
}

fn known_languages() -> String {
    Language::ALL.map(Language::name).join(", ")
}

fn known_kinds() -> String {
    ChunkKind::ALL.map(ChunkKind::name).join(", ")
}

/// What a query may return. The default accepts everything.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    include: Option<GlobSet>,
    exclude: Option<GlobSet>,
    /// Empty: any language.
    languages: Vec<Language>,
    /// Empty: any kind.
    kinds: Vec<ChunkKind>,
}

impl Filter {
    /// A filter from user input. Paths are workspace-relative with `/`; a
    /// glob without a `/` also matches at any depth (`*.rs`, `tests`), and a
    /// glob naming a folder matches everything under it (`src/index`).
    /// Language and kind names are those of `quarry search --json` output;
    /// `ts` and `tsx` both select TypeScript's two grammars.
    pub fn new(
        include: &[String],
        exclude: &[String],
        languages: &[String],
        kinds: &[String],
    ) -> Result<Filter, FilterError> {
        let mut parsed_languages = Vec::new();
        for name in languages {
            let name = name.trim().to_ascii_lowercase();
            let found = match name.as_str() {
                "typescript" | "ts" => vec![Language::TypeScript, Language::Tsx],
                "javascript" | "js" => vec![Language::JavaScript],
                "py" => vec![Language::Python],
                "rs" => vec![Language::Rust],
                "c++" => vec![Language::Cpp],
                "c#" | "cs" => vec![Language::CSharp],
                "md" => vec![Language::Markdown],
                other => match Language::from_name(other) {
                    Some(language) => vec![language],
                    None => return Err(FilterError::Language(name.clone())),
                },
            };
            parsed_languages.extend(found);
        }
        let mut parsed_kinds = Vec::new();
        for name in kinds {
            let name = name.trim().to_ascii_lowercase();
            match ChunkKind::from_name(&name) {
                Some(kind) => parsed_kinds.push(kind),
                None => return Err(FilterError::Kind(name)),
            }
        }
        Ok(Filter {
            include: glob_set(include)?,
            exclude: glob_set(exclude)?,
            languages: parsed_languages,
            kinds: parsed_kinds,
        })
    }

    /// True when nothing is filtered out.
    pub fn is_empty(&self) -> bool {
        self.include.is_none()
            && self.exclude.is_none()
            && self.languages.is_empty()
            && self.kinds.is_empty()
    }

    /// Whether a chunk of `kind` in `language` at `path` may be returned.
    pub fn accepts(&self, path: &str, language: Language, kind: ChunkKind) -> bool {
        self.accepts_language_and_kind(language, kind) && self.accepts_path(path)
    }

    /// The language and kind part of `accepts`.
    pub fn accepts_language_and_kind(&self, language: Language, kind: ChunkKind) -> bool {
        (self.languages.is_empty() || self.languages.contains(&language))
            && (self.kinds.is_empty() || self.kinds.contains(&kind))
    }

    /// The path part of `accepts`.
    pub fn accepts_path(&self, path: &str) -> bool {
        self.include.as_ref().is_none_or(|set| set.is_match(path))
            && !self.exclude.as_ref().is_some_and(|set| set.is_match(path))
    }
}

/// Each glob `g` becomes `g` and `g/**`; one without a `/` also `**/g` and
/// `**/g/**`.
fn glob_set(globs: &[String]) -> Result<Option<GlobSet>, FilterError> {
    let globs: Vec<&str> = globs
        .iter()
        .map(|g| g.trim().trim_start_matches("./").trim_end_matches('/'))
        .filter(|g| !g.is_empty())
        .collect();
    if globs.is_empty() {
        return Ok(None);
    }
    let mut builder = GlobSetBuilder::new();
    for glob in globs {
        let mut forms = vec![glob.to_string(), format!("{glob}/**")];
        if !glob.contains('/') {
            forms.push(format!("**/{glob}"));
            forms.push(format!("**/{glob}/**"));
        }
        for form in forms {
            let parsed = Glob::new(&form).map_err(|e| FilterError::Glob {
                glob: glob.to_string(),
                reason: e.kind().to_string(),
            })?;
            builder.add(parsed);
        }
    }
    builder.build().map(Some).map_err(|e| FilterError::Glob {
        glob: String::new(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(include: &[&str], exclude: &[&str]) -> Filter {
        let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Filter::new(&own(include), &own(exclude), &[], &[]).unwrap()
    }

    #[test]
    fn globs_match_files_folders_and_any_depth() {
        let f = filter(&["*.rs"], &[]);
        assert!(f.accepts_path("src/index/mod.rs"));
        assert!(!f.accepts_path("src/app.py"));
        let f = filter(&["src/index"], &[]);
        assert!(f.accepts_path("src/index/mod.rs"));
        assert!(!f.accepts_path("src/lexical/mod.rs"));
        let f = filter(&[], &["tests", "*.min.js"]);
        assert!(!f.accepts_path("tests/golden.rs"));
        assert!(!f.accepts_path("server/tests/golden.rs"));
        assert!(!f.accepts_path("web/app.min.js"));
        assert!(f.accepts_path("server/src/search.rs"));
        assert!(Filter::default().is_empty());
        assert!(!f.is_empty());
    }

    #[test]
    fn languages_and_kinds_are_validated() {
        let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let f = Filter::new(&[], &[], &own(&["ts", "Rust"]), &own(&["function"])).unwrap();
        assert!(f.accepts("a.tsx", Language::Tsx, ChunkKind::Function));
        assert!(f.accepts("a.rs", Language::Rust, ChunkKind::Function));
        assert!(!f.accepts("a.py", Language::Python, ChunkKind::Function));
        assert!(!f.accepts("a.rs", Language::Rust, ChunkKind::Struct));
        let err = Filter::new(&[], &[], &own(&["cobol"]), &[]).unwrap_err();
        assert!(
            err.to_string().contains("unknown language \"cobol\""),
            "{err}"
        );
        let err = Filter::new(&[], &[], &[], &own(&["widget"])).unwrap_err();
        assert!(err.to_string().contains("known: function"), "{err}");
        let err = Filter::new(&own(&["src/[a"]), &[], &[], &[]).unwrap_err();
        assert!(err.to_string().contains("bad path glob"), "{err}");
    }
}
