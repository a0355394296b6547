//! The static embedding tier: one vector per vocabulary token, distilled
//! once from the installed transformer, so a chunk's vector is a weighted
//! mean of its tokens' vectors (thousands of chunks per second on one core,
//! against tens for the transformer).
//!
//! The recipe is model2vec's: every vocabulary token goes through the
//! encoder on its own (`[CLS] token [SEP]`, mean-pooled like a sentence);
//! the vectors are centred and their dominant shared direction removed (the
//! part PCA's first component carries, common to every token, which makes
//! all means look alike); each is weighted by a smooth inverse frequency
//! estimated from the token's rank (WordPiece vocabularies list words by
//! frequency), so `the`, `(` and `self` weigh little and rare words much.
//!
//! Owns: distilling, and embedding texts with the tier. Never: network
//! access or any file I/O (the engine keeps the tier's file), touching the
//! transformer's vectors.

use crate::embed::{Embedder, ModelError};
use tokenizers::Tokenizer;

/// Bumped whenever the recipe changes, so old tiers are distilled again
/// (part of the tier's model id and of its file's version).
pub const RECIPE_VERSION: u32 = 2;
/// Token sequences per forward pass while distilling.
const DISTILL_BATCH: usize = 256;
/// The smooth-inverse-frequency constant `a` of `a / (a + p(token))`.
const SIF_A: f64 = 1e-3;
/// Tokens of a text that count; the rest of a long text is left out.
const MAX_TOKENS: usize = 512;

/// A distilled static model: token vectors (weights applied) and the
/// tokenizer that maps text to them.
pub struct StaticModel {
    model_id: String,
    dim: usize,
    /// `vocab × dim`, row `t` is token `t`'s weighted vector (zero for
    /// special and unused tokens).
    vectors: Vec<f32>,
    tokenizer: Tokenizer,
}

impl std::fmt::Debug for StaticModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticModel")
            .field("model_id", &self.model_id)
            .field("dim", &self.dim)
            .field("vocab", &(self.vectors.len() / self.dim.max(1)))
            .finish_non_exhaustive()
    }
}

/// The static tier's id for a transformer's: vectors of the two never mix.
pub fn static_model_id(transformer_id: &str) -> String {
    format!("{transformer_id}-static{RECIPE_VERSION}")
}

/// Whether vectors of `model_id` are the static tier's.
pub fn is_static_id(model_id: &str) -> bool {
    model_id.rsplit_once("-static").is_some_and(|(_, version)| {
        !version.is_empty() && version.bytes().all(|b| b.is_ascii_digit())
    })
}

impl StaticModel {
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Runs every vocabulary token through `embedder` and builds the tier:
    /// 22 s on two cores for MiniLM's 30k tokens in a release build; done
    /// once per model.
    pub fn distill(embedder: &Embedder) -> Result<StaticModel, ModelError> {
        let tokenizer = embedder.plain_tokenizer().clone();
        let vocab_size = tokenizer.get_vocab_size(true);
        let dim = embedder.dim();
        // The special tokens the model wraps a text in.
        let wrap = tokenizer
            .encode_fast("", true)
            .map_err(|e| ModelError::Embed(format!("tokenizer: {e}")))?
            .get_ids()
            .to_vec();
        let (head, tail) = match wrap.as_slice() {
            [head, tail] => (Some(*head), Some(*tail)),
            [head] => (Some(*head), None),
            _ => (None, None),
        };
        // Real tokens in id order; bracketed ones (`[PAD]`, `[unused7]`,
        // `<s>`) are special and never carry meaning.
        let mut tokens: Vec<u32> = tokenizer
            .get_vocab(true)
            .into_iter()
            .filter(|(token, _)| !is_special(token))
            .map(|(_, id)| id)
            .filter(|id| (*id as usize) < vocab_size)
            .collect();
        tokens.sort_unstable();
        let mut raw = vec![0f32; vocab_size * dim];
        for batch in tokens.chunks(DISTILL_BATCH) {
            let sequences: Vec<Vec<u32>> = batch
                .iter()
                .map(|id| head.into_iter().chain([*id]).chain(tail).collect())
                .collect();
            let vectors = embedder.embed_ids(&sequences)?;
            for (id, vector) in batch.iter().zip(vectors) {
                let row = *id as usize * dim;
                raw[row..row + dim].copy_from_slice(&vector[..dim.min(vector.len())]);
            }
        }
        let vectors = post_process(raw, &tokens, dim);
        Ok(StaticModel {
            model_id: static_model_id(embedder.model_id()),
            dim,
            vectors,
            tokenizer,
        })
    }

    /// The weighted mean of the text's token vectors, L2-normalised; a text
    /// without known tokens gives the zero vector. The caller spells joined
    /// identifiers out first (`retryCount` -> `retry Count`): WordPiece
    /// splits them badly.
    pub fn embed(&self, text: &str) -> Result<Vec<f32>, ModelError> {
        let encoding = self
            .tokenizer
            .encode_fast(text, false)
            .map_err(|e| ModelError::Embed(format!("tokenizer: {e}")))?;
        let mut sum = vec![0f32; self.dim];
        for id in encoding.get_ids().iter().take(MAX_TOKENS) {
            let row = *id as usize * self.dim;
            if let Some(vector) = self.vectors.get(row..row + self.dim) {
                for (s, v) in sum.iter_mut().zip(vector) {
                    *s += v;
                }
            }
        }
        let norm = sum.iter().map(|v| v * v).sum::<f32>().sqrt();
        if norm > 0.0 {
            sum.iter_mut().for_each(|v| *v /= norm);
        }
        Ok(sum)
    }

    /// The token vectors, `vocab × dim`, row `t` token `t`'s.
    pub fn vectors(&self) -> &[f32] {
        &self.vectors
    }

    /// A tier from the parts `vectors` gave out, with the model's tokenizer
    /// (no truncation, no padding). `None` when they do not fit together.
    pub fn from_parts(
        model_id: String,
        dim: usize,
        vectors: Vec<f32>,
        tokenizer: Tokenizer,
    ) -> Option<StaticModel> {
        (dim > 0 && vectors.len().is_multiple_of(dim)).then_some(StaticModel {
            model_id,
            dim,
            vectors,
            tokenizer,
        })
    }
}

fn is_special(token: &str) -> bool {
    (token.starts_with('[') && token.ends_with(']'))
        || (token.starts_with('<') && token.ends_with('>') && token.len() > 2)
}

/// Centres the token vectors, removes their dominant shared direction,
/// normalises each and weights it by smooth inverse frequency (Zipf from
/// the rank in `tokens`, which is id order).
fn post_process(mut raw: Vec<f32>, tokens: &[u32], dim: usize) -> Vec<f32> {
    let starts: Vec<usize> = tokens.iter().map(|id| *id as usize * dim).collect();
    let n = starts.len().max(1) as f64;
    let mut mean = vec![0f64; dim];
    for &s in &starts {
        for (m, v) in mean.iter_mut().zip(&raw[s..s + dim]) {
            *m += f64::from(*v);
        }
    }
    mean.iter_mut().for_each(|m| *m /= n);
    for &s in &starts {
        for (v, m) in raw[s..s + dim].iter_mut().zip(&mean) {
            *v -= *m as f32;
        }
    }
    // The first principal direction by power iteration over X^T X.
    let mut direction = vec![1f64 / (dim as f64).sqrt(); dim];
    for _ in 0..30 {
        let mut next = vec![0f64; dim];
        for &s in &starts {
            let row = &raw[s..s + dim];
            let dot: f64 = row
                .iter()
                .zip(&direction)
                .map(|(v, d)| f64::from(*v) * d)
                .sum();
            for (x, v) in next.iter_mut().zip(row) {
                *x += dot * f64::from(*v);
            }
        }
        let norm = next.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm == 0.0 {
            break;
        }
        direction = next.into_iter().map(|x| x / norm).collect();
    }
    // Zipf: p(rank) = 1 / (rank * H(n)).
    let harmonic: f64 = (1..=starts.len()).map(|r| 1.0 / r as f64).sum();
    for (rank, &s) in starts.iter().enumerate() {
        let row = &mut raw[s..s + dim];
        let dot: f64 = row
            .iter()
            .zip(&direction)
            .map(|(v, d)| f64::from(*v) * d)
            .sum();
        for (v, d) in row.iter_mut().zip(&direction) {
            *v -= (dot * d) as f32;
        }
        let norm = row.iter().map(|v| v * v).sum::<f32>().sqrt();
        let p = 1.0 / ((rank + 1) as f64 * harmonic);
        let weight = (SIF_A / (SIF_A + p)) as f32;
        if norm > 0.0 {
            row.iter_mut().for_each(|v| *v *= weight / norm);
        }
    }
    raw
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn post_processing_centres_and_weights_by_rank() {
        // Three tokens in 3-d sharing a large offset along x, varying
        // most along y (the shared direction that is removed).
        let dim = 3;
        let raw = vec![10.0, 5.0, 1.0, 10.0, -5.0, 1.0, 10.0, 0.0, -2.0];
        let out = post_process(raw, &[0, 1, 2], dim);
        let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
        let norm = |a: &[f32]| dot(a, a).sqrt();
        let (a, b, c) = (&out[0..3], &out[3..6], &out[6..9]);
        // What is left tells the third token apart from the first two.
        assert!(dot(a, c) / (norm(a) * norm(c)) < -0.99, "{out:?}");
        assert!(dot(a, b) / (norm(a) * norm(b)) > 0.99, "{out:?}");
        // The most frequent (first) token weighs least.
        assert!(norm(a) < norm(b) && norm(b) < norm(c), "{out:?}");
    }

    #[test]
    fn bracketed_tokens_are_special() {
        assert!(is_special("[CLS]") && is_special("[unused12]") && is_special("<s>"));
        assert!(!is_special("retry") && !is_special("##ing") && !is_special("<"));
    }
}
