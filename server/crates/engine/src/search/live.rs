//! Hits resolved against live text: where a file's current text comes
//! from (an open buffer or the disk), a chunk's range in the file as it is
//! now, and snippets.
//!
//! Owns: `TextSource`, `DiskText`, `locate_now`, `find_again`, `snippet`.
//! Never: reads a file twice in one search, trusts an indexed range over
//! the current text.

use super::options::SearchOptions;
use super::results::{Hit, Source};
use crate::chunk::ChunkKind;
use crate::index::segment::{ChunkRecord, Segment};
use crate::lexical::tokenize::tokenize;
use crate::lexical::Query;
use rustc_hash::FxHashMap;
use std::path::PathBuf;

/// Where the current text of a file comes from: the disk, or an editor's
/// open buffer.
pub trait TextSource {
    fn text(&mut self, path: &str) -> Option<&str>;
}

/// Reads files under a root, each at most once per search.
pub struct DiskText {
    root: PathBuf,
    limit: u64,
    cache: FxHashMap<String, Option<String>>,
}

impl DiskText {
    /// Reads under `root`, which must be canonical (`Index::root` is):
    /// `confine` compares real paths. A file over `limit` bytes is not
    /// read (`Index::disk_text` passes the index's size limit).
    pub fn new(root: impl Into<PathBuf>, limit: u64) -> DiskText {
        DiskText {
            root: root.into(),
            limit,
            cache: FxHashMap::default(),
        }
    }
}

impl DiskText {
    /// The current text of `index`'s files for a search: read confined
    /// and within the index's size limit (a file that grew past it since
    /// it was indexed is not read: its hits are dropped, never stalled on).
    pub fn of(index: &crate::index::Index) -> DiskText {
        DiskText::new(index.root(), index.max_file_size())
    }

    /// Uses `text` as the current text of `path` (an editor's open buffer)
    /// instead of reading the file.
    pub fn set_text(&mut self, path: &str, text: String) {
        self.cache.insert(path.to_string(), Some(text));
    }

    /// Whether `path`'s text was already read or set.
    pub fn has_text(&self, path: &str) -> bool {
        self.cache.contains_key(path)
    }
}

impl TextSource for DiskText {
    fn text(&mut self, path: &str) -> Option<&str> {
        let (root, limit) = (&self.root, self.limit);
        self.cache
            .entry(path.to_string())
            .or_insert_with(|| {
                crate::confine::read_text(root, std::path::Path::new(path), limit).ok()
            })
            .as_deref()
    }
}

/// A chunk's lines in the file as it is now: as indexed when the file's
/// text still has the indexed hash; otherwise the chunk of the same name
/// and kind nearest its old line in the re-parsed text; `None` when the
/// symbol is gone (the hit is dropped, never shown with a range that no
/// longer exists). A file that cannot be read now (deleted, or refused by
/// `confine`: replaced by a symlink out of the root or a FIFO) gives no hit.
pub fn locate_now(
    segment: &Segment,
    chunk: &ChunkRecord,
    text: Option<&str>,
    fresh: &mut FxHashMap<String, bool>,
) -> Option<(u32, u32)> {
    let text = text?;
    let path = segment.path_of(chunk);
    // Hashed once per file and search, however many hits it has.
    let unchanged = *fresh.entry(path.to_string()).or_insert_with(|| {
        let hash = *blake3::hash(text.as_bytes()).as_bytes();
        segment
            .rows
            .iter()
            .any(|row| *row.path == *path && row.hash == hash)
    });
    if unchanged {
        return Some((chunk.start_line, chunk.end_line));
    }
    let found = find_again(
        path,
        text,
        chunk.language,
        &chunk.qualified_name,
        chunk.kind,
        chunk.start_line,
    )?;
    Some((found.start_line, found.end_line))
}

/// The definition named `qualified_name` of `kind` in `text` nearest
/// `line`: how a hit is found again in a file that changed since it was
/// indexed (by the search for files on disk, by the server for open
/// buffers).
pub fn find_again(
    path: &str,
    text: &str,
    language: crate::chunk::Language,
    qualified_name: &str,
    kind: ChunkKind,
    line: u32,
) -> Option<crate::chunk::Chunk> {
    crate::chunk::chunk_file(path, text, language)
        .into_iter()
        .filter(|c| *c.qualified_name == *qualified_name && c.kind == kind)
        .min_by_key(|c| c.start_line.abs_diff(line))
}

/// The hit for a chunk, its range, snippet and detail line from the
/// current text (`locate_now`); `None` when the chunk's symbol is no
/// longer there.
#[allow(clippy::too_many_arguments)]
pub(super) fn make_hit(
    segment: &Segment,
    chunk: &ChunkRecord,
    score: f32,
    sources: Vec<Source>,
    query: &Query,
    options: &SearchOptions,
    text: &mut dyn TextSource,
    fresh: &mut FxHashMap<String, bool>,
) -> Option<Hit> {
    let path = segment.path_of(chunk);
    let file = text.text(path);
    let (start_line, end_line) = locate_now(segment, chunk, file, fresh)?;
    let snippet = file
        .map(|file| snippet(file, start_line, end_line, options.snippet_lines))
        .unwrap_or_default();
    let (detail_line, detail) = file
        .and_then(|file| matched_line(file, start_line, end_line, query))
        .unwrap_or((start_line, String::new()));
    Some(Hit {
        chunk_id: chunk.chunk_id,
        path: path.to_string(),
        start_line,
        end_line,
        symbol: chunk.qualified_name.to_string(),
        name: chunk.name.to_string(),
        label: chunk.kind.label(&chunk.qualified_name),
        kind: chunk.kind.name(),
        language: chunk.language.name(),
        score,
        sources,
        ranks: Default::default(),
        snippet,
        detail,
        detail_line,
    })
}

/// Most characters of a detail line.
const DETAIL_CHARS: usize = 160;

/// The line of lines `start..=end` (1-based) of `file` to show beside a
/// hit, with its number: the first holding one of the query's quoted
/// phrases (case-insensitive), else the one holding the most weight of
/// the query's terms (the first of equals), else the signature: the
/// first line with text that is not a comment or decorator. Trimmed and
/// shortened; `None` for an empty range.
pub fn matched_line(file: &str, start: u32, end: u32, query: &Query) -> Option<(u32, String)> {
    let lines: Vec<(u32, &str)> = file
        .lines()
        .enumerate()
        .skip(start.saturating_sub(1) as usize)
        .take(end.saturating_sub(start) as usize + 1)
        .map(|(i, line)| (i as u32 + 1, line))
        .filter(|(_, line)| !line.trim().is_empty())
        .collect();
    let phrases: Vec<String> = query.phrases.iter().map(|p| normalize(&p.text)).collect();
    let with_phrase = lines.iter().find(|(_, line)| {
        let line = normalize(line);
        phrases
            .iter()
            .any(|p| !p.is_empty() && line.contains(p.as_str()))
    });
    let best = with_phrase.copied().or_else(|| {
        let mut best: Option<((u32, &str), f32)> = None;
        for &(n, line) in &lines {
            let mut seen = vec![false; query.terms.len()];
            tokenize(line, &mut |token| {
                if let Some(i) = query.terms.iter().position(|t| t == token) {
                    seen[i] = true;
                }
            });
            let weight: f32 = (0..seen.len())
                .filter(|&i| seen[i])
                .map(|i| query.weight(i))
                .sum();
            if weight > 0.0 && best.is_none_or(|(_, w)| weight > w) {
                best = Some(((n, line), weight));
            }
        }
        best.map(|(line, _)| line)
    });
    let (n, line) = best
        .or_else(|| lines.iter().find(|(_, l)| !is_preamble(l)).copied())
        .or_else(|| lines.first().copied())?;
    let line = line.trim();
    let shown = match line.char_indices().nth(DETAIL_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    };
    Some((n, shown))
}

/// A line that only documents or decorates what follows.
pub fn is_preamble(line: &str) -> bool {
    let line = line.trim_start();
    ["//", "/*", "*", "#", "@", "--", "\"\"\"", "'''"]
        .iter()
        .any(|p| line.starts_with(p))
}

/// The chunk's bytes in `file`, or nothing when the file has changed under it.
pub(super) fn chunk_text<'t>(file: &'t str, chunk: &ChunkRecord) -> &'t str {
    file.get(chunk.byte_start as usize..chunk.byte_end as usize)
        .unwrap_or("")
}

/// Lowercase with every whitespace run collapsed to one space.
pub(super) fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

/// Up to `max_lines` lines of the range, leading blank lines skipped.
pub fn snippet(file: &str, start_line: u32, end_line: u32, max_lines: usize) -> String {
    let first = start_line.saturating_sub(1) as usize;
    let n_range = end_line.saturating_sub(start_line) as usize + 1;
    let lines: Vec<&str> = file
        .lines()
        .skip(first)
        .take(n_range)
        .skip_while(|l| l.trim().is_empty())
        .take(max_lines)
        .collect();
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_collapses_whitespace_and_case() {
        assert_eq!(
            normalize("  Graph_Store\n\t mutex  POISONED "),
            "graph_store mutex poisoned"
        );
    }

    #[test]
    fn the_detail_is_the_phrase_then_the_words_then_the_signature() {
        let file = "/// Doc.\n#[inline]\npub fn walk(x: u32) {\n    let n = 1;\n    \"binary file matches\"\n    retry(backoff)\n}\n";
        let line = |q: &str| matched_line(file, 1, 7, &Query::parse(q));
        assert_eq!(
            line("\"Binary file  matches\""),
            Some((5, "\"binary file matches\"".into()))
        );
        assert_eq!(
            line("retry with backoff"),
            Some((6, "retry(backoff)".into()))
        );
        assert_eq!(line("quokka"), Some((3, "pub fn walk(x: u32) {".into())));
        assert_eq!(matched_line(file, 40, 50, &Query::parse("x")), None);
        let long = "x".repeat(500);
        let (_, shown) = matched_line(&long, 1, 1, &Query::parse("y")).unwrap();
        assert_eq!(shown.chars().count(), DETAIL_CHARS + 1);
    }

    #[test]
    fn snippet_clamps_to_range_and_file() {
        let file = "a\n\nb\nc\nd\n";
        assert_eq!(snippet(file, 2, 4, 10), "b\nc");
        assert_eq!(snippet(file, 3, 100, 2), "b\nc");
        assert_eq!(snippet(file, 50, 60, 3), "");
    }
}
