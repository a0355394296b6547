//! Chunking without a grammar: Markdown by heading, everything else by
//! overlapping line windows; plus the small string helpers the extractor
//! shares.
//!
//! Invariant: every byte range produced here lies on char boundaries, even
//! when a single line is longer than a window and has to be cut.
//! Never: allocate per line beyond the chunk fields, or panic on any input.

use super::types::{Chunk, ChunkKind, Language};

/// Lines per window.
pub(crate) const WINDOW_LINES: usize = 40;
/// Lines shared by consecutive windows.
pub(crate) const WINDOW_OVERLAP: usize = 10;
/// Most bytes in one window; longer lines are cut at a char boundary.
pub(crate) const MAX_WINDOW_BYTES: usize = 16 * 1024;

/// The largest char boundary `<= pos` (and `<= text.len()`).
pub(crate) fn clamp_to_char_boundary(text: &str, pos: usize) -> usize {
    let mut pos = pos.min(text.len());
    while pos > 0 && !text.is_char_boundary(pos) {
        pos -= 1;
    }
    pos
}

/// Collapses runs of whitespace to single spaces and trims; keeps at most
/// `max_chars` characters.
pub(crate) fn collapse_whitespace(raw: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(raw.len().min(max_chars * 4));
    let mut chars = 0;
    let mut pending_space = false;
    for c in raw.chars() {
        if c.is_whitespace() {
            pending_space = !out.is_empty();
            continue;
        }
        if pending_space {
            if chars + 1 >= max_chars {
                break;
            }
            out.push(' ');
            chars += 1;
            pending_space = false;
        }
        if chars >= max_chars {
            break;
        }
        out.push(c);
        chars += 1;
    }
    out
}

/// 1-based line number of every line start, computed incrementally.
struct LineIndex<'a> {
    text: &'a str,
    /// Byte offset of the start of each line.
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    fn new(text: &'a str) -> Self {
        let mut starts = Vec::with_capacity(text.len() / 32 + 1);
        starts.push(0);
        starts.extend(memchr_newlines(text.as_bytes()).map(|i| i + 1));
        if starts.last() == Some(&text.len()) && starts.len() > 1 {
            // A final line break does not start another line.
            starts.pop();
        }
        LineIndex { text, starts }
    }

    /// 1-based line containing byte `pos`.
    fn line_of(&self, pos: usize) -> u32 {
        let index = self.starts.partition_point(|&s| s <= pos);
        u32::try_from(index.max(1)).unwrap_or(u32::MAX)
    }

    /// 1-based last line of the non-empty range ending at `end`.
    fn last_line(&self, start: usize, end: usize) -> u32 {
        let last = if end > start { end - 1 } else { start };
        self.line_of(last)
    }

    fn line_count(&self) -> usize {
        self.starts.len()
    }

    /// End of line `index` (0-based), including its line break.
    fn line_end(&self, index: usize) -> usize {
        self.starts
            .get(index + 1)
            .copied()
            .unwrap_or(self.text.len())
    }
}

fn memchr_newlines(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    bytes
        .iter()
        .enumerate()
        .filter_map(|(i, &b)| (b == b'\n').then_some(i))
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Overlapping windows of [`WINDOW_LINES`] lines, kind `Lines`, named
/// `path:start-end`. Windows of only whitespace are skipped.
pub(crate) fn line_windows(path: &str, text: &str, language: Language) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    if text.is_empty() {
        return chunks;
    }
    let index = LineIndex::new(text);
    let mut start = 0usize;
    let mut guard = 0usize;
    while start < text.len() && guard <= text.len() {
        guard += 1;
        let first_line = index.line_of(start) as usize - 1;
        let mut end = start;
        let mut lines = 0usize;
        let mut cut = false;
        while lines < WINDOW_LINES && end < text.len() {
            let line_end = index.line_end(index.line_of(end) as usize - 1);
            if line_end - start > MAX_WINDOW_BYTES {
                if lines == 0 {
                    // One huge line: cut it at a char boundary.
                    end = clamp_to_char_boundary(text, start + MAX_WINDOW_BYTES);
                    if end <= start {
                        end = next_char_boundary(text, start + 1);
                    }
                    cut = true;
                }
                break;
            }
            end = line_end;
            lines += 1;
        }
        let body = text.get(start..end).unwrap_or("");
        if !body.trim().is_empty() {
            let start_line = index.line_of(start);
            let end_line = index.last_line(start, end);
            let name = format!("{path}:{start_line}-{end_line}");
            chunks.push(Chunk {
                language,
                kind: ChunkKind::Lines,
                name: name.clone(),
                qualified_name: name,
                container: None,
                byte_start: to_u32(start),
                byte_end: to_u32(end),
                start_line,
                end_line,
                name_line: start_line,
                name_column: 0,
                signature: String::new(),
                doc: String::new(),
            });
        }
        if end >= text.len() {
            break;
        }
        // Step back by the overlap when the window ended on whole lines.
        let next_line = first_line + lines;
        start = if !cut && lines > WINDOW_OVERLAP && next_line < index.line_count() {
            index.starts[next_line - WINDOW_OVERLAP]
        } else {
            end
        };
    }
    chunks
}

/// Line windows over the text that no definition covers: module docs,
/// imports and top-level statements between (and around) the byte ranges
/// in `covered` (sorted by start; nested ranges allowed). A gap of only
/// whitespace and punctuation (a closing brace) yields nothing. Every line
/// of a file with definitions is then inside some chunk.
pub(crate) fn gap_windows(
    path: &str,
    text: &str,
    language: Language,
    covered: impl IntoIterator<Item = (usize, usize)>,
) -> Vec<Chunk> {
    let index = LineIndex::new(text);
    let mut gaps = Vec::new();
    let mut pos = 0usize;
    for (start, end) in covered {
        if start > pos {
            gaps.push((pos, start));
        }
        pos = pos.max(end);
    }
    if pos < text.len() {
        gaps.push((pos, text.len()));
    }
    let mut out = Vec::new();
    for (start, end) in gaps {
        let (Some(gap), true) = (text.get(start..end), start < end) else {
            continue;
        };
        if gap.chars().filter(|c| c.is_alphanumeric()).count() < 3 {
            continue;
        }
        // Whole lines: from the line holding the first non-blank byte to
        // the end of the line holding the last one, clamped to the gap.
        let first = start + gap.len() - gap.trim_start().len();
        let last = start + gap.trim_end().len();
        let line_start = index.starts[index.line_of(first) as usize - 1].max(start);
        let line_end = index.line_end(index.line_of(last.saturating_sub(1)) as usize - 1);
        let (from, to) = (
            clamp_to_char_boundary(text, line_start),
            clamp_to_char_boundary(text, line_end.min(end)),
        );
        out.extend(windows_between(path, text, language, &index, from, to));
    }
    out
}

/// [`line_windows`] over `text[from..to]` (`from` at a line start), placed
/// in the file: byte and line positions shifted, named `path:start-end`.
/// Empty when the range is empty or not on char boundaries.
fn windows_between(
    path: &str,
    text: &str,
    language: Language,
    index: &LineIndex<'_>,
    from: usize,
    to: usize,
) -> Vec<Chunk> {
    let Some(body) = text.get(from..to).filter(|body| !body.is_empty()) else {
        return Vec::new();
    };
    let line_offset = index.line_of(from) - 1;
    let mut windows = line_windows(path, body, language);
    for window in &mut windows {
        window.byte_start += to_u32(from);
        window.byte_end += to_u32(from);
        window.start_line += line_offset;
        window.end_line += line_offset;
        window.name_line = window.start_line;
        window.name = format!("{path}:{}-{}", window.start_line, window.end_line);
        window.qualified_name = window.name.clone();
    }
    windows
}

/// Definitions longer than this many lines get passage windows.
pub(crate) const LONG_DEFINITION_LINES: u32 = 60;
/// Lines at the top of a long definition left to the definition itself
/// (signature, doc, first statements); passages start after them.
pub(crate) const DEFINITION_HEAD_LINES: u32 = 30;

/// Passage windows inside long leaf definitions (a 500-line function, a
/// macro whose doc is a manual): line windows after the definition's first
/// [`DEFINITION_HEAD_LINES`] lines, each with the definition as its
/// container (qualified name `container:start-end`). Nested in the
/// definition, they take those lines out of its own body, so no searchable unit grows past a few dozen lines: a query
/// matching one paragraph of a long function finds that paragraph instead
/// of losing to BM25 length normalisation over the whole body.
/// `definitions` must be sorted by (start ascending, end descending); a
/// definition with another nested in it (a class, an impl) is left whole.
pub(crate) fn passage_windows(
    path: &str,
    text: &str,
    language: Language,
    definitions: &[Chunk],
) -> Vec<Chunk> {
    let mut out = Vec::new();
    let mut index: Option<LineIndex<'_>> = None;
    for (i, chunk) in definitions.iter().enumerate() {
        let is_leaf = definitions
            .get(i + 1)
            .is_none_or(|next| next.byte_start >= chunk.byte_end);
        if !is_leaf || chunk.end_line - chunk.start_line < LONG_DEFINITION_LINES {
            continue;
        }
        let index = index.get_or_insert_with(|| LineIndex::new(text));
        let first_line = (chunk.start_line + DEFINITION_HEAD_LINES) as usize;
        let Some(&from) = index.starts.get(first_line - 1) else {
            continue;
        };
        for mut window in
            windows_between(path, text, language, index, from, chunk.byte_end as usize)
        {
            window.qualified_name = format!(
                "{}:{}-{}",
                chunk.qualified_name, window.start_line, window.end_line
            );
            window.container = Some(chunk.qualified_name.clone());
            out.push(window);
        }
    }
    out
}

fn next_char_boundary(text: &str, pos: usize) -> usize {
    let mut pos = pos.min(text.len());
    while pos < text.len() && !text.is_char_boundary(pos) {
        pos += 1;
    }
    pos
}

/// A Markdown heading found on one line (or two, for setext headings).
struct Heading {
    level: usize,
    /// Byte offset where the heading starts.
    start: usize,
    title: String,
    /// The heading as written, for the signature.
    line: String,
}

/// Markdown sections: one per heading, spanning to the next heading of the
/// same or a higher level; text before the first heading is a section
/// named after the file. Nested headings are qualified by their parents
/// (`Install > Linux`).
pub(crate) fn markdown_sections(path: &str, text: &str) -> Vec<Chunk> {
    let headings = find_headings(text);
    let index = LineIndex::new(text);
    let mut chunks = Vec::with_capacity(headings.len() + 1);
    let preamble_end = headings.first().map_or(text.len(), |h| h.start);
    let preamble = text.get(..preamble_end).unwrap_or("");
    if !preamble.trim().is_empty() {
        let name = path.rsplit('/').next().unwrap_or(path).to_string();
        chunks.push(section(&index, name, None, 0, preamble_end, String::new()));
    }
    // Open headings: (level, qualified name), innermost last.
    let mut open: Vec<(usize, String)> = Vec::new();
    for (i, heading) in headings.iter().enumerate() {
        let end = headings[i + 1..]
            .iter()
            .find(|h| h.level <= heading.level)
            .map_or(text.len(), |h| h.start);
        while open
            .last()
            .is_some_and(|(level, _)| *level >= heading.level)
        {
            open.pop();
        }
        let container = open.last().map(|(_, qualified)| qualified.clone());
        let chunk = section(
            &index,
            heading.title.clone(),
            container,
            heading.start,
            end,
            heading.line.clone(),
        );
        open.push((heading.level, chunk.qualified_name.clone()));
        chunks.push(chunk);
    }
    chunks
}

fn section(
    index: &LineIndex<'_>,
    name: String,
    container: Option<String>,
    start: usize,
    end: usize,
    signature: String,
) -> Chunk {
    let qualified_name = match &container {
        Some(container) => format!("{container} > {name}"),
        None => name.clone(),
    };
    Chunk {
        language: Language::Markdown,
        kind: ChunkKind::Section,
        qualified_name,
        name,
        container,
        byte_start: to_u32(start),
        byte_end: to_u32(end),
        start_line: index.line_of(start),
        end_line: index.last_line(start, end),
        name_line: index.line_of(start),
        name_column: 0,
        signature,
        doc: String::new(),
    }
}

/// ATX (`## Title`) and setext (`Title` over `===`) headings outside fenced
/// code blocks.
fn find_headings(text: &str) -> Vec<Heading> {
    let mut headings = Vec::new();
    // (fence char, fence length) while inside a fenced block.
    let mut fence: Option<(u8, usize)> = None;
    // Previous line, if it could be a setext heading's text: (start, text).
    let mut paragraph: Option<(usize, &str)> = None;
    let mut pos = front_matter_len(text);
    for raw_line in text.get(pos..).unwrap_or("").split_inclusive('\n') {
        let line_start = pos;
        pos += raw_line.len();
        let line = raw_line.trim_end_matches(['\n', '\r']);
        let indent = line.len() - line.trim_start_matches(' ').len();
        let body = line.trim_start_matches(' ');
        if let Some((fence_char, fence_len)) = fence {
            let run = body.bytes().take_while(|&b| b == fence_char).count();
            if indent < 4 && run >= fence_len && body[run..].trim().is_empty() {
                fence = None;
            }
            continue;
        }
        if indent < 4 {
            let first = body.bytes().next();
            if let Some(fence_char @ (b'`' | b'~')) = first {
                let run = body.bytes().take_while(|&b| b == fence_char).count();
                if run >= 3 {
                    fence = Some((fence_char, run));
                    paragraph = None;
                    continue;
                }
            }
            if first == Some(b'#') {
                let level = body.bytes().take_while(|&b| b == b'#').count();
                let rest = &body[level..];
                if level <= 6 && (rest.is_empty() || rest.starts_with([' ', '\t'])) {
                    let title = atx_title(rest);
                    headings.push(Heading {
                        level,
                        start: line_start,
                        title: collapse_whitespace(title, 200),
                        line: collapse_whitespace(line, 300),
                    });
                    paragraph = None;
                    continue;
                }
            }
            if let Some((para_start, para_text)) = paragraph {
                let setext_level = if !body.is_empty() && body.trim_end().bytes().all(|b| b == b'=')
                {
                    Some(1)
                } else if !body.is_empty() && body.trim_end().bytes().all(|b| b == b'-') {
                    Some(2)
                } else {
                    None
                };
                if let Some(level) = setext_level {
                    headings.push(Heading {
                        level,
                        start: para_start,
                        title: collapse_whitespace(para_text, 200),
                        line: collapse_whitespace(para_text, 300),
                    });
                    paragraph = None;
                    continue;
                }
            }
        }
        let list_or_quote =
            body.starts_with(['>', '|']) || ["- ", "* ", "+ "].iter().any(|m| body.starts_with(m));
        paragraph = if body.trim().is_empty() || indent >= 4 || list_or_quote {
            None
        } else {
            Some((line_start, body.trim()))
        };
    }
    headings
}

/// The title of an ATX heading from the text after its `#` run, without an
/// optional closing `#` sequence.
fn atx_title(rest: &str) -> &str {
    let title = rest.trim();
    let without_closing = title.trim_end_matches('#');
    if without_closing.is_empty() {
        ""
    } else if without_closing.ends_with([' ', '\t']) {
        without_closing.trim_end()
    } else {
        title
    }
}

/// Length of a YAML front matter block (`---` ... `---`) at the top.
fn front_matter_len(text: &str) -> usize {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return 0;
    };
    let mut pos = text.len() - rest.len();
    for line in rest.split_inclusive('\n') {
        pos += line.len();
        if line.trim_end() == "---" || line.trim_end() == "..." {
            return pos;
        }
    }
    0
}
