"""The trainer group as the Temporal worker: `torchrun -m mockworld_trainer.worker` with 2 CPU ranks.

Rank 0 polls the GPU queue of a real dev server, the other rank follows; a workflow calls the
activities by name, as the TypeScript workflows do. One torchrun launch and one dev server: ~30-60 s
on two shared cores.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.common import RetryPolicy
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner, Worker
from test_worker import TrainerCaller, _temporal_cli
from trainer_data import TINY

from mockworld_trainer.checkpoint import CheckpointStore

TESTS = Path(__file__).parent


def test_a_torchrun_group_serves_the_activities_rank_0_polls(tmp_path: Path, batch_ref: dict) -> None:
    cli = _temporal_cli()
    if cli is None:
        pytest.skip("no temporal CLI (TEMPORAL_CLI_PATH, .venv/bin/temporal or PATH); the TypeScript setup installs it")
    out = asyncio.run(_through_a_group(cli, tmp_path, batch_ref))
    assert out["first"]["replayed"] is False and out["again"] == {**out["first"], "replayed": True}
    assert out["first"]["metrics"]["world_size"] == 2
    assert out["refused"] == {"type": "TrainerStepOutOfOrder", "non_retryable": True}
    step_dir = tmp_path / "checkpoints" / "wf-group" / "step-00000001"
    assert (step_dir / "dcp" / ".metadata").exists() and json.loads((step_dir / "record.json").read_text())["step"] == 1
    assert out["latest"]["step"] == 1 and out["latest"]["model_path"] == str(step_dir / "model")


async def _through_a_group(cli: str, tmp: Path, batch_ref: dict) -> dict:
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=cli, ui=False)
    queue = f"mockworld-gpu-{uuid.uuid4().hex[:6]}"
    log = open(tmp / "group.log", "w")  # noqa: SIM115 - closed below
    group = subprocess.Popen(
        [str(Path(sys.executable).with_name("torchrun")), "--standalone", "--nproc-per-node", "2",
         "-m", "mockworld_trainer.worker"],  # fmt: skip
        env={
            **os.environ,
            "TEMPORAL_ADDRESS": env.client.service_client.config.target_host,
            "MOCKWORLD_GPU_TASK_QUEUE": queue,
            "MOCKWORLD_CHECKPOINT_DIR": str(tmp / "checkpoints"),
            "MOCKWORLD_TRAINER_DEVICE": "cpu",
            "OMP_NUM_THREADS": "1",
        },
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        async with Worker(env.client, task_queue="caller", workflows=[TrainerCaller], workflow_runner=UnsandboxedWorkflowRunner()):
            return await asyncio.wait_for(
                env.client.execute_workflow(
                    TrainerCaller.run,
                    {"queue": queue, "run_id": "wf-group", "batch_ref": batch_ref, "model": TINY},
                    id=f"group-{uuid.uuid4().hex[:6]}",
                    task_queue="caller",
                ),
                timeout=240,
            )
    except Exception:
        log.flush()
        print((tmp / "group.log").read_text()[-6000:])
        raise
    finally:
        os.killpg(group.pid, signal.SIGTERM)  # torchrun and its two ranks
        try:
            group.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(group.pid, signal.SIGKILL)
        log.close()
        await env.shutdown()



@workflow.defn(name="StepCaller")
class StepCaller:
    """One GRPO step with the TypeScript workflows' retry shape (a heartbeat timeout, bounded attempts)."""

    @workflow.run
    async def run(self, args: dict) -> dict:
        req = {"run_id": args["run_id"], "step": 1, "batch_ref": args["batch_ref"], "model": args["model"]}
        return await workflow.execute_activity(
            "trainer.grpoStep",
            req,
            task_queue=args["queue"],
            start_to_close_timeout=timedelta(minutes=4),
            heartbeat_timeout=timedelta(seconds=30),
            retry_policy=RetryPolicy(maximum_attempts=3, initial_interval=timedelta(seconds=1)),
        )


def test_a_rank_killed_inside_a_step_restarts_the_group_and_the_step_is_retried_once(tmp_path: Path, batch_ref: dict) -> None:
    """The README's claim for a trainer group: a killed rank stops the group, torchrun (--max-restarts)
    starts it again, and Temporal retries the step, applied once from the last committed checkpoint.
    The attempt the kill cut fails with a failure that says what happened (not one the server
    refuses as too large)."""
    cli = _temporal_cli()
    if cli is None:
        pytest.skip("no temporal CLI (TEMPORAL_CLI_PATH, .venv/bin/temporal or PATH); the TypeScript setup installs it")
    out = asyncio.run(_kill_a_rank_in_a_step(cli, tmp_path, batch_ref))
    assert (tmp_path / "killed").read_text() == "rank 1 killed itself in a step\n"
    assert out["result"]["step"] == 1 and out["result"]["replayed"] is False
    assert out["result"]["metrics"]["world_size"] == 2
    assert out["attempts"] == 2, out["failures"]
    (failure,) = out["failures"]
    # Either rank 0 reported the broken collective before torchrun stopped it (a bounded, readable
    # failure: the server replaces one over 4 KB with "Failure exceeds size limit."), or torchrun
    # stopped it first and its attempt timed out at the heartbeat.
    assert "exceeds size limit" not in failure, failure
    assert failure.startswith("RuntimeError: ") and "Connection" in failure or "eartbeat" in failure, failure
    assert out["log"].count("trainer worker:") == 2  # rank 0 of the first group, then of the one torchrun restarted
    store = CheckpointStore(tmp_path / "checkpoints")
    assert store.applied_steps("wf-kill") == [1]
    assert not list((store.root / "wf-kill").glob(".tmp-step-*"))


async def _kill_a_rank_in_a_step(cli: str, tmp: Path, batch_ref: dict) -> dict:
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=cli, ui=False)
    queue = f"mockworld-gpu-{uuid.uuid4().hex[:6]}"
    log_path = tmp / "group.log"
    log = open(log_path, "w")  # noqa: SIM115 - closed below
    group = subprocess.Popen(
        [str(Path(sys.executable).with_name("torchrun")), "--standalone", "--nproc-per-node", "2",
         "--max-restarts", "1", str(TESTS / "group_worker_kill.py")],  # fmt: skip
        env={
            **os.environ,
            "TEMPORAL_ADDRESS": env.client.service_client.config.target_host,
            "MOCKWORLD_GPU_TASK_QUEUE": queue,
            "MOCKWORLD_CHECKPOINT_DIR": str(tmp / "checkpoints"),
            "MOCKWORLD_TRAINER_DEVICE": "cpu",
            "MOCKWORLD_TEST_KILL_MARKER": str(tmp / "killed"),
            "OMP_NUM_THREADS": "1",
        },
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        async with Worker(env.client, task_queue="caller", workflows=[StepCaller], workflow_runner=UnsandboxedWorkflowRunner()):
            handle = await env.client.start_workflow(
                StepCaller.run,
                {"queue": queue, "run_id": "wf-kill", "batch_ref": batch_ref, "model": TINY},
                id=f"kill-{uuid.uuid4().hex[:6]}",
                task_queue="caller",
            )
            result = await asyncio.wait_for(handle.result(), timeout=420)
            failures, attempts = [], 0
            async for event in handle.fetch_history_events():
                if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
                    attempts = max(attempts, event.activity_task_started_event_attributes.attempt)
                    last = event.activity_task_started_event_attributes.last_failure
                    if last.message:
                        failures.append(last.message + (f" ({last.cause.message})" if last.cause.message else ""))
            log.flush()
            return {"result": result, "attempts": attempts, "failures": failures, "log": log_path.read_text()}
    except Exception:
        log.flush()
        print(log_path.read_text()[-8000:])
        raise
    finally:
        # torchrun and its ranks: each rank is in a session of its own, out of reach of killpg.
        for rank in _children(group.pid):
            try:
                os.kill(rank, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os.killpg(group.pid, signal.SIGKILL)
        group.wait(timeout=30)
        log.close()
        await env.shutdown()


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        out += [int(p) for p in (task / "children").read_text().split()]
    return out
