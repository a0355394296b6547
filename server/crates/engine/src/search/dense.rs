//! The dense branch: the query's nearest neighbours in the HNSW graph of
//! the snapshot's vectors, scored exactly over the chunks a selective
//! filter leaves when the graph search comes back short. A long query (an
//! issue text) is embedded without its code blocks, REPL sessions and
//! traceback lines (`SearchQuery::embedding`).
//!
//! Never: returns a chunk the filter refuses; an unusable model or vector
//! index is a reason (the caller goes on lexical-only), never a panic.

use super::chunk_filter::ChunkFilter;
use super::query::SearchQuery;
use crate::dense::vectors::VectorIndex;
use crate::dense::DenseEngine;
use crate::index::Snapshot;
use std::sync::Arc;

/// With a filter that leaves at most this many chunks, the dense branch
/// scores them all exactly when the graph search comes back short.
const EXACT_DENSE_MAX: usize = 20_000;

pub(super) fn dense_branch(
    snapshot: &Snapshot,
    query: &SearchQuery<'_>,
    depth: usize,
    dense: Option<&DenseEngine>,
    filter: &ChunkFilter<'_>,
    exclude: Option<&Arc<VectorIndex>>,
) -> Result<Vec<u32>, String> {
    let engine = dense.ok_or_else(|| "dense search is disabled".to_string())?;
    if let Some(reason) = engine.unavailable_reason() {
        return Err(format!("no embedding model: {reason}"));
    }
    let vectors = snapshot
        .vectors_of(engine.tier())
        .filter(|v| Some(v.model_id()) == engine.model_id())
        .ok_or_else(|| "no vectors for this model yet: run `quarry index`".to_string())?;
    if vectors.is_empty() {
        return Err("no chunk is embedded yet: run `quarry index`".into());
    }
    let query_vector = engine
        .embed_query(&query.embedding)
        .map_err(|e| e.to_string())?;
    let excluded = |id: u32| exclude.is_some_and(|v| v.contains(id));
    let keep = |id: u32| filter.accepts(id) && !excluded(id);
    let mut found = vectors
        .search(&query_vector, depth, &keep)
        .map_err(|e| format!("dense search failed: {e}"))?;
    if found.len() < depth && (!filter.is_empty() || exclude.is_some()) {
        // The graph search can stop short under a selective filter: score
        // the chunks the filter leaves, if there are not too many.
        let mut allowed = Vec::new();
        'segments: for segment in &snapshot.segments {
            for chunk in &segment.chunks {
                if snapshot.is_live(chunk.chunk_id)
                    && filter.accepts_in(segment, chunk)
                    && !excluded(chunk.chunk_id)
                {
                    allowed.push(chunk.chunk_id);
                    if allowed.len() > EXACT_DENSE_MAX {
                        break 'segments;
                    }
                }
            }
        }
        if allowed.len() <= EXACT_DENSE_MAX {
            found = vectors.exact_search(&query_vector, depth, allowed.into_iter());
        }
    }
    Ok(found.into_iter().map(|(id, _)| id).collect())
}
