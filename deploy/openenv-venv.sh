#!/usr/bin/env bash
# Creates (or refreshes) OpenEnv's and TRL's venv, .venv-openenv: mockworld's OpenEnv package
# (integrations/openenv) editable, with OpenEnv's client and TRL at the exact versions of
# deploy/locks/openenv.txt (written by deploy/python/lock.sh).
set -euo pipefail
exec bash "$(dirname "$0")/python/venv.sh" .venv-openenv deploy/locks/openenv.txt
