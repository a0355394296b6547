#!/usr/bin/env python3
"""Leave-one-out ablation of Quarry's default ranking on the development set.

Runs bench/dev/run.py once with the defaults and once per configuration
below, each turning one default off (or back to its neutral value) through
`--rank` knobs and search flags, and prints one Markdown table: mean
NDCG@10 over the repositories, lexical and hybrid, and the change from the
defaults. A signal earns its place when turning it off costs the hybrid
mean (or the lexical one, for a signal that only acts there) on this set,
or when the README shows what it buys on the committed benchmark or
SWE-bench, which this set cannot see (the long-query and traceback rows
are here to show they cost nothing on short questions).

Every run's per-query results stay in target/dev-set/results/run-ablate-<name>.json,
so `python3 bench/dev/ablate.py --only NAME` re-runs one row and the table
reads the rest from there.

    python3 bench/dev/ablate.py [--quarry-bin BIN] [--only a,b] [--repos a,b]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent.parent
RESULTS = PROJECT / "target" / "dev-set" / "results"

# (name, what it turns off, quarry search arguments)
CONFIGS: list[tuple[str, str, str]] = [
    ("defaults", "nothing: every default on", ""),
    ("exact", "exact names and verified phrases above the fusion", "--rank exact=0"),
    ("diversity", "per-file diversity (no decay, no cap)", "--rank saturation=0"),
    ("head", "the diverse head: diversity over all ten places", "--rank head=1000"),
    ("definition", "definitions over mentions of a queried name (1.5)", "--rank definition=1"),
    ("symbol-weight", "name-matching lists weighted 2 for code-like queries", "--rank symbol_query=1"),
    ("penalties", "path penalties (tests, examples, vendored, generated, re-exports, compat, .d.ts, superseded copies)",
     "--rank test=1 --rank vendored=1 --rank generated=1 --rank minified=1 --rank example=1 "
     "--rank barrel=1 --rank compat=1 --rank declaration=1 --rank superseded=1"),
    ("superseded", "superseded copies kept beside the code (v1/, time_alt/) (0.3)", "--rank superseded=1"),
    ("content", "docs and config content classes", "--rank docs=1 --rank config=1"),
    ("coherence", "file coherence (0.2)", "--rank coherence=0"),
    ("path", "the path match (1.5, words weighed by candidate files)", "--rank path=0"),
    ("path-idf", "the path match's weighing of words by candidate files", "--rank path_idf=0"),
    ("stems", "identifier stems in the lexical branch", "--rank stems=0"),
    ("confidence", "lexical confidence lowering the dense weight (0.65)", "--rank fuse.confidence=0"),
    ("short-queries", "linear confidence curve for queries of up to 8 words", "--rank fuse.short_words=0"),
    ("long-dense", "dense weight 3 for long queries (issue texts)", "--rank fuse.long_dense=1"),
    ("past-cut", "what a cut list left out ranks past the cut (1.6 x depth)", "--rank fuse.missing=0"),
    ("frames", "traceback frames located in the index", "--rank frames=0"),
]


def result_path(name: str) -> Path:
    return RESULTS / f"run-ablate-{name}.json"


def means(path: Path) -> dict[str, float]:
    """Mean NDCG@10 over repositories per system kind (lexical, hybrid)."""
    data = json.loads(path.read_text())
    out: dict[str, float] = {}
    for kind in ("quarry-lexical", "quarry-hybrid"):
        vals = [
            value
            for repo in data["repos"].values()
            for system, value in repo["ndcg10"].items()
            if system.startswith(kind) and value is not None
        ]
        if vals:
            out[kind] = sum(vals) / len(vals)
    return out


def cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quarry-bin", type=Path, default=PROJECT / "target" / "release" / "quarry")
    parser.add_argument("--only", help="comma-separated configuration names to (re-)run; the rest are read back")
    parser.add_argument("--repos", help="comma-separated subset of bench/dev/repos.tsv")
    parser.add_argument("--hybrid-max-chunks", type=int, default=100000)
    opts = parser.parse_args()
    names = [c[0] for c in CONFIGS]
    only = set(opts.only.split(",")) if opts.only else set(names)
    if unknown := only - set(names):
        raise SystemExit(f"unknown configurations {sorted(unknown)}; choose from {names}")
    for name, _, args in CONFIGS:
        if name not in only and result_path(name).exists():
            continue
        cmd = [
            sys.executable, str(HERE / "run.py"),
            "--systems", "quarry-lexical,quarry-hybrid",
            "--hybrid-max-chunks", str(opts.hybrid_max_chunks),
            "--label", f"ablate-{name}",
            "--quarry-bin", str(opts.quarry_bin),
            "--quarry-args", args,
        ]
        if opts.repos:
            cmd += ["--repos", opts.repos]
        print(f"ablate: {name} ({args or 'defaults'})", file=sys.stderr, flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)

    base = means(result_path("defaults"))
    print("| turned off | lexical | hybrid | hybrid change |")
    print("| --- | --- | --- | --- |")
    for name, what, _ in CONFIGS:
        m = means(result_path(name))
        lex, hyb = m.get("quarry-lexical"), m.get("quarry-hybrid")
        change = "" if name == "defaults" or hyb is None else f"{hyb - base['quarry-hybrid']:+.3f}"
        label = "(none: the defaults)" if name == "defaults" else f"{what} (`{name}`)"
        print(f"| {label} | {cell(lex)} | {cell(hyb)} | {change} |")


if __name__ == "__main__":
    main()
