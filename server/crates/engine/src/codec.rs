//! Binary encoding shared by every on-disk file of the index: little-endian
//! integers, LEB128 varints, length-prefixed bytes and strings, and a framed
//! file layout `magic | version | payload | checksum`, the checksum being
//! blake3 for small files and CRC-32 for segments (see [`Checksum`]).
//!
//! Invariant: decoding never panics and never allocates more than the input
//! can justify; every inconsistency is a `FormatError`.
//! Never: opens a file (callers read the bytes, or hand a [`FrameWriter`]
//! the sink they write to).

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

/// Bytes a [`FrameWriter`] gathers before it hands them to its sink.
const SPILL_BYTES: usize = 1 << 20;

/// Writes a frame, `magic | version | payload | sum(magic..payload)`,
/// into a sink as it is encoded: values gather in `w`, a small buffer
/// that goes out whenever [`FrameWriter::spill`] finds it over 1 MB, and
/// large blobs go straight out. A segment of tens of megabytes used to be
/// encoded whole into memory the process had never touched, and on a VM
/// faulting that memory in was as costly as the encoding. The one place
/// the frame layout is written: [`frame_with`] is this over a `Vec`.
pub struct FrameWriter<'s> {
    /// Where values are encoded; call [`FrameWriter::spill`] between
    /// records.
    pub w: Writer,
    sink: &'s mut dyn std::io::Write,
    sum: RunningSum,
}

enum RunningSum {
    Blake3(Box<blake3::Hasher>),
    Crc32(crc32fast::Hasher),
}

impl RunningSum {
    fn update(&mut self, bytes: &[u8]) {
        match self {
            RunningSum::Blake3(h) => {
                h.update(bytes);
            }
            RunningSum::Crc32(h) => h.update(bytes),
        }
    }

    fn finish(self) -> Vec<u8> {
        match self {
            RunningSum::Blake3(h) => h.finalize().as_bytes().to_vec(),
            RunningSum::Crc32(h) => h.finalize().to_le_bytes().to_vec(),
        }
    }
}

impl<'s> FrameWriter<'s> {
    /// Begins a frame: its header is the first thing written.
    pub fn new(
        sink: &'s mut dyn std::io::Write,
        sum: Checksum,
        magic: &[u8; 4],
        version: u32,
    ) -> FrameWriter<'s> {
        let mut w = Writer::new();
        w.buf.extend_from_slice(magic);
        w.buf.extend_from_slice(&version.to_le_bytes());
        FrameWriter {
            w,
            sink,
            sum: sum.running(),
        }
    }

    /// Hands what `w` holds to the sink once it passes 1 MB.
    pub fn spill(&mut self) -> std::io::Result<()> {
        if self.w.buf.len() >= SPILL_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.sum.update(&self.w.buf);
        self.sink.write_all(&self.w.buf)?;
        self.w.buf.clear();
        Ok(())
    }

    /// `value` unprefixed; written from where it lies if large.
    pub fn raw(&mut self, value: &[u8]) -> std::io::Result<()> {
        if value.len() < SPILL_BYTES {
            self.w.buf.extend_from_slice(value);
            return self.spill();
        }
        self.flush()?;
        self.sum.update(value);
        self.sink.write_all(value)
    }

    /// As [`Writer::bytes`]: `value` prefixed by its length.
    pub fn bytes(&mut self, value: &[u8]) -> std::io::Result<()> {
        self.w.varint(value.len() as u64);
        self.raw(value)
    }

    /// Writes what is left and the checksum; the frame is complete once
    /// this returns `Ok`.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.flush()?;
        let trailer = self.sum.finish();
        self.sink.write_all(&trailer)
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

/// `part` (a slice of `base`) as a view sharing `base`'s memory; a copy
/// should it ever lie elsewhere.
pub fn share(base: &bytes::Bytes, part: &[u8]) -> bytes::Bytes {
    let start = (part.as_ptr() as usize).wrapping_sub(base.as_ptr() as usize);
    if start <= base.len() && part.len() <= base.len() - start {
        base.slice(start..start + part.len())
    } else {
        bytes::Bytes::copy_from_slice(part)
    }
}

/// A short string stored in a file of the index (a chunk's name or
/// signature), kept as a view of the file's shared bytes: opening an index
/// of half a million chunks then costs no allocation and no UTF-8 check
/// per string. It is checked when read; the writer only ever wrote `&str`s
/// and the frame's checksum guards the bytes, so a failed check means a bug,
/// and reads as the empty string rather than a panic.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Text(bytes::Bytes);

impl std::hash::Hash for Text {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl Text {
    /// Reads a length-prefixed string from `r`, which reads from inside
    /// `base`, as a view of `base`.
    pub fn read(r: &mut Reader<'_>, base: &bytes::Bytes) -> Result<Text, FormatError> {
        Ok(Text(share(base, r.bytes()?)))
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or("")
    }
}

impl std::ops::Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for Text {
    fn from(value: &str) -> Text {
        Text(bytes::Bytes::copy_from_slice(value.as_bytes()))
    }
}

impl From<String> for Text {
    fn from(value: String) -> Text {
        Text(bytes::Bytes::from(value.into_bytes()))
    }
}

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl std::fmt::Display for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// The checksum a framed file ends with. Both guard a cache against torn
/// writes and bit rot, not against an adversary (whoever can write the
/// cache directory can recompute either).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checksum {
    /// 32 bytes; for the small files (manifest, vector sidecars, static tier).
    Blake3,
    /// 4 bytes, hardware CRC-32 at several GB/s on one core; for segments,
    /// which every `quarry search` re-reads (160 MB on the registry corpus,
    /// where blake3 cost a sixth of the process's time).
    Crc32,
}

impl Checksum {
    fn len(self) -> usize {
        match self {
            Checksum::Blake3 => 32,
            Checksum::Crc32 => 4,
        }
    }

    /// A checksum of this kind over bytes fed in pieces.
    fn running(self) -> RunningSum {
        match self {
            Checksum::Blake3 => RunningSum::Blake3(Box::default()),
            Checksum::Crc32 => RunningSum::Crc32(crc32fast::Hasher::new()),
        }
    }
}

/// Frames `payload` as `magic | version | payload | blake3(magic..payload)`.
pub fn frame(magic: &[u8; 4], version: u32, payload: &[u8]) -> Vec<u8> {
    frame_with(Checksum::Blake3, magic, version, payload)
}

/// Frames `payload` as `magic | version | payload | sum(magic..payload)`.
pub fn frame_with(sum: Checksum, magic: &[u8; 4], version: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 8 + sum.len());
    let mut frame = FrameWriter::new(&mut out, sum, magic, version);
    // Writing into a `Vec` cannot fail.
    let written = frame.raw(payload).and_then(|()| frame.finish());
    debug_assert!(written.is_ok());
    out
}

/// Checks a file framed by [`frame`] and returns its payload.
pub fn unframe<'a>(
    bytes: &'a [u8],
    magic: &[u8; 4],
    what: &'static str,
    version: u32,
) -> Result<&'a [u8], FormatError> {
    unframe_with(Checksum::Blake3, bytes, magic, what, version)
}

/// Checks a file framed by [`frame_with`] and returns its payload.
pub fn unframe_with<'a>(
    sum: Checksum,
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
    if bytes.len() < 8 + sum.len() {
        return Err(FormatError::Truncated(bytes.len()));
    }
    let (body, stored) = bytes.split_at(bytes.len() - sum.len());
    let mut computed = sum.running();
    computed.update(body);
    if computed.finish() != stored {
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

    /// A frame written through a `FrameWriter` is `magic | version |
    /// payload | sum(magic..payload)`, whether its values gathered in the
    /// buffer or a blob went straight to the sink, the same bytes
    /// `frame_with` gives, and unframes to its payload.
    #[test]
    fn a_streamed_frame_equals_a_framed_payload() {
        let big: Vec<u8> = (0..SPILL_BYTES + 3).map(|i| (i % 251) as u8).collect();
        let many: Vec<String> = (0..40_000)
            .map(|i| format!("GraphStore::lookup{i}"))
            .collect();
        for sum in [Checksum::Crc32, Checksum::Blake3] {
            for blob in [&b"postings"[..], &big] {
                let mut payload = Writer::new();
                payload.str("GraphStore::lookup");
                payload.u64(42);
                payload.bytes(blob);
                for name in &many {
                    payload.str(name);
                }
                let mut bytes = Vec::new();
                let mut frame = FrameWriter::new(&mut bytes, sum, b"TEST", 7);
                frame.w.str("GraphStore::lookup");
                frame.w.u64(42);
                frame.bytes(blob).expect("in memory");
                for name in &many {
                    frame.w.str(name);
                    frame.spill().expect("in memory");
                }
                frame.finish().expect("in memory");
                let mut want = b"TEST".to_vec();
                want.extend_from_slice(&7u32.to_le_bytes());
                want.extend_from_slice(&payload.buf);
                let check: Vec<u8> = match sum {
                    Checksum::Crc32 => crc32fast::hash(&want).to_le_bytes().to_vec(),
                    Checksum::Blake3 => blake3::hash(&want).as_bytes().to_vec(),
                };
                want.extend_from_slice(&check);
                assert!(bytes == want, "{sum:?}, blob of {}", blob.len());
                assert!(bytes == frame_with(sum, b"TEST", 7, &payload.buf));
                let got = unframe_with(sum, &bytes, b"TEST", "test", 7).expect("valid");
                assert!(got == &payload.buf[..]);
            }
        }
    }

    /// A sink that fails ends the frame with its error.
    #[test]
    fn a_failing_sink_fails_the_frame() {
        struct Full;
        impl std::io::Write for Full {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("disk full"))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut sink = Full;
        let mut frame = FrameWriter::new(&mut sink, Checksum::Crc32, b"TEST", 7);
        frame.w.str("small");
        let err = frame.finish().expect_err("nothing can be written");
        assert_eq!(err.to_string(), "disk full");
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
    fn text_is_a_view_read_as_utf8_when_used() {
        let mut w = Writer::new();
        w.str("GraphStore::lookup");
        w.bytes(&[0xff, 0xfe]);
        let base = bytes::Bytes::from(w.buf);
        let mut r = Reader::new(&base);
        let text = Text::read(&mut r, &base).expect("a string");
        assert_eq!(text, "GraphStore::lookup");
        assert_eq!(text.len(), 18);
        let at = text.0.as_ptr() as usize;
        assert!(at > base.as_ptr() as usize && at < base.as_ptr() as usize + base.len());
        // Not UTF-8 (never written by the index): empty, not a panic.
        let broken = Text::read(&mut r, &base).expect("bytes");
        assert_eq!(broken.as_str(), "");
        assert!(Text::read(&mut r, &base).is_err(), "nothing left");
        assert_eq!(Text::from(String::from("a")), Text::from("a"));
    }

    #[test]
    fn frame_detects_corruption_version_and_magic() {
        for sum in [Checksum::Blake3, Checksum::Crc32] {
            check_frame(sum);
        }
    }

    fn check_frame(sum: Checksum) {
        let frame =
            |magic: &[u8; 4], version, payload: &[u8]| frame_with(sum, magic, version, payload);
        let unframe =
            |bytes, magic: &[u8; 4], what, version| unframe_with(sum, bytes, magic, what, version);
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
