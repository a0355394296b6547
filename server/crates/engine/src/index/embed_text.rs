//! The text a chunk is embedded as: its qualified name spelled out, its
//! kind and path, then its source with nested definitions cut to their
//! signatures.
//!
//! Owns: that text and the text its vector-cache key is computed from.
//! Never: embed, or read anything but the segment and file text given.

use super::segment::Segment;
use crate::chunk::ChunkKind;
use crate::dense::ChunkText;
use crate::lexical::tokenize::spell_out;

/// What `chunk` is embedded as (see `ChunkText`).
pub fn chunk_text(
    segment: &Segment,
    position: usize,
    file_text: &str,
    token_budget: usize,
) -> ChunkText {
    let Some(chunk) = segment.chunks.get(position) else {
        return ChunkText {
            text: String::new(),
            cache_text: String::new(),
        };
    };
    let max_chars = token_budget.saturating_mul(8);
    let body = source_without_children(segment, position, file_text, max_chars);
    // The name's words spelled out (`Node::find_input` -> "node find
    // input"): the model's vocabulary splits joined identifiers badly.
    let name = &*chunk.qualified_name;
    let name = if chunk.kind == ChunkKind::Lines {
        ""
    } else {
        name
    };
    let words = spell_out(name)
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ");
    let head = if chunk.kind == ChunkKind::Lines {
        // A line window is named by its path and lines: left out, so a
        // moved file keeps its vectors.
        format!("({})", chunk.kind.name())
    } else if words.is_empty() || words == name {
        format!("{} ({})", chunk.qualified_name, chunk.kind.name())
    } else {
        format!("{} ({}): {words}", chunk.qualified_name, chunk.kind.name())
    };
    ChunkText {
        text: format!("{head} {}\n{body}", segment.path_of(chunk)),
        cache_text: format!("{head}\n{body}"),
    }
}

/// A chunk's source with each nested definition replaced by its signature,
/// so a class is embedded as its header, fields and member signatures, and
/// editing one method's body changes one embedded text, not two. At most
/// about `max_chars` bytes.
fn source_without_children(
    segment: &Segment,
    position: usize,
    file_text: &str,
    max_chars: usize,
) -> String {
    let chunk = &segment.chunks[position];
    let slice = |start: u32, end: u32| file_text.get(start as usize..end as usize).unwrap_or("");
    let mut out = String::new();
    let mut cursor = chunk.byte_start;
    // A file's chunks are stored together, sorted by start (outer first).
    for child in &segment.chunks[position + 1..] {
        if out.len() >= max_chars {
            break;
        }
        if child.path_idx != chunk.path_idx || child.byte_start >= chunk.byte_end {
            break;
        }
        if child.byte_start < cursor || child.byte_end > chunk.byte_end {
            continue;
        }
        out.push_str(slice(cursor, child.byte_start));
        out.push_str(&child.signature);
        out.push('\n');
        cursor = child.byte_end;
    }
    out.push_str(slice(cursor, chunk.byte_end));
    let mut cut = out.len().min(max_chars);
    while !out.is_char_boundary(cut) {
        cut -= 1;
    }
    out.truncate(cut);
    out
}
