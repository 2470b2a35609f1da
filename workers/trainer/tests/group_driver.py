"""Runs steps 1..N of a run in a trainer group under torchrun, as the Temporal worker would (tests).

    torchrun --nproc-per-node 2 tests/group_driver.py CHECKPOINTS BATCH_JSONL STEPS OUT_JSONL

Rank 0 sends every step to the group (GroupTrainer, as worker.py does for each activity) and
appends one JSON line per step result to OUT_JSONL, tagged with torchrun's restart count; the other
ranks follow. With MOCKWORLD_TEST_KILL="<rank>:<step>" that rank SIGKILLs itself in the middle of
that step (after its backward, before the optimizer update), once: a marker file next to OUT_JSONL
records that it did, so the restarted group runs the step to the end.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from trainer_data import TINY

from mockworld_trainer import grpo_step
from mockworld_trainer.checkpoint import CheckpointStore
from mockworld_trainer.group import GroupTrainer, follow, join, leave
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


def main() -> None:
    root, batch, steps, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    ranks, device = join()
    trainer = Trainer(CheckpointStore(root), device=device, ranks=ranks)
    arm_kill(trainer, ranks.rank, out.with_suffix(".killed"))
    if ranks.rank == 0:
        group = GroupTrainer(trainer)
        for n in range(1, steps + 1):
            result = group.train_step("run-g", n, {"kind": "jsonl", "path": batch}, model=TINY, config=CFG)
            with open(out, "a", encoding="utf-8") as f:
                f.write(json.dumps({"restart": int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")), **result}) + "\n")
        group.close()
    else:
        follow(trainer)
    leave(trainer)


if __name__ == "__main__":
    main()
