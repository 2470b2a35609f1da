"""One trial, in a process of its own: `execute` parses a TrialInput (JSON), runs it through the
benchmark's official code (its class in benchmarks/) and reports events:

  {"event": "step", "steps": N}                       a model call began (for heartbeats)
  {"event": "outcome", "outcome": {...}, "cpu_seconds": S}
                                                      the trial ended (scored, or a model error)
  {"event": "error", "kind": "transient"|"input", "message": "..."}
                                                      the endpoint could not be reached (retry the
                                                      activity) / the input cannot run (do not)

A process per trial because the benchmarks keep state in module globals (BFCL's environment
instances). The worker forks each trial from a template process that has imported the benchmarks
but never run a trial (`child_main`, runner.py); `python -m mockworld_eval.trial` runs one trial
from stdin with the events on stdout (for debugging and benches). Whatever the benchmarks print goes
to a log (stderr for the command), never into the event stream.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import tempfile
import threading
import time
import traceback
from typing import Callable

from . import environment

Emit = Callable[[dict], None]


def execute(trial_json: str, emit: Emit) -> None:
    from . import benchmarks
    from .contract import ContractError, TrialInput
    from .outcome import InputError, Outcome, describe, is_transient

    try:
        spec = TrialInput.parse_json(trial_json)
    except ContractError as error:  # a malformed input is reported, not raised
        emit({"event": "error", "kind": "input", "message": str(error)})
        return
    steps_seen = [0]

    def on_step(steps: int) -> None:
        steps_seen[0] = steps
        emit({"event": "step", "steps": steps})

    try:
        outcome = benchmarks.get(spec.benchmark).run_trial(spec, on_step)
    except InputError as error:
        emit({"event": "error", "kind": "input", "message": str(error)})
        return
    except Exception as error:  # noqa: BLE001 - classified below
        traceback.print_exc()
        if is_transient(error):
            emit({"event": "error", "kind": "transient", "message": describe(error)})
            return
        # The model answered something the benchmark could not use (a 400, a malformed reply): that
        # is this trial's result, scored 0, with its reason; running it again would not differ.
        outcome = Outcome(
            reward=0.0,
            termination="model_error",
            steps=steps_seen[0],
            prompt_tokens=0,
            completion_tokens=0,
            trajectory={"traceback": traceback.format_exc()[-20_000:]},
            failure=describe(error),
        )
    emit({"event": "outcome", "outcome": outcome.as_dict(), "cpu_seconds": time.process_time()})


def _quiet_loguru(stream) -> None:
    """tau2 logs every step at INFO through loguru; keep warnings and errors only."""
    from loguru import logger

    logger.remove()
    logger.add(stream, level=os.environ.get("TAU2_LOG_LEVEL", "WARNING"))


def die_with(worker_pid: int) -> None:
    """Kills this process as soon as the worker `worker_pid` exits (Linux: a pidfd watched by a thread).

    A trial is forked by the worker's fork server, not by the worker, and every trial holds the fork
    server's liveness pipe open, so neither the fork server nor a parent-death signal ends it when
    the worker is SIGKILLed. Without this, such a trial goes on calling the model endpoint, paying for
    answers nobody reads, while the retried activity runs the trial again elsewhere.
    """
    try:
        watched = os.pidfd_open(worker_pid)
    except ProcessLookupError:
        os._exit(1)  # the worker is already gone
    except (AttributeError, OSError):
        return  # no pidfds here (not Linux 5.3+): the trial still runs

    def watch() -> None:
        select.select([watched], [], [])  # readable once the worker has exited
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="worker-watch", daemon=True).start()


def orphan_safe(worker_pid: int, target: Callable[..., None], *args: object) -> None:
    """A forked trial's entry point: `target(*args)`, ended if the worker that asked for it exits."""
    die_with(worker_pid)
    target(*args)


def child_main(conn, trial_json: str, log_path: str) -> None:
    """A forked trial: its output goes to `log_path`, its events to `conn`."""
    log = open(log_path, "w", buffering=1)
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    sys.stdout = sys.stderr = log
    _quiet_loguru(log)
    try:
        execute(trial_json, conn.send)
    finally:
        conn.close()


def main() -> int:
    report = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # benchmark prints (and C-level writes) -> stderr
    sys.stdout = sys.stderr

    def emit(event: dict) -> None:
        report.write(json.dumps(event, default=str) + "\n")

    with tempfile.TemporaryDirectory(prefix="mockworld-eval-trial-") as scratch:
        environment.prepare(scratch)  # before any benchmark import
        _quiet_loguru(sys.stderr)
        execute(sys.stdin.read(), emit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
