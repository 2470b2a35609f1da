"""A trainer group: one process per GPU under torchrun, rank 0 the Temporal activity worker.

``torchrun ... -m mockworld_trainer.worker`` starts one worker process per rank; each joins the
process group torchrun set up (env:// rendezvous: one node or several). Rank 0 polls the GPU task
queue and heartbeats; the other ranks wait in ``follow`` for what rank 0 sends them through
``torch.distributed``: the name and arguments of each trainer call (for a step, its batch
reference; every rank reads the batch itself from the file or PostgreSQL), so every rank runs the
same collective step. Rank 0 sends a ping every ``PING_S`` seconds while it waits for work, so an
idle group never reaches the process group's timeout.

A rank that dies (killed, out of memory) fails the collectives of the others; torchrun then stops
the group and, with ``--max-restarts``, starts it again: rank 0 polls again, Temporal retries the
step's activity once its heartbeat times out, and the step is applied from the last committed
checkpoint (group_state.py), or answered from its record if it was committed.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from .errors import TrainerError
from .group_state import GroupSaveFailed
from .optim import Progress, no_progress
from .ranks import Ranks
from .trainer import Trainer

log = logging.getLogger("mockworld.trainer.group")

PING_S = 60.0
COLLECTIVE_OPS = ("train_step", "register_run")  # every rank runs these; the rest are rank 0's files


def in_group() -> bool:
    """Whether this process was started by torchrun with more than one rank."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def join() -> tuple[Ranks, torch.device]:
    """Joins the process group torchrun set up: NCCL with one GPU per local rank, else gloo on CPU.
    MOCKWORLD_GROUP_TIMEOUT_S (default 1800) bounds one collective, a step's longest wait included."""
    device_name = os.environ.get("MOCKWORLD_TRAINER_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(device_name)
    if device.type == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    timeout = timedelta(seconds=float(os.environ.get("MOCKWORLD_GROUP_TIMEOUT_S", "1800")))
    backend = "nccl" if device.type == "cuda" else "gloo"
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
        # The agent's store outlives a restart of the group: keys of the dead attempt (each rank's
        # address) would be read again and the new ranks would dial the dead ones. Each attempt
        # gets keys of its own.
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        store = dist.TCPStore(
            os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world, is_master=False, timeout=timeout
        )
        attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
        prefixed = dist.PrefixStore(f"mockworld-trainer-group/attempt-{attempt}", store)
        dist.init_process_group(backend, store=prefixed, rank=rank, world_size=world, timeout=timeout)
    else:
        dist.init_process_group(backend, timeout=timeout)
    return Ranks(dist.get_rank(), dist.get_world_size()), device


class GroupTrainer:
    """Rank 0's trainer: each call is sent to every rank first (the activities call this as they call
    a Trainer)."""

    def __init__(self, trainer: Trainer) -> None:
        self.trainer = trainer
        self.store = trainer.store
        self.device = trainer.device
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._pinger = threading.Thread(target=self._ping, name="trainer-group-ping", daemon=True)
        self._pinger.start()

    def _send(self, op: str, kwargs: dict[str, Any]) -> None:
        dist.broadcast_object_list([(op, kwargs)], src=0)

    def _ping(self) -> None:
        while not self._stop.wait(PING_S):
            with self._lock:
                self._send("ping", {})

    def _collective(self, op: str, progress: Progress | None = None, **kwargs: Any) -> Any:
        with self._lock:
            self._send(op, kwargs)
            if progress is not None:
                kwargs["progress"] = progress
            return getattr(self.trainer, op)(**kwargs)

    def train_step(self, run_id: str, step: int, batch_ref: Any, *, progress: Progress = no_progress, **kw: Any) -> Any:
        return self._collective("train_step", progress, run_id=run_id, step=step, batch_ref=batch_ref, **kw)

    def register_run(self, run_id: str, model: Any) -> Any:
        return self._collective("register_run", run_id=run_id, model=model)

    def latest_policy(self, run_id: str) -> Any:
        return self.trainer.latest_policy(run_id)

    def save_checkpoint(self, run_id: str, step: int | None = None) -> Any:
        return self.trainer.save_checkpoint(run_id, step)

    def close(self) -> None:
        """Tells the other ranks to leave ``follow``."""
        self._stop.set()
        with self._lock:
            self._send("stop", {})


def leave(trainer: Trainer) -> None:
    """Leaves the process group cleanly, on every rank. ``destroy_process_group`` only drops the
    process group's registry entry: the FSDP model (through its device mesh) still holds the gloo or
    NCCL backend, and a backend freed during interpreter shutdown aborts the process ("terminate
    called without an active exception"), which torchrun reports as a failed group. So the model is
    dropped and collected first, while the interpreter is fully alive."""
    trainer.release()
    gc.collect()
    if dist.is_initialized():
        dist.destroy_process_group()
    gc.collect()


def follow(trainer: Trainer) -> None:
    """The loop of every rank but 0: run each call rank 0 sends, until it sends ``stop``. A TrainerError
    or a GroupSaveFailed is the same on every rank (rank 0 reports it to Temporal); anything else
    ends the process, and torchrun restarts the group."""
    while True:
        box: list[Any] = [None]
        dist.broadcast_object_list(box, src=0)
        op, kwargs = box[0]
        if op == "stop":
            return
        if op == "ping":
            continue
        if op not in COLLECTIVE_OPS:
            raise RuntimeError(f"rank {dist.get_rank()}: unknown trainer group call {op!r}")
        try:
            getattr(trainer, op)(**kwargs)
        except TrainerError as e:
            log.info("rank %d: %s refused as on rank 0: %s", dist.get_rank(), op, e)
        except GroupSaveFailed as e:  # every rank raised it at the same point; rank 0 reports it
            log.warning("rank %d: %s not saved, as on rank 0: %s", dist.get_rank(), op, e)
