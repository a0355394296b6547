//! Text helpers shared by names and queries: case folding, character-class
//! masks, word-part boundaries, container normalisation and UTF-8 byte
//! searches.
//! Owns: the one definition of how a name or a query is lowercased and split,
//! so byte positions computed on either side agree.
//! Never: know about tables, scores or the on-disk format, or panic on any
//! input (stray UTF-8 continuation bytes included).

/// A lowercased string with case information for its first 32 bytes.
#[derive(Clone, Debug, Default)]
pub(super) struct Folded {
    /// Lowercase bytes, produced one char at a time.
    pub(super) bytes: Vec<u8>,
    /// Bit `i` is set when byte `i` starts a char that was uppercase.
    pub(super) upper: u32,
    /// Bit `i` is set when byte `i` starts a char.
    pub(super) starts: u32,
    /// Character-class mask of the lowercase text, see [`char_bit`].
    pub(super) mask: u64,
    /// Class bit of the first lowercase char...
    pub(super) first: u64,
    /// ...and the classes of all the others.
    pub(super) rest: u64,
}

/// Lowercases `s` char by char (so byte positions of names and queries are
/// computed the same way) and records case and character-class masks.
pub(super) fn fold(s: &str) -> Folded {
    let mut out = Folded {
        bytes: Vec::with_capacity(s.len()),
        ..Folded::default()
    };
    let mut buf = [0u8; 4];
    for c in s.chars() {
        let pos = out.bytes.len();
        if pos < 32 {
            out.starts |= 1 << pos;
            if c.is_uppercase() {
                out.upper |= 1 << pos;
            }
        }
        let mut add = |out: &mut Folded, l: char| {
            let bit = char_bit(l);
            if out.bytes.is_empty() {
                out.first = bit;
            } else {
                out.rest |= bit;
            }
            out.mask |= bit;
            out.bytes
                .extend_from_slice(l.encode_utf8(&mut buf).as_bytes());
        };
        if c.is_ascii() {
            add(&mut out, c.to_ascii_lowercase());
        } else {
            c.to_lowercase().for_each(|l| add(&mut out, l));
        }
    }
    out
}

/// The char that starts at byte `at` of `bytes`, if any.
pub(super) fn char_at(bytes: &[u8], at: usize) -> Option<char> {
    let len = utf8_len(*bytes.get(at)?);
    std::str::from_utf8(bytes.get(at..at + len)?)
        .ok()?
        .chars()
        .next()
}

/// The character-class bit of a lowercase char: one bit per ASCII letter and
/// digit, `_` and `-`, and hashed buckets for other ASCII and for non-ASCII.
/// A name can only contain a query as a subsequence if the name's mask
/// covers the query's.
pub(super) fn char_bit(c: char) -> u64 {
    let v = c as u32;
    let bit = match c {
        'a'..='z' => v - 'a' as u32,
        '0'..='9' => 26 + v - '0' as u32,
        '_' => 36,
        '-' => 37,
        _ if c.is_ascii() => 38 + v % 10,
        _ => 48 + v % 16,
    };
    1u64 << bit
}

/// Byte length of the UTF-8 sequence that `lead` starts (1 for a stray
/// continuation byte, which keeps loops moving on odd input).
pub(super) fn utf8_len(lead: u8) -> usize {
    match lead {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

pub(super) fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// Lowercase byte length of `c` under [`fold`].
fn folded_len(c: char) -> usize {
    if c.is_ascii() {
        1
    } else {
        c.to_lowercase().map(char::len_utf8).sum()
    }
}

/// Appends the byte offsets (in the [`fold`]ed form of `name`) where word
/// parts start, by the one identifier rule ([`crate::ident::split_parts`]):
/// `HTTPServerError2x` gives `http|server|error|2|x`; runs of
/// non-alphanumeric characters separate parts and belong to none.
pub(super) fn part_starts(name: &str, out: &mut Vec<u16>) {
    // Parts come in order, so one pass over the characters maps each
    // part's byte offset in `name` to its offset in the folded form.
    let mut chars = name.char_indices().peekable();
    let mut folded = 0usize;
    let mut overflow = false;
    crate::ident::split_parts(name, &mut |start, _| {
        while let Some(&(offset, c)) = chars.peek() {
            if offset >= start {
                break;
            }
            folded += folded_len(c);
            chars.next();
        }
        match u16::try_from(folded) {
            Ok(p) if !overflow => out.push(p),
            _ => overflow = true,
        }
    });
}

/// Characters that split a qualified query (`::`, `.`, `#`).
pub(super) fn is_query_separator(c: char) -> bool {
    matches!(c, ':' | '.' | '#')
}

/// Characters that separate container segments in stored qualified names.
fn is_container_separator(c: char) -> bool {
    matches!(c, ':' | '.' | '#' | '/' | '\\')
}

/// The container part of a qualified name: `GraphStore::lookup` with name
/// `lookup` gives `GraphStore::`. A qualified name that does not end in
/// `<separator><name>` is its own container.
pub(super) fn container_of<'a>(name: &str, qualified: &'a str) -> &'a str {
    if qualified == name {
        return "";
    }
    match qualified.strip_suffix(name) {
        Some(head) if head.ends_with(|c: char| !c.is_alphanumeric()) => head,
        _ => qualified,
    }
}

/// Lowercases a container and rewrites every run of `:`, `.`, `#`, `/`, `\`
/// as one `.`, trimming them at both ends, so `a::B` and `a.b` compare equal.
pub(super) fn normalize_container(s: &str) -> Vec<u8> {
    let mut out = String::with_capacity(s.len());
    let mut pending_sep = false;
    for c in s.trim().chars() {
        if is_container_separator(c) {
            pending_sep = true;
            continue;
        }
        if pending_sep && !out.is_empty() {
            out.push('.');
        }
        pending_sep = false;
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
        } else {
            out.extend(c.to_lowercase());
        }
    }
    out.into_bytes()
}

pub(super) fn mask_of(bytes: &[u8]) -> u64 {
    String::from_utf8_lossy(bytes)
        .chars()
        .fold(0, |m, c| m | char_bit(c))
}

pub(super) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// First position `>= from` where the char `ch` (its UTF-8 bytes) starts.
/// UTF-8 lead bytes never occur inside another char, so a byte search is a
/// char search.
pub(super) fn find_char(hay: &[u8], from: usize, ch: &[u8]) -> Option<usize> {
    let first = *ch.first()?;
    if ch.len() == 1 {
        return Some(from + hay.get(from..)?.iter().position(|&b| b == first)?);
    }
    let mut i = from;
    while i < hay.len() {
        let p = i + hay[i..].iter().position(|&b| b == first)?;
        if hay[p..].starts_with(ch) {
            return Some(p);
        }
        i = p + 1;
    }
    None
}
