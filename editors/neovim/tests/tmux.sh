#!/usr/bin/env bash
# Drives the real terminal UI through tmux: :Quarry search with the
# vim.ui.select fallback (Neovim's numbered list), picks the hit by typing
# its number, and checks where the cursor landed. Leaves a screenshot of
# the list in $E2E_ARTIFACTS (default tests/artifacts).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
name="tmux test"
source "$here/tmux_lib.sh"

start_nvim
tmux send-keys -t "$session" ":Quarry search GraphStore::insert" Enter
wait_for "Type number and <Enter>" 20
pane | grep -F "GraphStore::insert [method] src/graph_store.rs:55" >/dev/null || {
    echo "tmux test: the hit is not in the list" >&2
    pane >&2
    exit 1
}
shot select-list.png
number="$(pane | grep -F "GraphStore::insert [method]" | head -1 | sed -E 's/^ *([0-9]+):.*/\1/')"
tmux send-keys -t "$session" "$number" Enter
tmux send-keys -t "$session" ":echo 'AT ' .. expand('%:t') .. ':' .. line('.')" Enter
wait_for "AT graph_store.rs:55" 10
tmux send-keys -t "$session" ":qa!" Enter
echo "tmux test: picked GraphStore::insert from the list, cursor at graph_store.rs:55"
