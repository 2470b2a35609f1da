#!/usr/bin/env bash
# Creates (or refreshes) the trainer worker's venv: the mockworld-trainer package (workers/trainer),
# installed editable with its pinned dependencies, so `python -m mockworld_trainer.worker` runs from
# any directory on the code in this checkout. Idempotent: reinstalls only when the requirements or
# the package's pyproject.toml changed (an editable install needs no reinstall for code changes).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-trainer
stamp="$venv/.requirements.sha256"
want=$(cat deploy/trainer-requirements.txt workers/trainer/pyproject.toml | sha256sum | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then exit 0; fi
echo "[trainer] installing the trainer venv ($venv) from deploy/trainer-requirements.txt"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r deploy/trainer-requirements.txt
echo "$want" > "$stamp"
