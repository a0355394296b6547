//! The dense branch: the query's nearest neighbours in the HNSW graph of
//! the snapshot's vectors, scored exactly over the chunks a selective
//! filter leaves when the graph search comes back short. A long query (an
//! issue text) is embedded without its code blocks, REPL sessions and
//! traceback lines ([`embedding_text`]).
//!
//! Never: returns a chunk the filter refuses; an unusable model or vector
//! index is a reason (the caller goes on lexical-only), never a panic.

use super::ChunkFilter;
use crate::dense::vectors::VectorIndex;
use crate::dense::DenseEngine;
use crate::index::Snapshot;
use std::borrow::Cow;
use std::sync::Arc;

/// With a filter that leaves at most this many chunks, the dense branch
/// scores them all exactly when the graph search comes back short.
const EXACT_DENSE_MAX: usize = 20_000;

/// What of a query the encoder sees: the whole query, or for a long one
/// ([`is_long_query`](crate::lexical::query::is_long_query): an issue
/// text) its prose, without fenced code blocks, REPL lines
/// (`>>>`, `...`, `In [1]:`, `Out[1]:`) and traceback lines (`Traceback`,
/// `File "..."`). The encoder reads the first 128 tokens, and in an issue
/// those are often the pasted reproduction, not what the issue is about;
/// the code stays in the lexical branch, and traceback frames reach the
/// code they name through `rank::frames`. A query that is all code is
/// embedded whole.
fn embedding_text(query: &str) -> Cow<'_, str> {
    if !crate::lexical::query::is_long_query(query) {
        return Cow::Borrowed(query);
    }
    let mut prose = String::with_capacity(query.len());
    let mut fenced = false;
    for line in query.lines() {
        let text = line.trim_start();
        if text.starts_with("```") || text.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        let session = text.starts_with(">>>")
            || text == "..."
            || text.starts_with("... ")
            || text.starts_with("In [")
            || text.starts_with("Out[")
            || text.starts_with("Traceback (")
            || text.starts_with("File \"");
        if fenced || session {
            continue;
        }
        prose.push_str(line);
        prose.push('\n');
    }
    if prose.split_whitespace().count() < 3 {
        return Cow::Borrowed(query);
    }
    Cow::Owned(prose)
}

pub(super) fn dense_branch(
    snapshot: &Snapshot,
    query_text: &str,
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
    let query_vector = engine.embed_query(&embedding_text(query_text))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_query_is_embedded_without_its_code() {
        let issue = "Exponent doesn't fully simplify\n\
                     Say I have code like this:\n\
                     ```\n\
                     expr1 = S(1)/2*x**2.5\n\
                     res = simplify(res.evalf(5))\n\
                     ```\n\
                     >>> print(res)\n\
                     ... more\n\
                     Traceback (most recent call last):\n  \
                       File \"sympy/core/expr.py\", line 12, in evalf\n\
                     The output is -0.5*x**2.5 + 0.5*x**2.5, how do I simplify it to 0?\n";
        let text = embedding_text(issue);
        assert_eq!(
            text,
            "Exponent doesn't fully simplify\nSay I have code like this:\n\
             The output is -0.5*x**2.5 + 0.5*x**2.5, how do I simplify it to 0?\n"
        );
        // Short queries, and a long one that is all code, stay whole.
        assert_eq!(
            embedding_text("retry a failed request"),
            "retry a failed request"
        );
        let code = "```\nlet a = b + c + d + e + f + g + h + i + j + k + l + m;\n```";
        assert_eq!(embedding_text(code), code);
    }
}
