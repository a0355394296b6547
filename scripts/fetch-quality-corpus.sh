#!/usr/bin/env bash
# Fetches the quality benchmark's corpus: real projects nobody here wrote, at
# pinned versions, from the package registries (crates.io, PyPI, npm), each
# checked by sha256. (PyPI's requests, once part of it, is kept for the
# evaluation of search quality and never fetched here.) Unpacks their source into DEST (default
# target/quality-corpus), one folder per project. Idempotent.
#
#   scripts/fetch-quality-corpus.sh [DEST]
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
dest="${1:-$here/target/quality-corpus}"
downloads="$dest/.downloads"
mkdir -p "$downloads"

check() { # file sha256
    local got
    got="$(sha256sum "$1" | cut -d' ' -f1)"
    if [ "$got" != "$2" ]; then
        echo "fetch-quality-corpus: $1: sha256 $got, expected $2" >&2
        rm -f "$1"
        exit 1
    fi
}

# project  file  sha256  how-to-download
fetch() {
    local file="$downloads/$2"
    if [ ! -f "$file" ] || [ "$(sha256sum "$file" | cut -d' ' -f1)" != "$3" ]; then
        (cd "$downloads" && eval "$4") >/dev/null
    fi
    check "$file" "$3"
}

fetch fst fst-0.4.7.crate 7ab85b9b05e3978cc9a9cf8fea7f01b494e1a09ed3037e16ba39edc7a29eb61a \
    "curl -sSfL -o fst-0.4.7.crate https://static.crates.io/crates/fst/fst-0.4.7.crate"
fetch rxjs rxjs-7.8.1.tgz c532167725ab7d085123209156c93cef22f2479cb9c8527060f1cd903aa9d149 \
    "npm pack --silent rxjs@7.8.1"
fetch express express-4.21.2.tgz fc43a91e7dc7affb53c6ad7123a4f35485ed3c45226ae7a3847b7738e783e008 \
    "npm pack --silent express@4.21.2"
fetch commander commander-12.1.0.tgz 56affc6ddafe486f94b428ae2823d059cf60d4dae2f33eaaf1b1ec4306f73173 \
    "npm pack --silent commander@12.1.0"

# project  archive  strip-prefix  paths to keep (inside the prefix)
unpack() {
    local project="$1" archive="$downloads/$2" prefix="$3"
    shift 3
    rm -rf "$dest/$project"
    mkdir -p "$dest/$project"
    local members=()
    for p in "$@"; do members+=("$prefix/$p"); done
    tar -xzf "$archive" -C "$dest/$project" --strip-components=1 "${members[@]}"
}

unpack fst fst-0.4.7.crate fst-0.4.7 src tests README.md
unpack rxjs rxjs-7.8.1.tgz package src README.md
unpack express express-4.21.2.tgz package lib index.js Readme.md
unpack commander commander-12.1.0.tgz package lib index.js Readme.md
echo "quality corpus in $dest"
