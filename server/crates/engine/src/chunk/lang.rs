//! The language table: which files are indexed as which [`Language`], and
//! for each tree-sitter language its grammar, its definition query and the
//! few per-language facts the generic extractor needs (how qualified names
//! are joined, where docs live). Everything about node kinds lives in the
//! queries under `queries/`.
//!
//! Queries are compiled once per process and shared by all threads.
//! Never: parsing or walking trees (that is `extract`).

use std::path::Path;
use std::sync::OnceLock;

use tree_sitter::{Query, QueryError};

use super::types::{ChunkKind, Language};

/// Language of a path by extension or file name; `None` means the file is not
/// indexed (unknown type, lock file or minified bundle).
pub(crate) fn detect_language(path: &Path) -> Option<Language> {
    let file_name = path.file_name()?.to_str()?;
    let lower = file_name.to_ascii_lowercase();
    if is_lock_or_generated(&lower) {
        return None;
    }
    if let Some(lang) = by_file_name(file_name, &lower) {
        return Some(lang);
    }
    let ext = match lower.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => ext,
        _ => return None,
    };
    by_extension(ext)
}

/// Lock files and generated bundles: indexing them only adds noise.
fn is_lock_or_generated(lower: &str) -> bool {
    matches!(
        lower,
        "cargo.lock"
            | "package-lock.json"
            | "npm-shrinkwrap.json"
            | "yarn.lock"
            | "pnpm-lock.yaml"
            | "bun.lockb"
            | "gemfile.lock"
            | "poetry.lock"
            | "pipfile.lock"
            | "composer.lock"
            | "flake.lock"
            | "go.sum"
            | "packages.lock.json"
            | "podfile.lock"
            | "mix.lock"
            | "pubspec.lock"
            | "uv.lock"
    ) || lower.ends_with(".lock")
        || lower.ends_with(".min.js")
        || lower.ends_with(".min.css")
        || lower.ends_with(".map")
}

/// Files recognised by their whole name (no useful extension).
fn by_file_name(name: &str, lower: &str) -> Option<Language> {
    match name {
        "Rakefile" | "Gemfile" | "Guardfile" | "Vagrantfile" | "Podfile" | "Fastfile"
        | "Capfile" | "Brewfile" => return Some(Language::Ruby),
        _ => {}
    }
    let text_names = [
        "makefile",
        "gnumakefile",
        "dockerfile",
        "containerfile",
        "jenkinsfile",
        "procfile",
        "justfile",
        "build",
        "workspace",
        "buck",
        "license",
        "licence",
        "copying",
        "notice",
        "authors",
        "contributors",
        "changelog",
        "readme",
        "codeowners",
        ".gitignore",
        ".gitattributes",
        ".dockerignore",
        ".editorconfig",
        ".npmrc",
        ".prettierrc",
        ".eslintrc",
        ".babelrc",
        "go.mod",
        "go.work",
    ];
    if text_names.contains(&lower) || lower.starts_with("dockerfile.") {
        return Some(Language::Text);
    }
    None
}

fn by_extension(ext: &str) -> Option<Language> {
    let lang = match ext {
        "rs" => Language::Rust,
        "py" | "pyi" | "pyw" => Language::Python,
        "js" | "mjs" | "cjs" | "jsx" => Language::JavaScript,
        "ts" | "mts" | "cts" => Language::TypeScript,
        "tsx" => Language::Tsx,
        "go" => Language::Go,
        "java" => Language::Java,
        "c" | "h" => Language::C,
        "cc" | "cpp" | "cxx" | "c++" | "hh" | "hpp" | "hxx" | "h++" | "ipp" | "inl" | "tpp"
        | "cppm" | "ixx" => Language::Cpp,
        "cs" => Language::CSharp,
        "rb" | "rake" | "gemspec" | "ru" => Language::Ruby,
        "kt" | "kts" => Language::Kotlin,
        "scala" | "sc" | "sbt" => Language::Scala,
        "swift" => Language::Swift,
        "ex" | "exs" => Language::Elixir,
        "php" | "phtml" => Language::Php,
        "lua" => Language::Lua,
        "sh" | "bash" | "zsh" | "ksh" | "bats" => Language::Bash,
        "hs" | "lhs" => Language::Haskell,
        "zig" => Language::Zig,
        "md" | "markdown" | "mdx" => Language::Markdown,
        "toml" | "yaml" | "yml" | "json" | "jsonc" | "json5" | "fish" | "txt" | "text" | "rst"
        | "adoc" | "asciidoc" | "org" | "ini" | "cfg" | "conf" | "properties" | "env" | "sql"
        | "xml" | "xsd" | "html" | "htm" | "xhtml" | "css" | "scss" | "sass" | "less"
        | "gradle" | "pl" | "pm" | "r" | "dart" | "erl" | "hrl" | "ml" | "mli" | "clj" | "cljs"
        | "el" | "vim" | "nim" | "vue" | "svelte" | "proto" | "graphql" | "gql" | "tf" | "hcl"
        | "nix" | "cmake" | "mk" | "mak" | "bat" | "cmd" | "ps1" | "psm1" | "dockerfile"
        | "tex" | "bzl" | "bazel" | "star" | "groovy" | "m" | "mm" | "f90" | "jl" | "v" | "sv"
        | "vhd" | "glsl" | "hlsl" | "wgsl" | "cu" | "cuh" | "s" | "asm" | "awk" | "sed"
        | "csproj" | "sln" | "props" | "targets" | "plist" | "rss" | "svg" | "tmpl" | "tpl"
        | "j2" | "jinja" | "hbs" | "mustache" | "erb" | "haml" | "slim" | "pug"
        | "editorconfig" | "gitignore" => Language::Text,
        _ => return None,
    };
    Some(lang)
}

/// How qualified names are joined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Qualify {
    /// `Class.method`, `pkg.Func` (Python, JS, TS, Java, C#, Go).
    Dot,
    /// `Type::method`, `ns::func` (Rust, C++).
    Colons,
    /// `Mod::Class`, `Class#method`, `Class.singleton_method` (Ruby).
    Ruby,
}

impl Qualify {
    /// Separator between a container and a member of this kind.
    pub(crate) fn separator(self, kind: ChunkKind, singleton: bool) -> &'static str {
        match self {
            Qualify::Dot => ".",
            Qualify::Colons => "::",
            Qualify::Ruby => match (kind, singleton) {
                (ChunkKind::Method | ChunkKind::Function, true) => ".",
                (ChunkKind::Method | ChunkKind::Function, false) => "#",
                _ => "::",
            },
        }
    }

    /// Separator inside a written path (`@name.path` captures).
    pub(crate) fn path_separator(self) -> &'static str {
        match self {
            Qualify::Dot => ".",
            Qualify::Colons | Qualify::Ruby => "::",
        }
    }
}

/// Which comments preceding a definition count as its documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DocComments {
    /// Any comment block directly above the definition.
    Any,
    /// Only Rust outer doc comments (`///`, `/** */`); `//!` documents the
    /// enclosing module and a plain `//` comment ends the doc block.
    RustOuter,
}

/// What the generic extractor needs to know about one grammar.
pub(crate) struct Grammar {
    pub(crate) language: Language,
    ts_language: fn() -> tree_sitter::Language,
    /// Query sources, concatenated in order (earlier patterns win when two
    /// patterns capture the same node).
    query_sources: &'static [&'static str],
    pub(crate) qualify: Qualify,
    /// Container kinds that turn a nested `function` into a `method`.
    pub(crate) method_containers: &'static [ChunkKind],
    pub(crate) doc_comments: DocComments,
    /// The first string statement of a body is the doc (Python).
    pub(crate) docstrings: bool,
    /// Without a `@package` capture, top-level definitions are qualified by
    /// the file's directory name (Go packages).
    pub(crate) package_from_dir: bool,
    /// How many levels below the nearest enclosing definition (or the root)
    /// a definition may start. Definitions buried deeper inside expressions
    /// are rare, and walking every expression node would cost about as much
    /// as parsing.
    pub(crate) max_depth: u32,
    /// Whether functions may be defined inside functions. Where they may
    /// not (C, C++), such a "definition" is a misparse and is dropped.
    pub(crate) nested_functions: bool,
    /// Whether consecutive definitions of one name are one definition:
    /// the equations of a Haskell function, the clauses of an Elixir one.
    pub(crate) merge_clauses: bool,
    /// Lines turned into spaces before the parse (offsets kept), which
    /// the grammar would otherwise misread.
    pub(crate) blank: Blank,
}

/// Which lines a grammar parses as spaces (see `chunk::extract`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Blank {
    Nothing,
    /// C/C++ macro invocations a parser cannot expand
    /// (`extract::blank_macro_lines`).
    Macros,
    /// C#'s preprocessor directives (`extract::blank_directive_lines`).
    Directives,
}

const CLASS_LIKE: &[ChunkKind] = &[
    ChunkKind::Class,
    ChunkKind::Struct,
    ChunkKind::Enum,
    ChunkKind::Trait,
    ChunkKind::Interface,
    ChunkKind::Impl,
];

const CLASS_LIKE_AND_MODULE: &[ChunkKind] = &[
    ChunkKind::Class,
    ChunkKind::Struct,
    ChunkKind::Enum,
    ChunkKind::Trait,
    ChunkKind::Interface,
    ChunkKind::Impl,
    ChunkKind::Module,
];

/// See [`Grammar::max_depth`]: enough for `fn > block > if > block > fn`.
const DEFAULT_MAX_DEPTH: u32 = 5;
/// JavaScript hides modules in wrappers: `(function () { class A {} })()`
/// puts the class six levels below the program.
const ECMASCRIPT_MAX_DEPTH: u32 = 7;

const ECMASCRIPT_QUERY: &str = include_str!("queries/ecmascript.scm");
const TYPESCRIPT_QUERY: &str = include_str!("queries/typescript.scm");
const C_QUERY: &str = include_str!("queries/c.scm");

/// The common case; each grammar below names only what differs (its
/// language and `ts_language` are always given).
const PLAIN: Grammar = Grammar {
    language: Language::Text,
    ts_language: || tree_sitter_rust::LANGUAGE.into(),
    query_sources: &[],
    qualify: Qualify::Dot,
    method_containers: CLASS_LIKE,
    doc_comments: DocComments::Any,
    docstrings: false,
    package_from_dir: false,
    max_depth: DEFAULT_MAX_DEPTH,
    nested_functions: true,
    merge_clauses: false,
    blank: Blank::Nothing,
};

static GRAMMARS: [Grammar; 20] = [
    Grammar {
        language: Language::Rust,
        ts_language: || tree_sitter_rust::LANGUAGE.into(),
        query_sources: &[include_str!("queries/rust.scm")],
        qualify: Qualify::Colons,
        doc_comments: DocComments::RustOuter,
        ..PLAIN
    },
    Grammar {
        language: Language::Python,
        ts_language: || tree_sitter_python::LANGUAGE.into(),
        query_sources: &[include_str!("queries/python.scm")],
        qualify: Qualify::Dot,
        docstrings: true,
        ..PLAIN
    },
    Grammar {
        language: Language::JavaScript,
        ts_language: || tree_sitter_javascript::LANGUAGE.into(),
        query_sources: &[ECMASCRIPT_QUERY, include_str!("queries/javascript.scm")],
        qualify: Qualify::Dot,
        max_depth: ECMASCRIPT_MAX_DEPTH,
        ..PLAIN
    },
    Grammar {
        language: Language::TypeScript,
        ts_language: || tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        query_sources: &[ECMASCRIPT_QUERY, TYPESCRIPT_QUERY],
        qualify: Qualify::Dot,
        max_depth: ECMASCRIPT_MAX_DEPTH,
        ..PLAIN
    },
    Grammar {
        language: Language::Tsx,
        ts_language: || tree_sitter_typescript::LANGUAGE_TSX.into(),
        query_sources: &[ECMASCRIPT_QUERY, TYPESCRIPT_QUERY],
        qualify: Qualify::Dot,
        max_depth: ECMASCRIPT_MAX_DEPTH,
        ..PLAIN
    },
    Grammar {
        language: Language::Go,
        ts_language: || tree_sitter_go::LANGUAGE.into(),
        query_sources: &[include_str!("queries/go.scm")],
        qualify: Qualify::Dot,
        package_from_dir: true,
        ..PLAIN
    },
    Grammar {
        language: Language::Java,
        ts_language: || tree_sitter_java::LANGUAGE.into(),
        query_sources: &[include_str!("queries/java.scm")],
        qualify: Qualify::Dot,
        ..PLAIN
    },
    Grammar {
        language: Language::C,
        ts_language: || tree_sitter_c::LANGUAGE.into(),
        query_sources: &[C_QUERY],
        qualify: Qualify::Colons,
        nested_functions: false,
        blank: Blank::Macros,
        ..PLAIN
    },
    Grammar {
        language: Language::Cpp,
        ts_language: || tree_sitter_cpp::LANGUAGE.into(),
        query_sources: &[C_QUERY, include_str!("queries/cpp.scm")],
        qualify: Qualify::Colons,
        nested_functions: false,
        blank: Blank::Macros,
        ..PLAIN
    },
    Grammar {
        language: Language::CSharp,
        ts_language: || tree_sitter_c_sharp::LANGUAGE.into(),
        query_sources: &[include_str!("queries/csharp.scm")],
        qualify: Qualify::Dot,
        blank: Blank::Directives,
        ..PLAIN
    },
    Grammar {
        language: Language::Ruby,
        ts_language: || tree_sitter_ruby::LANGUAGE.into(),
        query_sources: &[include_str!("queries/ruby.scm")],
        qualify: Qualify::Ruby,
        method_containers: CLASS_LIKE_AND_MODULE,
        ..PLAIN
    },
    Grammar {
        language: Language::Kotlin,
        ts_language: || tree_sitter_kotlin_ng::LANGUAGE.into(),
        query_sources: &[include_str!("queries/kotlin.scm")],
        qualify: Qualify::Dot,
        method_containers: CLASS_LIKE_AND_MODULE,
        ..PLAIN
    },
    Grammar {
        language: Language::Scala,
        ts_language: || tree_sitter_scala::LANGUAGE.into(),
        query_sources: &[include_str!("queries/scala.scm")],
        qualify: Qualify::Dot,
        method_containers: CLASS_LIKE_AND_MODULE,
        ..PLAIN
    },
    Grammar {
        language: Language::Swift,
        ts_language: || tree_sitter_swift::LANGUAGE.into(),
        query_sources: &[include_str!("queries/swift.scm")],
        qualify: Qualify::Dot,
        ..PLAIN
    },
    Grammar {
        language: Language::Elixir,
        ts_language: || tree_sitter_elixir::LANGUAGE.into(),
        query_sources: &[include_str!("queries/elixir.scm")],
        qualify: Qualify::Dot,
        merge_clauses: true,
        ..PLAIN
    },
    Grammar {
        language: Language::Php,
        ts_language: || tree_sitter_php::LANGUAGE_PHP.into(),
        query_sources: &[include_str!("queries/php.scm")],
        qualify: Qualify::Colons,
        ..PLAIN
    },
    Grammar {
        language: Language::Lua,
        ts_language: || tree_sitter_lua::LANGUAGE.into(),
        query_sources: &[include_str!("queries/lua.scm")],
        qualify: Qualify::Dot,
        ..PLAIN
    },
    Grammar {
        language: Language::Bash,
        ts_language: || tree_sitter_bash::LANGUAGE.into(),
        query_sources: &[include_str!("queries/bash.scm")],
        qualify: Qualify::Dot,
        ..PLAIN
    },
    Grammar {
        language: Language::Haskell,
        ts_language: || tree_sitter_haskell::LANGUAGE.into(),
        query_sources: &[include_str!("queries/haskell.scm")],
        qualify: Qualify::Dot,
        merge_clauses: true,
        ..PLAIN
    },
    Grammar {
        language: Language::Zig,
        ts_language: || tree_sitter_zig::LANGUAGE.into(),
        query_sources: &[include_str!("queries/zig.scm")],
        qualify: Qualify::Dot,
        ..PLAIN
    },
];

/// What a query capture means to the extractor (see the capture
/// conventions in `chunk/mod.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    Definition { kind: ChunkKind, singleton: bool },
    Name,
    NamePath,
    NameDecl,
    NameTrait,
    Container,
    Package,
    Reparse,
    Comment,
    Attribute,
    Wrapper,
    Wrapped,
    Ignore,
}

impl Role {
    fn from_capture(name: &str) -> Result<Role, String> {
        let role = match name {
            "name" => Role::Name,
            "name.path" => Role::NamePath,
            "name.decl" => Role::NameDecl,
            "name.trait" => Role::NameTrait,
            "container" => Role::Container,
            "package" => Role::Package,
            "reparse" => Role::Reparse,
            "comment" => Role::Comment,
            "attribute" => Role::Attribute,
            "wrapper" => Role::Wrapper,
            "wrapped" => Role::Wrapped,
            _ if name.starts_with('_') => Role::Ignore,
            _ => {
                let rest = name
                    .strip_prefix("definition.")
                    .ok_or_else(|| format!("unknown capture @{name}"))?;
                let (kind, singleton) = match rest.strip_suffix(".singleton") {
                    Some(kind) => (kind, true),
                    None => (rest, false),
                };
                let kind = ChunkKind::from_name(kind)
                    .ok_or_else(|| format!("unknown kind in capture @{name}"))?;
                Role::Definition { kind, singleton }
            }
        };
        Ok(role)
    }
}

/// A grammar's compiled query with the role of each capture index.
pub(crate) struct Compiled {
    pub(crate) language: tree_sitter::Language,
    pub(crate) query: Query,
    pub(crate) roles: Vec<Role>,
    /// Indexed by node kind id: true where some pattern's root has that
    /// kind, so the query runs on such nodes only.
    pub(crate) root_kinds: Vec<bool>,
    /// Field id of `body`, where definitions keep their body.
    pub(crate) body_field: Option<std::num::NonZeroU16>,
}

impl Grammar {
    /// The grammar for a tree-sitter language; `None` for Markdown and Text.
    pub(crate) fn get(language: Language) -> Option<&'static Grammar> {
        GRAMMARS.iter().find(|g| g.language == language)
    }

    /// The compiled query, built on first use. `None` only if a query in
    /// `queries/` does not compile, which the unit tests rule out.
    pub(crate) fn compiled(&self) -> Option<&'static Compiled> {
        static COMPILED: [OnceLock<Option<Compiled>>; 20] = [const { OnceLock::new() }; 20];
        let index = GRAMMARS.iter().position(|g| g.language == self.language)?;
        COMPILED[index].get_or_init(|| self.compile().ok()).as_ref()
    }

    /// Compiles the query, reporting what is wrong with it.
    pub(crate) fn compile(&self) -> Result<Compiled, String> {
        let language = (self.ts_language)();
        let source = self.query_sources.concat();
        let query = Query::new(&language, &source).map_err(|e: QueryError| {
            format!(
                "{} query, row {}, column {}: {:?} {}",
                self.language.name(),
                e.row + 1,
                e.column,
                e.kind,
                e.message
            )
        })?;
        let roles = query
            .capture_names()
            .iter()
            .map(|name| Role::from_capture(name))
            .collect::<Result<Vec<_>, _>>()?;
        let body_field = language.field_id_for_name("body");
        let roots = pattern_roots(&source)?;
        let mut root_kinds = vec![false; language.node_kind_count()];
        for (id, slot) in root_kinds.iter_mut().enumerate() {
            let id = u16::try_from(id).unwrap_or(u16::MAX);
            *slot = language.node_kind_is_named(id)
                && language.node_kind_is_visible(id)
                && !language.node_kind_is_supertype(id)
                && language
                    .node_kind_for_id(id)
                    .is_some_and(|kind| roots.iter().any(|r| r == kind));
        }
        // A root that names no concrete node kind (a supertype, a typo)
        // would silently never match.
        for root in &roots {
            let found = root_kinds.iter().enumerate().any(|(id, &is_root)| {
                is_root
                    && language.node_kind_for_id(u16::try_from(id).unwrap_or(u16::MAX))
                        == Some(root)
            });
            if !found {
                return Err(format!(
                    "{} query: pattern root ({root}) is not a concrete node kind",
                    self.language.name()
                ));
            }
        }
        Ok(Compiled {
            language,
            query,
            roles,
            root_kinds,
            body_field,
        })
    }

    /// The grammars with a tree-sitter parser, for tests and benchmarks.
    #[cfg(test)]
    pub(crate) fn all() -> &'static [Grammar] {
        &GRAMMARS
    }
}

/// A tiny s-expression reader for query sources: enough to find the node
/// kind at the root of every pattern.
#[derive(Debug)]
enum Sexp<'a> {
    List(Vec<Sexp<'a>>),
    Alternation(Vec<Sexp<'a>>),
    Atom(&'a str),
}

fn read_sexps(source: &str) -> Result<Vec<Sexp<'_>>, String> {
    fn read_seq<'a>(
        source: &'a str,
        pos: &mut usize,
        close: Option<u8>,
    ) -> Result<Vec<Sexp<'a>>, String> {
        let bytes = source.as_bytes();
        let mut items = Vec::new();
        while *pos < bytes.len() {
            let c = bytes[*pos];
            match c {
                b';' => {
                    while *pos < bytes.len() && bytes[*pos] != b'\n' {
                        *pos += 1;
                    }
                }
                b'(' | b'[' => {
                    *pos += 1;
                    let close = if c == b'(' { b')' } else { b']' };
                    let inner = read_seq(source, pos, Some(close))?;
                    items.push(if c == b'(' {
                        Sexp::List(inner)
                    } else {
                        Sexp::Alternation(inner)
                    });
                }
                b')' | b']' => {
                    if Some(c) != close {
                        return Err(format!("unbalanced '{}' at byte {}", c as char, *pos));
                    }
                    *pos += 1;
                    return Ok(items);
                }
                b'"' => {
                    let start = *pos;
                    *pos += 1;
                    while *pos < bytes.len() && bytes[*pos] != b'"' {
                        *pos += if bytes[*pos] == b'\\' { 2 } else { 1 };
                    }
                    *pos = (*pos + 1).min(bytes.len());
                    items.push(Sexp::Atom(source.get(start..*pos).unwrap_or("\"")));
                }
                _ if c.is_ascii_whitespace() => *pos += 1,
                _ => {
                    let start = *pos;
                    while *pos < bytes.len()
                        && !b"()[]\" ;".contains(&bytes[*pos])
                        && !bytes[*pos].is_ascii_whitespace()
                    {
                        *pos += 1;
                    }
                    items.push(Sexp::Atom(source.get(start..*pos).unwrap_or("")));
                }
            }
        }
        match close {
            Some(c) => Err(format!("missing '{}'", c as char)),
            None => Ok(items),
        }
    }
    let mut pos = 0;
    read_seq(source, &mut pos, None)
}

/// The node kinds at the roots of a query's patterns. Errors on a pattern
/// whose root is a wildcard or an anonymous node, which would make the
/// query run on every node.
pub(crate) fn pattern_roots(source: &str) -> Result<Vec<String>, String> {
    fn roots_of(sexp: &Sexp<'_>, out: &mut Vec<String>) -> Result<(), String> {
        match sexp {
            Sexp::List(items) => match items.first() {
                Some(Sexp::Atom(kind)) if kind.starts_with('#') => Ok(()),
                Some(Sexp::Atom(kind)) if *kind == "_" || kind.starts_with('"') => {
                    Err(format!("pattern root ({kind}) matches too many nodes"))
                }
                Some(Sexp::Atom(kind)) => {
                    out.push((*kind).to_string());
                    Ok(())
                }
                // A group: `((pattern) (#predicate))`.
                Some(_) => items.iter().try_for_each(|item| match item {
                    Sexp::Atom(_) => Ok(()),
                    _ => roots_of(item, out),
                }),
                None => Err("empty pattern".to_string()),
            },
            Sexp::Alternation(items) => items.iter().try_for_each(|item| match item {
                Sexp::Atom(_) => Ok(()),
                _ => roots_of(item, out),
            }),
            Sexp::Atom(_) => Ok(()),
        }
    }
    let mut roots = Vec::new();
    for sexp in read_sexps(source)? {
        roots_of(&sexp, &mut roots)?;
    }
    roots.sort();
    roots.dedup();
    Ok(roots)
}
