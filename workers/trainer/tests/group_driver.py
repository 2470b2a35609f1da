"""Runs steps 1..N of a run in a trainer group under torchrun, as the Temporal worker would (tests).

    torchrun --nproc-per-node 2 tests/group_driver.py CHECKPOINTS BATCH_JSONL STEPS OUT_JSONL

Rank 0 sends every step to the group (GroupTrainer, as worker.py does for each activity) and
appends one JSON line per step result to OUT_JSONL, tagged with torchrun's restart count; the other
ranks follow. With MOCKWORLD_TEST_KILL="<rank>:<step>" that rank SIGKILLs itself in the middle of
that step (after its backward, before the optimizer update), once: a marker file next to OUT_JSONL
records that it did, so the restarted group runs the step to the end. With
MOCKWORLD_TEST_SAVE_FAIL="<step>" rank 0's full weights of that step fail to write once (ENOSPC, as on
a full disk; its own write, between the collectives): every rank gets GroupSaveFailed, and rank 0
applies the step again, as Temporal's retry would, with the group still up.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from trainer_data import TINY

from mockworld_trainer import group_state, grpo_step
from mockworld_trainer.checkpoint import CheckpointStore
from mockworld_trainer.group import GroupTrainer, follow, join, leave
from mockworld_trainer.group_state import GroupSaveFailed
from mockworld_trainer.trainer import Trainer

CFG = {"lr": 1e-3, "micro_batch_size": 2, "mini_batch_groups": 1}


def arm_kill(trainer: Trainer, rank: int, marker: Path) -> None:
    spec = os.environ.get("MOCKWORLD_TEST_KILL")
    if not spec or marker.exists():
        return
    kill_rank, kill_step = (int(x) for x in spec.split(":"))
    if rank != kill_rank:
        return
    current = {"step": 0}
    step_fn, clip = trainer.train_step, grpo_step.clip_and_step

    def train_step(run_id, step, *args, **kwargs):
        current["step"] = step
        return step_fn(run_id, step, *args, **kwargs)

    def clip_and_step(*args, **kwargs):
        if current["step"] == kill_step and not marker.exists():
            marker.write_text(f"rank {rank} killed itself in step {kill_step}\n")
            os.kill(os.getpid(), signal.SIGKILL)
        return clip(*args, **kwargs)

    trainer.train_step = train_step  # type: ignore[method-assign]
    grpo_step.clip_and_step = clip_and_step


def arm_save_failure(trainer: Trainer, rank: int) -> None:
    spec = os.environ.get("MOCKWORLD_TEST_SAVE_FAIL")
    if not spec or rank != 0:
        return
    fail_step = int(spec)
    current, failed = {"step": 0}, {"done": False}
    step_fn, save = trainer.train_step, group_state._save_full_weights

    def train_step(run_id, step, *args, **kwargs):
        current["step"] = step
        return step_fn(run_id, step, *args, **kwargs)

    def save_full_weights(*args, **kwargs):
        if current["step"] == fail_step and not failed["done"]:
            failed["done"] = True
            raise OSError(28, "No space left on device")
        return save(*args, **kwargs)

    trainer.train_step = train_step  # type: ignore[method-assign]
    group_state._save_full_weights = save_full_weights


def main() -> None:
    root, batch, steps, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    ranks, device = join()
    trainer = Trainer(CheckpointStore(root), device=device, ranks=ranks)
    arm_kill(trainer, ranks.rank, out.with_suffix(".killed"))
    arm_save_failure(trainer, ranks.rank)
    if ranks.rank == 0:
        group = GroupTrainer(trainer)
        for n in range(1, steps + 1):
            ref = {"kind": "jsonl", "path": batch}
            try:
                result = group.train_step("run-g", n, ref, model=TINY, config=CFG)
            except GroupSaveFailed as e:  # the retry Temporal would make, on the same group
                with open(out.with_suffix(".save-failed"), "a", encoding="utf-8") as f:
                    f.write(f"{e}\n")
                result = group.train_step("run-g", n, ref, model=TINY, config=CFG)
            with open(out, "a", encoding="utf-8") as f:
                f.write(json.dumps({"restart": int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")), **result}) + "\n")
        group.close()
    else:
        follow(trainer)
    leave(trainer)


if __name__ == "__main__":
    main()
