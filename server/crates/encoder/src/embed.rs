//! The embedder: finds the sentence-embedding model on disk, loads it, and
//! turns texts into L2-normalised, attention-mask mean-pooled vectors
//! (sentence-transformers all-MiniLM-L6-v2 by default: BERT, 384 dimensions).
//!
//! Tokenization uses the model's own `tokenizer.json`, with its fixed padding
//! replaced by no padding (batches are padded here to their longest text) and
//! its truncation set to `max_tokens`. The forward pass is our own BERT
//! encoder on candle tensors (`bert`), which packs a batch's texts without
//! padding, so a text's vector never depends on its batch.
//!
//! Threads: every batch runs inside this embedder's own rayon pool of
//! `threads` threads, so gemm (which schedules its jobs on the current rayon
//! pool) and candle's rayon kernels never use more. Two things sit outside
//! it, both process-wide in candle 0.11: gemm cuts each product into as many
//! jobs as `get_num_threads()` says (`RAYON_NUM_THREADS`, else the physical
//! core count), which then queue on the pool's threads; and element-wise ops
//! over 64K values run on candle's own "barrier pool" of
//! `CANDLE_NUM_THREADS` (else the same count) minus one threads plus the
//! caller. Measured on 2 cores: `threads` 1 keeps 1.27 cores busy, unless
//! the process starts with `CANDLE_NUM_THREADS=1`.
//!
//! A single-text call (a query) made while a batch is in flight runs on a
//! separate one-thread lane instead of queueing behind the batch, which
//! takes seconds; otherwise it uses the pool.
//!
//! Never: any I/O beyond reading the model directory, any network access,
//! a panic on any text.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

pub use crate::bert::Precision;
use crate::bert::{Config, Encoder};
use candle_core::{DType, Device};
use candle_nn::VarBuilder;
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
    /// Threads of the embedder's own compute pool (at least 1). A query
    /// made while a batch runs uses one more (see `Embedder::embed`).
    pub threads: usize,
    /// How the linear layers multiply: by default int8 where the CPU has
    /// AVX-512 VNNI or AVX2, else f32; `QUARRY_PRECISION=f32|int8` overrides it.
    /// Part of the model id, so vectors of the two never mix in a cache.
    pub precision: Precision,
    /// Called on each thread of the compute pool as it starts: document
    /// embedding is background work, and the engine lowers those threads'
    /// CPU priority here. The query lane never runs it.
    pub on_pool_thread: fn(),
}

impl Default for EmbedderOptions {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        EmbedderOptions {
            max_tokens: DEFAULT_MAX_TOKENS,
            threads: cores.saturating_sub(1).max(1),
            precision: std::env::var("QUARRY_PRECISION")
                .ok()
                .and_then(|name| Precision::from_name(&name))
                .unwrap_or_else(Precision::native),
            on_pool_thread: || {},
        }
    }
}

/// A loaded model: tokenizer, BERT weights and a compute pool. `Send + Sync`;
/// concurrent `embed` calls share the pool.
pub struct Embedder {
    model: Encoder,
    /// Truncates at `max_tokens`, never pads.
    tokenizer: Tokenizer,
    /// Neither truncates nor pads: for `count_tokens`.
    counter: Tokenizer,
    pool: rayon::ThreadPool,
    /// One thread for single-text calls made while `pool` runs a batch.
    query_lane: rayon::ThreadPool,
    /// Multi-text batches in flight on `pool`.
    batches_in_flight: AtomicUsize,
    model_id: String,
    dim: usize,
    max_tokens: usize,
    precision: Precision,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("model_id", &self.model_id)
            .field("dim", &self.dim)
            .field("max_tokens", &self.max_tokens)
            .field("precision", &self.precision)
            .field("threads", &self.pool.current_num_threads())
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
    /// and the weights, which are memory-mapped only while they are copied
    /// into the model.
    pub fn load(dir: &Path, options: EmbedderOptions) -> Result<Embedder, ModelError> {
        if let Some(missing) = first_missing_file(dir) {
            return Err(ModelError::MissingFile(missing));
        }
        let config_path = dir.join("config.json");
        let config_bytes = read_file(&config_path)?;
        let config: Config =
            serde_json::from_slice(&config_bytes).map_err(|e| load_error(&config_path, e))?;
        if config.hidden_size == 0 || config.max_position_embeddings < MIN_MAX_TOKENS {
            return Err(load_error(&config_path, "implausible model dimensions"));
        }

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
        let device = Device::Cpu;
        // SAFETY: the map is read while `Encoder::load` copies every tensor
        // into memory the model owns, and is unmapped when `vb` is dropped at
        // the end of this function. The contract is that nothing truncates or
        // rewrites model.safetensors during those few tens of milliseconds
        // (the files are only ever replaced whole by fetch-model.sh); a
        // truncation then would fault this process, a rewrite would yield
        // wrong weights.
        let vb =
            unsafe { VarBuilder::from_mmaped_safetensors(&[&weights_path], DType::F32, &device) }
                .map_err(|e| load_error(&weights_path, e))?;
        let precision = options.precision;
        let model =
            Encoder::load(vb, &config, precision).map_err(|e| load_error(&weights_path, e))?;

        let threads = options.threads.max(1);
        let on_pool_thread = options.on_pool_thread;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("quarry-embed-{i}"))
            // Document embedding is background work; the query lane is not.
            .start_handler(move |_| on_pool_thread())
            .build()
            .map_err(|e| load_error(dir, format!("cannot start {threads} threads: {e}")))?;
        let query_lane = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(|_| "quarry-embed-q".to_string())
            .build()
            .map_err(|e| load_error(dir, format!("cannot start a thread: {e}")))?;

        let mut parts = vec![
            ("config", Some(&config_bytes[..])),
            ("tokenizer", Some(&tokenizer_bytes[..])),
            ("pooling", pooling_bytes.as_deref()),
            ("modules", modules_bytes.as_deref()),
        ];
        // f32 ids stay what they were before int8 existed. The int8 part
        // names the coding (`qgemm`: seven-bit weights, asymmetric
        // activations); vectors of the earlier symmetric 8-bit coding had
        // `int8` and are never mixed with these.
        if precision == Precision::Int8 {
            parts.push(("precision", Some(&b"int8-w7-asym"[..])));
        }
        let model_id = model_id_for(dir, &parts, weights_len, max_tokens);
        Ok(Embedder {
            model,
            tokenizer,
            counter,
            pool,
            query_lane,
            batches_in_flight: AtomicUsize::new(0),
            model_id,
            dim: config.hidden_size,
            max_tokens,
            precision,
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
        self.dim
    }

    /// The truncation length in tokens, special tokens included.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// How the linear layers multiply.
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// The number of threads of the compute pool.
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// L2-normalised mean-pooled embeddings, one per text, in order. Texts run
    /// in consecutive batches of up to 32 in the order given (sorting by
    /// length keeps a batch's attention work even across its texts). Texts longer
    /// than `max_tokens` are truncated. An empty slice gives an empty result.
    /// A single text while another call's batch is in flight runs on the
    /// one-thread query lane, so a query never waits for a batch.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ModelError> {
        if let [text] = texts {
            let ids = [self.try_token_ids(text)?];
            let lane = if self.batches_in_flight.load(Ordering::Acquire) > 0 {
                &self.query_lane
            } else {
                &self.pool
            };
            return lane
                .install(|| self.forward(&ids))
                .map_err(|e| ModelError::Embed(e.to_string()));
        }
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(MAX_BATCH) {
            let ids = batch
                .iter()
                .map(|text| self.try_token_ids(text))
                .collect::<Result<Vec<_>, _>>()?;
            let _in_flight = InFlight::enter(&self.batches_in_flight);
            let pooled = self
                .pool
                .install(|| self.forward(&ids))
                .map_err(|e| ModelError::Embed(e.to_string()))?;
            vectors.extend(pooled);
        }
        Ok(vectors)
    }

    /// The tokenizer without truncation or padding (the static tier reads
    /// whole texts and the vocabulary through it).
    pub fn plain_tokenizer(&self) -> &Tokenizer {
        &self.counter
    }

    /// Mean-pooled, L2-normalised vectors of token id sequences given as
    /// they are (special tokens included by the caller), on the compute
    /// pool: for distilling the static tier.
    pub(crate) fn embed_ids(&self, ids: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, ModelError> {
        let _in_flight = InFlight::enter(&self.batches_in_flight);
        self.pool
            .install(|| self.forward(ids))
            .map_err(|e| ModelError::Embed(e.to_string()))
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

    /// One forward pass over a batch of token id sequences, then mean pooling
    /// and L2 normalisation; an empty sequence gives a zero vector. Runs on
    /// the calling thread's rayon pool.
    fn forward(&self, ids: &[Vec<u32>]) -> candle_core::Result<Vec<Vec<f32>>> {
        let texts: Vec<Vec<u32>> = ids.iter().filter(|seq| !seq.is_empty()).cloned().collect();
        let mut pooled = match texts.is_empty() {
            true => Vec::new().into_iter(),
            false => self.model.mean_pooled(&texts)?.into_iter(),
        };
        let mut vectors = Vec::with_capacity(ids.len());
        for seq in ids {
            let vector = if seq.is_empty() { None } else { pooled.next() };
            vectors.push(vector.map_or_else(|| vec![0.0; self.dim], normalize));
        }
        Ok(vectors)
    }
}

/// Counts a batch in flight for as long as it lives (also on error or
/// unwinding).
struct InFlight<'a>(&'a AtomicUsize);

impl<'a> InFlight<'a> {
    fn enter(counter: &'a AtomicUsize) -> InFlight<'a> {
        counter.fetch_add(1, Ordering::AcqRel);
        InFlight(counter)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
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
