//! The generic tree-sitter extractor: parses a file, runs its language's
//! definition query and turns the captures into chunks.
//!
//! Everything language-specific comes from the query (what is a definition,
//! its name, comments, attributes, wrapper nodes, macro bodies to re-parse)
//! and from the small [`Grammar`] table (name separators, doc style).
//!
//! Speed: a tree cursor walks the tree and runs the query (with start depth
//! 0) only on nodes whose kind is the root of some pattern, and descends at
//! most [`Grammar::max_depth`] levels below the nearest definition, so the
//! expression trees inside function bodies are mostly skipped. Docs,
//! attributes and wrappers are attached by position (byte ranges of captured
//! nodes) rather than through `parent`/`prev_sibling`, which cost time
//! proportional to the number of siblings. Containers come from range
//! containment among the definitions.
//!
//! Error recovery around unexpanded C macros produces "definitions" that are
//! not: broken one-line declarations, functions named `if`, functions nested
//! in C functions. Those are dropped; everything else tree-sitter recovers
//! from a broken file is kept.
//!
//! Never: panic on any input, allocate per syntax node, or look at the file
//! system.

use std::cell::RefCell;

use rustc_hash::{FxHashMap, FxHashSet};
use tree_sitter::{Node, Parser, Point, QueryCursor, QueryMatch, Range, StreamingIterator, Tree};

use super::lang::{Blank, Compiled, DocComments, Grammar, Role};
use super::text::{clamp_to_char_boundary, collapse_whitespace};
use super::types::{Chunk, ChunkKind};

/// Longest signature kept, in characters.
const MAX_SIGNATURE_CHARS: usize = 300;
/// Longest doc kept, in characters.
const MAX_DOC_CHARS: usize = 2_000;
/// How deep item-level macro bodies are re-parsed (a macro in a macro...).
const MAX_MACRO_DEPTH: u32 = 4;
/// Most comment and attribute nodes attached above one definition.
const MAX_LEADING_EXTRAS: usize = 512;
/// Deepest nesting of definitions that each become a chunk: a definition
/// inside this many containers stays part of its ancestor's text. Each
/// byte of a file is then in at most `MAX_NESTING + 1` chunks and a
/// qualified name has at most that many parts, so a file of 20,000 nested
/// classes (a hostile or generated file) costs linear time and memory
/// instead of quadratic (every chunk repeating its inner text and its
/// containers' names). Real code nests far less deep.
pub(crate) const MAX_NESTING: usize = 16;

thread_local! {
    static PARSER: RefCell<Parser> = RefCell::new(Parser::new());
    static CURSOR: RefCell<QueryCursor> = RefCell::new(QueryCursor::new());
}

/// Knobs for [`extract`]; the defaults are what `chunk_file` uses.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Options {
    /// Re-parse the bodies of item-level Rust macro invocations.
    pub(crate) expand_macros: bool,
    /// Overrides [`Grammar::max_depth`] (`Some(u32::MAX)` walks every node).
    pub(crate) max_depth: Option<u32>,
    /// Split long leaf definitions into passage windows.
    pub(crate) passages: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            expand_macros: true,
            max_depth: None,
            passages: true,
        }
    }
}

/// Chunks one file with a grammar. `None` when the parser gives up (no
/// language, cancelled parse); the caller then falls back to line windows.
pub(crate) fn extract(
    grammar: &Grammar,
    path: &str,
    text: &str,
    options: Options,
) -> Option<Vec<Chunk>> {
    let compiled = grammar.compiled()?;
    // Same bytes at the same offsets, minus the lines the grammar would
    // misread, so names and ranges still come from `text`.
    let tree = match grammar.blank {
        Blank::Nothing => parse(compiled, text, None)?,
        Blank::Macros => parse(compiled, &blank_macro_lines(text), None)?,
        Blank::Directives => parse(compiled, &blank_directive_lines(text), None)?,
    };
    let mut extractor = Extractor {
        grammar,
        compiled,
        text,
        options,
        defs: Vec::new(),
        package: None,
    };
    extractor.collect(tree.root_node(), 0);
    Some(extractor.finish(path))
}

/// `text` with C#'s preprocessor directives (`#if`, `#else`, `#endif`,
/// `#region`, ...) turned into spaces, code on both sides of an `#if`
/// kept. The grammar reads a directive between members, but one inside a
/// declaration (`partial class JsonWriter` / `#if HAVE_ASYNC_DISPOSABLE` /
/// `: IAsyncDisposable` / `#endif` / `{`) makes it misread the class, and
/// its members come out inside a scope named after the symbol
/// (`Newtonsoft.Json.HAVE_ASYNC_DISPOSABLE.WriteTokenAsync`). Byte offsets
/// do not change.
pub(crate) fn blank_directive_lines(text: &str) -> std::borrow::Cow<'_, str> {
    let mut blank: Vec<(usize, usize)> = Vec::new();
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let content = line.trim_end_matches(['\n', '\r']);
        let indent = content.len() - content.trim_start().len();
        if content.trim_start().starts_with('#') {
            blank.push((line_start + indent, line_start + content.len()));
        }
        line_start += line.len();
    }
    // A directive line is replaced whole, so no character is cut.
    blank_ranges(text, &blank)
}

/// `text` with C/C++ macros a parser cannot expand turned into spaces:
/// a line that is only an all-caps identifier (`FMT_BEGIN_NAMESPACE`,
/// `ABSL_NAMESPACE_END`), and an all-caps identifier with an underscore
/// written before another word (`FMT_CONSTEXPR auto f()`, `UV_EXTERN int
/// uv_run(...)`, `if FMT_CONSTEXPR20 (cond)`). An unbalanced `namespace x {` hidden in a macro, or an
/// unknown word before a declaration, makes tree-sitter misread the rest
/// of the file and lose its definitions. Preprocessor lines are kept.
/// Byte offsets do not change, so names and ranges still come from `text`.
pub(crate) fn blank_macro_lines(text: &str) -> std::borrow::Cow<'_, str> {
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut blank: Vec<(usize, usize)> = Vec::new();
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if !trimmed.starts_with('#') {
            let mut i = 0;
            let b = line.as_bytes();
            while i < b.len() {
                if !is_word(b[i]) {
                    i += 1;
                    continue;
                }
                let start = i;
                while i < b.len() && is_word(b[i]) {
                    i += 1;
                }
                let word = &b[start..i];
                let macro_like = word.len() >= 4
                    && word[0].is_ascii_uppercase()
                    && word.contains(&b'_')
                    && word
                        .iter()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'_');
                if !macro_like {
                    continue;
                }
                let rest = &line[i..];
                let after = rest.trim_start_matches([' ', '\t']);
                let alone = line.trim() == std::str::from_utf8(word).unwrap_or("");
                let before_word = after.len() < rest.len()
                    && after
                        .as_bytes()
                        .first()
                        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_');
                // `if FMT_CONSTEXPR20 (cond)`: a macro for `constexpr`.
                let before = line[..start].trim_end();
                let after_if = after.starts_with('(')
                    && before.len() < start
                    && before.strip_suffix("if").is_some_and(|rest| {
                        !rest.ends_with(|c: char| c.is_alphanumeric() || c == '_')
                    });
                if alone || before_word || after_if {
                    blank.push((line_start + start, line_start + i));
                }
            }
        }
        line_start += line.len();
    }
    // Only ASCII word bytes are replaced.
    blank_ranges(text, &blank)
}

/// `text` with the byte ranges `blank` (on char boundaries) turned into
/// spaces: the same length, so offsets into it are offsets into `text`.
fn blank_ranges<'t>(text: &'t str, blank: &[(usize, usize)]) -> std::borrow::Cow<'t, str> {
    if blank.is_empty() {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = text.as_bytes().to_vec();
    for &(start, end) in blank {
        out[start..end].fill(b' ');
    }
    std::borrow::Cow::Owned(String::from_utf8(out).unwrap_or_else(|_| text.to_string()))
}

/// Parses `text` (or only `range` of it, keeping the original positions)
/// with this thread's parser.
fn parse(compiled: &Compiled, text: &str, range: Option<Range>) -> Option<Tree> {
    let run = |parser: &mut Parser| {
        parser.set_language(&compiled.language).ok()?;
        let ranges: &[Range] = match &range {
            Some(range) => std::slice::from_ref(range),
            None => &[],
        };
        parser.set_included_ranges(ranges).ok()?;
        parser.parse(text, None)
    };
    PARSER.with(|cell| match cell.try_borrow_mut() {
        Ok(mut parser) => run(&mut parser),
        Err(_) => run(&mut Parser::new()),
    })
}

/// Runs `f` with this thread's query cursor.
fn with_cursor<R>(f: impl FnOnce(&mut QueryCursor) -> R) -> R {
    CURSOR.with(|cell| match cell.try_borrow_mut() {
        Ok(mut cursor) => f(&mut cursor),
        Err(_) => f(&mut QueryCursor::new()),
    })
}

/// How a `@name` capture is turned into a name.
#[derive(Clone, Copy, PartialEq, Eq)]
enum NameMode {
    /// The text as written.
    Plain,
    /// A path (`A::B`, `a.b`): the last segment is the name, the rest an
    /// explicit container.
    Path,
    /// A C declarator: descend to the declared name, then as `Path`.
    Decl,
}

/// One definition match before deduplication.
struct Candidate<'t> {
    pattern: usize,
    node: Node<'t>,
    kind: ChunkKind,
    singleton: bool,
    name: Node<'t>,
    mode: NameMode,
    trait_name: Option<Node<'t>>,
    container: Option<Node<'t>>,
    /// The next candidate for the same definition node.
    next: Option<usize>,
}

/// A comment or attribute node, by position.
#[derive(Clone, Copy)]
struct Extra {
    start: usize,
    /// End, excluding a trailing line break.
    end: usize,
    row: usize,
    comment: bool,
}

/// A definition with its text fields, before containers are resolved.
struct RawDef {
    kind: ChunkKind,
    singleton: bool,
    /// Range of the definition node itself (for containment).
    core_start: usize,
    core_end: usize,
    byte_start: usize,
    byte_end: usize,
    start_line: u32,
    end_line: u32,
    /// 1-based line and UTF-16 column of the written name.
    name_line: u32,
    name_column: u32,
    name: String,
    /// The name members are qualified with, when it differs from `name`
    /// (`GraphStore` for `Display for GraphStore`).
    scope: Option<String>,
    explicit_container: Option<String>,
    signature: String,
    doc: String,
}

/// What the query found in one tree, before definitions are built.
#[derive(Default)]
struct Scan<'t> {
    candidates: Vec<Candidate<'t>>,
    /// Definition node id -> first index into `candidates`; further
    /// candidates for the same node (several names from one pattern, as in
    /// `const a, b = 1, 2`) follow through `Candidate::next`.
    by_node: FxHashMap<usize, usize>,
    /// Ids of all definition nodes seen.
    definitions: FxHashSet<usize>,
    extras: Vec<Extra>,
    /// Wrapper node id -> (node, distinct wrapped nodes, last wrapped id).
    wrappers: FxHashMap<usize, (Node<'t>, u32, usize)>,
    /// Wrapped node id -> wrapper node id.
    wrapped_by: FxHashMap<usize, usize>,
    reparse: Vec<Node<'t>>,
    package: Option<Node<'t>>,
}

impl<'t> Scan<'t> {
    /// Records one query match.
    fn add(&mut self, compiled: &Compiled, text: &str, m: &QueryMatch<'_, 't>) {
        let mut def = None;
        let mut name = None;
        let mut trait_name = None;
        let mut container = None;
        let mut wrapper = None;
        let mut wrapped = None;
        for capture in m.captures() {
            let node = capture.node;
            let role = compiled
                .roles
                .get(capture.index as usize)
                .copied()
                .unwrap_or(Role::Ignore);
            match role {
                Role::Definition { kind, singleton } => def = Some((node, kind, singleton)),
                Role::Name => name = Some((node, NameMode::Plain)),
                Role::NamePath => name = Some((node, NameMode::Path)),
                Role::NameDecl => name = Some((node, NameMode::Decl)),
                Role::NameTrait => trait_name = Some(node),
                Role::Container => container = Some(node),
                Role::Package => {
                    self.package.get_or_insert(node);
                }
                Role::Reparse => self.reparse.push(node),
                Role::Comment | Role::Attribute => self.extras.push(Extra {
                    start: node.start_byte(),
                    end: trim_line_break(text, node.start_byte(), node.end_byte()),
                    row: node.start_position().row,
                    comment: role == Role::Comment,
                }),
                Role::Wrapper => wrapper = Some(node),
                Role::Wrapped => wrapped = Some(node),
                Role::Ignore => {}
            }
        }
        if let (Some(wrapper), Some(wrapped)) = (wrapper, wrapped) {
            let entry = self
                .wrappers
                .entry(wrapper.id())
                .or_insert((wrapper, 0, usize::MAX));
            if entry.2 != wrapped.id() {
                entry.1 += 1;
                entry.2 = wrapped.id();
            }
            self.wrapped_by.insert(wrapped.id(), wrapper.id());
        }
        let (Some((node, kind, singleton)), Some((name, mode))) = (def, name) else {
            return;
        };
        self.definitions.insert(node.id());
        let candidate = Candidate {
            pattern: m.pattern_index,
            node,
            kind,
            singleton,
            name,
            mode,
            trait_name,
            container,
            next: None,
        };
        let index = self.candidates.len();
        let Some(&first) = self.by_node.get(&node.id()) else {
            self.by_node.insert(node.id(), index);
            self.candidates.push(candidate);
            return;
        };
        let existing = self.candidates[first].pattern;
        if candidate.pattern < existing {
            // An earlier pattern is more specific: it replaces what later
            // patterns captured for this node.
            let mut next = self.candidates[first].next;
            while let Some(i) = next {
                self.candidates[i].pattern = usize::MAX;
                next = self.candidates[i].next;
            }
            self.candidates[first] = candidate;
        } else if candidate.pattern == existing {
            let start = candidate.name.start_byte();
            let mut last = first;
            loop {
                if self.candidates[last].name.start_byte() == start {
                    return;
                }
                match self.candidates[last].next {
                    Some(next) => last = next,
                    None => break,
                }
            }
            self.candidates[last].next = Some(index);
            self.candidates.push(candidate);
        }
    }
}

struct Extractor<'a> {
    grammar: &'a Grammar,
    compiled: &'static Compiled,
    text: &'a str,
    options: Options,
    defs: Vec<RawDef>,
    package: Option<String>,
}

impl Extractor<'_> {
    /// Collects the definitions under `root` (and, for Rust, those hidden
    /// in item-level macro bodies).
    fn collect(&mut self, root: Node<'_>, depth: u32) {
        let text = self.text;
        let compiled = self.compiled;
        let max_depth = self.options.max_depth.unwrap_or(self.grammar.max_depth);
        let mut scan = Scan::default();
        with_cursor(|query_cursor| {
            query_cursor.set_max_start_depth(Some(0));
            // Walk the tree, running the query only on nodes whose kind
            // roots a pattern, and descending at most `max_depth` levels
            // below the nearest definition.
            let mut walk = root.walk();
            // Depths (relative to `root`) of the definitions on the path.
            let mut anchors: Vec<u32> = Vec::new();
            // The cursor's depth, kept here: `TreeCursor::depth` walks the
            // cursor's whole stack on every call (2% of a cold index, and
            // quadratic time on a file nested 20,000 deep: never call it,
            // not even in a debug assertion).
            let mut node_depth = 0u32;
            'walk: loop {
                let node = walk.node();
                while anchors.last().is_some_and(|&d| d >= node_depth) {
                    anchors.pop();
                }
                if compiled
                    .root_kinds
                    .get(usize::from(node.kind_id()))
                    .copied()
                    .unwrap_or(false)
                {
                    let mut matches = query_cursor.matches(&compiled.query, node, text.as_bytes());
                    while let Some(m) = matches.next() {
                        scan.add(compiled, text, m);
                    }
                }
                if scan.definitions.contains(&node.id()) {
                    anchors.push(node_depth);
                }
                let below = node_depth - anchors.last().copied().unwrap_or(0);
                if below < max_depth && walk.goto_first_child() {
                    node_depth += 1;
                    continue;
                }
                while !walk.goto_next_sibling() {
                    if !walk.goto_parent() {
                        break 'walk;
                    }
                    node_depth -= 1;
                }
            }
        });
        let Scan {
            candidates,
            extras,
            wrappers,
            wrapped_by,
            reparse,
            package,
            ..
        } = scan;

        if self.package.is_none() {
            if let Some(node) = package {
                let name = clean_type_name(node_text(text, node));
                if !name.is_empty() {
                    self.package = Some(name);
                }
            }
        }

        let mut extras = extras;
        extras.sort_unstable_by_key(|e| (e.start, std::cmp::Reverse(e.end)));
        // Drop extras nested in others (a comment inside an attribute).
        let mut last_end = 0;
        extras.retain(|e| {
            let keep = e.end > last_end;
            last_end = last_end.max(e.end);
            keep
        });

        let context = TreeContext {
            extras: &extras,
            wrappers: &wrappers,
            wrapped_by: &wrapped_by,
        };
        for candidate in candidates.iter().filter(|c| c.pattern != usize::MAX) {
            if let Some(def) = self.build(candidate, &context) {
                self.defs.push(def);
            }
        }

        if self.options.expand_macros && depth < MAX_MACRO_DEPTH {
            for node in reparse {
                self.reparse_macro(node, depth);
            }
        }
    }

    /// Re-parses the token tree of an item-level macro invocation as items.
    /// When the body is not items (`cfg_if! { if #[cfg(x)] { .. } else { .. } }`),
    /// its brace groups are tried instead.
    fn reparse_macro(&mut self, invocation: Node<'_>, depth: u32) {
        // The token tree is the invocation's last child.
        let count = invocation.child_count();
        let Some(tree) = count.checked_sub(1).and_then(|i| invocation.child(i)) else {
            return;
        };
        if tree.kind() != "token_tree" {
            return;
        }
        self.reparse_token_tree(tree, depth + 1);
    }

    fn reparse_token_tree(&mut self, token_tree: Node<'_>, depth: u32) {
        if depth > MAX_MACRO_DEPTH {
            return;
        }
        let Some(range) = token_tree_inner_range(self.text, token_tree) else {
            return;
        };
        if range.start_byte >= range.end_byte {
            return;
        }
        let Some(tree) = parse(self.compiled, self.text, Some(range)) else {
            return;
        };
        let root = tree.root_node();
        if !root.has_error() {
            self.collect(root, depth);
            return;
        }
        // Not items: try the nested brace groups that may hold items, like
        // the branches of `cfg_if!` after `if #[cfg(..)]` and `else`. Groups
        // after a name or a parameter list are the bodies of a declaration
        // (fields, statements), which are not items.
        let mut cursor = token_tree.walk();
        if cursor.goto_first_child() {
            let mut previous: Option<Node<'_>> = None;
            loop {
                let child = cursor.node();
                let is_brace_group = child.kind() == "token_tree"
                    && self.text.as_bytes().get(child.start_byte()) == Some(&b'{');
                let after_header = previous.is_some_and(|p| {
                    let token = node_text(self.text, p);
                    token == ")" || token == ">" || (p.kind() == "identifier" && token != "else")
                });
                if is_brace_group && !after_header {
                    self.reparse_token_tree(child, depth + 1);
                }
                previous = Some(child);
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
        }
    }

    /// Turns a candidate into a definition with range, name, signature and
    /// doc. `None` when it has no usable name.
    fn build(&self, c: &Candidate<'_>, context: &TreeContext<'_, '_>) -> Option<RawDef> {
        let text = self.text;
        let mut name_node = c.name;
        let (name, mut explicit_container) = match c.mode {
            NameMode::Plain => (collapse_whitespace(node_text(text, c.name), 200), None),
            NameMode::Path => self.split_path(node_text(text, c.name)),
            NameMode::Decl => {
                let (declared, from_function) = declared_name(c.name);
                if from_function && matches!(c.kind, ChunkKind::Variable | ChunkKind::Constant) {
                    // A function prototype, not a variable.
                    return None;
                }
                name_node = declared;
                self.split_path(node_text(text, declared))
            }
        };
        let (name_line, name_column) = name_point(text, name_node, &name);
        if name.is_empty() || is_reserved_word(&name) {
            return None;
        }
        if c.node.has_error()
            && matches!(
                c.kind,
                ChunkKind::Variable
                    | ChunkKind::Constant
                    | ChunkKind::Static
                    | ChunkKind::TypeAlias
            )
        {
            // A broken one-line declaration is most likely a misparse (a
            // C macro taken for a variable), not a definition.
            return None;
        }
        if let Some(node) = c.container {
            let container = clean_type_name(node_text(text, node));
            if !container.is_empty() {
                explicit_container = Some(container);
            }
        }
        let (name, scope) = match c.trait_name {
            Some(trait_node) => {
                let trait_name = collapse_whitespace(node_text(text, trait_node), 200);
                (format!("{trait_name} for {name}"), Some(name))
            }
            None => (name, None),
        };

        let outer = context.outer(c.node);
        let (byte_start, start_row, doc_extras) = context.leading(text, outer, self.grammar);
        let byte_end = outer.end_byte();
        let end_line = end_line(text, outer);

        let mut doc = String::new();
        if self.grammar.docstrings {
            doc = self.docstring(c.node);
        }
        if doc.is_empty() {
            doc = doc_text(text, doc_extras);
        }
        if doc.is_empty() && self.grammar.doc_comments == DocComments::RustOuter {
            doc = self.rust_inner_doc(c.node);
        }

        let signature = self.signature(c.node, outer, context);
        Some(RawDef {
            kind: c.kind,
            singleton: c.singleton,
            core_start: c.node.start_byte(),
            core_end: c.node.end_byte(),
            byte_start,
            byte_end,
            start_line: to_u32(start_row + 1),
            end_line: end_line.max(to_u32(start_row + 1)),
            name_line,
            name_column,
            name,
            scope,
            explicit_container,
            signature,
            doc,
        })
    }

    /// Splits a written path into (name, container): `A::B::f` -> (`f`, `A::B`).
    fn split_path(&self, raw: &str) -> (String, Option<String>) {
        let path = strip_generic_args(raw);
        let separator = self.grammar.qualify.path_separator();
        match path.rsplit_once(separator) {
            Some((container, name)) => {
                let container = container.trim();
                let container = (!container.is_empty()).then(|| container.to_string());
                (name.trim().to_string(), container)
            }
            None => (path.trim().to_string(), None),
        }
    }

    /// The declaration text from the first non-attribute token up to the
    /// body, whitespace collapsed.
    fn signature(&self, core: Node<'_>, outer: Node<'_>, context: &TreeContext<'_, '_>) -> String {
        let text = self.text;
        let start = context.skip_attributes(text, outer.start_byte(), outer.end_byte());
        let body = self
            .compiled
            .body_field
            .and_then(|field| core.child_by_field_id(field.get()));
        let end = match body {
            Some(body) if body.start_byte() > start => body.start_byte(),
            _ => {
                // No body: the rest of the first line.
                let limit = clamp_to_char_boundary(
                    text,
                    outer
                        .end_byte()
                        .min(start.saturating_add(MAX_SIGNATURE_CHARS * 4)),
                );
                let line = text.get(start..limit).unwrap_or("");
                start + line.find('\n').unwrap_or(line.len())
            }
        };
        // A comment between the header and the body is not signature.
        let end = context.first_comment_between(start, end).unwrap_or(end);
        let limit =
            clamp_to_char_boundary(text, end.min(start.saturating_add(MAX_SIGNATURE_CHARS * 4)));
        let raw = text.get(start..limit).unwrap_or("");
        let mut signature = collapse_whitespace(raw, MAX_SIGNATURE_CHARS);
        loop {
            let trimmed = signature
                .trim_end()
                .trim_end_matches(['{', ':', ';'])
                .trim_end();
            if trimmed.len() == signature.len() {
                break;
            }
            signature.truncate(trimmed.len());
        }
        signature
    }

    /// A Python docstring: the first statement of the body, if a string.
    fn docstring(&self, core: Node<'_>) -> String {
        let Some(body) = self
            .compiled
            .body_field
            .and_then(|field| core.child_by_field_id(field.get()))
        else {
            return String::new();
        };
        let mut cursor = body.walk();
        if !cursor.goto_first_child() {
            return String::new();
        }
        loop {
            let node = cursor.node();
            if node.kind() == "expression_statement" {
                return match node.named_child(0) {
                    Some(string) if string.kind() == "string" => {
                        clean_docstring(node_text(self.text, string))
                    }
                    _ => String::new(),
                };
            }
            if node.kind() != "comment" || !cursor.goto_next_sibling() {
                return String::new();
            }
        }
    }

    /// Inner doc comments (`//!`) at the top of a Rust module body.
    fn rust_inner_doc(&self, core: Node<'_>) -> String {
        let Some(body) = self
            .compiled
            .body_field
            .and_then(|field| core.child_by_field_id(field.get()))
        else {
            return String::new();
        };
        let mut lines = Vec::new();
        let mut cursor = body.walk();
        if cursor.goto_first_child() {
            while cursor.goto_next_sibling() {
                let node = cursor.node();
                let raw = node_text(self.text, node);
                if !node.kind().ends_with("comment")
                    || !(raw.starts_with("//!") || raw.starts_with("/*!"))
                {
                    break;
                }
                lines.push(raw);
            }
        }
        clean_comments(lines.into_iter())
    }

    /// Resolves containers and qualified names and produces the chunks.
    fn finish(self, path: &str) -> Vec<Chunk> {
        let grammar = self.grammar;
        let package = self
            .package
            .or_else(|| grammar.package_from_dir.then(|| dir_package(path)));
        let mut defs = self.defs;
        defs.sort_by_key(|d| (d.core_start, std::cmp::Reverse(d.core_end)));

        let mut chunks = Vec::with_capacity(defs.len());
        // Open containers: (core range, index into `chunks`, scope name).
        let mut stack: Vec<(usize, usize, usize, String)> = Vec::new();
        for def in defs {
            // Pop what does not strictly contain this definition (several
            // names declared together share one range and are siblings).
            while let Some((start, end, _, _)) = stack.last() {
                if *end >= def.core_end && (*start < def.core_start || *end > def.core_end) {
                    break;
                }
                stack.pop();
            }
            if stack.len() >= MAX_NESTING {
                continue;
            }
            let parent = stack
                .last()
                .map(|(_, _, i, scope)| (chunks_kind(&chunks, *i), scope.as_str()));
            let mut kind = def.kind;
            if !grammar.nested_functions
                && matches!(kind, ChunkKind::Function | ChunkKind::Method)
                && parent.is_some_and(|(k, _)| matches!(k, ChunkKind::Function | ChunkKind::Method))
            {
                // C has no nested functions: this is a statement that error
                // recovery (around an unexpanded macro) took for one.
                continue;
            }
            if kind == ChunkKind::Function
                && (def.explicit_container.is_some()
                    || parent.is_some_and(|(k, _)| grammar.method_containers.contains(&k)))
            {
                kind = ChunkKind::Method;
            }
            let separator = grammar.qualify.separator(kind, def.singleton);
            let container = match (parent, def.explicit_container) {
                (Some((_, scope)), Some(explicit)) => Some(format!(
                    "{scope}{}{explicit}",
                    grammar.qualify.path_separator()
                )),
                (None, Some(explicit)) => Some(explicit),
                (Some((_, scope)), None) => Some(scope.to_string()),
                (None, None) => package.clone(),
            };
            let qualify = |name: &str| match &container {
                Some(container) => format!("{container}{separator}{name}"),
                None => name.to_string(),
            };
            let qualified_name = qualify(&def.name);
            let scope = match &def.scope {
                Some(scope) => qualify(scope),
                None => qualified_name.clone(),
            };
            if grammar.merge_clauses {
                if let Some(last) = chunks.last_mut().filter(|last: &&mut Chunk| {
                    last.kind == kind
                        && last.qualified_name == qualified_name
                        && last.byte_end as usize <= def.byte_start
                }) {
                    // Another clause of the definition just before.
                    last.byte_end = to_u32(def.byte_end);
                    last.end_line = def.end_line;
                    continue;
                }
            }
            if is_container(kind) {
                stack.push((def.core_start, def.core_end, chunks.len(), scope));
            }
            chunks.push(Chunk {
                language: grammar.language,
                kind,
                name: def.name,
                qualified_name,
                container,
                byte_start: to_u32(def.byte_start),
                byte_end: to_u32(def.byte_end),
                start_line: def.start_line,
                end_line: def.end_line,
                name_line: def.name_line,
                name_column: def.name_column,
                signature: def.signature,
                doc: def.doc,
            });
        }
        chunks.sort_by_key(|c| (c.byte_start, std::cmp::Reverse(c.byte_end)));
        chunks
    }
}

fn chunks_kind(chunks: &[Chunk], index: usize) -> ChunkKind {
    chunks.get(index).map_or(ChunkKind::Module, |c| c.kind)
}

/// Kinds whose members are qualified by them.
fn is_container(kind: ChunkKind) -> bool {
    !matches!(
        kind,
        ChunkKind::TypeAlias
            | ChunkKind::Macro
            | ChunkKind::Field
            | ChunkKind::Section
            | ChunkKind::Lines
    )
}

/// Per-tree positional data: comments, attributes and wrappers.
struct TreeContext<'c, 't> {
    /// Sorted by start, non-overlapping.
    extras: &'c [Extra],
    wrappers: &'c FxHashMap<usize, (Node<'t>, u32, usize)>,
    wrapped_by: &'c FxHashMap<usize, usize>,
}

impl<'t> TreeContext<'_, 't> {
    /// The definition node extended to the wrappers that hold only it
    /// (`export`, decorators, a single-spec `const`, `template<...>`).
    fn outer(&self, node: Node<'t>) -> Node<'t> {
        let mut outer = node;
        for _ in 0..8 {
            let Some(wrapper) = self.wrapped_by.get(&outer.id()) else {
                break;
            };
            match self.wrappers.get(wrapper) {
                Some(&(wrapper, 1, _)) if wrapper.start_byte() <= outer.start_byte() => {
                    outer = wrapper
                }
                _ => break,
            }
        }
        outer
    }

    /// Start byte and row of the definition including the comments and
    /// attributes directly above it, and the doc comments among them.
    fn leading(
        &self,
        text: &str,
        outer: Node<'_>,
        grammar: &Grammar,
    ) -> (usize, usize, Vec<Extra>) {
        let mut start = outer.start_byte();
        let mut row = outer.start_position().row;
        let mut docs = Vec::new();
        if !starts_line(text, start) {
            return (start, row, docs);
        }
        let mut index = self.extras.partition_point(|e| e.end <= start);
        while index > 0 && docs.len() < MAX_LEADING_EXTRAS {
            index -= 1;
            let Some(&extra) = self.extras.get(index) else {
                break;
            };
            let gap = text.get(extra.end..start).unwrap_or("x");
            if !gap.bytes().all(|b| b.is_ascii_whitespace())
                || gap.bytes().filter(|&b| b == b'\n').count() > 1
            {
                break;
            }
            if !starts_line(text, extra.start) {
                break;
            }
            if extra.comment {
                let raw = text.get(extra.start..extra.end).unwrap_or("");
                if grammar.doc_comments == DocComments::RustOuter && !is_rust_outer_doc(raw) {
                    break;
                }
                docs.push(extra);
            }
            start = extra.start;
            row = extra.row;
        }
        docs.reverse();
        (start, row, docs)
    }

    /// Start of the first comment in `start..end`.
    fn first_comment_between(&self, start: usize, end: usize) -> Option<usize> {
        let index = self.extras.partition_point(|e| e.start < start);
        self.extras
            .get(index..)?
            .iter()
            .take_while(|e| e.start < end)
            .find(|e| e.comment)
            .map(|e| e.start)
    }

    /// The first position at or after `start` that is not whitespace, a
    /// comment or an attribute.
    fn skip_attributes(&self, text: &str, mut start: usize, end: usize) -> usize {
        let bytes = text.as_bytes();
        for _ in 0..MAX_LEADING_EXTRAS {
            while start < end && bytes.get(start).is_some_and(|b| b.is_ascii_whitespace()) {
                start += 1;
            }
            let index = self.extras.partition_point(|e| e.start < start);
            match self.extras.get(index) {
                Some(extra) if extra.start == start && extra.end < end => start = extra.end,
                _ => break,
            }
        }
        start
    }
}

/// The range strictly inside a token tree's delimiters.
fn token_tree_inner_range(text: &str, node: Node<'_>) -> Option<Range> {
    let bytes = text.as_bytes();
    let start = node.start_byte();
    let end = node.end_byte();
    let open = *bytes.get(start)?;
    let close = match open {
        b'{' => b'}',
        b'(' => b')',
        b'[' => b']',
        _ => return None,
    };
    let start_point = node.start_position();
    let end_point = node.end_position();
    let (inner_end, inner_end_point) = if end > start + 1 && bytes.get(end - 1) == Some(&close) {
        (
            end - 1,
            Point {
                row: end_point.row,
                column: end_point.column.saturating_sub(1),
            },
        )
    } else {
        (end, end_point)
    };
    Some(Range {
        start_byte: start + 1,
        end_byte: inner_end,
        start_point: Point {
            row: start_point.row,
            column: start_point.column + 1,
        },
        end_point: inner_end_point,
    })
}

/// Control keywords: no language lets a definition have these names, but
/// error recovery (around unexpanded C macros) can produce them.
fn is_reserved_word(name: &str) -> bool {
    matches!(
        name,
        "if" | "else" | "for" | "while" | "do" | "switch" | "case" | "return" | "sizeof" | "catch"
    )
}

/// Descends a C/C++ declarator to the declared name. The flag is true when
/// the name is declared by a function declarator (a prototype).
fn declared_name(node: Node<'_>) -> (Node<'_>, bool) {
    let mut node = node;
    let mut from_function = false;
    for _ in 0..64 {
        let next = node.child_by_field_name("declarator").or_else(|| {
            if node.kind().ends_with("declarator") {
                let count = node.named_child_count();
                count
                    .checked_sub(1)
                    .and_then(|i| node.named_child(i as u32))
            } else {
                None
            }
        });
        match next {
            Some(next) => {
                from_function = node.kind() == "function_declarator";
                node = next;
            }
            None => break,
        }
    }
    (node, from_function)
}

/// 1-based line and UTF-16 column where `name` is written inside the
/// name node: the last occurrence, so `A::B::f` points at `f`; the node's
/// start when the name is not spelled there (`Display for GraphStore`).
fn name_point(text: &str, node: Node<'_>, name: &str) -> (u32, u32) {
    let start = node.start_byte();
    let at = node_text(text, node)
        .rfind(name)
        .filter(|_| !name.is_empty())
        .map_or(start, |offset| start + offset);
    let at = if text.is_char_boundary(at) { at } else { start };
    let before = text.get(start..at).unwrap_or("");
    let row = node.start_position().row + before.matches('\n').count();
    let line = text.get(..at).unwrap_or("");
    let line = &line[line.rfind('\n').map_or(0, |i| i + 1)..];
    let column = line.encode_utf16().count();
    (to_u32(row + 1), to_u32(column))
}

fn node_text<'s>(text: &'s str, node: Node<'_>) -> &'s str {
    text.get(node.byte_range()).unwrap_or("")
}

/// `end`, moved back over a trailing line break.
fn trim_line_break(text: &str, start: usize, end: usize) -> usize {
    let bytes = text.as_bytes();
    let mut end = end;
    while end > start && matches!(bytes.get(end - 1), Some(b'\n' | b'\r')) {
        end -= 1;
    }
    end
}

/// True when only whitespace precedes `pos` on its line.
fn starts_line(text: &str, pos: usize) -> bool {
    let bytes = text.as_bytes();
    let mut i = pos.min(bytes.len());
    while i > 0 {
        match bytes[i - 1] {
            b'\n' => return true,
            b' ' | b'\t' | b'\r' | b'\x0c' => i -= 1,
            _ => return false,
        }
    }
    true
}

/// 1-based last line of a node; a node ending with a line break ends on
/// the line of that break.
fn end_line(text: &str, node: Node<'_>) -> u32 {
    let end = node.end_position();
    let ends_after_break = end.column == 0
        && node.end_byte() > node.start_byte()
        && text.as_bytes().get(node.end_byte() - 1) == Some(&b'\n');
    to_u32(if ends_after_break {
        end.row
    } else {
        end.row + 1
    })
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn is_rust_outer_doc(raw: &str) -> bool {
    (raw.starts_with("///") && !raw.starts_with("////"))
        || (raw.starts_with("/**") && !raw.starts_with("/***") && raw != "/**/")
}

/// The doc text of the comments above a definition.
fn doc_text(text: &str, docs: Vec<Extra>) -> String {
    clean_comments(docs.iter().map(|e| text.get(e.start..e.end).unwrap_or("")))
}

/// Strips comment markers and joins the lines.
fn clean_comments<'s>(comments: impl Iterator<Item = &'s str>) -> String {
    let mut lines: Vec<&str> = Vec::new();
    for comment in comments {
        if let Some(body) = comment.strip_prefix("/*") {
            let body = body.strip_suffix("*/").unwrap_or(body);
            let body = body.trim_start_matches(['*', '!']);
            for line in body.lines() {
                let line = line.trim_start();
                let line = match line.strip_prefix('*') {
                    Some(rest) => rest,
                    None => line,
                };
                lines.push(strip_one_space(line).trim_end());
            }
        } else {
            for line in comment.lines() {
                let line = line.trim_start();
                let line = line
                    .strip_prefix("///")
                    .or_else(|| line.strip_prefix("//!"))
                    .or_else(|| line.strip_prefix("//"))
                    .or_else(|| line.strip_prefix('#'))
                    .or_else(|| line.strip_prefix("<!--").map(|l| l.trim_end_matches("-->")))
                    .unwrap_or(line);
                lines.push(strip_one_space(line).trim_end());
            }
        }
    }
    let doc = finish_doc(&lines);
    if doc.contains("summary>") {
        // C# XML docs wrap the text in <summary>; the tags carry no meaning.
        let stripped = doc.replace("<summary>", "").replace("</summary>", "");
        let lines: Vec<&str> = stripped.lines().map(str::trim).collect();
        return finish_doc(&lines);
    }
    doc
}

fn strip_one_space(line: &str) -> &str {
    line.strip_prefix(' ').unwrap_or(line)
}

/// A Python docstring without quotes and common indentation.
fn clean_docstring(raw: &str) -> String {
    let body = raw.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let body = ["\"\"\"", "'''", "\"", "'"]
        .iter()
        .find_map(|q| body.strip_prefix(q).map(|b| b.strip_suffix(q).unwrap_or(b)))
        .unwrap_or(body);
    let mut lines: Vec<&str> = body.lines().collect();
    let indent = lines
        .iter()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    for (i, line) in lines.iter_mut().enumerate() {
        *line = if i == 0 {
            line.trim()
        } else {
            line.get(indent..).unwrap_or(line.trim_start()).trim_end()
        };
    }
    finish_doc(&lines)
}

/// Joins doc lines, dropping blank lines at both ends, capped in length.
fn finish_doc(lines: &[&str]) -> String {
    let first = lines
        .iter()
        .position(|l| !l.is_empty())
        .unwrap_or(lines.len());
    let last = lines
        .iter()
        .rposition(|l| !l.is_empty())
        .map_or(first, |i| i + 1);
    let mut doc = lines.get(first..last).unwrap_or(&[]).join("\n");
    if doc.len() > MAX_DOC_CHARS {
        let cut = clamp_to_char_boundary(&doc, MAX_DOC_CHARS);
        doc.truncate(cut);
    }
    doc
}

/// `Foo<T>::bar` -> `Foo::bar`: drops `<...>` groups.
fn strip_generic_args(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut depth = 0usize;
    for c in raw.chars() {
        match c {
            '<' => depth += 1,
            '>' if depth > 0 => depth -= 1,
            _ if depth == 0 && !c.is_whitespace() => out.push(c),
            _ => {}
        }
    }
    out
}

/// A receiver or scope type reduced to its name: `*Store[T]` -> `Store`.
fn clean_type_name(raw: &str) -> String {
    let stripped = strip_generic_args(raw);
    let name = stripped.trim_start_matches(['*', '&']);
    let name = name.split('[').next().unwrap_or(name);
    name.to_string()
}

/// Go package fallback: the file's directory name.
fn dir_package(path: &str) -> String {
    let dir = path.rsplit_once('/').map_or("", |(dir, _)| dir);
    let name = dir.rsplit('/').next().unwrap_or("");
    if name.is_empty() {
        "main".to_string()
    } else {
        name.to_string()
    }
}
