#!/usr/bin/env python3
"""Development-set quality harness: Quarry next to semble 0.7.0 on semble's own benchmark.

Run `python3 bench/dev/prepare.py` first (repositories and annotations under
target/dev-set/). Then:

    python3 bench/dev/run.py                                  # semble + quarry-lexical (+ hybrid if a model is installed)
    python3 bench/dev/run.py --systems semble,quarry-lexical --repos chi,fastapi
    python3 bench/dev/run.py --systems quarry-lexical --label nofile --quarry-args "--rank file=0"

Scoring re-implements semble's benchmarks/ code at the pinned semble commit
(prepare.SEMBLE_COMMIT; benchmarks/metrics.py, data.py, run_benchmark.py):
  * each query retrieves top 10 chunks;
  * a target (a path, optionally with start_line/end_line) is found at the
    1-based rank of the FIRST result that matches it: the paths match when
    they are equal or either one is a "/"-suffix of the other (data.py
    path_matches is two-way), and, when the target has a line span, the
    result's lines overlap it (inclusive);
  * the targets are relevant + secondary together, every one with gain 1;
    ranks of all found targets set a binary gain vector of length 10 (two
    targets found by the same result give ONE gain: a file listed twice, or
    two spans inside one chunk, cannot both count);
  * NDCG@10 = DCG(gains) / IDCG(min(10, n_relevant) ones), with
    n_relevant = len(relevant + secondary) (the pinned run_benchmark.py; later
    semble versions count only targets that some indexed chunk covers);
  * per repo: mean over its queries; per category: per-repo category means,
    then the mean over the repos that have that category; per language: mean
    of its repos. "mean over repos" is what the brief asks for; semble prints
    "Avg" as the mean of the per-language means, also shown.
Result paths are those relative to the benchmark root for both systems (what
semble 0.7.0 stores and what `quarry search --root <benchmark root>` prints),
and annotation paths are relative to the repository root, so matching relies
on the two-way suffix rule exactly as in semble's harness. A second, "strict"
score (result paths prefixed with benchmark_root, one-way suffix rule as in
semble's later common.py) is stored in the JSON and summarised in one line.

semble runs as BM25 + its ranking stack only, because its dense model
(minishlab/potion-code-16M-v2) is on the Hugging Face hub, which is
unreachable here. How, exactly (see semble_worker below): this file re-runs
itself with target/semble-venv/bin/python and PYTHONHASHSEED=0;
semble.search._search_semantic is replaced by a function returning no
candidates, so the hybrid search gets an empty semantic list; the index is
built with semble.index.create.create_index_from_path using a stand-in model
whose encode() returns zero vectors (never queried), with display_root = the
benchmark root, content = (ContentType.CODE,) (semble's default), and no
on-disk cache. Everything after the semantic branch runs unchanged: RRF
(k=60) with alpha 0.3 (symbol-like query) or 0.5 (otherwise), so the BM25
branch is weighted 0.7 / 0.5; file-coherence boost; definition/stem boosts;
path penalties and file-saturation decay. Its results are cached per repo in
target/dev-set/results/semble-<repo>.json (keyed by semble version, revision,
annotation checksum and this harness's worker version), so Quarry ablations
do not re-run it.

Quarry: `quarry index ROOT --cache-dir target/dev-set/cache/<repo>-lexical
--lexical`, then per query `quarry search --root ROOT --cache-dir ... --json
--limit 10 --lexical [--quarry-args] -- QUERY` (one process per query; the
wall time of each process is what "p50" reports). quarry-hybrid uses
target/dev-set/cache/<repo> and no --lexical; `quarry index` embeds every
chunk first; repos with more than --hybrid-max-chunks chunks are skipped.
quarry-static is quarry-hybrid with `--dense static` (the static tier
distilled from the same model; cache target/dev-set/cache/<repo>-static).
--quarry-args go to every `quarry search`; --quarry-index-args go to `quarry
index` AND `quarry search` (both refresh the index) and give the cache dir a
-<label> suffix so ablated indexes do not clobber the default ones.
--embed-limit N stops the embedding `quarry index` after N chunks (in the
order the language server embeds them, from an emptied cache) and gives the cache dir a
-partial<N> suffix: search quality while vectors are still filling in.
--static-fill (with --embed-limit) first gives every chunk a static-tier
vector (`quarry index --dense static` on the same cache, as the language
server does), so the static tier stands in for the chunks the transformer
has not reached (cache suffix -fill).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent.parent
DEV = PROJECT / "target" / "dev-set"
SEMBLE_PYTHON = PROJECT / "target" / "semble-venv" / "bin" / "python"
TOP_K = 10
WORKER_VERSION = "1"  # bump when semble_worker changes what it returns
ALL_SYSTEMS = ("semble", "quarry-lexical", "quarry-hybrid", "quarry-static")


# --------------------------------------------------------------------------- tasks and scoring


def load_repos() -> list[dict[str, str]]:
    sys.path.insert(0, str(HERE))
    from prepare import load_repos as _load  # our own tsv reader

    return _load()


def select_repos(rows: list[dict[str, str]], spec: str | None) -> list[dict[str, str]]:
    sys.path.insert(0, str(HERE))
    from prepare import select_repos as _select  # held-out and unknown names refused there

    return _select(rows, spec)


def parse_target(raw: object, kind: str) -> dict:
    if isinstance(raw, str):
        return {"path": raw, "start_line": None, "end_line": None, "kind": kind}
    assert isinstance(raw, dict)
    start, end = raw.get("start_line"), raw.get("end_line")
    return {
        "path": str(raw["path"]),
        "start_line": int(start) if start is not None else None,
        "end_line": int(end) if end is not None else None,
        "kind": kind,
    }


def infer_category(query: str) -> str:
    if " " not in query.strip():
        return "symbol"
    lowered = query.lower()
    if lowered.startswith("how ") or lowered.startswith("how does") or lowered.startswith("how are"):
        return "architecture"
    return "semantic"


def load_tasks(repo: dict[str, str]) -> list[dict]:
    path = DEV / "annotations" / f"{repo['name']}.json"
    if hashlib.sha256(path.read_bytes()).hexdigest() != repo["annotation_sha256"]:
        raise SystemExit(f"{path}: checksum differs from repos.tsv; re-run bench/dev/prepare.py")
    tasks = []
    for item in json.loads(path.read_text(encoding="utf-8")):
        if item.get("repo", repo["name"]) != repo["name"]:
            continue  # semble's loader files such an item under another repo; none of ours has one
        category = item.get("category")
        tasks.append(
            {
                "query": item["query"],
                "category": category if isinstance(category, str) else infer_category(item["query"]),
                "targets": [parse_target(t, "relevant") for t in item.get("relevant", [])]
                + [parse_target(t, "secondary") for t in item.get("secondary", [])],
            }
        )
    return tasks


def path_matches(file_path: str, target_path: str, two_way: bool = True) -> bool:
    f = file_path.replace("\\", "/")
    t = target_path.replace("\\", "/")
    return f == t or f.endswith("/" + t) or (two_way and t.endswith("/" + f))


def matches(hit: dict, target: dict, two_way: bool = True, prefix: str = "") -> bool:
    if not path_matches(prefix + hit["path"], target["path"], two_way):
        return False
    if target["start_line"] is None or target["end_line"] is None:
        return True
    return not (hit["end_line"] < target["start_line"] or hit["start_line"] > target["end_line"])


def dcg(gains: list[int]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at_k(ranks: list[int], n_relevant: int, k: int = TOP_K) -> float:
    if n_relevant == 0:
        return 0.0
    gains = [0] * k
    for r in ranks:
        if 1 <= r <= k:
            gains[r - 1] = 1
    ideal = dcg([1] * min(k, n_relevant))
    return dcg(gains) / ideal if ideal > 0 else 0.0


def score(hits: list[dict], targets: list[dict], two_way: bool = True, prefix: str = "") -> tuple[float, list]:
    ranks = []
    for t in targets:
        rank = next((i for i, h in enumerate(hits[:TOP_K], 1) if matches(h, t, two_way, prefix)), None)
        ranks.append(rank)
    return ndcg_at_k([r for r in ranks if r is not None], len(targets)), ranks


# --------------------------------------------------------------------------- semble


def semble_worker() -> None:
    """Runs inside target/semble-venv: reads {root, queries[, top_k]} on stdin, prints results as JSON."""
    import numpy as np
    import semble
    import semble.search as semble_search
    from semble.index.create import create_index_from_path
    from semble.index.index import SembleIndex
    from semble.types import ContentType

    assert os.environ.get("PYTHONHASHSEED") == "0", "semble breaks score ties by set order: run with PYTHONHASHSEED=0"

    class StandInModel:
        """Takes the place of the hub model: zero vectors, never queried (semantic search is patched out)."""

        dim = 8

        def encode(self, texts, **_kwargs):  # noqa: ANN001
            return np.zeros((len(texts), self.dim), dtype=np.float32)

    # No semantic candidates at all: search() then fuses the BM25 list alone.
    semble_search._search_semantic = lambda *args, **kwargs: []

    request = json.load(sys.stdin)
    root = Path(request["root"]).resolve()
    model = StandInModel()
    started = time.perf_counter()
    bm25, semantic, chunks, manifest = create_index_from_path(
        root, model=model, content=(ContentType.CODE,), display_root=root
    )
    index = SembleIndex(
        model, bm25, semantic, chunks, "stand-in", root=root, content=(ContentType.CODE,), manifest=manifest
    )
    index_ms = (time.perf_counter() - started) * 1000
    results, times = [], []
    for query in request["queries"]:
        started = time.perf_counter()
        found = index.search(query, top_k=request.get("top_k", TOP_K))
        times.append((time.perf_counter() - started) * 1000)
        results.append(
            [
                {"path": r.chunk.file_path, "start_line": r.chunk.start_line, "end_line": r.chunk.end_line, "score": r.score}
                for r in found
            ]
        )
    json.dump(
        {
            "semble_version": semble.__version__,
            "chunks": len(chunks),
            "files": len(manifest),
            "index_ms": index_ms,
            "results": results,
            "times_ms": times,
        },
        sys.stdout,
    )


def call_semble_worker(root: Path, queries: list[str], top_k: int = TOP_K) -> dict:
    """semble_worker's answer for `queries` on `root`, run in target/semble-venv
    (also the SWE-bench harness's peer). Raises RuntimeError with semble's
    stderr when it fails; exits when the venv is missing."""
    if not SEMBLE_PYTHON.exists():
        raise SystemExit(f"{SEMBLE_PYTHON} missing: python3 -m venv target/semble-venv && "
                         "target/semble-venv/bin/pip install semble==0.7.0")
    env = dict(os.environ, PYTHONHASHSEED="0", SEMBLE_CACHE_LOCATION=str(DEV / "semble-cache"),
               HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    proc = subprocess.run(
        [str(SEMBLE_PYTHON), str(Path(__file__).resolve()), "--semble-worker"],
        input=json.dumps({"root": str(root), "queries": queries, "top_k": top_k}),
        capture_output=True, text=True, env=env,
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    return json.loads(proc.stdout)


def run_semble(repo: dict[str, str], tasks: list[dict], root: Path, force: bool) -> dict:
    out = DEV / "results" / f"semble-{repo['name']}.json"
    key = hashlib.sha256(
        json.dumps(
            [WORKER_VERSION, repo["revision"], repo["benchmark_root"], repo["annotation_sha256"], [t["query"] for t in tasks]]
        ).encode()
    ).hexdigest()
    if not force and out.is_file():
        cached = json.loads(out.read_text())
        if cached.get("key") == key:
            cached["cached"] = True
            return cached
    started = time.perf_counter()
    try:
        data = call_semble_worker(root, [t["query"] for t in tasks])
    except RuntimeError as e:
        raise SystemExit(f"semble on {repo['name']} failed:\n{e}")
    data["key"] = key
    data["wall_s"] = time.perf_counter() - started
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data))
    data["cached"] = False
    return data


# --------------------------------------------------------------------------- quarry


def model_available(extra: list[str]) -> bool:
    if "--model" in extra:
        return True
    candidates = []
    if os.environ.get("QUARRY_MODEL"):
        candidates.append(Path(os.environ["QUARRY_MODEL"]))
    data_home = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    candidates.append(data_home / "quarry" / "models" / "all-MiniLM-L6-v2")
    return any((c / "model.safetensors").is_file() and (c / "tokenizer.json").is_file() for c in candidates)


def quarry(bin_: Path, args: list[str]) -> tuple[subprocess.CompletedProcess, float]:
    started = time.perf_counter()
    proc = subprocess.run([str(bin_), *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    return proc, (time.perf_counter() - started) * 1000


def run_quarry(system: str, repo: dict[str, str], tasks: list[dict], root: Path, opts: argparse.Namespace) -> dict:
    lexical = system == "quarry-lexical"
    static = system == "quarry-static"
    name = repo["name"] + ("-lexical" if lexical else "-static" if static else "")
    index_args = shlex.split(opts.quarry_index_args or "") + (["--dense", "static"] if static else [])
    if opts.quarry_index_args:
        name += f"-{opts.label or 'ablation'}"
    # Only the transformer's vectors are limited: the lexical and static
    # systems keep their own (complete) caches.
    limit = [] if lexical or static or opts.embed_limit is None else ["--embed-limit", str(opts.embed_limit)]
    if limit:
        name += f"-partial{opts.embed_limit}" + ("-fill" if opts.static_fill else "")
    cache = DEV / "cache" / name
    if limit and cache.exists():
        # `--embed-limit` counts the chunks one run embeds: start from an
        # empty index so coverage is exactly N (vectors come back from the
        # machine-wide vector cache, so this is quick).
        shutil.rmtree(cache)
    common = ["--cache-dir", str(cache), *index_args] + (["--lexical"] if lexical else [])
    search_extra = shlex.split(opts.quarry_args or "")

    # Lexical pass first (cheap), also to learn the chunk count before embedding.
    proc, lex_ms = quarry(opts.quarry_bin, ["index", str(root), *common, *([] if lexical else ["--lexical"]), "--json"])
    if proc.returncode != 0:
        raise SystemExit(f"quarry index {repo['name']} failed: {proc.stderr[-2000:]}")
    summary = json.loads(proc.stdout)
    chunks = summary["summary"].get("chunks")
    info = {"chunks": chunks, "files": summary["summary"].get("files_indexed"), "index_ms": lex_ms}
    if not chunks:
        raise SystemExit(f"quarry index {root} produced an empty index: {proc.stdout[-2000:]} {proc.stderr[-2000:]}")
    if not lexical:
        if not static and chunks is not None and chunks > opts.hybrid_max_chunks:
            return {**info, "skipped": f"{chunks} chunks > --hybrid-max-chunks {opts.hybrid_max_chunks}"}
        if limit and opts.static_fill:
            proc, _ = quarry(opts.quarry_bin, ["index", str(root), *common, "--dense", "static", "--json"])
            if proc.returncode != 0:
                raise SystemExit(f"quarry index --dense static {repo['name']} failed: {proc.stderr[-2000:]}")
        proc, embed_ms = quarry(opts.quarry_bin, ["index", str(root), *common, *limit, "--json"])
        if proc.returncode != 0:
            raise SystemExit(f"quarry index (embedding) {repo['name']} failed: {proc.stderr[-2000:]}")
        cov = json.loads(proc.stdout)["coverage"]
        info.update(embed_ms=embed_ms, coverage=cov)
        if cov["embedded"] < cov["total"] and not limit:
            print(f"warning: {repo['name']}: only {cov['embedded']}/{cov['total']} chunks embedded", file=sys.stderr)
    results, times, modes = [], [], []
    for task in tasks:
        proc, ms = quarry(
            opts.quarry_bin,
            ["search", "--root", str(root), *common, "--json", "--limit", str(TOP_K), *search_extra, "--", task["query"]],
        )
        if proc.returncode != 0:
            raise SystemExit(f"quarry search {task['query']!r} on {repo['name']} failed: {proc.stderr[-2000:]}")
        out = json.loads(proc.stdout)
        modes.append(out.get("mode"))
        times.append(ms)
        results.append(
            [
                {"path": h["path"], "start_line": h["start_line"], "end_line": h["end_line"], "score": h.get("score"),
                 "symbol": h.get("symbol"), "sources": h.get("sources")}
                for h in out.get("hits", [])
            ]
        )
    if not lexical and any(m not in ("hybrid", "partial") for m in modes):
        print(f"warning: {repo['name']}: quarry-hybrid ran {modes.count('lexical')} queries lexical-only", file=sys.stderr)
    return {**info, "results": results, "times_ms": times}


# --------------------------------------------------------------------------- driver


def run_repo(repo: dict[str, str], systems: list[str], opts: argparse.Namespace) -> dict:
    root = DEV / "repos" / repo["name"] / repo["benchmark_root"] if repo["benchmark_root"] else DEV / "repos" / repo["name"]
    if not root.is_dir():
        raise SystemExit(f"{root} missing: run bench/dev/prepare.py")
    tasks = load_tasks(repo)
    out: dict = {"repo": repo, "tasks": tasks, "systems": {}, "timing": {}}
    for system in systems:
        started = time.perf_counter()
        if system == "semble":
            out["systems"][system] = run_semble(repo, tasks, root, opts.force_semble)
        else:
            out["systems"][system] = run_quarry(system, repo, tasks, root, opts)
        out["timing"][system] = time.perf_counter() - started
        print(f"  {repo['name']:<14} {system:<16} {out['timing'][system]:7.1f} s"
              + ("  (cached)" if out["systems"][system].get("cached") else "")
              + (f"  SKIPPED: {out['systems'][system]['skipped']}" if out["systems"][system].get("skipped") else ""),
              file=sys.stderr, flush=True)
    return out


def mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def main() -> None:
    if "--semble-worker" in sys.argv:
        semble_worker()
        return
    parser = argparse.ArgumentParser(description="Quarry vs semble on the dev set (NDCG@10, semble's scoring).")
    parser.add_argument("--repos", help="comma-separated subset of bench/dev/repos.tsv")
    parser.add_argument("--systems", default=None,
                        help="comma-separated from semble,quarry-lexical,quarry-hybrid,quarry-static "
                             "(default: all four; the last two only if a model is installed). "
                             "quarry-static: the dense branch on the static tier (--dense static)")
    parser.add_argument("--label", default="", help="name of this run (output file, system column suffix)")
    parser.add_argument("--quarry-args", default="", help='extra args for every `quarry search`, e.g. "--rank file=0"')
    parser.add_argument("--quarry-index-args", default="", help="extra args for `quarry index` and `search`")
    parser.add_argument("--static-fill", action="store_true",
                        help="with --embed-limit: static-tier vectors for every chunk first, standing in "
                             "for the chunks the transformer has not embedded")
    parser.add_argument("--embed-limit", type=int, default=None,
                        help="quarry-hybrid: embed at most N chunks per repository (partial coverage)")
    parser.add_argument("--quarry-bin", type=Path, default=PROJECT / "target" / "release" / "quarry")
    parser.add_argument("--hybrid-max-chunks", type=int, default=6000)
    parser.add_argument("--jobs", type=int, default=2, help="repos run at once (at most 2)")
    parser.add_argument("--force-semble", action="store_true", help="ignore cached semble results")
    opts = parser.parse_args()

    repos = select_repos(load_repos(), opts.repos)
    extra_all = shlex.split(opts.quarry_args) + shlex.split(opts.quarry_index_args)
    if opts.systems:
        systems = [s.strip() for s in opts.systems.split(",") if s.strip()]
        if bad := [s for s in systems if s not in ALL_SYSTEMS]:
            raise SystemExit(f"unknown systems {bad}; choose from {ALL_SYSTEMS}")
        if {"quarry-hybrid", "quarry-static"} & set(systems) and not model_available(extra_all):
            raise SystemExit("quarry-hybrid and quarry-static need the model: run scripts/fetch-model.sh")
    else:
        systems = ["semble", "quarry-lexical"] + (
            ["quarry-hybrid", "quarry-static"] if model_available(extra_all) else []
        )
        if "quarry-hybrid" not in systems:
            print("note: no embedding model installed (scripts/fetch-model.sh): skipping quarry-hybrid", file=sys.stderr)
    if any(s.startswith("quarry") for s in systems) and not opts.quarry_bin.exists():
        raise SystemExit(f"{opts.quarry_bin} missing: build it (cargo build --release)")

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, min(2, opts.jobs))) as pool:
        runs = list(pool.map(lambda r: run_repo(r, systems, opts), repos))
    total_s = time.perf_counter() - started

    suffix = f"[{opts.label}]" if opts.label else ""
    col = {s: (s + suffix if s != "semble" else s) for s in systems}
    per_query = []
    repo_scores: dict[str, dict[str, float | None]] = {}
    repo_cat: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)  # system -> repo -> {cat: mean}
    strict: dict[str, dict[str, float]] = defaultdict(dict)  # system -> repo -> strict mean
    times: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        name = run["repo"]["name"]
        repo_scores[name] = {}
        prefix = run["repo"]["benchmark_root"] + "/" if run["repo"]["benchmark_root"] else ""
        for system in systems:
            res = run["systems"][system]
            if res.get("skipped"):
                repo_scores[name][system] = None
                continue
            vals, cats, strict_vals = [], defaultdict(list), []
            for task, hits in zip(run["tasks"], res["results"]):
                nd, ranks = score(hits, task["targets"])
                snd, _ = score(hits, task["targets"], two_way=False, prefix=prefix)
                vals.append(nd)
                strict_vals.append(snd)
                cats[task["category"]].append(nd)
            repo_scores[name][system] = mean(vals)
            repo_cat[system][name] = {c: mean(v) for c, v in cats.items()}
            strict[system][name] = mean(strict_vals)
            if system != "semble":
                times[system].extend(res["times_ms"])
        for qi, task in enumerate(run["tasks"]):
            entry = {"repo": name, "language": run["repo"]["language"], "query": task["query"],
                     "category": task["category"], "targets": task["targets"], "systems": {}}
            for system in systems:
                res = run["systems"][system]
                if res.get("skipped"):
                    continue
                hits = res["results"][qi]
                nd, ranks = score(hits, task["targets"])
                snd, _ = score(hits, task["targets"], two_way=False, prefix=prefix)
                entry["systems"][col[system]] = {
                    "ndcg10": nd, "ndcg10_strict": snd, "target_ranks": ranks,
                    "time_ms": res["times_ms"][qi],
                    "top10": [{**h, "relevant": any(matches(h, t) for t in task["targets"])} for h in hits[:TOP_K]],
                }
            per_query.append(entry)

    # ---- the table
    languages = sorted({r["repo"]["language"] for r in runs})
    categories = sorted({t["category"] for r in runs for t in r["tasks"]})
    rows: list[tuple[str, str, dict[str, float | None]]] = []
    for run in runs:
        rows.append((run["repo"]["name"], str(len(run["tasks"])), repo_scores[run["repo"]["name"]]))
    rows.append(("", "", {}))
    for cat in categories:
        n = sum(1 for r in runs for t in r["tasks"] if t["category"] == cat)
        vals = {s: mean([c[cat] for c in repo_cat[s].values() if cat in c]) for s in systems}
        rows.append((f"category {cat}", str(n), vals))
    rows.append(("", "", {}))
    for lang in languages:
        names = [r["repo"]["name"] for r in runs if r["repo"]["language"] == lang]
        vals = {s: mean([repo_scores[n][s] for n in names if repo_scores[n][s] is not None]) for s in systems}
        rows.append((f"language {lang}", str(len(names)), vals))
    rows.append(("", "", {}))
    complete = [n for n in repo_scores if all(repo_scores[n][s] is not None for s in systems)]
    rows.append(("MEAN over repos" + (" run by all" if len(complete) < len(repo_scores) else ""), str(len(complete)),
                 {s: mean([repo_scores[n][s] for n in complete]) for s in systems}))
    if len(complete) < len(repo_scores):
        rows.append(("mean, every repo run", str(len(repo_scores)),
                     {s: mean([v[s] for v in repo_scores.values() if v[s] is not None]) for s in systems}))
    lang_means = {s: [] for s in systems}
    n_langs = 0
    for lang in languages:
        names = [n for n in complete if next(r for r in runs if r["repo"]["name"] == n)["repo"]["language"] == lang]
        n_langs += bool(names)
        for s in systems:
            if names:
                lang_means[s].append(mean([repo_scores[n][s] for n in names]))
    rows.append(("mean over languages", str(n_langs), {s: mean(lang_means[s]) for s in systems}))
    p50 = {s: (statistics.median(times[s]) if times.get(s) else None) for s in systems}

    width = max(len(col[s]) for s in systems) + 2
    head = f"{'NDCG@10':<26}{'n':>4}" + "".join(f"{col[s]:>{width}}" for s in systems)
    print(head)
    print("-" * len(head))
    for label, n, vals in rows:
        if not label:
            print()
            continue
        cells = "".join(f"{(f'{vals[s]:.3f}' if vals.get(s) is not None else '-'):>{width}}" for s in systems)
        print(f"{label:<26}{n:>4}{cells}")
    print(f"{'query wall p50 (ms)':<26}{'':>4}" + "".join(
        f"{(f'{p50[s]:.1f}' if p50[s] is not None else '-'):>{width}}" for s in systems))
    print(f"strict paths (benchmark_root-prefixed, one-way match), mean over the {len(complete)} repos: " + ", ".join(
        f"{col[s]} {mean([strict[s][n] for n in complete]):.3f}" for s in systems))
    skipped = [(r["repo"]["name"], s, r["systems"][s]["skipped"]) for r in runs for s in systems
               if r["systems"][s].get("skipped")]
    for name, s, why in skipped:
        print(f"skipped {s} on {name}: {why}")
    print("semble = semble 0.7.0, BM25 + ranking only (semantic branch returns nothing: hub model unreachable)")

    label = opts.label or "default"
    out_path = DEV / "results" / f"run-{label}.json"
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps({
        "label": opts.label, "systems": [col[s] for s in systems], "quarry_args": opts.quarry_args,
        "quarry_index_args": opts.quarry_index_args, "total_s": total_s,
        "repos": {r["repo"]["name"]: {
            "language": r["repo"]["language"],
            "ndcg10": {col[s]: repo_scores[r["repo"]["name"]][s] for s in systems},
            "chunks": {col[s]: r["systems"][s].get("chunks") for s in systems},
            "index_ms": {col[s]: r["systems"][s].get("index_ms") for s in systems},
            "wall_s": {col[s]: r["timing"][s] for s in systems},
        } for r in runs},
        "query_p50_ms": {col[s]: p50[s] for s in systems},
        "queries": per_query,
    }, indent=1))
    print(f"per-query results: {out_path.relative_to(PROJECT)}  (total {total_s:.0f} s)")


if __name__ == "__main__":
    main()
