#!/usr/bin/env python3
"""SWE-bench Lite development harness for Quarry's search on issue texts.

The query is an issue's problem statement (often hundreds of words, with
quotes, code blocks and tracebacks); the relevant code is what the issue's
gold patch changes. This is a *development* set: instances from requests,
pylint, pytest and sphinx are held out for evaluation and never used here.

Subcommands (run from anywhere; paths are relative to the repository root):

  select    rewrite bench/dev/swebench_instances.txt from the records by the
            fixed rule in SELECTION (all instances of the repositories the
            `fetch` tool mirrors, then the django, scikit-learn and matplotlib
            instances whose gold patch fits one of their PyPI releases; needs
            `sdists` first).
  sdists    download (PyPI's simple index only) and unpack the releases
            SDIST_REPOS names into target/dev-set/sdists.
  prepare   verify the records file, extract each chosen instance's repository
            at base_commit into target/dev-set/swe/<id> (from a git mirror made
            by the `fetch` tool, /work/.mirror/<owner>+<name>/repo; the others from
            a release with the gold patch reversed, see SDIST_REPOS) and derive
            the gold files and gold functions into target/dev-set/swe-gold.json.
  run       index and search every instance with Quarry (or, --mode semble,
            with semble 0.7.0's BM25 stack), score it, score the
            BM25 file baseline, print tables, write
            target/dev-set/results/swebench-<label>.json.
  compare   per-instance differences between two result files.

Typical use (the records file is swe-bench-lite.json from the GitHub repository
ivan4722/csvtransfer, copied to target/dev-set/; the mirrors come from the
`fetch` tool: github:pallets/flask, mwaskom/seaborn, pydata/xarray,
astropy/astropy, sympy/sympy):

  python3 bench/dev/swebench.py sdists
  python3 bench/dev/swebench.py select
  python3 bench/dev/swebench.py prepare
  python3 bench/dev/swebench.py run --label base --jobs 2
  python3 bench/dev/swebench.py run --mode semble --label semble --jobs 2
  python3 bench/dev/swebench.py run --label nocap --quarry-args "--rank saturation=0"
  python3 bench/dev/swebench.py compare target/dev-set/results/swebench-{base,nocap}.json

Pass --quarry to run a copy of the binary (a build finishing mid-run would
otherwise change it between instances). The query goes to Quarry as one argv
element after `--`, so texts starting with "-" and holding quotes and newlines
arrive intact.

Gold (derived from the gold patch, on the base version of each file):
  * gold files: files the patch changes that exist at base_commit, minus test
    files (a path part named test/tests/testing, test_*.py, *_test.py,
    conftest.py) and docs (doc/ or docs/ trees, .rst/.md/.txt files).
  * gold functions: for each changed .py gold file, parse the base version with
    `ast`; for every removed/changed line on the old side of a hunk, the
    innermost function or method (decorators included in its span) that
    encloses it. For a pure insertion after old line k, the innermost function
    f with f.start <= k <= f.end whose `def` column is left of the inserted
    text's indentation (so text appended to a body counts for that function,
    while a new sibling method counts for none). Changes at module or class
    level give no gold function.

Metrics (per instance, averaged over instances):
  * file Acc@k (k = 1, 5, 10): every gold file is among the first k DISTINCT files of the hit
    list (hits in order; a file counts at its first hit).
  * file found: every gold file appears somewhere in the hit list (limit 50).
  * function R@10: fraction of gold functions matched by the top 10 hits. A hit
    matches gold function g when the paths are equal, the line ranges overlap
    and the hit spans at most 3x g's lines (a class- or file-sized chunk that
    merely contains g does not count). Instances without gold functions are
    left out of this average (the n is printed).
  * BM25 baseline: Okapi BM25 (k1=1.2, b=0.75) over whole files, ranking files.
    Universe: files under the checkout with a text/source extension (TEXT_EXTS)
    up to 1 MiB, hidden directories skipped. Tokens: runs of [A-Za-z0-9_],
    lowercased, plus their snake_case and camelCase parts when there are
    several. Query: the distinct tokens of the problem statement, no stopword
    list (idf = ln(1 + (N - df + 0.5) / (df + 0.5))). Results are cached in
    target/dev-set/results/bm25-cache.json (they do not depend on Quarry).
"""

from __future__ import annotations

import argparse
import ast
import collections
import concurrent.futures
import difflib
import functools
import hashlib
import html
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import call_semble_worker  # noqa: E402  (semble's worker, shared with run.py)

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT / "target" / "dev-set"
DEFAULT_RECORDS = DEV / "swe-bench-lite.json"
# sha256 of swe-bench-lite.json in github.com/ivan4722/csvtransfer (300
# records, SWE-bench Lite test split).
RECORDS_SHA256 = "8f49b42a35ffbf6f70326bbae42d5e8e8f129d39f7972faa7eb46ba0a9d86341"
INSTANCES_FILE = ROOT / "bench" / "dev" / "swebench_instances.txt"
CHECKOUTS = DEV / "swe"
CACHES = DEV / "swe-cache"
GOLD_FILE = DEV / "swe-gold.json"
RESULTS = DEV / "results"
BM25_CACHE = RESULTS / "bm25-cache.json"
DEFAULT_MIRRORS = Path(os.environ.get("QUARRY_DEV_MIRRORS", "/work/.mirror"))
DEFAULT_QUARRY = ROOT / "target" / "release" / "quarry"

# Held out for evaluation: never select, prepare or run these.
HELD_OUT = {"psf/requests", "pylint-dev/pylint", "pytest-dev/pytest", "sphinx-doc/sphinx"}
# Selection rule (see `select`). Repositories whose git snapshot the `fetch`
# tool brings (at most 500 MiB) are checked out at base_commit from the mirror.
# django, scikit-learn and matplotlib are larger than that; they come from
# their PyPI source releases instead (see SDIST_REPOS).
MIRROR_REPOS = ["pallets/flask", "mwaskom/seaborn", "pydata/xarray", "astropy/astropy",
                "sympy/sympy"]
# A repository checked out from PyPI sdists: the package name and its
# releases, oldest first, as (SWE-bench version, release on PyPI): the first
# release of that line that has an sdist (scikit-learn 0.21.0 and 0.22.0 have
# none). An instance of version X.Y is the first of these its gold patch
# fits: that release with the patch reversed (the fix landed in it); the
# release before it as it stands; that release as it stands (the fix came
# later); the release after it with the patch reversed. An instance whose
# gold patch fits none is not selected. Files outside the gold patch are the release's, not
# base_commit's: close to the tree, not identical.
SDIST_REPOS = {
    "django/django": ("Django", [("3.0", "3.0"), ("3.1", "3.1"), ("3.2", "3.2"), ("4.0", "4.0"),
                                 ("4.1", "4.1"), ("4.2", "4.2"), ("5.0", "5.0")]),
    "scikit-learn/scikit-learn": ("scikit-learn", [
        ("0.19", "0.19.0"), ("0.20", "0.20.0"), ("0.21", "0.21.1"), ("0.22", "0.22.1"),
        ("1.2", "1.2.0"), ("1.3", "1.3.0")]),
    "matplotlib/matplotlib": ("matplotlib", [
        ("3.2", "3.2.0"), ("3.3", "3.3.0"), ("3.4", "3.4.0"), ("3.5", "3.5.0"),
        ("3.6", "3.6.0"), ("3.7", "3.7.0")]),
}
PYPI_SIMPLE = "https://pypi.org/simple"
SDISTS = DEV / "sdists"
SELECTION = (
    f"all instances of {', '.join(MIRROR_REPOS)}; then every instance of "
    f"{', '.join(SDIST_REPOS)} whose gold patch fits a PyPI release (see SDIST_REPOS), "
    "sorted by instance_id"
)

TEXT_EXTS = {
    ".py", ".pyx", ".pxd", ".pyi", ".c", ".h", ".cpp", ".cc", ".hpp", ".js", ".ts",
    ".rst", ".md", ".txt", ".toml", ".cfg", ".ini", ".yml", ".yaml", ".json", ".sh",
}
MAX_FILE_SIZE = 1 << 20
BM25_K1 = 1.2
BM25_B = 0.75
BM25_VERSION = 1  # bump when the baseline changes, to invalidate the cache
SIZE_FACTOR = 3  # a hit spanning more than this many times a gold function's lines does not match it
MAX_JOBS = 2


# ---------------------------------------------------------------- records ---

def load_records(path: Path) -> dict[str, dict]:
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != RECORDS_SHA256:
        sys.exit(f"{path}: sha256 {digest} is not the expected {RECORDS_SHA256}")
    return {r["instance_id"]: r for r in json.loads(data)}


def read_instance_ids() -> list[str]:
    ids = []
    for line in INSTANCES_FILE.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            ids.append(line)
    return ids


def chosen(records: dict[str, dict], only: list[str] | None = None) -> list[dict]:
    out = []
    for iid in read_instance_ids():
        rec = records.get(iid)
        if rec is None:
            sys.exit(f"{iid}: not in the records file")
        if rec["repo"] in HELD_OUT:
            sys.exit(f"{iid}: {rec['repo']} is held out for evaluation")
        if only and not any(o in iid for o in only):
            continue
        out.append(rec)
    return out


def cmd_select(args) -> None:
    records = load_records(Path(args.records))
    recs = sorted(records.values(), key=lambda r: r["instance_id"])
    ids = [r["instance_id"] for r in recs if r["repo"] in MIRROR_REPOS]
    for r in recs:
        if r["repo"] in SDIST_REPOS:
            if sdist_fit(r) is None:
                print(f"{r['instance_id']}: gold patch fits no release, not selected")
            else:
                ids.append(r["instance_id"])
    assert not any(records[i]["repo"] in HELD_OUT for i in ids)
    text = "# SWE-bench Lite dev instances for bench/dev/swebench.py (ids only).\n"
    text += f"# Rule: {SELECTION}.\n"
    text += "# Held out, never used here: " + ", ".join(sorted(HELD_OUT)) + ".\n"
    text += "".join(i + "\n" for i in ids)
    INSTANCES_FILE.write_text(text)
    print(f"wrote {len(ids)} ids to {INSTANCES_FILE.relative_to(ROOT)}")


# ------------------------------------------------------------------- gold ---

def is_test_path(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1]
    if any(p in ("test", "tests", "testing") for p in parts[:-1]):
        return True
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"


def is_doc_path(path: str) -> bool:
    return path.split("/")[0] in ("doc", "docs") or path.endswith((".rst", ".md", ".txt"))


def parse_patch(patch: str) -> list[dict]:
    """Per file: old/new path and change blocks on the old side.

    A block is a run of -/+ lines: {"removed": [old line numbers],
    "after": k (old line before the block), "added": [added texts]}.
    """
    files: list[dict] = []
    cur = None
    old_left = new_left = 0
    old_ln = 0
    block = None

    def flush():
        nonlocal block
        if block is not None and cur is not None:
            cur["blocks"].append(block)
        block = None

    for line in patch.split("\n"):
        if old_left > 0 or new_left > 0:
            tag, text = line[:1], line[1:]
            if tag == "\\":
                continue
            if tag in (" ", ""):
                flush()
                old_ln += 1
                old_left -= 1
                new_left -= 1
            elif tag == "-":
                if block is None:
                    block = {"removed": [], "after": old_ln - 1, "added": []}
                block["removed"].append(old_ln)
                old_ln += 1
                old_left -= 1
            elif tag == "+":
                if block is None:
                    block = {"removed": [], "after": old_ln - 1, "added": []}
                block["added"].append(text)
                new_left -= 1
            if old_left <= 0 and new_left <= 0:
                flush()
            continue
        if line.startswith("diff --git "):
            flush()
            cur = {"old": None, "new": None, "blocks": []}
            files.append(cur)
        elif line.startswith("--- ") and cur is not None:
            p = line[4:].split("\t")[0]
            cur["old"] = None if p == "/dev/null" else p[2:] if p.startswith("a/") else p
        elif line.startswith("+++ ") and cur is not None:
            p = line[4:].split("\t")[0]
            cur["new"] = None if p == "/dev/null" else p[2:] if p.startswith("b/") else p
        elif line.startswith("@@ ") and cur is not None:
            m = re.match(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", line)
            if not m:
                raise ValueError(f"bad hunk header {line!r}")
            old_ln = int(m.group(1))
            old_left = int(m.group(2)) if m.group(2) is not None else 1
            new_left = int(m.group(4)) if m.group(4) is not None else 1
            if old_left == 0:
                # "-k,0": the insertion goes after old line k.
                old_ln += 1
    flush()
    return files


def functions_of(source: str) -> list[dict]:
    """Every function/method: qualified name, span (decorators included), def column."""
    tree = ast.parse(source)
    out = []

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                start = min([child.lineno] + [d.lineno for d in child.decorator_list])
                out.append({"name": name, "start": start, "end": child.end_lineno,
                            "col": child.col_offset})
                walk(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    return out


def innermost(funcs, pred):
    best = None
    for f in funcs:
        if pred(f) and (best is None or f["start"] > best["start"]
                        or (f["start"] == best["start"] and f["end"] < best["end"])):
            best = f
    return best


def derive_gold(rec: dict, checkout: Path) -> dict:
    gold_files, gold_funcs, notes = [], [], []
    patch = rec["patch"]
    if rec["repo"] in SDIST_REPOS:
        patch = rebased_patch(rec, checkout)
        notes.append("tree: " + source_note(checkout).read_text().strip())
    for fd in parse_patch(patch):
        path = fd["old"]
        if path is None:
            notes.append(f"new file {fd['new']} ignored")
            continue
        if is_test_path(path) or is_doc_path(path):
            notes.append(f"{path} ignored (test/doc)")
            continue
        base_file = checkout / path
        if not base_file.is_file():
            notes.append(f"{path} missing at base, ignored")
            continue
        gold_files.append(path)
        if not path.endswith(".py"):
            continue
        source = base_file.read_text(encoding="utf-8", errors="replace")
        try:
            funcs = functions_of(source)
        except SyntaxError as e:
            notes.append(f"{path}: ast failed ({e})")
            continue
        found = {}
        for b in fd["blocks"]:
            hits = []
            for ln in b["removed"]:
                hits.append(innermost(funcs, lambda f: f["start"] <= ln <= f["end"]))
            if not b["removed"]:
                texts = [t for t in b["added"] if t.strip()]
                if texts:
                    indent = len(texts[0]) - len(texts[0].lstrip())
                    k = b["after"]
                    hits.append(innermost(
                        funcs, lambda f: f["start"] <= k <= f["end"] and f["col"] < indent))
            for f in hits:
                if f is not None:
                    found[(f["name"], f["start"])] = f
        for f in sorted(found.values(), key=lambda f: f["start"]):
            gold_funcs.append({"path": path, "name": f["name"], "start": f["start"],
                               "end": f["end"]})
    return {"repo": rec["repo"], "base_commit": rec["base_commit"], "files": gold_files,
            "functions": gold_funcs, "notes": notes}


# ---------------------------------------------------------------- prepare ---

def mirror_of(repo: str, mirrors: Path) -> Path:
    owner, name = repo.split("/")
    for cand in (mirrors / f"{owner}+{name}" / "repo", mirrors / f"{owner}+{name}"):
        if (cand / "HEAD").is_file():
            return cand
    sys.exit(f"no git mirror for {repo} under {mirrors} (fetch github:{repo} first)")


def materialize(rec: dict, mirrors: Path) -> Path:
    dest = CHECKOUTS / rec["instance_id"]
    if dest.is_dir():
        return dest
    if rec["repo"] in SDIST_REPOS:
        return materialize_sdist(rec, dest)
    git_dir = mirror_of(rec["repo"], mirrors)
    CHECKOUTS.mkdir(parents=True, exist_ok=True)
    missing = missing_blobs(git_dir, rec["base_commit"])
    if missing:
        print(f"{rec['instance_id']}: {len(missing)} file(s) absent from the mirror, skipped: "
              + " ".join(missing[:5]))
    tmp = Path(tempfile.mkdtemp(prefix=rec["instance_id"] + ".", dir=CHECKOUTS))
    archive = subprocess.Popen(
        ["git", "--git-dir", str(git_dir), "archive", rec["base_commit"], "--", "."]
        + [f":(exclude,literal){m}" for m in missing],
        # With exclusions git still complains about the absent blobs; the archive is whole.
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL if missing else None)
    untar = subprocess.run(["tar", "-x", "-C", str(tmp)], stdin=archive.stdout)
    archive.stdout.close()
    if archive.wait() != 0 or untar.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        sys.exit(f"{rec['instance_id']}: git archive {rec['base_commit']} failed")
    tmp.rename(dest)
    return dest


def missing_blobs(git_dir: Path, commit: str) -> list[str]:
    """Paths whose blobs the mirror lacks (the fetch tool leaves out files of 4 MiB and more)."""
    tree = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-z", commit],
                          capture_output=True, check=True).stdout.decode("utf-8", "surrogateescape")
    entries = []
    for item in tree.split("\0"):
        if item:
            meta, path = item.split("\t", 1)
            mode, kind, sha = meta.split()
            if kind == "blob":
                entries.append((sha, path))
    check = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "--batch-check"],
                           input="".join(sha + "\n" for sha, _ in entries).encode(),
                           capture_output=True, check=True).stdout.decode().splitlines()
    return [path for (sha, path), line in zip(entries, check) if line.endswith(" missing")]


# ---------------------------------------------------------------- sdists ---

def sdist_root(repo: str, release: str) -> Path:
    package, _ = SDIST_REPOS[repo]
    return SDISTS / f"{package}-{release}"


@functools.cache
def simple_index(package: str) -> dict[str, str]:
    """Every file PyPI's simple index lists for `package`: lower-cased name ->
    address. Read once per package."""
    page = urllib.request.urlopen(f"{PYPI_SIMPLE}/{package.lower()}/", timeout=120).read()
    files = {}
    for href in re.findall(r'href="([^"]+)"', page.decode()):
        url = html.unescape(href).split("#")[0]
        files[url.rsplit("/", 1)[-1].lower()] = url
    return files


def sdist_url(package: str, release: str) -> str:
    """The sdist's address on PyPI's simple index. Read from the index, not
    built by pip: `pip download` of an sdist prepares its metadata, which for
    scikit-learn means building numpy and Cython first."""
    url = simple_index(package).get(f"{package}-{release}.tar.gz".lower())
    if url is None:
        sys.exit(f"{package} {release}: no sdist on {PYPI_SIMPLE}")
    return url


def cmd_sdists(args) -> None:
    """Download and unpack every release named in SDIST_REPOS (PyPI only)
    into target/dev-set/sdists/<package>-<release>."""
    SDISTS.mkdir(parents=True, exist_ok=True)
    for repo, (package, releases) in SDIST_REPOS.items():
        for _, release in releases:
            root = sdist_root(repo, release)
            if root.is_dir():
                continue
            tarball = SDISTS / f"{package}-{release}.tar.gz"
            if not tarball.is_file():
                url = sdist_url(package, release)
                part = tarball.with_suffix(".part")
                with urllib.request.urlopen(url, timeout=600) as r, open(part, "wb") as f:
                    shutil.copyfileobj(r, f)
                part.rename(tarball)
            tmp = Path(tempfile.mkdtemp(prefix=root.name + ".", dir=SDISTS))
            subprocess.run(["tar", "-xzf", str(tarball), "-C", str(tmp), "--strip-components=1"],
                           check=True)
            tmp.rename(root)
            print(f"{root.relative_to(ROOT)} ready")


def patch_fits(root: Path, patch: str, reverse: bool) -> bool:
    argv = ["patch", "-p1", "--dry-run", "--force", "--silent", "-d", str(root)]
    proc = subprocess.run(argv + (["-R"] if reverse else []), input=patch.encode(),
                          capture_output=True)
    return proc.returncode == 0


def sdist_fit(rec: dict) -> tuple[str, bool] | None:
    """(release, reverse): the release whose tree is the issue's, and whether
    the gold patch must be reversed on it to get there; None when none fits."""
    _, releases = SDIST_REPOS[rec["repo"]]
    versions = [v for v, _ in releases]
    if rec["version"] not in versions:
        return None
    i = versions.index(rec["version"])
    # django's version at a commit names the coming release; matplotlib's
    # names the last one, so its fixes land in the release after.
    for j, reverse in ((i, True), (i - 1, False), (i, False), (i + 1, True)):
        if 0 <= j < len(releases):
            root = sdist_root(rec["repo"], releases[j][1])
            if not root.is_dir():
                sys.exit(f"{root} missing: run `sdists` first")
            if patch_fits(root, rec["patch"], reverse):
                return releases[j][1], reverse
    return None


def materialize_sdist(rec: dict, dest: Path) -> Path:
    fit = sdist_fit(rec)
    if fit is None:
        sys.exit(f"{rec['instance_id']}: the gold patch fits no release")
    version, reverse = fit
    CHECKOUTS.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=rec["instance_id"] + ".", dir=CHECKOUTS))
    shutil.copytree(sdist_root(rec["repo"], version), tmp, dirs_exist_ok=True)
    if reverse:
        argv = ["patch", "-p1", "-R", "--force", "--silent", "--no-backup-if-mismatch",
                "-d", str(tmp)]
        if subprocess.run(argv, input=rec["patch"].encode()).returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            sys.exit(f"{rec['instance_id']}: reversing the gold patch failed")
    tmp.rename(dest)
    # Beside the checkout, not in it: Quarry must not index it.
    source_note(dest).write_text(
        f"{SDIST_REPOS[rec['repo']][0]}-{version}"
        f"{' with the gold patch reversed' if reverse else ''}\n")
    return dest


def source_note(checkout: Path) -> Path:
    return checkout.with_name(checkout.name + ".source")


def rebased_patch(rec: dict, checkout: Path) -> str:
    """The gold patch re-expressed against the checkout's own line numbers.

    A checkout made from a release differs from base_commit outside the fix,
    so the patch's hunk positions are off: apply it to a copy of each changed
    file and diff the two versions (no context lines)."""
    out = []
    for fd in parse_patch(rec["patch"]):
        path = fd["old"]
        if path is None:
            # A new file: kept as one, so the gold notes say so.
            out.append(f"diff --git a/{fd['new']} b/{fd['new']}\n--- /dev/null\n+++ b/{fd['new']}\n")
            continue
        if not (checkout / path).is_file():
            # Absent from this tree: no hunks, noted as missing at base.
            out.append(f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n")
            continue
        old = (checkout / path).read_text(encoding="utf-8", errors="replace")
        with tempfile.TemporaryDirectory() as td:
            shutil.copy(checkout / path, Path(td) / "f")
            one = single_file_patch(rec["patch"], path)
            proc = subprocess.run(["patch", "--force", "--silent", str(Path(td) / "f")],
                                  input=one.encode(), capture_output=True)
            if proc.returncode != 0:
                raise ValueError(f"{path}: gold patch does not apply to the checkout")
            new = (Path(td) / "f").read_text(encoding="utf-8", errors="replace")
        out.append(f"diff --git a/{path} b/{path}\n")
        out.extend(line if line.endswith("\n") else line + "\n" for line in difflib.unified_diff(
            old.splitlines(), new.splitlines(), "a/" + path, "b/" + path, n=0, lineterm=""))
    return "".join(out)


def single_file_patch(patch: str, path: str) -> str:
    """The part of a git patch that changes `path`."""
    keep, out = False, []
    for line in patch.splitlines(keepends=True):
        if line.startswith("diff --git "):
            keep = line.rstrip("\n").endswith(" b/" + path) or f" a/{path} " in line
        if keep:
            out.append(line)
    return "".join(out)


def cmd_prepare(args) -> None:
    records = load_records(Path(args.records))
    recs = chosen(records, args.only)
    gold = json.loads(GOLD_FILE.read_text()) if GOLD_FILE.is_file() else {}
    t0 = time.time()
    for rec in recs:
        dest = materialize(rec, Path(args.mirrors))
        g = derive_gold(rec, dest)
        gold[rec["instance_id"]] = g
        warn = "" if g["files"] else "  WARNING: no gold file"
        print(f"{rec['instance_id']:32} files={len(g['files'])} functions={len(g['functions'])} "
              + " ".join(f["name"] for f in g["functions"]) + warn)
        for n in g["notes"]:
            print(f"    note: {n}")
    GOLD_FILE.write_text(json.dumps(gold, indent=1, sort_keys=True))
    print(f"{len(recs)} instances ready in {time.time() - t0:.1f}s; gold in "
          f"{GOLD_FILE.relative_to(ROOT)}")


# ------------------------------------------------------------------- BM25 ---

_WORD = re.compile(r"[A-Za-z0-9_]+")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


class Tokenizer:
    def __init__(self):
        self.memo: dict[str, list[str]] = {}

    def words(self, word: str) -> list[str]:
        toks = self.memo.get(word)
        if toks is None:
            toks = [word.lower()]
            parts = _PART.findall(word)
            if len(parts) > 1:
                toks += [p.lower() for p in parts]
            self.memo[word] = toks
        return toks

    def __call__(self, text: str) -> list[str]:
        out = []
        for w in _WORD.findall(text):
            out += self.words(w)
        return out


def bm25_files(root: Path, query: str, limit: int = 50) -> list[str]:
    tok = Tokenizer()
    qterms = set(tok(query))
    docs = []  # (path, length, {term: tf} for query terms)
    df = collections.Counter()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for fn in sorted(filenames):
            p = Path(dirpath) / fn
            if p.suffix.lower() not in TEXT_EXTS:
                continue
            try:
                if p.stat().st_size > MAX_FILE_SIZE:
                    continue
                text = p.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            toks = tok(text)
            counts = collections.Counter(t for t in toks if t in qterms)
            docs.append((p.relative_to(root).as_posix(), len(toks), counts))
            df.update(counts.keys())
    if not docs:
        return []
    n = len(docs)
    avgdl = sum(d[1] for d in docs) / n
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in df}
    scored = []
    for path, dl, counts in docs:
        norm = BM25_K1 * (1 - BM25_B + BM25_B * dl / avgdl)
        s = sum(idf[t] * tf * (BM25_K1 + 1) / (tf + norm) for t, tf in counts.items())
        if s > 0:
            scored.append((-s, path))
    scored.sort()
    return [p for _, p in scored[:limit]]


# -------------------------------------------------------------------- run ---

def distinct_files(paths: list[str]) -> list[str]:
    seen, out = set(), []
    for p in paths:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def file_metrics(files: list[str], gold_files: list[str]) -> dict:
    ranks = {g: (files.index(g) + 1 if g in files else None) for g in gold_files}
    worst = None if any(r is None for r in ranks.values()) else max(ranks.values(), default=None)
    return {
        "gold_file_ranks": ranks,
        "acc1": worst is not None and worst <= 1,
        "acc5": worst is not None and worst <= 5,
        "acc10": worst is not None and worst <= 10,
        "found": worst is not None,
    }


def func_matches(hit: dict, g: dict) -> bool:
    if hit["path"] != g["path"]:
        return False
    s, e = hit["start_line"], hit["end_line"]
    if s > g["end"] or g["start"] > e:
        return False
    return (e - s + 1) <= SIZE_FACTOR * (g["end"] - g["start"] + 1)


def run_quarry(quarry: str, argv: list[str]) -> tuple[subprocess.CompletedProcess, float]:
    t = time.time()
    proc = subprocess.run([quarry] + argv, capture_output=True, text=True)
    return proc, time.time() - t


def search_semble(root: Path, query: str, limit: int) -> dict:
    """semble 0.7.0's BM25 + ranking stack on one checkout, run as
    bench/dev/run.py runs it on semble's benchmark (its worker, semantic branch
    patched out)."""
    try:
        data = call_semble_worker(root, [query], top_k=limit)
    except RuntimeError as e:
        return {"error": f"semble failed: {e}"}
    hits = [{"path": h["path"], "start_line": h["start_line"], "end_line": h["end_line"]}
            for h in data["results"][0]]
    return {"mode": "semble", "hits": hits, "index_ms": data["index_ms"],
            "search_ms": data["times_ms"][0]}


def search_quarry(root: Path, cache: Path, query: str, args, out: dict) -> dict:
    """Index and search one checkout with Quarry in `args.mode`; times go to
    `out`, a failure to `out["error"]` (the result is then empty)."""
    lexical = ["--lexical"] if args.mode == "lexical" else []
    proc, index_s = run_quarry(args.quarry, ["index", str(root), "--cache-dir", str(cache)]
                               + lexical + shlex.split(args.index_args))
    out["index_s"] = round(index_s, 2)
    if proc.returncode != 0:
        out["error"] = "index failed: " + proc.stderr[-2000:]
        return {}
    search_argv = (["search", "--root", str(root), "--cache-dir", str(cache), "--json",
                    "--limit", str(args.limit)] + lexical + shlex.split(args.quarry_args)
                   + ["--", query])
    proc, search_s = run_quarry(args.quarry, search_argv)
    out["search_s"] = round(search_s, 3)
    try:
        result = json.loads(proc.stdout) if proc.stdout.strip() else {"hits": []}
    except json.JSONDecodeError:
        out["error"] = f"search rc={proc.returncode}: {proc.stderr[-2000:]}"
        return {}
    if proc.returncode != 0 and not result.get("hits"):
        out["stderr"] = proc.stderr[-500:]
    return result


def evaluate(rec: dict, gold: dict, args, bm25_cache: dict, lock: threading.Lock) -> dict:
    iid = rec["instance_id"]
    root = CHECKOUTS / iid
    cache = Path(args.caches) / iid
    if args.fresh and cache.exists():
        shutil.rmtree(cache)
    out = {"instance_id": iid, "repo": rec["repo"], "gold_files": gold["files"],
           "gold_functions": gold["functions"], "query_words": len(rec["problem_statement"].split())}
    query = rec["problem_statement"].replace("\x00", " ")
    if args.mode == "semble":
        result = search_semble(root, query, args.limit)
        if "error" in result:
            out["error"] = result["error"]
            return out
        out["index_s"] = round(result["index_ms"] / 1000, 2)
        out["search_s"] = round(result["search_ms"] / 1000, 3)
    else:
        result = search_quarry(root, cache, query, args, out)
        if "error" in out:
            return out
    hits = result.get("hits", [])
    out["mode"] = result.get("mode")
    if result.get("reason"):
        out["reason"] = result["reason"]
    out["n_hits"] = len(hits)
    files = distinct_files([h["path"] for h in hits])
    out["files"] = files[:10]
    out["top_hits"] = [
        {k: h.get(k) for k in ("path", "start_line", "end_line", "symbol", "kind", "sources")}
        for h in hits[:10]
    ]
    out.update(file_metrics(files, gold["files"]))
    top10 = hits[:10]
    matched = [g["name"] for g in gold["functions"] if any(func_matches(h, g) for h in top10)]
    out["func_matched"] = matched
    out["func_r10"] = (len(matched) / len(gold["functions"])) if gold["functions"] else None
    # First rank (in hits) at which each gold function is matched, for diffing.
    out["func_ranks"] = {
        g["name"]: next((i + 1 for i, h in enumerate(hits) if func_matches(h, g)), None)
        for g in gold["functions"]
    }
    if not args.no_baseline:
        key = f"{iid}@{BM25_VERSION}"
        with lock:
            bfiles = bm25_cache.get(key)
        if bfiles is None:
            bfiles = bm25_files(root, rec["problem_statement"])
            with lock:
                bm25_cache[key] = bfiles
        b = file_metrics(bfiles, gold["files"])
        out["bm25"] = {"files": bfiles[:10], **b}
    return out


def mean(xs):
    xs = [x for x in xs if x is not None]
    return (sum(xs) / len(xs)) if xs else None


def pct(x):
    return "   -" if x is None else f"{100 * x:4.0f}"


def acc_at(row: dict, k: int) -> bool:
    """Every gold file within the first k distinct files (from the stored ranks)."""
    ranks = row["gold_file_ranks"].values()
    return bool(ranks) and all(r is not None and r <= k for r in ranks)


def table(rows: list[dict], title: str) -> str:
    groups = collections.OrderedDict()
    for r in rows:
        groups.setdefault(r["repo"].split("/")[1], []).append(r)
    groups["ALL"] = rows
    head = (f"{'repo':10} {'n':>3} {'0hit':>4} {'<10':>4} | {'Q f@1':>5} {'f@5':>5} {'f@10':>5} "
            f"{'f@50':>5} "
            f"{'fnR10':>5} {'(nf)':>4} | {'BM25 f@5':>8} {'f@10':>5} | {'idx s':>6} {'srch s':>6}")
    lines = [title, head, "-" * len(head)]
    for name, rs in groups.items():
        ok = [r for r in rs if "error" not in r]
        fr = [r["func_r10"] for r in ok if r.get("func_r10") is not None]
        bm = [r["bm25"] for r in ok if "bm25" in r]
        lines.append(
            f"{name:10} {len(rs):3} {sum(r.get('n_hits', 0) == 0 for r in ok):4} "
            f"{sum(r.get('n_hits', 0) < 10 for r in ok):4} | "
            f"{pct(mean([acc_at(r, 1) for r in ok])):>5} "
            f"{pct(mean([r['acc5'] for r in ok])):>5} {pct(mean([r['acc10'] for r in ok])):>5} "
            f"{pct(mean([r['found'] for r in ok])):>5} {pct(mean(fr)):>5} {len(fr):4} | "
            f"{pct(mean([b['acc5'] for b in bm])):>8} {pct(mean([b['acc10'] for b in bm])):>5} | "
            f"{mean([r['index_s'] for r in ok]) or 0:6.1f} {mean([r['search_s'] for r in ok]) or 0:6.2f}"
        )
    errors = [r for r in rows if "error" in r]
    if errors:
        lines.append(f"errors: {len(errors)}: " + ", ".join(r["instance_id"] for r in errors))
    lines.append("columns: file Acc@1/@5/@10/found@50 of the system run, function R@10 (over nf instances "
                 "with gold functions), BM25 whole-file file Acc@5/@10; mean index/search seconds")
    return "\n".join(lines)


def cmd_run(args) -> None:
    args.jobs = max(1, min(args.jobs, MAX_JOBS))
    if args.mode != "semble" and not Path(args.quarry).is_file():
        sys.exit(f"no Quarry binary at {args.quarry}")
    records = load_records(Path(args.records))
    recs = chosen(records, args.only)
    if not GOLD_FILE.is_file():
        sys.exit("run `prepare` first")
    gold = json.loads(GOLD_FILE.read_text())
    missing = [r["instance_id"] for r in recs
               if r["instance_id"] not in gold or not (CHECKOUTS / r["instance_id"]).is_dir()]
    if missing:
        sys.exit(f"not prepared: {' '.join(missing)} (run `prepare`)")
    RESULTS.mkdir(parents=True, exist_ok=True)
    bm25_cache = json.loads(BM25_CACHE.read_text()) if BM25_CACHE.is_file() else {}
    lock = threading.Lock()
    t0 = time.time()
    rows = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futs = {pool.submit(evaluate, r, gold[r["instance_id"]], args, bm25_cache, lock): r
                for r in recs}
        for fut in concurrent.futures.as_completed(futs):
            row = fut.result()
            rows.append(row)
            if "error" in row:
                print(f"{row['instance_id']:32} ERROR {row['error'][:200]}", flush=True)
            else:
                b = row.get("bm25", {})
                fr = "-" if row["func_r10"] is None else f"{row['func_r10']:.2f}"
                bf = int(b["acc5"]) if b else "-"
                print(f"{row['instance_id']:32} hits={row['n_hits']:2} f@5={int(row['acc5'])} "
                      f"fnR10={fr} bm25 f@5={bf} "
                      f"idx={row['index_s']:.1f}s q={row['search_s']:.2f}s", flush=True)
                if row.get("mode") != args.mode:
                    print(f"    WARNING: ran {row.get('mode')}: {row.get('reason')}", flush=True)
    rows.sort(key=lambda r: r["instance_id"])
    wall = time.time() - t0
    if not args.no_baseline:
        BM25_CACHE.write_text(json.dumps(bm25_cache, indent=0, sort_keys=True))
    binary = Path(args.quarry)
    title = (f"label={args.label} mode={args.mode} quarry-args={args.quarry_args!r} "
             f"instances={len(rows)} wall={wall:.0f}s")
    text = table(rows, title)
    print()
    print(text)
    out = RESULTS / f"swebench-{args.label}.json"
    out.write_text(json.dumps({
        "label": args.label, "mode": args.mode, "quarry_args": args.quarry_args,
        "binary": str(binary), "binary_mtime": binary.stat().st_mtime, "wall_s": round(wall, 1),
        "records_sha256": RECORDS_SHA256, "size_factor": SIZE_FACTOR, "table": text,
        "instances": rows,
    }, indent=1))
    print(f"\nper-instance results: {out.relative_to(ROOT)}")


def cmd_compare(args) -> None:
    a = {r["instance_id"]: r for r in json.loads(Path(args.a).read_text())["instances"]}
    b = {r["instance_id"]: r for r in json.loads(Path(args.b).read_text())["instances"]}
    for iid in sorted(set(a) & set(b)):
        ra, rb = a[iid], b[iid]
        if "error" in ra or "error" in rb:
            continue
        fa = min([v for v in ra["gold_file_ranks"].values() if v] or [None], key=lambda x: x or 99)
        fb = min([v for v in rb["gold_file_ranks"].values() if v] or [None], key=lambda x: x or 99)
        if (fa, ra.get("func_r10")) != (fb, rb.get("func_r10")):
            print(f"{iid:32} file rank {fa} -> {fb}   fnR10 {ra.get('func_r10')} -> "
                  f"{rb.get('func_r10')}")
    print(table([a[i] for i in sorted(a)], f"A: {args.a}"))
    print(table([b[i] for i in sorted(b)], f"B: {args.b}"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("select", help="rewrite the instance list by the fixed rule")
    p.add_argument("records", nargs="?", default=str(DEFAULT_RECORDS))
    p.set_defaults(func=cmd_select)
    p = sub.add_parser("sdists", help="download and unpack the PyPI releases SDIST_REPOS names")
    p.set_defaults(func=cmd_sdists)
    p = sub.add_parser("prepare", help="extract checkouts and derive gold")
    p.add_argument("records", nargs="?", default=str(DEFAULT_RECORDS))
    p.add_argument("--mirrors", default=str(DEFAULT_MIRRORS))
    p.add_argument("--only", nargs="*", help="instance id substrings")
    p.set_defaults(func=cmd_prepare)
    p = sub.add_parser("run", help="index, search and score")
    p.add_argument("records", nargs="?", default=str(DEFAULT_RECORDS))
    p.add_argument("--quarry", default=str(DEFAULT_QUARRY))
    p.add_argument("--label", default="dev")
    p.add_argument("--mode", choices=["lexical", "hybrid", "semble"], default="lexical",
                   help="semble: semble 0.7.0's BM25 + ranking (target/semble-venv, as bench/dev/run.py)")
    p.add_argument("--quarry-args", default="", help="extra args for `quarry search`, one string")
    p.add_argument("--index-args", default="", help="extra args for `quarry index`, one string")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--jobs", type=int, default=1, help=f"parallel instances (at most {MAX_JOBS})")
    p.add_argument("--fresh", action="store_true", help="delete each instance's cache first")
    p.add_argument("--caches", default=str(CACHES),
                   help="where each instance's index goes (give runs side by side their own)")
    p.add_argument("--no-baseline", action="store_true")
    p.add_argument("--only", nargs="*", help="instance id substrings")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("compare", help="per-instance differences between two result files")
    p.add_argument("a")
    p.add_argument("b")
    p.set_defaults(func=cmd_compare)
    args = ap.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
