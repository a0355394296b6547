//! File classification: which bytes are indexed as text (not binary, not
//! minified) and chunking that never panics.

use super::segment::SkipReason;
use crate::chunk::{chunk_file, Chunk, Language};

/// Bytes inspected for a NUL to call a file binary.
pub(super) const BINARY_SNIFF_BYTES: usize = 8 * 1024;
/// A line longer than this is a long line (minified code, a data URI).
pub(super) const MINIFIED_MAX_LINE: usize = 4096;
/// A file whose long lines hold more than this share of its bytes is
/// minified / generated; a hand-written file with one long line (a data
/// URI, an embedded table) is indexed.
pub(super) const MINIFIED_LONG_SHARE: f64 = 0.8;
/// Files whose average line is longer than this are minified.
pub(super) const MINIFIED_AVG_LINE: usize = 300;

/// Decodes file bytes (lossily when they are not UTF-8), or says why the
/// file is not indexed.
pub(crate) fn classify(bytes: Vec<u8>) -> Result<String, SkipReason> {
    let sniff = &bytes[..bytes.len().min(BINARY_SNIFF_BYTES)];
    if sniff.contains(&0) {
        return Err(SkipReason::Binary);
    }
    let mut n_lines = 1usize;
    let mut long_bytes = 0usize;
    let mut line_start = 0usize;
    for (i, byte) in bytes.iter().enumerate() {
        if *byte == b'\n' {
            if i - line_start > MINIFIED_MAX_LINE {
                long_bytes += i - line_start;
            }
            line_start = i + 1;
            n_lines += 1;
        }
    }
    if bytes.len() - line_start > MINIFIED_MAX_LINE {
        long_bytes += bytes.len() - line_start;
    }
    let long_share = long_bytes as f64 / bytes.len().max(1) as f64;
    if long_share > MINIFIED_LONG_SHARE
        || (n_lines > 1 && bytes.len() / n_lines > MINIFIED_AVG_LINE)
    {
        return Err(SkipReason::Minified);
    }
    Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
    })
}

/// Chunks a file; a panic inside a grammar or query is contained and the
/// file is indexed as plain text instead.
pub(crate) fn safe_chunk(path: &str, text: &str, language: Language) -> Vec<Chunk> {
    std::panic::catch_unwind(|| chunk_file(path, text, language))
        .or_else(|_| std::panic::catch_unwind(|| chunk_file(path, text, Language::Text)))
        .unwrap_or_default()
}
