"""The worker: a clear exit when Temporal is unreachable, and the activities called by name through a real server."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import shutil
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner, Worker
from trainer_data import TINY

from mockworld_trainer.worker import build_worker, connect, settings

ROOT = Path(__file__).resolve().parents[3]


def test_an_unreachable_temporal_exits_with_what_to_set():
    with pytest.raises(SystemExit) as info:
        asyncio.run(connect({"target_host": "127.0.0.1:1", "namespace": "default"}))
    message = str(info.value)
    assert "cannot reach Temporal at 127.0.0.1:1" in message and "TEMPORAL_ADDRESS" in message


def test_an_unreachable_temporal_is_waited_for_then_given_up_on_after_wait_s(caplog):
    loop_started = asyncio.run(_timed_connect(2.5))
    assert loop_started >= 1.0  # tried again at least once before giving up
    assert "Waiting for it" in caplog.text and "127.0.0.1:1" in caplog.text


async def _timed_connect(wait_s: float) -> float:
    started = asyncio.get_running_loop().time()
    with pytest.raises(SystemExit):
        await connect({"target_host": "127.0.0.1:1", "namespace": "default"}, wait_s=wait_s)
    return asyncio.get_running_loop().time() - started


def test_settings_default_to_the_typescript_side_defaults(monkeypatch):
    for name in ("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "MOCKWORLD_GPU_TASK_QUEUE"):
        monkeypatch.delenv(name, raising=False)
    assert settings() == ("127.0.0.1:7233", "default", "mockworld-gpu")


@workflow.defn(name="TrainerCaller")
class TrainerCaller:
    """Stands in for the TypeScript training workflow: calls the trainer by activity name only."""

    @workflow.run
    async def run(self, args: dict) -> dict:
        opts = {
            "task_queue": args["queue"],
            "start_to_close_timeout": timedelta(minutes=2),
            "heartbeat_timeout": timedelta(seconds=30),
            "retry_policy": RetryPolicy(maximum_attempts=3),
        }
        req = {"run_id": args["run_id"], "step": 1, "batch_ref": args["batch_ref"], "model": args["model"]}
        first = await workflow.execute_activity("trainer.grpoStep", req, **opts)
        again = await workflow.execute_activity("trainer.grpoStep", req, **opts)
        try:
            await workflow.execute_activity("trainer.grpoStep", {**req, "step": 3}, **opts)
            refused = None
        except ActivityError as e:
            cause = e.cause
            refused = (
                {"type": cause.type, "non_retryable": cause.non_retryable}
                if isinstance(cause, ApplicationError)
                else None
            )
        latest = await workflow.execute_activity("trainer.latestPolicy", {"run_id": args["run_id"]}, **opts)
        return {"first": first, "again": again, "refused": refused, "latest": latest}


def _temporal_cli() -> str | None:
    for candidate in (
        os.environ.get("TEMPORAL_CLI_PATH"),
        str(ROOT / ".venv" / "bin" / "temporal"),
        shutil.which("temporal"),
    ):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def test_workflows_call_the_activities_by_name_on_the_gpu_queue(trainer, batch_ref):
    cli = _temporal_cli()
    if cli is None:
        pytest.skip("no temporal CLI (TEMPORAL_CLI_PATH, .venv/bin/temporal or PATH); the TypeScript setup installs it")
    out = asyncio.run(_call_through_a_dev_server(cli, trainer, batch_ref))
    assert out["first"]["replayed"] is False and out["again"] == {**out["first"], "replayed": True}
    assert out["refused"] == {"type": "TrainerStepOutOfOrder", "non_retryable": True}
    assert out["latest"]["step"] == 1


async def _call_through_a_dev_server(cli: str, trainer, batch_ref) -> dict:
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=cli, ui=False)
    try:
        queue = f"mockworld-gpu-{uuid.uuid4().hex[:6]}"
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            async with (
                build_worker(env.client, queue, trainer, pool),
                Worker(
                    env.client,
                    task_queue="caller",
                    workflows=[TrainerCaller],
                    workflow_runner=UnsandboxedWorkflowRunner(),
                ),
            ):
                out = await env.client.execute_workflow(
                    TrainerCaller.run,
                    {"queue": queue, "run_id": "wf-e2e", "batch_ref": batch_ref, "model": TINY},
                    id=f"e2e-{uuid.uuid4().hex[:6]}",
                    task_queue="caller",
                )
    finally:
        await env.shutdown()
    return out
