//! What a search is asked to do: how many hits, which branches, every
//! ranking knob and the filter ([`SearchOptions`]), and the `--rank
//! KEY=VALUE` knobs that tune them by name.
//!
//! Never: read a query or an index.

use crate::filter::Filter;
use crate::lexical::Bm25Config;
use crate::rank::signals::Signals;
use crate::rank::FuseConfig;

/// Candidates per branch for the head of every result list
/// (`FuseConfig::depth` overrides it).
pub const HEAD_DEPTH: usize = 50;

/// The most hits one search returns; a larger limit is read as this one.
pub const MAX_LIMIT: usize = 10_000;

/// Which query branches run (all by default; the benchmark turns some off).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Branches {
    pub lexical: bool,
    pub dense: bool,
    pub symbol: bool,
}

impl Default for Branches {
    fn default() -> Self {
        Branches {
            lexical: true,
            dense: true,
            symbol: true,
        }
    }
}

#[derive(Clone, Debug)]
pub struct SearchOptions {
    pub limit: usize,
    /// RRF constant, per-branch depth and weights.
    pub fuse: FuseConfig,
    /// Most hits from one file before every other file's hits get a turn
    /// (0 = no cap); a file's further hits come after them. Exact-name
    /// definitions are always taken (and count). Applies on top of
    /// `file_saturation`.
    pub per_file_cap: usize,
    /// Soft per-file diversity instead of the cap: the n-th hit of a file
    /// counts `file_saturation^(n-1)` of its score (0 = off).
    pub file_saturation: f32,
    /// The same for a pasted text (`SearchQuery::pasted`: an issue, 12
    /// words or more on several lines): 1, none. An issue is about one
    /// place, and its fix touches several functions of one file more often
    /// than the first function of several: with the head spread over
    /// files, the second and third function of the file in first place fell
    /// past the tenth hit (SWE-bench development set, 241 issues: function
    /// R@10 0.596 -> 0.606 without it, the files found the same). A long
    /// question typed on one line keeps the spread: on semble's benchmark
    /// one such question lost its answer without it.
    pub long_file_saturation: f32,
    /// The first `diverse_head` places are shaped by `file_saturation`;
    /// the places after them go by score alone
    /// ([`Saturation::head`](crate::rank::Saturation)). Default 5 of 10,
    /// with `file_saturation` 0.7: on semble's benchmark (36 repositories)
    /// a question's answer files come out of one file's run of hits
    /// (0.8837 -> 0.8850 with `file_name` at 0.5), and a single-function
    /// question's answer, a second or third chunk of its file, still comes
    /// back by score in places 6 to 10 (the committed benchmark's concept
    /// R@10 stays 0.643; 7 places at 0.7 cost it 0.524, 6 places 0.595).
    pub diverse_head: usize,
    /// Lines of text in each hit's snippet.
    pub snippet_lines: usize,
    /// Phrase candidates verified against their text, best first.
    pub max_phrase_checks: usize,
    /// Paths, languages and kinds a hit may have; every branch applies it
    /// before fusion.
    pub filter: Filter,
    /// The branches that run.
    pub branches: Branches,
    /// Exact-name definitions and verified phrases above every fused hit.
    pub exact_priority: bool,
    /// Verified phrases of a query long besides its quotes (an issue
    /// text, `SearchQuery::quotes_aside`) go first too: in the lexical list
    /// and, pinned, in the answer. Off: an issue's quotes are its
    /// reporter's, not a search operator, and putting them first put docs,
    /// tests and settings quoting the same words above the code (SWE-bench
    /// development set, 241 issues: file Acc@1 0.552 -> 0.564 hybrid,
    /// 0.548 -> 0.564 lexical, with them in their place).
    pub pin_long_phrases: bool,
    /// With the dense branch on: the hit a lexical-only search would put
    /// first is moved up to this place in the fused list (0 = off), before
    /// exact names are pinned and files diversified, so the dense list can
    /// reorder around a lexical answer but not bury it. Default 3: 1
    /// cost the development set 0.012; 3 left it as it was and kept an
    /// issue's named function (`decompose()` in `intpoly`) in the head.
    pub lexical_guard: usize,
    /// Code-aware ranking signals.
    pub signals: Signals,
    /// BM25F parameters in place of the index's (tuning runs).
    pub bm25: Option<Bm25Config>,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            limit: 10,
            fuse: FuseConfig::default(),
            per_file_cap: 0,
            file_saturation: 0.7,
            long_file_saturation: 1.0,
            diverse_head: 5,
            snippet_lines: 6,
            max_phrase_checks: 200,
            filter: Filter::default(),
            branches: Branches::default(),
            exact_priority: true,
            pin_long_phrases: false,
            lexical_guard: 3,
            signals: Signals::default(),
            bm25: None,
        }
    }
}

impl SearchOptions {
    /// Sets every `KEY=VALUE` knob (the `--rank` arguments) with `tune`.
    pub fn tune_all(&mut self, knobs: &[String]) -> Result<(), String> {
        for (key, value) in parse_knobs(knobs)? {
            self.tune(&key, &value)?;
        }
        Ok(())
    }

    /// Sets one ranking knob by name (`quarry search --rank KEY=VALUE`, used
    /// by the quality benchmarks for ablations): `fuse.k`, `fuse.depth`, `fuse.missing`,
    /// `fuse.lexical|dense|symbol` (branch weights), `fuse.dense_alone`,
    /// `fuse.static` (dense weight factor for the static tier),
    /// `fuse.fill` (the static tier's discount where it stands in for the
    /// transformer, see `rank::merge_partial`; `inf` turns it off),
    /// `fuse.confidence`, `fuse.confidence_power`, `fuse.short_words`,
    /// `fuse.short_power`, `fuse.long_dense` (see `FuseConfig::dense_factor`),
    /// `cap`, `saturation`, `long_saturation`, `head`, `exact` (0/1),
    /// `definition`, `shared_definitions` (0/1), `symbol_query`, `prose_dense`, `test`, `vendored`,
    /// `generated`, `minified`, `example`, `barrel`, `compat`,
    /// `declaration`, `superseded`, `coherence`, `stems` (0/1), `docs`,
    /// `config`, `path`, `path_idf` (0/1), `file_name`, `module_file`, `home_file`, `file`, `classed_lexical` (0/1), `short`, `outside`, `frames`, `bm25.k1`, `bm25.FIELD.w|b` with FIELD one
    /// of name, qualified, path, doc, body.
    pub fn tune(&mut self, key: &str, value: &str) -> Result<(), String> {
        let number: f32 = value
            .trim()
            .parse()
            .ok()
            .filter(|n: &f32| !n.is_nan())
            .ok_or_else(|| format!("--rank {key}: {value:?} is not a number"))?;
        let flag = number != 0.0;
        let signals = &mut self.signals;
        match key {
            "fuse.k" => self.fuse.k = number,
            "fuse.depth" => {
                self.fuse.depth = Some(number.clamp(1.0, crate::rank::MAX_DEPTH as f32) as usize)
            }
            "fuse.missing" => self.fuse.missing = number.max(0.0),
            "fuse.lexical" => self.fuse.weights.lexical = number,
            "fuse.dense" => self.fuse.weights.dense = number,
            "fuse.symbol" => self.fuse.weights.symbol = number,
            "fuse.dense_alone" => self.fuse.dense_alone = number,
            "fuse.static" => self.fuse.static_dense = number,
            "fuse.fill" => self.fuse.fill_discount = number.max(0.0),
            "fuse.partial_power" => self.fuse.partial_power = number.max(0.0),
            "fuse.confidence" => self.fuse.lexical_confidence = number.clamp(0.0, 1.0),
            "fuse.confidence_power" => self.fuse.confidence_power = number.max(0.0),
            "fuse.short_words" => self.fuse.short_words = number.max(0.0) as usize,
            "fuse.short_power" => self.fuse.short_power = number.max(0.0),
            "fuse.long_dense" => self.fuse.long_dense = number.max(0.0),
            "cap" => self.per_file_cap = number.max(0.0) as usize,
            "saturation" => self.file_saturation = number.clamp(0.0, 1.0),
            "long_saturation" => self.long_file_saturation = number.clamp(0.0, 1.0),
            "head" => self.diverse_head = number.max(0.0) as usize,
            "guard" => self.lexical_guard = number.max(0.0) as usize,
            "exact" => self.exact_priority = flag,
            "long_phrases" => self.pin_long_phrases = flag,
            "definition" => signals.definition = number,
            "shared_definitions" => signals.shared_definitions = flag,
            "symbol_query" => signals.symbol_query_weight = number,
            "prose_dense" => signals.prose_dense_weight = number,
            "test" => signals.penalties.test = number,
            "vendored" => signals.penalties.vendored = number,
            "generated" => signals.penalties.generated = number,
            "minified" => signals.penalties.minified = number,
            "example" => signals.penalties.example = number,
            "barrel" => signals.penalties.barrel = number,
            "compat" => signals.penalties.compat = number,
            "declaration" => signals.penalties.declaration = number,
            "superseded" => signals.penalties.superseded = number,
            "coherence" => signals.file_coherence = number,
            "stems" => signals.stems = flag,
            "docs" => signals.content.docs = number,
            "config" => signals.content.config = number,
            "path" => signals.path_match = number,
            "file_name" => signals.file_name = number,
            "module_file" => signals.module_file = number,
            "home_file" => signals.home_file = number,
            "path_idf" => signals.path_idf = flag,
            "file" => signals.file_evidence = number,
            "classed_lexical" => signals.classed_lexical = flag,
            "short" => signals.short_chunk = number,
            "outside" => signals.outside_definitions = number,
            "frames" => signals.frames = number,
            "frame_decay" => signals.frame_decay = number,
            _ => {
                let Some(rest) = key.strip_prefix("bm25.") else {
                    return Err(format!("--rank: unknown knob {key:?}"));
                };
                let bm25 = self.bm25.get_or_insert_with(Bm25Config::default);
                if rest == "k1" {
                    bm25.k1 = number;
                    return Ok(());
                }
                let (field, param) = rest
                    .split_once('.')
                    .ok_or_else(|| format!("--rank: unknown knob {key:?}"))?;
                let slot = ["name", "qualified", "path", "doc", "body"]
                    .iter()
                    .position(|f| *f == field)
                    .ok_or_else(|| format!("--rank: unknown BM25 field in {key:?}"))?;
                match param {
                    "w" => bm25.fields[slot].weight = number,
                    "b" => bm25.fields[slot].b = number,
                    _ => return Err(format!("--rank: unknown knob {key:?}")),
                }
            }
        }
        Ok(())
    }
}

/// `KEY=VALUE` ranking knobs (the `--rank` arguments) as pairs.
pub fn parse_knobs(knobs: &[String]) -> Result<Vec<(String, String)>, String> {
    knobs
        .iter()
        .map(|knob| {
            knob.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| format!("--rank {knob:?}: expected KEY=VALUE"))
        })
        .collect()
}
