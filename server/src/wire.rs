//! The JSON the CLI (`--json`) and the MCP server's structured content
//! write for the engine's answers: search results and hits, symbol hits,
//! and the same over a hub. The engine returns plain typed data; this is
//! the one place its JSON shape is written down (the language server's
//! LSP-shaped types are `lsp::hits`).
//!
//! Owns: field names, their order and which are left out when empty.
//! Never: computes anything an answer does not hold.

use quarry_engine::hub::{HubHit, HubResults, HubSymbol, OverlayInfo};
use quarry_engine::search::{Coverage, Hit, Mode, SearchResults, Source, SymbolHit};
use serde::Serialize;
use std::collections::BTreeMap;

/// How many chunks have a vector, of how many.
#[derive(Serialize)]
pub struct CoverageJson {
    pub embedded: u64,
    pub total: u64,
}

impl From<Coverage> for CoverageJson {
    fn from(c: Coverage) -> CoverageJson {
        CoverageJson {
            embedded: c.embedded,
            total: c.total,
        }
    }
}

/// One search hit.
#[derive(Serialize)]
pub struct HitJson<'a> {
    pub path: &'a str,
    pub start_line: u32,
    pub end_line: u32,
    pub symbol: &'a str,
    pub name: &'a str,
    pub label: &'a str,
    pub kind: &'static str,
    pub language: &'static str,
    pub score: f32,
    #[serde(serialize_with = "source_names")]
    pub sources: &'a [Source],
    pub ranks: &'a BTreeMap<&'static str, u32>,
    pub snippet: &'a str,
    pub detail: &'a str,
    pub detail_line: u32,
}

impl<'a> From<&'a Hit> for HitJson<'a> {
    fn from(h: &'a Hit) -> HitJson<'a> {
        HitJson {
            path: &h.path,
            start_line: h.start_line,
            end_line: h.end_line,
            symbol: &h.symbol,
            name: &h.name,
            label: &h.label,
            kind: h.kind,
            language: h.language,
            score: h.score,
            sources: &h.sources,
            ranks: &h.ranks,
            snippet: &h.snippet,
            detail: &h.detail,
            detail_line: h.detail_line,
        }
    }
}

/// What every search answer starts with: how it ran, why, its vector
/// coverage, its hits (`H`: local or hub hits) and whether anything matched.
#[derive(Serialize)]
pub struct AnswerJson<'a, H> {
    #[serde(serialize_with = "mode_name")]
    pub mode: Mode,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'a str>,
    pub coverage: CoverageJson,
    pub hits: Vec<H>,
    pub no_match: bool,
}

/// A local search's answer.
pub type ResultsJson<'a> = AnswerJson<'a, HitJson<'a>>;

impl<'a> From<&'a SearchResults> for ResultsJson<'a> {
    fn from(r: &'a SearchResults) -> ResultsJson<'a> {
        AnswerJson {
            mode: r.mode,
            reason: r.reason.as_deref(),
            coverage: r.coverage.into(),
            hits: r.hits.iter().map(HitJson::from).collect(),
            no_match: r.no_match,
        }
    }
}

/// A hub hit: the hit, its repository and commit.
#[derive(Serialize)]
pub struct HubHitJson<'a> {
    pub repo: &'a str,
    pub commit: &'a str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub local: bool,
    #[serde(flatten)]
    pub hit: HitJson<'a>,
}

impl<'a> From<&'a HubHit> for HubHitJson<'a> {
    fn from(h: &'a HubHit) -> HubHitJson<'a> {
        HubHitJson {
            repo: &h.repo,
            commit: &h.commit,
            local: h.local,
            hit: (&h.hit).into(),
        }
    }
}

/// The workspace's changes overlaid on a hub's commit.
#[derive(Serialize)]
pub struct OverlayJson<'a> {
    pub repo: &'a str,
    pub commit: &'a str,
    pub source: &'static str,
    pub masked: usize,
}

impl<'a> From<&'a OverlayInfo> for OverlayJson<'a> {
    fn from(o: &'a OverlayInfo) -> OverlayJson<'a> {
        OverlayJson {
            repo: &o.repo,
            commit: &o.commit,
            source: o.source.name(),
            masked: o.masked,
        }
    }
}

/// A search's answer over a hub.
#[derive(Serialize)]
pub struct HubResultsJson<'a> {
    #[serde(flatten)]
    pub answer: AnswerJson<'a, HubHitJson<'a>>,
    pub repos: usize,
    pub candidate_chunks: usize,
    pub candidate_files: usize,
    pub overlay_files: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overlay: Option<OverlayJson<'a>>,
}

impl<'a> From<&'a HubResults> for HubResultsJson<'a> {
    fn from(r: &'a HubResults) -> HubResultsJson<'a> {
        HubResultsJson {
            answer: AnswerJson {
                mode: r.mode,
                reason: r.reason.as_deref(),
                coverage: r.coverage.into(),
                hits: r.hits.iter().map(HubHitJson::from).collect(),
                no_match: r.no_match,
            },
            repos: r.repos,
            candidate_chunks: r.candidate_chunks,
            candidate_files: r.candidate_files,
            overlay_files: r.overlay_files,
            overlay: r.overlay.as_ref().map(OverlayJson::from),
        }
    }
}

/// A definition found by name.
#[derive(Serialize)]
pub struct SymbolJson<'a> {
    pub path: &'a str,
    pub start_line: u32,
    pub end_line: u32,
    pub name_line: u32,
    pub name_column: u32,
    pub name: &'a str,
    pub qualified_name: &'a str,
    pub kind: &'static str,
    pub language: &'static str,
    pub tier: &'static str,
}

impl<'a> From<&'a SymbolHit> for SymbolJson<'a> {
    fn from(s: &'a SymbolHit) -> SymbolJson<'a> {
        SymbolJson {
            path: &s.path,
            start_line: s.start_line,
            end_line: s.end_line,
            name_line: s.name_line,
            name_column: s.name_column,
            name: &s.name,
            qualified_name: &s.qualified_name,
            kind: s.kind,
            language: s.language,
            tier: s.tier,
        }
    }
}

/// A definition found by name in a hub.
#[derive(Serialize)]
pub struct HubSymbolJson<'a> {
    pub repo: &'a str,
    pub commit: &'a str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub local: bool,
    #[serde(flatten)]
    pub symbol: SymbolJson<'a>,
}

impl<'a> From<&'a HubSymbol> for HubSymbolJson<'a> {
    fn from(s: &'a HubSymbol) -> HubSymbolJson<'a> {
        HubSymbolJson {
            repo: &s.repo,
            commit: &s.commit,
            local: s.local,
            symbol: (&s.symbol).into(),
        }
    }
}

/// Symbol hits, as a list.
pub fn symbols(hits: &[SymbolHit]) -> Vec<SymbolJson<'_>> {
    hits.iter().map(SymbolJson::from).collect()
}

/// Hub symbol hits, as a list.
pub fn hub_symbols(hits: &[HubSymbol]) -> Vec<HubSymbolJson<'_>> {
    hits.iter().map(HubSymbolJson::from).collect()
}

/// Serialises a [`Mode`] by its name (for a typed field of a wire struct).
pub fn mode_name<S: serde::Serializer>(mode: &Mode, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(mode.name())
}

/// Serialises [`Source`]s by their names (for a typed field of a wire
/// struct).
pub fn source_names<S: serde::Serializer>(list: &[Source], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(list.iter().map(|source| source.name()))
}
