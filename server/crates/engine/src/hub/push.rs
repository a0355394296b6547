//! Writing a repository at a commit into the hub.
//!
//! Owns: the difference between the local index of a checkout and the
//! hub's rows for the repository (by content hash per file), and the one
//! transaction that applies it: old rows of changed and deleted files
//! out, new files, chunks, term weights and vectors in, document
//! frequencies and corpus statistics updated, the commit moved.
//! Never: leave a half-pushed repository visible (a failure or a killed
//! push rolls the whole transaction back), or embed a chunk whose vector
//! the hub already holds (vectors are keyed by what was embedded).

use super::conn::Hub;
use super::error::{sql, HubError};
use super::schema::DIM;
use crate::chunk::Language;
use crate::dense::ChunkText;
use crate::dense::DenseEngine;
use crate::index::chunk_text;
use crate::index::segment::{child_ranges, FileState, ParsedFile, Segment, SegmentBuilder};
use crate::index::{safe_chunk, Index, Snapshot};
use crate::lexical::{Bm25Config, CorpusStats, N_FIELDS};
use bytes::Bytes;
use futures_util::SinkExt;
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;
use tokio_postgres::Transaction;

/// What one push did. Tests use the counters to prove incrementality.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct PushStats {
    pub repo: String,
    pub commit: String,
    pub files: u64,
    pub files_unchanged: u64,
    pub files_added: u64,
    pub files_changed: u64,
    pub files_removed: u64,
    pub chunks_written: u64,
    pub chunks_removed: u64,
    pub terms_written: u64,
    /// Vectors copied from rows the hub already had (same embedded text).
    pub vectors_reused: u64,
    /// Vectors computed for this push (or taken from the machine's cache).
    pub vectors_computed: u64,
    pub elapsed_ms: f64,
}

/// The longest repository name or commit accepted.
const MAX_NAME: usize = 256;

/// A file of the checkout that the hub lacks or holds at another hash.
pub(super) struct NewFile {
    pub(super) path: String,
    pub(super) hash: [u8; 32],
    pub(super) language: Language,
    pub(super) text: String,
    /// The file's chunks, in the segment's (sorted) order.
    pub(super) chunks: Vec<crate::chunk::Chunk>,
    pub(super) segment: Segment,
}

/// Pushes `index`'s checkout (refreshed by the caller) as `repo` at
/// `commit`. `dense` embeds what the hub has no vector for; a disabled
/// engine pushes no vectors (the hub then answers lexically).
pub async fn push(
    hub: &mut Hub,
    repo: &str,
    commit: &str,
    index: &Index,
    dense: &DenseEngine,
) -> Result<PushStats, HubError> {
    let started = Instant::now();
    check_name("repository name", repo)?;
    check_name("commit", commit)?;
    let snapshot = index.snapshot();
    let local = live_files(&snapshot);
    let mut stats = PushStats {
        repo: repo.to_string(),
        commit: commit.to_string(),
        files: local.len() as u64,
        ..PushStats::default()
    };
    let tx = hub
        .client
        .transaction()
        .await
        .map_err(sql("starting the push"))?;
    tx.execute(
        "INSERT INTO quarry_repos (name) VALUES ($1) ON CONFLICT (name) DO NOTHING",
        &[&repo],
    )
    .await
    .map_err(sql("adding the repository"))?;
    // Pushes of one repository take turns; readers are never blocked.
    let repo_id: i32 = tx
        .query_one(
            "SELECT id FROM quarry_repos WHERE name = $1 FOR UPDATE",
            &[&repo],
        )
        .await
        .map_err(sql("locking the repository"))?
        .get(0);
    let held: FxHashMap<String, Vec<u8>> = tx
        .query(
            "SELECT path, hash FROM quarry_files WHERE repo_id = $1",
            &[&repo_id],
        )
        .await
        .map_err(sql("reading the repository's files"))?
        .into_iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let mut stale: Vec<String> = held
        .keys()
        .filter(|p| !local.contains_key(p.as_str()))
        .cloned()
        .collect();
    stats.files_removed = stale.len() as u64;
    let mut wanted = Vec::new();
    for (path, (language, hash)) in &local {
        match held.get(*path) {
            Some(h) if h.as_slice() == hash => stats.files_unchanged += 1,
            Some(_) => {
                stats.files_changed += 1;
                stale.push(path.to_string());
                wanted.push((*path, *language, *hash));
            }
            None => {
                stats.files_added += 1;
                wanted.push((*path, *language, *hash));
            }
        }
    }
    let new_files = wanted
        .into_iter()
        .map(|(path, language, hash)| {
            read_file(index.root(), index.max_file_size(), path, language, hash)
        })
        .collect::<Result<Vec<_>, _>>()?;

    // Vectors: the hub's own by key first (read before the stale rows go),
    // then the engine's.
    let budget = dense.config().token_budget;
    let model = dense.model_id().unwrap_or("").to_string();
    let texts: Vec<Vec<ChunkText>> = new_files
        .iter()
        .map(|f| {
            (0..f.segment.chunks.len())
                .map(|pos| chunk_text(&f.segment, pos, &f.text, budget))
                .collect()
        })
        .collect();
    let keys: Vec<Vec<Vec<u8>>> = texts
        .iter()
        .map(|file| file.iter().map(|t| embed_key(&model, budget, t)).collect())
        .collect();
    let mut vectors: FxHashMap<Vec<u8>, String> = FxHashMap::default();
    let embeds = dense.unavailable().is_none() && dense.dim() == DIM;
    if embeds {
        let all: Vec<&Vec<u8>> = keys.iter().flatten().collect();
        for batch in all.chunks(10_000) {
            let rows = tx
                .query(
                    "SELECT DISTINCT ON (embed_key) embed_key, embedding::text FROM quarry_chunks
                     WHERE embed_key = ANY($1) AND embedding IS NOT NULL",
                    &[&batch],
                )
                .await
                .map_err(sql("looking up vectors"))?;
            vectors.extend(rows.into_iter().map(|r| (r.get(0), r.get(1))));
        }
        let mut missing: Vec<ChunkText> = Vec::new();
        let mut missing_keys: Vec<&Vec<u8>> = Vec::new();
        for (file_texts, file_keys) in texts.iter().zip(&keys) {
            for (text, key) in file_texts.iter().zip(file_keys) {
                if !vectors.contains_key(key) && !missing_keys.contains(&key) {
                    missing.push(text.clone());
                    missing_keys.push(key);
                }
            }
        }
        stats.vectors_reused = keys
            .iter()
            .flatten()
            .filter(|k| vectors.contains_key(*k))
            .count() as u64;
        if !missing.is_empty() {
            let (computed, _) = dense
                .embed_texts(&missing)
                .map_err(|e| HubError::Invalid(format!("embedding chunks: {e}")))?;
            stats.vectors_computed = computed.len() as u64;
            for (key, vector) in missing_keys.into_iter().zip(computed) {
                vectors.insert(key.clone(), vector_text(&vector));
            }
        }
    }

    stats.chunks_removed = remove_files(&tx, repo_id, &stale).await?;
    let mut df_delta: FxHashMap<String, i32> = FxHashMap::default();
    for (term, n) in removed_terms(&tx, repo_id, &stale).await? {
        *df_delta.entry(term).or_default() -= n;
    }
    tx.execute(
        "DELETE FROM quarry_files WHERE repo_id = $1 AND path = ANY($2)",
        &[&repo_id, &stale],
    )
    .await
    .map_err(sql("removing changed files"))?;

    let n_chunks: usize = new_files.iter().map(|f| f.chunks.len()).sum();
    let ids: Vec<i64> = tx
        .query(
            "SELECT nextval('quarry_chunk_ids') FROM generate_series(1::bigint, $1::bigint)",
            &[&(n_chunks as i64)],
        )
        .await
        .map_err(sql("numbering chunks"))?
        .into_iter()
        .map(|r| r.get(0))
        .collect();
    let bm25 = Bm25Config::default();
    let avg = average_lengths(&snapshot.stats);
    let mut files_copy = String::new();
    let mut chunks_copy = String::new();
    let mut terms_copy = String::new();
    let mut next_id = ids.iter();
    for ((file, file_keys), _) in new_files.iter().zip(&keys).zip(&texts) {
        row(
            &mut files_copy,
            &[
                Some(&repo_id.to_string()),
                Some(&file.path),
                Some(&format!("\\x{}", hex(&file.hash))),
                Some(file.language.name()),
                Some(&file.text),
            ],
        );
        let mut chunk_ids = Vec::with_capacity(file.chunks.len());
        let holes = child_ranges(&file.chunks);
        for ((chunk, key), holes) in file.chunks.iter().zip(file_keys).zip(&holes) {
            let (lines_start, lines) = whole_lines(&file.text, chunk.byte_start, chunk.byte_end);
            let holes: Vec<String> = holes
                .iter()
                .flat_map(|(a, b)| [a.to_string(), b.to_string()])
                .collect();
            let id = *next_id
                .next()
                .ok_or_else(|| HubError::Invalid("too few chunk ids".into()))?;
            chunk_ids.push(id);
            let vector = if embeds { vectors.get(key) } else { None };
            row(
                &mut chunks_copy,
                &[
                    Some(&id.to_string()),
                    Some(&repo_id.to_string()),
                    Some(&file.path),
                    Some(chunk.kind.name()),
                    Some(&chunk.name),
                    Some(&chunk.qualified_name),
                    chunk.container.as_deref(),
                    Some(&chunk.byte_start.to_string()),
                    Some(&chunk.byte_end.to_string()),
                    Some(&chunk.start_line.to_string()),
                    Some(&chunk.end_line.to_string()),
                    Some(&chunk.name_line.to_string()),
                    Some(&chunk.name_column.to_string()),
                    Some(&chunk.signature),
                    Some(&chunk.doc),
                    Some(&lines_start.to_string()),
                    Some(lines),
                    Some(&format!("{{{}}}", holes.join(","))),
                    vector.map(|_| format!("\\x{}", hex(key))).as_deref(),
                    vector.map(String::as_str),
                ],
            );
        }
        let lexical = &file.segment.lexical;
        lexical.for_each_term(|term, ordinal| {
            *df_delta.entry(term.to_string()).or_default() += lexical.df(ordinal) as i32;
            for posting in lexical.postings_at(ordinal) {
                let Some(lens) = lexical.field_lens(posting.doc as usize) else {
                    continue;
                };
                let Some(&chunk_id) = chunk_ids.get(posting.doc as usize) else {
                    continue;
                };
                let weight = term_weight(&bm25, &avg, &posting.tfs, &lens);
                row(
                    &mut terms_copy,
                    &[
                        Some(term),
                        Some(&repo_id.to_string()),
                        Some(&chunk_id.to_string()),
                        Some(&weight.to_string()),
                    ],
                );
                stats.terms_written += 1;
            }
        });
        stats.chunks_written += file.chunks.len() as u64;
    }
    copy_in(
        &tx,
        "COPY quarry_files (repo_id, path, hash, language, body) FROM STDIN",
        files_copy,
    )
    .await?;
    copy_in(
        &tx,
        "COPY quarry_chunks (id, repo_id, path, kind, name, qualified_name, container,
             byte_start, byte_end, start_line, end_line, name_line, name_column,
             signature, doc, lines_start, lines, holes, embed_key, embedding) FROM STDIN",
        chunks_copy,
    )
    .await?;
    copy_in(
        &tx,
        "COPY quarry_terms (term, repo_id, chunk_id, weight) FROM STDIN",
        terms_copy,
    )
    .await?;
    let (terms, deltas): (Vec<String>, Vec<i32>) =
        df_delta.into_iter().filter(|(_, d)| *d != 0).unzip();
    tx.execute(
        "INSERT INTO quarry_df (term, repo_id, df)
             SELECT t, $1, d FROM unnest($2::text[], $3::int[]) AS x (t, d)
         ON CONFLICT (term, repo_id) DO UPDATE SET df = quarry_df.df + EXCLUDED.df",
        &[&repo_id, &terms, &deltas],
    )
    .await
    .map_err(sql("counting document frequencies"))?;
    // Only terms a push took counts from can reach zero: the rest of the
    // repository's counts are never scanned.
    let lowered: Vec<&String> = terms
        .iter()
        .zip(&deltas)
        .filter(|(_, d)| **d < 0)
        .map(|(t, _)| t)
        .collect();
    if !lowered.is_empty() {
        tx.execute(
            "DELETE FROM quarry_df WHERE repo_id = $1 AND term = ANY($2) AND df <= 0",
            &[&repo_id, &lowered],
        )
        .await
        .map_err(sql("counting document frequencies"))?;
    }
    let sums: Vec<i64> = snapshot
        .stats
        .field_len_sums
        .iter()
        .map(|s| *s as i64)
        .collect();
    // text[] parameters straight from the layout's sorted lists.
    let layout = &snapshot.layout;
    let (superseded, generated) = (layout.superseded(), layout.generated());
    let (modules, homes) = (layout.modules(), layout.homes());
    tx.execute(
        "UPDATE quarry_repos SET commit_id = $2, n_docs = $3, field_len_sums = $4,
             superseded = $5, model = $6, generated = $7, modules = $8,
             homes = $9, pushed_at = now()
         WHERE id = $1",
        &[
            &repo_id,
            &commit,
            &(snapshot.stats.n_docs as i64),
            &sums,
            &superseded,
            &model,
            &generated,
            &modules,
            &homes,
        ],
    )
    .await
    .map_err(sql("moving the repository's commit"))?;
    tx.commit().await.map_err(sql("committing the push"))?;
    stats.elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
    Ok(stats)
}

fn check_name(what: &str, name: &str) -> Result<(), HubError> {
    if name.is_empty() || name.len() > MAX_NAME || name.chars().any(char::is_control) {
        return Err(HubError::Invalid(format!(
            "{what} {name:?}: expected 1 to {MAX_NAME} bytes without control characters"
        )));
    }
    Ok(())
}

/// The indexed files of a snapshot: path -> (language, content hash).
/// A later segment's row for a path replaces an earlier one.
fn live_files(snapshot: &Snapshot) -> BTreeMap<&str, (Language, [u8; 32])> {
    let mut files = BTreeMap::new();
    for segment in &snapshot.segments {
        for row in &segment.rows {
            match &row.state {
                FileState::Indexed { language, .. } => {
                    files.insert(row.path.as_str(), (*language, row.hash));
                }
                _ => {
                    files.remove(row.path.as_str());
                }
            }
        }
    }
    files
}

/// Reads, checks and chunks one file the way the index did.
fn read_file(
    root: &Path,
    limit: u64,
    path: &str,
    language: Language,
    hash: [u8; 32],
) -> Result<NewFile, HubError> {
    let bytes = crate::confine::read(root, Path::new(path), limit)
        .map_err(|why| HubError::Invalid(format!("{path}: {why}")))?;
    if *blake3::hash(&bytes).as_bytes() != hash {
        return Err(HubError::Invalid(format!(
            "{path} changed while pushing: push again"
        )));
    }
    Ok(parse(
        path,
        String::from_utf8_lossy(&bytes).into_owned(),
        language,
        hash,
    ))
}

/// Chunks one file's text the way the index does, in the segment's order.
pub(super) fn parse(path: &str, text: String, language: Language, hash: [u8; 32]) -> NewFile {
    // PostgreSQL text holds no NUL; a space keeps every byte offset.
    let text = if text.contains('\0') {
        text.replace('\0', " ")
    } else {
        text
    };
    let mut chunks = safe_chunk(path, &text, language);
    chunks.sort_by(|a, b| {
        a.byte_start
            .cmp(&b.byte_start)
            .then(b.byte_end.cmp(&a.byte_end))
    });
    let mut builder = SegmentBuilder::new();
    builder.add_file(ParsedFile {
        path,
        size: text.len() as u64,
        mtime_ns: 0,
        stamp: 0,
        hash,
        language,
        text: &text,
        chunks: chunks.clone(),
    });
    NewFile {
        path: path.to_string(),
        hash,
        language,
        segment: builder.finish(0, 0),
        chunks,
        text,
    }
}

/// Deletes the term rows of `paths`' chunks and counts the chunks.
async fn remove_files(
    tx: &Transaction<'_>,
    repo_id: i32,
    paths: &[String],
) -> Result<u64, HubError> {
    if paths.is_empty() {
        return Ok(0);
    }
    let n: i64 = tx
        .query_one(
            "SELECT count(*) FROM quarry_chunks WHERE repo_id = $1 AND path = ANY($2)",
            &[&repo_id, &paths],
        )
        .await
        .map_err(sql("counting removed chunks"))?
        .get(0);
    Ok(n as u64)
}

/// Deletes the term rows of `paths`' chunks; returns each term's number
/// of chunks that held it (what its document frequency loses).
async fn removed_terms(
    tx: &Transaction<'_>,
    repo_id: i32,
    paths: &[String],
) -> Result<Vec<(String, i32)>, HubError> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let rows = tx
        .query(
            "WITH gone AS (
                 DELETE FROM quarry_terms WHERE repo_id = $1 AND chunk_id IN
                     (SELECT id FROM quarry_chunks WHERE repo_id = $1 AND path = ANY($2))
                 RETURNING term)
             SELECT term, count(*)::int FROM gone GROUP BY term",
            &[&repo_id, &paths],
        )
        .await
        .map_err(sql("removing changed files' terms"))?;
    Ok(rows.into_iter().map(|r| (r.get(0), r.get(1))).collect())
}

/// What identifies a vector: the model, the token budget and the text
/// embedded without its path (as the machine-wide vector cache keys it),
/// so a function that moves keeps its vector.
fn embed_key(model: &str, budget: usize, text: &ChunkText) -> Vec<u8> {
    let mut hasher = blake3::Hasher::new();
    hasher.update(model.as_bytes());
    hasher.update(&[0]);
    hasher.update(&(budget as u64).to_le_bytes());
    hasher.update(text.cache_text.as_bytes());
    hasher.finalize().as_bytes()[..16].to_vec()
}

/// A vector as pgvector's text form, `[0.1,0.2]`.
pub(super) fn vector_text(vector: &[f32]) -> String {
    let mut out = String::with_capacity(vector.len() * 10 + 2);
    out.push('[');
    for (i, x) in vector.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&x.to_string());
    }
    out.push(']');
    out
}

fn average_lengths(stats: &CorpusStats) -> [f32; N_FIELDS] {
    let n = stats.n_docs.max(1) as f32;
    stats.field_len_sums.map(|s| (s as f32 / n).max(1.0))
}

/// A term's BM25F pseudo-frequency in one chunk (field weights and length
/// normalisation as the local index applies them, against the
/// repository's average lengths at push time): what the hub's lexical
/// candidate query saturates and sums.
fn term_weight(
    bm25: &Bm25Config,
    avg: &[f32; N_FIELDS],
    tfs: &[u32; N_FIELDS],
    lens: &[u16; N_FIELDS],
) -> f32 {
    let mut weight = 0.0;
    for f in 0..N_FIELDS {
        if tfs[f] == 0 {
            continue;
        }
        let p = &bm25.fields[f];
        let norm = 1.0 - p.b + p.b * f32::from(lens[f]) / avg[f];
        weight += p.weight * tfs[f] as f32 / norm.max(1e-3);
    }
    weight
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Appends one row of COPY's text format (`\N` for NULL, backslash escapes).
fn row(out: &mut String, fields: &[Option<&str>]) {
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            out.push('\t');
        }
        match field {
            None => out.push_str("\\N"),
            Some(text) => {
                for c in text.chars() {
                    match c {
                        '\\' => out.push_str("\\\\"),
                        '\t' => out.push_str("\\t"),
                        '\n' => out.push_str("\\n"),
                        '\r' => out.push_str("\\r"),
                        c => out.push(c),
                    }
                }
            }
        }
    }
    out.push('\n');
}

/// The lines a chunk spans, whole (from the start of the line where it
/// starts to the end of the line where it ends), and the byte offset
/// where they start: what a query ranks the chunk from.
fn whole_lines(text: &str, start: u32, end: u32) -> (u32, &str) {
    let (start, end) = (start as usize, end as usize);
    let start = text
        .get(..start)
        .map_or(0, |before| before.rfind('\n').map_or(0, |i| i + 1));
    let end = if end > start && text.as_bytes().get(end - 1) == Some(&b'\n') {
        end
    } else {
        text.get(end..).map_or(text.len(), |after| {
            after.find('\n').map_or(text.len(), |i| end + i)
        })
    };
    (start as u32, text.get(start..end).unwrap_or(""))
}

/// Bytes of COPY data sent per message.
const COPY_PIECE: usize = 4 << 20;

async fn copy_in(tx: &Transaction<'_>, statement: &str, data: String) -> Result<(), HubError> {
    if data.is_empty() {
        return Ok(());
    }
    let sink = tx
        .copy_in::<_, Bytes>(statement)
        .await
        .map_err(sql("writing rows"))?;
    let mut sink = std::pin::pin!(sink);
    // One CopyData message may not pass 1 GiB (PostgreSQL drops the
    // connection: a big generated crate did); the stream may be cut
    // anywhere, so it goes in pieces.
    let data = Bytes::from(data);
    let mut at = 0;
    while at < data.len() {
        let end = (at + COPY_PIECE).min(data.len());
        sink.send(data.slice(at..end))
            .await
            .map_err(sql("writing rows"))?;
        at = end;
    }
    sink.as_mut().finish().await.map_err(sql("writing rows"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_is_stored_with_its_whole_lines() {
        let text = "mod a {\n    fn f() {}\n}\nfn g() {}";
        let f = text.find("fn f").unwrap() as u32;
        let (start, lines) = whole_lines(text, f, f + "fn f() {}".len() as u32);
        assert_eq!((start, lines), (8, "    fn f() {}"));
        // Ending with its line break, at the end of the text, the whole text.
        assert_eq!(whole_lines(text, 0, 8), (0, "mod a {\n"));
        let g = text.find("fn g").unwrap() as u32;
        assert_eq!(whole_lines(text, g, text.len() as u32).1, "fn g() {}");
        assert_eq!(whole_lines(text, 0, text.len() as u32).1, text);
    }

    #[test]
    fn copy_rows_escape_what_copy_reads_as_syntax() {
        let mut out = String::new();
        row(&mut out, &[Some("a\tb\\c\nd\re"), None, Some("")]);
        assert_eq!(out, "a\\tb\\\\c\\nd\\re\t\\N\t\n");
    }

    #[test]
    fn vectors_print_in_pgvector_form() {
        assert_eq!(vector_text(&[0.5, -1.0, 0.25]), "[0.5,-1,0.25]");
    }
}
