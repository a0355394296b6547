//! Types shared by every stage that handles chunks: the language of a file,
//! the kind of a definition and the chunk record itself.
//! Never: parsing, I/O.

use std::fmt;

/// A language the walker recognises. Tree-sitter languages produce one chunk
/// per definition; the text languages are split by heading or line window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Language {
    Rust,
    Python,
    JavaScript,
    TypeScript,
    Tsx,
    Go,
    Java,
    C,
    Cpp,
    CSharp,
    Ruby,
    Markdown,
    /// Any other text file (TOML, YAML, JSON, plain text...).
    Text,
    // Appended after `Text`: `code()` is a position in `ALL`, kept stable.
    Kotlin,
    Scala,
    Swift,
    Elixir,
    Php,
    Lua,
    Bash,
    Haskell,
    Zig,
}

impl Language {
    pub const ALL: [Language; 22] = [
        Language::Rust,
        Language::Python,
        Language::JavaScript,
        Language::TypeScript,
        Language::Tsx,
        Language::Go,
        Language::Java,
        Language::C,
        Language::Cpp,
        Language::CSharp,
        Language::Ruby,
        Language::Markdown,
        Language::Text,
        Language::Kotlin,
        Language::Scala,
        Language::Swift,
        Language::Elixir,
        Language::Php,
        Language::Lua,
        Language::Bash,
        Language::Haskell,
        Language::Zig,
    ];

    /// Stable lowercase name used in JSON output and in the cache.
    pub fn name(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::JavaScript => "javascript",
            Language::TypeScript => "typescript",
            Language::Tsx => "tsx",
            Language::Go => "go",
            Language::Java => "java",
            Language::C => "c",
            Language::Cpp => "cpp",
            Language::CSharp => "csharp",
            Language::Ruby => "ruby",
            Language::Markdown => "markdown",
            Language::Text => "text",
            Language::Kotlin => "kotlin",
            Language::Scala => "scala",
            Language::Swift => "swift",
            Language::Elixir => "elixir",
            Language::Php => "php",
            Language::Lua => "lua",
            Language::Bash => "bash",
            Language::Haskell => "haskell",
            Language::Zig => "zig",
        }
    }

    pub fn from_name(name: &str) -> Option<Language> {
        Language::ALL.into_iter().find(|l| l.name() == name)
    }

    /// Stable one-byte code used by the on-disk format.
    pub fn code(self) -> u8 {
        Language::ALL.iter().position(|l| *l == self).unwrap_or(0) as u8
    }

    pub fn from_code(code: u8) -> Option<Language> {
        Language::ALL.get(code as usize).copied()
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a chunk defines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ChunkKind {
    Function,
    Method,
    Class,
    Struct,
    Enum,
    Trait,
    Interface,
    /// A Rust `impl` block (its members are chunks of their own).
    Impl,
    Module,
    Constant,
    Static,
    /// A module-level assignment / variable (`x = ...` in Python, `let x` at
    /// the top of a JS module, a global in C).
    Variable,
    /// A type alias or typedef.
    TypeAlias,
    Macro,
    /// A field, enum variant or property. Reserved for later issues.
    Field,
    /// A Markdown section (heading plus its text).
    Section,
    /// A window of lines from a text file without a grammar.
    Lines,
}

impl ChunkKind {
    pub const ALL: [ChunkKind; 17] = [
        ChunkKind::Function,
        ChunkKind::Method,
        ChunkKind::Class,
        ChunkKind::Struct,
        ChunkKind::Enum,
        ChunkKind::Trait,
        ChunkKind::Interface,
        ChunkKind::Impl,
        ChunkKind::Module,
        ChunkKind::Constant,
        ChunkKind::Static,
        ChunkKind::Variable,
        ChunkKind::TypeAlias,
        ChunkKind::Macro,
        ChunkKind::Field,
        ChunkKind::Section,
        ChunkKind::Lines,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ChunkKind::Function => "function",
            ChunkKind::Method => "method",
            ChunkKind::Class => "class",
            ChunkKind::Struct => "struct",
            ChunkKind::Enum => "enum",
            ChunkKind::Trait => "trait",
            ChunkKind::Interface => "interface",
            ChunkKind::Impl => "impl",
            ChunkKind::Module => "module",
            ChunkKind::Constant => "constant",
            ChunkKind::Static => "static",
            ChunkKind::Variable => "variable",
            ChunkKind::TypeAlias => "type",
            ChunkKind::Macro => "macro",
            ChunkKind::Field => "field",
            ChunkKind::Section => "section",
            ChunkKind::Lines => "lines",
        }
    }

    pub fn from_name(name: &str) -> Option<ChunkKind> {
        ChunkKind::ALL.into_iter().find(|k| k.name() == name)
    }

    pub fn code(self) -> u8 {
        ChunkKind::ALL.iter().position(|k| *k == self).unwrap_or(0) as u8
    }

    pub fn from_code(code: u8) -> Option<ChunkKind> {
        ChunkKind::ALL.get(code as usize).copied()
    }

    /// True for chunks that name a definition (as opposed to a text window).
    pub fn is_definition(self) -> bool {
        !matches!(self, ChunkKind::Section | ChunkKind::Lines)
    }

    /// True for a definition of the name it carries. An impl block,
    /// extension, instance or protocol implementation adds to a definition
    /// made elsewhere: it carries the name it implements, but it is not
    /// that name's definition, and ranks after it.
    pub fn defines_its_name(self) -> bool {
        self.is_definition() && self != ChunkKind::Impl
    }

    /// A definition with a body (a function, a type, a trait...), as
    /// opposed to a text window, an assignment or a constant.
    pub fn has_body(self) -> bool {
        matches!(
            self,
            ChunkKind::Function
                | ChunkKind::Method
                | ChunkKind::Class
                | ChunkKind::Struct
                | ChunkKind::Enum
                | ChunkKind::Trait
                | ChunkKind::Interface
                | ChunkKind::Impl
                | ChunkKind::Macro
        )
    }

    /// How a chunk of this kind named `qualified_name` is shown: the name
    /// itself, but `impl X` / `impl Trait for X` for an impl block, so it
    /// never looks like the type it implements.
    pub fn label(self, qualified_name: &str) -> String {
        match self {
            ChunkKind::Impl => format!("impl {qualified_name}"),
            _ => qualified_name.to_string(),
        }
    }
}

impl fmt::Display for ChunkKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One searchable unit: a definition (or a text section) with its full range.
///
/// Invariants: `byte_start <= byte_end <= file length`, both on char
/// boundaries; `1 <= start_line <= end_line`; lines are 1-based and
/// inclusive and agree with the byte range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub language: Language,
    pub kind: ChunkKind,
    /// The bare name (`lookup`), or the heading for a Markdown section, or
    /// `path:start-end` for a line window.
    pub name: String,
    /// Name with its containers (`GraphStore::lookup`, `Class.method`,
    /// `pkg.Func`); equal to `name` at top level.
    pub qualified_name: String,
    /// The enclosing definition's qualified name, if any.
    pub container: Option<String>,
    pub byte_start: u32,
    pub byte_end: u32,
    pub start_line: u32,
    pub end_line: u32,
    /// Where the name is written: 1-based line and UTF-16 column, so an
    /// editor opens the definition at its name, not at its doc comment or
    /// decorator. A chunk without a written name (a line window, a
    /// section) names its first line, column 0.
    pub name_line: u32,
    pub name_column: u32,
    /// The declaration line(s) up to the body (`pub fn lookup(&self, k: &str) -> Option<&Node>`).
    pub signature: String,
    /// The doc comment attached to the definition, comment markers stripped.
    pub doc: String,
}
