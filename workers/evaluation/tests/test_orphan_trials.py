"""A trial process does not outlive its worker: a SIGKILLed worker's trials stop calling the model."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

# The worker's side, as runner.py does it: a fork server, one process forked from it (a long sleep
# in place of a trial), its pid printed, then waiting to be killed. "guarded" starts it as runner.py
# starts a trial (trial.orphan_safe); "plain" without the guard.
WORKER = textwrap.dedent(
    """
    import multiprocessing, os, sys, time
    from mockworld_eval import trial
    context = multiprocessing.get_context("forkserver")
    if sys.argv[1] == "guarded":
        process = context.Process(target=trial.orphan_safe, args=(os.getpid(), time.sleep, 300), daemon=True)
    else:
        process = context.Process(target=time.sleep, args=(300,), daemon=True)
    process.start()
    print(process.pid, flush=True)
    time.sleep(300)
    """
)

pytestmark = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="pidfds are Linux's")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False


def after_worker_kill(mode: str) -> tuple[int, bool]:
    """The forked process's pid, and whether it still runs 10 s after its worker was SIGKILLed."""
    worker = subprocess.Popen([sys.executable, "-c", WORKER, mode], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(worker.stdout.readline())
        assert alive(pid)
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
        for _ in range(100):  # the trial's watch thread sees its worker gone
            if not alive(pid):
                return pid, False
            time.sleep(0.1)
        return pid, True
    finally:
        if worker.poll() is None:
            worker.kill()


def test_a_trial_process_dies_with_its_sigkilled_worker():
    _, survived = after_worker_kill("guarded")
    assert not survived


def test_without_the_guard_it_would_outlive_its_worker():
    pid, survived = after_worker_kill("plain")
    if survived:
        os.kill(pid, signal.SIGKILL)  # the orphan this test made
    assert survived  # what the guard prevents (and so the test above can fail)
