//! The parsed form of one symbol query ([`SymbolQuery`]).
//! Owns: splitting a qualified query into name and container parts and
//! folding both, once per request.
//! Never: look at a table, score anything, or panic on any text.

use crate::chunk::ChunkKind;

use super::fold::{fold, is_query_separator, normalize_container, Folded};

/// A parsed symbol query; build it once per request with [`SymbolQuery::parse`].
#[derive(Clone, Debug)]
pub struct SymbolQuery {
    /// The last segment, matched against symbol names.
    pub(super) name: Folded,
    /// That segment as written, case kept: of two definitions whose names
    /// both equal the query when case is folded, the one spelt like it.
    written: Box<str>,
    /// The normalised leading segments of a qualified query.
    pub(super) container: Option<Vec<u8>>,
    /// For a qualified query, the whole text lowercased: a symbol whose name
    /// is literally that text (a heading such as `v1.2`) is an exact match.
    pub(super) literal: Option<Vec<u8>>,
    pub(super) kind: Option<ChunkKind>,
}

impl SymbolQuery {
    /// `text` may be a bare name (`lookup`, `grstlk`), or qualified:
    /// `GraphStore::lookup`, `Class.method`, `Class#method`, `pkg.Func`.
    /// Qualified: the last segment is matched against the name with the
    /// tiers; the leading segments must match (case-insensitive; subsequence
    /// is accepted, contiguous and prefix rank higher) the symbol's container
    /// part of `qualified_name`. A trailing separator (`GraphStore::`) lists
    /// the members of matching containers. A separator next to whitespace
    /// (`1. Intro`) does not split. `kind` keeps only symbols of that kind.
    pub fn parse(text: &str, kind: Option<ChunkKind>) -> SymbolQuery {
        let text = text.trim();
        let split = text.char_indices().rfind(|&(i, c)| {
            is_query_separator(c) && {
                let before = text[..i].chars().next_back();
                let after = text[i + c.len_utf8()..].chars().next();
                !before.is_some_and(char::is_whitespace) && !after.is_some_and(char::is_whitespace)
            }
        });
        if let Some((i, c)) = split {
            let container = normalize_container(&text[..i]);
            if !container.is_empty() {
                let name_text = text[i + c.len_utf8()..].trim();
                return SymbolQuery {
                    name: fold(name_text),
                    written: name_text.into(),
                    container: Some(container),
                    literal: Some(fold(text).bytes),
                    kind,
                };
            }
        }
        let name_text = text.trim_start_matches(is_query_separator);
        SymbolQuery {
            name: fold(name_text),
            written: name_text.into(),
            container: None,
            literal: None,
            kind,
        }
    }

    /// The part matched against symbol names, lowercased: `lookup` of
    /// `GraphStore::lookup`.
    pub fn name(&self) -> &str {
        std::str::from_utf8(&self.name.bytes).unwrap_or("")
    }

    /// The part matched against symbol names as written: `Lookup` of
    /// `GraphStore::Lookup`.
    pub fn written_name(&self) -> &str {
        &self.written
    }

    /// True when the query can match nothing sensible (no name and no
    /// container); `search` then returns no results.
    pub fn is_empty(&self) -> bool {
        self.name.bytes.is_empty() && self.container.is_none()
    }
}
