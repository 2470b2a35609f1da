#!/usr/bin/env bash
# Creates (or refreshes) one of mockworld's Python venvs from its lock file with uv (pinned, from
# PyPI; about 10x faster than pip here). The per-venv scripts in deploy/ (trainer-venv.sh, ...) call
# it; deploy/python/lock.sh writes the lock files.
#
#   deploy/python/venv.sh VENV LOCK [--no-deps]
#
# Idempotent: reinstalls only when the lock file changed (the lock installs mockworld's own package
# editable, so code changes need no reinstall). --no-deps installs the lock as the whole closure,
# unresolved (the evaluation worker's: workers/evaluation/pyproject.toml says why).
# Where /opt/wheels exists (this project's CPU machines keep the CPU build of torch there), uv also
# looks there, so the lock's torch==2.13.0 takes the local CPU wheel instead of PyPI's CUDA build.
set -euo pipefail
cd "$(dirname "$0")/../.."

venv=$1 lock=$2
shift 2
no_deps=()
[ "${1:-}" = --no-deps ] && no_deps=(--no-deps)
# One installer at a time per venv (tests that need a venv run its script, and may run at once);
# the lock file sits beside the venv because `uv venv --clear` empties the venv's folder.
exec 9>"$venv.lock"
flock 9
want=$(sha256sum "$lock" | cut -d' ' -f1)
stamp="$venv/.lock.sha256"
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then exit 0; fi

uv=$(bash deploy/python/uv.sh)
links=()
[ -d /opt/wheels ] && links=(--find-links /opt/wheels)
echo "[venv] installing $venv from $lock with uv" >&2
"$uv" venv --quiet --clear --python python3 "$venv" >&2
"$uv" pip install --quiet --python "$venv/bin/python" "${links[@]}" "${no_deps[@]}" -r "$lock" >&2
echo "$want" > "$stamp"
