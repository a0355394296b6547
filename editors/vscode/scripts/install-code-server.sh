#!/usr/bin/env bash
# Installs code-server 4.100.3 (the last release that runs on Node 20; its
# npm package carries the VS Code build) for the end-to-end test, without
# the network beyond the npm registry:
# - install scripts are skipped (as root they need --unsafe-perm, and
#   @vscode/ripgrep's downloads from GitHub),
# - native modules are rebuilt against the system's Node headers,
# - Debian's rg stands in for the downloaded ripgrep,
# - the rest of code-server's postinstall (symlinks, the bundled extensions'
#   dependencies) is redone by hand.
# Needs Debian's ripgrep and libkrb5-dev (kerberos). Prints the path of the
# code-server launcher. Idempotent: an existing install is reused.
#
#   scripts/install-code-server.sh [DIR]   (default: ~/.cache/quarry-e2e)
set -euo pipefail

version=4.100.3
dir="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/quarry-e2e}/code-server-$version"
launcher="$dir/node_modules/.bin/code-server"
if [ -x "$launcher" ] && [ -f "$dir/.complete" ]; then
    echo "$launcher"
    exit 0
fi
command -v rg >/dev/null || { echo "install-code-server: needs rg (Debian package ripgrep)" >&2; exit 1; }
rm -rf "$dir"
mkdir -p "$dir"
cd "$dir"
export npm_config_nodedir=/usr npm_config_audit=false npm_config_fund=false
npm install --silent --ignore-scripts "code-server@$version" >&2
npm rebuild --silent argon2 >&2

vscode="$dir/node_modules/code-server/lib/vscode"
cd "$vscode"
npm install --silent --omit=dev --ignore-scripts >&2
npm rebuild --silent @vscode/spdlog native-watchdog kerberos >&2
# node-pty builds, then its post-install step wants node-gyp from the
# network to write compile_commands.json; only the binary matters.
npm rebuild --silent node-pty >&2 || true
test -f node_modules/node-pty/build/Release/pty.node || {
    echo "install-code-server: node-pty did not build" >&2
    exit 1
}
mkdir -p node_modules/@vscode/ripgrep/bin
cp "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
ln -sfn node_modules node_modules.asar
(cd bin/remote-cli && ln -sfn code-linux.sh code-server)
(cd bin/helpers && ln -sfn browser-linux.sh browser.sh)
(cd extensions && npm install --silent --omit=dev --ignore-scripts >&2)
touch "$dir/.complete"
echo "$launcher"
