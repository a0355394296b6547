//! The engine: what every surface (the CLI, the language server, the MCP
//! server) asks of a workspace, written once so the three answer alike.
//!
//! Owns: [`Tiers`], the dense tiers a process has loaded and the one policy
//! of which of them answers a snapshot, and [`Engine`], one workspace's
//! index with its tiers (open, catch up on edits, search).
//! Invariant: a search goes through [`Tiers::search`], so the same snapshot
//! and options give the same hits, mode and reason on every surface.
//! Never: serialise, print or speak a protocol (the surfaces do), or embed
//! more than [`CATCH_UP_LIMIT`] chunks on a query's path.

use std::sync::Arc;

use crate::dense::{DenseEngine, DenseTier};
use crate::index::{Index, IndexError, Snapshot};
use crate::search::{search_blended, DiskText, SearchOptions, SearchResults, TextSource};

/// Chunks a surface embeds on a query's path before it answers (an edit's
/// few fresh chunks); a cold workspace is embedded by `quarry index` or the
/// language server's embedding lane instead.
pub const CATCH_UP_LIMIT: u64 = 64;

/// Chunks per background embedding round (the language server's embedding
/// lane, the benchmark): small, so that priority paths, shutdown and the
/// CPU for updates and queries never wait long.
pub const EMBED_ROUND: usize = 64;

/// The dense tiers loaded in a process, and which answer a snapshot.
#[derive(Clone, Default)]
pub struct Tiers {
    transformer: Option<Arc<DenseEngine>>,
    static_tier: Option<Arc<DenseEngine>>,
}

/// The engines one search uses: `dense` ranks the dense branch, `fill`
/// stands in for the chunks it has not embedded (used only when the
/// options give the stand-in a finite discount, `fuse.fill`).
#[derive(Clone, Copy, Default)]
pub struct Chosen<'a> {
    pub dense: Option<&'a DenseEngine>,
    pub fill: Option<&'a DenseEngine>,
}

impl Tiers {
    /// Tiers that are unusable (a model that failed to load) are kept: the
    /// search then says why it is lexical-only.
    pub fn new(
        transformer: Option<Arc<DenseEngine>>,
        static_tier: Option<Arc<DenseEngine>>,
    ) -> Tiers {
        let static_tier = static_tier.filter(|e| e.unavailable().is_none());
        Tiers {
            transformer,
            static_tier,
        }
    }

    pub fn transformer(&self) -> Option<&Arc<DenseEngine>> {
        self.transformer.as_ref()
    }

    /// The one policy: the transformer alone once it covers as many chunks
    /// as the static tier; the static tier alone while the transformer has
    /// no vectors; otherwise the transformer, the static tier standing in
    /// for the rest.
    pub fn choose(&self, snapshot: &Snapshot) -> Chosen<'_> {
        let transformer = self.transformer.as_deref();
        let Some(fast) = self.static_tier.as_deref() else {
            return Chosen {
                dense: transformer,
                fill: None,
            };
        };
        let usable = transformer.is_some_and(|e| e.unavailable().is_none());
        let (embedded, total) = snapshot.coverage_of(DenseTier::Transformer);
        let (fast_embedded, _) = snapshot.coverage_of(DenseTier::Static);
        if usable && (embedded >= total || fast_embedded <= embedded) {
            Chosen {
                dense: transformer,
                fill: None,
            }
        } else if !usable || embedded == 0 {
            Chosen {
                dense: Some(fast),
                fill: None,
            }
        } else {
            Chosen {
                dense: transformer,
                fill: Some(fast),
            }
        }
    }

    /// Hybrid search of `snapshot` with the tiers [`choose`](Self::choose)
    /// picks; hits are resolved against `text`.
    pub fn search(
        &self,
        snapshot: &Snapshot,
        query: &str,
        options: &SearchOptions,
        text: &mut dyn TextSource,
    ) -> SearchResults {
        let chosen = self.choose(snapshot);
        search_blended(snapshot, query, options, text, chosen.dense, chosen.fill)
    }
}

/// One workspace's index and the tiers that search it (the CLI's and the
/// MCP server's; the language server keeps an index per folder and shares
/// one [`Tiers`] among them).
pub struct Engine {
    index: Arc<Index>,
    /// The tier the process embeds with (the transformer, or the static
    /// tier under `--dense static`).
    dense: Arc<DenseEngine>,
    tiers: Tiers,
}

impl Engine {
    /// Attaches `transformer`'s vectors to `index` and, where the static
    /// tier has saved vectors (`quarry index --dense static`, or a language
    /// server with `staticTier`) that reach chunks the transformer has not,
    /// the static tier's too.
    pub fn new(index: Arc<Index>, transformer: Arc<DenseEngine>) -> Result<Engine, IndexError> {
        index.attach_dense(&transformer)?;
        let mut static_tier = None;
        if transformer.tier() == DenseTier::Transformer
            && transformer.unavailable().is_none()
            && index.has_saved_vectors(DenseTier::Static)
        {
            let (embedded, total) = index.snapshot().coverage_of(DenseTier::Transformer);
            if embedded < total {
                if let Some(fast) = transformer.static_from() {
                    if fast.unavailable().is_none() {
                        index.attach_dense(&fast)?;
                        static_tier = Some(Arc::new(fast));
                    }
                }
            }
        }
        Ok(Engine {
            index,
            tiers: Tiers::new(Some(transformer.clone()), static_tier),
            dense: transformer,
        })
    }

    pub fn index(&self) -> &Arc<Index> {
        &self.index
    }

    pub fn tiers(&self) -> &Tiers {
        &self.tiers
    }

    /// The engine this process embeds with (its model, or why none).
    pub fn dense(&self) -> &Arc<DenseEngine> {
        &self.dense
    }

    /// Embeds the chunks without vectors when there are at most
    /// [`CATCH_UP_LIMIT`] of them (an edit), so a query sees its own
    /// change by meaning too. Returns why it could not, if it tried.
    pub fn catch_up(&self) -> Result<(), IndexError> {
        let engine = &self.dense;
        if engine.unavailable().is_some() {
            return Ok(());
        }
        let (embedded, total) = self.index.snapshot().coverage_of(engine.tier());
        if embedded < total && total - embedded <= CATCH_UP_LIMIT {
            self.index
                .embed_pending(engine, &[], Some(CATCH_UP_LIMIT as usize), &|_| {})?;
            // (What it embedded is in the snapshot; the count is not needed.)
        }
        Ok(())
    }

    /// Searches the index as it is now, hits resolved against the files on
    /// disk.
    pub fn search(&self, query: &str, options: &SearchOptions) -> SearchResults {
        let snapshot = self.index.snapshot();
        let mut text = DiskText::of(&self.index);
        self.tiers.search(&snapshot, query, options, &mut text)
    }
}
