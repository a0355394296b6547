#!/usr/bin/env python3
"""Materialise the development set of the quality harness.

For every repository in bench/dev/repos.tsv:
  * checks that its pinned revision exists in the bare mirror
    (<mirrors>/<owner>+<name>/repo, as the `fetch` tool lays them out) and that
    it is the revision semble's benchmarks/repos.json pins at SEMBLE_COMMIT;
  * extracts the benchmark_root subtree of that revision with `git archive`
    into target/dev-set/repos/<name>/<benchmark_root> (the same layout as
    semble's /tmp/bench/<name>; nothing outside benchmark_root is ever indexed,
    so nothing else is extracted);
  * extracts benchmarks/annotations/<name>.json from the semble mirror at
    SEMBLE_COMMIT into target/dev-set/annotations/ and verifies its sha256
    against repos.tsv.

Idempotent: a repository whose stamp file records the same revision and root
is left alone; annotation files are rewritten only when their checksum is off.
Only our own scripts and repos.tsv are committed; everything extracted lives
under target/ (ignored).

The held-out evaluation repositories (HELD_OUT) are refused outright: their
sources and annotation files are never touched by this script.

    python3 bench/dev/prepare.py [--mirrors /work/.mirror] [--repos a,b] [--dest target/dev-set]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent.parent
REPOS_TSV = HERE / "repos.tsv"

# semble's repository is MinishLab/semble. Its snapshot is not always available
# to `fetch`; a public fork that contains the same upstream history is the
# fallback. SEMBLE_COMMIT is an upstream commit (semble 0.1.x era, "chore: Add
# citation info (#42)", 2026-04-26) present in both.
SEMBLE_MIRRORS = ("MinishLab+semble", "barseghyanartur+MinishLab__semble")
SEMBLE_COMMIT = "408231a2aeedbd547c231bc999d65df06a63a1d9"

HELD_OUT = frozenset({
    "serde", "axum", "model2vec", "zod", "gin", "cobra", "gson", "abseil-cpp", "click", "requests",
    "ktor", "circe", "rxswift", "phoenix", "nvim-lspconfig", "bash-it",
})
STAMP = ".dev-set-stamp"


def load_repos(path: Path = REPOS_TSV) -> list[dict[str, str]]:
    """Rows of repos.tsv as dicts; '#' lines are comments, the first other line the header."""
    rows: list[dict[str, str]] = []
    header: list[str] | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if header is None:
            header = fields
            continue
        row = dict(zip(header, fields))
        if row["name"] in HELD_OUT:
            raise SystemExit(f"repos.tsv lists held-out repository {row['name']!r}; refusing")
        row["benchmark_root"] = "" if row["benchmark_root"] in ("-", "") else row["benchmark_root"]
        rows.append(row)
    return rows


def git(git_dir: Path, *args: str, binary: bool = False) -> bytes | str:
    out = subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True, stdin=subprocess.DEVNULL
    ).stdout
    return out if binary else out.decode()


def has_commit(git_dir: Path, revision: str) -> bool:
    return (
        subprocess.run(
            ["git", f"--git-dir={git_dir}", "cat-file", "-e", f"{revision}^{{commit}}"],
            capture_output=True,
            stdin=subprocess.DEVNULL,
        ).returncode
        == 0
    )


def mirror_dir(mirrors: Path, github: str) -> Path:
    owner, name = github.split("/", 1)
    return mirrors / f"{owner}+{name}" / "repo"


def semble_mirror(mirrors: Path) -> Path:
    for candidate in SEMBLE_MIRRORS:
        git_dir = mirrors / candidate / "repo"
        if git_dir.is_dir() and has_commit(git_dir, SEMBLE_COMMIT):
            return git_dir
    raise SystemExit(
        f"no semble mirror with commit {SEMBLE_COMMIT} under {mirrors} (looked for {', '.join(SEMBLE_MIRRORS)}); "
        "fetch github:MinishLab/semble (or the fork) first"
    )


def materialise(row: dict[str, str], mirrors: Path, dest: Path) -> str:
    name, revision, root = row["name"], row["revision"], row["benchmark_root"]
    git_dir = mirror_dir(mirrors, row["github"])
    if not git_dir.is_dir():
        raise SystemExit(f"{name}: no mirror at {git_dir}; fetch github:{row['github']} first")
    if not has_commit(git_dir, revision):
        raise SystemExit(f"{name}: commit {revision} is not in {git_dir}")
    target = dest / "repos" / name
    stamp = f"{revision} {root or '-'}\n"
    if (target / STAMP).is_file() and (target / STAMP).read_text() == stamp:
        return "up to date"
    partial = dest / "repos" / f".{name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    archive = git(git_dir, "archive", "--format=tar", revision, *([root] if root else []), binary=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(partial, filter="tar") if sys.version_info >= (3, 12) else tar.extractall(partial)  # noqa: S202
    files = sum(len(f) for _, _, f in os.walk(partial))
    (partial / STAMP).write_text(stamp)
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return f"extracted {files} files"


def extract_annotation(row: dict[str, str], semble_git: Path, dest: Path) -> str:
    name = row["name"]
    out = dest / "annotations" / f"{name}.json"
    want = row["annotation_sha256"]
    if out.is_file() and hashlib.sha256(out.read_bytes()).hexdigest() == want:
        return "up to date"
    data = git(semble_git, "show", f"{SEMBLE_COMMIT}:benchmarks/annotations/{name}.json", binary=True)
    got = hashlib.sha256(data).hexdigest()
    if got != want:
        raise SystemExit(f"{name}: annotation sha256 {got}, expected {want}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    return "extracted"


def check_pins(rows: list[dict[str, str]], semble_git: Path) -> None:
    """Our revisions and roots must be the ones semble's repos.json pins at SEMBLE_COMMIT."""
    specs = {s["name"]: s for s in json.loads(git(semble_git, "show", f"{SEMBLE_COMMIT}:benchmarks/repos.json"))}
    for row in rows:
        spec = specs.get(row["name"])
        if spec is None:
            raise SystemExit(f"{row['name']}: not in semble's repos.json at {SEMBLE_COMMIT}")
        if spec["revision"] != row["revision"] or (spec.get("benchmark_root") or "") != row["benchmark_root"]:
            raise SystemExit(f"{row['name']}: repos.tsv disagrees with semble's repos.json: {spec}")
        if spec["language"] != row["language"]:
            raise SystemExit(f"{row['name']}: language {row['language']} vs {spec['language']}")


def select_repos(rows: list[dict[str, str]], spec: str | None) -> list[dict[str, str]]:
    """The rows named by a comma-separated `--repos` value (all when empty);
    held-out and unknown names are refused."""
    if not spec:
        return rows
    wanted = [r.strip() for r in spec.split(",") if r.strip()]
    if bad := [r for r in wanted if r in HELD_OUT]:
        raise SystemExit(f"held-out repositories are not part of the dev set: {bad}")
    if unknown := sorted(set(wanted) - {r["name"] for r in rows}):
        raise SystemExit(f"not in repos.tsv: {unknown}")
    return [r for r in rows if r["name"] in wanted]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--dest", type=Path, default=PROJECT / "target" / "dev-set")
    parser.add_argument("--repos", help="comma-separated subset of repos.tsv")
    args = parser.parse_args()

    rows = select_repos(load_repos(), args.repos)

    semble_git = semble_mirror(args.mirrors)
    check_pins(rows, semble_git)
    for row in rows:
        repo_state = materialise(row, args.mirrors, args.dest)
        ann_state = extract_annotation(row, semble_git, args.dest)
        print(f"{row['name']:<14} {row['revision'][:12]}  repo: {repo_state}; annotations: {ann_state}")


if __name__ == "__main__":
    main()
