//! What a search returns: ranked [`Hit`]s resolved against live text, the
//! [`Mode`] the search ran in and why, and the vector [`Coverage`].
//!
//! Never: rank, or read an index.

use crate::rank::Branch;

/// How a search ran, least promised first (a merged answer claims no more
/// than its weakest part).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mode {
    /// The lexical and symbol branches only (the results say why).
    Lexical,
    /// The dense branch ran, but some chunks have no vector yet.
    Partial,
    /// The dense branch ran over every chunk.
    Hybrid,
}

impl Mode {
    /// `lexical`, `partial` or `hybrid`, as every surface writes it.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Lexical => "lexical",
            Mode::Partial => "partial",
            Mode::Hybrid => "hybrid",
        }
    }

    /// Parses [`Mode::name`].
    pub fn from_name(name: &str) -> Option<Mode> {
        [Mode::Lexical, Mode::Partial, Mode::Hybrid]
            .into_iter()
            .find(|mode| mode.name() == name)
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a hit is listed: a branch found it, or exact-name priority pinned
/// it (`exact`: named like the identifier query; `phrase`: holds every
/// quoted phrase).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Lexical,
    Dense,
    Symbol,
    Exact,
    Phrase,
}

impl Source {
    /// As every surface writes it.
    pub fn name(self) -> &'static str {
        match self {
            Source::Lexical => "lexical",
            Source::Dense => "dense",
            Source::Symbol => "symbol",
            Source::Exact => "exact",
            Source::Phrase => "phrase",
        }
    }

    /// The source a branch's list gives.
    pub fn of(branch: Branch) -> Source {
        match branch {
            Branch::Lexical => Source::Lexical,
            Branch::Dense => Source::Dense,
            Branch::Symbol => Source::Symbol,
        }
    }

    /// The sources joined by `+` (`lexical+dense`), as the text surfaces
    /// print them.
    pub fn joined(sources: &[Source]) -> String {
        sources
            .iter()
            .map(|s| s.name())
            .collect::<Vec<_>>()
            .join("+")
    }

    /// Whether exact-name priority pinned the hit.
    pub fn is_pinned(self) -> bool {
        matches!(self, Source::Exact | Source::Phrase)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    pub chunk_id: u32,
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub symbol: String,
    /// The bare name (`symbol` is the qualified name).
    pub name: String,
    /// How the hit is shown: the qualified name, or `impl X` / `impl
    /// Trait for X` for an impl block (as rust-analyzer labels them).
    pub label: String,
    pub kind: &'static str,
    pub language: &'static str,
    pub score: f32,
    pub sources: Vec<Source>,
    /// 1-based rank in each branch that found the hit.
    pub ranks: std::collections::BTreeMap<&'static str, u32>,
    pub snippet: String,
    /// The line to show beside the hit: the first holding a quoted
    /// phrase, else the one holding most of the query's words, else the
    /// signature (the first line that is not doc comment or decorator).
    pub detail: String,
    /// Where `detail` is, 1-based.
    pub detail_line: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coverage {
    /// Chunks with a vector.
    pub embedded: u64,
    /// Live chunks.
    pub total: u64,
}

#[derive(Clone, Debug)]
pub struct SearchResults {
    /// How the search ran (see [`Mode`]).
    pub mode: Mode,
    /// Why the search is lexical-only or partial, when it is.
    pub reason: Option<String>,
    pub coverage: Coverage,
    pub hits: Vec<Hit>,
    /// No chunk matched the query's words or names: any hits are only
    /// near it in meaning (an identifier that exists nowhere).
    pub no_match: bool,
    /// The idf-weighted share of the query's terms that the best lexical
    /// candidate holds (what lowers the dense weight, see
    /// `FuseConfig::lexical_confidence`).
    pub lexical_coverage: f32,
    /// The query's quoted phrases, as the search read them (a surface
    /// marks them in the hits it shows).
    pub phrases: Vec<String>,
}
