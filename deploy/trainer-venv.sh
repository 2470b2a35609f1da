#!/usr/bin/env bash
# Creates (or refreshes) the trainer worker's venv, .venv-trainer: the mockworld-trainer package
# (workers/trainer) editable, with its test extra, at the exact versions of deploy/locks/trainer.txt
# (written from deploy/trainer-requirements.txt and the package's pyproject.toml by
# deploy/python/lock.sh), so `python -m mockworld_trainer.worker` runs from any directory on the
# code in this checkout.
set -euo pipefail
exec bash "$(dirname "$0")/python/venv.sh" .venv-trainer deploy/locks/trainer.txt
