"""The trainer worker under torchrun, one of whose ranks SIGKILLs itself inside a GRPO step (tests).

    torchrun --nproc-per-node 2 --max-restarts 1 tests/group_worker_kill.py

Runs ``mockworld_trainer.worker`` as ``-m mockworld_trainer.worker`` would, after arming rank
MOCKWORLD_TEST_KILL_RANK (default 1): in its first GRPO update it SIGKILLs itself after the
backward, as it enters the clip-and-step whose grad-norm all-reduce rank 0 is already waiting in,
once (the marker file MOCKWORLD_TEST_KILL_MARKER records that it did, so the group torchrun
restarts runs the retried step to the end).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from mockworld_trainer import grpo_step
from mockworld_trainer.worker import main


def arm() -> None:
    marker = Path(os.environ["MOCKWORLD_TEST_KILL_MARKER"])
    rank = int(os.environ.get("RANK", "0"))
    if rank != int(os.environ.get("MOCKWORLD_TEST_KILL_RANK", "1")) or marker.exists():
        return
    clip = grpo_step.clip_and_step

    def clip_and_step(*args, **kwargs):
        if not marker.exists():
            marker.write_text(f"rank {rank} killed itself in a step\n")
            os.kill(os.getpid(), signal.SIGKILL)
        return clip(*args, **kwargs)

    grpo_step.clip_and_step = clip_and_step


if __name__ == "__main__":
    arm()
    main()
