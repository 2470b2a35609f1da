#!/usr/bin/env bash
# Prints the path of the pinned uv, installing it from PyPI (with pip, once) into .venv-uv.
set -euo pipefail
cd "$(dirname "$0")/../.."
UV_PIN=0.13.9
venv=.venv-uv
if ! { [ -x "$venv/bin/uv" ] && [ "$("$venv/bin/uv" --version | cut -d' ' -f2)" = "$UV_PIN" ]; }; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "uv==$UV_PIN" >&2
fi
echo "$PWD/$venv/bin/uv"
