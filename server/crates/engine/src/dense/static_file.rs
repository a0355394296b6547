//! The static tier's file: `<folder>/static/<tier id>.qstatic`, beside the
//! model or under the machine-wide cache.
//!
//! Owns: the file's place and format (a checksummed frame holding the tier
//! id, its dimension and its token vectors). Never: distil (the encoder
//! does), or serve a file of another model or recipe.

use crate::codec::{frame, unframe, Reader, Writer};
use quarry_encoder::static_tier::{static_model_id, RECIPE_VERSION};
use quarry_encoder::StaticModel;
use std::path::{Path, PathBuf};
use tokenizers::Tokenizer;

const MAGIC: &[u8; 4] = b"QSTT";

/// Where the tier distilled from `transformer_id` is kept under `root`.
pub fn file_for(root: &Path, transformer_id: &str) -> PathBuf {
    root.join("static")
        .join(format!("{}.qstatic", static_model_id(transformer_id)))
}

/// Writes the tier atomically to `path` (its folder is created).
pub fn save(model: &StaticModel, path: &Path) -> std::io::Result<()> {
    let vectors = model.vectors();
    let mut w = Writer::new();
    w.str(model.model_id());
    w.u32(model.dim() as u32);
    w.u64(vectors.len() as u64);
    w.buf.reserve(vectors.len() * 4);
    for v in vectors {
        w.buf.extend_from_slice(&v.to_le_bytes());
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("model.qstatic");
    crate::cachefile::write_atomic(dir, name, &frame(MAGIC, RECIPE_VERSION, &w.buf))
}

/// Reads a tier saved by `save` for `transformer_id`, with the model's
/// tokenizer. `None` when there is none, or it belongs to another model or
/// recipe (it is distilled again then).
pub fn load(path: &Path, transformer_id: &str, tokenizer: Tokenizer) -> Option<StaticModel> {
    let bytes = crate::cachefile::read(path).ok()?;
    let payload = unframe(&bytes, MAGIC, "static tier", RECIPE_VERSION).ok()?;
    let mut r = Reader::new(payload);
    let (model_id, dim, len) = (r.str().ok()?, r.u32().ok()? as usize, r.u64().ok()?);
    if model_id != static_model_id(transformer_id) {
        return None;
    }
    let body = payload.get(payload.len().checked_sub(len.checked_mul(4)? as usize)?..)?;
    let vectors = body
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    StaticModel::from_parts(model_id.to_string(), dim, vectors, tokenizer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_of_another_model_or_a_torn_one_is_not_served() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = file_for(dir.path(), "mini-1");
        assert!(path.ends_with("static/mini-1-static2.qstatic"), "{path:?}");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut w = Writer::new();
        w.str(&static_model_id("mini-1"));
        w.u32(2);
        w.u64(4);
        for v in [1f32, 0.0, 0.0, 1.0] {
            w.buf.extend_from_slice(&v.to_le_bytes());
        }
        let bytes = frame(MAGIC, RECIPE_VERSION, &w.buf);
        std::fs::write(&path, &bytes).unwrap();
        let tokenizer = || Tokenizer::new(tokenizers::models::wordlevel::WordLevel::default());
        assert!(load(&path, "mini-1", tokenizer()).is_some());
        assert!(load(&path, "other-1", tokenizer()).is_none());
        std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        assert!(load(&path, "mini-1", tokenizer()).is_none());
    }
}
