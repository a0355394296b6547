//! Dense stage: embeddings computed in-process (the `quarry-encoder`
//! crate), cached per machine, searched with usearch.
//!
//! Owns: which model answers (`DenseTier`), the static tier's file
//! (`static_file`), the shared vector cache (`cache`), the workspace vector
//! index (`vectors`), and the `DenseEngine` that ties them together with a
//! small cache of recent query vectors.
//! Invariants: the engine never fails to construct: without a usable model
//! it reports why, and callers fall back to lexical search. An embedding
//! error at run time is returned, never panicked, and the next call tries
//! the model again, so search returns to hybrid when the model recovers.
//! Never: network access (models come from a local directory), decide
//! ranking, touch the segment store.

pub mod cache;
mod static_file;
pub mod vectors;

use crate::lexical::tokenize::spell_out;
use cache::{cache_key, VectorCache};
use quarry_encoder::{embed, Embedder, EmbedderOptions, StaticModel};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Query vectors kept for repeated queries (editors re-query per keystroke).
const QUERY_CACHE_SIZE: usize = 256;

#[derive(Clone, Debug)]
pub struct DenseConfig {
    /// `--model DIR`; otherwise `QUARRY_MODEL` and the default locations.
    pub model_dir: Option<PathBuf>,
    /// Tokens of chunk text embedded (the model truncates beyond this).
    pub token_budget: usize,
    /// Texts per forward pass.
    pub batch_size: usize,
    /// Threads for inference; `None` leaves one core free (the CLI's
    /// interactive commands; the language server passes every core, its
    /// compute threads being niced).
    pub threads: Option<usize>,
    /// The machine-wide vector cache; `None` is the default location.
    pub cache_dir: Option<PathBuf>,
    /// Which vectors: the transformer's, or the static tier distilled from
    /// it (see `static_tier`).
    pub tier: DenseTier,
    /// How the transformer's linear layers multiply; `None` is
    /// `EmbedderOptions`' default (int8 where the CPU has AVX-512 VNNI or AVX2).
    pub precision: Option<embed::Precision>,
}

/// The kind of vectors a `DenseEngine` makes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DenseTier {
    /// The transformer itself: best vectors, tens of chunks per second.
    #[default]
    Transformer,
    /// Token vectors distilled from the transformer: thousands of chunks
    /// per second.
    Static,
}

impl DenseTier {
    pub fn parse(name: &str) -> Option<DenseTier> {
        match name {
            "transformer" => Some(DenseTier::Transformer),
            "static" => Some(DenseTier::Static),
            _ => None,
        }
    }
}

/// What turns texts into vectors.
enum Model {
    Transformer(Box<Embedder>),
    Static(Box<StaticModel>),
}

impl Model {
    fn model_id(&self) -> &str {
        match self {
            Model::Transformer(e) => e.model_id(),
            Model::Static(s) => s.model_id(),
        }
    }

    fn dim(&self) -> usize {
        match self {
            Model::Transformer(e) => e.dim(),
            Model::Static(s) => s.dim(),
        }
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, embed::ModelError> {
        match self {
            Model::Transformer(e) => e.embed(texts),
            Model::Static(s) => {
                use rayon::prelude::*;
                texts.par_iter().map(|t| s.embed(&spell_out(t))).collect()
            }
        }
    }
}

impl DenseConfig {
    /// The machine-wide vector cache's folder (also the static tier's
    /// fallback place).
    fn vector_cache_dir(&self) -> PathBuf {
        self.cache_dir.clone().unwrap_or_else(cache::default_dir)
    }
}

impl Default for DenseConfig {
    fn default() -> Self {
        DenseConfig {
            model_dir: None,
            token_budget: 128,
            batch_size: 32,
            threads: None,
            cache_dir: None,
            tier: DenseTier::Transformer,
            precision: None,
        }
    }
}

/// What `embed_texts` did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EmbedCounts {
    pub from_cache: usize,
    pub computed: usize,
}

/// Why an engine has no model to embed with.
#[derive(Debug, thiserror::Error)]
pub enum Unavailable {
    /// No model was found, or it (or the static tier distilled from it)
    /// would not load.
    #[error("{0}")]
    Model(#[from] embed::ModelError),
    /// Turned off by the caller (`--lexical`, no `--model`), in its words.
    #[error("{0}")]
    Disabled(&'static str),
}

/// Why an embedding call gave no vectors.
#[derive(Debug, thiserror::Error)]
pub enum DenseError {
    /// The engine has no usable model (see [`Unavailable`]).
    #[error("{0}")]
    Unavailable(Arc<Unavailable>),
    /// The model ran and failed (tokenizer or forward pass).
    #[error("embedding failed: {0}")]
    Embed(#[from] embed::ModelError),
    /// The model returned no vector for a text.
    #[error("embedding failed: no vector")]
    NoVector,
    /// `inject_failure` is on (tests of the lexical fallback).
    #[error("embedding failed: injected failure")]
    Injected,
}

pub struct DenseEngine {
    config: DenseConfig,
    embedder: Result<Model, Arc<Unavailable>>,
    /// Where the model was found.
    model_dir: Option<PathBuf>,
    cache: Mutex<Option<VectorCache>>,
    recent_queries: Mutex<VecDeque<(String, Arc<Vec<f32>>)>>,
    /// Fault injection for tests (`inject_failure`): makes every embedding
    /// fail. Always false in the product.
    fail: AtomicBool,
}

impl DenseEngine {
    /// Finds and loads the model. Never fails: an unusable model is
    /// recorded and reported by `unavailable_reason`.
    pub fn load(config: DenseConfig) -> DenseEngine {
        let env_dir = std::env::var_os("QUARRY_MODEL").map(PathBuf::from);
        let explicit = config.model_dir.clone().or(env_dir);
        let mut options = EmbedderOptions {
            max_tokens: config.token_budget,
            on_pool_thread: crate::priority::lower_this_thread,
            ..EmbedderOptions::default()
        };
        if let Some(threads) = config.threads {
            options.threads = threads.max(1);
        }
        if let Some(precision) = config.precision {
            options.precision = precision;
        }
        let tier = config.tier;
        let cache_root = config.vector_cache_dir();
        let mut model_dir = None;
        let embedder = embed::locate_model(explicit.as_deref())
            .and_then(|dir| {
                let transformer = Embedder::load(&dir, options)?;
                model_dir = Some(dir.clone());
                match tier {
                    DenseTier::Transformer => Ok(Model::Transformer(Box::new(transformer))),
                    DenseTier::Static => load_static(&cache_root, &dir, &transformer)
                        .map(|s| Model::Static(Box::new(s))),
                }
            })
            .map_err(|e| Arc::new(Unavailable::Model(e)));
        DenseEngine::new(config, embedder, model_dir)
    }

    fn new(
        config: DenseConfig,
        embedder: Result<Model, Arc<Unavailable>>,
        model_dir: Option<PathBuf>,
    ) -> DenseEngine {
        DenseEngine {
            config,
            embedder,
            model_dir,
            cache: Mutex::new(None),
            recent_queries: Mutex::new(VecDeque::new()),
            fail: AtomicBool::new(false),
        }
    }

    /// The static tier of this transformer engine's model (distilled on
    /// first use, about half a minute on two cores, then read from its
    /// file), sharing its vector cache. `None` for an engine without a
    /// working transformer.
    pub fn static_from(&self) -> Option<DenseEngine> {
        let Ok(Model::Transformer(transformer)) = &self.embedder else {
            return None;
        };
        let dir = self.model_dir.as_ref()?;
        let embedder = load_static(&self.config.vector_cache_dir(), dir, transformer)
            .map(|s| Model::Static(Box::new(s)))
            .map_err(|e| Arc::new(Unavailable::Model(e)));
        let config = DenseConfig {
            tier: DenseTier::Static,
            ..self.config.clone()
        };
        Some(DenseEngine::new(config, embedder, self.model_dir.clone()))
    }

    /// A disabled engine (`--no-dense`).
    pub fn disabled(reason: &'static str) -> DenseEngine {
        let why = Arc::new(Unavailable::Disabled(reason));
        DenseEngine::new(DenseConfig::default(), Err(why), None)
    }

    /// Why dense search cannot run at all, if it cannot.
    pub fn unavailable(&self) -> Option<&Unavailable> {
        self.embedder.as_ref().err().map(|why| &**why)
    }

    /// [`DenseEngine::unavailable`] in words, for a surface to show.
    pub fn unavailable_reason(&self) -> Option<String> {
        self.unavailable().map(Unavailable::to_string)
    }

    /// The transformer, when this engine runs one.
    pub fn embedder(&self) -> Option<&Embedder> {
        match self.embedder.as_ref().ok()? {
            Model::Transformer(e) => Some(e),
            Model::Static(_) => None,
        }
    }

    pub fn tier(&self) -> DenseTier {
        self.config.tier
    }

    pub fn model_id(&self) -> Option<&str> {
        self.embedder.as_ref().ok().map(Model::model_id)
    }

    pub fn dim(&self) -> usize {
        self.embedder.as_ref().map_or(0, Model::dim)
    }

    pub fn config(&self) -> &DenseConfig {
        &self.config
    }

    /// Makes every later embedding fail (`true`) or work again (`false`).
    /// For tests of the lexical fallback (the `test-hooks` feature).
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn inject_failure(&self, fail: bool) {
        self.fail.store(fail, Ordering::SeqCst);
    }

    fn working_embedder(&self) -> Result<&Model, DenseError> {
        let embedder = self
            .embedder
            .as_ref()
            .map_err(|why| DenseError::Unavailable(why.clone()))?;
        if self.fail.load(Ordering::SeqCst) {
            return Err(DenseError::Injected);
        }
        Ok(embedder)
    }

    /// The vector of a query, from the recent-query cache when possible.
    pub fn embed_query(&self, query: &str) -> Result<Arc<Vec<f32>>, DenseError> {
        let embedder = self.working_embedder()?;
        let mut recent = self
            .recent_queries
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(pos) = recent.iter().position(|(q, _)| q == query) {
            if let Some(entry) = recent.remove(pos) {
                let vector = entry.1.clone();
                recent.push_front(entry);
                return Ok(vector);
            }
        }
        drop(recent);
        let vector = embedder
            .embed(&[query])?
            .pop()
            .ok_or(DenseError::NoVector)?;
        let vector = Arc::new(vector);
        let mut recent = self
            .recent_queries
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        recent.push_front((query.to_string(), vector.clone()));
        recent.truncate(QUERY_CACHE_SIZE);
        Ok(vector)
    }

    /// The vectors the machine-wide cache has for these chunk texts (no
    /// model run): `None` for the texts it lacks.
    pub fn cached_vectors(
        &self,
        inputs: &[ChunkText],
    ) -> Result<Vec<Option<Vec<f32>>>, DenseError> {
        let embedder = self.working_embedder()?;
        let model_id = embedder.model_id();
        let mut guard = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        self.open_cache(&mut guard, embedder);
        Ok(inputs
            .iter()
            .map(|t| {
                let key = cache_key(model_id, &t.cache_text);
                guard.as_ref().and_then(|c| c.get(&key))
            })
            .collect())
    }

    /// Opens the vector cache on first use. An unusable cache only costs
    /// speed.
    fn open_cache(&self, guard: &mut Option<VectorCache>, embedder: &Model) {
        if guard.is_none() {
            let dir = self.config.vector_cache_dir();
            *guard = VectorCache::open(&dir, embedder.model_id(), embedder.dim()).ok();
        }
    }

    /// Vectors for chunk texts: cached ones from the machine-wide cache,
    /// the rest computed in batches sorted by length and added to it.
    pub fn embed_texts(
        &self,
        inputs: &[ChunkText],
    ) -> Result<(Vec<Vec<f32>>, EmbedCounts), DenseError> {
        let embedder = self.working_embedder()?;
        let model_id = embedder.model_id();
        let keys: Vec<cache::CacheKey> = inputs
            .iter()
            .map(|t| cache_key(model_id, &t.cache_text))
            .collect();
        let texts: Vec<&str> = inputs.iter().map(|t| t.text.as_str()).collect();
        let mut guard = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        self.open_cache(&mut guard, embedder);
        let mut out: Vec<Option<Vec<f32>>> = keys
            .iter()
            .map(|k| guard.as_ref().and_then(|c| c.get(k)))
            .collect();
        drop(guard);
        let mut counts = EmbedCounts {
            from_cache: out.iter().filter(|v| v.is_some()).count(),
            computed: 0,
        };
        let mut missing: Vec<usize> = (0..texts.len()).filter(|i| out[*i].is_none()).collect();
        missing.sort_by_key(|i| texts[*i].len());
        let mut fresh: Vec<(cache::CacheKey, Vec<f32>)> = Vec::with_capacity(missing.len());
        for batch in missing.chunks(self.config.batch_size.max(1)) {
            let batch_texts: Vec<&str> = batch.iter().map(|i| texts[*i]).collect();
            let vectors = embedder.embed(&batch_texts)?;
            for (i, vector) in batch.iter().zip(vectors) {
                fresh.push((keys[*i], vector.clone()));
                out[*i] = Some(vector);
            }
            counts.computed += batch.len();
        }
        if !fresh.is_empty() {
            let mut guard = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(cache) = guard.as_mut() {
                let entries: Vec<(cache::CacheKey, &[f32])> =
                    fresh.iter().map(|(k, v)| (*k, v.as_slice())).collect();
                let _ = cache.append(&entries);
            }
        }
        Ok((
            out.into_iter().map(Option::unwrap_or_default).collect(),
            counts,
        ))
    }
}

/// Serialises distillation in this process: concurrent engines wait for
/// the first one's file instead of distilling again.
static DISTILLING: Mutex<()> = Mutex::new(());

/// The static tier distilled from `transformer`: from its file beside the
/// model (`<model dir>/static/`), else under `cache_root`, else
/// distilled now (once per model; progress on stderr) and saved beside the
/// model, or under `cache_root` when the model's folder is read-only. A
/// tier that cannot be saved still serves this process.
fn load_static(
    cache_root: &std::path::Path,
    model_dir: &std::path::Path,
    transformer: &Embedder,
) -> Result<StaticModel, embed::ModelError> {
    let id = transformer.model_id();
    let places = [
        static_file::file_for(model_dir, id),
        static_file::file_for(cache_root, id),
    ];
    let tokenizer = || transformer.plain_tokenizer().clone();
    let _one = DISTILLING.lock().unwrap_or_else(|e| e.into_inner());
    for (i, path) in places.iter().enumerate() {
        if let Some(model) = static_file::load(path, id, tokenizer()) {
            if i > 0 {
                // Beside the model, every process finds it (whatever its
                // cache directory); a read-only model folder keeps it here.
                let _ = static_file::save(&model, &places[0]);
            }
            return Ok(model);
        }
    }
    let started = std::time::Instant::now();
    eprintln!("quarry: distilling the static embedding tier from {id} (once per model)");
    let model = StaticModel::distill(transformer)?;
    let saved = places
        .iter()
        .find_map(|path| match static_file::save(&model, path) {
            Ok(()) => Some(path.display().to_string()),
            Err(e) => {
                eprintln!(
                    "quarry: cannot save the static tier to {}: {e}",
                    path.display()
                );
                None
            }
        });
    eprintln!(
        "quarry: static tier ready in {:.1} s ({})",
        started.elapsed().as_secs_f64(),
        saved.as_deref().unwrap_or("not saved")
    );
    Ok(model)
}

/// The text a chunk is embedded as, and the text its cache key is computed
/// from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkText {
    /// Qualified name, kind and path, then the chunk's source (signature,
    /// doc and body), cut to roughly the token budget (the tokenizer
    /// truncates exactly; this bounds the work).
    pub text: String,
    /// The same without the path: the vector cache is keyed on this, so a
    /// function that moves to another file or worktree keeps its vector.
    pub cache_text: String,
}
