//! The hub's candidate set, shared by its readers (search, symbols, files
//! and usages): which repositories a role reads and on which shard
//! (`choose_repos`), candidate rows merged across shards (`Found`), the
//! candidate chunks read back (`fetch_chunks`), and the candidate snapshot
//! (`assemble`): the candidates' files rebuilt as segments, one per
//! repository, with the repositories' own corpus statistics.
//! Never: ranks (that is `search`'s), or reads a row the role may not.

use super::conn::Hub;
use super::error::{sql, HubError};
use super::overlay::Overlay;
use super::schema::DIM;
use crate::chunk::{Chunk, ChunkKind, Language};
use crate::dense::vectors::VectorIndex;
use crate::index::segment::{own_text, ParsedFile, SegmentBuilder};
use crate::index::Snapshot;
use crate::layout::Layout;
use crate::lexical::CorpusStats;
use crate::search::TextSource;
use futures_util::future::join_all;
use rustc_hash::FxHashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Which repositories a query reads: every one the role may, or those
/// whose names match any of some globs (`*` any run, `?` one character).
#[derive(Clone, Debug, Default)]
pub struct RepoScope {
    pub globs: Vec<String>,
}

/// A chunk as the hub holds it, with its vector when it has one.
pub(super) type StoredChunk = (Chunk, Option<Vec<f32>>);

/// A repository of one of the hubs searched.
pub(super) struct Repo {
    /// Which hub (shard) holds it.
    pub(super) shard: usize,
    pub(super) id: i32,
    pub(super) name: String,
    pub(super) commit: String,
    pub(super) n_docs: i64,
    pub(super) sums: Vec<i64>,
    pub(super) superseded: Vec<String>,
    /// Files whose header says a tool wrote them.
    pub(super) generated: Vec<String>,
    /// Its module entry files (`layout::FileMarks::module`).
    pub(super) modules: Vec<String>,
    /// The home files of its split types (`layout::FileMarks::home`).
    pub(super) homes: Vec<String>,
    pub(super) model: String,
}

/// A chunk of the hubs: (repository, chunk id), the repository by its
/// place in the list of repositories searched.
pub(super) type ChunkKey = (usize, i64);

/// One candidate chunk from one list of one shard, with what orders it in
/// that list: `score` (higher first), then names, so the lists of several
/// shards merge into the list one server holding everything gives.
pub(super) struct Found {
    pub(super) score: f64,
    pub(super) name: String,
    pub(super) repo: usize,
    pub(super) path: String,
    pub(super) start: i32,
    pub(super) id: i64,
}

impl Found {
    /// A candidate list's row: (repository id, path, start, score, name,
    /// chunk id), from shard `shard`; `None` for a repository not searched.
    pub(super) fn from_row(
        repos: &[Repo],
        shard: usize,
        row: &tokio_postgres::Row,
    ) -> Option<Found> {
        Some(Found {
            repo: repo_index(repos, shard, row.get(0))?,
            path: row.get(1),
            start: row.get(2),
            score: row.get(3),
            name: row.get(4),
            id: row.get(5),
        })
    }
}

/// The repositories in `scope` the role may read, over every shard, in
/// one order (by name) whatever shard holds what; a name on two shards is
/// read from the first.
pub(super) async fn choose_repos(hubs: &[Hub], scope: &RepoScope) -> Result<Vec<Repo>, HubError> {
    let patterns: Vec<String> = if scope.globs.is_empty() {
        vec!["%".to_string()]
    } else {
        scope.globs.iter().map(|g| like_pattern(g)).collect()
    };
    let per_shard = join_all(hubs.iter().enumerate().map(|(shard, hub)| {
        let patterns = &patterns;
        async move {
            let rows = hub
                .client
                .query(
                    "SELECT id, name, commit_id, n_docs, field_len_sums, superseded, model,
                            generated, modules, homes
                     FROM quarry_repos WHERE name LIKE ANY($1) ORDER BY name",
                    &[patterns],
                )
                .await
                .map_err(sql("choosing repositories"))?;
            Ok::<_, HubError>(
                rows.into_iter()
                    .map(|r| Repo {
                        shard,
                        id: r.get(0),
                        name: r.get(1),
                        commit: r.get(2),
                        n_docs: r.get(3),
                        sums: r.get(4),
                        superseded: r.get(5),
                        model: r.get(6),
                        generated: r.get(7),
                        modules: r.get(8),
                        homes: r.get(9),
                    })
                    .collect::<Vec<_>>(),
            )
        }
    }))
    .await;
    let mut repos: Vec<Repo> = Vec::new();
    for shard in per_shard {
        repos.extend(shard?);
    }
    repos.sort_by(|a, b| a.name.cmp(&b.name).then(a.shard.cmp(&b.shard)));
    repos.dedup_by(|b, a| a.name == b.name);
    Ok(repos)
}

/// A candidate chunk as the hub holds it: its record, its whole lines and
/// its children's ranges (all a ranking reads of its file), and its vector
/// when the dense branch reads one.
pub(super) struct HubChunk {
    pub(super) repo: usize,
    pub(super) id: i64,
    pub(super) path: String,
    pub(super) chunk: Chunk,
    /// Byte offset in the file of the start of the chunk's first line.
    pub(super) lines_start: u32,
    /// The chunk's lines, whole.
    pub(super) lines: String,
    /// Its direct children's byte ranges, in order.
    pub(super) holes: Vec<(u32, u32)>,
    pub(super) vector: Option<Vec<f32>>,
}

/// The candidate chunks `keys` (repository, chunk id), each shard reading
/// its own, in no particular order.
pub(super) async fn fetch_chunks(
    hubs: &[Hub],
    repos: &[Repo],
    keys: &[ChunkKey],
    with_vectors: bool,
) -> Result<Vec<HubChunk>, HubError> {
    let repo_at = |shard: usize, id: i32| repo_index(repos, shard, id);
    let fetched = join_all(hubs.iter().enumerate().map(|(shard, hub)| {
        let ids: Vec<i64> = keys
            .iter()
            .filter(|(r, _)| repos[*r].shard == shard)
            .map(|(_, id)| *id)
            .collect();
        async move {
            if ids.is_empty() {
                return Ok::<_, HubError>((shard, Vec::new()));
            }
            let rows = hub
                .client
                .query(
                    "SELECT c.repo_id, c.path, f.language, c.kind, c.name, c.qualified_name,
                            c.container, c.byte_start, c.byte_end, c.start_line, c.end_line,
                            c.name_line, c.name_column, c.signature, c.doc,
                            c.lines_start, c.lines, c.holes,
                            CASE WHEN $2 THEN c.embedding END, c.id
                     FROM quarry_chunks c
                     JOIN quarry_files f ON f.repo_id = c.repo_id AND f.path = c.path
                     WHERE c.id = ANY($1)",
                    &[&ids, &with_vectors],
                )
                .await
                .map_err(sql("reading candidate chunks"))?;
            Ok((shard, rows))
        }
    }))
    .await;
    let mut out = Vec::new();
    for shard in fetched {
        let (shard, rows) = shard?;
        for r in rows {
            let Some(repo) = repo_at(shard, r.get(0)) else {
                continue;
            };
            let Some(kind) = ChunkKind::from_name(r.get(3)) else {
                continue;
            };
            let language = Language::from_name(r.get(2)).unwrap_or(Language::Text);
            let at = |i: usize| r.get::<_, i32>(i).max(0) as u32;
            let holes: Vec<i32> = r.get(17);
            out.push(HubChunk {
                repo,
                id: r.get(19),
                path: r.get(1),
                chunk: Chunk {
                    language,
                    kind,
                    name: r.get(4),
                    qualified_name: r.get(5),
                    container: r.get(6),
                    byte_start: at(7),
                    byte_end: at(8),
                    start_line: at(9),
                    end_line: at(10),
                    name_line: at(11),
                    name_column: at(12),
                    signature: r.get(13),
                    doc: r.get(14),
                },
                lines_start: at(15),
                lines: r.get(16),
                holes: holes
                    .chunks_exact(2)
                    .map(|h| (h[0].max(0) as u32, h[1].max(0) as u32))
                    .collect(),
                vector: r.get::<_, Option<HalfVec>>(18).map(|v| v.0),
            });
        }
    }
    Ok(out)
}

/// A sparse copy of one file: each chunk's whole lines at their byte
/// offsets and line numbers, blanks (spaces and line breaks) between.
/// What a ranking reads of a file (a chunk's text, its lines for a snippet
/// and a detail line) is the file's own; nothing else is there.
pub(super) fn sparse_file<'c>(chunks: impl IntoIterator<Item = &'c HubChunk>) -> String {
    let mut pieces: Vec<(u32, u32, &str)> = chunks
        .into_iter()
        .map(|c| (c.lines_start, c.chunk.start_line.max(1), c.lines.as_str()))
        .collect();
    pieces.sort_by_key(|&(start, line, _)| (start, line));
    let mut out = String::new();
    let mut line = 1u32;
    for (start, start_line, text) in pieces {
        let cursor = out.len() as u32;
        let body = if start < cursor {
            // Nested in (or overlapping) a piece already placed: only what
            // lies past it.
            match text.get((cursor - start) as usize..) {
                Some(rest) if !rest.is_empty() => rest,
                _ => continue,
            }
        } else {
            let gap = (start - cursor) as usize;
            let breaks = start_line.saturating_sub(line) as usize;
            if breaks > gap || (breaks == 0 && gap > 0 && cursor > 0) {
                // Ranges that contradict each other: this piece is left out
                // (its chunk is then resolved from a blank).
                continue;
            }
            if cursor > 0 && breaks > 0 {
                out.push('\n');
                out.extend(std::iter::repeat_n(' ', gap - breaks));
                out.extend(std::iter::repeat_n('\n', breaks - 1));
            } else {
                out.extend(std::iter::repeat_n(' ', gap - breaks));
                out.extend(std::iter::repeat_n('\n', breaks));
            }
            line += breaks as u32;
            text
        };
        line += body.matches('\n').count() as u32;
        out.push_str(body);
    }
    out
}

/// The candidate snapshot and what maps its chunks back to repositories.
pub(super) struct Assembled {
    pub(super) snapshot: Snapshot,
    pub(super) text: HubText,
    /// (first chunk id, end, repository, from the overlay) per run of
    /// chunk ids.
    pub(super) chunk_repos: Vec<(u32, u32, usize, bool)>,
    /// Paths carry their repository's name (several repositories).
    pub(super) prefixed: bool,
    /// Each path as the snapshot shows it: its repository, and whether it
    /// is the overlay's.
    pub(super) paths: FxHashMap<String, (usize, bool)>,
}

/// Builds the candidate chunks into segments, one per repository (and one
/// for its overlay files), with the repositories' corpus statistics and
/// document frequencies (the overlay's words added). Each chunk is indexed
/// from its own text without its children's, as the local index does.
pub(super) fn assemble(
    repos: &[Repo],
    mut candidates: Vec<HubChunk>,
    overlay: Option<(&Overlay, &[usize])>,
    mut stats: CorpusStats,
    mut term_df: FxHashMap<String, u64>,
    vectors: Option<Arc<VectorIndex>>,
) -> Result<Assembled, HubError> {
    let prefixed = repos.len() > 1;
    let shown = |repo: &Repo, path: &str| {
        if prefixed {
            format!("{}/{path}", repo.name)
        } else {
            path.to_string()
        }
    };
    // By repository, file and place: one order whatever shard held what.
    candidates.sort_by(|a, b| {
        (
            a.repo,
            &a.path,
            a.chunk.byte_start,
            std::cmp::Reverse(a.chunk.byte_end),
        )
            .cmp(&(
                b.repo,
                &b.path,
                b.chunk.byte_start,
                std::cmp::Reverse(b.chunk.byte_end),
            ))
    });
    let mut segments = Vec::new();
    // (first chunk id, end, repository, from the overlay)
    let mut chunk_repos: Vec<(u32, u32, usize, bool)> = Vec::new();
    let mut text = HubText::default();
    let mut paths = FxHashMap::default();
    let mut next_id = 0u32;
    let mut pending_vectors: Vec<(u32, Vec<f32>)> = Vec::new();
    // The hub's candidates in one segment (building one costs the same
    // for few chunks as for many), a run of chunk ids per repository.
    let mut builder = SegmentBuilder::new();
    let mut rest = candidates.as_mut_slice();
    while let Some(r) = rest.first().map(|c| c.repo) {
        let repo = &repos[r];
        let first = next_id;
        while rest.first().is_some_and(|c| c.repo == r) {
            let n = rest
                .iter()
                .take_while(|c| c.repo == r && c.path == rest[0].path)
                .count();
            let (file, tail) = std::mem::take(&mut rest).split_at_mut(n);
            rest = tail;
            let sparse = sparse_file(file.iter());
            let placed = |c: &HubChunk| {
                let at = c.lines_start as usize;
                sparse.get(at..at + c.lines.len()) == Some(c.lines.as_str())
            };
            let bodies: Vec<Vec<&str>> = file
                .iter()
                .filter(|c| placed(c))
                .map(|c| own_text(&sparse, c.chunk.byte_start, c.chunk.byte_end, &c.holes))
                .collect();
            let mut file_chunks = Vec::with_capacity(bodies.len());
            for c in file.iter_mut().filter(|c| placed(c)) {
                if let Some(vector) = c.vector.take() {
                    pending_vectors.push((next_id + file_chunks.len() as u32, vector));
                }
                file_chunks.push(c.chunk.clone());
            }
            if file_chunks.is_empty() {
                continue;
            }
            next_id += file_chunks.len() as u32;
            let path = shown(repo, &file[0].path);
            builder.add_file_with_bodies(
                ParsedFile {
                    path: &path,
                    size: sparse.len() as u64,
                    mtime_ns: 0,
                    stamp: 0,
                    // The hub's text is the indexed text: hits resolve
                    // at the stored lines, never re-parsed.
                    hash: *blake3::hash(sparse.as_bytes()).as_bytes(),
                    language: file_chunks[0].language,
                    text: &sparse,
                    chunks: file_chunks,
                },
                bodies,
            );
            paths.insert(path.clone(), (r, false));
            text.files.insert(path, sparse);
        }
        if next_id > first {
            chunk_repos.push((first, next_id, r, false));
        }
    }
    if builder.n_chunks() > 0 {
        segments.push(Arc::new(builder.finish(0, 0)));
    }
    for (r, repo) in repos.iter().enumerate() {
        // The workspace's own files, as they are now.
        let Some((overlay, overlay_files)) = overlay.filter(|(o, _)| o.repo == repo.name) else {
            continue;
        };
        let mut builder = SegmentBuilder::new();
        let first = next_id;
        for &f in overlay_files {
            let file = &overlay.files[f];
            let path = shown(repo, &file.path);
            let stored = file
                .chunks
                .iter()
                .cloned()
                .zip(overlay.vectors[f].iter().cloned())
                .collect();
            add_file(
                &mut builder,
                &mut next_id,
                &mut pending_vectors,
                &path,
                file.language,
                &file.text,
                stored,
            );
            paths.insert(path.clone(), (r, true));
            text.files.insert(path, file.text.clone());
        }
        if builder.n_chunks() > 0 {
            let segment = builder.finish(segments.len() as u64, first);
            // The overlay's words count in the corpus too (a name only the
            // checkout has would otherwise score nothing).
            stats.n_docs += segment.chunks.len() as u64;
            segment.lexical.for_each_term(|term, ordinal| {
                *term_df.entry(term.to_string()).or_default() +=
                    u64::from(segment.lexical.df(ordinal));
            });
            segments.push(Arc::new(segment));
            chunk_repos.push((first, next_id, r, true));
        }
    }
    if let Some(index) = &vectors {
        let entries: Vec<(u32, &[f32])> = pending_vectors
            .iter()
            .filter(|(_, v)| v.len() == DIM)
            .map(|(id, v)| (*id, v.as_slice()))
            .collect();
        index
            .add(&entries)
            .map_err(|e| HubError::Invalid(format!("candidate vectors: {e}")))?;
    }
    let shown_all = |of: fn(&Repo) -> &Vec<String>| -> Vec<String> {
        repos
            .iter()
            .flat_map(|repo| of(repo).iter().map(move |f| shown(repo, f)))
            .collect()
    };
    let superseded = shown_all(|r| &r.superseded);
    let (generated, modules) = (shown_all(|r| &r.generated), shown_all(|r| &r.modules));
    let homes = shown_all(|r| &r.homes);
    let layout = Layout::known(
        superseded.iter().map(String::as_str),
        generated.iter().map(String::as_str),
        modules.iter().map(String::as_str),
        homes.iter().map(String::as_str),
    );
    let snapshot = Snapshot::assemble(
        PathBuf::new(),
        segments,
        stats,
        term_df,
        vectors,
        Arc::new(layout),
    );
    Ok(Assembled {
        snapshot,
        text,
        chunk_repos,
        prefixed,
        paths,
    })
}

/// Adds one overlay file to a segment, its chunks numbered from
/// `next_id` and their vectors set aside for the snapshot's vector index.
pub(super) fn add_file(
    builder: &mut SegmentBuilder,
    next_id: &mut u32,
    pending_vectors: &mut Vec<(u32, Vec<f32>)>,
    path: &str,
    language: Language,
    body: &str,
    mut file_chunks: Vec<StoredChunk>,
) {
    // In the builder's order, so that each vector keeps its chunk's id.
    file_chunks.sort_by(|a, b| {
        a.0.byte_start
            .cmp(&b.0.byte_start)
            .then(b.0.byte_end.cmp(&a.0.byte_end))
    });
    for (i, (_, vector)) in file_chunks.iter_mut().enumerate() {
        if let Some(vector) = vector.take() {
            pending_vectors.push((*next_id + i as u32, vector));
        }
    }
    *next_id += file_chunks.len() as u32;
    builder.add_file(ParsedFile {
        path,
        size: body.len() as u64,
        mtime_ns: 0,
        stamp: 0,
        // The text ranked is the text its chunks come from: hits resolve
        // at their stored lines, never re-parsed.
        hash: *blake3::hash(body.as_bytes()).as_bytes(),
        language,
        text: body,
        chunks: file_chunks.into_iter().map(|(c, _)| c).collect(),
    });
}

/// The file texts of the candidate snapshot.
#[derive(Default)]
pub(super) struct HubText {
    files: FxHashMap<String, String>,
}

impl TextSource for HubText {
    fn text(&mut self, path: &str) -> Option<&str> {
        self.files.get(path).map(String::as_str)
    }
}

/// The ids of the repositories of `repos` that shard `shard` holds.
pub(super) fn shard_ids(repos: &[Repo], shard: usize) -> Vec<i32> {
    repos
        .iter()
        .filter(|r| r.shard == shard)
        .map(|r| r.id)
        .collect()
}

/// Where shard `shard`'s repository `id` is in `repos`.
pub(super) fn repo_index(repos: &[Repo], shard: usize, id: i32) -> Option<usize> {
    repos.iter().position(|r| r.shard == shard && r.id == id)
}

/// One list's candidates from every shard in the order one server holding
/// them all gives: score (higher first), then name, repository, path and
/// place.
pub(super) fn sort_found(list: &mut [Found], repos: &[Repo]) {
    list.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| repos[a.repo].name.cmp(&repos[b.repo].name))
            .then_with(|| a.path.cmp(&b.path))
            .then(a.start.cmp(&b.start))
    });
}

/// A LIKE pattern for a glob: `*` any run, `?` one character, the rest
/// literal.
pub(super) fn like_pattern(glob: &str) -> String {
    let mut out = String::new();
    for c in glob.chars() {
        match c {
            '*' => out.push('%'),
            '?' => out.push('_'),
            '%' | '_' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// A pgvector `halfvec` in its binary form (what the server sends, a
/// quarter of the text form): dimensions and a reserved field as int16,
/// then each value as an IEEE half float, big-endian.
pub(super) struct HalfVec(pub(super) Vec<f32>);

impl<'a> tokio_postgres::types::FromSql<'a> for HalfVec {
    fn from_sql(
        _: &tokio_postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<HalfVec, Box<dyn std::error::Error + Sync + Send>> {
        let Some((head, body)) = raw.split_first_chunk::<4>() else {
            return Err("halfvec: shorter than its header".into());
        };
        let dim = usize::from(u16::from_be_bytes([head[0], head[1]]));
        if body.len() != dim * 2 {
            return Err(format!("halfvec: {} bytes for {dim} dimensions", body.len()).into());
        }
        Ok(HalfVec(
            body.chunks_exact(2)
                .map(|b| half::f16::from_be_bytes([b[0], b[1]]).to_f32())
                .collect(),
        ))
    }

    fn accepts(ty: &tokio_postgres::types::Type) -> bool {
        ty.name() == "halfvec"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_become_like_patterns_with_literals_escaped() {
        assert_eq!(like_pattern("serde*"), "serde%");
        assert_eq!(like_pattern("a_b?%"), "a\\_b_\\%");
    }

    #[test]
    fn halfvecs_read_from_their_binary_form() {
        use tokio_postgres::types::{FromSql, Type};
        let mut raw = vec![0, 3, 0, 0];
        for x in [0.5f32, -1.0, 0.25] {
            raw.extend(half::f16::from_f32(x).to_be_bytes());
        }
        let ty = Type::TEXT; // (the type is checked by `accepts`)
        assert_eq!(HalfVec::from_sql(&ty, &raw).unwrap().0, [0.5, -1.0, 0.25]);
        assert!(HalfVec::from_sql(&ty, &raw[..5]).is_err());
        assert!(HalfVec::from_sql(&ty, &raw[..2]).is_err());
    }

    /// A candidate chunk of `text` (its range given by a needle) as the hub
    /// stores it.
    fn stored(text: &str, needle: &str, holes: Vec<(u32, u32)>) -> HubChunk {
        let at = text.find(needle).unwrap();
        let lines_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let end = at + needle.len();
        let lines_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
        let line = text[..at].matches('\n').count() as u32 + 1;
        HubChunk {
            repo: 0,
            id: 1,
            path: "f.rs".into(),
            chunk: Chunk {
                language: Language::Rust,
                kind: ChunkKind::Function,
                name: "f".into(),
                qualified_name: "f".into(),
                container: None,
                byte_start: at as u32,
                byte_end: end as u32,
                start_line: line,
                end_line: line + needle.matches('\n').count() as u32,
                name_line: line,
                name_column: 0,
                signature: String::new(),
                doc: String::new(),
            },
            lines_start: lines_start as u32,
            lines: text[lines_start..lines_end].to_string(),
            holes,
            vector: None,
        }
    }

    #[test]
    fn a_sparse_file_holds_its_chunks_at_their_bytes_and_lines() {
        let text = "// head\n\nimpl A {\n    fn one() {\n        1\n    }\n}\n\n// gap\n\tfn two() {}\n// tail\n";
        let one = stored(text, "fn one() {\n        1\n    }", Vec::new());
        let outer = stored(
            text,
            "impl A {\n    fn one() {\n        1\n    }\n}",
            Vec::new(),
        );
        let two = stored(text, "fn two() {}", Vec::new());
        let sparse = sparse_file([&two, &one, &outer]);
        for c in [&one, &outer, &two] {
            let (a, b) = (c.chunk.byte_start as usize, c.chunk.byte_end as usize);
            assert_eq!(&sparse[a..b], &text[a..b]);
            let first = sparse.lines().nth(c.chunk.start_line as usize - 1).unwrap();
            assert_eq!(
                first,
                text.lines().nth(c.chunk.start_line as usize - 1).unwrap()
            );
        }
        assert!(!sparse.contains("head") && !sparse.contains("gap"));
        assert_eq!(sparse.len(), text.find("\n// tail").unwrap());
        // A range that contradicts the lines before it is left out.
        let mut wrong = stored(text, "fn two() {}", Vec::new());
        wrong.chunk.start_line = 99;
        assert!(!sparse_file([&one, &wrong]).contains("two"));
    }

    #[test]
    fn a_chunk_is_indexed_without_its_children() {
        let text = "impl A {\n    fn one() {}\n}\n";
        let kid = text.find("fn one() {}").unwrap() as u32;
        let hole = (kid, kid + "fn one() {}".len() as u32);
        let outer = stored(text, "impl A {\n    fn one() {}\n}", vec![hole]);
        let sparse = sparse_file([&outer]);
        let own = own_text(
            &sparse,
            outer.chunk.byte_start,
            outer.chunk.byte_end,
            &outer.holes,
        );
        assert_eq!(own.concat(), "impl A {\n    \n}");
    }
}
