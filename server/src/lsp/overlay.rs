//! Open editor buffers: their current text, kept in sync from
//! `didOpen`/`didChange`/`didClose` (full or incremental changes), and the
//! conversion between LSP positions (line, UTF-16 column) and byte offsets.
//!
//! Never: touch the index or the disk.

use dashmap::DashMap;
use std::path::{Path, PathBuf};
use tower_lsp_server::ls_types::{Position, TextDocumentContentChangeEvent};

/// One open document.
#[derive(Clone, Debug)]
pub struct Buffer {
    pub text: String,
    pub version: i32,
    /// Edited since it was opened or last saved.
    pub dirty: bool,
}

/// Open buffers by absolute path.
#[derive(Default)]
pub struct Overlay {
    buffers: DashMap<PathBuf, Buffer>,
}

impl Overlay {
    pub fn open(&self, path: PathBuf, text: String, version: i32) {
        self.buffers.insert(
            path,
            Buffer {
                text,
                version,
                dirty: false,
            },
        );
    }

    /// Applies changes in order; a change with a range replaces that range,
    /// one without replaces the whole text. Out-of-range positions are
    /// clamped (a confused client never panics the server).
    pub fn change(&self, path: &Path, version: i32, changes: Vec<TextDocumentContentChangeEvent>) {
        let Some(mut buffer) = self.buffers.get_mut(path) else {
            return;
        };
        for change in changes {
            match change.range {
                Some(range) => {
                    let start = offset(&buffer.text, range.start);
                    let end = offset(&buffer.text, range.end).max(start);
                    buffer.text.replace_range(start..end, &change.text);
                }
                None => buffer.text = change.text,
            }
        }
        buffer.version = version;
        buffer.dirty = true;
    }

    /// After a save the disk holds the buffer's text.
    pub fn saved(&self, path: &Path, text: Option<String>) {
        if let Some(mut buffer) = self.buffers.get_mut(path) {
            if let Some(text) = text {
                buffer.text = text;
            }
            buffer.dirty = false;
        }
    }

    pub fn close(&self, path: &Path) -> Option<Buffer> {
        self.buffers.remove(path).map(|(_, b)| b)
    }

    pub fn get(&self, path: &Path) -> Option<Buffer> {
        self.buffers.get(path).map(|b| b.clone())
    }

    /// Open buffers with unsaved edits under `root`.
    pub fn dirty_under(&self, root: &Path) -> Vec<(PathBuf, String)> {
        self.buffers
            .iter()
            .filter(|b| b.dirty && b.key().starts_with(root))
            .map(|b| (b.key().clone(), b.text.clone()))
            .collect()
    }
}

/// The byte offset of an LSP position (UTF-16 column) in `text`, clamped to
/// the line's end and the text's end.
pub fn offset(text: &str, position: Position) -> usize {
    let mut line_start = 0;
    for _ in 0..position.line {
        match text[line_start..].find('\n') {
            Some(i) => line_start += i + 1,
            None => return text.len(),
        }
    }
    let line_end = text[line_start..]
        .find('\n')
        .map_or(text.len(), |i| line_start + i);
    let mut units = 0u32;
    for (i, c) in text[line_start..line_end].char_indices() {
        if units >= position.character {
            return line_start + i;
        }
        units += c.len_utf16() as u32;
    }
    line_end
}

/// The LSP position of byte `offset` in `text` (clamped, on a char boundary).
pub fn position(text: &str, offset: usize) -> Position {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() as u32;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let character = text[line_start..offset]
        .chars()
        .map(|c| c.len_utf16() as u32)
        .sum();
    Position { line, character }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_lsp_server::ls_types::Range;

    fn change(
        range: Option<((u32, u32), (u32, u32))>,
        text: &str,
    ) -> TextDocumentContentChangeEvent {
        TextDocumentContentChangeEvent {
            range: range.map(|(s, e)| Range {
                start: Position::new(s.0, s.1),
                end: Position::new(e.0, e.1),
            }),
            range_length: None,
            text: text.to_string(),
        }
    }

    #[test]
    fn incremental_changes_apply_in_utf16() {
        let overlay = Overlay::default();
        let path = PathBuf::from("/w/a.rs");
        overlay.open(path.clone(), "fn a() {}\n// é😀x\n".into(), 1);
        overlay.change(&path, 2, vec![change(Some(((0, 3), (0, 4))), "b")]);
        // 😀 is two UTF-16 units: column 5 is just before `x`.
        overlay.change(&path, 3, vec![change(Some(((1, 6), (1, 7))), "y")]);
        let b = overlay.get(&path).unwrap();
        assert_eq!(b.text, "fn b() {}\n// é😀y\n");
        assert!(b.dirty);
        assert_eq!(b.version, 3);
        // Past the end clamps; a full replacement replaces.
        overlay.change(&path, 4, vec![change(Some(((9, 0), (9, 5))), "!")]);
        assert!(overlay.get(&path).unwrap().text.ends_with('!'));
        overlay.change(&path, 5, vec![change(None, "new")]);
        assert_eq!(overlay.get(&path).unwrap().text, "new");
        overlay.saved(&path, None);
        assert!(!overlay.get(&path).unwrap().dirty);
    }

    #[test]
    fn positions_round_trip() {
        let text = "ab\nc😀d\n";
        for at in [0, 1, 3, 4, 8, 9, text.len()] {
            assert_eq!(offset(text, position(text, at)), at, "{at}");
        }
        assert_eq!(position(text, 8), Position::new(1, 3));
    }
}
