//! The published, immutable [`Snapshot`] searches run on: segments, liveness, corpus statistics and vectors.

use super::report::Summary;
use super::segment::{ChunkRecord, Segment};
use crate::dense::vectors::VectorIndex;
use crate::dense::DenseTier;
use crate::layout::Layout;
use crate::lexical::{Bm25Config, CorpusStats};
use rustc_hash::FxHashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// An immutable view of the index. Cheap to clone (an `Arc`).
pub struct Snapshot {
    pub root: PathBuf,
    pub segments: Vec<Arc<Segment>>,
    pub(super) dead: Arc<Vec<u64>>,
    pub stats: CorpusStats,
    pub summary: Summary,
    pub bm25: Bm25Config,
    /// The workspace's transformer vectors, shared by every snapshot: adds
    /// and removes land in place, so results are filtered by this
    /// snapshot's liveness.
    pub vectors: Option<Arc<VectorIndex>>,
    /// The static tier's vectors (see `quarry_encoder::static_tier`), the same way.
    pub static_vectors: Option<Arc<VectorIndex>>,
    /// Folder-layout facts of the indexed files (superseded copies).
    pub layout: Arc<Layout>,
    /// Document frequencies counted over a larger corpus than `segments`
    /// (a hub's candidate snapshot holds a few files of a repository whose
    /// statistics are the whole repository's); `None`: count the segments.
    pub term_df: Option<Arc<FxHashMap<String, u64>>>,
}

impl Snapshot {
    /// A snapshot of segments built apart from any workspace index (a hub
    /// query's candidate files), with the corpus statistics and document
    /// frequencies of the corpus they were drawn from. Chunk ids must not
    /// overlap between segments.
    pub fn assemble(
        root: PathBuf,
        segments: Vec<Arc<Segment>>,
        stats: CorpusStats,
        term_df: FxHashMap<String, u64>,
        vectors: Option<Arc<VectorIndex>>,
        layout: Arc<Layout>,
    ) -> Snapshot {
        let mut summary = Summary {
            segments: segments.len() as u64,
            ..Summary::default()
        };
        for segment in &segments {
            summary.chunks += segment.chunks.len() as u64;
            summary.files_indexed += segment.paths.len() as u64;
        }
        Snapshot {
            root,
            segments,
            dead: Arc::new(Vec::new()),
            stats,
            summary,
            bm25: Bm25Config::default(),
            vectors,
            static_vectors: None,
            layout,
            term_df: Some(Arc::new(term_df)),
        }
    }

    /// Documents holding `term`: from `term_df` when the snapshot carries
    /// its corpus's counts, else over every segment.
    pub fn df(&self, term: &str) -> u64 {
        if let Some(counts) = &self.term_df {
            return counts.get(term).copied().unwrap_or(0);
        }
        self.segments
            .iter()
            .filter_map(|s| {
                s.lexical
                    .term_ordinal(term)
                    .map(|ord| u64::from(s.lexical.df(ord)))
            })
            .sum()
    }

    /// Embedded chunks and live chunks. The first can lag or lead by a few
    /// while an update races the embedder.
    pub fn coverage(&self) -> (u64, u64) {
        self.coverage_of(DenseTier::Transformer)
    }

    /// `coverage` for one tier's vectors.
    pub fn coverage_of(&self, tier: DenseTier) -> (u64, u64) {
        let total = self.summary.chunks;
        let embedded = self.vectors_of(tier).map_or(0, |v| v.len() as u64);
        (embedded.min(total), total)
    }

    /// One tier's vectors.
    pub fn vectors_of(&self, tier: DenseTier) -> Option<&Arc<VectorIndex>> {
        match tier {
            DenseTier::Transformer => self.vectors.as_ref(),
            DenseTier::Static => self.static_vectors.as_ref(),
        }
    }

    pub fn is_live(&self, chunk_id: u32) -> bool {
        !bit(&self.dead, chunk_id)
    }

    /// The segment and record of a chunk id.
    pub fn chunk(&self, chunk_id: u32) -> Option<(&Segment, &ChunkRecord)> {
        // Few segments (the merge policy keeps them under ten): scan ranges.
        self.segments.iter().find_map(|segment| {
            let (first, last) = (segment.first_chunk_id()?, segment.last_chunk_id()?);
            if chunk_id < first || chunk_id > last {
                return None;
            }
            let pos = segment.position(chunk_id)?;
            Some((&**segment, &segment.chunks[pos]))
        })
    }

    /// Every live chunk, segment by segment.
    pub fn live_chunks(&self) -> impl Iterator<Item = (&Segment, &ChunkRecord)> {
        self.segments.iter().flat_map(move |segment| {
            segment
                .chunks
                .iter()
                .filter(move |c| self.is_live(c.chunk_id))
                .map(move |c| (&**segment, c))
        })
    }
}

pub(super) fn bit(bits: &[u64], id: u32) -> bool {
    bits.get(id as usize / 64)
        .is_some_and(|word| word & (1 << (id % 64)) != 0)
}

pub(super) fn set_bit(bits: &mut Vec<u64>, id: u32) {
    let word = id as usize / 64;
    if bits.len() <= word {
        bits.resize(word + 1, 0);
    }
    bits[word] |= 1 << (id % 64);
}
