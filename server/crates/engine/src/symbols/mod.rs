//! The symbol-name index behind LSP `workspace/symbol` and `quarry symbols`.
//!
//! One [`SymbolTable`] belongs to one immutable index segment. It answers
//! fuzzy name queries over the definitions of that segment; the caller runs
//! the query on every segment, filters deleted chunks through `is_live` and
//! combines the per-segment answers with [`merge_matches`]. Scores depend only
//! on the query and the symbol, never on the segment, so answers from
//! different segments compare directly.
//!
//! # Matching
//!
//! Matching is case-insensitive and sorted into strict tiers ([`MatchTier`]):
//! `Exact` (the name equals the query) > `Prefix` (the name starts with the
//! query) > `WordBoundary` (the query starts at a word part of the name and
//! runs on contiguously, or it is a camel hump: two or more consecutive
//! pieces that are prefixes of word parts taken in order, parts may be
//! skipped, and so may separators typed between pieces) >
//! `Subsequence` (the query characters appear in order). Word parts come from
//! camelCase/PascalCase (acronyms kept whole: `HTTPServer` is `http|server`),
//! `snake_case`, kebab-case, other punctuation and letter/digit changes.
//! Within a tier the score prefers shorter names, earlier matches, fewer
//! gaps and exact case. A qualified query (`Store::get`, `Class.method`,
//! `Class#method`, `pkg.Func`) matches its last segment against the name and
//! its leading segments against the container part of the qualified name;
//! how well the container matches (exact > prefix of a segment > substring >
//! subsequence) dominates the score within a tier.
//!
//! # Data structure
//!
//! Symbols are sorted by lowercase name, so the symbols of one name form a
//! contiguous range. The unique lowercase names are stored in one byte blob
//! ordered by length, with a permutation that lists them in byte order:
//! `Exact` and `Prefix` are two binary searches over it that yield a slice
//! of name ids, however many names share the prefix. `WordBoundary`
//! candidates come from an `fst::Map` over "word keys": for every name, the
//! lowercase suffix starting at each inner word part (`graphstorelookup`
//! gives `storelookup` and `lookup`) and the initials starting at each part
//! (`gsl`, `sl`). The map value is an offset into a posting list of name
//! ids laid out in key order, so a prefix query over the keys is two
//! fst lookups and one contiguous slice of postings. Humps with multi-letter
//! pieces or skipped parts, and subsequences, are found by a scan over the
//! unique names in order of length that rejects names by a 64-bit
//! character-class mask and a kind mask before any string work.
//!
//! The phases run best tier first and each stops work that cannot change
//! the answer: when `Exact` and `Prefix` already fill `limit`, nothing else
//! runs; the scan visits names shortest first and stops at the first length
//! whose best possible score cannot enter the results (scores fall with
//! length), so the answer is exactly the best `limit` matches by the rules
//! above, never an approximation.
//!
//! # Invariants
//!
//! * A table is immutable after [`SymbolTable::build`] or
//!   [`SymbolTable::read_from`]; `read_from` validates every length, offset
//!   and ordinal, so search code may index the arrays directly.
//! * Unique lowercase names ("name ids") are ordered by (length, bytes),
//!   `lex` lists them by bytes, and every name has at least one symbol.
//! * Results are deterministic: ties are broken by chunk id.
//!
//! # Never
//!
//! No I/O, no LSP or JSON types, no knowledge of files or deletions (the
//! caller passes `is_live`), and no panics on any query or any bytes.
//! `read_from` checks a checksum over everything (accidental corruption)
//! and then every array's lengths, offsets and ids (so even bytes with a
//! forged checksum cannot make the arrays index out of bounds). The one
//! exception is the inside of the fst, which the `fst` crate trusts: only
//! the checksum guards it, so deliberately forged fst bytes with a matching
//! checksum could still panic inside that crate.

mod fold;
mod format;
mod matching;
mod query;
mod search;
mod table;
#[cfg(test)]
mod tests;

pub use format::SymbolFormatError;
pub use matching::MatchTier;
pub use query::SymbolQuery;
pub use search::{merge_matches, search_tables, SymbolMatch};
pub use table::{SymbolRecord, SymbolTable};
