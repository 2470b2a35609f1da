#!/usr/bin/env bash
# Creates (or refreshes) .venv-verl: verl 0.9.1 with its pins (torch on CPU here; several minutes and ~2 GB the first time), from
# deploy/verl-requirements.txt, with mockworld's verl adapter (integrations/verl) installed editable,
# so mockworld's exports and the adapter are checked with verl itself. Idempotent: reinstalls only
# when the requirements or the adapter's pyproject.toml changed (code changes need no reinstall).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-verl
stamp="$venv/.requirements.sha256"
want=$(cat deploy/verl-requirements.txt integrations/verl/pyproject.toml | sha256sum | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then exit 0; fi
echo "[verl] installing $venv from deploy/verl-requirements.txt" >&2
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r deploy/verl-requirements.txt >&2
echo "$want" > "$stamp"
