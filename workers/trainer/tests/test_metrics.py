"""MOCKWORLD_METRICS_ADDRESS on the trainer: one Prometheus endpoint with the SDK runtime's series and
the trainer's step series, scraped after steps called through a real (dev) server."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import re
import socket
import urllib.request
import uuid

import pytest
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner, Worker
from test_worker import ROOT, TrainerCaller, _temporal_cli
from trainer_data import TINY

from mockworld_trainer.temporal_connection import connect_settings, with_metrics
from mockworld_trainer.worker import build_worker


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _samples(text: str, name: str) -> dict[str, float]:
    """Every sample of series ``name``: its label set (as printed) -> value."""
    found = {}
    for line in text.splitlines():
        m = re.match(rf"^{re.escape(name)}(\{{[^}}]*\}})?\s+(\S+)$", line)
        if m:
            found[m.group(1) or ""] = float(m.group(2))
    return found


def test_the_endpoint_serves_the_sdk_series_and_the_step_series(trainer, batch_ref):
    cli = _temporal_cli()
    if cli is None:
        pytest.skip("no temporal CLI (TEMPORAL_CLI_PATH, .venv/bin/temporal or PATH); the TypeScript setup installs it")
    address = f"127.0.0.1:{_free_port()}"
    runtime = with_metrics({}, address)["runtime"]
    out = asyncio.run(_steps_through_a_dev_server(cli, runtime, trainer, batch_ref))
    assert out["first"]["replayed"] is False and out["again"]["replayed"] is True
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as response:
        text = response.read().decode()

    # The SDK runtime's own series, from the worker that ran the steps.
    assert _samples(text, "temporal_activity_execution_latency_count"), "no SDK activity latency series"
    assert any(line.startswith("temporal_worker_task_slots_available") for line in text.splitlines())

    # Steps by outcome: step 1 applied, the same step again replayed; step 3 (out of order) refused, not counted.
    steps = _samples(text, "mockworld_trainer_steps_total")
    applied = [v for labels, v in steps.items() if 'outcome="applied"' in labels and 'kind="grpo"' in labels]
    replayed = [v for labels, v in steps.items() if 'outcome="replayed"' in labels and 'kind="grpo"' in labels]
    assert applied == [1.0] and replayed == [1.0], steps
    assert all('activity_type="trainer.grpoStep"' in labels for labels in steps)

    # The applied step's wall time, in seconds buckets (the overrides, not the runtime's millisecond ones).
    count = _samples(text, "mockworld_trainer_step_duration_seconds_count")
    total = _samples(text, "mockworld_trainer_step_duration_seconds_sum")
    assert list(count.values()) == [1.0], count
    assert 0 < next(iter(total.values())) < 120
    buckets = _samples(text, "mockworld_trainer_step_duration_seconds_bucket")
    assert any('le="0.5"' in labels for labels in buckets) and any('le="3600"' in labels for labels in buckets)

    # Every trainer series the Grafana dashboard plots is one this endpoint serves.
    dashboard = json.loads((ROOT / "deploy" / "grafana" / "mockworld-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    names = {n for e in exprs for n in re.findall(r"\bmockworld_trainer_[a-z_]+", e)}
    assert names, "the dashboard plots no trainer series"
    assert [n for n in sorted(names) if not _samples(text, n)] == []


def test_without_an_address_nothing_is_served():
    config = connect_settings({"TEMPORAL_CONFIG_FILE": "/nonexistent/temporal.toml"})
    assert "runtime" not in with_metrics(config, None) and "runtime" not in with_metrics(config, "")


async def _steps_through_a_dev_server(cli: str, runtime, trainer, batch_ref) -> dict:
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=cli, ui=False, runtime=runtime)
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
                return await env.client.execute_workflow(
                    TrainerCaller.run,
                    {"queue": queue, "run_id": "wf-metrics", "batch_ref": batch_ref, "model": TINY},
                    id=f"metrics-{uuid.uuid4().hex[:6]}",
                    task_queue="caller",
                )
    finally:
        await env.shutdown()
