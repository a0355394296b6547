//! Chunking: splits one file into searchable units.
//!
//! Owns language detection ([`detect_language`]) and the split itself
//! ([`chunk_file`]): one chunk per definition for the nineteen tree-sitter
//! languages, one per heading for Markdown, overlapping line windows for
//! other text. The index calls it once per file, on any thread.
//!
//! # How definitions are found
//!
//! One generic extractor (`extract`) is driven by a tree-sitter query per
//! language (`queries/<lang>.scm`). The captures mean:
//!
//! - `@definition.<kind>`: a definition node; `<kind>` is a
//!   [`ChunkKind::name`] (`function`, `struct`, `type`...). A suffix
//!   `.singleton` marks Ruby class-level methods.
//! - `@name`: the name, as written. `@name.path`: a written path whose last
//!   segment is the name and the rest an explicit container (`A::B`, `a.b`).
//!   `@name.decl`: a C declarator, descended to the declared name first.
//!   `@name.trait`: a Rust impl's trait; the chunk is named
//!   `<Trait> for <Type>` while its members are qualified by `<Type>`.
//! - `@container`: an explicit container (a Go method's receiver type).
//! - `@package`: qualifies every top-level definition of the file (Go's
//!   `package`, C#'s file-scoped namespace).
//! - `@comment`, `@attribute`: comments and attributes/decorators/annotations;
//!   those directly above a definition join its range, comments become its
//!   doc, and attributes are skipped by its signature.
//! - `@wrapper` with `@wrapped`: a node that wraps a definition (`export`,
//!   decorators, `template<>`, a single-spec `const`); the definition's
//!   range grows to the wrapper when the wrapper wraps only it.
//! - `@reparse`: a Rust item-level macro invocation whose token tree is
//!   re-parsed as items (recursing into brace groups such as `cfg_if!`'s).
//!
//! When two patterns capture the same definition node, the earlier pattern
//! wins, so specific shapes come before catch-alls in each query.
//!
//! The grammars' own `TAGS_QUERY`s are not used at run time: their kinds
//! are coarse (Rust structs, enums and type aliases are all `class`), half
//! their patterns are references that only cost time, and they rely on
//! predicates (`#strip!`, `#select-adjacent!`) the Rust binding does not
//! apply. A unit test checks that our queries find every definition the tags
//! queries find in the fixture.
//!
//! Containers come from range containment; a `function` directly inside a
//! class-like container becomes a `method`. To stay fast the walk descends
//! at most a few levels (5; 7 for JavaScript/TypeScript) below the nearest
//! definition, so definitions buried deep inside expressions are skipped
//! (145 of 355k definitions in the crates.io sources we measured).
//!
//! # Qualified names
//!
//! Rust and C++ `Type::method`, `ns::func`; Python, JavaScript, TypeScript,
//! Java and C# `Class.method` (`Outer.Inner.method`); Go `pkg.Func` for
//! top-level definitions and `Type.Method` for methods; Ruby `Mod::Class`,
//! `Class#method` and `Class.singleton_method`. `qualified_name` is always
//! `container + separator + name`, or `name` without a container; for a
//! Rust trait impl that is `Display for GraphStore`.
//! Markdown sections are named by their heading and qualified by the
//! enclosing headings (`Install > Linux`).
//!
//! # Invariants
//!
//! Ranges include leading doc comments and attributes; byte ranges lie on
//! char boundaries; lines are 1-based and inclusive; output is sorted by
//! `(byte_start, byte_end descending)`.
//!
//! Never: panic on any input (binary, huge lines, unbalanced braces, deep
//! nesting), read files, or keep state between calls other than one parser
//! and query cursor per thread and the compiled queries.

mod extract;
mod lang;
mod text;
mod types;

pub use types::*;

use extract::Options;
use lang::Grammar;

/// Language of a path by extension / file name; None = not indexed (unsupported). Text kinds:
/// md/markdown -> Markdown; toml, yaml/yml, json, sh/bash/zsh, txt, rst, ini/cfg, sql, xml, html, css, gradle, Makefile, Dockerfile, etc. -> Text.
/// Lock files (Cargo.lock, package-lock.json, yarn.lock...) -> None.
pub fn detect_language(path: &std::path::Path) -> Option<Language> {
    lang::detect_language(path)
}

/// Split one file into chunks. `path` is the root-relative path (used for Go package fallbacks and line-window names).
/// A `.h` file detected as C is chunked as C++ when its text is C++.
/// Never panics, whatever the bytes; a file with syntax errors still yields the definitions tree-sitter recovers.
/// Output sorted by (byte_start, byte_end descending is fine).
///
/// A grammar file without any definition (a script, a file the parser gave
/// up on) is split into line windows instead, so that it stays searchable;
/// in a file with definitions, the text outside them (module docs,
/// imports, top-level statements) becomes line windows too, so every line
/// is in some chunk.
pub fn chunk_file(path: &str, text: &str, language: Language) -> Vec<Chunk> {
    chunk_file_with(path, text, language, Options::default())
}

/// [`chunk_file`] without re-parsing Rust macro bodies: what a plain tags
/// query would see. `quarry-bench` compares the two to report how many
/// definitions the macro re-parse recovers on real code.
pub fn chunk_file_without_macros(path: &str, text: &str, language: Language) -> Vec<Chunk> {
    let options = Options {
        expand_macros: false,
        ..Options::default()
    };
    chunk_file_with(path, text, language, options)
}

/// [`chunk_file`] with explicit options (tests and coverage measurements).
pub(crate) fn chunk_file_with(
    path: &str,
    text: &str,
    language: Language,
    options: Options,
) -> Vec<Chunk> {
    if text.is_empty() {
        return Vec::new();
    }
    let language = if language == Language::C && is_cpp_header(path, text) {
        Language::Cpp
    } else {
        language
    };
    match language {
        Language::Markdown => text::markdown_sections(path, text),
        Language::Text => text::line_windows(path, text, language),
        _ => {
            let chunks = Grammar::get(language)
                .and_then(|grammar| extract::extract(grammar, path, text, options))
                .unwrap_or_default();
            if chunks.is_empty() {
                return text::line_windows(path, text, language);
            }
            let covered = chunks
                .iter()
                .map(|c| (c.byte_start as usize, c.byte_end as usize));
            let gaps = text::gap_windows(path, text, language, covered);
            let passages = if options.passages {
                text::passage_windows(path, text, language, &chunks)
            } else {
                Vec::new()
            };
            if gaps.is_empty() && passages.is_empty() {
                return chunks;
            }
            let mut chunks = chunks;
            chunks.extend(gaps);
            chunks.extend(passages);
            chunks.sort_by_key(|c| (c.byte_start, std::cmp::Reverse(c.byte_end)));
            chunks
        }
    }
}

/// A `.h` file written in C++ (a class, a namespace, a template, `std::`):
/// the C grammar reads `class x {}` as a function and loses templates.
fn is_cpp_header(path: &str, text: &str) -> bool {
    const STARTS: [&str; 9] = [
        "namespace ",
        "template <",
        "template<",
        "class ",
        "public:",
        "private:",
        "protected:",
        "using namespace ",
        "extern \"C++\"",
    ];
    path.ends_with(".h")
        && (text.contains("std::")
            || text.lines().any(|line| {
                let line = line.trim_start();
                STARTS.iter().any(|s| line.starts_with(s))
            }))
}

#[cfg(test)]
mod tests;
