#!/usr/bin/env bash
# Creates (or refreshes) .venv-datasets: Hugging Face datasets + pyarrow at the pins of
# deploy/datasets-requirements.txt, to load the Parquet exports as their users do. Idempotent:
# reinstalls only when the requirements changed.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-datasets
stamp="$venv/.requirements.sha256"
want=$(sha256sum deploy/datasets-requirements.txt | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then exit 0; fi
echo "[datasets] installing $venv from deploy/datasets-requirements.txt" >&2
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r deploy/datasets-requirements.txt >&2
echo "$want" > "$stamp"
