"""GPU trainer worker: ``python -m mockworld_trainer.worker``.

Serves trainer.grpoStep, trainer.sftStep, trainer.saveCheckpoint and trainer.latestPolicy on the task
queue MOCKWORLD_GPU_TASK_QUEUE (default mockworld-gpu) of the Temporal that Temporal's own environment
configuration names (temporal_connection.py: TEMPORAL_ADDRESS, default 127.0.0.1:7233, TEMPORAL_NAMESPACE,
TEMPORAL_API_KEY, TEMPORAL_TLS_*, a profile of TEMPORAL_CONFIG_FILE). Activities are synchronous torch code run on one
thread, one at a time: a worker owns one device (MOCKWORLD_TRAINER_DEVICE, default cuda if present)
and one run's weights in memory. Run one worker per GPU.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import sys

# Nothing may be fetched from a model hub at run time; set before transformers is imported.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from temporalio.client import Client  # noqa: E402
from temporalio.worker import Worker  # noqa: E402

from .activities import TrainerActivities  # noqa: E402
from .temporal_connection import connect, connect_settings, describe, with_metrics  # noqa: E402
from .group import GroupTrainer, follow, in_group, join, leave  # noqa: E402
from .trainer import Trainer  # noqa: E402

log = logging.getLogger("mockworld.trainer")

__all__ = ["build_worker", "connect", "connect_settings", "main", "run", "settings", "with_metrics"]


def settings() -> tuple[str, str, str]:
    """(address, namespace, task queue) as this worker will use them."""
    config = connect_settings()
    return (
        config["target_host"],
        config["namespace"],
        os.environ.get("MOCKWORLD_GPU_TASK_QUEUE", "mockworld-gpu"),
    )


def build_worker(
    client: Client, task_queue: str, trainer: Trainer, pool: concurrent.futures.ThreadPoolExecutor
) -> Worker:
    """The trainer activities on ``task_queue``, one at a time on ``pool`` (a single-thread executor)."""
    return Worker(
        client,
        task_queue=task_queue,
        activities=TrainerActivities(trainer).all(),
        activity_executor=pool,
        max_concurrent_activities=1,
    )


async def run() -> None:
    # Under torchrun (a trainer group, group.py) every rank joins the process group; rank 0 alone is
    # the Temporal worker, the others run what it sends them.
    if in_group():
        ranks, device = join()
        trainer: Trainer | GroupTrainer = Trainer(device=device, ranks=ranks)
        if ranks.rank != 0:
            follow(trainer)
            leave(trainer)
            return
        trainer = GroupTrainer(trainer)
    else:
        trainer = Trainer()
    config = with_metrics(connect_settings(), os.environ.get("MOCKWORLD_METRICS_ADDRESS"))
    task_queue = os.environ.get("MOCKWORLD_GPU_TASK_QUEUE", "mockworld-gpu")
    client = await connect(config, wait_s=None)
    log.info(
        "trainer worker: %s queue=%s device=%s checkpoints=%s ranks=%s",
        describe(config),
        task_queue,
        trainer.device,
        trainer.store.root,
        os.environ.get("WORLD_SIZE", "1"),
    )
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="trainer") as pool:
            await build_worker(client, task_queue, trainer, pool).run()  # type: ignore[arg-type]
    finally:
        if isinstance(trainer, GroupTrainer):
            trainer.close()  # the other ranks leave their loop and exit with rank 0
            leave(trainer.trainer)


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
