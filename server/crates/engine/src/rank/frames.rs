//! Code locations a query names: the frames of a pasted traceback or stack
//! trace (`File "pkg/mod.py", line 12, in parse`, `at parse
//! (src/app.js:12:5)`, `at com.x.Parser.parse(Parser.java:12)`) and bare
//! `path:line` references (`src/lib.rs:12:5`). An issue text that carries a
//! traceback points at the code it is about more precisely than its prose.
//!
//! Owns: `Frame` and `frames`, pure text processing.
//! Never: look at the index; resolving a frame to a chunk is the search's
//! job (`search::locate_frames`), which also decides what an unknown path
//! means (nothing).

use rustc_hash::FxHashMap;

/// One location named in a query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// As written, with `\` turned into `/` and a leading `./` removed; may
    /// be absolute or hold another machine's prefix
    /// (`/usr/lib/python3/dist-packages/pkg/mod.py`).
    pub path: String,
    /// 1-based line.
    pub line: u32,
    /// The function the frame is in, when the trace says (`parse`; the last
    /// part of `com.x.Parser.parse`); never `<module>`-like names.
    pub name: Option<String>,
    /// How many frames of its trace were called after it: 0 where the error
    /// was raised (the last frame of a Python traceback, the first line of a
    /// JavaScript or Java stack) and for a location named on its own; the
    /// entry point's plumbing has the largest.
    pub depth: u32,
}

/// How a location was written, which says where the deepest call is.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Form {
    /// `File "...", line N`: most recent call last.
    Python,
    /// `at ...` lines: most recent call first.
    Stack,
    /// A `path:line` in prose.
    Bare,
}

/// At most this many frames are taken from one query.
pub const MAX_FRAMES: usize = 32;

/// Source-file extensions a bare `path:line` must end with to count (a
/// version `1.2:3` or a time `12:30` is not a location).
const SOURCE_EXTENSIONS: &[&str] = &[
    "py", "pyi", "rs", "go", "js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts", "java", "kt",
    "scala", "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "cs", "rb", "php", "swift", "lua", "ex",
    "exs", "erl", "hs", "ml", "zig", "dart", "vue", "svelte",
];

/// The locations `text` names, in order of first appearance, without
/// repeats (a repeated location keeps its least depth).
pub fn frames(text: &str) -> Vec<Frame> {
    // Every location form holds a `:` or a Python `File "`; most queries
    // hold neither and are not walked word by word.
    if !text.contains(':') && !text.contains("File \"") {
        return Vec::new();
    }
    // Each location with its form and the trace it belongs to: a Python
    // traceback starts at its `Traceback` line, a stack at its first `at`
    // line.
    let mut found: Vec<(Frame, Form, usize)> = Vec::new();
    let (mut trace, mut in_stack) = (0, false);
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("Traceback (most recent call last)") {
            trace += 1;
        }
        if let Some(frame) = python_frame(line) {
            found.push((frame, Form::Python, trace));
            continue;
        }
        let stack = trimmed.starts_with("at ");
        if stack && !in_stack {
            trace += 1;
        }
        in_stack = stack;
        let form = if stack { Form::Stack } else { Form::Bare };
        found.extend(located_words(line).into_iter().map(|f| (f, form, trace)));
    }
    // One pass to count each trace's frames of each form, one to number
    // them: a Python frame's depth is the frames after it in its trace, a
    // stack frame's those before it.
    let mut counts: FxHashMap<(usize, Form), u32> = FxHashMap::default();
    for &(_, form, trace) in &found {
        *counts.entry((trace, form)).or_default() += 1;
    }
    let mut seen: FxHashMap<(usize, Form), u32> = FxHashMap::default();
    let depths: Vec<u32> = found
        .iter()
        .map(|&(_, form, trace)| {
            let before = seen.entry((trace, form)).or_default();
            let depth = match form {
                Form::Python => counts[&(trace, form)] - *before - 1,
                Form::Stack => *before,
                Form::Bare => 0,
            };
            *before += 1;
            depth
        })
        .collect();
    let mut out: Vec<Frame> = Vec::new();
    for ((mut frame, _, _), depth) in found.into_iter().zip(depths) {
        frame.depth = depth;
        let full = out.len() >= MAX_FRAMES;
        match out
            .iter_mut()
            .find(|f| f.path == frame.path && f.line == frame.line)
        {
            Some(seen) => seen.depth = seen.depth.min(depth),
            None if !full => out.push(frame),
            None => {}
        }
    }
    out
}

/// `File "PATH", line N, in NAME` (CPython's traceback line).
fn python_frame(line: &str) -> Option<Frame> {
    let start = line.find("File \"")? + "File \"".len();
    let rest = &line[start..];
    let close = rest.find('"')?;
    let path = &rest[..close];
    let rest = rest[close + 1..]
        .trim_start()
        .strip_prefix(',')?
        .trim_start();
    let rest = rest.strip_prefix("line")?.trim_start();
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let number: u32 = rest[..digits].parse().ok()?;
    let rest = rest[digits..].trim_start();
    let name = rest
        .strip_prefix(',')
        .map(str::trim_start)
        .and_then(|r| r.strip_prefix("in "))
        .and_then(|r| r.split_whitespace().next())
        .and_then(function_name);
    Some(Frame {
        path: normalize_path(path)?,
        line: number,
        name,
        depth: 0,
    })
}

/// `PATH:LINE[:COL]` words of a line, with the function of a JavaScript
/// (`at NAME (PATH:L:C)`) or Java (`at pkg.Class.NAME(File.java:L)`) frame.
fn located_words(line: &str) -> Vec<Frame> {
    let mut out = Vec::new();
    let words: Vec<&str> = line.split_whitespace().collect();
    for (i, word) in words.iter().enumerate() {
        // Java: `pkg.Class.method(File.java:12)` is one word.
        let (name_part, location) = match word.split_once('(') {
            Some((head, tail)) if !head.is_empty() => (Some(head), tail),
            _ => (None, *word),
        };
        let location = location.trim_matches(|c: char| {
            matches!(
                c,
                '(' | ')' | '[' | ']' | '<' | '>' | ',' | ';' | '"' | '\'' | '`'
            )
        });
        let Some((path, number)) = split_location(location) else {
            continue;
        };
        let Some(path) = normalize_path(path) else {
            continue;
        };
        // JavaScript: `at NAME (PATH:L:C)`, the name is the word before.
        let name = name_part
            .or_else(|| {
                (i >= 2 && words[i - 2] == "at" && word.starts_with('(')).then(|| words[i - 1])
            })
            .and_then(|n| n.rsplit(['.', ':']).next())
            .and_then(function_name);
        out.push(Frame {
            path,
            line: number,
            name,
            depth: 0,
        });
    }
    out
}

/// `src/lib.rs:12:5` -> (`src/lib.rs`, 12): the part before the first
/// `:NUMBER` whose extension is a source file's.
fn split_location(word: &str) -> Option<(&str, u32)> {
    let mut search = 0;
    while let Some(offset) = word[search..].find(':') {
        let colon = search + offset;
        let path = &word[..colon];
        let after = &word[colon + 1..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let extension = path.rsplit_once('.').map_or("", |(_, e)| e);
        if (1..=7).contains(&digits) && SOURCE_EXTENSIONS.contains(&extension) {
            let number: u32 = after[..digits].parse().ok()?;
            return (number > 0).then_some((path, number));
        }
        search = colon + 1;
    }
    None
}

fn normalize_path(path: &str) -> Option<String> {
    let path = path.trim().replace('\\', "/");
    let path = path.trim_start_matches("./");
    let file = path.rsplit('/').next()?;
    // `<stdin>`, `<string>`, `<frozen importlib._bootstrap>`: no file.
    (!file.is_empty() && !path.contains('<') && file.contains('.')).then(|| path.to_string())
}

/// A function name as a trace writes it, or `None` for `<module>`,
/// `<lambda>`, `<anonymous>` and the like.
fn function_name(name: &str) -> Option<String> {
    let name = name.trim_matches(|c: char| matches!(c, ',' | ';' | ')' | '('));
    (!name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$'))
    .then(|| name.to_string())
}

/// Whether `indexed`, a workspace-relative path, is the file `frame_path`
/// names: equal, or one a `/`-suffix of the other (a trace carries another
/// machine's prefix; a Java trace only the file name, which counts when the
/// frame names a function to check it by).
pub fn names_file(frame: &Frame, indexed: &str) -> bool {
    let path = frame.path.as_str();
    path == indexed
        || ends_with_path(path, indexed)
        || (frame.name.is_some() && ends_with_path(indexed, path))
}

/// `long` ends with `/` then `short` (`a/b/c.py` ends with `b/c.py`, not
/// with `c.py`'s tail `.py` or with `/c.py`'s half `b/c.py` of `ab/c.py`).
fn ends_with_path(long: &str, short: &str) -> bool {
    long.len() > short.len()
        && long.ends_with(short)
        && long.as_bytes()[long.len() - short.len() - 1] == b'/'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(path: &str, line: u32, name: Option<&str>) -> Frame {
        Frame {
            path: path.into(),
            line,
            name: name.map(Into::into),
            depth: 0,
        }
    }

    fn deep(depth: u32, frame: Frame) -> Frame {
        Frame { depth, ..frame }
    }

    #[test]
    fn python_traceback_frames() {
        let text = r#"Traceback (most recent call last):
  File "<stdin>", line 1, in <module>
  File "/usr/lib/python3/dist-packages/astropy/io/ascii/ui.py", line 856, in write
    writer = get_writer(Writer=Writer, fast_writer=fast_writer, **kwargs)
  File "C:\Users\e\sympy\functions\hyperbolic.py", line 590, in eval
  File "./sympy/core/sympify.py", line 368, in <module>
TypeError: __init__() got an unexpected keyword argument 'header_rows'"#;
        assert_eq!(
            frames(text),
            vec![
                deep(
                    2,
                    frame(
                        "/usr/lib/python3/dist-packages/astropy/io/ascii/ui.py",
                        856,
                        Some("write")
                    )
                ),
                deep(
                    1,
                    frame(
                        "C:/Users/e/sympy/functions/hyperbolic.py",
                        590,
                        Some("eval")
                    )
                ),
                frame("sympy/core/sympify.py", 368, None),
            ]
        );
    }

    #[test]
    fn javascript_java_and_bare_locations() {
        let text = "TypeError: x is undefined\n    at parseRoute (/srv/app/lib/router.js:42:13)\n\
                    \tat com.acme.Parser.parse(Parser.java:120)\n\
                    thread 'main' panicked at src/lexical/mod.rs:77:9:\n\
                    released in 1.2:3, see https://example.com:8080/x and 12:30";
        assert_eq!(
            frames(text),
            vec![
                frame("/srv/app/lib/router.js", 42, Some("parseRoute")),
                deep(1, frame("Parser.java", 120, Some("parse"))),
                frame("src/lexical/mod.rs", 77, None),
            ]
        );
    }

    #[test]
    fn each_traceback_counts_its_own_depths() {
        // Two chained tracebacks; a frame repeated in both keeps its least
        // depth, and the place it was first seen.
        let text = "Traceback (most recent call last):\n  File \"a.py\", line 1, in main\n  \
                    File \"b.py\", line 2, in run\nValueError\n\nDuring handling of the above \
                    exception, another exception occurred:\n\nTraceback (most recent call \
                    last):\n  File \"b.py\", line 2, in run\n  File \"c.py\", line 3, in \
                    fail\n  File \"d.py\", line 4, in raise_it\nKeyError";
        assert_eq!(
            frames(text),
            vec![
                deep(1, frame("a.py", 1, Some("main"))),
                deep(0, frame("b.py", 2, Some("run"))),
                deep(1, frame("c.py", 3, Some("fail"))),
                frame("d.py", 4, Some("raise_it")),
            ]
        );
        // A stack counts from its first `at` line, whatever came before.
        let text = "see src/x.js:9\nError: boom\n  at f (src/a.js:1:1)\n  at g (src/b.js:2:1)\n\n\
                    again\n  at h (src/c.js:3:1)";
        let depths: Vec<u32> = frames(text).iter().map(|f| f.depth).collect();
        assert_eq!(depths, [0, 0, 1, 0]);
    }

    #[test]
    fn repeated_frames_count_once() {
        let text = "src/a.rs:3:1 src/a.rs:3:9 src/a.rs:4";
        assert_eq!(
            frames(text),
            vec![frame("src/a.rs", 3, None), frame("src/a.rs", 4, None)]
        );
    }

    #[test]
    fn a_frame_names_a_file_by_a_path_suffix() {
        let f = frame(
            "/usr/lib/python3/dist-packages/astropy/io/ascii/ui.py",
            1,
            None,
        );
        assert!(names_file(&f, "astropy/io/ascii/ui.py"));
        assert!(names_file(&f, "ascii/ui.py"));
        assert!(!names_file(&f, "i.py"));
        assert!(!names_file(&f, "astropy/io/ascii/core.py"));
        // A bare file name matches deeper paths only with a function to check.
        let java = frame("Parser.java", 1, Some("parse"));
        assert!(names_file(&java, "src/main/java/com/acme/Parser.java"));
        assert!(!names_file(
            &frame("Parser.java", 1, None),
            "src/com/acme/Parser.java"
        ));
    }
}
