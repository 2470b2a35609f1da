#!/usr/bin/env bash
# `npm test`: every suite, with the type check and the Python suites running beside vitest's unit
# and integration projects (those mostly wait on servers and timers; the Python suites are
# CPU-bound and own their databases), then the integration-alone project by itself, since its files prove recovery within
# timeouts and must have the cores. Exits non-zero when any suite failed, after running them all.
set -uo pipefail
cd "$(dirname "$0")/.."

for venv in trainer sandbox eval verl openenv; do bash "deploy/$venv-venv.sh" || exit 1; done

python_log=$(mktemp)
trap 'rm -f "$python_log"' EXIT
(
  status=0
  # The type check of the product and the tests (the client's compile-time type assertions).
  echo "── type check (tsc --noEmit) ──"
  npm run -s typecheck || status=1
  for suite in trainer eval verl openenv; do npm run -s "test:$suite" || status=1; done
  exit $status
) >"$python_log" 2>&1 &
python_pid=$!

status=0
npx vitest run --project unit --project integration || status=1
wait "$python_pid" || status=1
echo "── type check and Python suites (trainer, eval, verl, openenv) ──"
cat "$python_log"
npx vitest run --project integration-alone || status=1
exit $status
