"""The activity's side of a trial: forks a fresh process for it from a template that has imported
the benchmarks (multiprocessing's forkserver, preloading preload.py), heartbeats while it runs (with
the step count it reports) and turns its last event into an outcome or an error. The process is
killed when the activity is cancelled or times out, and at the trial's wall-clock bound (the
Evaluation spec's trialTimeoutMinutes), where the trial becomes a stored `time_limit` outcome, as on
the CPU worker (activities/evaluation/trial-deadline.ts)."""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import threading
import time
from collections import deque
from typing import Callable

from . import trial
from .outcome import InputError

LOG_TAIL_LINES = 60

_lock = threading.Lock()
_context = None


class TransientTrialError(Exception):
    """The model endpoint could not be reached (or timed out, or was overloaded): retry the activity."""


class TrialCrashed(Exception):
    """The trial process died without an outcome (killed, out of memory, a bug): retry the activity."""


def _trial_context():
    global _context
    with _lock:
        if _context is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(["mockworld_eval.preload"])
            _context = context
        return _context


def _tail(path: str) -> str:
    try:
        with open(path, errors="replace") as log:
            return "\n".join(line.rstrip() for line in deque(log, maxlen=LOG_TAIL_LINES))
    except OSError:
        return ""


def timed_out(wall_seconds: float, steps: int, tail: str) -> dict:
    """The outcome of a trial ended at its bound: reward 0, with the reason (TIME_LIMIT below)."""
    bound = f"{wall_seconds / 60:g} min" if wall_seconds % 60 == 0 else f"{wall_seconds:g} s"
    return {
        "reward": 0.0,
        "termination": TIME_LIMIT,
        "steps": steps,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "trajectory": {"log_tail": tail[-4000:]},
        "failure": (
            f"the trial ran past its wall-clock bound of {bound} (the Evaluation spec's trialTimeoutMinutes) "
            f"after {steps} model calls and was ended: a model or tool that does not answer ends here"
        ),
        "detail": "time limit",
        "extra": {},
        "cpu_seconds": 0.0,
    }


TIME_LIMIT = "time_limit"


def run_trial_process(
    trial_json: str, heartbeat: Callable[[int], None], interval_s: float, wall_seconds: float = 30 * 60
) -> dict:
    """Runs one trial in its own process and returns its outcome dict (with `cpu_seconds`); past
    `wall_seconds` (the contract's default when not given) the process is killed and the outcome
    is a `time_limit` one."""
    context = _trial_context()
    receiver, sender = context.Pipe(duplex=False)
    fd, log_path = tempfile.mkstemp(prefix="mockworld-eval-trial-", suffix=".log")
    os.close(fd)
    process = context.Process(
        target=trial.orphan_safe, args=(os.getpid(), trial.child_main, sender, trial_json, log_path), daemon=True
    )
    steps = 0
    last = None
    deadline = time.monotonic() + wall_seconds
    expired = False
    try:
        process.start()
        sender.close()  # the child holds the only sending end: EOF once it exits
        while True:
            heartbeat(steps)
            left = deadline - time.monotonic()
            if left <= 0:
                expired = True
                break
            if not receiver.poll(min(interval_s, left)):
                continue
            try:
                event = receiver.recv()
            except EOFError:
                break
            if event.get("event") == "step":
                steps = int(event.get("steps", steps))
            else:
                last = event
        process.join()
        tail = _tail(log_path)
    finally:
        if process.is_alive():
            process.kill()
            process.join()
        receiver.close()
        if expired:
            tail = _tail(log_path)
        os.unlink(log_path)
    if expired:
        return timed_out(wall_seconds, steps, tail)
    if last is None:
        raise TrialCrashed(f"the trial process exited with {process.exitcode} without an outcome; its log ends:\n{tail[-4000:]}")
    if last["event"] == "outcome":
        return {**last["outcome"], "cpu_seconds": float(last.get("cpu_seconds") or 0.0)}
    if last.get("kind") == "input":
        raise InputError(last.get("message", "bad trial input"))
    raise TransientTrialError(f"{last.get('message')}\nthe trial's log ends:\n{tail[-2000:]}")
