//! Binary encoding shared by every on-disk file of the index: little-endian
//! integers, LEB128 varints, length-prefixed bytes and strings, and a framed
//! file layout `magic | version | payload | blake3(payload)`.
//!
//! Invariant: decoding never panics and never allocates more than the input
//! can justify; every inconsistency is a `FormatError`.
//! Never: file-system access (callers read and write the bytes).

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum FormatError {
    #[error("unexpected end of data at byte {0}")]
    Truncated(usize),
    #[error("bad magic: not a quarry {0} file")]
    BadMagic(&'static str),
    #[error("format version {found}, this build reads version {expected}")]
    Version { found: u32, expected: u32 },
    #[error("checksum mismatch: the file is corrupt")]
    Checksum,
    #[error("invalid data: {0}")]
    Invalid(String),
}

/// Appends encoded values to a byte buffer.
#[derive(Default)]
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    pub fn new() -> Writer {
        Writer { buf: Vec::new() }
    }

    pub fn u8(&mut self, value: u8) {
        self.buf.push(value);
    }

    pub fn u32(&mut self, value: u32) {
        self.buf.extend_from_slice(&value.to_le_bytes());
    }

    pub fn u64(&mut self, value: u64) {
        self.buf.extend_from_slice(&value.to_le_bytes());
    }

    pub fn f64(&mut self, value: f64) {
        self.buf.extend_from_slice(&value.to_le_bytes());
    }

    pub fn varint(&mut self, value: u64) {
        put_varint(&mut self.buf, value);
    }

    pub fn bytes(&mut self, value: &[u8]) {
        self.varint(value.len() as u64);
        self.buf.extend_from_slice(value);
    }

    pub fn str(&mut self, value: &str) {
        self.bytes(value.as_bytes());
    }
}

/// Appends `value` as an unsigned LEB128 varint.
#[inline]
pub fn put_varint(buf: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        buf.push((value as u8) | 0x80);
        value >>= 7;
    }
    buf.push(value as u8);
}

/// Decodes a varint at `*pos`, advancing it. `None` on truncation or overflow.
#[inline]
pub fn get_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    let mut shift = 0u32;
    loop {
        let byte = *buf.get(*pos)?;
        *pos += 1;
        if shift >= 64 {
            return None;
        }
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
        shift += 7;
    }
}

/// Reads values written by `Writer`, failing cleanly on bad input.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], FormatError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|end| *end <= self.buf.len())
            .ok_or(FormatError::Truncated(self.pos))?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    pub fn u8(&mut self) -> Result<u8, FormatError> {
        Ok(self.take(1)?[0])
    }

    pub fn u32(&mut self) -> Result<u32, FormatError> {
        let mut raw = [0u8; 4];
        raw.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(raw))
    }

    pub fn u64(&mut self) -> Result<u64, FormatError> {
        let mut raw = [0u8; 8];
        raw.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(raw))
    }

    pub fn f64(&mut self) -> Result<f64, FormatError> {
        Ok(f64::from_bits(self.u64()?))
    }

    pub fn varint(&mut self) -> Result<u64, FormatError> {
        get_varint(self.buf, &mut self.pos).ok_or(FormatError::Truncated(self.pos))
    }

    pub fn varint_u32(&mut self) -> Result<u32, FormatError> {
        let value = self.varint()?;
        u32::try_from(value).map_err(|_| FormatError::Invalid(format!("value {value} exceeds u32")))
    }

    /// A length that must fit in the remaining input (guards allocations).
    pub fn len(&mut self) -> Result<usize, FormatError> {
        let value = self.varint()?;
        let remaining = (self.buf.len() - self.pos) as u64;
        if value > remaining.saturating_mul(8).saturating_add(64) {
            return Err(FormatError::Invalid(format!(
                "length {value} larger than the data"
            )));
        }
        Ok(value as usize)
    }

    pub fn bytes(&mut self) -> Result<&'a [u8], FormatError> {
        let n = self.varint()?;
        let n = usize::try_from(n).map_err(|_| FormatError::Truncated(self.pos))?;
        self.take(n)
    }

    pub fn str(&mut self) -> Result<&'a str, FormatError> {
        let raw = self.bytes()?;
        std::str::from_utf8(raw).map_err(|_| FormatError::Invalid("string is not UTF-8".into()))
    }
}

/// Frames `payload` as `magic | version | payload | blake3(magic..payload)`.
pub fn frame(magic: &[u8; 4], version: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 40);
    out.extend_from_slice(magic);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(payload);
    let hash = checksum(&out);
    out.extend_from_slice(hash.as_bytes());
    out
}

/// Checks a framed file and returns its payload.
/// blake3 of a frame's body; a large one (a segment of a big index) is
/// hashed on every core, which halves the checksum's share of opening it.
fn checksum(body: &[u8]) -> blake3::Hash {
    if body.len() >= 1 << 20 {
        blake3::Hasher::new().update_rayon(body).finalize()
    } else {
        blake3::hash(body)
    }
}

pub fn unframe<'a>(
    bytes: &'a [u8],
    magic: &[u8; 4],
    what: &'static str,
    version: u32,
) -> Result<&'a [u8], FormatError> {
    if bytes.len() < 8 || &bytes[..4] != magic {
        return Err(FormatError::BadMagic(what));
    }
    let mut raw = [0u8; 4];
    raw.copy_from_slice(&bytes[4..8]);
    let found = u32::from_le_bytes(raw);
    if found != version {
        return Err(FormatError::Version {
            found,
            expected: version,
        });
    }
    if bytes.len() < 8 + 32 {
        return Err(FormatError::Truncated(bytes.len()));
    }
    let (body, hash) = bytes.split_at(bytes.len() - 32);
    if checksum(body).as_bytes() != hash {
        return Err(FormatError::Checksum);
    }
    Ok(&body[8..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip() {
        let values = [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX];
        let mut buf = Vec::new();
        for v in values {
            put_varint(&mut buf, v);
        }
        let mut pos = 0;
        for v in values {
            assert_eq!(get_varint(&buf, &mut pos), Some(v));
        }
        assert_eq!(get_varint(&buf, &mut pos), None);
    }

    #[test]
    fn reader_rejects_truncation_and_bad_lengths() {
        let mut w = Writer::new();
        w.str("hello");
        w.u32(7);
        let bytes = w.buf;
        let mut r = Reader::new(&bytes[..3]);
        assert!(r.str().is_err());
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert!(r.len().is_err());
        let mut r = Reader::new(&bytes);
        assert_eq!(r.str(), Ok("hello"));
        assert_eq!(r.u32(), Ok(7));
        assert!(r.u8().is_err());
    }

    #[test]
    fn frame_detects_corruption_version_and_magic() {
        let framed = frame(b"QTST", 3, b"payload");
        assert_eq!(unframe(&framed, b"QTST", "test", 3), Ok(&b"payload"[..]));
        assert!(matches!(
            unframe(&framed, b"QTST", "test", 4),
            Err(FormatError::Version { found: 3, .. })
        ));
        assert!(matches!(
            unframe(&framed, b"XXXX", "test", 3),
            Err(FormatError::BadMagic(_))
        ));
        let mut corrupt = framed.clone();
        corrupt[10] ^= 1;
        assert_eq!(
            unframe(&corrupt, b"QTST", "test", 3),
            Err(FormatError::Checksum)
        );
        assert!(unframe(&framed[..framed.len() - 5], b"QTST", "test", 3).is_err());
    }
}
