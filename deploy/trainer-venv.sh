#!/usr/bin/env bash
# Creates (or refreshes) the trainer worker's venv from the pinned requirements.
# Idempotent: reinstalls only when deploy/trainer-requirements.txt changed.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-trainer
stamp="$venv/.requirements.sha256"
want=$(sha256sum deploy/trainer-requirements.txt | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then exit 0; fi
echo "[trainer] installing the trainer venv ($venv) from deploy/trainer-requirements.txt"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r deploy/trainer-requirements.txt
echo "$want" > "$stamp"
