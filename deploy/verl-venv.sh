#!/usr/bin/env bash
# Creates (or refreshes) .venv-verl: verl 0.9.1 with its pins (torch on CPU here) at the exact
# versions of deploy/locks/verl.txt (from deploy/verl-requirements.txt), with mockworld's verl
# adapter (integrations/verl) editable, so mockworld's exports and the adapter are checked with verl
# itself.
set -euo pipefail
exec bash "$(dirname "$0")/python/venv.sh" .venv-verl deploy/locks/verl.txt
