#!/usr/bin/env bash
# Drives the real terminal UI through tmux. With the model (if installed):
# :Quarry status right after the start says "starting (...)", and a query
# nothing matches says so. Lexical-only: :Quarry search with the
# vim.ui.select fallback (Neovim's numbered list), after the
# vim.ui.input prompt (the two do not run together), then picks the hit by
# typing its number and checks where the cursor landed. Leaves screenshots
# in $E2E_ARTIFACTS (default tests/artifacts).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
name="tmux test"
source "$here/tmux_lib.sh"

model="${QUARRY_MODEL:-${XDG_DATA_HOME:-$HOME/.local/share}/quarry/models/all-MiniLM-L6-v2}"
if [ -f "$model/model.safetensors" ]; then
    # Start-up: the first :Quarry status waits for initialize and says
    # what is loading, never "lexical-only".
    launch_nvim QUARRY_TEST_HYBRID=1
    tmux send-keys -t "$session" ":Quarry status" Enter
    wait_for "Quarry: starting (" 20
    shot startup-status.png
    tmux send-keys -t "$session" Enter
    # Once every chunk has a vector, a word that is nowhere: the nearest by
    # meaning, said so.
    for _ in $(seq 1 200); do
        ask "require('quarry').status_lines()[1]"
        if pane | grep -qE "ASK Quarry: (hybrid|lexical)"; then break; fi
        sleep 0.5
    done
    tmux send-keys -t "$session" ":Quarry search quokka_trampoline_gauge" Enter
    wait_for "No match for 'quokka_trampoline_gauge' — nearest by meaning" 30
    shot no-match.png
    tmux send-keys -t "$session" Escape
    tmux send-keys -t "$session" ":qa!" Enter
    sleep 0.5
    tmux kill-session -t "$session" 2>/dev/null || true
    rm -rf "$work/cache"
    echo "tmux test: right after the start :Quarry status said starting; quokka_trampoline_gauge said no match, nearest by meaning"
else
    echo "tmux test: start-up and no-match screens SKIPPED, no model at $model (scripts/fetch-model.sh)"
fi

start_nvim
# Lexical-only, nothing matches: said, not an empty list.
tmux send-keys -t "$session" ":Quarry search quokka_trampoline_gauge" Enter
wait_for "Quarry: no results for 'quokka_trampoline_gauge'" 20
[ -f "$artifacts/no-match.png" ] || shot no-match.png

# The prompt, then the list: the answered prompt is gone first.
tmux send-keys -t "$session" ":Quarry search" Enter
wait_for "Quarry search:" 10
tmux send-keys -t "$session" "GraphStore::insert" Enter
wait_for "Type number and <Enter>" 20
if pane | grep -qF "Quarry search: GraphStore::insert"; then
    echo "tmux test: the input prompt runs into the list" >&2
    pane >&2
    exit 1
fi
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
echo "tmux test: no results said for quokka_trampoline_gauge; prompt then list for GraphStore::insert, picked it, cursor at graph_store.rs:55"
