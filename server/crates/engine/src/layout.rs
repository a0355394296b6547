//! What a workspace's layout says about its files: which folders are
//! superseded copies of code that lives beside them and which files are a
//! module's entry file, read from the list of indexed paths alone; and
//! which files a tool generated, as the index recorded from their first
//! lines (`index::generated::is_generated`).
//!
//! A project sometimes keeps a second copy of some of its code: pydantic
//! ships its previous major version as `pydantic/v1/` (`v1/fields.py` next to
//! `fields.py`), tokio an alternative timer as `runtime/time_alt/` beside
//! `runtime/time/`. A question about the project is answered by the current
//! code; the copy repeats its words and pushes it down. Ranking demotes
//! what this module marks (`rank::classes::PathClass::Superseded`, and
//! `Generated` for the generated files).
//!
//! A module's entry file (`generators.rb` beside `generators/`, `query.ex`
//! beside `query/`, `Markdown.hs` beside `Markdown/`) declares the module
//! and wires its parts together: ranking raises it for a question that
//! names the module (`rank::signals::Signals::module_file`). A folder's
//! own entry (`mod.rs`, `__init__.py`, `index.ts`) is not one: raised the
//! same way, tokio's, Flask's and lazy.nvim's cost more than Rails gained.
//!
//! A split type's home file (`SqlMapper.cs` beside `SqlMapper.Async.cs`
//! and `SqlMapper.GridReader.cs`: a C# partial class; Swift's
//! `CORSMiddleware.swift` beside `CORSMiddleware+Configuration.swift`)
//! declares the type and holds its main API, each part one concern:
//! ranking raises it (`rank::signals::Signals::home_file`).
//!
//! Never: read a file, or mark a folder from its name alone: a `v1/` or
//! `*_old/` folder counts only when the code it stands beside is there too.

use crate::ident::squash;
use rustc_hash::{FxHashMap, FxHashSet};

/// Name endings of a folder that is a variant of the sibling folder named
/// by the rest (`time_alt` beside `time`).
const VARIANT_SUFFIXES: [&str; 6] = ["_alt", "_old", "_legacy", "-alt", "-old", "-legacy"];

/// File names every package folder may hold, which say nothing about two
/// folders holding the same code.
const COMMON_FILES: [&str; 9] = [
    "__init__.py",
    "mod.rs",
    "lib.rs",
    "index.ts",
    "index.js",
    "README.md",
    "package-info.java",
    "py.typed",
    "conftest.py",
];

/// Shared module names that make a `v<N>` folder a copy of its parent.
const MIN_SHARED_FILES: usize = 2;

/// What the layout knows of one file beyond its path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileMarks {
    /// In a superseded copy of code kept beside it.
    pub superseded: bool,
    /// Its first lines say a tool wrote it.
    pub generated: bool,
    /// It is the entry file of a module whose parts are the files of the
    /// folder of the same name beside it (`generators.rb` beside
    /// `generators/`).
    pub module: bool,
    /// It is the home file of a type or module split over several files
    /// beside it, each named after it (`SqlMapper.cs` beside
    /// `SqlMapper.Async.cs` and `SqlMapper.GridReader.cs`).
    pub home: bool,
}

/// The superseded folders, generated files, module entry files and split
/// types' home files of one workspace.
#[derive(Debug)]
pub struct Layout {
    /// Root-relative folder paths, without a trailing `/`.
    superseded: FxHashSet<Box<str>>,
    /// Root-relative paths of files whose header says a tool wrote them.
    generated: FxHashSet<Box<str>>,
    /// Root-relative paths of module entry files (`FileMarks::module`).
    modules: FxHashSet<Box<str>>,
    /// Root-relative paths of the home files of split types
    /// (`FileMarks::home`).
    homes: FxHashSet<Box<str>>,
}

impl Layout {
    /// Reads the layout off root-relative, `/`-separated file paths. A
    /// folder is superseded when
    /// - its name is a variant of a sibling folder's (`time_alt`, `time_old`,
    ///   `time_legacy` beside `time`), or
    /// - its name is a version (`v1`, `v2`) and its parent folder holds at
    ///   least two of its module names (`pydantic/v1/fields.py` and
    ///   `pydantic/fields.py`): the package carries its previous version.
    ///
    /// A file is a module's entry file when it is named like a folder
    /// beside it, with one extension (`generators.rb` and `generators/`;
    /// `Markdown.test.hs` is not `Markdown/`'s). A file is the home of a
    /// split type when it is `X.ext` and the same folder holds a part
    /// `X.<more>.ext` or `X+<more>.ext` (`SqlMapper.cs` and
    /// `SqlMapper.Async.cs`, C#'s partial classes; a TypeScript module and
    /// its `.types.ts`; Swift's `CORSMiddleware+Configuration.swift`); tests,
    /// declarations and minified copies (`X.test.ts`, `X.d.ts`,
    /// `X.min.js`) are not parts.
    ///
    /// `generated` are the indexed files the index found generated.
    pub fn of<'a>(
        paths: impl IntoIterator<Item = &'a str>,
        generated: impl IntoIterator<Item = &'a str>,
    ) -> Layout {
        // Folder -> the names of the files and folders directly in it.
        let mut files: FxHashMap<&'a str, FxHashSet<&'a str>> = FxHashMap::default();
        let mut folders: FxHashMap<&'a str, FxHashSet<&'a str>> = FxHashMap::default();
        for path in paths {
            let (mut folder, file) = split_last(path);
            files.entry(folder).or_default().insert(file);
            while !folder.is_empty() {
                let (parent, name) = split_last(folder);
                if !folders.entry(parent).or_default().insert(name) {
                    break;
                }
                folder = parent;
            }
        }
        // Whether the folder at `path`, in `parent`, shares enough module
        // names with `parent` to be a copy of it.
        let copies_parent = |parent: &str, path: &str| {
            files
                .get(path)
                .zip(files.get(parent))
                .is_some_and(|(inner, outer)| {
                    inner
                        .iter()
                        .filter(|f| !COMMON_FILES.contains(f) && outer.contains(*f))
                        .count()
                        >= MIN_SHARED_FILES
                })
        };
        let mut superseded = FxHashSet::default();
        let mut modules: FxHashSet<Box<str>> = FxHashSet::default();
        let mut homes: FxHashSet<Box<str>> = FxHashSet::default();
        for (folder, names) in &files {
            let subfolders = folders.get(folder);
            // (stem, extension) of the parts in this folder.
            let parts: FxHashSet<(&str, &str)> = names.iter().filter_map(|f| part_of(f)).collect();
            for file in names {
                let Some((stem, ext)) = file.split_once('.').filter(|(_, ext)| !ext.contains('.'))
                else {
                    continue;
                };
                if subfolders.is_some_and(|f| f.contains(stem)) {
                    modules.insert(join(folder, file).into_boxed_str());
                }
                if parts.contains(&(stem, ext)) {
                    homes.insert(join(folder, file).into_boxed_str());
                }
            }
        }
        for (parent, names) in &folders {
            for name in names {
                let variant = VARIANT_SUFFIXES.iter().any(|suffix| {
                    name.strip_suffix(suffix)
                        .is_some_and(|base| !base.is_empty() && names.contains(base))
                });
                if !variant && !is_version(name) {
                    continue;
                }
                let path = join(parent, name);
                if variant || copies_parent(parent, &path) {
                    superseded.insert(path.into_boxed_str());
                }
            }
        }
        Layout {
            superseded,
            generated: boxed(generated),
            modules,
            homes,
        }
    }

    /// Drops the module entry files named after the project (`project`:
    /// the workspace folder's or the repository's name, or one of its
    /// words): a word that names the whole project (`clap.zig` in
    /// `zig-clap`, `Pandoc.hs` in `pandoc`) tells none of its parts apart.
    pub fn for_project(mut self, project: &str) -> Layout {
        let words: Vec<String> = project
            .split(|c: char| !c.is_alphanumeric())
            .chain([project])
            .map(squash)
            .filter(|w| !w.is_empty())
            .collect();
        self.modules
            .retain(|path| !words.contains(&squash(module_name(path))));
        self
    }

    /// Whether `path` (root-relative) lies in a superseded folder.
    pub fn is_superseded(&self, path: &str) -> bool {
        !self.superseded.is_empty()
            && path
                .match_indices('/')
                .any(|(end, _)| self.superseded.contains(&path[..end]))
    }

    /// The marks of the file at `path` (root-relative).
    pub fn marks(&self, path: &str) -> FileMarks {
        FileMarks {
            superseded: self.is_superseded(path),
            generated: self.is_generated(path),
            module: self.modules.contains(path),
            home: self.homes.contains(path),
        }
    }

    /// Whether the file at `path` (root-relative) was generated by a tool.
    pub fn is_generated(&self, path: &str) -> bool {
        self.generated.contains(path)
    }

    /// A layout whose superseded folders, generated files, module entry
    /// files and home files are already known (read off the whole
    /// repository when it was pushed to a hub).
    pub fn known<'a>(
        folders: impl IntoIterator<Item = &'a str>,
        generated: impl IntoIterator<Item = &'a str>,
        modules: impl IntoIterator<Item = &'a str>,
        homes: impl IntoIterator<Item = &'a str>,
    ) -> Layout {
        Layout {
            superseded: boxed(folders),
            generated: boxed(generated),
            modules: boxed(modules),
            homes: boxed(homes),
        }
    }

    /// The module entry files, sorted (for a push to a hub and tests).
    pub fn modules(&self) -> Vec<&str> {
        sorted(&self.modules)
    }

    /// The home files of split types, sorted (for a push to a hub and
    /// tests).
    pub fn homes(&self) -> Vec<&str> {
        sorted(&self.homes)
    }

    /// The generated files, sorted (for a push to a hub and tests).
    pub fn generated(&self) -> Vec<&str> {
        sorted(&self.generated)
    }

    /// The superseded folders, sorted (for status and tests).
    pub fn superseded(&self) -> Vec<&str> {
        sorted(&self.superseded)
    }
}

/// The name of the module whose entry file is at `path`: the file's name
/// up to the first `.` (`generators` for `lib/generators.rb`).
pub fn module_name(path: &str) -> &str {
    let file = split_last(path).1;
    file.split('.').next().unwrap_or(file)
}

/// The folder holding the parts of the module whose entry file is at
/// `path`: `lib/generators` for `lib/generators.rb`.
pub fn module_folder(path: &str) -> &str {
    let folder = split_last(path).0;
    let name = module_name(path);
    &path[..folder.len() + usize::from(!folder.is_empty()) + name.len()]
}

/// Middle names that make `X.<middle>.ext` something other than a part of
/// `X.ext`: its tests, its type declarations, a minified or mock copy.
const NOT_PARTS: [&str; 14] = [
    "test", "tests", "spec", "specs", "stories", "story", "d", "min", "mock", "mocks", "bench",
    "e2e", "snap", "fixture",
];

/// `(X, ext)` for a part `X.<middle>.ext` of a split type's home file
/// `X.ext`, or `X+<middle>.ext` (Swift's and Objective-C's file of
/// extensions to `X`); `None` for another file name or a middle in
/// `NOT_PARTS`.
fn part_of(file: &str) -> Option<(&str, &str)> {
    let split = file.find(['.', '+'])?;
    let (stem, rest) = (&file[..split], &file[split + 1..]);
    let (middle, ext) = rest.rsplit_once('.')?;
    let counts = !stem.is_empty()
        && !middle.is_empty()
        && !ext.is_empty()
        && middle
            .split(['.', '+'])
            .all(|m| !m.is_empty() && !NOT_PARTS.contains(&m.to_ascii_lowercase().as_str()));
    counts.then_some((stem, ext))
}

/// A list of paths as a set.
fn boxed<'a>(paths: impl IntoIterator<Item = &'a str>) -> FxHashSet<Box<str>> {
    paths.into_iter().map(Box::from).collect()
}

/// A set of paths as a sorted list.
fn sorted(set: &FxHashSet<Box<str>>) -> Vec<&str> {
    let mut out: Vec<&str> = set.iter().map(|s| &**s).collect();
    out.sort_unstable();
    out
}

/// `a/b/c` -> (`a/b`, `c`); `c` -> (``, `c`).
fn split_last(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
}

fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}/{name}")
    }
}

/// `v1`, `v2`, `V10`.
fn is_version(name: &str) -> bool {
    let digits = name.strip_prefix(['v', 'V']).unwrap_or("");
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variant_folder_beside_its_original_is_superseded() {
        let layout = Layout::of(
            [
                "runtime/time/wheel/mod.rs",
                "runtime/time_alt/wheel/mod.rs",
                "runtime/time_alt/timer.rs",
                "runtime/io_old/driver.rs",
            ],
            [],
        );
        assert_eq!(layout.superseded(), ["runtime/time_alt"]);
        assert!(layout.is_superseded("runtime/time_alt/wheel/mod.rs"));
        assert!(layout.is_superseded("runtime/time_alt/timer.rs"));
        assert!(!layout.is_superseded("runtime/time/wheel/mod.rs"));
        // `io_old` has no `io` beside it: its name alone does not count.
        assert!(!layout.is_superseded("runtime/io_old/driver.rs"));
    }

    #[test]
    fn a_version_folder_copying_its_parent_is_superseded() {
        let layout = Layout::of(
            [
                "pydantic/__init__.py",
                "pydantic/fields.py",
                "pydantic/main.py",
                "pydantic/v1/__init__.py",
                "pydantic/v1/fields.py",
                "pydantic/v1/main.py",
                // An API's version folder holds other modules than its parent.
                "api/server.py",
                "api/v1/__init__.py",
                "api/v1/users.py",
                "api/v1/orders.py",
            ],
            [],
        );
        assert_eq!(layout.superseded(), ["pydantic/v1"]);
        assert!(layout.is_superseded("pydantic/v1/fields.py"));
        assert!(!layout.is_superseded("pydantic/fields.py"));
        assert!(!layout.is_superseded("api/v1/users.py"));
    }

    #[test]
    fn shared_package_boilerplate_does_not_make_a_copy() {
        let layout = Layout::of(
            [
                "pkg/__init__.py",
                "pkg/mod.rs",
                "pkg/v2/__init__.py",
                "pkg/v2/mod.rs",
            ],
            [],
        );
        assert!(layout.superseded().is_empty());
        assert!(!layout.is_superseded("pkg/v2/mod.rs"));
    }

    #[test]
    fn a_file_named_like_a_folder_beside_it_is_the_module_entry() {
        let layout = Layout::of(
            [
                "lib/rails/generators.rb",
                "lib/rails/generators/base.rb",
                "lib/rails/generators/app/app_generator.rb",
                "lib/rails/engine.rb",
                "Dapper/SqlMapper.cs",
                "Dapper/SqlMapper.Async.cs",
                "src/Readers/Markdown.hs",
                "src/Readers/Markdown/Inline.hs",
                "src/Readers/Markdown.test.hs",
                "clap.zig",
                "clap/streaming.zig",
                // A folder's own entry is not a module entry file.
                "runtime/mod.rs",
                "runtime/task.rs",
            ],
            [],
        );
        assert_eq!(
            layout.modules(),
            [
                "clap.zig",
                "lib/rails/generators.rb",
                "src/Readers/Markdown.hs"
            ]
        );
        assert!(layout.marks("lib/rails/generators.rb").module);
        // No folder `engine/` beside it; a second extension is another file.
        assert!(!layout.marks("lib/rails/engine.rb").module);
        assert!(!layout.marks("src/Readers/Markdown.test.hs").module);
        assert!(!layout.marks("Dapper/SqlMapper.cs").module);
        // The project's own name (`zig-clap`) names every part alike.
        let layout = layout.for_project("zig-clap");
        assert_eq!(
            layout.modules(),
            ["lib/rails/generators.rb", "src/Readers/Markdown.hs"]
        );
        assert_eq!(module_name("lib/rails/generators.rb"), "generators");
        assert_eq!(
            module_folder("lib/rails/generators.rb"),
            "lib/rails/generators"
        );
        assert_eq!(module_folder("clap.zig"), "clap");
    }

    #[test]
    fn top_level_folders_and_files_work() {
        let layout = Layout::of(["time/a.rs", "time_alt/a.rs", "lib.rs"], []);
        assert_eq!(layout.superseded(), ["time_alt"]);
        assert!(layout.is_superseded("time_alt/a.rs"));
        assert!(!layout.is_superseded("lib.rs"));
        assert!(!layout.is_superseded("time_alt"));
        assert!(Layout::of(std::iter::empty(), []).superseded().is_empty());
    }

    #[test]
    fn generated_files_are_known_by_path() {
        let layout = Layout::of(["api/pb/user.pb.go", "api/user.go"], ["api/pb/user.pb.go"]);
        assert!(layout.is_generated("api/pb/user.pb.go"));
        assert!(!layout.is_generated("api/user.go"));
        assert!(!layout.is_generated("api/pb"));
        let known = Layout::known([], layout.generated(), [], []);
        assert_eq!(known.generated(), ["api/pb/user.pb.go"]);
    }

    #[test]
    fn a_file_named_like_the_parts_beside_it_is_their_home() {
        let layout = Layout::of(
            [
                "Dapper/SqlMapper.cs",
                "Dapper/SqlMapper.Async.cs",
                "Dapper/SqlMapper.GridReader.Async.cs",
                "Sources/CORSMiddleware.swift",
                "Sources/CORSMiddleware+Configuration.swift",
                // Tests, declarations and minified copies are no parts.
                "src/store.ts",
                "src/store.test.ts",
                "src/store.d.ts",
                "web/app.js",
                "web/app.min.js",
                // A part needs its home in the same folder, with the same extension.
                "Dapper/Other/Reader.Async.cs",
                "src/view.ts",
                "src/view.styles.css",
                // A name with a `+` of its own is no part (`c++.h`).
                "include/c.h",
                "include/c++.h",
            ],
            [],
        );
        assert_eq!(
            layout.homes(),
            ["Dapper/SqlMapper.cs", "Sources/CORSMiddleware.swift"]
        );
        assert!(layout.marks("Dapper/SqlMapper.cs").home);
        assert!(!layout.marks("Dapper/SqlMapper.Async.cs").home);
        // The hub's copy of the layout marks the same files.
        let known = Layout::known([], [], [], layout.homes());
        assert_eq!(
            known.marks("Dapper/SqlMapper.cs"),
            layout.marks("Dapper/SqlMapper.cs")
        );
    }
}
