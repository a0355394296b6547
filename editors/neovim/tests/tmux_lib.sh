# Shared by the tmux tests (source it after setting `name`, the test's
# name in messages, and `here`): a scratch copy of the fixture, a tmux
# session with Neovim on it, waiting for text in the pane, and screenshots
# of the pane in $E2E_ARTIFACTS (default tests/artifacts).
repo="$(cd "$here/../../.." && pwd)"
artifacts="${E2E_ARTIFACTS:-$here/artifacts}"
mkdir -p "$artifacts"
work="$(mktemp -d)"
session="quarry-${name// /-}-$$"
trap 'tmux kill-session -t "$session" 2>/dev/null || true; rm -rf "$work"' EXIT
cp -r "$repo/tests/fixtures/polyglot" "$work/root"
mkdir -p "$work/root/.git"

pane() { tmux capture-pane -p -t "$session"; }

shot() { # file-name: the pane, colours included, as a PNG
    tmux capture-pane -p -e -t "$session" >"$work/pane.ansi"
    python3 "$here/screenshot.py" "$work/pane.ansi" "$artifacts/$1" 160 45
}

wait_for() { # text seconds
    local deadline=$((SECONDS + $2))
    while [ $SECONDS -lt $deadline ]; do
        if pane | grep -qF -- "$1"; then return 0; fi
        sleep 0.2
    done
    echo "$name: timed out waiting for: $1" >&2
    pane >&2
    shot "${name// /-}-failure.png" >&2 || true
    return 1
}

launch_nvim() { # extra environment (NAME=value ...): Neovim on README.md, the server just started
    tmux new-session -d -s "$session" -x 160 -y 45 \
        "cd '$work/root' && XDG_CACHE_HOME='$work/cache' $* ${QUARRY_BIN:+QUARRY_BIN='$QUARRY_BIN'} nvim -u '$here/minimal_init.lua' README.md"
    wait_for "README.md" 20
}

ask() { # lua-expression: its value in the pane as "ASK <value>"
    tmux send-keys -t "$session" ":lua vim.g.q = $1" Enter
    tmux send-keys -t "$session" ":echo 'ASK ' .. g:q" Enter
}

wait_indexed() { # the project indexed (a file count in :Quarry status)
    local _
    for _ in $(seq 1 100); do
        ask "require('quarry').status_lines()[2] or 'none'"
        if pane | grep -qE "ASK .*: [1-9][0-9]* files"; then return 0; fi
        sleep 0.3
    done
    echo "$name: the project was never indexed (no file count in :Quarry status)" >&2
    pane >&2
    return 1
}

start_nvim() { # extra environment (NAME=value ...): Neovim on README.md, lexical-only, project indexed
    launch_nvim "QUARRY_MODEL='$work/none'" "$@"
    wait_indexed
}
