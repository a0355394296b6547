#!/usr/bin/env bash
# The telescope picker in a real Neovim under tmux: `:Quarry search X`
# right after the start, the server's rows, the mode in the title and the
# preview, <CR> lands on the definition's name, the preview of an unsaved
# buffer, a query nothing matches, <C-v> opens a hit in a vertical split.
# Leaves screenshots of the picker in $E2E_ARTIFACTS (default
# tests/artifacts).
#
# telescope.nvim and plenary.nvim are not in any registry CI can reach, so
# a developer fetches them (git clone) and points the test at them with
# TELESCOPE_NVIM and PLENARY_NVIM, or installs them as packages under
# ~/.local/share/nvim/site/pack/*/start (or opt). Without them the test
# says so and is skipped.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
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

name="telescope test"
source "$here/tmux_lib.sh"

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

# Right after the start, no file indexed yet: the picker opened with a
# query shows its rows once the server has them (it says it is starting
# until then), never 0 results in silence.
launch_nvim "QUARRY_MODEL='$work/none'" "QUARRY_TEST_PLUGINS='$telescope:$plenary'"
tmux send-keys -t "$session" ":Quarry search GraphStore::insert" Enter
wait_for "GraphStore::insert [method] src/graph_store.rs:55" 30
wait_for "Quarry (lexical-only)" 10
wait_for "pub fn insert(&self, node: Node)" 10
shot telescope-picker.png
# <CR> opens the hit at its name: line 55, column 12 (`insert`).
tmux send-keys -t "$session" Enter
expect "expand('%:t') .. ':' .. line('.') .. ':' .. col('.')" "graph_store.rs:55:12"

# The preview of a hit in an unsaved buffer shows the buffer: a line
# added above `insert`, not saved, moves the hit to line 56 (the window
# behind the picker shows the top of the file: the marker can only be in
# the preview).
tmux send-keys -t "$session" ":call append(54, '    // UNSAVED PREVIEW MARKER') | normal! gg" Enter
# The server has the edit (its timing is the server tests' business).
expect "luaeval('require(\"quarry\").search_sync(\"GraphStore::insert\").hits[1].selectionRange.start.line')" "55"
tmux send-keys -t "$session" ":Telescope quarry" Enter
wait_for "Quarry" 10
tmux send-keys -t "$session" "GraphStore::insert"
wait_for "GraphStore::insert [method] src/graph_store.rs:56" 20
wait_for "// UNSAVED PREVIEW MARKER" 10
wait_for "pub fn insert(&self, node: Node)" 10
shot telescope-unsaved-preview.png
tmux send-keys -t "$session" Escape Escape
sleep 0.3
tmux send-keys -t "$session" ":e! | echo 'REVERTED ' .. &modified" Enter
wait_for "REVERTED 0" 10

# A word that is nowhere: the title says so.
tmux send-keys -t "$session" ":Telescope quarry" Enter
wait_for "Quarry" 10
tmux send-keys -t "$session" "quokka_trampoline_gauge"
wait_for "Quarry: no results for 'quokka_trampoline_gauge'" 20
shot telescope-no-match.png
tmux send-keys -t "$session" Escape Escape
sleep 0.3

# <C-v> opens the hit in a vertical split, at the decorated class's name.
tmux send-keys -t "$session" ":Telescope quarry" Enter
wait_for "Quarry" 10
tmux send-keys -t "$session" "RetryPolicy"
wait_for "RetryPolicy [class] python/retry_policy.py:14" 20
tmux send-keys -t "$session" C-v
expect "winnr('\$') .. ' ' .. expand('%:t') .. ':' .. line('.')" "2 retry_policy.py:14"
tmux send-keys -t "$session" ":qa!" Enter
echo "telescope test: :Quarry search GraphStore::insert right after the start listed it (lexical-only in the title), <CR> opened graph_store.rs:55:12, an unsaved buffer's preview showed the buffer, quokka_trampoline_gauge said no results, <C-v> split to retry_policy.py:14"
