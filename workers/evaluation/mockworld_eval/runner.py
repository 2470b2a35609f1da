"""The activity's side of a trial: forks a fresh process for it from a template that has imported
the benchmarks (multiprocessing's forkserver, preloading preload.py), heartbeats while it runs (with
the step count it reports) and turns its last event into an outcome or an error. The process is
killed when the activity is cancelled or times out."""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import threading
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


def run_trial_process(trial_json: str, heartbeat: Callable[[int], None], interval_s: float) -> dict:
    """Runs one trial in its own process and returns its outcome dict (with `cpu_seconds`)."""
    context = _trial_context()
    receiver, sender = context.Pipe(duplex=False)
    fd, log_path = tempfile.mkstemp(prefix="mockworld-eval-trial-", suffix=".log")
    os.close(fd)
    process = context.Process(
        target=trial.orphan_safe, args=(os.getpid(), trial.child_main, sender, trial_json, log_path), daemon=True
    )
    steps = 0
    last = None
    try:
        process.start()
        sender.close()  # the child holds the only sending end: EOF once it exits
        while True:
            heartbeat(steps)
            if not receiver.poll(interval_s):
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
        os.unlink(log_path)
    if last is None:
        raise TrialCrashed(f"the trial process exited with {process.exitcode} without an outcome; its log ends:\n{tail[-4000:]}")
    if last["event"] == "outcome":
        return {**last["outcome"], "cpu_seconds": float(last.get("cpu_seconds") or 0.0)}
    if last.get("kind") == "input":
        raise InputError(last.get("message", "bad trial input"))
    raise TransientTrialError(f"{last.get('message')}\nthe trial's log ends:\n{tail[-2000:]}")
