//! The embedder: finds the sentence-embedding model on disk, loads it, and
//! turns texts into L2-normalised, attention-mask mean-pooled vectors
//! (sentence-transformers all-MiniLM-L6-v2 by default: BERT, 384 dimensions).
//!
//! Tokenization uses the model's own `tokenizer.json`, with its fixed padding
//! to 128 turned off and its truncation set to `max_tokens`. The BERT forward
//! pass is written here on gemm (the AVX-512 kernels candle itself uses) over
//! the batch's tokens packed end to end, so there is no padding at all: a
//! text's vector does not depend on the other texts in its batch, and no
//! work is spent on pad positions. Attention runs per text and head; mean
//! pooling is over the text's own tokens (its attention mask).
//!
//! Threads: every forward pass runs inside this embedder's own rayon pool of
//! `threads` threads, and gemm is told that number, so the embedder never
//! keeps more than `threads` cores busy. (candle's BERT was not used for
//! this reason: candle 0.11 runs large element-wise ops on a process-wide
//! pool sized by `CANDLE_NUM_THREADS`/`RAYON_NUM_THREADS`/physical cores and
//! splits every matrix product into that many jobs, so a one-thread
//! embedder kept 1.3 cores busy.)
//!
//! Weights are read from model.safetensors (F32) into memory once; no map
//! stays open, so later changes to the file cannot affect a loaded model.
//!
//! Never: any I/O beyond reading the model directory, any network access,
//! a panic on any text.

use std::collections::HashMap;
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use gemm::Parallelism;
use rayon::prelude::*;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

/// The directory name of the default model.
pub(crate) const DEFAULT_MODEL_NAME: &str = "all-MiniLM-L6-v2";

/// The Hugging Face hub cache folder of the default model.
pub(crate) const HF_REPO_FOLDER: &str = "models--sentence-transformers--all-MiniLM-L6-v2";

/// The files a model directory must hold.
pub(crate) const REQUIRED_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// The most texts one forward pass takes; longer inputs run as consecutive
/// batches in the order given.
pub(crate) const MAX_BATCH: usize = 32;

/// The default truncation length (the one sentence-transformers uses for
/// this model).
pub(crate) const DEFAULT_MAX_TOKENS: usize = 256;

/// The smallest truncation length accepted: room for the special tokens and
/// a few words.
pub(crate) const MIN_MAX_TOKENS: usize = 8;

/// Bytes of text per token allowed before a long text is first encoded from
/// a prefix (see `Embedder::token_ids`). Code averages 3 to 4 bytes a token.
pub(crate) const PREFIX_BYTES_PER_TOKEN: usize = 8;

/// Bumped when anything that changes the vectors for the same model files
/// changes (pooling, normalisation, truncation rules), so `model_id` changes.
pub(crate) const EMBEDDING_FORMAT: &str = "quarry-embed/1";

/// Why a model could not be found, loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// No directory in the lookup order holds a model.
    #[error(
        "no embedding model found (searched: {}); install one with scripts/fetch-model.sh, or pass --model DIR / set QUARRY_MODEL",
        display_paths(.searched)
    )]
    NotFound { searched: Vec<PathBuf> },
    /// A model directory lacks one of the required files.
    #[error("model file missing: {}", .0.display())]
    MissingFile(PathBuf),
    /// A model file exists but could not be read or understood.
    #[error("cannot load model file {}: {reason}", .path.display())]
    Load { path: PathBuf, reason: String },
    /// Tokenization or the forward pass failed.
    #[error("embedding failed: {0}")]
    Embed(String),
}

fn display_paths(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "nothing".to_string();
    }
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Finds the model directory.
///
/// Lookup order: `explicit` (the CLI's `--model`), else the environment
/// variable `QUARRY_MODEL`; then `$XDG_DATA_HOME/quarry/models/all-MiniLM-L6-v2`
/// (default `~/.local/share/...`); then a Hugging Face hub cache snapshot of
/// sentence-transformers/all-MiniLM-L6-v2 (`$HF_HUB_CACHE`, else
/// `$HF_HOME/hub`, else `$XDG_CACHE_HOME/huggingface/hub`, else
/// `~/.cache/huggingface/hub`; the snapshot named by `refs/main` first). A
/// directory qualifies when it holds config.json, tokenizer.json and
/// model.safetensors. An explicit directory (argument or `QUARRY_MODEL`) that
/// does not qualify is an error, never silently replaced by another model.
pub fn locate_model(explicit: Option<&Path>) -> Result<PathBuf, ModelError> {
    let explicit = explicit
        .map(Path::to_path_buf)
        .or_else(|| env_path("QUARRY_MODEL"));
    if let Some(dir) = explicit {
        if !dir.is_dir() {
            return Err(ModelError::NotFound {
                searched: vec![dir],
            });
        }
        return match first_missing_file(&dir) {
            Some(missing) => Err(ModelError::MissingFile(missing)),
            None => Ok(dir),
        };
    }
    let mut searched = Vec::new();
    if let Some(data_home) = env_path("XDG_DATA_HOME").or_else(|| home_join(".local/share")) {
        let dir = data_home
            .join("quarry")
            .join("models")
            .join(DEFAULT_MODEL_NAME);
        if first_missing_file(&dir).is_none() {
            return Ok(dir);
        }
        searched.push(dir);
    }
    if let Some(hub) = hf_hub_cache() {
        let repo = hub.join(HF_REPO_FOLDER);
        for snapshot in hf_snapshots(&repo) {
            if first_missing_file(&snapshot).is_none() {
                return Ok(snapshot);
            }
        }
        searched.push(repo.join("snapshots"));
    }
    Err(ModelError::NotFound { searched })
}

/// The value of an environment variable as a path; unset or empty is `None`.
fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

fn home_join(rest: &str) -> Option<PathBuf> {
    env_path("HOME").map(|home| home.join(rest))
}

/// The Hugging Face hub cache directory, by the rules `huggingface_hub` uses.
fn hf_hub_cache() -> Option<PathBuf> {
    env_path("HF_HUB_CACHE")
        .or_else(|| env_path("HF_HOME").map(|h| h.join("hub")))
        .or_else(|| env_path("XDG_CACHE_HOME").map(|c| c.join("huggingface").join("hub")))
        .or_else(|| home_join(".cache/huggingface/hub"))
}

/// The snapshot directories of a hub cache repository folder: the one
/// `refs/main` names first, then the others in name order.
fn hf_snapshots(repo: &Path) -> Vec<PathBuf> {
    let snapshots = repo.join("snapshots");
    let mut found: Vec<PathBuf> = match fs::read_dir(&snapshots) {
        Ok(entries) => entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect(),
        Err(_) => return Vec::new(),
    };
    found.sort();
    if let Ok(main) = fs::read_to_string(repo.join("refs").join("main")) {
        let main = snapshots.join(main.trim());
        if let Some(at) = found.iter().position(|p| *p == main) {
            let preferred = found.remove(at);
            found.insert(0, preferred);
        }
    }
    found
}

/// The first required file `dir` lacks, or `None` when it qualifies.
fn first_missing_file(dir: &Path) -> Option<PathBuf> {
    REQUIRED_FILES
        .iter()
        .map(|name| dir.join(name))
        .find(|path| !path.is_file())
}

/// How an `Embedder` is set up.
#[derive(Clone, Debug)]
pub struct EmbedderOptions {
    /// Texts are truncated to this many tokens, special tokens included.
    /// Clamped to the model's position limit (512 here) and to at least 8.
    pub max_tokens: usize,
    /// Threads of the embedder's own compute pool (at least 1).
    pub threads: usize,
}

impl Default for EmbedderOptions {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        EmbedderOptions {
            max_tokens: DEFAULT_MAX_TOKENS,
            threads: cores.saturating_sub(1).max(1),
        }
    }
}

/// A loaded model: tokenizer, BERT weights and a compute pool. `Send + Sync`;
/// concurrent `embed` calls share the pool.
pub struct Embedder {
    model: Bert,
    /// Truncates at `max_tokens`, never pads.
    tokenizer: Tokenizer,
    /// Neither truncates nor pads: for `count_tokens`.
    counter: Tokenizer,
    pool: rayon::ThreadPool,
    threads: usize,
    model_id: String,
    max_tokens: usize,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("model_id", &self.model_id)
            .field("dim", &self.model.hidden)
            .field("max_tokens", &self.max_tokens)
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

fn load_error(path: &Path, reason: impl std::fmt::Display) -> ModelError {
    ModelError::Load {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>, ModelError> {
    fs::read(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            ModelError::MissingFile(path.to_path_buf())
        } else {
            load_error(path, e)
        }
    })
}

impl Embedder {
    /// Loads the model in `dir` (see `locate_model`). Reads config.json,
    /// tokenizer.json, the optional 1_Pooling/config.json and modules.json,
    /// and the weights.
    pub fn load(dir: &Path, options: EmbedderOptions) -> Result<Embedder, ModelError> {
        if let Some(missing) = first_missing_file(dir) {
            return Err(ModelError::MissingFile(missing));
        }
        let config_path = dir.join("config.json");
        let config_bytes = read_file(&config_path)?;
        let config: BertConfig =
            serde_json::from_slice(&config_bytes).map_err(|e| load_error(&config_path, e))?;
        config
            .check()
            .map_err(|reason| load_error(&config_path, reason))?;

        let pooling_path = dir.join("1_Pooling").join("config.json");
        let pooling_bytes = optional_file(&pooling_path)?;
        if let Some(bytes) = &pooling_bytes {
            check_pooling(bytes).map_err(|reason| load_error(&pooling_path, reason))?;
        }
        let modules_bytes = optional_file(&dir.join("modules.json"))?;

        let tokenizer_path = dir.join("tokenizer.json");
        let tokenizer_bytes = read_file(&tokenizer_path)?;
        let mut counter =
            Tokenizer::from_bytes(&tokenizer_bytes).map_err(|e| load_error(&tokenizer_path, e))?;
        counter.with_padding(None);
        counter
            .with_truncation(None)
            .map_err(|e| load_error(&tokenizer_path, e))?;
        let max_tokens = options
            .max_tokens
            .clamp(MIN_MAX_TOKENS, config.max_position_embeddings);
        let mut tokenizer = counter.clone();
        tokenizer
            .with_truncation(Some(TruncationParams {
                direction: TruncationDirection::Right,
                max_length: max_tokens,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
            }))
            .map_err(|e| load_error(&tokenizer_path, e))?;

        let weights_path = dir.join("model.safetensors");
        let weights_len = fs::metadata(&weights_path)
            .map_err(|e| load_error(&weights_path, e))?
            .len();
        let model = Bert::load(&weights_path, &config).map_err(|e| load_error(&weights_path, e))?;

        let threads = options.threads.max(1);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("quarry-embed-{i}"))
            .build()
            .map_err(|e| load_error(dir, format!("cannot start {threads} threads: {e}")))?;

        let model_id = model_id_for(
            dir,
            &[
                ("config", Some(&config_bytes[..])),
                ("tokenizer", Some(&tokenizer_bytes[..])),
                ("pooling", pooling_bytes.as_deref()),
                ("modules", modules_bytes.as_deref()),
            ],
            weights_len,
            max_tokens,
        );
        Ok(Embedder {
            model,
            tokenizer,
            counter,
            pool,
            threads,
            model_id,
            max_tokens,
        })
    }

    /// A stable id of the model files and of how vectors are made from
    /// them, used as the vector-cache key prefix: `<name>-<12 hex digits>`,
    /// where name is the model directory's name (the repository name for a
    /// Hugging Face snapshot) and the digits are a blake3 of config.json,
    /// tokenizer.json, the pooling config and modules.json, the weights'
    /// size, `max_tokens` and the embedding format version. Only
    /// `[A-Za-z0-9._-]`, so it is safe in a file name.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// The vector length (384 for the default model).
    pub fn dim(&self) -> usize {
        self.model.hidden
    }

    /// The truncation length in tokens, special tokens included.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// The number of threads of the compute pool.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// L2-normalised mean-pooled embeddings, one per text, in order. Texts run
    /// in consecutive batches of up to 32 in the order given. Texts longer
    /// than `max_tokens` are truncated. An empty slice gives an empty result.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ModelError> {
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(MAX_BATCH) {
            let ids = batch
                .iter()
                .map(|text| self.try_token_ids(text))
                .collect::<Result<Vec<_>, _>>()?;
            let parallelism = if self.threads > 1 {
                Parallelism::Rayon(self.threads)
            } else {
                Parallelism::None
            };
            let pooled = self
                .pool
                .install(|| self.model.embed(&ids, parallelism))
                .map_err(ModelError::Embed)?;
            vectors.extend(pooled);
        }
        Ok(vectors)
    }

    /// The number of tokens of `text`, special tokens included, before
    /// truncation. Tokenizes the whole text; should tokenization ever fail,
    /// the char count plus two (an upper bound for WordPiece) is returned.
    pub fn count_tokens(&self, text: &str) -> usize {
        match self.counter.encode_fast(text, true) {
            Ok(encoding) => encoding.len(),
            Err(_) => text.chars().count() + 2,
        }
    }

    /// The token ids the model sees for `text`: special tokens added,
    /// truncated to `max_tokens`. For tests and diagnostics; an encoding
    /// failure gives an empty vector.
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        self.try_token_ids(text).unwrap_or_default()
    }

    /// Encodes `text` with truncation. Encoding cost grows with the whole
    /// text although only its start is kept, so a long text is first
    /// encoded from a prefix that ends just after a byte `is_cut_byte`
    /// accepts: the normalizer works char by char and the pre-tokenizer
    /// splits at whitespace and isolates punctuation, so such a prefix's
    /// tokens are the first tokens of the whole text, and once the prefix
    /// overflows `max_tokens` its truncation equals the text's. Otherwise
    /// the prefix doubles, up to the whole text (a long run without any cut
    /// byte is rare: a single word becomes one [UNK] fast; only long CJK
    /// text without spaces or punctuation pays for being encoded whole).
    fn try_token_ids(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        let mut budget = self.max_tokens.saturating_mul(PREFIX_BYTES_PER_TOKEN);
        while budget < text.len() {
            let cut = text.as_bytes()[..budget]
                .iter()
                .rposition(|b| is_cut_byte(*b))
                .map(|at| at + 1);
            if let Some(cut) = cut {
                let encoding = self
                    .tokenizer
                    .encode_fast(&text[..cut], true)
                    .map_err(|e| ModelError::Embed(format!("tokenizer: {e}")))?;
                if !encoding.get_overflowing().is_empty() {
                    return Ok(encoding.get_ids().to_vec());
                }
            }
            budget = budget.saturating_mul(2);
        }
        let encoding = self
            .tokenizer
            .encode_fast(text, true)
            .map_err(|e| ModelError::Embed(format!("tokenizer: {e}")))?;
        Ok(encoding.get_ids().to_vec())
    }
}

/// Whether a text may be cut just after this byte without changing the
/// tokens before the cut: ASCII whitespace, or ASCII punctuation other than
/// the brackets and bars special tokens are spelled with (`[CLS]`, `<s>`,
/// `<|endoftext|>`), which the tokenizer matches before splitting.
pub(crate) fn is_cut_byte(b: u8) -> bool {
    b.is_ascii_whitespace() || (b.is_ascii_punctuation() && !b"[]<>|".contains(&b))
}

/// Scales `v` to unit length (a zero vector stays zero).
pub(crate) fn normalize(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        for x in &mut v {
            *x = (f64::from(*x) / norm) as f32;
        }
    }
    v
}

/// The fields of a Hugging Face BERT config.json that the forward pass uses.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct BertConfig {
    pub(crate) vocab_size: usize,
    pub(crate) hidden_size: usize,
    pub(crate) num_hidden_layers: usize,
    pub(crate) num_attention_heads: usize,
    pub(crate) intermediate_size: usize,
    pub(crate) hidden_act: String,
    pub(crate) max_position_embeddings: usize,
    pub(crate) type_vocab_size: usize,
    pub(crate) layer_norm_eps: f64,
    #[serde(default)]
    pub(crate) position_embedding_type: Option<String>,
    #[serde(default)]
    pub(crate) model_type: Option<String>,
}

impl BertConfig {
    /// Rejects configs this forward pass would compute wrongly.
    fn check(&self) -> Result<(), String> {
        if let Some(kind) = self.model_type.as_deref() {
            if kind != "bert" {
                return Err(format!("model_type {kind:?}: only \"bert\" is supported"));
            }
        }
        if self.hidden_act != "gelu" {
            return Err(format!(
                "hidden_act {:?}: only \"gelu\" is supported",
                self.hidden_act
            ));
        }
        if let Some(kind) = self.position_embedding_type.as_deref() {
            if kind != "absolute" {
                return Err(format!("position_embedding_type {kind:?} is not supported"));
            }
        }
        let plausible = self.vocab_size > 0
            && self.hidden_size > 0
            && self.num_attention_heads > 0
            && self.hidden_size % self.num_attention_heads == 0
            && self.intermediate_size > 0
            && self.type_vocab_size > 0
            && self.max_position_embeddings >= MIN_MAX_TOKENS
            && self.hidden_size <= 1 << 16
            && self.intermediate_size <= 1 << 18
            && self.num_hidden_layers <= 1024
            && self.layer_norm_eps.is_finite()
            && self.layer_norm_eps > 0.0;
        if plausible {
            Ok(())
        } else {
            Err("implausible model dimensions".to_string())
        }
    }
}

/// The tensor index of a safetensors file: name to (dtype, shape, absolute
/// byte range in the file).
struct SafeTensors {
    file: fs::File,
    file_len: u64,
    tensors: HashMap<String, (String, Vec<usize>, u64, u64)>,
}

impl SafeTensors {
    /// Reads the header: an 8-byte little-endian length, then that many
    /// bytes of JSON mapping names to `dtype`, `shape`, `data_offsets`.
    fn open(path: &Path) -> Result<SafeTensors, String> {
        let mut file = fs::File::open(path).map_err(|e| e.to_string())?;
        let file_len = file.metadata().map_err(|e| e.to_string())?.len();
        let mut len_bytes = [0u8; 8];
        file.read_exact(&mut len_bytes)
            .map_err(|e| format!("header: {e}"))?;
        let header_len = u64::from_le_bytes(len_bytes);
        if header_len > (100 << 20) || header_len + 8 > file_len {
            return Err("header length out of range".to_string());
        }
        let mut header = vec![0u8; header_len as usize];
        file.read_exact(&mut header)
            .map_err(|e| format!("header: {e}"))?;
        let header: HashMap<String, serde_json::Value> =
            serde_json::from_slice(&header).map_err(|e| format!("header: {e}"))?;
        let base = 8 + header_len;
        let mut tensors = HashMap::new();
        for (name, info) in header {
            if name == "__metadata__" {
                continue;
            }
            let dtype = info["dtype"].as_str().unwrap_or_default().to_string();
            let shape = info["shape"]
                .as_array()
                .map(|dims| dims.iter().filter_map(|d| d.as_u64()))
                .ok_or_else(|| format!("{name}: no shape"))?
                .map(|d| d as usize)
                .collect();
            let offsets = info["data_offsets"]
                .as_array()
                .filter(|o| o.len() == 2)
                .and_then(|o| Some((o[0].as_u64()?, o[1].as_u64()?)))
                .ok_or_else(|| format!("{name}: no data_offsets"))?;
            let (start, end) = (
                base.saturating_add(offsets.0),
                base.saturating_add(offsets.1),
            );
            if start > end || end > file_len {
                return Err(format!("{name}: data out of range"));
            }
            tensors.insert(name, (dtype, shape, start, end));
        }
        Ok(SafeTensors {
            file,
            file_len,
            tensors,
        })
    }

    /// Reads an F32 tensor of exactly `shape`.
    fn read(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, String> {
        let (dtype, found, start, end) = self
            .tensors
            .get(name)
            .ok_or_else(|| format!("tensor {name} missing"))?;
        if dtype != "F32" {
            return Err(format!("tensor {name} is {dtype}, only F32 is supported"));
        }
        if found != shape {
            return Err(format!(
                "tensor {name} has shape {found:?}, expected {shape:?}"
            ));
        }
        let count: usize = shape.iter().product();
        if (end - start) != count as u64 * 4 || *end > self.file_len {
            return Err(format!(
                "tensor {name}: byte length does not match its shape"
            ));
        }
        let mut bytes = vec![0u8; count * 4];
        let mut file = &self.file;
        file.seek(SeekFrom::Start(*start))
            .and_then(|_| file.read_exact(&mut bytes))
            .map_err(|e| format!("tensor {name}: {e}"))?;
        Ok(bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }
}

/// LayerNorm parameters.
struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

/// One encoder layer. Every weight matrix is `[out][in]` row-major, as
/// stored; query, key and value are stacked into one `[3h][h]` matrix.
struct EncoderLayer {
    qkv_weight: Vec<f32>,
    qkv_bias: Vec<f32>,
    attn_out_weight: Vec<f32>,
    attn_out_bias: Vec<f32>,
    attn_norm: Norm,
    inter_weight: Vec<f32>,
    inter_bias: Vec<f32>,
    out_weight: Vec<f32>,
    out_bias: Vec<f32>,
    out_norm: Norm,
}

/// A BERT encoder with mean pooling, in f32 on the CPU.
pub(crate) struct Bert {
    hidden: usize,
    heads: usize,
    intermediate: usize,
    vocab: usize,
    max_positions: usize,
    eps: f32,
    word: Vec<f32>,
    position: Vec<f32>,
    /// Row 0 of the token type embeddings: every token is type 0.
    token_type: Vec<f32>,
    embed_norm: Norm,
    layers: Vec<EncoderLayer>,
}

/// Rows of the activations one parallel element-wise task takes.
const ROWS_PER_TASK: usize = 16;

impl Bert {
    /// Reads the weights, with or without the `bert.` name prefix.
    fn load(path: &Path, config: &BertConfig) -> Result<Bert, String> {
        let st = SafeTensors::open(path)?;
        let prefix = if st
            .tensors
            .contains_key("bert.embeddings.word_embeddings.weight")
        {
            "bert."
        } else {
            ""
        };
        let (h, i) = (config.hidden_size, config.intermediate_size);
        let read = |name: &str, shape: &[usize]| st.read(&format!("{prefix}{name}"), shape);
        let norm = |name: &str| -> Result<Norm, String> {
            Ok(Norm {
                weight: read(&format!("{name}.weight"), &[h])?,
                bias: read(&format!("{name}.bias"), &[h])?,
            })
        };
        let embed_norm = norm("embeddings.LayerNorm")?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for l in 0..config.num_hidden_layers {
            let p = format!("encoder.layer.{l}");
            let attn_norm = norm(&format!("{p}.attention.output.LayerNorm"))?;
            let out_norm = norm(&format!("{p}.output.LayerNorm"))?;
            let mut qkv_weight = Vec::with_capacity(3 * h * h);
            let mut qkv_bias = Vec::with_capacity(3 * h);
            for part in ["query", "key", "value"] {
                let name = format!("{p}.attention.self.{part}");
                qkv_weight.extend(read(&format!("{name}.weight"), &[h, h])?);
                qkv_bias.extend(read(&format!("{name}.bias"), &[h])?);
            }
            layers.push(EncoderLayer {
                qkv_weight: transpose(&qkv_weight, 3 * h, h),
                qkv_bias,
                attn_out_weight: transpose(
                    &read(&format!("{p}.attention.output.dense.weight"), &[h, h])?,
                    h,
                    h,
                ),
                attn_out_bias: read(&format!("{p}.attention.output.dense.bias"), &[h])?,
                attn_norm,
                inter_weight: transpose(
                    &read(&format!("{p}.intermediate.dense.weight"), &[i, h])?,
                    i,
                    h,
                ),
                inter_bias: read(&format!("{p}.intermediate.dense.bias"), &[i])?,
                out_weight: transpose(&read(&format!("{p}.output.dense.weight"), &[h, i])?, h, i),
                out_bias: read(&format!("{p}.output.dense.bias"), &[h])?,
                out_norm,
            });
        }
        let token_types = read(
            "embeddings.token_type_embeddings.weight",
            &[config.type_vocab_size, h],
        )?;
        Ok(Bert {
            hidden: h,
            heads: config.num_attention_heads,
            intermediate: i,
            vocab: config.vocab_size,
            max_positions: config.max_position_embeddings,
            eps: config.layer_norm_eps as f32,
            word: read("embeddings.word_embeddings.weight", &[config.vocab_size, h])?,
            position: read(
                "embeddings.position_embeddings.weight",
                &[config.max_position_embeddings, h],
            )?,
            token_type: token_types[..h].to_vec(),
            embed_norm,
            layers,
        })
    }

    /// Mean-pooled, L2-normalised embeddings of token id sequences. The
    /// sequences' tokens are packed into one `[tokens][hidden]` matrix, so
    /// the dense layers run as single large products and nothing is padded;
    /// attention runs per sequence and head. Runs on the calling thread's
    /// rayon pool; `parallelism` is what the large products may use.
    fn embed(&self, seqs: &[Vec<u32>], parallelism: Parallelism) -> Result<Vec<Vec<f32>>, String> {
        let (h, inter) = (self.hidden, self.intermediate);
        let lens: Vec<usize> = seqs.iter().map(Vec::len).collect();
        let total: usize = lens.iter().sum();
        if lens.iter().any(|&len| len == 0 || len > self.max_positions) {
            return Err("a token sequence is empty or longer than the model allows".to_string());
        }
        let mut x = vec![0f32; total * h];
        let mut rows = x.chunks_exact_mut(h);
        for seq in seqs {
            for (position, &id) in seq.iter().enumerate() {
                let id = id as usize;
                if id >= self.vocab {
                    return Err(format!("token id {id} outside the vocabulary"));
                }
                let word = &self.word[id * h..(id + 1) * h];
                let pos = &self.position[position * h..(position + 1) * h];
                if let Some(row) = rows.next() {
                    for (((out, w), p), t) in
                        row.iter_mut().zip(word).zip(pos).zip(&self.token_type)
                    {
                        *out = w + t + p;
                    }
                }
            }
        }
        layer_norm(&mut x, &self.embed_norm, h, self.eps);

        let mut qkv = vec![0f32; total * 3 * h];
        let mut context = vec![0f32; total * h];
        let mut attn = vec![0f32; total * h];
        let mut hidden = vec![0f32; total * inter];
        for layer in &self.layers {
            fill_rows(&mut qkv, &layer.qkv_bias, None);
            matmul_acc(
                &mut qkv,
                &x,
                &layer.qkv_weight,
                total,
                3 * h,
                h,
                parallelism,
            );
            self.attention(&mut context, &qkv, &lens);
            fill_rows(&mut attn, &layer.attn_out_bias, Some(&x));
            matmul_acc(
                &mut attn,
                &context,
                &layer.attn_out_weight,
                total,
                h,
                h,
                parallelism,
            );
            layer_norm(&mut attn, &layer.attn_norm, h, self.eps);
            fill_rows(&mut hidden, &layer.inter_bias, None);
            matmul_acc(
                &mut hidden,
                &attn,
                &layer.inter_weight,
                total,
                inter,
                h,
                parallelism,
            );
            hidden
                .par_chunks_mut(inter * ROWS_PER_TASK)
                .for_each(gelu_slice);
            fill_rows(&mut x, &layer.out_bias, Some(&attn));
            matmul_acc(
                &mut x,
                &hidden,
                &layer.out_weight,
                total,
                h,
                inter,
                parallelism,
            );
            layer_norm(&mut x, &layer.out_norm, h, self.eps);
        }

        let mut vectors = Vec::with_capacity(seqs.len());
        let mut start = 0;
        for &len in &lens {
            let mut sum = vec![0f64; h];
            for row in x[start * h..(start + len) * h].chunks_exact(h) {
                for (s, v) in sum.iter_mut().zip(row) {
                    *s += f64::from(*v);
                }
            }
            start += len;
            vectors.push(normalize(
                sum.iter().map(|s| (s / len as f64) as f32).collect(),
            ));
        }
        Ok(vectors)
    }

    /// Self-attention: for every sequence and head, softmax(q kᵀ / √d) v,
    /// written to that head's columns of `context`. `qkv` rows hold the
    /// query, key and value projections side by side.
    fn attention(&self, context: &mut [f32], qkv: &[f32], lens: &[usize]) {
        let h = self.hidden;
        let d = h / self.heads;
        let scale = 1.0 / (d as f32).sqrt();
        let mut jobs = Vec::with_capacity(lens.len() * self.heads);
        let mut start = 0;
        for &len in lens {
            for head in 0..self.heads {
                jobs.push((start, len, head));
            }
            start += len;
        }
        let outputs: Vec<Vec<f32>> = jobs
            .par_iter()
            .map_init(Vec::new, |scores: &mut Vec<f32>, &(start, len, head)| {
                let base = start * 3 * h + head * d;
                let (q, k, v) = (&qkv[base..], &qkv[base + h..], &qkv[base + 2 * h..]);
                assert!(q.len() >= (len - 1) * 3 * h + 2 * h + d);
                scores.clear();
                scores.resize(len * len, 0.0);
                // SAFETY: q, k and v are read at rows 0..len with stride 3h
                // and columns 0..d, inside the slices (checked above); scores
                // is len x len.
                unsafe {
                    gemm::gemm(
                        len,
                        len,
                        d,
                        scores.as_mut_ptr(),
                        1,
                        len as isize,
                        false,
                        q.as_ptr(),
                        1,
                        (3 * h) as isize,
                        k.as_ptr(),
                        (3 * h) as isize,
                        1,
                        0.0,
                        scale,
                        false,
                        false,
                        false,
                        Parallelism::None,
                    );
                }
                softmax_rows(scores, len);
                let mut out = vec![0f32; len * d];
                // SAFETY: scores is len x len, v is read at rows 0..len with
                // stride 3h and columns 0..d, out is len x d.
                unsafe {
                    gemm::gemm(
                        len,
                        d,
                        len,
                        out.as_mut_ptr(),
                        1,
                        d as isize,
                        false,
                        scores.as_ptr(),
                        1,
                        len as isize,
                        v.as_ptr(),
                        1,
                        (3 * h) as isize,
                        0.0,
                        1.0,
                        false,
                        false,
                        false,
                        Parallelism::None,
                    );
                }
                out
            })
            .collect();
        for (&(start, _, head), out) in jobs.iter().zip(&outputs) {
            for (r, row) in out.chunks_exact(d).enumerate() {
                let at = (start + r) * h + head * d;
                context[at..at + d].copy_from_slice(row);
            }
        }
    }
}

/// `dst[m][n] += lhs[m][k] · w`, with `w` stored `[k][n]`; all row-major.
fn matmul_acc(
    dst: &mut [f32],
    lhs: &[f32],
    w: &[f32],
    m: usize,
    n: usize,
    k: usize,
    parallelism: Parallelism,
) {
    assert!(dst.len() >= m * n && lhs.len() >= m * k && w.len() >= k * n);
    if m == 0 {
        return;
    }
    // SAFETY: the three matrices lie inside their slices (checked above),
    // and dst does not overlap lhs or w (distinct borrows).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            n as isize,
            true,
            lhs.as_ptr(),
            1,
            k as isize,
            w.as_ptr(),
            1,
            n as isize,
            1.0,
            1.0,
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// The transpose of a `[rows][cols]` row-major matrix.
fn transpose(m: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    const BLOCK: usize = 32;
    let mut t = vec![0f32; rows * cols];
    for r0 in (0..rows).step_by(BLOCK) {
        for c0 in (0..cols).step_by(BLOCK) {
            for r in r0..(r0 + BLOCK).min(rows) {
                for c in c0..(c0 + BLOCK).min(cols) {
                    t[c * rows + r] = m[r * cols + c];
                }
            }
        }
    }
    t
}

/// Sets every row of `dst` to `bias`, plus the same row of `residual` when
/// given.
fn fill_rows(dst: &mut [f32], bias: &[f32], residual: Option<&[f32]>) {
    let n = bias.len();
    match residual {
        Some(residual) => dst
            .par_chunks_mut(n * ROWS_PER_TASK)
            .zip(residual.par_chunks(n * ROWS_PER_TASK))
            .for_each(|(dst, res)| {
                for (dst, res) in dst.chunks_exact_mut(n).zip(res.chunks_exact(n)) {
                    for ((d, b), r) in dst.iter_mut().zip(bias).zip(res) {
                        *d = b + r;
                    }
                }
            }),
        None => dst.par_chunks_mut(n * ROWS_PER_TASK).for_each(|dst| {
            for row in dst.chunks_exact_mut(n) {
                row.copy_from_slice(bias);
            }
        }),
    }
}

/// LayerNorm of every `width`-wide row of `x`, in place.
fn layer_norm(x: &mut [f32], norm: &Norm, width: usize, eps: f32) {
    x.par_chunks_mut(width * ROWS_PER_TASK).for_each(|chunk| {
        for row in chunk.chunks_exact_mut(width) {
            let mean = row.iter().sum::<f32>() / width as f32;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / width as f32;
            let inv = 1.0 / (var + eps).sqrt();
            for ((v, w), b) in row.iter_mut().zip(&norm.weight).zip(&norm.bias) {
                *v = (*v - mean) * inv * w + b;
            }
        }
    });
}

/// Softmax of every `len`-wide row of `scores`, in place. Runs the AVX2
/// build of the same code where the CPU has it.
fn softmax_rows(scores: &mut [f32], len: usize) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { softmax_rows_avx2(scores, len) };
    }
    softmax_rows_portable(scores, len);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn softmax_rows_avx2(scores: &mut [f32], len: usize) {
    softmax_rows_portable(scores, len);
}

#[inline(always)]
fn softmax_rows_portable(scores: &mut [f32], len: usize) {
    for row in scores.chunks_exact_mut(len) {
        let max = lanes_fold(row, f32::NEG_INFINITY, f32::max);
        for v in row.iter_mut() {
            *v = exp(*v - max);
        }
        let inv = 1.0 / lanes_fold(row, 0.0, |a, b| a + b);
        for v in row.iter_mut() {
            *v *= inv;
        }
    }
}

/// Folds `values` in eight interleaved lanes (so the loop vectorizes), then
/// folds the lanes.
#[inline(always)]
fn lanes_fold(values: &[f32], init: f32, f: impl Fn(f32, f32) -> f32) -> f32 {
    let mut lanes = [init; 8];
    let mut chunks = values.chunks_exact(8);
    for chunk in &mut chunks {
        for (lane, v) in lanes.iter_mut().zip(chunk) {
            *lane = f(*lane, *v);
        }
    }
    let tail = chunks.remainder().iter().fold(init, |a, v| f(a, *v));
    lanes.iter().fold(tail, |a, v| f(a, *v))
}

/// GELU of every value, in place. Runs the AVX2 build of the same code
/// where the CPU has it.
fn gelu_slice(values: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { gelu_slice_avx2(values) };
    }
    gelu_slice_portable(values);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn gelu_slice_avx2(values: &mut [f32]) {
    gelu_slice_portable(values);
}

#[inline(always)]
fn gelu_slice_portable(values: &mut [f32]) {
    for v in values.iter_mut() {
        *v = gelu(*v);
    }
}

/// GELU with the exact (erf) form BERT uses: x·Φ(x).
#[inline(always)]
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// The error function, Abramowitz & Stegun 7.1.26 (absolute error below
/// 1.5e-7, about f32 precision).
#[inline(always)]
fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_7 + t * (-1.453_152_1 + t * 1.061_405_4))));
    let y = 1.0 - poly * exp(-a * a);
    y.copysign(x)
}

/// e^x for the activation kernels, written so loops over it vectorize:
/// x = n·ln 2 + r with |r| <= ln 2 / 2, e^r from Cephes' expf polynomial
/// (relative error about 2e-7), 2^n built in the exponent bits. Inputs are
/// clamped to the normal f32 range (e^-87.3 stands in for 0).
#[inline(always)]
fn exp(x: f32) -> f32 {
    // Adding and subtracting 1.5·2^23 rounds to the nearest integer.
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-87.3, 88.3);
    let n = (x * std::f32::consts::LOG2_E + ROUND) - ROUND;
    // ln 2 in two parts, so n·ln 2 is subtracted without rounding error.
    let r = x - n * 0.693_359_4 + n * 2.121_944_4e-4;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 0.5;
    let y = p * r * r + r + 1.0;
    y * f32::from_bits(((n as i32 + 127) as u32) << 23)
}

/// Reads a file that may be absent.
fn optional_file(path: &Path) -> Result<Option<Vec<u8>>, ModelError> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(load_error(path, e)),
    }
}

/// Accepts a sentence-transformers pooling config only when it asks for
/// plain mean pooling, the one pooling implemented here.
fn check_pooling(bytes: &[u8]) -> Result<(), String> {
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let flag = |name: &str| value.get(name).and_then(serde_json::Value::as_bool) == Some(true);
    let others = [
        "pooling_mode_cls_token",
        "pooling_mode_max_tokens",
        "pooling_mode_mean_sqrt_len_tokens",
        "pooling_mode_weightedmean_tokens",
        "pooling_mode_lasttoken",
    ];
    if flag("pooling_mode_mean_tokens") && !others.iter().any(|name| flag(name)) {
        Ok(())
    } else {
        Err("only mean pooling (pooling_mode_mean_tokens alone) is supported".to_string())
    }
}

/// Builds the model id (see `Embedder::model_id`).
pub(crate) fn model_id_for(
    dir: &Path,
    files: &[(&str, Option<&[u8]>)],
    weights_len: u64,
    max_tokens: usize,
) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(EMBEDDING_FORMAT.as_bytes());
    for (label, bytes) in files {
        hasher.update(&[0]);
        hasher.update(label.as_bytes());
        match bytes {
            Some(bytes) => {
                hasher.update(&(bytes.len() as u64).to_le_bytes());
                hasher.update(bytes);
            }
            None => {
                hasher.update(b"absent");
            }
        }
    }
    hasher.update(&weights_len.to_le_bytes());
    hasher.update(&(max_tokens as u64).to_le_bytes());
    let hex = hasher.finalize().to_hex();
    format!("{}-{}", model_name(dir), &hex[..12])
}

/// The model's name: the directory's name, or for a Hugging Face snapshot
/// (`models--org--name/snapshots/<rev>`) the repository's name, with every
/// character outside `[A-Za-z0-9._-]` replaced by `_`.
pub(crate) fn model_name(dir: &Path) -> String {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let leaf = dir.file_name().map(|n| n.to_string_lossy().into_owned());
    let parent = dir.parent();
    let in_snapshots = parent
        .and_then(Path::file_name)
        .is_some_and(|n| n == "snapshots");
    let name = if in_snapshots {
        parent
            .and_then(Path::parent)
            .and_then(Path::file_name)
            .map(|n| {
                let n = n.to_string_lossy();
                n.rsplit("--").next().unwrap_or_default().to_string()
            })
            .or(leaf)
    } else {
        leaf
    };
    let name: String = name
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() || name.chars().all(|c| c == '.') {
        "model".to_string()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn embedder_is_send_and_sync() {
        assert_send_sync::<Embedder>();
    }

    #[test]
    fn normalize_gives_unit_length_and_keeps_zero() {
        let v = normalize(vec![3.0, 4.0]);
        assert!((v[0] - 0.6).abs() < 1e-7 && (v[1] - 0.8).abs() < 1e-7);
        assert_eq!(normalize(vec![0.0; 4]), vec![0.0; 4]);
    }

    #[test]
    fn model_name_uses_dir_or_hf_repo_and_is_file_safe() {
        let tmp = tempfile::tempdir().unwrap();
        let plain = tmp.path().join("all-MiniLM-L6-v2");
        let snapshot = tmp
            .path()
            .join("models--sentence-transformers--all-MiniLM-L6-v2")
            .join("snapshots")
            .join("c9745ed1d9f207416be6d2e6f8de32d1f16199bf");
        let odd = tmp.path().join("my model:v2");
        for dir in [&plain, &snapshot, &odd] {
            fs::create_dir_all(dir).unwrap();
        }
        assert_eq!(model_name(&plain), "all-MiniLM-L6-v2");
        assert_eq!(model_name(&snapshot), "all-MiniLM-L6-v2");
        assert_eq!(model_name(&odd), "my_model_v2");
    }

    #[test]
    fn model_id_changes_with_inputs() {
        let dir = Path::new("/nonexistent/all-MiniLM-L6-v2");
        let files = [("config", Some(&b"{}"[..])), ("tokenizer", Some(&b"t"[..]))];
        let id = model_id_for(dir, &files, 10, 256);
        assert!(id.starts_with("all-MiniLM-L6-v2-"), "{id}");
        assert_eq!(id.len(), "all-MiniLM-L6-v2-".len() + 12);
        assert_eq!(id, model_id_for(dir, &files, 10, 256));
        assert_ne!(id, model_id_for(dir, &files, 11, 256));
        assert_ne!(id, model_id_for(dir, &files, 10, 128));
        let other = [
            ("config", Some(&b"{ }"[..])),
            ("tokenizer", Some(&b"t"[..])),
        ];
        assert_ne!(id, model_id_for(dir, &other, 10, 256));
    }

    #[test]
    fn pooling_config_must_be_mean() {
        assert!(check_pooling(br#"{"pooling_mode_mean_tokens": true}"#).is_ok());
        assert!(check_pooling(
            br#"{"pooling_mode_mean_tokens": true, "pooling_mode_cls_token": false}"#
        )
        .is_ok());
        assert!(check_pooling(br#"{"pooling_mode_cls_token": true}"#).is_err());
        assert!(check_pooling(
            br#"{"pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": true}"#
        )
        .is_err());
        assert!(check_pooling(b"not json").is_err());
    }

    #[test]
    fn explicit_dir_must_qualify() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("absent");
        assert!(matches!(
            locate_model(Some(&missing)),
            Err(ModelError::NotFound { .. })
        ));
        fs::write(tmp.path().join("config.json"), "{}").unwrap();
        match locate_model(Some(tmp.path())) {
            Err(ModelError::MissingFile(path)) => {
                assert_eq!(path, tmp.path().join("tokenizer.json"))
            }
            other => panic!("expected MissingFile, got {other:?}"),
        }
        fs::write(tmp.path().join("tokenizer.json"), "{}").unwrap();
        fs::write(tmp.path().join("model.safetensors"), "").unwrap();
        assert_eq!(locate_model(Some(tmp.path())).unwrap(), tmp.path());
        // A directory that qualifies by its files but holds no valid model
        // fails to load with an error, not a panic.
        assert!(matches!(
            Embedder::load(tmp.path(), EmbedderOptions::default()),
            Err(ModelError::Load { .. })
        ));
    }

    #[test]
    fn hf_snapshots_prefer_refs_main() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join(HF_REPO_FOLDER);
        for rev in ["aaa", "bbb"] {
            fs::create_dir_all(repo.join("snapshots").join(rev)).unwrap();
        }
        assert_eq!(
            hf_snapshots(&repo),
            vec![repo.join("snapshots/aaa"), repo.join("snapshots/bbb")]
        );
        fs::create_dir_all(repo.join("refs")).unwrap();
        fs::write(repo.join("refs/main"), "bbb\n").unwrap();
        assert_eq!(hf_snapshots(&repo)[0], repo.join("snapshots/bbb"));
        assert!(hf_snapshots(&tmp.path().join("none")).is_empty());
    }
}
