#!/usr/bin/env bash
# The README's lazy.nvim spec, as written, with a real lazy.nvim (see
# tests/lazy_init.lua): once with a file on the command line (the
# `event = "BufReadPost"` trigger), once with none (`cmd = "Quarry"`:
# :Quarry status and :Quarry search with no file open). `quarry` is put on
# PATH, as the spec's `cmd` expects.
#
# lazy.nvim is in no registry CI can reach: set LAZY_NVIM to a checkout,
# or have it where lazy's bootstrap puts it
# (~/.local/share/nvim/lazy/lazy.nvim); without it the test says so and
# is skipped.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
data="${XDG_DATA_HOME:-$HOME/.local/share}"
lazy="${LAZY_NVIM:-$data/nvim/lazy/lazy.nvim}"
if [ ! -f "$lazy/lua/lazy/init.lua" ]; then
    echo "lazy test: SKIPPED, lazy.nvim not found (set LAZY_NVIM to a checkout, or install it at $data/nvim/lazy/lazy.nvim)"
    exit 0
fi
if [ -n "${QUARRY_BIN:-}" ]; then bin="$QUARRY_BIN"
elif command -v quarry >/dev/null; then bin="$(command -v quarry)"
elif [ -x "$repo/target/release/quarry" ]; then bin="$repo/target/release/quarry"
else bin="$repo/target/debug/quarry"; fi
[ -x "$bin" ] || { echo "lazy test: no quarry binary (build it, or set QUARRY_BIN)" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
ln -s "$bin" "$work/bin/quarry"
status=0
for case in file nofile; do
    rm -rf "$work/root" "$work/cache" "$work/lazy"
    cp -r "$repo/tests/fixtures/polyglot" "$work/root"
    mkdir -p "$work/root/.git"
    file=()
    [ "$case" = file ] && file=(README.md)
    (cd "$work/root" && PATH="$work/bin:$PATH" LAZY_NVIM="$lazy" QUARRY_LAZY_ROOT="$work/lazy" \
        XDG_CACHE_HOME="$work/cache" QUARRY_MODEL="$work/no-model" \
        timeout 60 nvim --headless -u "$here/lazy_init.lua" "${file[@]}") || status=1
done
exit $status
