//! The on-disk encoding of a [`SymbolTable`]: [`SymbolTable::write_to`],
//! [`SymbolTable::read_from`] and their little-endian helpers.
//! Owns: the `QSYM` header, the format version, the checksum and the order
//! of the serialised arrays; any change to them is a format change.
//! Never: panic or index out of bounds on any bytes (every length, offset
//! and id is checked before a table is built), or serialise derived arrays.

use crate::chunk::ChunkKind;

use super::table::SymbolTable;

const MAGIC: [u8; 4] = *b"QSYM";
/// 2: word parts by `ident::split_parts` (caseless letters split from
/// digits and capitals).
const FORMAT_VERSION: u32 = 2;
pub(super) const HEADER_LEN: usize = 24;

/// Why [`SymbolTable::read_from`] rejected its bytes.
#[derive(Debug, thiserror::Error)]
pub enum SymbolFormatError {
    #[error("bad magic bytes")]
    BadMagic,
    #[error("unsupported format version {0}")]
    UnsupportedVersion(u32),
    #[error("truncated (need {needed} bytes, have {available})")]
    Truncated { needed: u64, available: u64 },
    #[error("checksum mismatch")]
    ChecksumMismatch,
    #[error("invalid {0}")]
    Invalid(&'static str),
    #[error("invalid word index: {0}")]
    Fst(String),
}

impl SymbolTable {
    /// Appends the serialised table to `out`. The encoding is
    /// self-delimiting: a 24-byte header holds the magic `QSYM`, the format
    /// version, the total length (header included) and a checksum of the
    /// rest; then come length-prefixed little-endian arrays and the raw fst
    /// bytes. [`SymbolTable::read_from`] ignores bytes after the total length.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&[0u8; 16]);
        put_u32s(out, &self.sym_chunk);
        put_bytes(out, &self.sym_kind);
        put_u32s(out, &self.sym_container);
        put_u32s(out, &self.sym_upper);
        put_u32s(out, &self.name_off);
        put_bytes(out, &self.name_bytes);
        put_u32s(out, &self.name_sym);
        put_u64s(out, &self.name_mask);
        put_u32s(out, &self.name_kinds);
        put_u32s(out, &self.part_off);
        put_u16s(out, &self.parts);
        put_u32s(out, &self.lex);
        put_u32s(out, &self.cont_off);
        put_bytes(out, &self.cont_bytes);
        put_u64s(out, &self.cont_mask);
        put_u32s(out, &self.word_postings);
        put_bytes(out, self.word_fst.as_fst().as_bytes());
        let total = (out.len() - start) as u64;
        let sum = checksum(&out[start + HEADER_LEN..]);
        out[start + 8..start + 16].copy_from_slice(&total.to_le_bytes());
        out[start + 16..start + 24].copy_from_slice(&sum.to_le_bytes());
    }

    /// Inverse of [`SymbolTable::write_to`]; `bytes` must start with a table
    /// and may continue with unrelated bytes. Checks the checksum and every
    /// length, offset and id, and never panics.
    pub fn read_from(bytes: &[u8]) -> Result<SymbolTable, SymbolFormatError> {
        use SymbolFormatError::*;
        if bytes.len() < HEADER_LEN {
            return Err(Truncated {
                needed: HEADER_LEN as u64,
                available: bytes.len() as u64,
            });
        }
        if bytes[..4] != MAGIC {
            return Err(BadMagic);
        }
        let version = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
        if version != FORMAT_VERSION {
            return Err(UnsupportedVersion(version));
        }
        let total = le_u64(&bytes[8..16]);
        if total < HEADER_LEN as u64 || total > bytes.len() as u64 {
            return Err(Truncated {
                needed: total.max(HEADER_LEN as u64),
                available: bytes.len() as u64,
            });
        }
        let body = &bytes[HEADER_LEN..total as usize];
        if checksum(body) != le_u64(&bytes[16..24]) {
            return Err(ChecksumMismatch);
        }
        let mut r = Reader {
            bytes: body,
            pos: 0,
        };
        let sym_chunk = r.u32s()?;
        let sym_kind = r.bytes()?;
        let sym_container = r.u32s()?;
        let sym_upper = r.u32s()?;
        let name_off = r.u32s()?;
        let name_bytes = r.bytes()?;
        let name_sym = r.u32s()?;
        let name_mask = r.u64s()?;
        let name_kinds = r.u32s()?;
        let part_off = r.u32s()?;
        let parts = r.u16s()?;
        let lex = r.u32s()?;
        let cont_off = r.u32s()?;
        let cont_bytes = r.bytes()?;
        let cont_mask = r.u64s()?;
        let word_postings = r.u32s()?;
        let fst_bytes = r.bytes()?;
        if r.pos != body.len() {
            return Err(Invalid("trailing bytes inside the table"));
        }

        let n = sym_chunk.len();
        if sym_kind.len() != n || sym_container.len() != n || sym_upper.len() != n {
            return Err(Invalid("symbol array lengths"));
        }
        if sym_kind.iter().any(|&k| ChunkKind::from_code(k).is_none()) {
            return Err(Invalid("symbol kind"));
        }
        check_offsets(&name_off, name_bytes.len(), "name offsets")?;
        let names = name_off.len() - 1;
        check_offsets(&name_sym, n, "name symbol ranges")?;
        if name_sym.len() != names + 1 || name_sym.windows(2).any(|w| w[0] >= w[1]) {
            return Err(Invalid("name symbol ranges"));
        }
        if name_mask.len() != names || name_kinds.len() != names {
            return Err(Invalid("name array lengths"));
        }
        check_offsets(&part_off, parts.len(), "part offsets")?;
        if part_off.len() != names + 1 {
            return Err(Invalid("part offsets"));
        }
        for i in 0..names {
            let p = &parts[part_off[i] as usize..part_off[i + 1] as usize];
            let len = (name_off[i + 1] - name_off[i]) as usize;
            if p.windows(2).any(|w| w[0] >= w[1]) || p.last().is_some_and(|&l| l as usize >= len) {
                return Err(Invalid("part starts"));
            }
        }
        if lex.len() != names || lex.iter().any(|&id| id as usize >= names) {
            return Err(Invalid("name order"));
        }
        check_offsets(&cont_off, cont_bytes.len(), "container offsets")?;
        let containers = cont_off.len() - 1;
        if cont_mask.len() != containers {
            return Err(Invalid("container masks"));
        }
        if sym_container.iter().any(|&c| c as usize >= containers) {
            return Err(Invalid("symbol container"));
        }
        if word_postings.iter().any(|&o| o as usize >= names) {
            return Err(Invalid("word postings"));
        }
        let word_fst = fst::Map::new(fst_bytes).map_err(|e| Fst(e.to_string()))?;

        let mut table = SymbolTable {
            sym_chunk,
            sym_kind,
            sym_container,
            sym_upper,
            name_off,
            name_bytes,
            name_sym,
            name_mask,
            name_kinds,
            part_off,
            parts,
            lex,
            cont_off,
            cont_bytes,
            cont_mask,
            word_fst,
            word_postings,
            sym_name: Vec::new(),
            cont_sym_off: Vec::new(),
            cont_syms: Vec::new(),
            scan: Vec::new(),
        };
        table.derive();
        Ok(table)
    }
}

fn le_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

fn put_len(out: &mut Vec<u8>, len: usize) {
    out.extend_from_slice(&(len as u64).to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, v: &[u8]) {
    put_len(out, v.len());
    out.extend_from_slice(v);
}

fn put_u16s(out: &mut Vec<u8>, v: &[u16]) {
    put_len(out, v.len());
    out.extend(v.iter().flat_map(|x| x.to_le_bytes()));
}

fn put_u32s(out: &mut Vec<u8>, v: &[u32]) {
    put_len(out, v.len());
    out.extend(v.iter().flat_map(|x| x.to_le_bytes()));
}

fn put_u64s(out: &mut Vec<u8>, v: &[u64]) {
    put_len(out, v.len());
    out.extend(v.iter().flat_map(|x| x.to_le_bytes()));
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Reads a length prefix and returns the following `len * width` bytes.
    fn section(&mut self, width: usize) -> Result<&'a [u8], SymbolFormatError> {
        let truncated = |needed: u64| SymbolFormatError::Truncated {
            needed,
            available: self.bytes.len() as u64,
        };
        let rest = &self.bytes[self.pos..];
        if rest.len() < 8 {
            return Err(truncated(self.pos as u64 + 8));
        }
        let count = le_u64(rest);
        let size = count
            .checked_mul(width as u64)
            .filter(|&s| s <= (rest.len() - 8) as u64)
            .ok_or_else(|| {
                truncated((self.pos as u64 + 8).saturating_add(count.saturating_mul(width as u64)))
            })?;
        let data = &rest[8..8 + size as usize];
        self.pos += 8 + size as usize;
        Ok(data)
    }

    fn bytes(&mut self) -> Result<Vec<u8>, SymbolFormatError> {
        Ok(self.section(1)?.to_vec())
    }

    fn u16s(&mut self) -> Result<Vec<u16>, SymbolFormatError> {
        Ok(self
            .section(2)?
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect())
    }

    fn u32s(&mut self) -> Result<Vec<u32>, SymbolFormatError> {
        Ok(self
            .section(4)?
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    fn u64s(&mut self) -> Result<Vec<u64>, SymbolFormatError> {
        Ok(self.section(8)?.chunks_exact(8).map(le_u64).collect())
    }
}

/// Checks an offset array: at least one entry, starts at 0, never decreases,
/// ends at `end`.
fn check_offsets(off: &[u32], end: usize, what: &'static str) -> Result<(), SymbolFormatError> {
    let ok = off.first() == Some(&0)
        && off.last().is_some_and(|&l| l as usize == end)
        && off.windows(2).all(|w| w[0] <= w[1]);
    if ok {
        Ok(())
    } else {
        Err(SymbolFormatError::Invalid(what))
    }
}

/// A fast 64-bit checksum over four independent lanes. Every step is a
/// bijection of the lane state, so any single corrupted word always changes
/// the result; it is not meant to resist deliberate forgery.
pub(super) fn checksum(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut lanes: [u64; 4] = [
        0x243F_6A88_85A3_08D3,
        0x1319_8A2E_0370_7344,
        0xA409_3822_299F_31D0,
        0x082E_FA98_EC4E_6C89,
    ];
    let step = |h: u64, w: u64| (h ^ w).wrapping_mul(K).rotate_left(29);
    let mut blocks = bytes.chunks_exact(32);
    for block in &mut blocks {
        for (i, lane) in lanes.iter_mut().enumerate() {
            *lane = step(*lane, le_u64(&block[i * 8..]));
        }
    }
    let mut tail = [0u8; 32];
    let rest = blocks.remainder();
    tail[..rest.len()].copy_from_slice(rest);
    for (i, lane) in lanes.iter_mut().enumerate() {
        *lane = step(*lane, le_u64(&tail[i * 8..]));
    }
    let mut h = step(0, bytes.len() as u64);
    for lane in lanes {
        h = step(h, lane);
    }
    h ^ (h >> 31)
}
