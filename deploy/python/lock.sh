#!/usr/bin/env bash
# Writes the lock files deploy/python/venv.sh installs from (deploy/locks/*.txt): every package of
# each venv at an exact version, resolved by uv for CPython 3.11 on Linux. Run it after changing a
# pin in a pyproject.toml or a requirements file; test/unit/python-locks.test.ts fails until then.
#
# torch's local version (+cpu, from the CPU wheel in /opt/wheels) is dropped, so one lock serves both
# machines: the CPU wheel where /opt/wheels has it, PyPI's CUDA build on a GPU node.
set -euo pipefail
cd "$(dirname "$0")/../.."
uv=$(bash deploy/python/uv.sh)
links=()
[ -d /opt/wheels ] && links=(--find-links /opt/wheels)

compile() { # OUTPUT INPUT...
  local out=$1
  shift
  "$uv" pip compile --quiet --python-version 3.11 --python-platform x86_64-manylinux_2_28 "${links[@]}" \
    --custom-compile-command "bash deploy/python/lock.sh" -o "$out" "$@"
  sed -i 's/^torch==\([0-9.]*\)+cpu$/torch==\1/' "$out"
}

mkdir -p deploy/locks
compile deploy/locks/trainer.txt deploy/trainer-requirements.txt
compile deploy/locks/sandbox.txt deploy/sandbox-requirements.txt
compile deploy/locks/verl.txt deploy/verl-requirements.txt
compile deploy/locks/datasets.txt deploy/datasets-requirements.txt
compile deploy/locks/openenv.txt deploy/openenv-requirements.txt

# The evaluation worker's closure is installed unresolved (--no-deps): its lock is the pyproject's
# own list, which already names every package at an exact version.
{
  echo "# The evaluation worker's venv, installed with --no-deps: workers/evaluation/pyproject.toml's"
  echo "# pinned closure (it says why). Written by: bash deploy/python/lock.sh"
  python3 - workers/evaluation/pyproject.toml <<'PY'
import sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
print("\n".join(project["dependencies"] + project["optional-dependencies"]["test"]))
PY
  echo "-e ./workers/evaluation"
} > deploy/locks/eval.txt
