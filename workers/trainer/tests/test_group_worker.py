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
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner, Worker
from test_worker import TrainerCaller, _temporal_cli
from trainer_data import TINY


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

