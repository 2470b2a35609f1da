#!/usr/bin/env bash
# Creates (or refreshes) .venv-verl: verl 0.9.1 with its pins (torch on CPU here; several minutes and ~2 GB the first time), from
# deploy/verl-requirements.txt, so mockworld's exports are checked with verl itself. Idempotent:
# reinstalls only when the requirements changed.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-verl
stamp="$venv/.requirements.sha256"
want=$(sha256sum deploy/verl-requirements.txt | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then exit 0; fi
echo "[verl] installing $venv from deploy/verl-requirements.txt" >&2
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r deploy/verl-requirements.txt >&2
echo "$want" > "$stamp"
