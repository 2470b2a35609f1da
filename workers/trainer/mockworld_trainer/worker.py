"""GPU trainer worker: ``python -m mockworld_trainer.worker``.

Serves trainer.grpoStep, trainer.sftStep, trainer.saveCheckpoint and trainer.latestPolicy on the task
queue MOCKWORLD_GPU_TASK_QUEUE (default mockworld-gpu) of TEMPORAL_ADDRESS (default 127.0.0.1:7233),
namespace TEMPORAL_NAMESPACE (default default). Activities are synchronous torch code run on one
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
from .trainer import Trainer  # noqa: E402

log = logging.getLogger("mockworld.trainer")


def settings() -> tuple[str, str, str]:
    """(address, namespace, task queue) from the environment, with the TypeScript side's defaults."""
    return (
        os.environ.get("TEMPORAL_ADDRESS", "127.0.0.1:7233"),
        os.environ.get("TEMPORAL_NAMESPACE", "default"),
        os.environ.get("MOCKWORLD_GPU_TASK_QUEUE", "mockworld-gpu"),
    )


async def connect(address: str, namespace: str, wait_s: float | None = 0.0) -> Client:
    """Connects to Temporal, trying again for ``wait_s`` seconds (None: as long as it takes, so a
    worker started before the frontend serves once it is up). Says what it waits for at once, then
    once a minute; when the time is spent, an unreachable server becomes a SystemExit that says what
    to check."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    said_at: float | None = None
    delay = 1.0
    while True:
        try:
            return await asyncio.wait_for(Client.connect(address, namespace=namespace), timeout=15)
        except (TimeoutError, Exception) as e:
            message = (
                f"mockworld trainer: cannot reach Temporal at {address} (namespace {namespace!r}): "
                f"{type(e).__name__}: {e}\n"
                "Start the local stack (`mockworld stack up` / `temporal server start-dev`) or set "
                "TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE to a running server."
            )
            waited = loop.time() - started
            if wait_s is not None and waited + delay > wait_s:
                raise SystemExit(message) from None
            if said_at is None or loop.time() - said_at >= 60:
                log.warning("%s\nWaiting for it (%.0f s so far); Ctrl-C to give up.", message, waited)
                said_at = loop.time()
        await asyncio.sleep(delay)
        delay = min(2 * delay, 10.0)


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
    address, namespace, task_queue = settings()
    client = await connect(address, namespace, wait_s=None)
    trainer = Trainer()
    log.info(
        "trainer worker: %s namespace=%s queue=%s device=%s checkpoints=%s",
        address,
        namespace,
        task_queue,
        trainer.device,
        trainer.store.root,
    )
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="trainer") as pool:
        await build_worker(client, task_queue, trainer, pool).run()


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
