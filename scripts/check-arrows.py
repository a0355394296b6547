#!/usr/bin/env python3
"""Checks that imports point down, inside each crate of the workspace.

Two rules, read from the sources (`crate::`, `super::` and `self::` paths):
  1. Layers: a crate's top-level modules are listed below, lowest first; a
     module may use only modules of lower layers (or its own).
  2. No circles between the files of one module folder: `a.rs` using
     `super::b` and `b.rs` using `super::a` is an error, and so is a child
     that uses its folder's `mod.rs` items while `mod.rs` uses it (a child
     reaching up into its parent).
The crates themselves are kept in order by Cargo (a dependency cycle does
not build). Exit status 1 and one line per violation when a rule breaks.

    python3 scripts/check-arrows.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Lowest first; modules on one line are one layer (they must not use each
# other either way: rule 1 allows only strictly lower layers).
LAYERS = {
    "server/crates/encoder/src": [
        ["kernels"],
        ["qgemm"],
        ["fused"],
        ["bert"],
        ["embed"],
        ["static_tier"],
    ],
    "server/crates/engine/src": [
        ["ident"],
        ["codec", "cachefile", "priority", "memory", "confine", "layout"],
        ["chunk"],
        ["lexical", "walk", "filter", "symbols"],
        ["rank", "dense"],
        ["index"],
        ["search"],
        ["engine", "hub"],
    ],
    "server/crates/bench/src": [
        ["lsp_client"],
        ["hub", "lsp", "quality"],
    ],
    "server/src": [
        ["jsonrpc", "wire"],
        ["lsp", "mcp", "cli"],
    ],
}

PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z_0-9]*)+)")
GROUP = re.compile(r"\b(crate|super|self)::\{([^}]*)\}")


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def strip_tests(text: str) -> str:
    """Drops `#[cfg(test)] mod tests { ... }` blocks: tests may use anything."""
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\([^\]]*test[^\]]*\)\]\s*mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def module_path(src: Path, file: Path) -> list[str]:
    rel = file.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts.pop()
    return parts


def refs(text: str, here: list[str], is_folder_root: bool) -> set[tuple[str, ...]]:
    """Absolute module paths (as far as they go) that `text` names."""
    found = set()
    paths = [(m.group(1), m.group(2)) for m in PATH.finditer(text)]
    for m in GROUP.finditer(text):
        for item in m.group(2).split(","):
            item = item.strip().split(" as ")[0]
            if item and item not in ("self", "*"):
                paths.append((m.group(1), "::" + item.split("::")[0]))
    for head, rest in paths:
        names = rest.split("::")[1:]
        if head == "crate":
            base: list[str] = []
        elif head == "self":
            base = here
        else:  # super
            base = here[:-1] if not is_folder_root else here[:-1]
            while names and names[0] == "super":
                names = names[1:]
                base = base[:-1]
        found.add(tuple(base + names))
    return found


def main() -> int:
    errors = []
    for src_rel, layers in LAYERS.items():
        src = ROOT / src_rel
        layer_of = {m: i for i, group in enumerate(layers) for m in group}
        # A `main.rs` beside a `lib.rs` is another crate (the binary), which
        # uses the library by its name, never through `crate::`.
        files = sorted(f for f in src.rglob("*.rs")
                       if not (f.name == "main.rs" and (f.parent / "lib.rs").exists()))
        modules = {tuple(module_path(src, f)) for f in files}
        edges: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
        for file in files:
            here = module_path(src, file)
            text = strip_tests(strip_comments(file.read_text(encoding="utf-8")))
            is_root = file.stem in ("mod", "lib", "main")
            targets = refs(text, here, is_root)
            if is_root:
                # A folder's root names its children bare (`lanes::run`,
                # `use lanes::{...}`), not only through `self::`.
                children = {m[-1] for m in modules if len(m) == len(here) + 1 and list(m[:-1]) == here}
                for child in children:
                    if re.search(rf"(?<![:\w]){child}::", text):
                        targets.add(tuple(here + [child]))
            # Rule 1 between top-level modules.
            if here and here[0] in layer_of:
                for target in targets:
                    top = target[0] if target else None
                    if top in layer_of and top != here[0] and layer_of[top] >= layer_of[here[0]]:
                        errors.append(f"{file.relative_to(ROOT)}: `{here[0]}` uses `{top}`, which is not below it")
            elif here and here[0] not in layer_of:
                errors.append(f"{file.relative_to(ROOT)}: module `{here[0]}` is in no layer of scripts/check-arrows.py")
            # Rule 2 edges between sibling files of one folder.
            node = tuple(here)
            for target in targets:
                # The longest module path the target starts with.
                for n in range(len(target), -1, -1):
                    if tuple(target[:n]) in modules:
                        owner = tuple(target[:n])
                        break
                if owner != node and owner[:-1] == node[:-1] or (owner == node[:-1] and not is_root):
                    edges.setdefault(node, set()).add(owner)
                elif is_root and owner[:-1] == node:
                    edges.setdefault(node, set()).add(owner)
        # Cycles of length two or more.
        for a, outs in edges.items():
            for b in outs:
                if a in edges.get(b, set()) and a < b:
                    name = lambda m: "::".join(m) or "crate root"
                    errors.append(f"{src_rel}: `{name(a)}` and `{name(b)}` use each other")
    for line in errors:
        print(line)
    if errors:
        print(f"check-arrows: {len(errors)} arrow(s) point up", file=sys.stderr)
        return 1
    print("check-arrows: every import points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
