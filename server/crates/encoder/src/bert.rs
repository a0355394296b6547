//! A BERT encoder on candle tensors, shaped for CPU inference of short,
//! unpadded texts: the sentence-embedding forward pass and nothing else.
//!
//! Why not `candle_transformers::models::bert::BertModel`: its linear layers
//! multiply by the transposed view of each weight, and with the few rows a
//! query has gemm then spends most of its time re-reading the strided weight
//! (measured here: 350 us against 137 us for one 10x384 by 384x1536 product,
//! and 18 ms per query in all). This encoder differs only in layout, never in
//! arithmetic order that matters:
//! - weights are transposed once at load into contiguous `(in, out)` tensors,
//!   and query, key and value are one fused `(hidden, 3 * hidden)` product;
//! - the texts of a batch are packed row after row into one
//!   `(total tokens, hidden)` matrix, so the per-token layers (linear, GELU,
//!   layer norm) never compute padding, and attention runs per text, so no
//!   mask is needed; attention is one op over all texts (`kernels`), texts
//!   in parallel;
//! - GELU (the exact, erf-based one BERT uses) is one vectorised pass over
//!   contiguous memory with a rational erf approximation (error below
//!   2e-7), split over the calling rayon pool.
//! - With `Precision::Int8` the linear layers (nearly all the arithmetic)
//!   run on int8 weights and activations (`qgemm`), where the CPU has
//!   AVX-512 VNNI or AVX2; attention, layer norm and GELU stay f32.
//!
//! The output is the mean-pooled (not yet normalised) embedding per text,
//! which the committed float64 reference pins (tests/embeddings.rs).
//!
//! Never: padding, masking or any I/O; weights are read once from the
//! `VarBuilder` at load.

use crate::fused;
use crate::kernels;
use crate::qgemm::QuantLinear;
use candle_core::{CpuStorage, CustomOp1, Device, Layout, Module, Shape, Tensor};
use candle_nn::VarBuilder;
use serde::Deserialize;

/// The fields of a BERT `config.json` the encoder reads (Hugging Face's
/// names; the others, dropout and initialisation, do not matter to
/// inference and are ignored).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Config {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub hidden_act: HiddenAct,
    pub max_position_embeddings: usize,
    pub type_vocab_size: usize,
    pub layer_norm_eps: f64,
    /// Only `absolute` is supported (checked at load, with an error).
    #[serde(default = "absolute")]
    pub position_embedding_type: String,
}

fn absolute() -> String {
    "absolute".to_string()
}

/// The feed-forward activation (`hidden_act`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HiddenAct {
    Gelu,
    GeluApproximate,
    Relu,
}

/// How the linear layers multiply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// f32 weights and activations (candle's gemm).
    F32,
    /// int8 weights per output column, int8 activations per row, exact
    /// i32 sums (`qgemm`); about 1.9x the f32 throughput where the CPU
    /// has AVX-512 VNNI and 1.4x with AVX2, at a cosine of about 0.99 to
    /// the f32 vectors.
    Int8,
}

impl Precision {
    /// The name `QUARRY_PRECISION` and the benchmark use.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Int8 => "int8",
        }
    }

    /// The precision called `name`, if any.
    pub fn from_name(name: &str) -> Option<Precision> {
        [Precision::F32, Precision::Int8]
            .into_iter()
            .find(|p| p.name() == name)
    }

    /// Int8 where this CPU multiplies int8 natively, f32 elsewhere.
    pub fn native() -> Precision {
        if QuantLinear::fast_path() {
            Precision::Int8
        } else {
            Precision::F32
        }
    }
}

/// A linear layer: its weight stored transposed, `(in, out)`, contiguous,
/// or quantised.
#[derive(Debug)]
enum Dense {
    F32 { weight_t: Tensor, bias: Tensor },
    Int8(QuantLinear),
}

impl Dense {
    /// This layer with the exact GELU fused onto its output where it is
    /// int8 (saves a copy and a pass over the widest activations); an f32
    /// layer is returned as it is and leaves the activation to the caller.
    fn with_gelu(self) -> Dense {
        match self {
            Dense::Int8(layer) => Dense::Int8(layer.with_gelu()),
            dense => dense,
        }
    }

    /// Whether the output already went through the activation.
    fn activates(&self) -> bool {
        matches!(self, Dense::Int8(layer) if layer.applies_gelu())
    }

    /// The int8 layer, if this is one.
    fn int8(&self) -> Option<&QuantLinear> {
        match self {
            Dense::Int8(layer) => Some(layer),
            Dense::F32 { .. } => None,
        }
    }

    /// Loads `prefix.weight` `(out, in)` and `prefix.bias` `(out)`.
    fn load(
        vb: &VarBuilder,
        input: usize,
        output: usize,
        precision: Precision,
    ) -> candle_core::Result<Dense> {
        let weight = vb.get((output, input), "weight")?;
        let bias = vb.get(output, "bias")?;
        Dense::from_parts(&[weight], &[bias], precision)
    }

    /// Several `(out_i, in)` weights stacked along `out`, transposed.
    fn from_parts(
        weights: &[Tensor],
        biases: &[Tensor],
        precision: Precision,
    ) -> candle_core::Result<Dense> {
        let weight = Tensor::cat(weights, 0)?;
        let bias = Tensor::cat(biases, 0)?;
        let weight_t = weight.t()?.contiguous()?;
        Ok(match precision {
            Precision::F32 => Dense::F32 { weight_t, bias },
            Precision::Int8 => {
                let (input, output) = weight_t.dims2()?;
                let flat = weight_t.flatten_all()?.to_vec1::<f32>()?;
                Dense::Int8(QuantLinear::new(
                    &flat,
                    input,
                    output,
                    &bias.to_vec1::<f32>()?,
                ))
            }
        })
    }
}

impl Module for Dense {
    fn forward(&self, xs: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Dense::F32 { weight_t, bias } => xs.matmul(weight_t)?.broadcast_add(bias),
            Dense::Int8(layer) => xs.contiguous()?.apply_op1_no_bwd(layer),
        }
    }
}

impl CustomOp1 for QuantLinear {
    fn name(&self) -> &'static str {
        "quarry-int8-linear"
    }

    fn cpu_fwd(
        &self,
        storage: &CpuStorage,
        layout: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let xs = contiguous_f32(storage, layout, "int8 linear")?;
        let (rows, input) = layout.shape().dims2()?;
        if input != self.inputs() {
            candle_core::bail!("int8 linear: {input} inputs, expected {}", self.inputs());
        }
        let out = self.forward(xs);
        Ok((CpuStorage::F32(out), Shape::from((rows, self.outputs()))))
    }
}

/// The f32 elements of a contiguous tensor, for the custom ops below.
fn contiguous_f32<'a>(
    storage: &'a CpuStorage,
    layout: &Layout,
    op: &str,
) -> candle_core::Result<&'a [f32]> {
    let CpuStorage::F32(data) = storage else {
        candle_core::bail!("{op}: only f32 tensors are supported");
    };
    let Some((start, end)) = layout.contiguous_offsets() else {
        candle_core::bail!("{op}: input must be contiguous");
    };
    Ok(&data[start..end])
}

#[derive(Debug)]
struct Norm {
    weight: Tensor,
    bias: Tensor,
    /// The same parameters as plain floats, for the fused layers.
    weight_v: Vec<f32>,
    bias_v: Vec<f32>,
    eps: f32,
}

impl Norm {
    fn load(vb: &VarBuilder, size: usize, eps: f64) -> candle_core::Result<Norm> {
        // Older BERT checkpoints name them gamma/beta.
        let (weight, bias) = if vb.contains_tensor("weight") {
            (vb.get(size, "weight")?, vb.get(size, "bias")?)
        } else {
            (vb.get(size, "gamma")?, vb.get(size, "beta")?)
        };
        Ok(Norm {
            weight_v: weight.to_vec1()?,
            bias_v: bias.to_vec1()?,
            weight,
            bias,
            eps: eps as f32,
        })
    }

    fn parts(&self) -> fused::NormParts<'_> {
        fused::NormParts {
            weight: &self.weight_v,
            bias: &self.bias_v,
            eps: self.eps,
        }
    }
}

impl Module for Norm {
    fn forward(&self, xs: &Tensor) -> candle_core::Result<Tensor> {
        candle_nn::ops::layer_norm(&xs.contiguous()?, &self.weight, &self.bias, self.eps)
    }
}

#[derive(Debug)]
struct Layer {
    qkv: Dense,
    attention_out: Dense,
    attention_norm: Norm,
    intermediate: Dense,
    output: Dense,
    output_norm: Norm,
}

/// The encoder: embeddings, layers, and how to run them.
#[derive(Debug)]
pub(crate) struct Encoder {
    word_embeddings: Tensor,
    position_embeddings: Tensor,
    /// Row 0 of the token type table: every token here is of type 0.
    token_type: Tensor,
    embedding_norm: Norm,
    layers: Vec<Layer>,
    heads: usize,
    head_dim: usize,
    act: HiddenAct,
    device: Device,
}

impl Encoder {
    /// Loads the weights named as in Hugging Face BERT checkpoints, with or
    /// without the `bert.` prefix.
    pub(crate) fn load(
        vb: VarBuilder,
        config: &Config,
        precision: Precision,
    ) -> candle_core::Result<Encoder> {
        let vb = if vb.contains_tensor("embeddings.word_embeddings.weight") {
            vb
        } else {
            vb.pp("bert")
        };
        if config.position_embedding_type != "absolute" {
            candle_core::bail!(
                "position embeddings {:?}: only absolute ones are supported",
                config.position_embedding_type
            );
        }
        let hidden = config.hidden_size;
        let heads = config.num_attention_heads;
        if heads == 0 || !hidden.is_multiple_of(heads) {
            candle_core::bail!("hidden size {hidden} is not a multiple of {heads} heads");
        }
        let emb = vb.pp("embeddings");
        let word_embeddings = emb.get((config.vocab_size, hidden), "word_embeddings.weight")?;
        let position_embeddings = emb.get(
            (config.max_position_embeddings, hidden),
            "position_embeddings.weight",
        )?;
        let token_type = emb
            .get(
                (config.type_vocab_size.max(1), hidden),
                "token_type_embeddings.weight",
            )?
            .get(0)?;
        let embedding_norm = Norm::load(&emb.pp("LayerNorm"), hidden, config.layer_norm_eps)?;

        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let vb = vb.pp(format!("encoder.layer.{i}"));
            let this = vb.pp("attention.self");
            let mut weights = Vec::with_capacity(3);
            let mut biases = Vec::with_capacity(3);
            for part in ["query", "key", "value"] {
                weights.push(this.get((hidden, hidden), &format!("{part}.weight"))?);
                biases.push(this.get(hidden, &format!("{part}.bias"))?);
            }
            let inter = config.intermediate_size;
            let mut intermediate =
                Dense::load(&vb.pp("intermediate.dense"), hidden, inter, precision)?;
            if config.hidden_act == HiddenAct::Gelu {
                intermediate = intermediate.with_gelu();
            }
            layers.push(Layer {
                qkv: Dense::from_parts(&weights, &biases, precision)?,
                attention_out: Dense::load(
                    &vb.pp("attention.output.dense"),
                    hidden,
                    hidden,
                    precision,
                )?,
                attention_norm: Norm::load(
                    &vb.pp("attention.output.LayerNorm"),
                    hidden,
                    config.layer_norm_eps,
                )?,
                intermediate,
                output: Dense::load(&vb.pp("output.dense"), inter, hidden, precision)?,
                output_norm: Norm::load(&vb.pp("output.LayerNorm"), hidden, config.layer_norm_eps)?,
            });
        }
        Ok(Encoder {
            word_embeddings,
            position_embeddings,
            token_type,
            embedding_norm,
            layers,
            heads,
            head_dim: hidden / heads,
            act: config.hidden_act,
            device: vb.device().clone(),
        })
    }

    /// The mean of the last hidden states over each text's tokens, one
    /// `hidden`-long vector per text, in order. Every text must be non-empty
    /// and no longer than the position table.
    pub(crate) fn mean_pooled(&self, ids: &[Vec<u32>]) -> candle_core::Result<Vec<Vec<f32>>> {
        let lengths: Vec<usize> = ids.iter().map(Vec::len).collect();
        if lengths.contains(&0) {
            candle_core::bail!("empty token sequence");
        }
        let flat: Vec<u32> = ids.iter().flatten().copied().collect();
        let positions: Vec<u32> = lengths.iter().flat_map(|&len| 0..len as u32).collect();
        let rows = flat.len();
        let flat = Tensor::from_vec(flat, rows, &self.device)?;
        let positions = Tensor::from_vec(positions, rows, &self.device)?;
        let mut xs = self
            .word_embeddings
            .index_select(&flat, 0)?
            .add(&self.position_embeddings.index_select(&positions, 0)?)?
            .broadcast_add(&self.token_type)?;
        xs = self.embedding_norm.forward(&xs)?;
        if let Some(layers) = self.fused_layers() {
            let mut x = xs.flatten_all()?.to_vec1::<f32>()?;
            fused::encode(&layers, &mut x, &lengths, self.heads, self.head_dim);
            return Ok(fused::mean_rows(&x, &lengths, self.heads * self.head_dim));
        }
        for layer in &self.layers {
            xs = self.layer(layer, &xs, &lengths)?;
        }
        let mut pooled = Vec::with_capacity(lengths.len());
        let mut start = 0;
        for &len in &lengths {
            let mean = xs.narrow(0, start, len)?.mean(0)?;
            pooled.push(mean.to_vec1::<f32>()?);
            start += len;
        }
        Ok(pooled)
    }

    /// Every layer as fused int8 parts, where every product is int8 with
    /// the feed-forward GELU fused on (`Precision::Int8` with BERT's exact
    /// GELU); otherwise the tensor path runs.
    fn fused_layers(&self) -> Option<Vec<fused::LayerParts<'_>>> {
        self.layers
            .iter()
            .map(|layer| {
                let intermediate = layer.intermediate.int8()?;
                intermediate.applies_gelu().then_some(())?;
                Some(fused::LayerParts {
                    qkv: layer.qkv.int8()?,
                    attention_out: layer.attention_out.int8()?,
                    attention_norm: layer.attention_norm.parts(),
                    intermediate,
                    output: layer.output.int8()?,
                    output_norm: layer.output_norm.parts(),
                })
            })
            .collect()
    }

    fn layer(&self, layer: &Layer, xs: &Tensor, lengths: &[usize]) -> candle_core::Result<Tensor> {
        let qkv = layer.qkv.forward(xs)?.contiguous()?;
        let context = qkv.apply_op1_no_bwd(&Attention {
            lengths,
            heads: self.heads,
            head_dim: self.head_dim,
        })?;
        let attended = layer
            .attention_norm
            .forward(&(layer.attention_out.forward(&context)? + xs)?)?;
        let inner = layer.intermediate.forward(&attended)?;
        let inner = if layer.intermediate.activates() {
            inner
        } else {
            self.activate(&inner)?
        };
        layer
            .output_norm
            .forward(&(layer.output.forward(&inner)? + attended)?)
    }

    fn activate(&self, xs: &Tensor) -> candle_core::Result<Tensor> {
        match self.act {
            HiddenAct::Gelu => xs.apply_op1_no_bwd(&GeluErf),
            HiddenAct::GeluApproximate => xs.gelu(),
            HiddenAct::Relu => xs.relu(),
        }
    }
}

/// Per-text multi-head attention over the packed `(tokens, 3 * hidden)`
/// query-key-value rows (`kernels::attention`).
struct Attention<'a> {
    lengths: &'a [usize],
    heads: usize,
    head_dim: usize,
}

impl CustomOp1 for Attention<'_> {
    fn name(&self) -> &'static str {
        "quarry-attention"
    }

    fn cpu_fwd(
        &self,
        storage: &CpuStorage,
        layout: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let input = contiguous_f32(storage, layout, "attention")?;
        let (rows, width) = layout.shape().dims2()?;
        let hidden = self.heads * self.head_dim;
        if width != 3 * hidden || self.lengths.iter().sum::<usize>() != rows {
            candle_core::bail!("attention: {rows}x{width} rows do not match the texts");
        }
        let mut out = vec![0f32; rows * hidden];
        kernels::attention(input, self.lengths, self.heads, self.head_dim, &mut out);
        Ok((CpuStorage::F32(out), Shape::from((rows, hidden))))
    }
}

/// Exact GELU, `x * (1 + erf(x / sqrt 2)) / 2`, over contiguous f32 tensors.
struct GeluErf;

impl CustomOp1 for GeluErf {
    fn name(&self) -> &'static str {
        "quarry-gelu-erf"
    }

    fn cpu_fwd(
        &self,
        storage: &CpuStorage,
        layout: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let input = contiguous_f32(storage, layout, "gelu")?;
        let mut out = input.to_vec();
        kernels::gelu_erf_par(&mut out);
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::D;

    #[test]
    fn precision_names_round_trip() {
        for p in [Precision::F32, Precision::Int8] {
            assert_eq!(Precision::from_name(p.name()), Some(p));
        }
        assert_eq!(Precision::from_name("fp16"), None);
    }

    #[test]
    fn gelu_op_matches_candle_on_any_shape() {
        let xs = Tensor::arange(-500f32, 500f32, &Device::Cpu)
            .unwrap()
            .affine(0.01, 0.0)
            .unwrap()
            .reshape((10, 100))
            .unwrap();
        let ours = xs.apply_op1_no_bwd(&GeluErf).unwrap();
        let theirs = xs.gelu_erf().unwrap();
        let diff = (ours - theirs)
            .unwrap()
            .abs()
            .unwrap()
            .max_keepdim(D::Minus1)
            .unwrap()
            .max(0)
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()[0];
        assert!(diff < 1e-6, "max diff {diff}");
    }
}
