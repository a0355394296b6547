//! The int8 encoder's layers on plain buffers, fused per block of rows.
//!
//! Per layer, two passes over the packed `(tokens, hidden)` rows, each split
//! over the calling rayon pool:
//! 1. attention, per text (`kernels::attention`), from the query-key-value
//!    rows the previous pass left;
//! 2. per block of `BLOCK_ROWS` rows, everything that is per token: the
//!    attention output product, residual and layer norm, the feed-forward
//!    product with its GELU, the second product, residual and layer norm,
//!    and the next layer's query-key-value product of the same rows.
//!
//! A block's intermediate activations (`BLOCK_ROWS x intermediate`) stay in
//! a per-thread scratch in cache instead of a tensor of the whole batch, and
//! no pass waits for the whole batch between the products of a layer: with
//! candle's tensors in between, the additions, layer norms, allocations and
//! their page clearing took a sixth of the encoder's time.
//!
//! The arithmetic is the per-token arithmetic of `bert::Encoder`'s tensor
//! path; every step is per row, so a text's vector never depends on its
//! batch or block.
//!
//! Never: allocate per row, or touch anything beyond the buffers given.

use crate::kernels;
use crate::qgemm::QuantLinear;
use rayon::prelude::*;

/// Rows per block of the per-token pass.
const BLOCK_ROWS: usize = 32;

/// A layer norm's parameters.
pub(crate) struct NormParts<'a> {
    pub(crate) weight: &'a [f32],
    pub(crate) bias: &'a [f32],
    pub(crate) eps: f32,
}

/// One encoder layer with every product int8, the feed-forward one with
/// GELU fused on.
pub(crate) struct LayerParts<'a> {
    pub(crate) qkv: &'a QuantLinear,
    pub(crate) attention_out: &'a QuantLinear,
    pub(crate) attention_norm: NormParts<'a>,
    pub(crate) intermediate: &'a QuantLinear,
    pub(crate) output: &'a QuantLinear,
    pub(crate) output_norm: NormParts<'a>,
}

/// A block's working rows, kept per thread.
#[derive(Default)]
struct Scratch {
    attended: Vec<f32>,
    inner: Vec<f32>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// Runs `layers` over `x`, the embedded tokens of the texts (`lengths`, one
/// after another), `hidden = heads * head_dim` floats a row, in place.
pub(crate) fn encode(
    layers: &[LayerParts<'_>],
    x: &mut [f32],
    lengths: &[usize],
    heads: usize,
    head_dim: usize,
) {
    let hidden = heads * head_dim;
    let Some(first) = layers.first() else {
        return;
    };
    let rows = x.len() / hidden.max(1);
    let mut qkv = vec![0f32; rows * 3 * hidden];
    let mut context = vec![0f32; rows * hidden];
    x.par_chunks(BLOCK_ROWS * hidden)
        .zip(qkv.par_chunks_mut(BLOCK_ROWS * 3 * hidden))
        .for_each(|(x, qkv)| first.qkv.rows_into(x, qkv));
    for (i, layer) in layers.iter().enumerate() {
        kernels::attention(&qkv, lengths, heads, head_dim, &mut context);
        let next = layers.get(i + 1);
        x.par_chunks_mut(BLOCK_ROWS * hidden)
            .zip(context.par_chunks(BLOCK_ROWS * hidden))
            .zip(qkv.par_chunks_mut(BLOCK_ROWS * 3 * hidden))
            .for_each(|((x, context), qkv)| {
                SCRATCH.with_borrow_mut(|scratch| {
                    per_token(layer, next, x, context, qkv, scratch);
                });
            });
    }
}

/// One block of rows through the rest of `layer` after attention, then
/// `next`'s query-key-value product.
fn per_token(
    layer: &LayerParts<'_>,
    next: Option<&LayerParts<'_>>,
    x: &mut [f32],
    context: &[f32],
    qkv: &mut [f32],
    scratch: &mut Scratch,
) {
    let hidden = layer.attention_out.outputs();
    let rows = x.len() / hidden;
    let Scratch { attended, inner } = scratch;
    attended.resize(rows * hidden, 0.0);
    inner.resize(rows * layer.intermediate.outputs(), 0.0);
    layer.attention_out.rows_into(context, attended);
    let norm = &layer.attention_norm;
    kernels::add_layer_norm(attended, x, norm.weight, norm.bias, norm.eps);
    layer.intermediate.rows_into(attended, inner);
    layer.output.rows_into(inner, x);
    let norm = &layer.output_norm;
    kernels::add_layer_norm(x, attended, norm.weight, norm.bias, norm.eps);
    if let Some(next) = next {
        next.qkv.rows_into(x, qkv);
    }
}

/// The mean row of each text, in order.
pub(crate) fn mean_rows(x: &[f32], lengths: &[usize], hidden: usize) -> Vec<Vec<f32>> {
    let mut pooled = Vec::with_capacity(lengths.len());
    let mut rest = x;
    for &len in lengths {
        let (text, after) = rest.split_at(len * hidden);
        rest = after;
        let mut sum = vec![0f32; hidden];
        for row in text.chunks_exact(hidden) {
            for (s, &v) in sum.iter_mut().zip(row) {
                *s += v;
            }
        }
        let inv = 1.0 / len.max(1) as f32;
        sum.iter_mut().for_each(|s| *s *= inv);
        pooled.push(sum);
    }
    pooled
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_rows_averages_each_text() {
        let x = [1.0, 2.0, 3.0, 4.0, 10.0, 20.0];
        let pooled = mean_rows(&x, &[2, 1], 2);
        assert_eq!(pooled, vec![vec![2.0, 3.0], vec![10.0, 20.0]]);
    }
}
