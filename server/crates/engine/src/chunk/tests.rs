//! Unit tests for the chunker: data-driven per-language cases, the polyglot
//! fixture against its golden file, and robustness on odd input.

use super::*;
use extract::Options;
use lang::Grammar;

/// Asserts the invariants every chunk must satisfy for `text`.
fn assert_invariants(text: &str, chunks: &[Chunk]) {
    let mut previous: Option<(u32, u32)> = None;
    for c in chunks {
        let (start, end) = (c.byte_start as usize, c.byte_end as usize);
        assert!(
            start <= end && end <= text.len(),
            "range {start}..{end} of {}",
            text.len()
        );
        assert!(
            text.is_char_boundary(start) && text.is_char_boundary(end),
            "{c:?}"
        );
        assert!(1 <= c.start_line && c.start_line <= c.end_line, "{c:?}");
        let start_line = 1 + text.as_bytes()[..start]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        assert_eq!(c.start_line as usize, start_line, "start line of {c:?}");
        let last = if end > start { end - 1 } else { start };
        let end_line = 1 + text.as_bytes()[..last.min(text.len())]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        assert_eq!(c.end_line as usize, end_line, "end line of {c:?}");
        if let Some(container) = &c.container {
            assert!(c.qualified_name.starts_with(container.as_str()), "{c:?}");
        }
        assert!(!c.name.is_empty(), "{c:?}");
        assert!(c.signature.chars().count() <= 300, "{c:?}");
        let key = (c.byte_start, u32::MAX - c.byte_end);
        if let Some(prev) = previous {
            assert!(prev <= key, "chunks out of order at {c:?}");
        }
        previous = Some(key);
    }
}

/// Chunks `source` and compares the definitions, in output order, with
/// `expect`: (kind, qualified name, start line, end line).
#[track_caller]
fn check(language: Language, source: &str, expect: &[(&str, &str, u32, u32)]) {
    let chunks = chunk_file("src/test_file", source, language);
    assert_invariants(source, &chunks);
    // Gap windows (text outside definitions) are checked only by the cases
    // that expect `lines` chunks.
    let with_lines = expect.iter().any(|e| e.0 == "lines");
    let got: Vec<(&str, &str, u32, u32)> = chunks
        .iter()
        .filter(|c| with_lines || c.kind != ChunkKind::Lines)
        .map(|c| {
            (
                c.kind.name(),
                c.qualified_name.as_str(),
                c.start_line,
                c.end_line,
            )
        })
        .collect();
    if got != expect {
        print_chunks(&chunks);
        panic!("\n got: {got:?}\nwant: {expect:?}");
    }
}

/// The chunk with this qualified name.
#[track_caller]
fn find<'c>(chunks: &'c [Chunk], qualified_name: &str) -> &'c Chunk {
    chunks
        .iter()
        .find(|c| c.qualified_name == qualified_name)
        .unwrap_or_else(|| {
            print_chunks(chunks);
            panic!("no chunk {qualified_name}")
        })
}

/// Checks the signature and doc of one definition.
#[track_caller]
fn check_fields(
    language: Language,
    source: &str,
    qualified_name: &str,
    signature: &str,
    doc: &str,
) {
    let chunks = chunk_file("src/test_file", source, language);
    let chunk = find(&chunks, qualified_name);
    assert_eq!(chunk.signature, signature, "signature of {qualified_name}");
    assert_eq!(chunk.doc, doc, "doc of {qualified_name}");
}

fn print_chunks(chunks: &[Chunk]) {
    for c in chunks {
        println!(
            "{}\t{}\t{}\t{}\t{}\t{}\t[{:?}]\tdoc={:?}",
            c.kind.name(),
            c.name,
            c.qualified_name,
            c.container.as_deref().unwrap_or("-"),
            c.start_line,
            c.end_line,
            c.signature,
            c.doc
        );
    }
}

/// Prints the chunks of `CHUNK_FILE` (a debugging aid).
#[test]
fn dump_env() {
    let Ok(file) = std::env::var("CHUNK_FILE") else {
        return;
    };
    let text = std::fs::read_to_string(&file).expect("readable file");
    let lang = detect_language(std::path::Path::new(&file)).expect("known language");
    print_chunks(&chunk_file(&file, &text, lang));
}

#[test]
fn queries_compile() {
    for grammar in Grammar::all() {
        if let Err(e) = grammar.compile() {
            panic!("{e}");
        }
    }
}

// ---------------------------------------------------------------- Rust

#[test]
fn rust_items_and_impls() {
    check(
        Language::Rust,
        "/// A store.\n#[derive(Debug)]\npub struct Store {\n    x: u32,\n}\n\nimpl Store {\n    /// Finds.\n    pub fn lookup(&self) {}\n}\n\nimpl fmt::Display for Store {\n    fn fmt(&self) {}\n}\n",
        &[
            ("struct", "Store", 1, 5),
            ("impl", "Store", 7, 10),
            ("method", "Store::lookup", 8, 9),
            ("impl", "Display for Store", 12, 14),
            ("method", "Store::fmt", 13, 13),
        ],
    );
}

#[test]
fn rust_generic_and_odd_impls() {
    check(
        Language::Rust,
        "impl<T> Wrapper<T> { fn a() {} }\nimpl<'a> From<&'a str> for Name<'a> { fn from() {} }\nimpl Trait for [u8] {}\nimpl crate::x::Thing {}\n",
        &[
            ("impl", "Wrapper", 1, 1),
            ("method", "Wrapper::a", 1, 1),
            ("impl", "From<&'a str> for Name", 2, 2),
            ("method", "Name::from", 2, 2),
            ("impl", "Trait for [u8]", 3, 3),
            ("impl", "Thing", 4, 4),
        ],
    );
}

#[test]
fn rust_traits_modules_consts() {
    check(
        Language::Rust,
        "pub trait Lookup {\n    fn get(&self);\n    fn has(&self) -> bool { true }\n}\nmod a {\n    mod b {\n        fn f() {}\n    }\n    const C: u8 = 1;\n    static S: u8 = 2;\n    type T = u8;\n    enum E { X }\n    union U { a: u8 }\n}\nmacro_rules! m { () => {} }\n",
        &[
            ("trait", "Lookup", 1, 4),
            ("method", "Lookup::get", 2, 2),
            ("method", "Lookup::has", 3, 3),
            ("module", "a", 5, 14),
            ("module", "a::b", 6, 8),
            ("function", "a::b::f", 7, 7),
            ("constant", "a::C", 9, 9),
            ("static", "a::S", 10, 10),
            ("type", "a::T", 11, 11),
            ("enum", "a::E", 12, 12),
            ("struct", "a::U", 13, 13),
            ("macro", "m", 15, 15),
        ],
    );
}

#[test]
fn rust_item_macros_are_reparsed() {
    check(
        Language::Rust,
        "cfg_rt! {\n    /// Spawns.\n    pub fn spawn_blocking() {}\n}\nthread_local! {\n    static COUNT: Cell<u32> = Cell::new(0);\n}\n",
        &[("function", "spawn_blocking", 2, 3), ("static", "COUNT", 6, 6)],
    );
}

#[test]
fn rust_cfg_if_branches_are_reparsed() {
    check(
        Language::Rust,
        "cfg_if::cfg_if! {\n    if #[cfg(unix)] {\n        fn a() {}\n    } else if #[cfg(windows)] {\n        fn b() {}\n    } else {\n        cfg_rt! { fn c() {} }\n    }\n}\n",
        &[("function", "a", 3, 3), ("function", "b", 5, 5), ("function", "c", 7, 7)],
    );
}

#[test]
fn rust_macros_in_impls_and_mods() {
    check(
        Language::Rust,
        "impl Runtime {\n    cfg_rt! {\n        pub fn block_on(&self) {}\n    }\n}\nmod m {\n    impl_ops! { impl Add for V { fn add(self) {} } }\n}\n",
        &[
            ("impl", "Runtime", 1, 5),
            ("method", "Runtime::block_on", 3, 3),
            ("module", "m", 6, 8),
            ("impl", "m::Add for V", 7, 7),
            ("method", "m::V::add", 7, 7),
        ],
    );
}

#[test]
fn rust_macro_rules_bodies_are_not_reparsed() {
    check(
        Language::Rust,
        "macro_rules! make {\n    ($name:ident) => {\n        fn $name() {}\n        fn fixed() {}\n    };\n}\nnot_items! { a + b, c }\n",
        &[("macro", "make", 1, 6)],
    );
}

#[test]
fn rust_docs_attributes_signatures() {
    let source = "//! Crate docs.\n\n/// Looks up a node.\n///\n/// Second paragraph.\n#[inline]\n#[must_use]\npub fn lookup<'a>(\n    store: &'a Store,\n    key: &str,\n) -> Option<&'a Node> {\n    None\n}\n\n// Not a doc.\nfn plain() {}\n\n/** Block doc. */\nstruct B;\n\n/// Doc.\n// Plain comment ends the doc block.\nfn c() {}\n";
    check(
        Language::Rust,
        source,
        &[
            ("function", "lookup", 3, 13),
            ("function", "plain", 16, 16),
            ("struct", "B", 18, 19),
            ("function", "c", 23, 23),
        ],
    );
    check_fields(
        Language::Rust,
        source,
        "lookup",
        "pub fn lookup<'a>( store: &'a Store, key: &str, ) -> Option<&'a Node>",
        "Looks up a node.\n\nSecond paragraph.",
    );
    check_fields(Language::Rust, source, "plain", "fn plain()", "");
    check_fields(Language::Rust, source, "B", "struct B", "Block doc.");
}

#[test]
fn rust_module_inner_docs() {
    check_fields(
        Language::Rust,
        "mod walk {\n    //! Graph walks.\n    //! Breadth first.\n    fn bfs() {}\n}\n",
        "walk",
        "mod walk",
        "Graph walks.\nBreadth first.",
    );
}

#[test]
fn rust_error_string_is_in_the_range() {
    let source = "impl Lookup for GraphStore {\n    fn lookup(&self) {\n        self.nodes.lock().expect(\"graph_store mutex poisoned\");\n    }\n}\n";
    let chunks = chunk_file("a.rs", source, Language::Rust);
    let chunk = find(&chunks, "GraphStore::lookup");
    let body = &source[chunk.byte_start as usize..chunk.byte_end as usize];
    assert!(body.contains("graph_store mutex poisoned"));
    assert_eq!(chunk.container.as_deref(), Some("GraphStore"));
}

// ---------------------------------------------------------------- Python

#[test]
fn python_classes_methods_nesting() {
    check(
        Language::Python,
        "class Outer:\n    class Inner:\n        def method(self):\n            def helper():\n                pass\n\n    async def run(self):\n        pass\n\ndef top():\n    pass\n",
        &[
            ("class", "Outer", 1, 8),
            ("class", "Outer.Inner", 2, 5),
            ("method", "Outer.Inner.method", 3, 5),
            ("function", "Outer.Inner.method.helper", 4, 5),
            ("method", "Outer.run", 7, 8),
            ("function", "top", 10, 11),
        ],
    );
}

#[test]
fn python_module_assignments() {
    check(
        Language::Python,
        "MAX_RETRIES = 3\n_PRIVATE_LIMIT = 4\nlogger = get_logger()\nx: int = 5\na, b = 1, 2\ntype Alias = list[int]\ndef f():\n    LOCAL = 1\n",
        &[
            ("constant", "MAX_RETRIES", 1, 1),
            ("constant", "_PRIVATE_LIMIT", 2, 2),
            ("variable", "logger", 3, 3),
            ("variable", "x", 4, 4),
            ("type", "Alias", 6, 6),
            ("function", "f", 7, 8),
        ],
    );
}

#[test]
fn python_decorators_and_docstrings() {
    let source = "# Retries things.\n@dataclass(frozen=True)\nclass RetryPolicy:\n    \"\"\"How long to wait.\n\n    Second line.\n    \"\"\"\n\n    @property\n    def backoff(self) -> float:\n        '''Delay before the next attempt.'''\n        return 1.0\n";
    check(
        Language::Python,
        source,
        &[
            ("class", "RetryPolicy", 1, 12),
            ("method", "RetryPolicy.backoff", 9, 12),
        ],
    );
    check_fields(
        Language::Python,
        source,
        "RetryPolicy",
        "class RetryPolicy",
        "How long to wait.\n\nSecond line.",
    );
    check_fields(
        Language::Python,
        source,
        "RetryPolicy.backoff",
        "def backoff(self) -> float",
        "Delay before the next attempt.",
    );
}

// ---------------------------------------------------------------- JavaScript / TypeScript

#[test]
fn javascript_definitions() {
    check(
        Language::JavaScript,
        "const MAX = 1;\nlet count = 0, total = 0;\nvar legacy;\nconst add = (a, b) => a + b;\nfunction* gen() {}\nclass Cache extends Base {\n  static create() {}\n  #evict() {}\n  get size() { return 0; }\n}\nexport default function main() {}\nexport const Widget = class {};\nCache.prototype.clear = function () {};\nfunction outer() {\n  function inner() {}\n  const local = 1;\n}\n",
        &[
            ("constant", "MAX", 1, 1),
            ("variable", "count", 2, 2),
            ("variable", "total", 2, 2),
            ("variable", "legacy", 3, 3),
            ("function", "add", 4, 4),
            ("function", "gen", 5, 5),
            ("class", "Cache", 6, 10),
            ("method", "Cache.create", 7, 7),
            ("method", "Cache.#evict", 8, 8),
            ("method", "Cache.size", 9, 9),
            ("function", "main", 11, 11),
            ("class", "Widget", 12, 12),
            ("method", "Cache.prototype.clear", 13, 13),
            ("function", "outer", 14, 17),
            ("function", "outer.inner", 15, 15),
        ],
    );
}

#[test]
fn javascript_class_fields_and_object_methods() {
    check(
        Language::JavaScript,
        "class Button extends Component {\n  handleClick = () => {\n    this.go();\n  };\n  label = 'x';\n}\nconst api = {\n  get(id) {},\n};\n",
        &[
            ("class", "Button", 1, 6),
            ("method", "Button.handleClick", 2, 4),
            ("constant", "api", 7, 9),
            ("method", "api.get", 8, 8),
        ],
    );
    check(
        Language::TypeScript,
        "class Button {\n  private onClick = (e: Event): void => {};\n}\n",
        &[
            ("class", "Button", 1, 3),
            ("method", "Button.onClick", 2, 2),
        ],
    );
}

#[test]
fn javascript_iife_module() {
    check(
        Language::JavaScript,
        "(function (root) {\n  /** A store. */\n  class Store {\n    get(k) {}\n  }\n  root.Store = Store;\n})(this);\n",
        &[("class", "Store", 2, 5), ("method", "Store.get", 4, 4)],
    );
}

#[test]
fn javascript_docs_and_signatures() {
    let source = "/**\n * Normalises a key.\n * @param {string} k\n */\nexport function hashKey(k) {\n  return k;\n}\n";
    check(
        Language::JavaScript,
        source,
        &[("function", "hashKey", 1, 7)],
    );
    check_fields(
        Language::JavaScript,
        source,
        "hashKey",
        "export function hashKey(k)",
        "Normalises a key.\n@param {string} k",
    );
}

#[test]
fn typescript_definitions() {
    check(
        Language::TypeScript,
        "export interface Options {\n  retries: number;\n  delay(n: number): number;\n}\ntype Id = string;\nenum Color { Red }\nexport abstract class Base {\n  abstract run(): void;\n  @log\n  handle(): void {}\n}\nnamespace A.B {\n  export const X = 1;\n  export function f() {}\n}\ndeclare function g(x: number): void;\nexport const DEFAULT = 5;\n",
        &[
            ("interface", "Options", 1, 4),
            ("method", "Options.delay", 3, 3),
            ("type", "Id", 5, 5),
            ("enum", "Color", 6, 6),
            ("class", "Base", 7, 11),
            ("method", "Base.run", 8, 8),
            ("method", "Base.handle", 9, 10),
            ("module", "A.B", 12, 15),
            ("constant", "A.B.X", 13, 13),
            ("function", "A.B.f", 14, 14),
            ("function", "g", 16, 16),
            ("constant", "DEFAULT", 17, 17),
        ],
    );
}

#[test]
fn typescript_decorated_class() {
    let source = "/** A component. */\n@Component({ selector: 'x' })\nexport class Badge {\n  @Input() state = 'ok';\n  render(): string { return ''; }\n}\n";
    check(
        Language::TypeScript,
        source,
        &[("class", "Badge", 1, 6), ("method", "Badge.render", 5, 5)],
    );
    check_fields(
        Language::TypeScript,
        source,
        "Badge",
        "export class Badge",
        "A component.",
    );
}

#[test]
fn tsx_components() {
    check(
        Language::Tsx,
        "export function Badge({ state }: Props) {\n  return <span>{state}</span>;\n}\nexport const Button = () => <button />;\n",
        &[("function", "Badge", 1, 3), ("function", "Button", 4, 4)],
    );
}

// ---------------------------------------------------------------- Go

#[test]
fn go_definitions() {
    check(
        Language::Go,
        "package store\n\n// Store holds nodes.\ntype Store struct{ n int }\n\ntype (\n\tReader interface{ Read() }\n\tID = int\n\tCount int\n)\n\nconst Max = 3\n\nvar (\n\tA = 1\n\tB, C = 2, 3\n)\n\n// Get returns a node.\nfunc (s *Store) Get(id ID) int { return 0 }\n\nfunc (s Stack[T]) Push(v T) {}\n\nfunc New() *Store { return nil }\n",
        &[
            ("struct", "store.Store", 3, 4),
            ("interface", "store.Reader", 7, 7),
            ("type", "store.ID", 8, 8),
            ("type", "store.Count", 9, 9),
            ("constant", "store.Max", 12, 12),
            ("variable", "store.A", 15, 15),
            ("variable", "store.B", 16, 16),
            ("variable", "store.C", 16, 16),
            ("method", "Store.Get", 19, 20),
            ("method", "Stack.Push", 22, 22),
            ("function", "store.New", 24, 24),
        ],
    );
}

#[test]
fn go_package_falls_back_to_directory() {
    let chunks = chunk_file("internal/cache/lru.go", "func Get() {}\n", Language::Go);
    assert_eq!(chunks[0].qualified_name, "cache.Get");
    assert_eq!(chunks[0].container.as_deref(), Some("cache"));
}

// ---------------------------------------------------------------- Java

#[test]
fn java_definitions() {
    check(
        Language::Java,
        "package a.b;\n\n/** A bus. */\n@Singleton\npublic class Bus {\n    public static final int MAX = 64;\n    static final String A = \"a\", B = \"b\";\n    private int count;\n\n    public Bus() {}\n\n    @Override\n    public String toString() { return \"\"; }\n\n    interface Handler { void handle(); int LIMIT = 3; }\n\n    enum Mode { ON, OFF; void flip() {} }\n\n    record Point(int x, int y) {}\n}\n",
        &[
            ("class", "Bus", 3, 20),
            ("constant", "Bus.MAX", 6, 6),
            ("constant", "Bus.A", 7, 7),
            ("constant", "Bus.B", 7, 7),
            ("method", "Bus.Bus", 10, 10),
            ("method", "Bus.toString", 12, 13),
            ("interface", "Bus.Handler", 15, 15),
            ("method", "Bus.Handler.handle", 15, 15),
            ("constant", "Bus.Handler.LIMIT", 15, 15),
            ("enum", "Bus.Mode", 17, 17),
            ("method", "Bus.Mode.flip", 17, 17),
            ("class", "Bus.Point", 19, 19),
        ],
    );
    check_fields(
        Language::Java,
        "class A {\n    /** Runs. */\n    @Override\n    public void run() {}\n}\n",
        "A.run",
        "public void run()",
        "Runs.",
    );
}

// ---------------------------------------------------------------- C / C++

#[test]
fn c_definitions() {
    check(
        Language::C,
        "#define LIMIT 10\n#define MAX(a, b) ((a) > (b) ? (a) : (b))\ntypedef struct node { int v; } node_t;\ntypedef void (*callback_t)(int);\nstruct fwd;\nenum color { RED };\nunion u { int a; };\nint counter = 0;\nstatic const char *names[] = { \"a\" };\nint prototype(int);\nchar *pointer_proto(void);\nstatic char *find(const char *s) { return 0; }\nint main(void) { int local = 1; return local; }\n",
        &[
            ("constant", "LIMIT", 1, 1),
            ("macro", "MAX", 2, 2),
            ("type", "node_t", 3, 3),
            ("struct", "node", 3, 3),
            ("type", "callback_t", 4, 4),
            ("enum", "color", 6, 6),
            ("struct", "u", 7, 7),
            ("variable", "counter", 8, 8),
            ("variable", "names", 9, 9),
            ("function", "find", 12, 12),
            ("function", "main", 13, 13),
        ],
    );
}

#[test]
fn c_macro_misparses_are_dropped() {
    check(
        Language::C,
        "mi_decl_nodiscard extern inline mi_decl_restrict void* mi_malloc(size_t size) mi_attr_noexcept {\n  return 0;\n}\nvoid f(void) {\n  if (a) {\n  } else if mi_unlikely(x) {\n    g();\n  }\n}\n",
        &[("function", "mi_malloc", 1, 3), ("function", "f", 4, 9)],
    );
}

#[test]
fn c_docs() {
    check_fields(
        Language::C,
        "/**\n * Pushes a record.\n * Drops it when full.\n */\nint ring_push(struct ring *r)\n{\n    return 0;\n}\n",
        "ring_push",
        "int ring_push(struct ring *r)",
        "Pushes a record.\nDrops it when full.",
    );
}

#[test]
fn cpp_definitions() {
    check(
        Language::Cpp,
        "namespace a {\nnamespace b::c {\nconstexpr int kMax = 3;\nint global = 1;\nclass Filter {\npublic:\n    void insert(int x);\n    int size() const { return 0; }\n};\ntemplate <typename T>\nstruct Box { T v; };\nusing Bits = std::vector<bool>;\nenum class Mode { On };\n}\n}\nvoid a::b::c::Filter::insert(int x) {}\nFilter::~Filter() {}\nbool operator==(const Filter&, const Filter&) { return true; }\n",
        &[
            ("module", "a", 1, 15),
            ("module", "a::b::c", 2, 14),
            ("constant", "a::b::c::kMax", 3, 3),
            ("variable", "a::b::c::global", 4, 4),
            ("class", "a::b::c::Filter", 5, 9),
            ("method", "a::b::c::Filter::size", 8, 8),
            ("struct", "a::b::c::Box", 10, 11),
            ("type", "a::b::c::Bits", 12, 12),
            ("enum", "a::b::c::Mode", 13, 13),
            ("method", "a::b::c::Filter::insert", 16, 16),
            ("method", "Filter::~Filter", 17, 17),
            ("function", "operator==", 18, 18),
        ],
    );
}

// ---------------------------------------------------------------- C#

#[test]
fn csharp_definitions() {
    check(
        Language::CSharp,
        "namespace Quarry.Net\n{\n    /// <summary>A bucket.</summary>\n    [Serializable]\n    public class Bucket\n    {\n        public const int Capacity = 10;\n        public static readonly Bucket Empty = new Bucket();\n        private int _n;\n        public int Count { get; }\n        public Bucket() {}\n        public bool TryTake() => true;\n        public class Inner { void Go() {} }\n    }\n    public interface IClock { DateTime Now(); }\n    public struct Snap {}\n    public enum State { A }\n    public record Point(int X, int Y);\n    public delegate void Handler(int x);\n}\n",
        &[
            ("module", "Quarry.Net", 1, 20),
            ("class", "Quarry.Net.Bucket", 3, 14),
            ("constant", "Quarry.Net.Bucket.Capacity", 7, 7),
            ("static", "Quarry.Net.Bucket.Empty", 8, 8),
            ("method", "Quarry.Net.Bucket.Bucket", 11, 11),
            ("method", "Quarry.Net.Bucket.TryTake", 12, 12),
            ("class", "Quarry.Net.Bucket.Inner", 13, 13),
            ("method", "Quarry.Net.Bucket.Inner.Go", 13, 13),
            ("interface", "Quarry.Net.IClock", 15, 15),
            ("method", "Quarry.Net.IClock.Now", 15, 15),
            ("struct", "Quarry.Net.Snap", 16, 16),
            ("enum", "Quarry.Net.State", 17, 17),
            ("class", "Quarry.Net.Point", 18, 18),
            ("type", "Quarry.Net.Handler", 19, 19),
        ],
    );
    check_fields(
        Language::CSharp,
        "/// <summary>\n/// A bucket.\n/// </summary>\npublic class Bucket {}\n",
        "Bucket",
        "public class Bucket",
        "A bucket.",
    );
}

#[test]
fn csharp_file_scoped_namespace() {
    check(
        Language::CSharp,
        "namespace Quarry.Net;\n\npublic class Client\n{\n    public void Send() {}\n}\n",
        &[
            ("class", "Quarry.Net.Client", 3, 6),
            ("method", "Quarry.Net.Client.Send", 5, 5),
        ],
    );
}

#[test]
fn csharp_preprocessor_lines_inside_a_declaration_keep_its_members_names() {
    // Newtonsoft.Json's JsonWriter.Async.cs: an `#if` splits the class
    // header; read as directives, the members landed in a scope named
    // `HAVE_ASYNC_DISPOSABLE`.
    check(
        Language::CSharp,
        "#if HAVE_ASYNC\nnamespace Quarry.Net\n{\n    public abstract partial class Writer\n#if HAVE_ASYNC_DISPOSABLE\n        : IAsyncDisposable\n#endif\n    {\n        #region Flush\n        public Task FlushAsync() => Task.CompletedTask;\n        #endregion\n    }\n}\n#endif\n",
        &[
            ("module", "Quarry.Net", 2, 13),
            ("class", "Quarry.Net.Writer", 4, 12),
            ("method", "Quarry.Net.Writer.FlushAsync", 10, 10),
        ],
    );
    let text = "#if X\nclass A {}\n  #endif\r\n";
    assert_eq!(
        extract::blank_directive_lines(text),
        "     \nclass A {}\n        \r\n"
    );
}

// ---------------------------------------------------------------- Ruby

#[test]
fn ruby_definitions() {
    check(
        Language::Ruby,
        "module Quarry\n  # Jobs.\n  module Jobs\n    MAX = 5\n    class Queue < Base\n      def push(x); end\n      def self.shared; end\n      class << self\n        def reset!; end\n      end\n    end\n  end\nend\nclass Quarry::Jobs::Dead\n  def add; end\nend\ndef helper; end\n",
        &[
            ("module", "Quarry", 1, 13),
            ("module", "Quarry::Jobs", 2, 12),
            ("constant", "Quarry::Jobs::MAX", 4, 4),
            ("class", "Quarry::Jobs::Queue", 5, 11),
            ("method", "Quarry::Jobs::Queue#push", 6, 6),
            ("method", "Quarry::Jobs::Queue.shared", 7, 7),
            ("method", "Quarry::Jobs::Queue.reset!", 9, 9),
            ("class", "Quarry::Jobs::Dead", 14, 16),
            ("method", "Quarry::Jobs::Dead#add", 15, 15),
            ("method", "helper", 17, 17),
        ],
    );
    check_fields(
        Language::Ruby,
        "# Adds a job.\n# Returns the size.\ndef enqueue(path, priority: :normal)\n  1\nend\n",
        "enqueue",
        "def enqueue(path, priority: :normal)",
        "Adds a job.\nReturns the size.",
    );
}

// ---------------------------------------------------------------- Markdown and text

#[test]
fn markdown_sections() {
    let source = "Intro text.\n\n# Title\n\nBody.\n\n## Install\n\n```sh\n# not a heading\n```\n\n### Linux\n\nApt.\n\n## Usage ##\n\nRun it.\n\nSetext\n======\n\nMore.\n";
    check(
        Language::Markdown,
        source,
        &[
            ("section", "test_file", 1, 2),
            ("section", "Title", 3, 20),
            ("section", "Title > Install", 7, 16),
            ("section", "Title > Install > Linux", 13, 16),
            ("section", "Title > Usage", 17, 20),
            ("section", "Setext", 21, 24),
        ],
    );
    let chunks = chunk_file("README.md", source, Language::Markdown);
    assert_eq!(
        find(&chunks, "Title > Install > Linux")
            .container
            .as_deref(),
        Some("Title > Install")
    );
    assert_eq!(find(&chunks, "Title > Install").signature, "## Install");
    assert_eq!(chunks[0].name, "README.md");
}

#[test]
fn markdown_front_matter_and_no_headings() {
    check(
        Language::Markdown,
        "---\ntitle: x\n---\nJust text.\n",
        &[("section", "test_file", 1, 4)],
    );
    check(Language::Markdown, "", &[]);
}

#[test]
fn line_windows_overlap() {
    let source: String = (1..=100).map(|i| format!("line {i}\n")).collect();
    check(
        Language::Text,
        &source,
        &[
            ("lines", "src/test_file:1-40", 1, 40),
            ("lines", "src/test_file:31-70", 31, 70),
            ("lines", "src/test_file:61-100", 61, 100),
        ],
    );
    let short = "a = 1\nb = 2";
    check(
        Language::Text,
        short,
        &[("lines", "src/test_file:1-2", 1, 2)],
    );
}

#[test]
fn line_windows_cut_huge_lines_on_char_boundaries() {
    let source = "é".repeat(40_000) + "\nshort\n";
    let chunks = chunk_file("big.json", &source, Language::Text);
    assert!(chunks.len() >= 5, "{}", chunks.len());
    assert_invariants(&source, &chunks);
    assert_eq!(
        chunks.last().map(|c| c.byte_end as usize),
        Some(source.len())
    );
}

#[test]
fn grammar_file_without_definitions_gets_windows() {
    check(
        Language::Python,
        "print('hello')\nprint('world')\n",
        &[("lines", "src/test_file:1-2", 1, 2)],
    );
}

#[test]
fn cpp_namespace_macros_do_not_hide_definitions() {
    let source = "#include <x>\nFMT_BEGIN_NAMESPACE\nnamespace detail {\nstruct a {};\n}\n\n/** Args. */\ntemplate <typename Context> class basic_format_args {\n public:\n  FMT_ALWAYS_INLINE\n  int size() const { return 0; }\n};\nFMT_END_NAMESPACE\n";
    let chunks = chunk_file("base.h", source, Language::Cpp);
    assert_invariants(source, &chunks);
    let class = find(&chunks, "basic_format_args");
    assert_eq!((class.start_line, class.end_line), (7, 12), "{class:?}");
    find(&chunks, "basic_format_args::size");
    assert_eq!(
        extract::blank_macro_lines(
            "A_B\nint x;\n \u{a0}FMT_XY\r\nFMT_CONSTEXPR auto f() -> int;\n#define FMT_API x\nint y = MAX_SIZE + FMT_ENABLE_IF(x);\n"
        ),
        "A_B\nint x;\n \u{a0}      \r\n              auto f() -> int;\n#define FMT_API x\nint y = MAX_SIZE + FMT_ENABLE_IF(x);\n"
    );
    let source = "UV_EXTERN int uv_run(uv_loop_t* loop, uv_run_mode mode);\nFMT_CONSTEXPR20 auto size() const -> int { return 0; }\n";
    let chunks = chunk_file("uv.h", source, Language::Cpp);
    find(&chunks, "size");
    // A C++ header found as C (`.h`) is chunked as C++.
    let source = "namespace fmt {\ntemplate <typename T> class buffer {\n public:\n  int size() const { return 0; }\n};\n}\n";
    let chunks = chunk_file("include/fmt/base.h", source, Language::C);
    let class = find(&chunks, "fmt::buffer");
    assert_eq!(
        (class.kind, class.language),
        (ChunkKind::Class, Language::Cpp)
    );
    let chunks = chunk_file("uv.h", "struct uv_loop_s { int x; };\n", Language::C);
    assert!(chunks.iter().all(|c| c.language == Language::C));
    // `if FMT_CONSTEXPR20 (...)` in a method once turned the whole class
    // into a function named after the next method.
    let source = "FMT_EXPORT template <typename C> class store {\n public:\n  void push_back(int v) {\n    if FMT_CONSTEXPR20 (v > 0) {\n      v = 1;\n    }\n  }\n  void clear() {}\n};\n";
    let chunks = chunk_file("args.h", source, Language::Cpp);
    assert_invariants(source, &chunks);
    let class = find(&chunks, "store");
    assert_eq!(
        (class.kind, class.start_line, class.end_line),
        (ChunkKind::Class, 1, 9)
    );
    find(&chunks, "store::clear");
    find(&chunks, "store::push_back");
}

#[test]
fn long_definitions_get_passage_windows() {
    // A 100-line function: its first 30 lines stay with the definition,
    // the rest is in windows nested in it that name it as container; a
    // short function and a class with members get none.
    let mut source = String::from("fn long_one() {\n");
    for i in 0..98 {
        source.push_str(&format!("    let step_{i} = {i};\n"));
    }
    source.push_str("}\n\nfn short_one() {\n    let x = 1;\n}\n");
    let chunks = chunk_file("src/lib.rs", &source, Language::Rust);
    assert_invariants(&source, &chunks);
    let long = find(&chunks, "long_one");
    assert_eq!((long.start_line, long.end_line), (1, 100));
    let windows: Vec<&Chunk> = chunks
        .iter()
        .filter(|c| c.kind == ChunkKind::Lines)
        .collect();
    assert!(!windows.is_empty());
    assert_eq!(windows[0].start_line, 31);
    assert_eq!(windows.last().map(|w| w.end_line), Some(100));
    for window in &windows {
        assert_eq!(window.container.as_deref(), Some("long_one"), "{window:?}");
        assert!(
            window.start_line >= 31 && window.end_line <= 100,
            "{window:?}"
        );
        assert_eq!(
            window.name,
            format!("src/lib.rs:{}-{}", window.start_line, window.end_line)
        );
    }
    // Consecutive windows overlap and leave no line of the function out.
    for pair in windows.windows(2) {
        assert!(pair[1].start_line <= pair[0].end_line + 1, "{pair:?}");
    }
    let short = find(&chunks, "short_one");
    assert!(windows.iter().all(|w| w.start_line < short.start_line));
}

#[test]
fn text_outside_definitions_gets_gap_windows() {
    // Module docs and imports before, a statement between and after the
    // definitions: each gap becomes a window, definitions stay whole, and a
    // gap of only a closing brace yields nothing.
    check(
        Language::Rust,
        "//! Crate overview.\nuse std::io;\n\nfn a() {}\n\nmod m {\n    fn b() {}\n}\nstatic_assert!(size_of::<u8>() == 1);\n",
        &[
            ("lines", "src/test_file:1-2", 1, 2),
            ("function", "a", 4, 4),
            ("module", "m", 6, 8),
            ("function", "m::b", 7, 7),
            ("lines", "src/test_file:9-9", 9, 9),
        ],
    );
    check(
        Language::Python,
        "import os\n\ndef f():\n    pass\n\nif __name__ == '__main__':\n    f()\n",
        &[
            ("lines", "src/test_file:1-1", 1, 1),
            ("function", "f", 3, 4),
            ("lines", "src/test_file:6-7", 6, 7),
        ],
    );
    check(
        Language::Go,
        "package p\n\nfunc A() {}\n}\n",
        &[
            ("lines", "src/test_file:1-1", 1, 1),
            ("function", "p.A", 3, 3),
        ],
    );
}

/// Every non-blank line of every fixture file lies inside some chunk.
#[test]
fn polyglot_fixture_every_line_is_in_a_chunk() {
    for (path, text, lang) in fixture_sources() {
        let chunks = chunk_file("f", &text, lang);
        for (i, line) in text.lines().enumerate() {
            let n = i as u32 + 1;
            if line.chars().filter(|c| c.is_alphanumeric()).count() < 3 {
                continue;
            }
            assert!(
                chunks.iter().any(|c| c.start_line <= n && n <= c.end_line),
                "{}:{n} ({line:?}) is in no chunk",
                path.display()
            );
        }
    }
}

// ---------------------------------------------------------------- Detection

#[test]
fn detects_languages() {
    let cases = [
        ("src/main.rs", Some(Language::Rust)),
        ("a/b.py", Some(Language::Python)),
        ("x.mjs", Some(Language::JavaScript)),
        ("types.d.ts", Some(Language::TypeScript)),
        ("App.tsx", Some(Language::Tsx)),
        ("main.go", Some(Language::Go)),
        ("A.java", Some(Language::Java)),
        ("ring.h", Some(Language::C)),
        ("ring.c", Some(Language::C)),
        ("bloom.hpp", Some(Language::Cpp)),
        ("bloom.cc", Some(Language::Cpp)),
        ("Bucket.cs", Some(Language::CSharp)),
        ("job.rb", Some(Language::Ruby)),
        ("Rakefile", Some(Language::Ruby)),
        ("README.md", Some(Language::Markdown)),
        ("docs/guide.markdown", Some(Language::Markdown)),
        ("Cargo.toml", Some(Language::Text)),
        ("ci.yml", Some(Language::Text)),
        ("config.json", Some(Language::Text)),
        ("run.sh", Some(Language::Bash)),
        ("setup.zsh", Some(Language::Bash)),
        ("config.fish", Some(Language::Text)),
        ("Main.kt", Some(Language::Kotlin)),
        ("build.gradle.kts", Some(Language::Kotlin)),
        ("Window.scala", Some(Language::Scala)),
        ("build.sbt", Some(Language::Scala)),
        ("Cache.swift", Some(Language::Swift)),
        ("lib/store.ex", Some(Language::Elixir)),
        ("test/store_test.exs", Some(Language::Elixir)),
        ("Builder.php", Some(Language::Php)),
        ("init.lua", Some(Language::Lua)),
        ("Heap.hs", Some(Language::Haskell)),
        ("arena.zig", Some(Language::Zig)),
        ("Makefile", Some(Language::Text)),
        ("Dockerfile", Some(Language::Text)),
        ("Dockerfile.dev", Some(Language::Text)),
        ("schema.sql", Some(Language::Text)),
        ("Cargo.lock", None),
        ("package-lock.json", None),
        ("yarn.lock", None),
        ("pnpm-lock.yaml", None),
        ("app.min.js", None),
        ("image.png", None),
        ("binary", None),
        (".hidden", None),
    ];
    for (path, want) in cases {
        assert_eq!(detect_language(std::path::Path::new(path)), want, "{path}");
    }
}

// ---------------------------------------------------------------- Fixture

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../tests/fixtures/polyglot"
);

/// Every line of the golden file is produced by the chunker, exactly.
#[test]
fn polyglot_fixture_matches_golden() {
    let golden = std::fs::read_to_string(format!("{FIXTURE}.golden.tsv")).expect("golden file");
    let mut cache: std::collections::HashMap<String, (String, Vec<Chunk>)> = Default::default();
    let mut checked = 0;
    for line in golden.lines().filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split('\t').collect();
        let [path, kind, name, qualified, start, end] = fields[..] else {
            panic!("malformed golden line {line:?}");
        };
        let (text, chunks) = cache.entry(path.to_string()).or_insert_with(|| {
            let text = std::fs::read_to_string(format!("{FIXTURE}/{path}")).expect("fixture file");
            let lang = detect_language(std::path::Path::new(path)).expect("language");
            let chunks = chunk_file(path, &text, lang);
            (text, chunks)
        });
        assert_invariants(text, chunks);
        let found = chunks.iter().any(|c| {
            c.kind.name() == kind
                && c.name == name
                && c.qualified_name == qualified
                && c.start_line.to_string() == start
                && c.end_line.to_string() == end
        });
        if !found {
            print_chunks(chunks);
            panic!("golden line not produced: {line}");
        }
        checked += 1;
    }
    assert!(checked > 100, "only {checked} golden lines");
    let languages: std::collections::HashSet<_> = cache
        .keys()
        .filter_map(|p| detect_language(std::path::Path::new(p)))
        .collect();
    assert_eq!(
        languages.len(),
        20,
        "golden file covers every grammar language"
    );
}

/// The depth limit of the walk loses nothing in the fixture.
#[test]
fn polyglot_fixture_depth_limit_is_lossless() {
    for (path, text, lang) in fixture_sources() {
        let name = path.to_string_lossy();
        let limited = chunk_file(&name, &text, lang);
        let options = Options {
            max_depth: Some(u32::MAX),
            ..Options::default()
        };
        let unlimited = chunk_file_with(&name, &text, lang, options);
        assert_eq!(limited, unlimited, "{name}");
    }
}

/// Every definition the grammar's own tags query finds in the fixture has a
/// chunk of the same name.
#[test]
fn polyglot_fixture_covers_tags_queries() {
    use tree_sitter::StreamingIterator;
    for (path, text, lang) in fixture_sources() {
        let tags = match lang {
            Language::Rust => tree_sitter_rust::TAGS_QUERY,
            Language::Python => tree_sitter_python::TAGS_QUERY,
            Language::JavaScript => tree_sitter_javascript::TAGS_QUERY,
            Language::TypeScript | Language::Tsx => tree_sitter_typescript::TAGS_QUERY,
            Language::Go => tree_sitter_go::TAGS_QUERY,
            Language::Java => tree_sitter_java::TAGS_QUERY,
            Language::C => tree_sitter_c::TAGS_QUERY,
            Language::Cpp => tree_sitter_cpp::TAGS_QUERY,
            Language::CSharp => tree_sitter_c_sharp::TAGS_QUERY,
            Language::Ruby => tree_sitter_ruby::TAGS_QUERY,
            Language::Swift => tree_sitter_swift::TAGS_QUERY,
            Language::Elixir => tree_sitter_elixir::TAGS_QUERY,
            Language::Php => tree_sitter_php::TAGS_QUERY,
            Language::Lua => tree_sitter_lua::TAGS_QUERY,
            _ => continue,
        };
        let compiled = Grammar::get(lang)
            .and_then(Grammar::compiled)
            .expect("grammar");
        let query = tree_sitter::Query::new(&compiled.language, tags).expect("tags query");
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&compiled.language).expect("language");
        let tree = parser.parse(&text, None).expect("tree");
        let chunks = chunk_file(&path.to_string_lossy(), &text, lang);
        // Elixir's tags name modules by their written path.
        let names: std::collections::HashSet<&str> = chunks
            .iter()
            .flat_map(|c| [c.name.as_str(), c.qualified_name.as_str()])
            .collect();
        let name_index = query.capture_index_for_name("name");
        let mut cursor = tree_sitter::QueryCursor::new();
        let mut matches = cursor.matches(&query, tree.root_node(), text.as_bytes());
        let mut seen = 0;
        while let Some(m) = matches.next() {
            // Fields and properties are not chunks of their own.
            let is_definition = m.captures().iter().any(|c| {
                let capture = query.capture_names()[c.index as usize];
                capture.starts_with("definition.")
                    && !matches!(capture, "definition.field" | "definition.property")
            });
            if !is_definition {
                continue;
            }
            for capture in m.captures().iter().filter(|c| Some(c.index) == name_index) {
                let name = &text[capture.node.byte_range()];
                // `namespace A\B;` has no body: it is not a chunk.
                if lang == Language::Php && capture.node.kind() == "namespace_name" {
                    continue;
                }
                seen += 1;
                assert!(
                    names.contains(name) || names.iter().any(|n| n.ends_with(name)),
                    "{}: tags definition {name:?} has no chunk",
                    path.display()
                );
            }
        }
        if lang != Language::Tsx {
            assert!(seen > 0, "{}: tags query found nothing", path.display());
        }
    }
}

/// Every fixture file with a detected language: (path, text, language).
fn fixture_sources() -> Vec<(std::path::PathBuf, String, Language)> {
    fixture_files()
        .into_iter()
        .filter_map(|path| {
            let lang = detect_language(&path)?;
            let text = std::fs::read_to_string(&path).expect("fixture file");
            Some((path, text, lang))
        })
        .collect()
}

fn fixture_files() -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![std::path::PathBuf::from(FIXTURE)];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("fixture dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(files.len() >= 13, "fixture files: {files:?}");
    files
}

// ---------------------------------------------------------------- Robustness

/// Odd inputs for every language: no panic, and the invariants hold.
#[test]
fn garbage_never_panics() {
    let deep_parens = "(".repeat(5_000) + &")".repeat(5_000);
    let deep_braces = "fn f() {".to_string() + &"{".repeat(3_000) + &"}".repeat(3_000) + "}";
    let deep_macro = "m! {".to_string() + &"{ fn x() {} ".repeat(50) + &"}".repeat(51);
    let huge_line = "x".repeat(300_000);
    let binary: String = (0..4096u32)
        .map(|i| char::from_u32(i * 7919 % 0xD7FF).unwrap_or('?'))
        .collect();
    let inputs: Vec<String> = vec![
        String::new(),
        "\n\n\n".into(),
        "\0\0\0fn main() {}\0".into(),
        "fn a() {\n".into(),
        "}}}}}{{{{ class def fn func".into(),
        "/// doc without item".into(),
        "#[attr]".into(),
        "cfg_if! { if #[cfg(x)] { fn a() {} } else { }".into(),
        "impl_foo! {}\nitems! { struct S; }\n".into(),
        "\u{feff}fn bom() {}\r\nfn crlf() {}\r\n".into(),
        "é😀 fn ünïcödé() {} // 😀\n".into(),
        deep_parens,
        deep_braces,
        deep_macro,
        huge_line,
        binary,
    ];
    for language in Language::ALL {
        for input in &inputs {
            let chunks = chunk_file("odd/file", input, language);
            assert_invariants(input, &chunks);
        }
    }
}

/// Truncated and spliced versions of every fixture file: no panic, and the
/// invariants hold.
#[test]
fn mutated_fixture_files_never_panic() {
    for (_, text, lang) in fixture_sources() {
        // A small deterministic generator for cut points.
        let mut seed = text.len() as u64 | 1;
        let mut next = |bound: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % bound.max(1) as u64) as usize
        };
        for _ in 0..12 {
            let cut = text::clamp_to_char_boundary(&text, next(text.len()));
            let prefix = &text[..cut];
            assert_invariants(prefix, &chunk_file("m", prefix, lang));
            let from = text::clamp_to_char_boundary(&text, next(text.len()));
            let to = text::clamp_to_char_boundary(&text, from + next(200));
            let spliced = format!("{}{{({}", &text[..from], &text[to..]);
            assert_invariants(&spliced, &chunk_file("m", &spliced, lang));
        }
    }
}

#[test]
fn pattern_roots_are_read_from_queries() {
    let roots = lang::pattern_roots(
        "; comment (ignored)\n(a name: (b) @name) @definition.function\n((c) (#match? @x \"^[(]\"))\n[(d) (e)] @x\n",
    );
    assert_eq!(
        roots,
        Ok(vec!["a".into(), "c".into(), "d".into(), "e".into()])
    );
    assert!(lang::pattern_roots("(_) @x").is_err());
    assert!(lang::pattern_roots("(a").is_err());
}

#[test]
fn syntax_errors_still_yield_definitions() {
    let chunks = chunk_file(
        "a.rs",
        "fn good() {}\nfn broken( {\nstruct Also;\n",
        Language::Rust,
    );
    assert!(chunks.iter().any(|c| c.name == "good"));
    let chunks = chunk_file(
        "a.py",
        "def ok():\n    pass\ndef bad(:\n    pass\nclass C:\n    pass\n",
        Language::Python,
    );
    assert!(chunks.iter().any(|c| c.name == "ok"));
    assert!(chunks.iter().any(|c| c.name == "C"));
}

#[test]
fn chunking_is_deterministic_across_threads() {
    let text = std::fs::read_to_string(format!("{FIXTURE}/src/graph_store.rs")).expect("fixture");
    let expected = chunk_file("src/graph_store.rs", &text, Language::Rust);
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let text = text.clone();
            std::thread::spawn(move || chunk_file("src/graph_store.rs", &text, Language::Rust))
        })
        .collect();
    for handle in handles {
        assert_eq!(handle.join().expect("thread"), expected);
    }
}

/// Editors open a definition at its written name, past docs, attributes
/// and decorators, and at the last segment of a qualified C++ name.
#[test]
fn names_are_located_where_they_are_written() {
    let at = |language: Language, source: &str, qualified_name: &str| {
        let chunks = chunk_file("src/test_file", source, language);
        let chunk = find(&chunks, qualified_name);
        (chunk.start_line, chunk.name_line, chunk.name_column)
    };
    let rust = "/// A store.\n#[derive(Debug)]\npub struct Store {\n    x: u32,\n}\n\nimpl Store {\n    /// Finds.\n    pub fn lookup(&self) {}\n}\n";
    assert_eq!(at(Language::Rust, rust, "Store"), (1, 3, 11));
    assert_eq!(at(Language::Rust, rust, "Store::lookup"), (8, 9, 11));
    let python = "@dataclass(frozen=True)\nclass RetryPolicy:\n    @property\n    def delay(self):\n        return 1\n";
    assert_eq!(at(Language::Python, python, "RetryPolicy"), (1, 2, 6));
    assert_eq!(at(Language::Python, python, "RetryPolicy.delay"), (3, 4, 8));
    let cpp = "// Formats.\nvoid fmt::detail::write(int x) {\n}\n";
    assert_eq!(at(Language::Cpp, cpp, "fmt::detail::write"), (1, 2, 18));
    // UTF-16 columns: the non-ASCII character before the name counts once.
    let js = "const é = 1; function run() {}\n";
    assert_eq!(at(Language::JavaScript, js, "run").2, 22);
}

/// Issue 43, items 4 and 9: thousands of nested definitions (a hostile or
/// generated file under the size limit) chunk in linear time and memory:
/// definitions deeper than `MAX_NESTING` stay in their ancestor's text,
/// so no byte is in more than `MAX_NESTING + 1` chunks and no qualified
/// name grows with the depth. Before, 20,000 nested classes gave 40,001
/// chunks whose texts and names summed to gigabytes.
#[test]
fn deeply_nested_definitions_cost_linear_chunk_bytes() {
    let depth = 5_000;
    let cases = [
        (
            Language::JavaScript,
            "class C { m() {\n".repeat(depth) + &"}}\n".repeat(depth),
        ),
        (
            Language::Rust,
            "mod m {\n".repeat(depth) + "fn f() {}\n" + &"}\n".repeat(depth),
        ),
        (
            Language::Python,
            (0..200)
                .map(|i| format!("{}def f{i}():\n", "    ".repeat(i)))
                .collect::<String>()
                + &"    ".repeat(200)
                + "pass\n",
        ),
    ];
    for (language, text) in cases {
        let chunks = chunk_file("deep.src", &text, language);
        assert_invariants(&text, &chunks);
        let bytes: usize = chunks
            .iter()
            .map(|c| (c.byte_end - c.byte_start) as usize)
            .sum();
        assert!(
            // Each byte in at most MAX_NESTING + 1 definitions, plus the
            // passage and line windows (which overlap a little).
            bytes <= (extract::MAX_NESTING + 4) * text.len(),
            "{language:?}: {} chunks, {bytes} bytes for a {}-byte file",
            chunks.len(),
            text.len()
        );
        let longest = chunks.iter().map(|c| c.qualified_name.len()).max();
        assert!(longest.unwrap_or(0) < 200, "{language:?}: {longest:?}");
        assert!(!chunks.is_empty(), "{language:?}");
    }
}
