#!/usr/bin/env bash
# Drives the real terminal UI through tmux: :Quarry search with the
# vim.ui.select fallback (Neovim's numbered list), picks the hit by typing
# its number, and checks where the cursor landed. Leaves a screenshot of
# the list in $E2E_ARTIFACTS (default tests/artifacts).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
work="$(mktemp -d)"
artifacts="${E2E_ARTIFACTS:-$here/artifacts}"
mkdir -p "$artifacts"
session="quarry-test-$$"
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
    echo "tmux test: timed out waiting for: $1" >&2
    pane >&2
    return 1
}

tmux new-session -d -s "$session" -x 160 -y 45 \
    "cd '$work/root' && XDG_CACHE_HOME='$work/cache' QUARRY_MODEL='$work/none' ${QUARRY_BIN:+QUARRY_BIN='$QUARRY_BIN'} nvim -u '$here/minimal_init.lua' README.md"
wait_for "README.md" 20
# Wait until the server has indexed the project.
for _ in $(seq 1 100); do
    tmux send-keys -t "$session" ":lua vim.g.q = require('quarry').status_lines()[2] or 'none'" Enter
    tmux send-keys -t "$session" ":echo 'STATUS ' .. g:q" Enter
    if pane | grep -qE "STATUS .*: [1-9][0-9]* files"; then break; fi
    sleep 0.3
done
tmux send-keys -t "$session" ":Quarry search GraphStore::insert" Enter
wait_for "Type number and <Enter>" 20
pane | grep -F "GraphStore::insert [method] src/graph_store.rs:55" >/dev/null || {
    echo "tmux test: the hit is not in the list" >&2
    pane >&2
    exit 1
}
tmux capture-pane -p -e -t "$session" >"$work/select.ansi"
python3 "$here/screenshot.py" "$work/select.ansi" "$artifacts/select-list.png" 160 45
number="$(pane | grep -F "GraphStore::insert [method]" | head -1 | sed -E 's/^ *([0-9]+):.*/\1/')"
tmux send-keys -t "$session" "$number" Enter
tmux send-keys -t "$session" ":echo 'AT ' .. expand('%:t') .. ':' .. line('.')" Enter
wait_for "AT graph_store.rs:55" 10
tmux send-keys -t "$session" ":qa!" Enter
echo "tmux test: picked GraphStore::insert from the list, cursor at graph_store.rs:55"
