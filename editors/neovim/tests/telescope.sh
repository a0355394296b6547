#!/usr/bin/env bash
# The telescope picker in a real Neovim under tmux: `:Telescope quarry`,
# the server's rows and the preview, <CR> lands on the definition's name,
# <C-v> opens a hit in a vertical split. Leaves a screenshot of the picker
# in $E2E_ARTIFACTS (default tests/artifacts).
#
# telescope.nvim and plenary.nvim are not in any registry CI can reach, so
# a developer fetches them (git clone) and points the test at them with
# TELESCOPE_NVIM and PLENARY_NVIM, or installs them as packages under
# ~/.local/share/nvim/site/pack/*/start (or opt). Without them the test
# says so and is skipped.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
data="${XDG_DATA_HOME:-$HOME/.local/share}"

find_plugin() { # name env-value
    if [ -n "$2" ]; then
        [ -d "$2/lua" ] && { echo "$2"; return 0; }
        echo "telescope test: $2 is not a checkout of $1" >&2
        exit 1
    fi
    for dir in "$data"/nvim/site/pack/*/start/"$1" "$data"/nvim/site/pack/*/opt/"$1" "$data"/nvim/lazy/"$1"; do
        [ -d "$dir/lua" ] && { echo "$dir"; return 0; }
    done
    return 1
}
telescope="$(find_plugin telescope.nvim "${TELESCOPE_NVIM:-}")" &&
    plenary="$(find_plugin plenary.nvim "${PLENARY_NVIM:-}")" || {
    echo "telescope test: SKIPPED, telescope.nvim and plenary.nvim not found" \
        "(set TELESCOPE_NVIM and PLENARY_NVIM to checkouts, or install them under $data/nvim/site/pack/*/start)"
    exit 0
}

artifacts="${E2E_ARTIFACTS:-$here/artifacts}"
mkdir -p "$artifacts"
work="$(mktemp -d)"
session="quarry-telescope-$$"
trap 'tmux kill-session -t "$session" 2>/dev/null || true; rm -rf "$work"' EXIT
cp -r "$repo/tests/fixtures/polyglot" "$work/root"
mkdir -p "$work/root/.git"

pane() { tmux capture-pane -p -t "$session"; }
wait_for() { # text seconds
    local deadline=$((SECONDS + $2))
    while [ $SECONDS -lt $deadline ]; do
        if pane | grep -qF -- "$1"; then return 0; fi
        sleep 0.2
    done
    echo "telescope test: timed out waiting for: $1" >&2
    pane >&2
    tmux capture-pane -p -e -t "$session" >"$work/failure.ansi"
    python3 "$here/screenshot.py" "$work/failure.ansi" "$artifacts/telescope-failure.png" 160 45 >&2 || true
    return 1
}
expect() { # vimscript-expression expected-value: asks until they agree
    local deadline=$((SECONDS + 10))
    while [ $SECONDS -lt $deadline ]; do
        sleep 0.2
        tmux send-keys -t "$session" Escape ":echo 'Q ' .. $1" Enter
        sleep 0.1
        if pane | grep -qF -- "Q $2"; then return 0; fi
    done
    wait_for "Q $2" 0
}

tmux new-session -d -s "$session" -x 160 -y 45 \
    "cd '$work/root' && XDG_CACHE_HOME='$work/cache' QUARRY_MODEL='$work/none' QUARRY_TEST_PLUGINS='$telescope:$plenary' ${QUARRY_BIN:+QUARRY_BIN='$QUARRY_BIN'} nvim -u '$here/minimal_init.lua' README.md"
wait_for "README.md" 20
for _ in $(seq 1 100); do
    tmux send-keys -t "$session" ":lua vim.g.q = require('quarry').status_lines()[2] or 'none'" Enter
    tmux send-keys -t "$session" ":echo 'STATUS ' .. g:q" Enter
    if pane | grep -qE "STATUS .*: [1-9][0-9]* files"; then break; fi
    sleep 0.3
done

# The picker: the server's rows, the preview of the selected hit.
tmux send-keys -t "$session" ":Telescope quarry" Enter
wait_for "Quarry" 10
tmux send-keys -t "$session" "GraphStore::insert"
wait_for "GraphStore::insert [method] src/graph_store.rs:55" 20
wait_for "pub fn insert(&self, node: Node)" 10
tmux capture-pane -p -e -t "$session" >"$work/picker.ansi"
python3 "$here/screenshot.py" "$work/picker.ansi" "$artifacts/telescope-picker.png" 160 45
# <CR> opens the hit at its name: line 55, column 12 (`insert`).
tmux send-keys -t "$session" Enter
expect "expand('%:t') .. ':' .. line('.') .. ':' .. col('.')" "graph_store.rs:55:12"

# <C-v> opens the hit in a vertical split, at the decorated class's name.
tmux send-keys -t "$session" ":Telescope quarry" Enter
wait_for "Quarry" 10
tmux send-keys -t "$session" "RetryPolicy"
wait_for "RetryPolicy [class] python/retry_policy.py:14" 20
tmux send-keys -t "$session" C-v
expect "winnr('\$') .. ' ' .. expand('%:t') .. ':' .. line('.')" "2 retry_policy.py:14"
tmux send-keys -t "$session" ":qa!" Enter
echo "telescope test: :Telescope quarry listed and previewed GraphStore::insert, <CR> opened graph_store.rs:55:12, <C-v> split to retry_policy.py:14"
