"""Evaluation worker: ``python -m mockworld_eval.worker``.

Serves eval.runTrial, eval.listTasks and eval.summarize on the task queue MOCKWORLD_EVAL_TASK_QUEUE
(default mockworld-eval) of the Temporal named by Temporal's own environment configuration
(TEMPORAL_ADDRESS, default 127.0.0.1:7233, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*, a
profile of TEMPORAL_CONFIG_FILE), as the other workers. MOCKWORLD_EVAL_CONCURRENCY (default 4) trials
run at once, each in its own process; results go to DATABASE_URL (the CPU worker migrates it). With
MOCKWORLD_METRICS_ADDRESS (host:port) it serves Prometheus metrics there (trial_metrics.py).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import sys
from typing import Any

from temporalio.client import Client
from temporalio.envconfig import ClientConfig
from temporalio.worker import Worker

from . import environment
from .activities import ACTIVITIES
from .trial_metrics import metrics_runtime

log = logging.getLogger("mockworld.eval")

DEFAULT_TASK_QUEUE = "mockworld-eval"


def task_queue() -> str:
    return os.environ.get("MOCKWORLD_EVAL_TASK_QUEUE", DEFAULT_TASK_QUEUE)


def concurrency() -> int:
    value = os.environ.get("MOCKWORLD_EVAL_CONCURRENCY", "4")
    if not value.isdigit() or int(value) < 1:
        raise SystemExit(f"mockworld eval worker: MOCKWORLD_EVAL_CONCURRENCY must be a positive integer, got {value!r}")
    return int(value)


def connect_settings() -> dict[str, Any]:
    try:
        config: dict[str, Any] = dict(ClientConfig.load_client_connect_config())
    except Exception as e:  # noqa: BLE001 - the bridge raises plain RuntimeError/OSError for every cause
        raise SystemExit(
            f"mockworld eval worker: cannot read Temporal's connection settings ({type(e).__name__}: {e}); "
            "check TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE and the TEMPORAL_TLS_* paths"
        ) from None
    config.setdefault("target_host", "127.0.0.1:7233")
    config.setdefault("namespace", "default")
    return config


def build_worker(client: Client, queue: str, pool: concurrent.futures.Executor, slots: int) -> Worker:
    return Worker(
        client,
        task_queue=queue,
        activities=ACTIVITIES,
        activity_executor=pool,
        max_concurrent_activities=slots,
    )


async def run() -> None:
    environment.prepare()
    config = connect_settings()
    queue, slots = task_queue(), concurrency()
    # MOCKWORLD_METRICS_ADDRESS: the SDK's series and the trials' (trial_metrics.py) at /metrics there.
    metrics_address = os.environ.get("MOCKWORLD_METRICS_ADDRESS")
    runtime = metrics_runtime(metrics_address)
    while True:
        try:
            client = await Client.connect(**config, runtime=runtime) if runtime else await Client.connect(**config)
            break
        except RuntimeError as error:  # not up yet: a worker started before the frontend waits for it
            log.warning("Temporal at %s is not reachable yet (%s); retrying in 5 s", config["target_host"], error)
            await asyncio.sleep(5)
    with concurrent.futures.ThreadPoolExecutor(max_workers=slots, thread_name_prefix="eval") as pool:
        worker = build_worker(client, queue, pool, slots)
        metrics = f", metrics at http://{metrics_address}/metrics" if runtime else ""
        where = f"{queue} on {config['target_host']} ({slots} trials at once{metrics})"
        print(f"evaluation worker polling {where}", flush=True)
        await worker.run()


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
