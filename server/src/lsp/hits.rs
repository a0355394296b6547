//! What `quarry/search` and `workspace/symbol` answer: the wire types
//! (`SearchHit`, `SearchResponse`), hits shaped against the open buffer or
//! the file as it is now (`shape_hit`: the symbol re-located, its name's
//! range selected), several folders' lists merged without breaking any
//! folder's order (`merge_folders`), and the local search over every folder
//! (`search_all`).
//!
//! Never: change the engine's order within a folder.

use super::overlay;
use super::overlay::Overlay;
use super::state::{log, State};
use quarry_engine::chunk::{detect_language, ChunkKind};
use quarry_engine::search::{
    find_again, is_preamble, snippet, DiskText, Hit, Mode, SearchOptions, Source, SymbolHit,
    TextSource,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::path::Path;
use tower_lsp_server::ls_types::*;

pub(super) fn symbol_kind(kind: &str) -> SymbolKind {
    match ChunkKind::from_name(kind) {
        Some(ChunkKind::Function) => SymbolKind::FUNCTION,
        Some(ChunkKind::Method) => SymbolKind::METHOD,
        Some(ChunkKind::Class) => SymbolKind::CLASS,
        Some(ChunkKind::Struct) => SymbolKind::STRUCT,
        Some(ChunkKind::Enum) => SymbolKind::ENUM,
        Some(ChunkKind::Trait | ChunkKind::Interface) => SymbolKind::INTERFACE,
        Some(ChunkKind::Impl) => SymbolKind::CLASS,
        Some(ChunkKind::Module) => SymbolKind::MODULE,
        Some(ChunkKind::Constant | ChunkKind::Static) => SymbolKind::CONSTANT,
        Some(ChunkKind::Variable) => SymbolKind::VARIABLE,
        Some(ChunkKind::TypeAlias) => SymbolKind::TYPE_PARAMETER,
        Some(ChunkKind::Macro) => SymbolKind::FUNCTION,
        Some(ChunkKind::Field) => SymbolKind::FIELD,
        Some(ChunkKind::Section | ChunkKind::Lines) | None => SymbolKind::STRING,
    }
}

/// Lines `start..=end` (1-based) as an LSP range: line starts, the end
/// exclusive at the start of the next line.
pub(super) fn line_range(start_line: u32, end_line: u32) -> Range {
    Range {
        start: Position::new(start_line.saturating_sub(1), 0),
        end: Position::new(end_line, 0),
    }
}

/// `quarry/search` parameters.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchParams {
    pub query: String,
    pub limit: Option<usize>,
    pub per_file_cap: Option<usize>,
    #[serde(default)]
    pub paths: Vec<String>,
    #[serde(default)]
    pub languages: Vec<String>,
    #[serde(default)]
    pub kinds: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    pub uri: Uri,
    /// The whole definition, doc comment and attributes included.
    pub range: Range,
    /// Where to open it: the symbol's name (past its doc comment and
    /// decorators), or for a phrase hit the first place the phrase is.
    pub selection_range: Range,
    pub symbol: String,
    /// How to show the hit (`impl Trait for X` for an impl block).
    pub label: String,
    /// The line that matched the query, or the signature.
    pub detail: String,
    pub kind: &'static str,
    pub language: &'static str,
    /// Falls strictly down the list.
    pub score: f32,
    #[serde(serialize_with = "crate::wire::source_names")]
    pub sources: Vec<Source>,
    pub snippet: String,
    /// Over a hub: the repository and commit the hit comes from (the
    /// commit is absent for the workspace's own, current text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResponse {
    #[serde(serialize_with = "crate::wire::mode_name")]
    pub mode: Mode,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub coverage: Value,
    pub hits: Vec<SearchHit>,
    /// No chunk matched the query's words or names: the hits, if any, are
    /// only near it in meaning.
    pub no_match: bool,
    /// `starting` while a folder's index is still loading (the answer may
    /// be empty for that reason alone), else `ready`.
    pub state: &'static str,
    /// Who answered: `hub` (the shared index, the workspace's changes
    /// overlaid) or `local` (the workspace's own index).
    pub source: &'static str,
    /// Over a hub: repositories searched, candidate files and the overlay.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hub: Option<Value>,
}

/// A hit re-located in an open buffer: the chunk of the same qualified name
/// and kind nearest its indexed line, or `None` if the symbol is gone.
pub(super) fn relocate(hit: &Hit, text: &str, snippet_lines: usize) -> Option<(Range, String)> {
    let language = detect_language(Path::new(&hit.path))?;
    let kind = ChunkKind::from_name(hit.kind)?;
    let chunk = find_again(&hit.path, text, language, &hit.symbol, kind, hit.start_line)?;
    let range = Range {
        start: overlay::position(text, chunk.byte_start as usize),
        end: overlay::position(text, chunk.byte_end as usize),
    };
    let snippet = snippet(text, chunk.start_line, chunk.end_line, snippet_lines);
    Some((range, snippet))
}

/// A hit as the response shows it, at `uri`: re-located in `buffer` when
/// the file is open (`None` when its symbol is gone from the buffer), its
/// selection at the name (or the phrase) in the file's current `text`.
pub(super) fn shape_hit(
    hit: Hit,
    uri: Uri,
    buffer: Option<&str>,
    text: &mut dyn TextSource,
    phrases: &[String],
    snippet_lines: usize,
) -> Option<SearchHit> {
    let (range, snippet) = match buffer {
        Some(buffer) => relocate(&hit, buffer, snippet_lines)?,
        None => (
            line_range(hit.start_line, hit.end_line),
            hit.snippet.clone(),
        ),
    };
    let pinned_phrase = hit.sources.contains(&Source::Phrase);
    let selection_range = text
        .text(&hit.path)
        .and_then(|file| {
            let needles: Vec<&str> = if pinned_phrase {
                phrases.iter().map(String::as_str).collect()
            } else {
                Vec::new()
            };
            name_position(file, range.start.line, range.end.line, &hit.name, &needles)
        })
        // A text window opens at the line that matched.
        .or_else(|| {
            (!ChunkKind::from_name(hit.kind).is_some_and(ChunkKind::is_definition))
                .then(|| Position::new(hit.detail_line.saturating_sub(1), 0))
        })
        .map_or(Range::new(range.start, range.start), |at| {
            Range::new(at, at)
        });
    Some(SearchHit {
        uri,
        range,
        selection_range,
        symbol: hit.symbol,
        label: hit.label,
        detail: hit.detail,
        kind: hit.kind,
        language: hit.language,
        score: hit.score,
        sources: hit.sources,
        snippet,
        repo: None,
        commit: None,
    })
}

/// Current text for a search: an open buffer if the file is open, else the
/// disk; each file is fetched at most once, and only if a hit needs it.
pub(super) struct LiveText<'a> {
    pub(super) root: &'a Path,
    pub(super) overlay: &'a Overlay,
    pub(super) disk: DiskText,
}

impl quarry_engine::search::TextSource for LiveText<'_> {
    fn text(&mut self, path: &str) -> Option<&str> {
        if !self.disk.has_text(path) {
            if let Some(buffer) = open_buffer(self.overlay, self.root, path) {
                self.disk.set_text(path, buffer.text);
            }
        }
        self.disk.text(path)
    }
}

/// The open buffer of `path` (relative to `root`), if there is one and its
/// path passes `confine::check_new`: a buffer opened through a symlink
/// that leads out of the root is never served.
pub(super) fn open_buffer(overlay: &Overlay, root: &Path, path: &str) -> Option<overlay::Buffer> {
    let abs = root.join(path);
    let buffer = overlay.get(&abs)?;
    quarry_engine::confine::check_new(root, &abs).ok()?;
    Some(buffer)
}

/// Where a hit spanning lines `start..end` (0-based, end exclusive) of
/// `text` should open: the first of `phrases` found (case-insensitive),
/// else `name` as a whole word on a line that is not a comment or
/// decorator, else `name` anywhere. UTF-16 columns.
pub(super) fn name_position(
    text: &str,
    start: u32,
    end: u32,
    name: &str,
    phrases: &[&str],
) -> Option<Position> {
    let lines: Vec<(u32, &str)> = text
        .lines()
        .enumerate()
        .skip(start as usize)
        .take(end.saturating_sub(start).max(1) as usize)
        .map(|(i, l)| (i as u32, l))
        .collect();
    let column = |line: &str, byte: usize| line[..byte].encode_utf16().count() as u32;
    for phrase in phrases {
        let phrase = phrase.to_lowercase();
        for (n, line) in &lines {
            if let Some(at) = line.to_lowercase().find(&phrase) {
                // Lowercasing can move bytes; then the line's start.
                let at = if line.is_char_boundary(at) { at } else { 0 };
                return Some(Position::new(*n, column(line, at)));
            }
        }
    }
    if name.is_empty() {
        return None;
    }
    let word_at = |line: &str| {
        line.match_indices(name).map(|(i, _)| i).find(|&i| {
            let before = line[..i].chars().next_back();
            let after = line[i + name.len()..].chars().next();
            let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            !ident(before) && !ident(after)
        })
    };
    let found = lines
        .iter()
        .filter(|(_, line)| !is_preamble(line))
        .find_map(|(n, line)| word_at(line).map(|i| (*n, *line, i)))
        .or_else(|| {
            lines
                .iter()
                .find_map(|(n, line)| word_at(line).map(|i| (*n, *line, i)))
        })?;
    Some(Position::new(found.0, column(found.1, found.2)))
}

/// The range of a symbol's written name; empty when the name as indexed
/// is not how it is written (`Display for GraphStore`).
pub(super) fn name_range(hit: &SymbolHit) -> Range {
    let start = Position::new(hit.name_line.saturating_sub(1), hit.name_column);
    let simple = !hit.name.is_empty()
        && hit
            .name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '$'));
    let width = if simple {
        hit.name.encode_utf16().count() as u32
    } else {
        0
    };
    Range::new(start, Position::new(start.line, start.character + width))
}

/// Whether a hit was pinned above the fused order (exact name, verified
/// phrase).
pub(super) fn is_pinned(hit: &SearchHit) -> bool {
    hit.sources.iter().any(|s| s.is_pinned())
}

/// Merges each folder's ranked hits without breaking any folder's order:
/// pinned hits of every folder first, then by score, comparing only the
/// folders' next hits (ties go to the earlier folder). One folder's list
/// comes back as it is.
pub(super) fn merge_folders(lists: Vec<Vec<SearchHit>>, limit: usize) -> Vec<SearchHit> {
    let mut lists: Vec<std::iter::Peekable<std::vec::IntoIter<SearchHit>>> = lists
        .into_iter()
        .map(|l| l.into_iter().peekable())
        .collect();
    let mut out = Vec::new();
    while out.len() < limit {
        let mut best: Option<(usize, bool, f32)> = None;
        for (i, list) in lists.iter_mut().enumerate() {
            let Some(head) = list.peek() else { continue };
            let key = (is_pinned(head), head.score);
            let better = match best {
                None => true,
                Some((_, pinned, score)) => {
                    (key.0 && !pinned) || (key.0 == pinned && key.1 > score)
                }
            };
            if better {
                best = Some((i, key.0, key.1));
            }
        }
        let Some((i, _, _)) = best else { break };
        out.extend(lists[i].next());
    }
    out
}

/// A symbol hit as `workspace/symbol` shows it, with its tier's rank
/// (exact first).
pub(super) fn symbol_information(hit: SymbolHit, uri: Uri) -> (u8, SymbolInformation) {
    let tier = match hit.tier {
        "exact" => 0,
        "prefix" => 1,
        "word" => 2,
        _ => 3,
    };
    let is_impl = hit.kind == ChunkKind::Impl.name();
    let container = hit
        .qualified_name
        .strip_suffix(hit.name.as_str())
        .map(|c| c.trim_end_matches([':', '.', '#']).to_string())
        .filter(|c| !c.is_empty() && !is_impl);
    let range = name_range(&hit);
    // `impl X` never looks like the type X itself.
    let name = if is_impl {
        ChunkKind::Impl.label(&hit.qualified_name)
    } else {
        hit.name
    };
    #[allow(deprecated)]
    (
        tier,
        SymbolInformation {
            name,
            kind: symbol_kind(hit.kind),
            tags: None,
            deprecated: None,
            // At the name, not the doc comment or
            // decorator above it (the editor opens and
            // highlights this range).
            location: Location { uri, range },
            container_name: container,
        },
    )
}

/// No text at all: hits of other repositories keep their indexed ranges.
pub(super) struct NoText;

impl TextSource for NoText {
    fn text(&mut self, _path: &str) -> Option<&str> {
        None
    }
}

/// Runs a search over every folder and merges the hits (`merge_folders`).
/// A branch that failed at run time is logged and named in `reason`.
pub(super) fn search_all(state: &State, query: &str, options: &SearchOptions) -> SearchResponse {
    let engine = state.engine();
    let mut response = SearchResponse {
        mode: Mode::Hybrid,
        reason: None,
        coverage: json!({"embedded": 0, "total": 0}),
        hits: Vec::new(),
        no_match: true,
        state: "ready",
        source: "local",
        hub: None,
    };
    // A mode promises less than the next (`Mode`'s order): the merged
    // response claims no more than its weakest folder.
    let weaken = |response: &mut SearchResponse, mode: Mode, reason: Option<String>| {
        if mode < response.mode {
            response.mode = mode;
            response.reason = reason;
        } else if mode == response.mode && response.reason.is_none() {
            response.reason = reason;
        }
    };
    let (mut embedded, mut total) = (0u64, 0u64);
    let mut any = false;
    let mut walked_any = false;
    let mut lists = Vec::new();
    let tiers = state.tiers();
    for folder in state.folders() {
        let Some(index) = folder.index() else {
            weaken(
                &mut response,
                Mode::Lexical,
                Some(format!("{} is still being indexed", folder.root.display())),
            );
            response.state = "starting";
            continue;
        };
        let walked = folder
            .last_walk
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some();
        if !walked {
            // Open but not walked yet: an empty answer says nothing.
            response.state = "starting";
        }
        any = true;
        walked_any |= walked;
        let snapshot = index.snapshot();
        let mut text = LiveText {
            root: &folder.root,
            overlay: &state.overlay,
            disk: DiskText::of(&index),
        };
        let results = tiers.search(&snapshot, query, options, &mut text);
        let phrases = results.phrases.clone();
        let usable = engine.as_ref().is_some_and(|e| e.unavailable().is_none());
        if results.mode == Mode::Lexical && usable && snapshot.vectors.is_some() {
            // The model is there and vectors exist: the dense branch
            // failed at run time.
            log(&format!(
                "search {query:?} in {}: {}",
                folder.root.display(),
                results.reason.as_deref().unwrap_or("dense branch failed")
            ));
        }
        weaken(&mut response, results.mode, results.reason.clone());
        response.no_match &= results.no_match;
        embedded += results.coverage.embedded;
        total += results.coverage.total;
        let mut hits = Vec::with_capacity(results.hits.len());
        for hit in results.hits {
            let Some(uri) = Uri::from_file_path(folder.root.join(&hit.path)) else {
                continue;
            };
            let buffer = open_buffer(&state.overlay, &folder.root, &hit.path);
            let buffer = buffer.as_ref().map(|b| b.text.as_str());
            hits.extend(shape_hit(
                hit,
                uri,
                buffer,
                &mut text,
                &phrases,
                options.snippet_lines,
            ));
        }
        lists.push(hits);
    }
    if !any && response.reason.is_none() {
        response.mode = Mode::Lexical;
        response.reason = Some("no workspace folder is open".into());
    }
    if engine.is_none() && response.mode != Mode::Lexical {
        response.mode = Mode::Lexical;
        response.reason = Some("the embedding model is not loaded yet".into());
    }
    response.hits = merge_folders(lists, options.limit);
    quarry_engine::rank::make_falling(&mut response.hits, |hit| &mut hit.score);
    if !walked_any {
        response.no_match = false;
    }
    response.coverage = json!({"embedded": embedded, "total": total});
    response
}
