#!/usr/bin/env bash
# Creates (or refreshes) .venv-datasets: Hugging Face datasets + pyarrow at the exact versions of
# deploy/locks/datasets.txt (from deploy/datasets-requirements.txt), to load the Parquet exports as
# their users do.
set -euo pipefail
exec bash "$(dirname "$0")/python/venv.sh" .venv-datasets deploy/locks/datasets.txt
